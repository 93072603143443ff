"""ms-playwright behind the real gateway: sessions keep their own browser, and ending one closes it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from gaia_kit_testing.gateway import RunningGateway, launch
from gaia_kit_testing.loopback import LoopbackServer
from gaia_kit_testing.probe import write_registry
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

pytestmark = pytest.mark.slow

REGISTRY = """
[servers.ms-playwright]
command = ["{python}", "-m", "ms_playwright"]
stateful = true
timeout = 120
"""


async def set_cookie(request: Request) -> HTMLResponse:
    response = HTMLResponse(f"<title>Set</title><p>set {request.query_params['v']}</p>")
    response.set_cookie("who", request.query_params["v"])
    return response


async def whoami(request: Request) -> HTMLResponse:
    return HTMLResponse(f"<title>Who</title><p>cookie is {request.cookies.get('who', 'none')}</p>")


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackServer]:
    app = Starlette(routes=[Route("/set", set_cookie), Route("/whoami", whoami)])
    with LoopbackServer(app) as served:
        yield served


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningGateway]:
    tmp: Path = tmp_path_factory.mktemp("browser")
    registry = write_registry(tmp / "servers.toml", REGISTRY)
    running = launch(tmp, "--config", str(registry), env={"GAIA_HTTP_ALLOW": "127.0.0.1"})
    yield running
    running.stop()


def navigate(gateway: RunningGateway, url: str, session: str) -> str:
    result = gateway.call("browser_navigate", {"url": url}, headers={"X-Session-Id": session})
    assert not result["isError"], result
    return result["content"][0]["text"]


def test_sessions_have_their_own_cookies_and_end_with_their_browser(gateway, site) -> None:
    navigate(gateway, site.url("/set?v=alice"), "alice")
    navigate(gateway, site.url("/set?v=bob"), "bob")
    assert "cookie is alice" in navigate(gateway, site.url("/whoami"), "alice")
    assert "cookie is bob" in navigate(gateway, site.url("/whoami"), "bob")
    ended = httpx.delete(gateway.url, headers=gateway.headers(**{"X-Session-Id": "alice"}))
    assert ended.status_code == 200
    assert "cookie is none" in navigate(gateway, site.url("/whoami"), "alice")
    assert "cookie is bob" in navigate(gateway, site.url("/whoami"), "bob")


def test_screenshots_land_in_the_session_workspace(gateway, site) -> None:
    navigate(gateway, site.url("/whoami"), "carol")
    result = gateway.call(
        "browser_take_screenshot", {"filename": "who.png"}, headers={"X-Session-Id": "carol"}
    )
    assert not result["isError"] and [block["type"] for block in result["content"]] == ["text", "image"]
    assert len(list(gateway.workspace_root.glob("*/who.png"))) == 1


def test_a_refused_address_is_an_error_not_a_page(gateway) -> None:
    result = gateway.call(
        "browser_navigate",
        {"url": "http://169.254.169.254/latest/meta-data/"},
        headers={"X-Session-Id": "dave"},
    )
    assert result["isError"] and "cloud metadata" in result["content"][0]["text"]
