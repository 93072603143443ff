"""gaia_kit.web.retries: what is tried again, how often, and what is never repeated."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import httpx
import pytest
from gaia_kit import ToolFailure
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.response import Answer
from gaia_kit.web.retries import with_retries

pytestmark = pytest.mark.anyio

URL = httpx.URL("https://api.example.org/v1")
SETTINGS = HttpSettings(retries=2, backoff_base_s=0.001)


def script(*outcomes: int | Exception) -> tuple[Callable[[], Awaitable[Answer]], list[int]]:
    """An attempt that answers each status (or raises each error) in turn; the list counts the calls."""
    calls: list[int] = []

    async def attempt() -> Answer:
        outcome = outcomes[len(calls)]
        calls.append(1)
        if isinstance(outcome, Exception):
            raise outcome
        return Answer(outcome, httpx.Headers({"Retry-After": "0"} if outcome == 429 else {}), b"")

    return attempt, calls


async def test_429_and_5xx_are_tried_again_until_an_answer_comes(caplog):
    caplog.set_level(logging.WARNING)
    attempt, calls = script(429, 503, 200)
    assert (await with_retries(attempt, "GET", URL, SETTINGS)).status == 200
    assert len(calls) == 3 and "api.example.org: HTTP 503, retrying" in caplog.text


async def test_the_last_error_answer_is_returned_when_the_attempts_run_out():
    attempt, calls = script(500, 502, 503, 200)
    assert (await with_retries(attempt, "GET", URL, SETTINGS)).status == 503
    assert len(calls) == 3


async def test_a_client_error_is_not_tried_again():
    attempt, calls = script(404, 200)
    assert (await with_retries(attempt, "GET", URL, SETTINGS)).status == 404
    assert len(calls) == 1


async def test_a_refused_connection_is_retried_even_for_a_post():
    attempt, calls = script(httpx.ConnectError("refused"), 201)
    assert (await with_retries(attempt, "POST", URL, SETTINGS)).status == 201
    assert len(calls) == 2


@pytest.mark.parametrize(
    ("method", "errors", "says", "sent"),
    [
        pytest.param(
            "POST", [httpx.ReadError("reset")], "connection to api.example.org failed", 1, id="post-once"
        ),
        pytest.param("PUT", [httpx.RemoteProtocolError("cut")] * 3, "RemoteProtocolError", 3, id="put-again"),
        pytest.param("GET", [httpx.ReadTimeout("silent")], "GAIA_HTTP_READ_TIMEOUT_S", 1, id="timeout-once"),
    ],
)
async def test_a_broken_connection_is_repeated_only_when_repeating_is_harmless(method, errors, says, sent):
    """A POST that may have arrived is not sent twice; a timeout already waited long enough."""
    attempt, calls = script(*errors, 200)
    with pytest.raises(ToolFailure, match=says):
        await with_retries(attempt, method, URL, SETTINGS)
    assert len(calls) == sent


async def test_a_retry_after_beyond_the_bound_fails_without_waiting():
    async def busy() -> Answer:
        return Answer(429, httpx.Headers({"Retry-After": "600"}), b"")

    with pytest.raises(ToolFailure, match="asked to wait 600 s.*GAIA_HTTP_MAX_RETRY_AFTER_S"):
        await with_retries(busy, "GET", URL, SETTINGS)
