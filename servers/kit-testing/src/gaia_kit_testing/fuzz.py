"""A property-based fuzzer for the gateway's /mcp, on both fronts: bare JSON-RPC POSTs and MCP sessions.

Shared by tests/test_fuzz_gateway.py (bounded, part of `make test`) and benchmarks/fuzz_gateway.py
(a longer run). The gateway runs every shipped server from a copy of the registry whose per-call
timeouts are lowered to FUZZ_TIMEOUT_S, so a call that hangs costs seconds, not minutes.

What is sent: arbitrary JSON of any shape and depth, JSON-RPC messages with wrong parts, random and
truncated bytes, invalid UTF-8, bodies over the size limit, bodies that trickle in or stall, and for
every registered tool arguments generated from its input schema, then mutated (a wrong type, a huge
string, a missing required field, an extra field, deep nesting, NUL and lone surrogates).

What must hold for every answer: never a 5xx; an answer before the call's deadline; the body is one
well-formed JSON-RPC response (an error with an integer code and a short message, or a result; a
tools/call result has content, and an error result says something and holds no stack trace), or
an empty 202 for a notification.
"""

from __future__ import annotations

import json
import re
import socket
import string
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from gaia_contract import CLIENT_SESSION_HEADER, MCP_SESSION_HEADER
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from .gateway import RunningGateway, launch

FUZZ_TIMEOUT_S = 20
"""The per-call timeout of every server in the fuzzed gateway."""
DEADLINE_SLACK_S = 15
"""How much later than the server's timeout an answer may come (queueing, the gateway's own work)."""
SESSION_IDS = [f"fuzz-{n}" for n in range(4)]
MAX_BODY_MB = 2
ACCEPT = "application/json, text/event-stream"
MAX_ERROR_CHARS = 5_000
"""An error message says what is wrong in a sentence or two; it never echoes a huge input back."""

FUZZ_ENV = {
    # Work inside tools is bounded well within FUZZ_TIMEOUT_S.
    "GAIA_SANDBOX_WALL_S": "5",
    "GAIA_SANDBOX_CPU_S": "5",
    "GAIA_HTTP_TOTAL_TIMEOUT_S": "5",
    "GAIA_HTTP_CACHE_MODE": "off",
    "GAIA_TERMINAL_MAX_TIMEOUT_S": "5",
    "GAIA_WORKSPACE_MAX_MB": "64",
    "GAIA_WORKSPACE_MAX_FILES": "2000",
    "GAIA_MAX_SESSIONS": "64",
    "GAIA_MIN_FREE_DISK_MB": "0",
}


def start_fuzz_gateway(tmp: Path, shipped: Path, env: dict[str, str] | None = None) -> RunningGateway:
    """Every enabled server of the `shipped` registry (gaia_env.registry.DEFAULT_REGISTRY), each with
    the fuzzer's short timeout."""
    registry = tomllib.loads(shipped.read_text())
    tables = {"defaults": {**registry.get("defaults", {}), "timeout": FUZZ_TIMEOUT_S}}
    for sid, spec in registry["servers"].items():
        tables[f"servers.{sid}"] = {**spec, "timeout": FUZZ_TIMEOUT_S}
    config = tmp / "servers.toml"
    config.write_text(
        "".join(
            f"[{name}]\n" + "".join(f"{k} = {_toml(v)}\n" for k, v in t.items()) for name, t in tables.items()
        )
    )
    args = ["--config", str(config), "--max-body-mb", str(MAX_BODY_MB)]
    return launch(tmp, *args, env={**FUZZ_ENV, **(env or {})})


def _toml(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value)


# --- what is sent --------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=25,
)
odd_strings = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "a\x00b",
        "\ud800",
        "\udfff x",
        "../../etc/passwd",
        "/etc/shadow",
        "~",
        "%s%n",
        "💥" * 50,
    ]
)
methods = st.sampled_from(
    [
        "tools/list",
        "tools/call",
        "ping",
        "initialize",
        "notifications/initialized",
        "resources/list",
        "prompts/get",
        "",
        "tools/",
    ]
) | st.text(max_size=20)
ids = st.integers(-(2**63), 2**63) | st.text(max_size=10) | json_values


