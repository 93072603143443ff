"""A test double's home: an ASGI app served by uvicorn in a thread on 127.0.0.1, on a free port.

with LoopbackServer(app) as site:
    httpx.get(site.url("/page.html"))
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Literal

import uvicorn
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a process the test starts itself)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LoopbackServer:
    """`lifespan="on"` for an app that needs its startup (an MCP app with a session manager)."""

    def __init__(self, app: ASGIApp, lifespan: Literal["auto", "on", "off"] = "off"):
        # Bind first, so the port is known (and held) before the server thread starts.
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan=lifespan))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def start(self, timeout: float = 20) -> None:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"the loopback server on port {self.port} did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self) -> LoopbackServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class RateLimited:
    """A fake API's rate limit: after `throttle(n)` the next n requests answer 429 with Retry-After,
    the way real APIs say "slow down". Handlers start with `if refused := self.refusal(): return refused`."""

    _left = 0
    _retry_after = "0"

    def throttle(self, count: int, retry_after: str = "0") -> None:
        self._left, self._retry_after = count, retry_after

    def refusal(self) -> Response | None:
        if not self._left:
            return None
        self._left -= 1
        return PlainTextResponse("Too many requests", 429, headers={"Retry-After": self._retry_after})
