"""gaia_kit.core.bounded: heavy work in a forked child whose memory goes back, under a limit."""

from __future__ import annotations

import asyncio
import os
import sys
import time

import pytest
from gaia_kit import ToolFailure
from gaia_kit.core.bounded import CallOutOfMemory, run_bounded
from gaia_kit.core.settings import forget_settings
from gaia_kit_testing.bombs import resident_mb

pytestmark = pytest.mark.anyio


def grab(mb: int) -> int:
    block = bytearray(mb * 2**20)
    block[::4096] = b"x" * len(block[::4096])  # touch every page: resident, not only reserved
    return len(block)


def hoard() -> None:
    kept = []
    while True:
        kept.append(bytearray(16 * 2**20))


def borrow(blocks: int) -> int:
    kept = [bytearray(8 * 2**20) for _ in range(blocks)]  # zero-filled: every page resident
    return len(kept)


def refuse() -> None:
    raise ToolFailure("report.docx is damaged.")


def unexpected() -> None:
    raise KeyError("word/document.xml")


async def test_result_and_exceptions_come_back_from_the_child(monkeypatch):
    monkeypatch.setenv("GAIA_CALL_MEMORY_MB", "256")
    assert await run_bounded(pow, 2, 10) == 1024
    assert await run_bounded(os.getpid) != os.getpid()
    assert len(await run_bounded(str.__mul__, "x", 30_000_000)) == 30_000_000  # a large answer whole
    with pytest.raises(ToolFailure, match="report.docx is damaged"):
        await run_bounded(refuse)
    with pytest.raises(KeyError, match="word/document.xml"):
        await run_bounded(unexpected)
    answers = await asyncio.gather(*(run_bounded(pow, n, 2) for n in range(16)))
    assert answers == [n * n for n in range(16)]


@pytest.mark.parametrize("work", [lambda: grab(600), hoard], ids=["one-block", "step-by-step"])
async def test_past_the_limit_the_call_gets_a_sentence_and_the_server_keeps_nothing(monkeypatch, work):
    monkeypatch.setenv("GAIA_CALL_MEMORY_MB", "256")
    before = resident_mb()
    with pytest.raises(CallOutOfMemory, match="more than the 256 MB of memory one call may use"):
        await run_bounded(work)
    assert await run_bounded(grab, 100) == 100 * 2**20  # under the limit: fine
    assert resident_mb() - before < 32  # the parent never held the child's memory


async def test_heap_the_server_freed_is_not_lent_to_a_call_past_its_limit(monkeypatch):
    """A server freed 192 MB it keeps in its heap: a child under a 64 MB limit reuses that heap
    without a new mapping, which RLIMIT_AS alone never saw (it granted 112 MB here)."""
    monkeypatch.setenv("GAIA_CALL_MEMORY_MB", "64")
    raised = bytearray(32 * 2**20)
    del raised  # glibc's mmap threshold now passes 8 MB: such blocks come from the heap
    freed, pinned = [], []
    for _ in range(24):
        freed.append(bytearray(8 * 2**20))
        pinned.append(bytearray(4096))  # keeps the heap from shrinking when the blocks go
    del freed
    with pytest.raises(CallOutOfMemory, match="more than the 64 MB of memory one call may use"):
        await run_bounded(borrow, 12)
    assert await run_bounded(borrow, 4) == 4
    del pinned


async def test_a_cancelled_call_kills_its_child(monkeypatch):
    monkeypatch.setenv("GAIA_CALL_MEMORY_MB", "256")
    earlier = set(_children())  # processes earlier tests of this run left to the test process
    task = asyncio.create_task(run_bounded(time.sleep, 60))
    await asyncio.sleep(0.5)
    children = set(_children()) - earlier
    assert children, "the child should be running"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not children & set(_children())


async def test_zero_turns_the_limit_off(monkeypatch):
    monkeypatch.setenv("GAIA_CALL_MEMORY_MB", "0")
    assert await run_bounded(os.getpid) == os.getpid()
    monkeypatch.setenv("GAIA_CALL_MEMORY_MB", "lots")
    forget_settings()  # read once per process: read it again
    with pytest.raises(ToolFailure, match="GAIA_CALL_MEMORY_MB is set to 'lots'; set it to a whole number"):
        await run_bounded(os.getpid)


def _children() -> list[int]:
    with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as handle:
        return [int(pid) for pid in handle.read().split()]


def import_late(name: str) -> str:
    import importlib

    return importlib.import_module(name).WORD


async def test_what_a_child_imports_the_next_children_are_born_with(tmp_path, monkeypatch):
    # A library imported on first use inside a child would otherwise be imported on every call.
    name = f"late_{os.getpid()}_{time.monotonic_ns()}"
    (tmp_path / f"{name}.py").write_text("import os\nWORD = 'imported'\nPID = os.getpid()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert await run_bounded(import_late, name) == "imported"
    deadline = time.monotonic() + 10
    while name not in sys.modules and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert sys.modules[name].PID == os.getpid()  # imported here, in the parent, once
    assert await run_bounded(import_late, name) == "imported"
