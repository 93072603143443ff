"""Bounded sessions and disks, end to end: GAIA_MAX_SESSIONS, the free-disk floor and the
per-session workspace quota, through a real gateway and real server processes."""

from __future__ import annotations

import os
import re
import shutil

import httpx
import pytest
from gaia_kit_testing.gateway import RunningGateway
from gaia_kit_testing.probe import write_registry

ONE_PROBE = """
[servers.probe]
command = ["{python}", "{probe}"]
"""


@pytest.fixture
def start(gateway_factory, tmp_path):
    registry = write_registry(tmp_path / "probe.toml", ONE_PROBE)

    def launch(*args: str, env: dict[str, str] | None = None) -> RunningGateway:
        return gateway_factory("--config", str(registry), *args, env=env)

    return launch


def put(gateway: RunningGateway, session: str | None, name: str = "f.txt", text: str = "x") -> dict:
    headers = {"X-Session-Id": session} if session else {}
    return gateway.call("put", {"name": name, "text": text}, headers=headers)


def text_of(result: dict) -> str:
    return result["content"][0]["text"]


def metric(gateway: RunningGateway, name: str) -> float:
    body = httpx.get(gateway.base + "/metrics", timeout=10).text
    found = re.search(rf"^{re.escape(name)} (\S+)$", body, flags=re.M)
    assert found, f"{name} not in /metrics"
    return float(found.group(1))


def test_the_session_cap_refuses_new_sessions_and_keeps_the_running_ones(start) -> None:
    gateway = start(env={"GAIA_MAX_SESSIONS": "2"})
    assert not put(gateway, "alice")["isError"] and not put(gateway, "bob")["isError"]
    refused = put(gateway, "carol")
    assert refused["isError"] and "maximum of 2 sessions (GAIA_MAX_SESSIONS)" in text_of(refused)
    assert "DELETE /mcp" in text_of(refused)
    assert not put(gateway, "alice", "again.txt")["isError"]  # running sessions go on
    assert not put(gateway, None)["isError"]  # a call without a session holds no session
    limits = gateway.status()["session_limits"]
    assert limits["live"] == 2 and limits["max_sessions"] == 2 and limits["accepting_new"] is False
    assert metric(gateway, "gaia_env_sessions_max") == 2 and metric(gateway, "gaia_env_sessions") == 2
    assert metric(gateway, 'gaia_env_sessions_refused_total{reason="max_sessions"}') == 1
    assert "refusing new sessions" in httpx.get(gateway.base + "/", timeout=10).text
    assert httpx.delete(gateway.url, headers={"X-Session-Id": "bob"}).json() == {"ended": True}
    assert not put(gateway, "carol")["isError"]
    assert gateway.status()["session_limits"]["accepting_new"] is False


def test_below_the_disk_floor_new_workspaces_are_refused(start, tmp_path) -> None:
    """The floor sits 1 GB under today's free space; a 2 GB file (allocated, not written) crosses it."""
    free_mb = shutil.disk_usage(tmp_path).free // 2**20
    if free_mb < 8 * 1024:
        pytest.skip(f"needs 8 GB free on the disk of {tmp_path} (has {free_mb} MB)")
    gateway = start("--min-free-disk-mb", str(free_mb - 1024))
    assert not put(gateway, "early")["isError"]
    limits = gateway.status()["session_limits"]
    assert limits["accepting_new"] is True and limits["min_free_disk_mb"] == free_mb - 1024
    filler = tmp_path / "filler"
    with open(filler, "wb") as handle:
        os.posix_fallocate(handle.fileno(), 0, 2 * 1024 * 2**20)
    try:
        refused = put(gateway, "late")
        assert refused["isError"] and "GAIA_MIN_FREE_DISK_MB" in text_of(refused), refused
        assert "MB free, below the floor" in text_of(refused)
        assert put(gateway, None)["isError"]  # a call without a session needs a new workspace too
        assert not put(gateway, "early", "more.txt")["isError"]  # a running session goes on
        assert gateway.status()["session_limits"]["accepting_new"] is False
        assert metric(gateway, 'gaia_env_sessions_refused_total{reason="disk_floor"}') == 2
        assert metric(gateway, "gaia_env_disk_min_free_bytes") == (free_mb - 1024) * 2**20
        assert metric(gateway, "gaia_env_disk_free_bytes") < (free_mb - 1024) * 2**20
    finally:
        filler.unlink()
    assert not put(gateway, "late")["isError"]


def test_a_workspace_quota_holds_through_the_gateway(start) -> None:
    gateway = start(env={"GAIA_WORKSPACE_MAX_MB": "1", "GAIA_WORKSPACE_MAX_FILES": "100"})
    assert not put(gateway, "filler", "a.txt", "a" * 700_000)["isError"]
    refused = put(gateway, "filler", "b.txt", "b" * 700_000)
    assert refused["isError"] and "GAIA_WORKSPACE_MAX_MB" in text_of(refused), refused
    assert not put(gateway, "other", "b.txt", "b" * 700_000)["isError"]  # another session is unaffected
    assert not put(gateway, "filler", "a.txt", "small")["isError"]  # rewriting smaller frees space
    assert not put(gateway, "filler", "b.txt", "b" * 700_000)["isError"]
    locks = gateway.workspace_root / ".gaia-quota" / "locks"
    assert len(list(locks.iterdir())) == 2
    assert httpx.delete(gateway.url, headers={"X-Session-Id": "filler"}).json() == {"ended": True}
    assert len(list(locks.iterdir())) == 1  # an ended session leaves nothing behind
