"""Sessions: one private workspace directory per session key, removed when the session ends.

New workspaces are admitted only while the gateway holds fewer than `max_sessions` sessions and
the disk under the workspace root has more than `min_free_disk_mb` free: past either, a new
session is refused at once with the reason, and the sessions already running go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import shutil
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

from gaia_kit import quota

logger = logging.getLogger("gaia_env.sessions")


class SessionRefused(Exception):
    """No new workspace now; the message says why and what the client or operator can do."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class SessionLimits:
    max_sessions: int = 2048
    """Keyed sessions with a workspace at once; 0 for no limit."""
    min_free_disk_mb: int = 1024
    """New workspaces are refused while the workspace root's disk has less free than this; 0: never."""


@dataclass
class SessionState:
    key: str
    workspace: Path
    last_used: float = field(default_factory=time.monotonic)
    active_calls: int = 0


class SessionStore:
    def __init__(
        self,
        root: Path,
        idle_ttl: float,
        on_end: Callable[[str], None] | None = None,
        limits: SessionLimits = SessionLimits(),
        on_refuse: Callable[[str], None] | None = None,
    ):
        self.root = root
        self.idle_ttl = idle_ttl
        self.limits = limits
        self._sessions: dict[str, SessionState] = {}
        self._on_end = on_end
        self._on_refuse = on_refuse
        root.mkdir(parents=True, exist_ok=True)
        quota.prepare_root(root)

    def __len__(self) -> int:
        return len(self._sessions)

    def free_disk_bytes(self) -> int:
        return shutil.disk_usage(self.root).free

    def describe(self) -> dict[str, object]:
        """For /ready: how many sessions there are, the limits, and whether new ones are taken."""
        free_mb = self.free_disk_bytes() // 2**20
        full = bool(self.limits.max_sessions) and len(self._sessions) >= self.limits.max_sessions
        return {
            "live": len(self._sessions),
            "max_sessions": self.limits.max_sessions,
            "free_disk_mb": free_mb,
            "min_free_disk_mb": self.limits.min_free_disk_mb,
            "accepting_new": not full and free_mb >= self.limits.min_free_disk_mb,
        }

    def _admit(self, keyed: bool) -> None:
        """Raise SessionRefused when a new workspace may not be made now."""
        limit = self.limits.max_sessions
        if keyed and limit and len(self._sessions) >= limit:
            self._refuse(
                "max_sessions",
                f"The gateway already holds its maximum of {limit} sessions (GAIA_MAX_SESSIONS), so no "
                "new session can start now. End finished sessions (DELETE /mcp with their X-Session-Id "
                "or Mcp-Session-Id) or retry when idle ones expire.",
            )
        free_mb = self.free_disk_bytes() // 2**20
        if free_mb < self.limits.min_free_disk_mb:
            self._refuse(
                "disk_floor",
                f"The disk holding the workspaces has only {free_mb} MB free, below the floor of "
                f"{self.limits.min_free_disk_mb} MB (GAIA_MIN_FREE_DISK_MB), so no new workspace is made. "
                "Running sessions go on; end finished sessions or free disk space, then retry.",
            )

    def _refuse(self, reason: str, message: str) -> None:
        if self._on_refuse:
            self._on_refuse(reason)
        logger.warning("new session refused: %s", reason)
        raise SessionRefused(reason, message)

    def workspace_for(self, key: str) -> SessionState:
        state = self._sessions.get(key)
        if state is None:
            self._admit(keyed=True)
            # Hash the client's key: it names a directory, and clients choose it.
            digest = hashlib.sha256(key.encode()).hexdigest()[:32]
            state = SessionState(key, self.root / f"s-{digest}")
            state.workspace.mkdir(parents=True, exist_ok=True)
            self._sessions[key] = state
        state.last_used = time.monotonic()
        return state

    @contextlib.asynccontextmanager
    async def use(self, key: str | None) -> AsyncIterator[SessionState]:
        """A call's session; a call with no key gets a fresh workspace that is removed after it."""
        if key is None:
            self._admit(keyed=False)
            state = SessionState(f"ephemeral-{uuid.uuid4().hex}", self.root / f"e-{uuid.uuid4().hex}")
            state.workspace.mkdir(parents=True)
            try:
                yield state
            finally:
                if self._on_end:
                    self._on_end(state.key)
                await asyncio.to_thread(_remove, state.workspace)
            return
        state = self.workspace_for(key)
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
        if self._on_end:
            self._on_end(key)
        await asyncio.to_thread(_remove, state.workspace)
        logger.info("session ended, workspace removed: %s", state.workspace.name)
        return True

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


def _remove(workspace: Path) -> None:
    shutil.rmtree(workspace, ignore_errors=True)
    quota.release(workspace)
