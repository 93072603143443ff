"""Sessions in the URL, the one rule that picks a call's session, and invalid arguments as results.

In process: the app over a gateway whose one server is never started (these paths answer before any
server is asked); tests/test_gateway_sessions_e2e.py runs the same through real servers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from gaia_env.app import HttpConfig, create_app
from gaia_env.gateway import Gateway, GatewayConfig
from gaia_env.registry import ServerSpec
from gaia_env.selection import InvalidSessionId, session_key
from gaia_env.session_urls import base_url
from gaia_env.sessions import SessionLimits

pytestmark = pytest.mark.anyio

PEEK = {
    "name": "peek",
    "inputSchema": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "lines": {"type": "integer"}},
        "required": ["name"],
    },
}


def scope(path_params: dict[str, str] | None = None, **headers: str) -> dict[str, Any]:
    raw = [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()]
    return {"type": "http", "headers": raw, "path_params": path_params or {}, "query_string": b""}


@pytest.fixture
def gateway(tmp_path: Path) -> Gateway:
    config = GatewayConfig(
        tmp_path / "workspaces", tmp_path, session_limits=SessionLimits(max_sessions=2, min_free_disk_mb=0)
    )
    gateway = Gateway({"probe": ServerSpec("probe", ("true",))}, config)
    gateway.pools["probe"].tools = [PEEK]
    return gateway


@pytest.fixture
async def client(gateway: Gateway) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(gateway, HttpConfig())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as client:
        yield client


# -- the one rule ----------------------------------------------------------------------------------


def test_the_url_session_comes_first_then_mcp_session_header_and_meta() -> None:
    every = scope({"session_id": "from-url"}, mcp_session_id="abc123", x_session_id="from-header")
    assert session_key(every, {"session_id": "from-meta"}) == "from-url"
    assert session_key(scope(mcp_session_id="abc123", x_session_id="h"), {"session_id": "m"}) == "abc123"
    assert session_key(scope(x_session_id="from-header"), {"session_id": "m"}) == "from-header"
    assert session_key(scope(), {"gaia-env/session-id": "from-meta"}) == "from-meta"
    assert session_key(scope(), None) is None


@pytest.mark.parametrize(
    ("request_scope", "meta", "where"),
    [
        (scope({"session_id": "a.b"}), None, "the URL"),
        (scope(x_session_id="x" * 129), None, "X-Session-Id"),
        (scope(), {"sessionId": "../etc"}, "_meta"),
    ],
)
def test_a_client_chosen_id_out_of_bounds_is_refused(
    request_scope: dict, meta: dict | None, where: str
) -> None:
    with pytest.raises(InvalidSessionId, match=f"Invalid session id .* in .*{where}.*POST /sessions"):
        session_key(request_scope, meta)


def test_base_url_follows_the_host_and_a_proxys_forwarded_headers() -> None:
    plain = {**scope(host="gpu-node-17:8080"), "scheme": "http", "server": ("10.0.0.5", 8080)}
    assert base_url(plain) == "http://gpu-node-17:8080"
    forwarded = {**scope(host="backend:8080", x_forwarded_proto="https", x_forwarded_host="gw.example, x")}
    assert base_url({**forwarded, "scheme": "http"}) == "https://gw.example"
    hostile = {**scope(host="h:1", x_forwarded_host="evil/path?", x_forwarded_proto="javascript")}
    assert base_url({**hostile, "scheme": "http"}) == "http://h:1"
    assert base_url({**scope(), "scheme": "http", "server": ("10.0.0.5", 8080)}) == "http://10.0.0.5:8080"


# -- POST and DELETE /sessions ---------------------------------------------------------------------


async def test_post_sessions_mints_an_unguessable_id_and_its_urls(
    client: httpx.AsyncClient, gateway: Gateway
) -> None:
    first = await client.post("/sessions")
    second = await client.post("/sessions")
    assert first.status_code == 201, first.text
    body = first.json()
    session_id = body["session_id"]
    assert len(session_id) >= 32 and session_id != second.json()["session_id"]
    assert body["url"] == f"http://127.0.0.1:8080/sessions/{session_id}/mcp" == first.headers["location"]
    assert (
        body["server_url_template"]
        == f"http://127.0.0.1:8080/sessions/{session_id}/servers/{{server_id}}/mcp"
    )
    assert body["idle_ttl_s"] == gateway.sessions.idle_ttl
    assert not gateway.sessions._sessions  # nothing is kept until a call uses it

    async with gateway.sessions.use(session_id, "probe") as used:
        assert used.workspace.is_dir()
    assert (await client.delete(f"/sessions/{session_id}")).status_code == 204
    assert not used.workspace.exists()
    gone = await client.delete(f"/sessions/{session_id}")
    assert gone.status_code == 404
    assert gone.json()["error"]["message"].startswith(f"Session not found: {session_id}")


async def test_post_sessions_is_refused_at_the_session_limit(
    client: httpx.AsyncClient, gateway: Gateway
) -> None:
    for name in ("one", "two"):
        async with gateway.sessions.use(name, "probe"):
            pass
    refused = await client.post("/sessions")
    assert refused.status_code == 503
    assert "maximum of 2 sessions" in refused.json()["error"]["message"]


async def test_bad_session_ids_are_refused_before_anything_is_kept(
    client: httpx.AsyncClient, gateway: Gateway
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for path, headers in [
        ("/sessions/" + "x" * 129 + "/mcp", {}),
        ("/sessions/a%20b/servers/probe/mcp", {}),
        ("/mcp", {"X-Session-Id": "no spaces"}),
    ]:
        reply = await client.post(path, json=body, headers=headers)
        assert reply.status_code == 400, (path, reply.text)
        assert reply.json()["error"]["code"] == -32600
        assert "Invalid session id" in reply.json()["error"]["message"]
    assert (await client.delete("/sessions/a.b")).status_code == 400
    assert len(gateway.sessions) == 0 and not gateway.sessions._sessions


async def test_delete_on_the_mcp_url_does_not_end_the_urls_session(client: httpx.AsyncClient) -> None:
    reply = await client.delete("/sessions/kept/mcp")
    assert reply.status_code == 400
    assert "DELETE /sessions/<id> ends this session" in reply.json()["error"]["message"]


async def test_session_routes_need_the_token(gateway: Gateway) -> None:
    app = create_app(gateway, HttpConfig(auth_token="secret"))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://h") as client:
        assert (await client.post("/sessions")).status_code == 401
        assert (await client.delete("/sessions/abc")).status_code == 401
        authorized = await client.post("/sessions", headers={"Authorization": "Bearer secret"})
        assert authorized.status_code == 201


# -- invalid arguments are results -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "sentence"),
    [
        ({"name": 3}, "Invalid arguments for peek: 'name': 3 is not of type 'string'."),
        ({"lines": 2}, "Invalid arguments for peek: 'name' is a required property."),
        (
            {"name": "a", "nmae": "b"},
            "Invalid arguments for peek: Additional properties are not allowed ('nmae' was unexpected); "
            "its arguments are: name, lines.",
        ),
    ],
)
async def test_invalid_arguments_are_an_error_result_the_model_can_read(
    client: httpx.AsyncClient, gateway: Gateway, arguments: dict, sentence: str
) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "peek", "arguments": arguments},
    }
    reply = await client.post("/sessions/s1/mcp", json=body)
    assert reply.status_code == 200
    assert reply.json()["result"] == {"content": [{"type": "text", "text": sentence}], "isError": True}
    assert len(gateway.sessions) == 0  # refused before a workspace was made


async def test_an_unknown_tool_stays_a_protocol_error(client: httpx.AsyncClient) -> None:
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}
    reply = (await client.post("/sessions/s1/mcp", json=body)).json()
    assert reply["error"]["code"] == -32602 and "Unknown tool: nope" in reply["error"]["message"]
