"""The session store ends sessions whatever their workspaces hold, its reaper outlives any one
failure, and no client can take every session from the others; in process, with the app where the
HTTP answer matters."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest
from gaia_env import sessions as sessions_module
from gaia_env.app import HttpConfig, create_app
from gaia_env.gateway import Gateway, GatewayConfig
from gaia_env.registry import ServerSpec
from gaia_env.sessions import SessionLimits, SessionRefused, SessionState, SessionStore
from gaia_kit_testing import build_deep_tree

pytestmark = pytest.mark.anyio

DEPTH = 1500
"""Deeper than Python's recursion limit: shutil.rmtree on 3.11 raised RecursionError here."""


async def made(store: SessionStore, key: str) -> Path:
    async with store.use(key, "probe") as state:
        return state.workspace


async def until(condition: Callable[[], bool], timeout: float = 30) -> None:
    with anyio.fail_after(timeout):
        while not condition():
            await asyncio.sleep(0.02)


async def test_ending_a_session_removes_a_tree_of_any_depth(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "root", idle_ttl=60)
    workspace = await made(store, "deep")
    build_deep_tree(workspace / "nest", DEPTH, link_to=tmp_path)
    assert await store.end("deep")
    assert not workspace.exists() and len(store) == 0


async def test_delete_of_a_deep_session_answers_204_and_removes_it(tmp_path: Path) -> None:
    config = GatewayConfig(tmp_path / "root", tmp_path, session_limits=SessionLimits(min_free_disk_mb=0))
    gateway = Gateway({"probe": ServerSpec("probe", ("true",))}, config)
    workspace = await made(gateway.sessions, "deep")
    build_deep_tree(workspace, DEPTH)
    transport = httpx.ASGITransport(app=create_app(gateway, HttpConfig()))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as client:
        reply = await client.delete("/sessions/deep")
    assert reply.status_code == 204, reply.text
    assert not workspace.exists()


async def test_the_reaper_outlives_a_failing_session_and_retries_what_it_could_not_remove(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    told: list[str] = []

    async def on_end(state: SessionState) -> None:
        told.append(state.key)
        if state.key == "noisy":
            raise RuntimeError("a listener failed")

    store = SessionStore(tmp_path / "root", idle_ttl=0.05, on_end=on_end)
    noisy, stuck, quiet = [await made(store, key) for key in ("noisy", "stuck", "quiet")]
    real_remove = sessions_module.remove_tree
    failures = iter([OSError("busy")])

    def remove_tree(path: Path) -> None:
        if path == stuck and (failure := next(failures, None)):
            raise failure
        real_remove(path)

    monkeypatch.setattr(sessions_module, "remove_tree", remove_tree)
    reaper = asyncio.create_task(store.reap_forever(every=0.05))
    try:
        await until(lambda: not store._sessions)
        assert sorted(told) == ["noisy", "quiet", "stuck"]
        await until(lambda: not stuck.exists())  # the failed removal is retried on a later round
        assert not noisy.exists() and not quiet.exists()
        later = await made(store, "later")  # the reaper is still reaping
        await until(lambda: not later.exists())
        assert not reaper.done()
    finally:
        reaper.cancel()


async def test_close_retries_the_workspaces_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore(tmp_path / "root", idle_ttl=60)
    first, second = await made(store, "one"), await made(store, "two")
    real_remove = sessions_module.remove_tree
    monkeypatch.setattr(sessions_module, "remove_tree", lambda path: (_ for _ in ()).throw(OSError("busy")))
    assert await store.end("one")  # ended for its caller, the workspace kept for a retry
    assert first.exists()
    monkeypatch.setattr(sessions_module, "remove_tree", real_remove)
    await store.close()
    assert not first.exists() and not second.exists()


# -- fair sessions: eviction at the limits, a limit per client, bounded keys ------------------------


def limited(tmp_path: Path, on_end=None, **limits: float) -> SessionStore:
    return SessionStore(
        tmp_path / "root", idle_ttl=3600, on_end=on_end, limits=SessionLimits(min_free_disk_mb=0, **limits)
    )


async def test_at_the_cap_the_least_recently_used_idle_session_makes_room(tmp_path: Path) -> None:
    ended: list[str] = []

    async def on_end(state: SessionState) -> None:
        ended.append(state.key)

    store = limited(tmp_path, on_end, max_sessions=2, evict_after_s=0)
    oldest, older = await made(store, "oldest"), await made(store, "older")
    newest = await made(store, "newest")
    assert ended == ["oldest"] and not oldest.exists() and newest.is_dir() and len(store) == 2
    async with store.use("older", "probe"):  # a call in flight: never evicted, however old
        await made(store, "fourth")
        assert ended == ["oldest", "newest"] and older.is_dir()
    assert store.describe()["evicted"] == 2


async def test_at_the_cap_with_nothing_idle_enough_a_new_session_is_refused_and_not_kept(
    tmp_path: Path,
) -> None:
    store = limited(tmp_path, max_sessions=2, evict_after_s=3600)
    await made(store, "one")
    await made(store, "two")
    with pytest.raises(SessionRefused, match=r"maximum of 2 sessions \(GAIA_MAX_SESSIONS\)") as refused:
        await made(store, "three" * 20)
    assert "GAIA_SESSION_EVICT_AFTER_S" in str(refused.value)
    assert set(store._sessions) == {"one", "two"}  # the refused key keeps no memory
    assert store.describe()["accepting_new"] is False


async def test_one_client_cannot_hold_more_than_its_share(tmp_path: Path) -> None:
    store = limited(tmp_path, max_sessions=10, max_sessions_per_client=2, evict_after_s=3600)
    for key in ("a1", "a2"):
        async with store.use(key, "probe", client="address 10.0.0.1"):
            pass
    with pytest.raises(SessionRefused, match=r"maximum of 2 sessions \(GAIA_MAX_SESSIONS_PER_CLIENT"):
        async with store.use("a3", "probe", client="address 10.0.0.1"):
            pass
    async with store.use("a1", "probe", client="address 10.0.0.1"):  # its own sessions go on
        pass
    async with store.use("b1", "probe", client="address 10.0.0.2"):  # another client is not affected
        pass
    assert set(store._sessions) == {"a1", "a2", "b1"}


async def test_at_its_own_limit_a_client_gives_up_its_own_idle_session(tmp_path: Path) -> None:
    store = limited(tmp_path, max_sessions=10, max_sessions_per_client=1, evict_after_s=0)
    async with store.use("b1", "probe", client="address 10.0.0.2"):
        pass
    async with store.use("a1", "probe", client="address 10.0.0.1"):
        pass
    async with store.use("a2", "probe", client="address 10.0.0.1"):
        pass
    assert set(store._sessions) == {"b1", "a2"}


async def test_clients_are_told_apart_by_address_or_by_the_token(tmp_path: Path) -> None:
    limits = SessionLimits(max_sessions=10, max_sessions_per_client=1, min_free_disk_mb=0, evict_after_s=3600)
    for token in (None, "secret"):
        config = GatewayConfig(tmp_path / f"root-{token}", tmp_path, session_limits=limits)
        gateway = Gateway({"probe": ServerSpec("probe", ("true",))}, config)
        app = create_app(gateway, HttpConfig(auth_token=token))
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        client = "bearer token " if token else "address 10.0.0.1"
        async with gateway.sessions.use("held", "probe", client=client + _token_id(token)):
            pass
        answers = []
        for address in ("10.0.0.1", "10.0.0.2"):
            transport = httpx.ASGITransport(app=app, client=(address, 40000))
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as http:
                answers.append((await http.post("/sessions", headers=headers)).status_code)
        # Without a token each address is a client; with it, every holder of the token is one.
        assert answers == ([503, 503] if token else [503, 201]), (token, answers)


def _token_id(token: str | None) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:12] if token else ""


