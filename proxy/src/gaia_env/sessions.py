"""Sessions: one private workspace directory per session key, removed when the session ends.

The store owns every session's lifetime: one idle TTL, for the workspace, the MCP transport and the
state servers keep. It remembers which servers a session called, so ending it tells only those.

A serving gateway's store owns its workspace root (`own_root`): it holds a lock on it for its
lifetime (a second serving gateway on the same root is refused) and removes, at start, the
workspaces an earlier run left behind (their sessions died with that process; docs/scaling.md).

New workspaces are admitted only while the gateway holds fewer than `max_sessions` of them, the
client asking holds fewer than `max_sessions_per_client`, and the disk under the workspace root
has more than `min_free_disk_mb` free. At either session limit the least recently used session
idle for `evict_after_s` (of that client, for its own limit) is ended to make room; only when none
is that idle is the new session refused, at once, with the reason. Running sessions go on.

Ending a session never fails for its caller (a DELETE, the reaper): a workspace that cannot be
removed (sandboxed code can build any tree) is logged and kept as an orphan, which the reaper
and the store's close retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import logging
import shutil
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from gaia_kit.core import quota_accounting
from gaia_kit.core.removal import remove_tree

from .costs import Ledger

EPHEMERAL_PREFIX = "ephemeral-"
"""Key prefix of the one-call sessions of requests that name none."""
ROOT_LOCK = "gateway.lock"
"""In the root's quota folder: held by the one gateway that uses the root."""

logger = logging.getLogger("gaia_env.sessions")


class SessionRefused(Exception):
    """No new workspace now; the message says why and what the client or operator can do."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class RootInUse(Exception):
    """Another serving gateway holds this workspace root."""


@dataclass(frozen=True)
class SessionLimits:
    max_sessions: int = 2048
    """Keyed sessions with a workspace at once; 0 for no limit."""
    min_free_disk_mb: int = 1024
    """New workspaces are refused while the workspace root's disk has less free than this; 0: never."""
    max_sessions_per_client: int = 1024
    """Keyed sessions with a workspace one client may hold at once; 0 for no limit."""
    evict_after_s: float = 120.0
    """At a session limit, a session idle this long may be ended to make room for a new one."""
    max_unused_sessions: int = 1024
    """MCP sessions that have not called a tool yet (no workspace), at once; 0 for no limit."""
    unused_ttl_s: float = 300.0
    """An MCP session that has not called a tool yet ends after this long idle."""


@dataclass
class SessionState:
    key: str
    workspace: Path
    last_used: float = field(default_factory=time.monotonic)
    active_calls: int = 0
    servers: set[str] = field(default_factory=set)
    """The servers this session called: the ones told when it ends."""
    made: bool = False
    """Its workspace exists (an MCP session has none until its first tool call)."""
    calls: int = 0
    client: str = ""
    """Who made its workspace (selection.client_of): what the per-client limit counts."""
    task: dict[str, Any] | None = None
    """The task the session serves, as its client last sent it (`_meta` gaia-env/task); never shown to the model."""
    ledger: Ledger = field(default_factory=Ledger)
    """What it spent on paid backends and what the benchmark-copy guard withheld from it (costs.py)."""


OnEnd = Callable[[SessionState], Awaitable[None]]


