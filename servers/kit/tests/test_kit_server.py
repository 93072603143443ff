"""KitServer tools over the real MCP protocol: sessions from _meta, one-sentence errors, paging."""

from __future__ import annotations

from pathlib import Path

import pytest
from gaia_kit import KitServer, ToolFailure, page, session_of
from gaia_kit.core.results import with_data
from gaia_kit.core.settings import forget_settings
from mcp import Client
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult


@pytest.fixture
def roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GAIA_WORKSPACE_ROOT", str(tmp_path / "ws"))
    monkeypatch.setenv("GAIA_DATASET_DIR", str(tmp_path / "data"))
    forget_settings()
    yield tmp_path / "ws"
    forget_settings()


def make_server() -> KitServer:
    server = KitServer("kit-test")

    @server.tool()
    def where(path: str, ctx: Context) -> str:
        session = session_of(ctx)
        return f"{session.id}|{session.paths.resolve(path)}"

    @server.tool()
    def broken(kind: str) -> str:
        if kind == "missing":
            open("/definitely/not/here")
        if kind == "planned":
            raise ToolFailure("Planned failure: set FOO to fix it.")
        raise KeyError("deep internal detail")

    @server.tool()
    async def broken_async() -> str:
        raise ValueError("async trouble")

    return server


@pytest.mark.anyio
async def test_session_comes_from_meta(roots: Path) -> None:
    ws = roots / "s-abc"
    async with Client(make_server()) as client:
        result = await client.call_tool(
            "where", {"path": "x.txt"}, meta={"gaia-env/session-id": "abc", "gaia-env/workspace": str(ws)}
        )
    assert not result.is_error
    assert result.content[0].text == "abc|x.txt"  # the resolved path, as the agent names it


@pytest.mark.anyio
async def test_no_answer_carries_the_hosts_paths(roots: Path, tmp_path: Path) -> None:
    """Whatever a tool puts in its answer (text, structuredContent, an exception's file name), the
    session's workspace and the dataset reach the agent as the agent names them."""
    server = KitServer("kit-leaky")
    ws, dataset = (roots / "s-abc").resolve(), tmp_path / "data"

    @server.tool(output=dict)
    def leaky(ctx: Context) -> CallToolResult:
        return with_data(
            f"cwd {ws}\nsaved {ws}/out/a.csv", {"path": f"{ws}/a.csv", "all": [f"{dataset}/q.pdf"]}
        )

    @server.tool()
    def crashes(ctx: Context) -> str:
        open(ws / "missing.txt")

    @server.tool()
    def refuses(ctx: Context) -> str:
        raise ToolFailure(f"{ws}/notes.txt is locked; {dataset}/q.pdf is read-only.")

    meta = {"gaia-env/session-id": "abc", "gaia-env/workspace": str(ws)}
    async with Client(server) as client:
        leaked = await client.call_tool("leaky", {}, meta=meta)
        crashed = await client.call_tool("crashes", {}, meta=meta)
        refused = await client.call_tool("refuses", {}, meta=meta)
    assert leaked.content[0].text == "cwd .\nsaved out/a.csv"
    assert leaked.structured_content == {"path": "a.csv", "all": ["/workspace/gaia_dataset/q.pdf"]}
    assert crashed.is_error and "no such file or directory: missing.txt" in crashed.content[0].text
    assert refused.content[0].text.endswith(
        ": notes.txt is locked; /workspace/gaia_dataset/q.pdf is read-only."
    )


@pytest.mark.anyio
async def test_workspace_outside_the_root_is_refused(roots: Path, tmp_path: Path) -> None:
    async with Client(make_server()) as client:
        result = await client.call_tool(
            "where",
            {"path": "x"},
            meta={"gaia-env/session-id": "x", "gaia-env/workspace": str(tmp_path / "evil")},
        )
    assert result.is_error and "GAIA_WORKSPACE_ROOT" in result.content[0].text


@pytest.mark.anyio
async def test_errors_are_one_sentence_without_traceback(roots: Path) -> None:
    async with Client(make_server()) as client:
        missing = await client.call_tool("broken", {"kind": "missing"})
        planned = await client.call_tool("broken", {"kind": "planned"})
        surprise = await client.call_tool("broken", {"kind": "other"})
        in_async = await client.call_tool("broken_async", {})
    assert "no such file or directory: /definitely/not/here" in missing.content[0].text
    assert planned.content[0].text.endswith("Planned failure: set FOO to fix it.")
    assert "KeyError" in surprise.content[0].text and "Traceback" not in surprise.content[0].text
    assert "ValueError: async trouble" in in_async.content[0].text
    assert all(r.is_error for r in (missing, planned, surprise, in_async))


def test_page_caps_and_says_how_to_continue(roots: Path) -> None:
    text = "".join(str(i % 10) for i in range(250))
    first = page(text, 0, 100)
    assert first.startswith(text[:100]) and "start_index=100" in first
    last = page(text, 200, 100)
    assert last == text[200:]
    assert "past the end" in page(text, 999, 10)
    assert page("short") == "short"
