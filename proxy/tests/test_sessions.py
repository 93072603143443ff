"""The session store ends sessions whatever their workspaces hold, and its reaper outlives any one
failure; in process, with the app where the HTTP answer matters."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest
from gaia_env import sessions as sessions_module
from gaia_env.app import HttpConfig, create_app
from gaia_env.gateway import Gateway, GatewayConfig
from gaia_env.registry import ServerSpec
from gaia_env.sessions import SessionLimits, SessionState, SessionStore
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