@st.composite
def jsonrpc_shapes(draw: st.DrawFn) -> dict[str, Any]:
    """JSON-RPC-like objects with any part wrong or missing."""
    message: dict[str, Any] = {}
    if draw(st.booleans()):
        message["jsonrpc"] = draw(st.sampled_from(["2.0", "1.0", "2", 2.0, None]))
    if draw(st.integers(0, 4)):
        message["id"] = draw(ids)
    if draw(st.integers(0, 6)):
        message["method"] = draw(methods | json_values)
    if draw(st.booleans()):
        message["params"] = draw(json_values)
    if draw(st.integers(0, 5)) == 0:
        message[draw(st.sampled_from(["result", "error", "_meta"]))] = draw(json_values)
    return message


def nested(depth: int, opener: str = "[") -> bytes:
    closer = {"[": "]", "{": "}"}[opener]
    inner = '{"a":' * depth + "1" + "}" * depth if opener == "{" else opener * depth + closer * depth
    return b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":' + inner.encode() + b"}"


INVALID_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80"]
BODY_KINDS = ["bytes", "json", "jsonrpc", "deep", "truncated", "utf8", "batch"]


@st.composite
def raw_bodies(draw: st.DrawFn) -> bytes:
    """Bytes for one POST: random, JSON of any shape, JSON-RPC shapes, deep, truncated, not UTF-8."""
    kind = draw(st.sampled_from(BODY_KINDS))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    if kind == "json":
        return json.dumps(draw(json_values)).encode()
    if kind == "jsonrpc":
        return json.dumps(draw(jsonrpc_shapes())).encode()
    if kind == "deep":
        depth = draw(st.sampled_from([199, 201, 999, 1001, 5000, 50_000]) | st.integers(150, 6000))
        return nested(depth, draw(st.sampled_from(["[", "{"])))
    if kind == "truncated":
        whole = json.dumps(draw(jsonrpc_shapes())).encode()
        return whole[: draw(st.integers(0, max(0, len(whole) - 1)))]
    if kind == "utf8":
        junk = draw(st.sampled_from(INVALID_UTF8))
        return (
            b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"' + junk + b'","arguments":{}}}'
        )
    return json.dumps([draw(jsonrpc_shapes()) for _ in range(draw(st.integers(0, 3)))]).encode()


