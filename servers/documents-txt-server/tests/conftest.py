from types import SimpleNamespace

import pytest
from documents_txt_server.server import server
from gaia_kit.settings import get_settings
from mcp import Client


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A workspace root with one session workspace, and a dataset directory beside it."""
    root = tmp_path / "workspaces"
    dataset = tmp_path / "dataset"
    workspace = root / "s1"
    for folder in (root, dataset, workspace):
        folder.mkdir()
    monkeypatch.setenv("GAIA_WORKSPACE_ROOT", str(root))
    monkeypatch.setenv("GAIA_DATASET_DIR", str(dataset))
    get_settings.cache_clear()
    yield SimpleNamespace(root=root, dataset=dataset, workspace=workspace)
    get_settings.cache_clear()


@pytest.fixture
async def call(env):
    """call(tool, **arguments) -> CallToolResult, through the MCP protocol, in session s1."""
    meta = {"gaia-env/session-id": "s1", "gaia-env/workspace": str(env.workspace)}
    async with Client(server) as client:

        async def invoke(name, **arguments):
            return await client.call_tool(name, arguments, meta=meta)

        yield invoke
