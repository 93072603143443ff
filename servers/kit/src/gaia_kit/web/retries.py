"""Retries: which failures are tried again, and how long to wait first (Retry-After, else backoff)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio
import httpx

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.retry import retry_wait
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.errors import connection_failure, where
from gaia_kit.web.response import Answer

logger = logging.getLogger("gaia_kit.web.retries")

IDEMPOTENT = {"GET", "HEAD", "OPTIONS", "PUT", "DELETE"}
RETRIED_ERRORS = (httpx.ConnectError, httpx.ConnectTimeout, httpx.ReadError, httpx.RemoteProtocolError)


async def with_retries(
    attempt: Callable[[], Awaitable[Answer]], method: str, url: httpx.URL, settings: HttpSettings
) -> Answer:
    """`attempt()` until it answers something other than 429 or 5xx, or the attempts run out."""
    for number in range(1, settings.attempts + 1):
        last = number == settings.attempts
        try:
            answer = await attempt()
        except RETRIED_ERRORS as exc:
            # A request that may have reached the server is repeated only if repeating is harmless.
            sent = not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
            if last or (sent and method not in IDEMPOTENT):
                raise connection_failure(url, exc, settings) from None
            await pause(url, number, None, type(exc).__name__, settings)
            continue
        except httpx.TimeoutException as exc:
            raise connection_failure(url, exc, settings) from None
        if (answer.status == 429 or answer.status >= 500) and not last:
            await pause(url, number, answer.headers, f"HTTP {answer.status}", settings)
            continue
        return answer
    raise AssertionError("unreachable")


async def pause(
    url: httpx.URL, attempt: int, headers: httpx.Headers | None, reason: str, settings: HttpSettings
) -> None:
    """Wait before the next attempt: Retry-After when given, else exponential backoff with jitter."""
    wait = retry_wait(attempt, headers, settings.backoff_base_s)
    if wait.asked and wait.seconds > settings.max_retry_after_s:
        raise ToolFailure(
            f"{where(url)} is busy ({reason}) and asked to wait {wait.seconds:.0f} s before retrying, longer "
            f"than GAIA_HTTP_MAX_RETRY_AFTER_S ({settings.max_retry_after_s:g} s); try again later."
        )
    logger.warning("%s: %s, retrying in %.2f s (attempt %d)", where(url), reason, wait.seconds, attempt)
    await anyio.sleep(wait.seconds)
