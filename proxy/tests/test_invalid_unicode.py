"""Text that is not valid Unicode (a lone surrogate such as "\\ud800") is answered at once, on
every front, before a workspace is made or a server is asked: it cannot be encoded on the way to
a server, and once held a server slot until the call's deadline."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

pytestmark = pytest.mark.anyio

LONE = "a\ud800b"
JSON_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


async def post(client: httpx.AsyncClient, message: dict[str, Any], **headers: str) -> httpx.Response:
    # httpx encodes `json=` as UTF-8, which a lone surrogate cannot be; the escape is what clients send.
    return await client.post("/mcp", content=json.dumps(message), headers={**JSON_HEADERS, **headers})


def call(tool: str, arguments: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def test_a_lone_surrogate_in_arguments_is_an_error_result_at_once(live_gateway) -> None:
    live = await live_gateway(timeout=30)  # today's deadline: the answer must not wait for it
    reply = await post(live.client, call("echo", {"text": LONE}), **{"X-Session-Id": "s1"})
    assert reply.status_code == 200
    assert reply.json() == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "content": [
                {
                    "type": "text",
                    "text": "Invalid arguments for echo: 'text' holds a lone surrogate (a \\ud800-\\udfff "
                    "escape without its pair), which is not valid Unicode; send the text as valid UTF-8.",
                }
            ],
            "isError": True,
        },
    }
    assert len(live.gateway.sessions) == 0  # refused before a workspace was made
    nested = await post(live.client, call("echo", {"text": "ok", "extra": [{"k\udfff": 1}]}))
    assert "'extra.0.k\\udfff' holds a lone surrogate" in nested.json()["result"]["content"][0]["text"]
    paired = await post(live.client, call("echo", {"text": "\ud83d\ude00"}))  # one escaped emoji
    assert paired.json()["result"]["content"][0]["text"] == "😀"


async def test_the_same_answer_inside_an_mcp_session(live_gateway, mcp_initialize) -> None:
    live = await live_gateway(timeout=30)
    session = await mcp_initialize(live.client)
    reply = await post(live.client, call("echo", {"text": LONE}, 5), **{"Mcp-Session-Id": session})
    assert reply.status_code == 200, reply.text
    result = reply.json()["result"]
    assert result["isError"] and "'text' holds a lone surrogate" in result["content"][0]["text"]
    fine = await post(live.client, call("echo", {"text": "fine"}, 6), **{"Mcp-Session-Id": session})
    assert "fine" in fine.text


async def test_a_lone_surrogate_elsewhere_is_invalid_params(live_gateway) -> None:
    live = await live_gateway()
    handshake = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": LONE, "version": "1"},
        },
    }
    reply = await post(live.client, handshake)
    assert reply.status_code == 200
    error = reply.json()["error"]
    assert error["code"] == -32602
    assert error["message"].startswith("Invalid params: 'params.clientInfo.name' holds a lone surrogate")
    assert reply.json()["id"] == 3
    unknown = await post(live.client, call("\udc00", {}, 4))
    assert unknown.json()["error"]["code"] == -32602 and "'params.name'" in unknown.json()["error"]["message"]
