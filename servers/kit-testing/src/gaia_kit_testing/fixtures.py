"""The pytest fixtures every package's tests share (the root conftest loads this module as a plugin):
throwaway workspace and dataset roots, disk quotas, fresh HTTP settings, a real redis-server, an
espeak-ng recording and the loopback web.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit.web.http import forget_shared_http

from .checks import SPOKEN_SENTENCE
from .fake_web import FakeWeb
from .loopback import free_port


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
    forget_settings()
    yield SimpleNamespace(root=root, dataset=dataset, workspace=workspace)
    forget_settings()


@pytest.fixture
def workspace_quota(
    kit_env: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., None]]:
    """`workspace_quota(max_mb, max_files=1000)` gives kit_env's workspaces that disk quota."""

    def set_quota(max_mb: int, max_files: int = 1000) -> None:
        monkeypatch.setenv("GAIA_WORKSPACE_MAX_MB", str(max_mb))
        monkeypatch.setenv("GAIA_WORKSPACE_MAX_FILES", str(max_files))
        forget_settings()

    yield set_quota
    forget_settings()


@pytest.fixture
def fresh_http() -> Iterator[None]:
    """Each test's GAIA_HTTP_* settings take effect: the kit builds one client per event loop, once."""
    forget_settings()
    forget_shared_http()
    yield
    forget_settings()
    forget_shared_http()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real redis-server on 127.0.0.1 (Debian's package), memory only; yields its redis:// URL."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is missing: apt-get install -y redis-server (make test installs it).")
    folder = tmp_path_factory.mktemp("redis")
    port = free_port()
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


@pytest.fixture(scope="session")
def speech(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An espeak-ng recording of SPOKEN_SENTENCE, as WAV, for the transcription tests."""
    path = tmp_path_factory.mktemp("speech") / "sentence.wav"
    command = ["espeak-ng", "-s", "140", "-w", str(path), SPOKEN_SENTENCE]
    subprocess.run(command, check=True, capture_output=True)
    return path


@pytest.fixture
def fake_web(kit_env: SimpleNamespace, fresh_http: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """gaia_kit_testing.fake_web's loopback web, allow-listed, with the page reader's keys unset and its URLs on it."""
    for name in ("READWEB_BACKEND", "JINA_API_KEY", "TAVILY_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    monkeypatch.setenv("GAIA_HTTP_BACKOFF_BASE_S", "0.01")
    with FakeWeb(slow_s=3) as web:
        monkeypatch.setenv("JINA_API_URL", web.url("/jina/"))
        monkeypatch.setenv("TAVILY_API_URL", web.url("/tavily/extract"))
        yield web
