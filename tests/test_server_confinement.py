"""Servers see only what they serve, and not as root (issue 22), through a real gateway.

The probe server's host_read/host_write/host_list tools check nothing: they stand for a mistake in
a server's path check. Whatever such a mistake reaches must be the confinement's view: no host
file outside the workspace root, the dataset and what servers run from; the dataset read-only; no
root, no capability. terminal-server's sandbox nests inside that confinement and still runs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from gaia_kit_testing.probe import write_registry

ROOT = Path(__file__).resolve().parents[1]

REGISTRY = """
[servers.probe-a]
command = ["{python}", "{probe}"]
replicas = 1

[servers.terminal-server]
command = ["{python}", "-m", "terminal_server"]
replicas = 1
stateful = true
"""


def text(reply: dict) -> str:
    assert not reply["isError"], reply
    return reply["content"][0]["text"]


@pytest.fixture(scope="module")
def confined(tmp_path_factory: pytest.TempPathFactory):
    from gaia_kit_testing.gateway import launch

    tmp = tmp_path_factory.mktemp("confined")
    (tmp / "dataset").mkdir()
    (tmp / "dataset" / "question.txt").write_text("the dataset's file")
    (tmp / "host-secret.txt").write_text("a host file beside the workspaces")
    gateway = launch(tmp, "--config", str(write_registry(tmp / "servers.toml", REGISTRY)))
    yield gateway, tmp
    gateway.stop()


def test_a_server_runs_without_root_or_capabilities(confined) -> None:
    gateway, _ = confined
    who = json.loads(text(gateway.call("probe-a__identity")))
    assert who["uid"] != 0 and who["gid"] != 0 and 0 not in who["groups"]
    assert who["cap_eff"] == 0
    if os.geteuid() == 0:  # a root gateway drops its servers to GAIA_SERVER_UID (nobody by default)
        assert (who["uid"], who["gid"]) == (65534, 65534)


def test_host_files_outside_what_it_serves_do_not_exist_for_a_server(confined) -> None:
    gateway, tmp = confined
    for path in ("/etc/shadow", str(tmp / "host-secret.txt"), "/root/.bash_history"):
        answer = text(gateway.call("probe-a__host_read", {"path": path}))
        assert answer.startswith("FileNotFoundError"), (path, answer)
    # Beside the checkout (other checkouts, the host's folders): nothing but the checkout itself.
    beside = text(gateway.call("probe-a__host_list", {"path": str(ROOT.parent)})).splitlines()
    assert beside == [ROOT.name], beside
    host_root = set(os.listdir("/root")) if os.access("/root", os.R_OK) else set()
    seen = set(text(gateway.call("probe-a__host_list", {"path": "/root"})).splitlines())
    # /root there is the server's private home (or absent): at most the mount points of a Python
    # installed under it, never the host's files.
    assert not (seen & host_root) - {".pyenv", ".local", ".cache"}
    etc = set(text(gateway.call("probe-a__host_list", {"path": "/etc"})).splitlines())
    assert "passwd" in etc and not etc & {"shadow", "gshadow", "ssh", "sudoers"}


def test_a_server_sees_only_its_own_processes(confined) -> None:
    gateway, _ = confined
    pids = [
        n for n in text(gateway.call("probe-a__host_list", {"path": "/proc"})).splitlines() if n.isdigit()
    ]
    assert 0 < len(pids) < 10  # bubblewrap's init, the server, its children: not the host's
    gateway_pid = str(gateway.proc.pid)
    for pid in pids:
        cmdline = text(gateway.call("probe-a__host_read", {"path": f"/proc/{pid}/cmdline"}))
        assert "gaia_env\x00serve" not in cmdline, (pid, gateway_pid, cmdline)


def test_the_dataset_is_readable_and_cannot_be_written(confined) -> None:
    gateway, tmp = confined
    dataset = tmp / "dataset"
    assert text(gateway.call("probe-a__host_read", {"path": str(dataset / "question.txt")})) == (
        "read: the dataset's file"
    )
    for target in (dataset / "question.txt", dataset / "new.txt"):
        answer = text(gateway.call("probe-a__host_write", {"path": str(target), "text": "POISONED"}))
        assert answer == "OSError: Read-only file system", answer
    assert (dataset / "question.txt").read_text() == "the dataset's file"
    assert not (dataset / "new.txt").exists()


def test_the_workspace_is_the_servers_and_the_sandbox_nests_inside(confined) -> None:
    gateway, _ = confined
    session = {"X-Session-Id": "confined-terminal"}
    reply = gateway.call(
        "terminal-server__execute_command",
        {
            "command": 'echo "uid=$(id -u)"; echo made > made.txt; cat made.txt; cat /etc/shadow',
            "output_format": "text",
        },
        headers=session,
    )
    out = text(reply)
    uid = int(re.search(r"uid=(\d+)", out).group(1))
    assert uid != 0 and "made" in out and "/etc/shadow: No such file or directory" in out, out
    workspace = next(p for p in gateway.session_workspaces() if (p / "made.txt").exists())
    assert (workspace / "made.txt").stat().st_uid == uid  # the sandbox runs as the server's uid


def test_opting_out_runs_servers_as_the_gateway(gateway_factory, tmp_path) -> None:
    registry = write_registry(
        tmp_path / "probe.toml", '[servers.probe-a]\ncommand = ["{python}", "{probe}"]\n'
    )
    gateway = gateway_factory("--config", str(registry), env={"GAIA_SERVER_CONFINE": "0"})
    who = json.loads(text(gateway.call("probe-a__identity")))
    assert who["uid"] == os.geteuid()


def test_confinement_asked_for_but_impossible_stops_the_gateway_with_a_reason(tmp_path) -> None:
    env = {**os.environ, "GAIA_SERVER_UID": "0"}
    cmd = [sys.executable, "-m", "gaia_env", "serve", "--port", "1", "--workspace-root", str(tmp_path / "w")]
    if os.geteuid() == 0:
        done = subprocess.run(
            cmd + ["--servers", "filesystem-server"], env=env, capture_output=True, text=True
        )
        assert done.returncode == 2
        assert "GAIA_SERVER_UID='0': servers must not run as root" in done.stderr
    env = {**os.environ, "PATH": str(tmp_path)}  # no bubblewrap on it
    done = subprocess.run(cmd + ["--servers", "filesystem-server"], env=env, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Server confinement needs bwrap (apt-get install bubblewrap)" in done.stderr
    assert "GAIA_SERVER_CONFINE=0" in done.stderr
