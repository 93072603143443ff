"""Per-host slots: how many requests run at once to one host, and how far apart they start."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from gaia_kit.web.config import HttpSettings, host_numbers
from gaia_kit.web.ssrf import host_matches


class HostSlots:
    """GAIA_HTTP_PER_HOST_LIMIT, GAIA_HTTP_HOST_LIMITS and GAIA_HTTP_HOST_INTERVALS for one client."""

    def __init__(self, settings: HttpSettings):
        self._default = settings.per_host_limit
        self._limits = host_numbers(settings.host_limits, "GAIA_HTTP_HOST_LIMITS")
        self._intervals = host_numbers(settings.host_intervals, "GAIA_HTTP_HOST_INTERVALS")
        self._limiters: dict[str, anyio.CapacityLimiter] = {}
        self._next_start: dict[str, float] = {}

    @asynccontextmanager
    async def hold(self, host: str) -> AsyncIterator[None]:
        """Hold one of the host's slots, after the pause the host asks between requests."""
        key = self.key(host)
        limiter = self._limiters.get(key)
        if limiter is None:
            limit = self._limits.get(key, self._default)
            limiter = self._limiters[key] = anyio.CapacityLimiter(max(1, int(limit)))
        async with limiter:
            interval = next((v for k, v in self._intervals.items() if host_matches(host, k)), 0.0)
            if interval:
                now = time.monotonic()
                start = max(now, self._next_start.get(key, 0.0))
                self._next_start[key] = start + interval
                await anyio.sleep(start - now)
            yield

    def key(self, host: str) -> str:
        """The name whose slots `host` uses: the pattern it matches (subdomains share one), else itself."""
        host = host.lower().rstrip(".")
        return next((pattern for pattern in self._limits if host_matches(host, pattern)), host)
