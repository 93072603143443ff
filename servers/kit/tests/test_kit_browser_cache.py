"""gaia_kit.web.browser_cache: a browser's requests recorded, replayed and refused by the kit's client,
against a loopback site, whichever tool is running."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from gaia_kit.core.calls import Call, enter, leave
from gaia_kit.core.hints import hints
from gaia_kit.core.settings import forget_settings
from gaia_kit.web.browser_cache import REFUSED_HEADER, page_answer, through_cache
from gaia_kit.web.http import forget_shared_http
from gaia_kit_testing.loopback import LoopbackServer
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, RedirectResponse
from starlette.routing import Route

pytestmark = pytest.mark.anyio

SITE = Starlette(
    routes=[
        Route("/page", lambda r: HTMLResponse(f"<p>seen by {r.headers.get('x-from', 'nobody')}</p>")),
        Route("/moved", lambda r: RedirectResponse("/page")),
    ]
)
# A tool that is not idempotent: its own requests are never recorded or replayed.
CLICK = Call(
    "browser_use", hints("Click", read_only=False, open_world=True, destructive=True, idempotent=False)
)


@pytest.fixture
def site(kit_env: SimpleNamespace, fresh_http: None, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    with LoopbackServer(SITE) as server:
        yield server


def cache_mode(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", mode)
    forget_settings()
    forget_shared_http()


def test_through_cache_always_in_replay_and_in_read_write_when_opted_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for mode, opted_in, expected in [
        ("replay", False, True),
        ("read-write", True, True),
        ("read-write", False, False),
        ("off", True, False),
    ]:
        monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", mode)
        forget_settings()
        assert through_cache(opted_in) is expected, (mode, opted_in)


async def test_a_page_recorded_under_any_tool_replays_and_an_unknown_one_is_refused(
    site: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_mode(monkeypatch, "read-write")
    token = enter(CLICK)
    try:
        recorded = await page_answer("GET", site.url("/page"), {"X-From": "chromium"}, None, navigation=True)
    finally:
        leave(token)
    assert (recorded.status, recorded.body, recorded.refusal) == (200, b"<p>seen by chromium</p>", None)

    site.stop()
    cache_mode(monkeypatch, "replay")
    token = enter(CLICK)
    try:
        replayed = await page_answer("GET", site.url("/page"), {"X-From": "chromium"}, None, navigation=True)
        missing = await page_answer("GET", site.url("/never"), {}, None, navigation=True)
    finally:
        leave(token)
    assert (replayed.status, replayed.body) == (200, recorded.body)
    assert missing.status == 403 and missing.refusal is not None
    assert (
        missing.refusal.startswith("No recorded answer for GET") and missing.body == missing.refusal.encode()
    )
    assert missing.headers[REFUSED_HEADER] == missing.refusal


async def test_a_redirected_navigation_sends_the_browser_where_it_led(
    site: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_mode(monkeypatch, "read-write")
    moved = await page_answer("GET", site.url("/moved"), {}, None, navigation=True)
    assert (moved.status, moved.headers) == (302, {"Location": site.url("/page")})
    # A subresource gets the final answer itself: the browser does not move for it.
    image = await page_answer("GET", site.url("/moved"), {}, None, navigation=False)
    assert (image.status, image.body) == (200, b"<p>seen by nobody</p>")


async def test_the_ssrf_guard_refuses_what_it_does_not_allow(
    site: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "")
    cache_mode(monkeypatch, "read-write")
    refused = await page_answer("GET", site.url("/page"), {}, None, navigation=True)
    assert refused.status == 403 and "GAIA_HTTP_ALLOW" in (refused.refusal or ""), refused


async def test_a_benchmark_copy_is_refused_even_when_replaying(
    site: LoopbackServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_mode(monkeypatch, "replay")
    copy = await page_answer(
        "GET", "https://huggingface.co/datasets/gaia-benchmark/GAIA", {}, None, navigation=True
    )
    assert copy.status == 403 and "GAIA_GUARD_MIRRORS" in (copy.refusal or ""), copy
