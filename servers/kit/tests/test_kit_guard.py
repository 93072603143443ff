"""gaia_kit.web.guard: which hosts a browser may reach, and the sentence when it may not."""

from __future__ import annotations

import pytest
from gaia_kit import ToolFailure
from gaia_kit.core.settings import forget_settings
from gaia_kit.web.guard import UrlGuard

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def no_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GAIA_HTTP_ALLOW", raising=False)


async def test_loopback_private_and_metadata_hosts_are_refused_with_the_variable_that_allows_them():
    guard = UrlGuard()
    for url in (
        "http://127.0.0.1:8080/",
        "http://10.0.0.5/",
        "http://169.254.169.254/latest/",
        "ws://[::1]/",
    ):
        why = await guard.refusal(url)
        assert why is not None and why.startswith("Refused to fetch from"), url
        assert "GAIA_HTTP_ALLOW" in why and "_ALLOW" not in why.replace("GAIA_HTTP_ALLOW", ""), why


async def test_gaia_http_allow_and_the_servers_own_list_let_a_host_through(monkeypatch: pytest.MonkeyPatch):
    assert await UrlGuard(allow="127.0.0.1").refusal("http://127.0.0.1:8080/") is None
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "10.0.0.0/8")
    forget_settings()
    guard = UrlGuard()  # takes GAIA_HTTP_ALLOW when made
    assert await guard.refusal("https://10.1.2.3/") is None
    assert [str(a) for a in await guard.addresses("10.1.2.3", 443)] == ["10.1.2.3"]


async def test_a_prefix_names_the_servers_variables_in_refusals():
    guard = UrlGuard(block="blocked.example,192.0.2.0/24", prefix="PLAYWRIGHT")
    assert (
        await guard.refusal("http://blocked.example/")
        == "Refused to load blocked.example: PLAYWRIGHT_BLOCK lists it."
    )
    assert "GAIA_HTTP_ALLOW or PLAYWRIGHT_ALLOW" in (await guard.refusal("http://127.0.0.1/") or "")
    with pytest.raises(ToolFailure, match="PLAYWRIGHT_BLOCK lists 192.0.2.7"):
        await UrlGuard(allow="192.0.2.0/24", block="192.0.2.0/24", prefix="PLAYWRIGHT").addresses(
            "192.0.2.7", 80
        )


async def test_schemes_local_pages_pass_and_everything_but_the_web_is_refused():
    guard = UrlGuard()
    for url in ("about:blank", "data:text/html,<p>hi</p>", "blob:null/1", "javascript:void(0)"):
        assert await guard.refusal(url) is None, url
    assert "only http and https" in (await guard.refusal("file:///etc/passwd") or "")
    assert "no host" in (await guard.refusal("http:///path") or "")


async def test_the_last_verdict_explains_a_refusal_the_browser_reported_vaguely():
    guard = UrlGuard()
    assert guard.known_refusal("http://127.0.0.1:9/x") is None  # not asked yet
    with pytest.raises(ToolFailure):
        await guard.addresses("127.0.0.1", 9)
    assert "GAIA_HTTP_ALLOW" in (guard.known_refusal("http://127.0.0.1:9/other") or "")
    assert guard.known_refusal("http://127.0.0.1/") is None  # another port: not asked yet
