"""Record and replay: which requests the cache may answer, under which key, and what is kept.

A request is recorded or replayed only when the calling tool's annotations allow it
(gaia_kit.core.calls.replay_allowed: read-only and idempotent tools, and idempotent tools' GETs).
The store itself is gaia_kit.web.cache.
"""

from __future__ import annotations

import json as jsonlib
import sqlite3
import time
from collections.abc import Callable
from functools import cached_property
from typing import Any, TypeVar

import httpx

from gaia_kit.core.blocking import run_blocking
from gaia_kit.core.calls import current_call, replay_allowed
from gaia_kit.core.errors import ToolFailure
from gaia_kit.web.cache import (
    SECRET_PARAMS,
    Cache,
    CachedResponse,
    CacheError,
    masked_url,
    open_cache,
    request_key,
)
from gaia_kit.web.config import CacheMode, HttpSettings
from gaia_kit.web.errors import where
from gaia_kit.web.response import HttpResponse

T = TypeVar("T")


def cache_mode(settings: HttpSettings, method: str, cache: bool | None) -> CacheMode:
    """How one request uses the cache: `cache` None means GETs only, as callers ask by default."""
    if settings.cache_mode != "off" and not replay_allowed(method):
        if settings.cache_mode == "replay":
            tool = current_call().tool
            raise ToolFailure(
                f"{tool} is not marked idempotent (or sends {method} while changing something), so its "
                "requests are never recorded or replayed, and GAIA_HTTP_CACHE_MODE=replay lets no request "
                "reach the network; run it with GAIA_HTTP_CACHE_MODE=read-write or off."
            )
        return "off"
    # Replay answers every call from the cache: nothing may reach the network in an offline rerun.
    if settings.cache_mode == "replay":
        return "replay"
    wanted = cache if cache is not None else method == "GET"
    return settings.cache_mode if wanted else "off"


def storable(status: int) -> bool:
    """Answers worth replaying: not a server failure, rate limit or a refusal that depends on keys."""
    return status < 400 or (status < 500 and status not in (401, 403, 407, 408, 429))


def cache_key(request: httpx.Request, json: Any) -> str:
    body, secrets = request.content, []
    if isinstance(json, dict):  # some APIs take their key in the JSON body: it enters the key as a digest
        kept = {k: v for k, v in json.items() if k.lower() not in SECRET_PARAMS}
        secrets = [(k, jsonlib.dumps(v)) for k, v in json.items() if k.lower() in SECRET_PARAMS]
        body = jsonlib.dumps(kept, sort_keys=True).encode()
    return request_key(request.method, request.url, request.headers, body, secrets)


class Recorder:
    """One client's use of the cache: look answers up, record new ones; errors name the settings."""

    def __init__(self, settings: HttpSettings):
        self.settings = settings

    @cached_property
    def cache(self) -> Cache:
        return open_cache(self.settings.cache_url, self.settings.cache_path)

    @property
    def location(self) -> str:
        """Where the cache lives, as messages show it (a Redis URL without its password)."""
        url = self.settings.cache_url
        return masked_url(httpx.URL(url)) if url else str(self.settings.cache_path)

    async def lookup(self, request: httpx.Request, mode: CacheMode, key: str) -> HttpResponse | None:
        """The cached answer to `request`, None to fetch it, or in replay mode a miss explained."""
        if mode == "off":
            return None
        ttl = 0 if mode == "replay" else self.settings.cache_ttl_s
        hit = await self._use(lambda cache: cache.get(key, ttl))
        if hit is not None:
            return HttpResponse(hit.status, hit.headers, hit.content, hit.final_url, from_cache=True)
        if mode == "replay":
            raise ToolFailure(
                f"No recorded answer for {request.method} {where(request.url)}{request.url.path} in the "
                f"HTTP cache {self.location}, and GAIA_HTTP_CACHE_MODE=replay answers only "
                f"from the cache; record it first with GAIA_HTTP_CACHE_MODE=read-write."
            )
        return None

    async def record(self, request: httpx.Request, key: str, response: HttpResponse, body: bytes) -> None:
        if not storable(response.status):
            return
        entry = CachedResponse(
            request.method, masked_url(request.url), response.status, response.headers,
            body, response.url, time.time(),
        )  # fmt: skip
        await self._use(lambda cache: cache.put(key, entry))

    async def _use(self, use: Callable[[Cache], T]) -> T:
        """Run `use(cache)` in a worker thread (opening the cache is I/O too)."""
        try:
            return await run_blocking(lambda: use(self.cache))
        except CacheError as exc:
            raise ToolFailure(
                f"The HTTP cache cannot be used ({exc}); check GAIA_HTTP_CACHE_URL, or set GAIA_HTTP_CACHE_MODE=off."
            ) from None
        except (sqlite3.Error, OSError) as exc:
            raise ToolFailure(
                f"The HTTP cache {self.settings.cache_path} cannot be used ({exc}); set GAIA_HTTP_CACHE_PATH "
                f"to a writable file, or GAIA_HTTP_CACHE_MODE=off."
            ) from None
