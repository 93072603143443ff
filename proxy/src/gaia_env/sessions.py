"""Sessions: one private workspace directory per session key, removed when the session ends.

The store owns every session's lifetime: one idle TTL, for the workspace, the MCP transport and the
state servers keep. It remembers which servers a session called, so ending it tells only those.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import shutil
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger("gaia_env.sessions")


@dataclass
class SessionState:
    key: str
    workspace: Path
    last_used: float = field(default_factory=time.monotonic)
    active_calls: int = 0
    servers: set[str] = field(default_factory=set)
    """The servers this session called: the ones told when it ends."""


OnEnd = Callable[[SessionState], Awaitable[None]]


class SessionStore:
    def __init__(self, root: Path, idle_ttl: float, on_end: OnEnd | None = None):
        self.root = root
        self.idle_ttl = idle_ttl
        self._sessions: dict[str, SessionState] = {}
        self._on_end = on_end
        root.mkdir(parents=True, exist_ok=True)

    def __len__(self) -> int:
        return len(self._sessions)

    def touch(self, key: str) -> SessionState:
        """The session with this key, registered on first sight (its workspace is made on first use)."""
        state = self._sessions.get(key)
        if state is None:
            # Hash the client's key: it names a directory, and clients choose it.
            digest = hashlib.sha256(key.encode()).hexdigest()[:32]
            state = SessionState(key, self.root / f"s-{digest}")
            self._sessions[key] = state
        state.last_used = time.monotonic()
        return state

    @contextlib.asynccontextmanager
    async def use(self, key: str | None, server: str) -> AsyncIterator[SessionState]:
        """A call's session; a call with no key gets a fresh workspace that is removed after it."""
        if key is None:
            state = SessionState(f"ephemeral-{uuid.uuid4().hex}", self.root / f"e-{uuid.uuid4().hex}")
            state.servers.add(server)
            state.workspace.mkdir(parents=True)
            try:
                yield state
            finally:
                await self._release(state)
            return
        state = self.touch(key)
        state.servers.add(server)
        state.workspace.mkdir(parents=True, exist_ok=True)
        state.active_calls += 1
        try:
            yield state
        finally:
            state.active_calls -= 1
            state.last_used = time.monotonic()

    async def end(self, key: str) -> bool:
        state = self._sessions.pop(key, None)
        if state is None:
            return False
        await self._release(state)
        logger.info("session ended, workspace removed: %s", state.workspace.name)
        return True

    async def _release(self, state: SessionState) -> None:
        try:
            if self._on_end:
                await self._on_end(state)
        finally:
            await asyncio.to_thread(shutil.rmtree, state.workspace, True)

    async def reap_idle(self) -> int:
        now = time.monotonic()
        idle = [
            s.key for s in self._sessions.values() if not s.active_calls and now - s.last_used > self.idle_ttl
        ]
        for key in idle:
            await self.end(key)
        return len(idle)

    async def reap_forever(self, every: float = 30.0) -> None:
        while True:
            await asyncio.sleep(min(every, self.idle_ttl))
            await self.reap_idle()

    async def close(self) -> None:
        for key in list(self._sessions):
            await self.end(key)
