"""The launcher and the one-line `call` fixture that tests and benchmarks share."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from gaia_kit_testing.gateway import launch, readable_by_servers
from gaia_kit_testing.server_call import call_fixture
from mcp.server.mcpserver import MCPServer

echo_server = MCPServer("echo")


@echo_server.tool()
def echo(text: str) -> str:
    return text


call = call_fixture(echo_server)


def test_the_dataset_becomes_readable_by_another_uid(tmp_path: Path) -> None:
    dataset = tmp_path / "dataset"
    (dataset / "inner").mkdir(parents=True)
    (dataset / "inner" / "task.csv").write_text("a,b\n")
    for path in (dataset, dataset / "inner", dataset / "inner" / "task.csv"):
        path.chmod(0o700 if path.is_dir() else 0o600)
    readable_by_servers(dataset)
    for folder in (dataset, dataset / "inner"):
        assert folder.stat().st_mode & (stat.S_IROTH | stat.S_IXOTH) == stat.S_IROTH | stat.S_IXOTH
    assert (dataset / "inner" / "task.csv").stat().st_mode & stat.S_IROTH


@pytest.mark.anyio
async def test_call_fixture_calls_the_server_in_session_s1(call, kit_env) -> None:
    result = await call("echo", text="hello")
    assert not result.is_error and result.content[0].text == "hello"


@pytest.mark.slow
def test_launch_serves_until_stopped_and_makes_its_dataset_readable(tmp_path: Path) -> None:
    dataset = tmp_path / "private"
    dataset.mkdir(mode=0o700)
    gateway = launch(tmp_path, "--servers", "documents-txt-server", dataset_dir=dataset)
    try:
        assert gateway.status()["servers"]["documents-txt-server"]["state"] == "ready"
        assert dataset.stat().st_mode & stat.S_IXOTH
        assert gateway.log_path.parent == tmp_path
    finally:
        assert gateway.stop() is not None
    assert gateway.proc.poll() is not None


def test_a_gateway_that_cannot_start_is_reported_with_its_log(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="exited"):
        launch(tmp_path, "--config", str(tmp_path / "missing.toml"), ready_timeout=30)
