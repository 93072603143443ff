"""What a request asks for, read from its ASGI scope: which servers, who is asking, which session id
is refused before anything is kept. (The session rule itself: test_session_urls.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from gaia_contract import CLIENT_SESSION_HEADER, MCP_SESSION_HEADER, SERVERS_HEADER, SERVERS_HEADER_AS_SENT
from gaia_env.selection import CLIENT_SCOPE_KEY, client_of, refused_session_id, requested_servers


def scope(headers: dict[str, str] | None = None, query: str = "", **extra: Any) -> dict[str, Any]:
    raw = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    return {"type": "http", "headers": raw, "query_string": query.encode(), "path_params": {}, **extra}


@pytest.mark.parametrize("header", [SERVERS_HEADER, SERVERS_HEADER_AS_SENT, SERVERS_HEADER.upper()])
def test_servers_are_selected_by_either_spelling_of_the_header(header: str) -> None:
    assert requested_servers(scope({header: "excel, filesystem-server,,"})) == ["excel", "filesystem-server"]


def test_the_path_wins_over_the_header_and_the_header_over_the_query() -> None:
    headers = {SERVERS_HEADER: "excel"}
    assert requested_servers(
        scope(headers, "servers=wiki-server", path_params={"server_id": "terminal-server"})
    ) == ["terminal-server"]
    assert requested_servers(scope(headers, "servers=wiki-server")) == ["excel"]
    assert requested_servers(scope(query="servers=wiki-server,excel")) == ["wiki-server", "excel"]


def test_no_selection_or_an_empty_one_means_every_server() -> None:
    assert requested_servers(scope()) is None
    assert requested_servers(scope({SERVERS_HEADER: " , "})) is None


def test_the_client_is_the_token_holder_when_one_is_required_else_the_address() -> None:
    assert client_of(scope(client=("10.0.0.7", 5123))) == "address 10.0.0.7"
    assert client_of(scope(client=("10.0.0.7", 5123), **{CLIENT_SCOPE_KEY: "token"})) == "token"
    assert client_of(scope()) == "address unknown"


@pytest.mark.parametrize(
    ("headers", "where"),
    [
        ({CLIENT_SESSION_HEADER: "has space"}, "X-Session-Id header"),
        ({MCP_SESSION_HEADER: "x" * 129}, "Mcp-Session-Id header"),
    ],
)
def test_a_session_id_out_of_bounds_is_refused_with_where_it_came_from(
    headers: dict[str, str], where: str
) -> None:
    problem = refused_session_id(scope(headers))
    assert problem is not None and where in problem and "POST /sessions mints one" in problem


def test_a_session_id_in_bounds_is_taken() -> None:
    assert refused_session_id(scope({CLIENT_SESSION_HEADER: "run-7_a"})) is None
    assert refused_session_id(scope(path_params={"session_id": "not ok!"})) is not None
