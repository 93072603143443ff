"""The /mcp front in process (ASGI over httpx, the real probe server behind it): which path answers a
request, and that every malformed request gets a JSON-RPC error, never a 500."""

from __future__ import annotations

import json

import httpx
import pytest
from gaia_env.app import HttpConfig

pytestmark = pytest.mark.anyio

JSON = {"Content-Type": "application/json", "Accept": "application/json"}


def call(tool: str, request_id: int = 1, **arguments: object) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


def text(reply: httpx.Response) -> str:
    return reply.json()["result"]["content"][0]["text"]


async def test_a_bare_post_is_answered_as_plain_json_without_a_session(live_gateway) -> None:
    live = await live_gateway()
    reply = await live.client.post("/mcp", json=call("echo", text="hi"), headers={"Accept": "*/*"})
    assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
    assert text(reply) == "hi" and "mcp-session-id" not in reply.headers
    plain = {"Content-Type": "application/json"}
    no_accept = await live.client.post("/mcp", content=json.dumps(call("echo", text="x")), headers=plain)
    assert no_accept.status_code == 200 and text(no_accept) == "x"  # no Accept at all accepts anything


async def test_initialize_opens_a_session_its_calls_use_and_delete_ends_it(
    live_gateway, mcp_initialize
) -> None:
    live = await live_gateway()
    session = await mcp_initialize(live.client)
    headers = {**JSON, "Mcp-Session-Id": session}
    await live.client.post("/mcp", json=call("put", name="n.txt", text="kept"), headers=headers)
    assert text(await live.client.post("/mcp", json=call("peek", 2, name="n.txt"), headers=headers)) == "kept"
    assert live.gateway.sessions.holds(session)
    ended = await live.client.delete("/mcp", headers=headers)
    assert ended.status_code == 200
    after = await live.client.post("/mcp", json=call("echo", 3, text="x"), headers=headers)
    assert after.status_code == 404  # the protocol's answer for an ended session


async def test_a_client_named_session_keeps_its_workspace_until_deleted(live_gateway) -> None:
    live = await live_gateway()
    alice = {**JSON, "X-Session-Id": "alice"}
    await live.client.post("/mcp", json=call("put", name="a.txt", text="mine"), headers=alice)
    assert text(await live.client.post("/mcp", json=call("peek", name="a.txt"), headers=alice)) == "mine"
    elsewhere = await live.client.post("/mcp", json=call("peek", name="a.txt"), headers=JSON)
    assert elsewhere.json()["result"]["isError"]  # no key: a fresh workspace without alice's file
    assert (await live.client.delete("/mcp", headers=alice)).json() == {"ended": True}
    assert (await live.client.delete("/mcp", headers=alice)).json() == {"ended": False}


async def test_get_without_a_session_goes_to_the_sdk_which_refuses_it(live_gateway) -> None:
    live = await live_gateway()
    reply = await live.client.get("/mcp", headers={"Accept": "text/event-stream"})
    assert reply.status_code == 400 and reply.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "status", "code", "words"),
    [
        (b"{not json", 400, -32700, "Parse error"),
        (
            b"[" + json.dumps(call("echo", text="x")).encode() + b"]",
            400,
            -32600,
            "Batch requests are not supported",
        ),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', 400, -32600, '"jsonrpc": "2.0"'),
        (b"[" * 300 + b"]" * 300, 400, -32700, "nests more than"),
    ],
    ids=["not-json", "batch", "wrong-version", "too-deep"],
)
async def test_malformed_bodies_get_a_jsonrpc_error(
    live_gateway, body: bytes, status: int, code: int, words: str
) -> None:
    live = await live_gateway()
    reply = await live.client.post("/mcp", content=body, headers=JSON)
    assert reply.status_code == status, reply.text
    assert reply.json()["error"]["code"] == code and words in reply.json()["error"]["message"]


async def test_a_body_over_the_limit_is_refused_before_it_is_read_whole(live_gateway) -> None:
    live = await live_gateway(http=HttpConfig(max_body_bytes=1000))
    reply = await live.client.post("/mcp", json=call("echo", text="x" * 2000), headers=JSON)
    assert reply.status_code == 413 and "over 1000 bytes" in reply.json()["error"]["message"]


async def test_host_checks_refuse_a_foreign_host_on_loopback_and_admit_a_named_cluster_host(
    live_gateway,
) -> None:
    live = await live_gateway(http=HttpConfig(allowed_hosts=["gpu-node-17"]))
    cluster = {**JSON, "Host": "gpu-node-17:8080"}
    named = await live.client.post("/mcp", json=call("echo", text="ok"), headers=cluster)
    foreign = await live.client.post(
        "/mcp", json=call("echo", text="no"), headers={**JSON, "Host": "evil.example:8080"}
    )
    assert named.status_code == 200 and text(named) == "ok"
    assert foreign.status_code == 421


async def test_a_call_with_a_progress_token_streams_its_progress_before_the_result(live_gateway) -> None:
    live = await live_gateway()
    body = call("count_up", steps=3, pause=0.01)
    body["params"]["_meta"] = {"progressToken": "p1"}
    reply = await live.client.post(
        "/mcp", json=body, headers={**JSON, "Accept": "application/json, text/event-stream"}
    )
    assert reply.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:")]
    assert [e.get("method") for e in events[:-1]] == ["notifications/progress"] * 3
    assert "result" in events[-1]
