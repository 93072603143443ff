"""Session owners across replicas, in a real redis-server; and a serving store's hold on its root."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from gaia_contract import GONE_ELSEWHERE, GONE_RESTARTED, SESSION_GONE
from gaia_env.app import HttpConfig, create_app
from gaia_env.gateway import Gateway, GatewayConfig
from gaia_env.ownership import PREFIX, Replica, SessionGone, SessionOwners
from gaia_env.registry import ServerSpec
from gaia_env.sessions import RootInUse, SessionStore

pytestmark = pytest.mark.anyio


async def test_the_first_replica_owns_a_session_and_the_others_are_told_it_is_gone(redis_url: str) -> None:
    first = SessionOwners(Replica("gw-1"), redis_url, session_ttl=60)
    second = SessionOwners(Replica("gw-2"), redis_url, session_ttl=60)
    try:
        await first.claim("run-7")
        await first.claim("run-7")  # its own again: fine
        with pytest.raises(SessionGone) as refused:
            await second.claim("run-7")
        error = refused.value.as_jsonrpc()
        assert error["code"] == SESSION_GONE
        assert error["data"] == {
            "reason": GONE_ELSEWHERE,
            "owner": str(first.replica),
            "replica": str(second.replica),
        }
        assert "start a new session" in error["message"] and "gw-1" in error["message"]
        assert await second.owner_elsewhere("run-7") is not None
        assert await first.owner_elsewhere("run-7") is None
        assert await second.owner_elsewhere("never-seen") is None

        await second.release("run-7")  # not its record: stays
        with pytest.raises(SessionGone):
            await second.claim("run-7")
        await first.release("run-7")  # the session ended: the key is free again
        await second.claim("run-7")
    finally:
        await first.close()
        await second.close()


async def test_a_restarted_replica_refuses_what_its_earlier_run_held(redis_url: str) -> None:
    before = SessionOwners(Replica("gw-1"), redis_url, session_ttl=60)
    after = SessionOwners(Replica("gw-1"), redis_url, session_ttl=60)
    try:
        await before.claim("run-8")
        with pytest.raises(SessionGone) as refused:
            await after.claim("run-8")
        assert refused.value.data["reason"] == GONE_RESTARTED
        assert "restarted" in refused.value.message
    finally:
        await before.close()
        await after.close()


async def test_a_record_lives_as_long_as_an_idle_session_and_a_margin(redis_url: str) -> None:
    import redis

    owners = SessionOwners(Replica("gw-1"), redis_url, session_ttl=600)
    try:
        await owners.claim("run-9")
    finally:
        await owners.close()
    with redis.Redis.from_url(redis_url) as client:
        assert 600 < client.ttl(PREFIX + "run-9") <= owners.ttl_s


async def test_without_redis_every_session_is_this_replicas() -> None:
    owners = SessionOwners(Replica("gw-1"))
    assert not owners.shared
    await owners.claim("anything")
    assert await owners.owner_elsewhere("anything") is None
    await owners.release("anything")


async def test_a_serving_store_removes_what_an_earlier_run_left_and_holds_its_root(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "s-0123" / "notes").mkdir(parents=True)
    (root / "e-4567").mkdir()
    (root / "kept-by-the-operator").mkdir()
    store = SessionStore(root, idle_ttl=60, own_root=True)
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["kept-by-the-operator"]
    with pytest.raises(RootInUse, match="Another gateway is using the workspace root"):
        SessionStore(root, idle_ttl=60, own_root=True)
    SessionStore(root, idle_ttl=60)  # a one-off `gaia-env call` shares it and removes nothing
    await store.close()
    await SessionStore(root, idle_ttl=60, own_root=True).close()


async def test_every_front_answers_a_session_another_replica_holds_with_session_gone(
    tmp_path: Path, redis_url: str
) -> None:
    """In process: the app over a gateway whose one server is never started (the refusal comes first)."""
    other = SessionOwners(Replica("gw-1"), redis_url)
    for key in ("run-1", "mcp-1"):
        await other.claim(key)
    config = GatewayConfig(tmp_path / "ws", tmp_path, replica=Replica("gw-2"), owners_url=redis_url)
    gateway = Gateway({"probe": ServerSpec("probe", ("true",))}, config)
    gateway.pools["probe"].tools = [{"name": "peek", "inputSchema": {"type": "object"}}]
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "peek", "arguments": {}}}
    transport = httpx.ASGITransport(app=create_app(gateway, HttpConfig()))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8080") as client:
            by_header = await client.post("/mcp", json=call, headers={"X-Session-Id": "run-1"})
            by_url = await client.post("/sessions/run-1/mcp", json=call)
            by_mcp_session = await client.post("/mcp", json=call, headers={"Mcp-Session-Id": "mcp-1"})
            listed = (await client.get("/sessions")).json()
    finally:
        await other.close()
        await gateway.owners.close()
    for reply in (by_header, by_url, by_mcp_session):
        error = reply.json()["error"]
        assert error["code"] == SESSION_GONE and error["data"]["reason"] == GONE_ELSEWHERE, reply.text
        assert (
            error["data"]["owner"] == str(other.replica)
            and error["data"]["replica"] == "gw-2/" + config.replica.incarnation
        )
        assert reply.headers["x-gaia-replica"] == str(config.replica)
    assert by_header.status_code == by_url.status_code == 200
    assert by_mcp_session.status_code == 404  # the protocol's answer to a session that is no more
    assert listed == {
        "replica": "gw-2",
        "incarnation": config.replica.incarnation,
        "count": 0,
        "sessions": [],
    }
    assert not list((tmp_path / "ws").glob("s-*"))  # refused before any workspace was made