async def test_the_limit_per_client_holds_on_the_call_paths(live_gateway, tmp_path: Path) -> None:
    limits = SessionLimits(max_sessions=10, max_sessions_per_client=1, min_free_disk_mb=0, evict_after_s=3600)
    live = await live_gateway(GatewayConfig(tmp_path / "root", tmp_path, session_limits=limits))
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "hi"}},
    }

    async def call_from(address: str, session: str) -> dict:
        transport = httpx.ASGITransport(app=live.app, client=(address, 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as http:
            reply = await http.post("/mcp", json=body, headers={"X-Session-Id": session})
        return reply.json()["result"]

    assert not (await call_from("10.0.0.1", "first"))["isError"]
    assert not (await call_from("10.0.0.2", "other"))["isError"]
    refused = await call_from("10.0.0.1", "second")
    assert refused["isError"] and "GAIA_MAX_SESSIONS_PER_CLIENT" in refused["content"][0]["text"]
    assert set(live.gateway.sessions._sessions) == {"first", "other"}


async def test_an_overlong_mcp_session_id_is_refused_and_not_kept(tmp_path: Path) -> None:
    config = GatewayConfig(tmp_path / "root", tmp_path, session_limits=SessionLimits(min_free_disk_mb=0))
    gateway = Gateway({"probe": ServerSpec("probe", ("true",))}, config)
    transport = httpx.ASGITransport(app=create_app(gateway, HttpConfig()))
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as client:
        for method in ("POST", "GET", "DELETE"):
            reply = await client.request(
                method,
                "/mcp",
                json=body if method == "POST" else None,
                headers={"Mcp-Session-Id": "x" * 10_000},
            )
            assert reply.status_code == 400, (method, reply.text)
            assert "Invalid session id 'xxxx" in reply.json()["error"]["message"]
            assert "in the Mcp-Session-Id header" in reply.json()["error"]["message"]
    assert not gateway.sessions._sessions