class SessionStore:
    def __init__(
        self,
        root: Path,
        idle_ttl: float,
        on_end: OnEnd | None = None,
        limits: SessionLimits = SessionLimits(),
        on_refuse: Callable[[str], None] | None = None,
        own_root: bool = False,
        hand_over: Callable[[Path], None] | None = None,
    ):
        self.root = root
        self._hand_over = hand_over or (lambda path: None)
        """Gives a new workspace to the servers' uid when they run as another user (confine.py)."""
        self.idle_ttl = idle_ttl
        self.limits = limits
        self._sessions: dict[str, SessionState] = {}
        self._workspaces = 0
        """Sessions whose workspace exists: what max_sessions counts."""
        self._on_end = on_end
        self._on_refuse = on_refuse
        self._per_client: Counter[str] = Counter()
        """Sessions with a workspace, per client."""
        self.evicted = 0
        """Idle sessions ended to make room at a session limit, since start."""
        self._orphans: set[Path] = set()
        """Workspaces of ended sessions that could not be removed yet."""
        root.mkdir(parents=True, exist_ok=True)
        quota_accounting.prepare_root(root)
        self._lock = _lock_root(root) if own_root else None
        if own_root and (removed := _remove_leftovers(root)):
            logger.info("removed %d workspaces an earlier run left behind", removed)

    def __len__(self) -> int:
        """Sessions with a workspace (an MCP session that has not called a tool yet has none)."""
        return self._workspaces

    def holds(self, key: str) -> bool:
        """Whether this store already made the session's workspace (its first call was served here)."""
        state = self._sessions.get(key)
        return state is not None and state.made

    def get(self, key: str) -> SessionState | None:
        return self._sessions.get(key)

    def keys(self) -> list[str]:
        return list(self._sessions)

    def served(self) -> list[dict[str, object]]:
        """The live sessions, for operators: key, calls, servers used, idle seconds."""
        now = time.monotonic()
        return [
            {
                "key": s.key,
                "calls": s.calls,
                "servers": sorted(s.servers),
                "cost_usd": round(s.ledger.usd, 6),
                "idle_s": round(now - s.last_used, 1),
            }
            for s in self._sessions.values()
        ]

    def free_disk_bytes(self) -> int:
        return shutil.disk_usage(self.root).free

    def describe(self) -> dict[str, object]:
        """For /ready: how many sessions there are, the limits, and whether new ones are taken."""
        free_mb = self.free_disk_bytes() // 2**20
        return {
            "live": len(self),
            "max_sessions": self.limits.max_sessions,
            "max_sessions_per_client": self.limits.max_sessions_per_client,
            "evict_after_s": self.limits.evict_after_s,
            "evicted": self.evicted,
            "unused_mcp_sessions": self.unused(),
            "max_unused_sessions": self.limits.max_unused_sessions,
            "free_disk_mb": free_mb,
            "min_free_disk_mb": self.limits.min_free_disk_mb,
            "accepting_new": not self._full() and free_mb >= self.limits.min_free_disk_mb,
        }

    def _full(self, client: str | None = None) -> str | None:
        """The session limit a new session (of `client`) meets with nothing idle enough to evict, or None."""
        per_client = self.limits.max_sessions_per_client
        if client is not None and per_client and self._per_client[client] >= per_client:
            if self._evictable(client) is None:
                return "per_client"
        limit = self.limits.max_sessions
        if limit and len(self) >= limit and self._evictable(None) is None:
            return "max_sessions"
        return None

    def _evictable(self, client: str | None) -> SessionState | None:
        """The least recently used session idle at least evict_after_s (of `client`, if given)."""
        cutoff = time.monotonic() - self.limits.evict_after_s
        chosen: SessionState | None = None
        for state in self._sessions.values():
            if not state.made or state.active_calls or state.last_used > cutoff:
                continue
            if (client is None or state.client == client) and (
                chosen is None or state.last_used < chosen.last_used
            ):
                chosen = state
        return chosen

    async def _make_room(self, client: str) -> None:
        """Evict idle sessions as the limits need, or raise SessionRefused; then check the disk."""
        # Loops: while one eviction awaits its removal, another new session may take the room.
        per_client = self.limits.max_sessions_per_client
        while per_client and self._per_client[client] >= per_client:
            await self._evict(client, "per_client")
        limit = self.limits.max_sessions
        while limit and len(self) >= limit:
            await self._evict(None, "max_sessions")
        self._check_disk()

    async def _evict(self, client: str | None, limit: str) -> None:
        victim = self._evictable(client)
        if victim is None:
            self._refuse(limit, self._refusal(limit))
            return
        self.evicted += 1
        idle = time.monotonic() - victim.last_used
        logger.info("evicting session idle %.0f s to make room (%s): %s", idle, limit, victim.workspace.name)
        await self.end(victim.key)

    def _refusal(self, limit: str) -> str:
        ending = (
            "End finished sessions (DELETE /sessions/<id>, or DELETE /mcp with their X-Session-Id or "
            "Mcp-Session-Id) or retry later: a session idle for "
            f"{self.limits.evict_after_s:g} s (GAIA_SESSION_EVICT_AFTER_S) is ended to make room."
        )
        if limit == "per_client":
            return (
                f"This client already holds its maximum of {self.limits.max_sessions_per_client} sessions "
                "(GAIA_MAX_SESSIONS_PER_CLIENT; clients are told apart by bearer token, else by address), "
                f"so no new session of it can start now. {ending}"
            )
        return (
            f"The gateway already holds its maximum of {self.limits.max_sessions} sessions "
            f"(GAIA_MAX_SESSIONS), so no new session can start now. {ending}"
        )

    def _check_disk(self) -> None:
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

    def check_new(self, client: str = "") -> None:
        """Raise SessionRefused when a new session of `client` could not get a workspace now
        (POST /sessions: minting keeps nothing, so nothing is evicted yet)."""
        if limit := self._full(client):
            self._refuse(limit, self._refusal(limit))
        self._check_disk()

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
    async def use(self, key: str | None, server: str, client: str = "") -> AsyncIterator[SessionState]:
        """A call's session; a call with no key gets a fresh workspace that is removed after it.
        `client` (selection.client_of) is who asks: a new session counts against its limit."""
        if key is None:
            self._check_disk()
            state = SessionState(f"{EPHEMERAL_PREFIX}{uuid.uuid4().hex}", self.root / f"e-{uuid.uuid4().hex}")
            state.servers.add(server)
            state.workspace.mkdir(parents=True)
            self._hand_over(state.workspace)
            try:
                yield state
            finally:
                await self._release(state)
            return
        known = self._sessions.get(key)
        if known is None or not known.made:
            await self._make_room(client)  # a refused key is not registered: it keeps no memory
        state = self.touch(key)
        if not state.made:
            state.workspace.mkdir(parents=True, exist_ok=True)
            self._hand_over(state.workspace)
            state.made, state.client = True, client
            self._workspaces += 1
            self._per_client[client] += 1
        state.servers.add(server)
        state.calls += 1
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
        if state.made:
            self._workspaces -= 1
            self._per_client[state.client] -= 1
            if not self._per_client[state.client]:
                del self._per_client[state.client]
        await self._release(state)
        logger.info("session ended, workspace removed: %s", state.workspace.name)
        return True

    async def _release(self, state: SessionState) -> None:
        """Tell whoever listens, then remove the workspace; a failure of either is logged, never raised."""
        try:
            if self._on_end:
                await self._on_end(state)
        except Exception:
            logger.exception("telling the servers that session %s ended failed", state.workspace.name)
        await self._remove_workspace(state.workspace)

    async def _remove_workspace(self, workspace: Path) -> None:
        if await asyncio.to_thread(_remove, workspace):
            self._orphans.discard(workspace)
        else:
            self._orphans.add(workspace)

    async def remove_orphans(self) -> int:
        """Retry removing the workspaces that could not be removed when their sessions ended."""
        for workspace in list(self._orphans):
            await self._remove_workspace(workspace)
        return len(self._orphans)

    def unused(self) -> int:
        """MCP sessions registered (initialized) that have not called a tool yet."""
        return len(self._sessions) - self._workspaces

    async def admit_unused(self) -> None:
        """Make room for one more MCP session that has not called a tool yet (an `initialize`), or
        raise SessionRefused: each holds the SDK's transport in memory until it ends."""
        limit = self.limits.max_unused_sessions
        if not limit or self.unused() < limit:
            return
        now = time.monotonic()
        expired = [s.key for s in self._sessions.values() if self._expired(s, now)]
        for key in expired:
            await self.end(key)
        if self.unused() >= limit:
            self._refuse(
                "max_unused",
                f"The gateway already holds its maximum of {limit} MCP sessions that have not called a "
                f"tool yet (GAIA_MAX_UNUSED_SESSIONS); each ends after {self._unused_ttl():g} s without "
                "a call (GAIA_UNUSED_SESSION_TTL). Retry shortly, or call tools without initialize "
                "(one bare JSON-RPC POST with an X-Session-Id header).",
            )

    def _unused_ttl(self) -> float:
        return min(self.idle_ttl, self.limits.unused_ttl_s)

    def _expired(self, state: SessionState, now: float) -> bool:
        ttl = self.idle_ttl if state.made else self._unused_ttl()
        return not state.active_calls and now - state.last_used > ttl

    async def reap_idle(self) -> int:
        now = time.monotonic()
        idle = [s.key for s in self._sessions.values() if self._expired(s, now)]
        for key in idle:
            try:
                await self.end(key)
            except Exception:
                logger.exception("ending idle session %s failed; the reaper goes on", key)
        await self.remove_orphans()
        return len(idle)

    async def reap_forever(self, every: float = 30.0) -> None:
        """Reap idle sessions every `every` seconds until cancelled; one failing round stops nothing."""
        pause = min(every, self.idle_ttl, self._unused_ttl())
        while True:
            await asyncio.sleep(pause)
            try:
                await self.reap_idle()
            except Exception:
                logger.exception("reaping idle sessions failed; retrying in %g s", pause)

    async def close(self) -> None:
        for key in list(self._sessions):
            await self.end(key)
        if left := await self.remove_orphans():
            logger.error("%d workspaces could not be removed at shutdown: %s", left, sorted(self._orphans))
        if self._lock is not None:
            self._lock.close()


def _lock_root(root: Path) -> IO[str]:
    """Hold the root's lock, or refuse: two gateways on one root would remove each other's workspaces."""
    handle = open(root / quota_accounting.QUOTA_DIR / ROOT_LOCK, "w")  # noqa: SIM115 - held until close()
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise RootInUse(
            f"Another gateway is using the workspace root {root}; give each gateway its own "
            "(--workspace-root or GAIA_WORKSPACE_ROOT)."
        ) from None
    return handle


def _remove_leftovers(root: Path) -> int:
    """Remove the session workspaces under `root` (a new store has no sessions yet); return how many."""
    leftovers = [p for p in root.iterdir() if p.name.startswith(("s-", "e-")) and p.is_dir()]
    for workspace in leftovers:
        _remove(workspace)
    return len(leftovers)


def _remove(workspace: Path) -> bool:
    """Remove a workspace, whatever tree is in it; False (and logged) when something is left."""
    try:
        remove_tree(workspace)
    except OSError as exc:
        logger.error("could not remove workspace %s (%s); will retry", workspace.name, exc)
        return False
    quota_accounting.release(workspace)
    return True
