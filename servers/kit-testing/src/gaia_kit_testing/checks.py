"""What tests do with a server: call its tools over MCP as the gateway does, and check the answers.

from gaia_kit_testing import failed, ok, session_call

@pytest.fixture
async def call(kit_env):                    # kit_env comes from gaia_kit_testing.fixtures
    async with session_call(server, kit_env.workspace) as invoke:
        yield invoke

async def test_reads(call):
    assert "hello" in ok(await call("read_file", path="a.txt"))
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from gaia_contract import SESSION_ID_KEY, WORKSPACE_KEY
from mcp import Client
from mcp.server.mcpserver import MCPServer

Invoke = Callable[..., Awaitable[Any]]

SPOKEN_SENTENCE = "The museum opens on Monday morning"


@contextlib.asynccontextmanager
async def session_call(server: MCPServer, workspace: Path, session_id: str = "s1") -> AsyncIterator[Invoke]:
    """invoke(tool, **arguments) -> CallToolResult, over the MCP protocol, as the gateway sends it."""
    meta = {SESSION_ID_KEY: session_id, WORKSPACE_KEY: str(workspace)}
    async with Client(server) as client:

        async def invoke(name: str, **arguments: Any) -> Any:
            return await client.call_tool(name, arguments, meta=meta)

        yield invoke


def sent_content(request: dict[str, Any]) -> tuple[list[str], list[Any]]:
    """(text parts, images) of the last message of a chat request a fake received; each image is
    decoded from its data URL with Pillow, and must be a PNG or JPEG one."""
    from PIL import Image

    texts, images = [], []
    for part in request["messages"][-1]["content"]:
        if part["type"] == "text":
            texts.append(part["text"])
        elif part["type"] == "image_url":
            url = part["image_url"]["url"]
            assert url.startswith(("data:image/png;base64,", "data:image/jpeg;base64,")), url[:40]
            images.append(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))
    return texts, images


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


def ok(result: Any) -> str:
    assert not result.is_error, text(result)
    return text(result)


def failed(result: Any) -> str:
    assert result.is_error, text(result)
    return text(result)


# The child's own high-water mark. getrusage's ru_maxrss is no good here: Python starts children
# with vfork, and exec then folds the parent's (pytest's) peak into the child's ru_maxrss.
_PEAK_RSS_EPILOGUE = """
import json as _json
with open("/proc/self/status") as _status:
    _peak = next(int(line.split()[1]) for line in _status if line.startswith("VmHWM:"))
print(_json.dumps({"peak_rss_kb": _peak}))
"""


def run_measured(script: str, env: dict[str, str] | None = None, timeout: float = 900) -> dict[str, Any]:
    """Run `script` (which prints one JSON object) in a child Python; return it plus `peak_rss_kb`."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script) + _PEAK_RSS_EPILOGUE],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report, peak = done.stdout.strip().splitlines()[-2:]
    return {**json.loads(report), **json.loads(peak)}
