"""Keeping blocking work off the event loop, and library output off stdout."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

import anyio.to_thread

P = ParamSpec("P")
T = TypeVar("T")


async def run_blocking(fn: Callable[..., T], *args: object) -> T:
    """Run a blocking call in a worker thread so one slow call never delays another."""
    return await anyio.to_thread.run_sync(fn, *args)


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send Python-level prints to stderr: in a stdio server stdout belongs to the protocol."""
    with contextlib.redirect_stdout(sys.stderr):
        yield
