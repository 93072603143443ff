"""Heavy work in a forked child under a memory limit: the memory it takes goes back when it ends.

Parsing a document holds its whole tree in memory, and CPython's allocator rarely hands freed
memory back to the system: one hostile file (a zip bomb, a sheet that claims a billion cells) would
leave a server several gigabytes larger for good. `run_bounded(fn, ...)` forks the calling thread,
caps the child's new address space with RLIMIT_AS (GAIA_CALL_MEMORY_MB, 512 by default), runs `fn`
there and sends its result (or its exception) back through a pipe. A child that crosses the limit
gets a MemoryError (or dies) and the caller gets one clear sentence; the server itself never grows
by more than the result.

Why fork, and why from the event loop's thread: the child starts in milliseconds with every module
and setting already loaded, and only the forking thread lives on in it, so a lock that another thread
held at that moment stays held there forever. Forking from the loop's thread, which runs no tool
code of its own, while the tools of a bounded server run in no other thread, leaves no such lock
for the child to need; `fork_gate` lets other background work (an import warming a cache) keep
forks out while it runs. A cancelled call (the client's, or the gateway's deadline) kills its child.

What a child imports dies with it, so a tool that imports its libraries on first use would pay for
the import on every call (pandas' and matplotlib's lazy parts: 50 ms of a CSV call's 67). The child
names the modules it imported, and the parent imports them once, in a thread behind `fork_gate`, so
later children are born with them.

RLIMIT_AS alone has a hole: memory the server freed but kept in its heap is inherited by the child
and handed out again without a new mapping (measured: a child limited to 64 MB was granted 160 MB
after its parent had freed 240 MB). So the child first gives that free heap back (`malloc_trim`:
reusing it then costs new pages), and its private resident memory is held to the same budget: a
watcher thread stops the child once it grows past it, and the peak (`VmHWM`, reset at the start) is
checked when the work ends (a burst between two looks), and when it failed, so a reader that calls a
file damaged because an allocation was refused is answered as the memory limit it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import functools
import importlib
import logging
import os
import pickle
import re
import resource
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import anyio.to_thread
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from gaia_kit.core import calls
from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import settings

P = ParamSpec("P")
T = TypeVar("T")
logger = logging.getLogger("gaia_kit.core.bounded")

_HEADER = struct.Struct("!Q")
_OK, _RAISED, _OUT_OF_MEMORY = 0, 1, 2
_OUT_OF_MEMORY_EXIT = 86
_WATCH_S = 0.01


class CallOutOfMemory(ToolFailure):
    """The call needed more memory than its limit; the server is unharmed."""


class BoundedSettings(BaseSettings):
    """GAIA_CALL_MEMORY_MB; see docs/configuration.md."""

    model_config = SettingsConfigDict(env_prefix="GAIA_", extra="ignore")

    call_memory_mb: int = Field(512, ge=0)
    """The new memory, in MB, one bounded call may take; 0 turns the limit off."""


def call_memory_mb() -> int:
    """GAIA_CALL_MEMORY_MB: the new memory one bounded call may take (0 turns the limit off)."""
    return settings(BoundedSettings).call_memory_mb


fork_gate = threading.Lock()
"""Held by background threads whose locks a child must not inherit (an import in progress)."""


async def run_bounded(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """fn(*args, **kwargs) in a child forked from this thread, with GAIA_CALL_MEMORY_MB of new memory.

    Call it from the event loop. Returns what fn returns and raises what it raises (both must pickle;
    an exception that does not comes back as a RuntimeError naming it). Raises CallOutOfMemory past
    the limit; a cancelled call kills the child. GAIA_CALL_MEMORY_MB=0 runs fn in a worker thread."""
    budget_mb = call_memory_mb()
    if budget_mb == 0:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), abandon_on_cancel=True)
    while not fork_gate.acquire(blocking=False):  # waiting here must not stop the event loop
        await asyncio.sleep(0.05)
    try:
        read_end, write_end = os.pipe()
        pid = os.fork()
    finally:
        fork_gate.release()
    if pid == 0:  # the child never returns from here
        os.close(read_end)
        _child(write_end, budget_mb, lambda: fn(*args, **kwargs))
    os.close(write_end)
    try:
        payload = await _read_all(read_end)
        status = await _exit_status(pid)
    except BaseException:
        _kill(pid)
        raise
    if len(payload) < _HEADER.size or len(payload) != _HEADER.size + _HEADER.unpack_from(payload)[0]:
        raise _died(status, budget_mb)
    kind, value, imported = pickle.loads(payload[_HEADER.size :])
    _adopt(imported)
    if kind == _OK:
        return value
    if kind == _OUT_OF_MEMORY:
        raise out_of_memory(budget_mb)
    raise value


def _child(write_end: int, budget_mb: int, work: Callable[[], object]) -> None:
    code = 0
    try:
        # The protocol's stdout is the parent's: whatever the work prints goes to stderr instead.
        os.dup2(2, 1)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        memory = _ChildMemory(budget_mb * 2**20)
        start = cap_memory(budget_mb)
        modules_before = set(sys.modules)
        token = calls._quiet.set(True)  # progress would go to the parent's event loop: not from here
        try:
            message = (_OK, work())
        except MemoryError:
            message = (_OUT_OF_MEMORY, None)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the caller
            grown = max(_peak_address_space() - start, memory.peak_growth())
            if _starved(exc, grown, budget_mb * 2**20):
                message = (_OUT_OF_MEMORY, None)
            elif not isinstance(exc, (ToolError, MCPError, calls.CallCancelled)):
                logger.error("a bounded call raised an unexpected exception", exc_info=exc)
                message = (_RAISED, exc)
            else:
                message = (_RAISED, exc)
        finally:
            calls._quiet.reset(token)
        if message[0] != _OUT_OF_MEMORY and memory.peak_growth() > memory.budget:
            message = (_OUT_OF_MEMORY, None)  # a burst between two looks of the watcher
        imported = sorted(set(sys.modules) - modules_before)
        try:
            payload = pickle.dumps((*message, imported), protocol=pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            payload = pickle.dumps((_OUT_OF_MEMORY, None, []))
        except Exception as exc:  # an unpicklable result or exception
            failure = RuntimeError(f"{type(message[1]).__name__} could not be sent back ({exc})")
            payload = pickle.dumps((_RAISED, failure, imported))
        _write_all(write_end, _HEADER.pack(len(payload)) + payload)
    except MemoryError:
        code = _OUT_OF_MEMORY_EXIT
    except BaseException:  # noqa: BLE001 - nothing may unwind into the parent's code
        code = 1
    finally:
        os._exit(code)


_adopted: set[str] = set()


def _adopt(imported: list[str]) -> None:
    """Import, once and off the event loop, the modules a child imported that this process lacks."""
    wanted = [name for name in imported if name not in sys.modules and name not in _adopted]
    if wanted:
        _adopted.update(wanted)
        threading.Thread(target=_import_all, args=(wanted,), name="bounded-adopt", daemon=True).start()


def _import_all(names: list[str]) -> None:
    with fork_gate:  # a child forked mid-import would find the import's locks held forever
        for name in names:
            with contextlib.suppress(Exception):  # a module only the child could load stays its own
                importlib.import_module(name)


_ALLOCATION = re.compile(r"alloc|out of memory|memory", re.IGNORECASE)


def _starved(exc: BaseException, grown: int, budget: int) -> bool:
    """Whether a failure was the memory limit in disguise: C libraries (lxml, zlib, Pillow) report a
    refused allocation in their own words ("Unable to allocate output buffer"), and the reader above
    them may call the file damaged. Blamed on memory when the child used most of its budget."""
    return grown > 0.9 * budget or (grown > 0.5 * budget and bool(_ALLOCATION.search(str(exc))))


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, found once in the parent (a child should not load libraries)."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        return ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim
    return None


_give_back_free_heap = _malloc_trim()


class _ChildMemory:
    """The private resident memory a forked child takes, held to `budget` bytes.

    Called first thing in the child: the heap the parent had freed is given back, so reusing it
    costs new pages, which the resident counts see (pages still shared with the parent, written or
    not, are not counted: they cost the machine nothing new or are the parent's own)."""

    def __init__(self, budget: int):
        self.budget = budget
        if _give_back_free_heap is not None:
            _give_back_free_heap(0)
        with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")  # the peak resident size (VmHWM) starts from now
        self.start = _resident()
        # Where the peak could not be reset it is the parent's, inherited: no measure of this call.
        self.peak_known = self.start["VmHWM"] <= self.start["VmRSS"] + 2**20
        threading.Thread(target=self._watch, name="bounded-memory", daemon=True).start()

    def private_growth(self) -> int:
        now = _resident()
        return now["RssAnon"] + now["RssShmem"] - self.start["RssAnon"] - self.start["RssShmem"]

    def peak_growth(self) -> int:
        """How far the private memory grew at its peak: the peak of all resident memory, less the
        file pages (libraries, mapped files: shared with the page cache) resident now."""
        if not self.peak_known:
            return self.private_growth()
        now = _resident()
        return now["VmHWM"] - now["RssFile"] - self.start["RssAnon"] - self.start["RssShmem"]

    def _watch(self) -> None:
        # A thread of its own: the work may be one long call into a C library (which mostly lets
        # other threads run while it decodes), never returning to Python code that could check.
        while self.private_growth() <= self.budget:
            time.sleep(_WATCH_S)
        os._exit(_OUT_OF_MEMORY_EXIT)


def _resident() -> dict[str, int]:
    found = dict.fromkeys(("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem"), 0)
    with open("/proc/self/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key in found:
                found[key] = int(value.split()[0]) * 1024
    return found


def _peak_address_space() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmPeak:"):
                return int(line.split()[1]) * 1024
    return 0


def cap_memory(budget_mb: int) -> int:
    """Let this process map at most `budget_mb` more than it has now (RLIMIT_AS); returns what it had.

    For a worker process of its own (the PDF converter) as for the forked child here."""
    start = _address_space()
    limit = start + budget_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return start


def _address_space() -> int:
    """The child's mapped address space now (what it shares with the parent counts here)."""
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[0]) * resource.getpagesize()


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def _read_all(fd: int) -> bytes:
    """Everything the child writes, up to its end of file (every fork happens on this thread, and
    the parent closes its write end at once, so no other child keeps the pipe open)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**31)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0)
    )
    try:
        return await reader.read()
    finally:
        transport.close()


async def _exit_status(pid: int) -> int:
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        await asyncio.sleep(0.005)  # it exits right after closing the pipe


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def out_of_memory(budget_mb: int) -> CallOutOfMemory:
    """The answer for a call stopped at its memory limit."""
    return CallOutOfMemory(
        f"The input needs more than the {budget_mb} MB of memory one call may use (GAIA_CALL_MEMORY_MB), "
        "so it was stopped; it may be a decompression bomb. Read a smaller part of it, or a smaller file."
    )


def _died(status: int, budget_mb: int) -> ToolFailure:
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == _OUT_OF_MEMORY_EXIT:
        return out_of_memory(budget_mb)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        return CallOutOfMemory(
            f"The worker reading the input was killed by {name}, most likely at the {budget_mb} MB memory "
            "limit of one call (GAIA_CALL_MEMORY_MB); it may be a decompression bomb. Read a smaller file."
        )
    return ToolFailure(
        "The worker reading the input stopped without an answer; the file may be damaged. Try another file."
    )