def argument_strategy(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Valid arguments for `schema`, or, where it cannot be turned into a strategy, objects of any shape."""
    try:
        strategy = from_schema(schema)
    except Exception:  # noqa: BLE001 - an unusual schema: fall back to arbitrary objects
        return st.dictionaries(st.text(max_size=12), json_values, max_size=4)
    return strategy.filter(lambda value: isinstance(value, dict))


@st.composite
def tool_arguments(draw: st.DrawFn, schema: dict[str, Any], strategy: st.SearchStrategy) -> Any:
    """Arguments from the schema, then maybe mutated one way."""
    arguments = dict(draw(strategy))
    properties = list((schema.get("properties") or {}).keys())
    required = [name for name in schema.get("required") or [] if name in arguments]
    mutation = draw(st.sampled_from(range(9)))
    if mutation == 1 and required:
        arguments.pop(draw(st.sampled_from(required)))
    elif mutation == 2:
        arguments[draw(st.text(string.ascii_letters, min_size=1, max_size=12))] = draw(json_values)
    elif mutation == 3 and properties:
        arguments[draw(st.sampled_from(properties))] = draw(json_values)
    elif mutation == 4 and properties:
        arguments[draw(st.sampled_from(properties))] = "x" * draw(
            st.sampled_from([5_000, 100_000, 1_000_000])
        )
    elif mutation == 5 and properties:
        depth = draw(st.integers(10, 190))
        arguments[draw(st.sampled_from(properties))] = json.loads("[" * depth + "]" * depth)
    elif mutation == 6 and properties:
        arguments[draw(st.sampled_from(properties))] = draw(odd_strings)
    elif mutation == 7:
        return draw(json_values)  # arguments that are no object at all
    return arguments


# --- how it is sent ------------------------------------------------------------------------------


@dataclass
class Front:
    """Where a request goes: bare (optionally with an X-Session-Id) or inside an MCP session."""

    name: str
    headers: dict[str, str]


def open_mcp_session(gateway: RunningGateway, name: str, accept: str) -> Front:
    """An MCP session: SSE answers when `accept` lists text/event-stream, JSON ones otherwise."""
    body = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "fuzzer", "version": "1"},
        },
    }
    reply = httpx.post(gateway.url, json=body, headers={"Accept": accept}, timeout=30)
    reply.raise_for_status()
    headers = {
        MCP_SESSION_HEADER: reply.headers[MCP_SESSION_HEADER],
        "mcp-protocol-version": answer_of(reply)["result"]["protocolVersion"],
        "Accept": accept,
    }
    done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    httpx.post(gateway.url, json=done, headers=headers, timeout=30)
    return Front(name, headers)


def fronts(gateway: RunningGateway) -> list[Front]:
    return [
        Front("bare", {}),
        Front("bare-keyed", {CLIENT_SESSION_HEADER: SESSION_IDS[0]}),
        Front("bare-keyed-2", {CLIENT_SESSION_HEADER: SESSION_IDS[1]}),
        open_mcp_session(gateway, "mcp-session-json", "application/json"),
        open_mcp_session(gateway, "mcp-session-sse", ACCEPT),
    ]


def post(gateway: RunningGateway, front: Front, body: bytes, timeout: float) -> httpx.Response:
    headers = {"Content-Type": "application/json", "Accept": ACCEPT, **front.headers}
    return httpx.post(gateway.url, content=body, headers=headers, timeout=timeout)


# --- what must hold ------------------------------------------------------------------------------

TRACEBACK = re.compile(r"Traceback \(most recent call last\)|File \"/.+\.py\", line \d+")


def check_answer(response: httpx.Response, sent: bytes, *, tool_call: bool = False) -> None:
    """No 5xx, and one well-formed JSON-RPC answer (or an empty 202 for a notification)."""
    where = f"{response.status_code} for {sent[:300]!r}: {response.text[:500]!r}"
    assert response.status_code < 500, where
    if response.status_code == 202:
        assert not response.content.strip(), where
        return
    answer = answer_of(response, where)
    assert isinstance(answer, dict) and answer.get("jsonrpc") == "2.0", where
    assert ("result" in answer) != ("error" in answer), where
    if "error" in answer:
        error = answer["error"]
        assert isinstance(error, dict) and isinstance(error.get("code"), int), where
        assert isinstance(error.get("message"), str) and error["message"].strip(), where
        assert not TRACEBACK.search(error["message"]), where
        assert len(error["message"]) < MAX_ERROR_CHARS, where
        return
    result = answer["result"]
    assert isinstance(result, dict), where
    if tool_call:
        content = result.get("content")
        assert isinstance(content, list) and all(isinstance(c, dict) and "type" in c for c in content), where
        if result.get("isError"):
            text = " ".join(c.get("text", "") for c in content if c.get("type") == "text")
            assert text.strip() and not TRACEBACK.search(text), where


def answer_of(response: httpx.Response, where: str = "") -> Any:
    """The JSON-RPC response in a plain JSON body, or the one response among an SSE stream's events
    (progress notifications may come before it)."""
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        try:
            return response.json()
        except ValueError:
            raise AssertionError(f"not JSON: {where}") from None
    events = []
    for line in response.text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            try:
                events.append(json.loads(line[5:]))
            except ValueError:
                raise AssertionError(f"an SSE event that is not JSON: {where}") from None
    answers = [e for e in events if isinstance(e, dict) and ("result" in e or "error" in e)]
    others = [e for e in events if e not in answers]
    assert len(answers) == 1, f"{len(answers)} responses in one stream: {where}"
    assert all(isinstance(e, dict) and isinstance(e.get("method"), str) for e in others), where
    return answers[0]


@dataclass
class ToolCase:
    tool: str
    arguments: Any
    front: Front


@dataclass
class Outcome:
    case: ToolCase
    seconds: float
    kind: str
    """"ok", "tool error", or "rpc <code>"."""


def run_tool_cases(gateway: RunningGateway, cases: list[ToolCase], workers: int) -> list[Outcome]:
    """Send each call (concurrently) and check its answer, which must come before the deadline."""
    deadline = FUZZ_TIMEOUT_S + DEADLINE_SLACK_S

    def one(number: int, case: ToolCase) -> Outcome:
        params = {"name": case.tool, "arguments": case.arguments}
        body = json.dumps({"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}).encode()
        started = time.monotonic()
        try:
            response = post(gateway, case.front, body, timeout=deadline)
        except httpx.TimeoutException:
            raise AssertionError(
                f"no answer within {deadline} s to {body[:300]!r} ({case.front.name})"
            ) from None
        check_answer(response, body, tool_call=True)
        answer = answer_of(response)
        if "error" in answer:
            kind = f"rpc {answer['error']['code']}"
        else:
            kind = "tool error" if answer["result"].get("isError") else "ok"
        return Outcome(case, time.monotonic() - started, kind)

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(one, range(len(cases)), cases))


def summary(outcomes: list[Outcome]) -> str:
    """Counts by kind, and the slowest calls by tool."""
    kinds: dict[str, int] = {}
    for outcome in outcomes:
        kinds[outcome.kind] = kinds.get(outcome.kind, 0) + 1
    slowest = sorted(outcomes, key=lambda o: -o.seconds)[:5]
    return (
        f"{len(outcomes)} calls: "
        + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
        + "; slowest: "
        + ", ".join(
            f"{o.case.tool} {o.seconds:.1f} s ({o.kind}, {o.case.front.name}, {json.dumps(o.case.arguments)[:120]})"
            for o in slowest
        )
    )


def generated_calls(tool: dict[str, Any], fronts: list[Front], chosen: settings) -> list[ToolCase]:
    """Calls of `tool`, as many as `chosen.max_examples`, with generated arguments on random fronts."""
    schema = tool.get("inputSchema") or {"type": "object"}
    cases: list[ToolCase] = []

    @chosen
    @given(arguments=tool_arguments(schema, argument_strategy(schema)), front=st.sampled_from(fronts))
    def collect(arguments: Any, front: Front) -> None:
        cases.append(ToolCase(tool["name"], arguments, front))

    collect()
    return cases


def trickle(gateway: RunningGateway, body: bytes, pieces: int, pause: float) -> tuple[int, bytes]:
    """POST `body` in `pieces`, `pause` seconds apart, over a plain socket; the status and body."""
    host, port = gateway.base.removeprefix("http://").split(":")
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: {ACCEPT}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=60) as conn:
        conn.sendall(head)
        size = max(1, len(body) // pieces)
        for start in range(0, len(body), size):
            conn.sendall(body[start : start + size])
            time.sleep(pause)
        reply = b""
        while chunk := conn.recv(65536):
            reply += chunk
    status_line, _, rest = reply.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2]


def stall(gateway: RunningGateway, count: int) -> list[socket.socket]:
    """Open `count` connections that send half a body and then nothing."""
    host, port = gateway.base.removeprefix("http://").split(":")
    stalled = []
    for _ in range(count):
        conn = socket.create_connection((host, int(port)), timeout=10)
        conn.sendall(
            f"POST /mcp HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            'Content-Length: 1000\r\n\r\n{"jsonrpc": "2.0", '.encode()
        )
        stalled.append(conn)
    return stalled


def listed_tools(gateway: RunningGateway) -> list[dict[str, Any]]:
    reply = httpx.post(
        gateway.url,
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": ACCEPT},
        timeout=60,
    )
    return sorted(reply.json()["result"]["tools"], key=lambda tool: tool["name"])
