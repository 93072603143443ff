"""How long to wait before trying again, for every client the kit has (the HTTP client, the model client).

A server's Retry-After comes first (in seconds, or as an HTTP date); without one, exponential backoff
with jitter, so that many rollouts retrying at once spread out instead of arriving together.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class RetryWait:
    seconds: float
    asked: bool
    """True when the server asked for this wait (Retry-After), False for the client's own backoff."""


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks to wait: Retry-After in seconds or as an HTTP date; None without one."""
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def backoff_s(attempt: int, base_s: float, cap_s: float = float("inf")) -> float:
    """Attempt n (from 1) waits base * 2^(n-1), at most `cap_s`, times a jitter of 0.5 to 1."""
    return min(cap_s, base_s * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)


def retry_wait(
    attempt: int, headers: Mapping[str, str] | None, base_s: float, cap_s: float = float("inf")
) -> RetryWait:
    """The wait before attempt `attempt + 1`: what the answer's headers ask for, else backoff."""
    asked = retry_after_s(headers) if headers is not None else None
    if asked is not None:
        return RetryWait(asked, asked=True)
    return RetryWait(backoff_s(attempt, base_s, cap_s), asked=False)
