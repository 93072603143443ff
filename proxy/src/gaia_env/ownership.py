"""Which gateway replica owns each session, recorded in the Redis the replicas share.

Behind a load balancer that hashes sessions onto replicas, a replica that dies takes its sessions'
workspaces with it, and the balancer sends those sessions to another replica, which would quietly
give them a fresh, empty workspace. So each replica records `session key -> name/incarnation` when
a session first uses it, and refuses a session that another replica, or an earlier run of itself,
recorded: the client gets a clear session-gone error at once (SESSION_GONE in the wire contract)
instead of a silent fresh start.

A record lives as long as an idle session does (the session TTL, plus a margin): the replica that
holds a session keeps its record alive and removes it when the session ends. Without Redis (one
gateway) every session is this replica's and nothing is recorded.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from gaia_contract import (
    GONE_ELSEWHERE,
    GONE_OWNER,
    GONE_REASON,
    GONE_REPLICA,
    GONE_RESTARTED,
    SESSION_GONE,
    session_gone_message,
)

from .errors import GatewayError

logger = logging.getLogger("gaia_env.ownership")

PREFIX = "gaia-env:session-owner:"
TTL_MARGIN_S = 300
"""A record outlives its session's idle TTL by this much, so a record never expires before its session."""

# Set the key to this replica unless another owner holds it; answer the other owner, or nil.
_CLAIM = """
local owner = redis.call('GET', KEYS[1])
if owner and owner ~= ARGV[1] then return owner end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return false
"""
# Delete the key only while this replica owns it.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


@dataclass(frozen=True)
class Replica:
    """This gateway process: its stable name (GAIA_REPLICA_ID, else the host name) and a new
    incarnation at every start, so a restarted replica is told apart from the run before it."""

    name: str
    incarnation: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    @classmethod
    def from_env(cls) -> Replica:
        return cls(os.environ.get("GAIA_REPLICA_ID") or socket.gethostname())

    def __str__(self) -> str:
        return f"{self.name}/{self.incarnation}"


class SessionGone(GatewayError):
    """This replica does not hold the session, and another replica (or run) did: it cannot go on here."""

    def __init__(self, reason: str, owner: str, replica: Replica):
        why = (
            f"replica {replica.name} restarted since the session began"
            if reason == GONE_RESTARTED
            else f"it lived on replica {owner.split('/')[0]}, and this request reached {replica.name}"
        )
        data = {GONE_REASON: reason, GONE_OWNER: owner, GONE_REPLICA: str(replica)}
        super().__init__(SESSION_GONE, session_gone_message(why), data)


def gone_reason(owner: str, replica: Replica) -> str:
    return GONE_RESTARTED if owner.split("/")[0] == replica.name else GONE_ELSEWHERE


class SessionOwners:
    """The records of one replica; with no Redis URL, every call is a no-op."""

    def __init__(self, replica: Replica, redis_url: str = "", session_ttl: float = 1800.0):
        self.replica = replica
        self.ttl_s = int(session_ttl) + TTL_MARGIN_S
        self._redis: Any = None
        if redis_url.startswith(("redis://", "rediss://")):
            import redis.asyncio

            # Short timeouts: a call waits on this once per new session, never on a stuck Redis.
            self._redis = redis.asyncio.Redis.from_url(redis_url, socket_timeout=3, socket_connect_timeout=3)
            self._claim = self._redis.register_script(_CLAIM)
            self._release = self._redis.register_script(_RELEASE)
        self._keeper: asyncio.Task[None] | None = None

    @property
    def shared(self) -> bool:
        """Whether records are kept (a Redis is configured)."""
        return self._redis is not None

    async def claim(self, key: str) -> None:
        """Record this replica as the session's owner, or raise SessionGone if another one is."""
        if self._redis is None:
            return
        try:
            owner = await self._claim(keys=[PREFIX + key], args=[str(self.replica), self.ttl_s])
        except Exception as exc:  # Redis down: serve as one gateway would, and say so
            logger.warning("session owner not recorded (Redis: %s); serving the session here", exc)
            return
        if owner is not None:
            owner = owner.decode()
            raise SessionGone(gone_reason(owner, self.replica), owner, self.replica)

    async def owner_elsewhere(self, key: str) -> SessionGone | None:
        """The error for a session another replica or run recorded, or None (unknown or this one's)."""
        if self._redis is None:
            return None
        try:
            owner = await self._redis.get(PREFIX + key)
        except Exception as exc:
            logger.warning("session owner not looked up (Redis: %s)", exc)
            return None
        if owner is None or owner.decode() == str(self.replica):
            return None
        return SessionGone(gone_reason(owner.decode(), self.replica), owner.decode(), self.replica)

    async def release(self, key: str) -> None:
        if self._redis is None:
            return
        try:
            await self._release(keys=[PREFIX + key], args=[str(self.replica)])
        except Exception as exc:
            logger.warning("session owner record not removed (Redis: %s); it expires by itself", exc)

    def keep_alive(self, held: Callable[[], Iterable[str]]) -> None:
        """Renew the records of the sessions this replica holds, well before they would expire."""
        if self._redis is not None and self._keeper is None:
            self._keeper = asyncio.create_task(self._renew_forever(held), name="session-owner-renewal")

    async def _renew_forever(self, held: Callable[[], Iterable[str]]) -> None:
        while True:
            await asyncio.sleep(max(1.0, self.ttl_s / 4))
            keys = list(held())
            try:
                async with self._redis.pipeline(transaction=False) as pipe:
                    for key in keys:
                        pipe.expire(PREFIX + key, self.ttl_s)
                    await pipe.execute()
            except Exception as exc:
                logger.warning("session owner records not renewed (Redis: %s)", exc)

    async def close(self) -> None:
        if self._keeper is not None:
            self._keeper.cancel()
        if self._redis is not None:
            await self._redis.aclose()
