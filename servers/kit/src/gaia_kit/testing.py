"""Test helpers every server's tests share: throwaway roots, a session client, result checks.

In a server's tests/conftest.py:

    from gaia_kit.testing import session_call     # kit_env and anyio_backend come from the root conftest
    from my_server.server import server

    @pytest.fixture
    async def call(kit_env):
        async with session_call(server, kit_env.workspace) as invoke:
            yield invoke
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from .session import SESSION_ID_KEY, WORKSPACE_KEY
from .settings import get_settings

Invoke = Callable[..., Awaitable[Any]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def kit_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """A workspace root with one session workspace (s1), and a dataset directory beside it."""
    root, dataset = tmp_path / "workspaces", tmp_path / "dataset"
    workspace = root / "s1"
    for folder in (root, dataset, workspace):
        folder.mkdir()
    monkeypatch.setenv("GAIA_WORKSPACE_ROOT", str(root))
    monkeypatch.setenv("GAIA_DATASET_DIR", str(dataset))
    # Outbound responses recorded by a test stay with that test, never in the user's cache.
    monkeypatch.setenv("GAIA_HTTP_CACHE_PATH", str(tmp_path / "http-cache.sqlite"))
    monkeypatch.delenv("GAIA_HTTP_CACHE_URL", raising=False)
    get_settings.cache_clear()
    yield SimpleNamespace(root=root, dataset=dataset, workspace=workspace)
    get_settings.cache_clear()


@pytest.fixture
def workspace_quota(
    kit_env: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., None]]:
    """`workspace_quota(max_mb, max_files=1000)` gives kit_env's workspaces that disk quota."""

    def set_quota(max_mb: int, max_files: int = 1000) -> None:
        monkeypatch.setenv("GAIA_WORKSPACE_MAX_MB", str(max_mb))
        monkeypatch.setenv("GAIA_WORKSPACE_MAX_FILES", str(max_files))
        get_settings.cache_clear()

    yield set_quota
    get_settings.cache_clear()


@pytest.fixture
def fresh_http() -> Iterator[None]:
    """Each test's GAIA_HTTP_* settings take effect: the kit builds one client per event loop, once."""
    from .http import forget_shared_http

    forget_shared_http()
    yield
    forget_shared_http()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on 127.0.0.1 (Debian's package), memory only; yields its redis:// URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is missing: apt-get install -y redis-server (make test installs it).")
    folder = tmp_path_factory.mktemp("redis")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    argv = [binary, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"]
    process = subprocess.Popen(
        [*argv, "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 20
        while not _answers_ping(port):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server did not start: {process.stderr.read() if process.stderr else ''}")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(10)


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture
def redis_url(redis_server: str) -> str:
    """The session's redis-server, emptied for this test."""
    import redis

    with redis.Redis.from_url(redis_server) as client:
        client.flushall()
    return redis_server


@contextlib.asynccontextmanager
async def session_call(server: MCPServer, workspace: Path, session_id: str = "s1") -> AsyncIterator[Invoke]:
    """invoke(tool, **arguments) -> CallToolResult, over the MCP protocol, as the gateway sends it."""
    meta = {SESSION_ID_KEY: session_id, WORKSPACE_KEY: str(workspace)}
    async with Client(server) as client:

        async def invoke(name: str, **arguments: Any) -> Any:
            return await client.call_tool(name, arguments, meta=meta)

        yield invoke


SPOKEN_SENTENCE = "The museum opens on Monday morning"


@pytest.fixture(scope="session")
def speech(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An espeak-ng recording of SPOKEN_SENTENCE, as WAV, for the transcription tests."""
    path = tmp_path_factory.mktemp("speech") / "sentence.wav"
    command = ["espeak-ng", "-s", "140", "-w", str(path), SPOKEN_SENTENCE]
    subprocess.run(command, check=True, capture_output=True)
    return path


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


@pytest.fixture
def fake_web(kit_env: SimpleNamespace, fresh_http: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """gaia_kit.fake_web's loopback web, allow-listed, with the page reader's keys unset and its URLs on it."""
    from .fake_web import FakeWeb

    for name in ("READWEB_BACKEND", "JINA_API_KEY", "TAVILY_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    monkeypatch.setenv("GAIA_HTTP_BACKOFF_BASE_S", "0.01")
    with FakeWeb(slow_s=3) as web:
        monkeypatch.setenv("JINA_API_URL", web.url("/jina/"))
        monkeypatch.setenv("TAVILY_API_URL", web.url("/tavily/extract"))
        yield web
