"""The tool call in progress, as the code doing its work sees it, in the event loop or a worker thread.

KitServer opens one `Call` per tools/call. Work deep inside a tool reaches it with `current_call()`:

    call = current_call()
    call.progress(done, total, "page 3 of 10")   # a progress notification, if the client asked for them
    call.check()                                  # raises CallCancelled once the client cancelled

`gaia_kit.execution.process.run_in_group` checks it on its own, so a cancelled call kills its subprocess.
The HTTP cache asks `replay_allowed` whether the calling tool's requests may be recorded and replayed.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

from mcp_types import ToolAnnotations

Report = Callable[[float, float | None, str | None], Awaitable[None]]
SAFE_METHODS = frozenset({"GET", "HEAD"})


class CallCancelled(Exception):
    """The client cancelled the call (or went away): stop, nobody reads the answer."""


@dataclass
class Call:
    tool: str
    hints: ToolAnnotations | None = None
    report: Report | None = None
    """Sends one progress notification (a no-op when the client sent no progressToken)."""
    cancelled: threading.Event = field(default_factory=threading.Event)
    task_question: str = ""
    """The question of the task the session serves (`_meta` gaia-env/task), for the benchmark-copy guard."""
    spent: tuple[str, ...] = ()
    """Paid backends (names or `*`-patterns) whose session budget is spent: gaia_kit.core.usage refuses them."""
    usage: dict[str, dict[str, int]] = field(default_factory=dict)
    """What this call spent on paid backends (gaia_kit.core.usage.charge), sent back in the result's `_meta`."""
    withheld: list[dict[str, object]] = field(default_factory=list)
    """What the benchmark-copy guard withheld in this call (gaia_kit.web.benchmark_guard)."""
    _loop: asyncio.AbstractEventLoop | None = None
    _last: asyncio.Task[None] | None = None
    _done: float = float("-inf")
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if self.report is not None:
            self._loop = asyncio.get_running_loop()

    def check(self) -> None:
        """Raise CallCancelled once the call was cancelled; long loops call it between steps."""
        if self.cancelled.is_set():
            raise CallCancelled(f"{self.tool} was cancelled")

    def progress(self, done: float, total: float | None = None, message: str | None = None) -> None:
        """Report progress from the event loop or any thread; it goes out in order, before the result.

        Progress only grows (the spec asks that): a value not above the last one sent is dropped, as is
        everything reported inside `quiet()`."""
        if self._loop is None or self._loop.is_closed() or _quiet.get():
            return
        with self._lock:
            if done <= self._done:
                return
            self._done = done
        item = (float(done), float(total) if total is not None else None, message)
        try:
            self._loop.call_soon_threadsafe(self._send_after_last, item)
        except RuntimeError:  # the loop is shutting down
            pass

    def _send_after_last(self, item: tuple[float, float | None, str | None]) -> None:
        self._last = asyncio.get_running_loop().create_task(self._send(item, self._last))

    async def _send(
        self, item: tuple[float, float | None, str | None], before: asyncio.Task[None] | None
    ) -> None:
        if before is not None:
            await asyncio.wait([before])
        assert self.report is not None
        try:
            await self.report(*item)
        except Exception:  # the client may be gone; the work goes on regardless
            pass

    async def drain(self) -> None:
        """Wait until the progress reported so far has been sent (called before the result goes out)."""
        await asyncio.sleep(0)  # let progress() calls made just before the result land on the loop
        if self._last is not None:
            await asyncio.wait([self._last])


_current: contextvars.ContextVar[Call | None] = contextvars.ContextVar("gaia_kit_call", default=None)
_quiet: contextvars.ContextVar[bool] = contextvars.ContextVar("gaia_kit_quiet", default=False)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Work inside reports no progress of its own: a step of a larger tool that counts its own steps
    (a transcription inside a video question). Cancellation still reaches it."""
    token = _quiet.set(True)
    try:
        yield
    finally:
        _quiet.reset(token)


def current_call() -> Call:
    """The running call, or a detached one (no progress, never cancelled) outside any tool call."""
    return _current.get() or Call("(no tool)")


def enter(call: Call) -> contextvars.Token[Call | None]:
    return _current.set(call)


def leave(token: contextvars.Token[Call | None]) -> None:
    _current.reset(token)


@contextlib.contextmanager
def detached() -> Iterator[None]:
    """Work inside is no tool's own: a browser loading a page for whichever tool is running. The HTTP
    cache then judges its requests by their method alone, as outside any call; nothing cancels it."""
    token = _current.set(None)
    try:
        yield
    finally:
        _current.reset(token)


def replay_allowed(method: str) -> bool:
    """Whether the calling tool's request may be recorded and answered from the HTTP cache.

    A recorded answer stands in for the request: that is only true when sending it again would change
    nothing. So: a read-only, idempotent tool's requests may be replayed whatever their method (a
    search API queried by POST); an idempotent tool that changes only its own output (download_file
    writing into the workspace, which replay redoes) may replay its safe GET/HEAD requests; a tool
    that is not idempotent (or says nothing) never is. Outside a tool call (the CLI, a script) the
    method alone decides: GET and HEAD.
    """
    call = _current.get()
    safe = method.upper() in SAFE_METHODS
    if call is None:
        return safe
    hints = call.hints
    if hints is None or not hints.idempotent_hint:
        return False
    return bool(hints.read_only_hint) or safe
