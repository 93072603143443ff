"""Which gateway an episode talks to, and at which URL (`gaia_train.episode.gateways`)."""

from __future__ import annotations

import socket
import uuid

import pytest
from gaia_train.episode import gateways
from gaia_train.episode.gateways import Gateway, endpoints, mark_down, mark_up, ranked
from gaia_train.episode.session import McpSettings

pytestmark = pytest.mark.anyio


def test_the_session_url_keeps_the_path_prefix_and_the_server_form() -> None:
    assert Gateway("http://gw:8080/mcp").session_url("s1") == "http://gw:8080/sessions/s1/mcp"
    assert (
        Gateway("https://h/gaia/mcp?servers=a,b").session_url("s1")
        == "https://h/gaia/sessions/s1/mcp?servers=a,b"
    )
    assert (
        Gateway("http://gw/servers/excel/mcp").session_url("s1") == "http://gw/sessions/s1/servers/excel/mcp"
    )
    assert Gateway("http://gw/gaia/mcp?servers=a").session_resource("s1") == "http://gw/gaia/sessions/s1"
    assert Gateway("http://gw/gaia/mcp").health_url() == "http://gw/gaia/health"
    # an endpoint without the `.../mcp` form is used as it is (X-Session-Id alone)
    assert Gateway("http://gw/rpc").session_url("s1") == "http://gw/rpc"
    assert Gateway("http://gw/rpc").session_resource("s1") is None


def test_several_gateways_are_a_comma_list_and_each_is_checked() -> None:
    assert endpoints(" http://a/mcp , http://b/mcp,") == ("http://a/mcp", "http://b/mcp")
    assert McpSettings(url="http://a/mcp,http://b/mcp").url == "http://a/mcp,http://b/mcp"
    with pytest.raises(ValueError, match="must start with http"):
        McpSettings(url="http://a/mcp,gw-b:8080/mcp")
    with pytest.raises(ValueError, match="is empty"):
        endpoints(" , ")


def test_each_session_keeps_its_gateway_and_a_down_one_is_skipped() -> None:
    pool = [Gateway(f"http://gw-{i}:8080/mcp") for i in range(4)]
    sessions = [uuid.uuid4().hex for _ in range(400)]
    first = {sid: ranked(pool, sid)[0] for sid in sessions}
    assert first == {sid: ranked(list(reversed(pool)), sid)[0] for sid in sessions}  # order-free, stable
    assert min(list(first.values()).count(g) for g in pool) > 50  # spread over all four
    down = pool[0]
    mark_down(down)
    try:
        moved = {sid for sid in sessions if ranked(pool, sid)[0] != first[sid]}
        # only the dead gateway's sessions move, each to its own second choice
        assert moved == {sid for sid in sessions if first[sid] == down}
        assert all(ranked(pool, sid)[-1] == down for sid in moved)
    finally:
        mark_up(down)


async def test_a_name_with_several_addresses_is_one_gateway_per_address(monkeypatch) -> None:
    # What a headless Service's name resolves to; this machine's resolver has no such name.
    async def getaddrinfo(host, port, **kwargs):
        assert host == "gaia-gw.train.svc"
        return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("fd00::7", port, 0, 0))] + [
            (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))
            for address in ("10.0.0.9", "10.0.0.7")
        ]

    monkeypatch.setattr(gateways.anyio, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(gateways, "_resolved", {})
    found = await gateways.gateways("http://gaia-gw.train.svc:8080/mcp,http://10.1.1.1/mcp")
    assert found == [
        Gateway("http://10.0.0.7:8080/mcp", host="gaia-gw.train.svc:8080"),
        Gateway("http://10.0.0.9:8080/mcp", host="gaia-gw.train.svc:8080"),
        Gateway("http://[fd00::7]:8080/mcp", host="gaia-gw.train.svc:8080"),
        Gateway("http://10.1.1.1/mcp"),  # an address is one gateway, never resolved
    ]
    # https names stay one endpoint: the certificate names the host, not its addresses
    assert await gateways.gateways("https://gaia-gw.train.svc/mcp") == [
        Gateway("https://gaia-gw.train.svc/mcp")
    ]
