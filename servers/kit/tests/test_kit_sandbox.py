"""The sandbox: escapes and abuse are contained and reported, ordinary code runs."""

import os
from pathlib import Path

import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit.execution.sandbox import Limits, SandboxResult, run_sandboxed, sandbox_status

pytestmark = pytest.mark.anyio

QUICK = Limits(wall_s=10, cpu_s=5, memory_mb=1024, processes=64)


@pytest.fixture
def ws(kit_env, monkeypatch):
    monkeypatch.setenv("FAKE_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("MCP_AUTH_TOKEN", "gateway-token")
    forget_settings()
    yield kit_env.workspace
    forget_settings()


async def sh(ws: Path, script: str, limits: Limits = QUICK, **kw):
    return await run_sandboxed(["bash", "-c", script], workspace=ws, limits=limits, **kw)


def test_status_names_the_backend():
    assert sandbox_status()["backend"] == "bubblewrap" and sandbox_status()["missing"] == []


async def test_python_with_data_libraries_bash_and_node(ws):
    code = "import numpy, pandas, openpyxl, matplotlib; print(int(numpy.arange(4).sum()))"
    # Importing the four from a cold page cache takes seconds on a loaded 2-core machine: the test is
    # about what is installed, not how fast, so it gets the time a real call would.
    roomy = Limits(wall_s=60, cpu_s=30, memory_mb=1024, processes=64)
    result = await run_sandboxed(["python", "-c", code], workspace=ws, limits=roomy)
    assert result.exit_code == 0 and result.stdout == "6\n", result.describe()
    result = await sh(ws, "node -e 'console.log(6*7)'; echo $0")
    assert result.stdout == "42\nbash\n", result.describe()
    assert (await run_sandboxed(["cat"], workspace=ws, stdin="piped", limits=QUICK)).stdout == "piped"


async def test_workspace_is_writable_and_the_rest_is_not(ws, kit_env):
    (kit_env.dataset / "data.txt").write_text("dataset")
    result = await sh(
        ws,
        "echo hi > made.txt; cat /workspace/gaia_dataset/data.txt; echo x > /etc/evil; "
        "echo x > /workspace/gaia_dataset/evil; echo x > /usr/evil; touch ../outside",
    )
    assert (ws / "made.txt").read_text() == "hi\n" and "dataset" in result.stdout
    assert result.stderr.count("Read-only file system") + result.stderr.count("Permission denied") >= 4
    assert not (kit_env.dataset / "evil").exists() and not (kit_env.root / "outside").exists()


async def test_secrets_and_shadow_are_absent(ws):
    result = await sh(ws, "env; cat /etc/shadow; ls /root")
    assert "sk-must-not-leak" not in result.stdout and "gateway-token" not in result.stdout
    assert "FAKE_API_KEY" not in result.stdout and "HOME=" in result.stdout
    assert "/etc/shadow: No such file" in result.stderr
    passed = await sh(ws, "echo ${GITHUB_TOKEN:-absent} $COLOR", env={"GITHUB_TOKEN": "x", "COLOR": "red"})
    assert passed.stdout == "absent red\n"


async def test_no_network_loopback_or_external(ws):
    code = (
        "import socket\n"
        "for host in ('127.0.0.1', '192.0.2.1'):\n"
        "    s = socket.socket(); s.settimeout(2)\n"
        "    try: s.connect((host, 80)); print(host, 'connected')\n"
        "    except OSError as exc: print(host, 'refused', exc.errno)\n"
    )
    result = await run_sandboxed(["python", "-c", code], workspace=ws, limits=QUICK)
    assert "connected" not in result.stdout and result.stdout.count("refused") == 2, result.describe()


async def test_fork_bomb_is_contained(ws):
    result = await sh(
        ws, "bomb() { bomb | bomb & }; bomb; sleep 2; echo survived", Limits(wall_s=6, processes=32)
    )
    assert result.timed_out or result.exit_code is not None
    after = await sh(ws, "echo fine")
    assert after.stdout == "fine\n"


async def test_memory_cpu_and_wall_limits(ws):
    alloc = await run_sandboxed(["python", "-c", "x = bytearray(10 * 1024**3)"], workspace=ws, limits=QUICK)
    assert "MemoryError" in alloc.stderr and alloc.exit_code == 1
    spin = await run_sandboxed(
        ["python", "-c", "while True: pass"], workspace=ws, limits=Limits(wall_s=20, cpu_s=1)
    )
    assert spin.exit_code is not None and "CPU time limit" in spin.describe()
    sleep = await sh(ws, "sleep 30 & sleep 30", Limits(wall_s=1))
    assert sleep.timed_out and "wall-time limit of 1 s" in sleep.describe()


HOG = "import time; b = bytearray(150 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(30)"


async def test_the_whole_sandbox_has_one_memory_limit(ws):
    """Three processes of 150 MB, each under its own 1 GB limit, pass 256 MB together: all are killed."""
    three = f'for i in 1 2 3; do python3 -c "{HOG}" & done; wait; echo survived'
    result = await sh(ws, three, Limits(wall_s=60, memory_mb=1024, total_memory_mb=256))
    assert result.memory_stop and "survived" not in result.stdout, result.describe()
    assert "over the 256 MB limit for the whole sandbox (GAIA_SANDBOX_TOTAL_MEMORY_MB)" in result.describe()
    assert not result.timed_out and result.exit_code is None
    one = await sh(
        ws, f'python3 -c "{HOG.replace("30", "0")}" && echo fine', Limits(wall_s=60, total_memory_mb=256)
    )
    assert one.stdout == "fine\n" and one.memory_stop is None, one.describe()


async def test_tmp_and_var_tmp_are_bounded_and_count_as_memory(ws, monkeypatch):
    monkeypatch.setenv("GAIA_SANDBOX_TMP_MB", "32")
    forget_settings()
    full = await sh(ws, "head -c 64M /dev/zero > /var/tmp/big; echo $?; du -m /var/tmp/big | cut -f1")
    assert "No space left on device" in full.stderr and full.stdout.split() == ["1", "32"], full.describe()
    monkeypatch.setenv("GAIA_SANDBOX_TMP_MB", "512")
    forget_settings()
    held = await sh(
        ws, "head -c 100M /dev/zero > /var/tmp/big; sleep 30", Limits(wall_s=60, total_memory_mb=64)
    )
    assert held.memory_stop and "/tmp, /var/tmp and /dev/shm files" in held.describe(), held.describe()


async def test_huge_output_keeps_head_and_tail(ws):
    result = await sh(
        ws,
        "echo START; head -c 100000000 /dev/zero | tr '\\0' x; echo; echo END",
        Limits(wall_s=30, output_chars=10_000),
    )
    assert result.truncated and result.stdout.startswith("START") and result.stdout.rstrip().endswith("END")
    assert "bytes of output elided" in result.stdout and len(result.stdout) < 12_000


async def test_background_processes_die_with_the_command(ws):
    result = await sh(ws, "(sleep 2; echo late > late.txt) & echo returned")
    assert result.stdout == "returned\n" and result.duration_s < 2
    marker = await sh(ws, "sleep 3; ls")
    assert "late.txt" not in marker.stdout


async def test_planted_symlink_to_root_gives_nothing(ws):
    os.symlink("/", ws / "root")
    result = await sh(ws, "ls root/; cat root/etc/shadow; echo x > root/tmp/escaped; ls /tmp")
    assert not Path("/tmp/escaped").exists()
    assert "shadow: No such file" in result.stderr


FORK_COUNTER = """
import os, time
children = 0
while True:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    children += 1
print(children, flush=True)
"""


async def test_fork_bomb_hits_the_process_limit_and_leaves_nothing(ws):
    result = await run_sandboxed(
        ["python3", "-c", FORK_COUNTER], workspace=ws, limits=Limits(wall_s=20, processes=32)
    )
    forked = int(result.stdout.split()[0])
    assert 0 < forked < 32, result.describe()
    if os.geteuid() == 0:  # the sandbox ran as the workspace's own uid: none of its processes survive
        import psutil
        from gaia_kit.execution.sandbox import _sandbox_uid

        uid = _sandbox_uid(Path(os.path.realpath(ws)))
        assert [
            p.pid for p in psutil.process_iter(["uids"]) if p.info["uids"] and p.info["uids"].real == uid
        ] == []


async def test_missing_bubblewrap_refuses_and_says_what_to_do(ws, monkeypatch, tmp_path):
    from gaia_kit.execution.sandbox import SandboxUnavailable, _bubblewrap_problem

    bin_dir = tmp_path / "bin-without-bwrap"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    _bubblewrap_problem.cache_clear()  # the probe runs once per process
    try:
        with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap.*GAIA_SANDBOX=unsandboxed"):
            await sh(ws, "echo never")
        assert any("bubblewrap" in item for item in sandbox_status()["missing"])
    finally:
        _bubblewrap_problem.cache_clear()


async def test_unsandboxed_mode_is_explicit_and_loud(ws, monkeypatch, caplog):
    monkeypatch.setenv("GAIA_SANDBOX", "unsandboxed")
    forget_settings()
    status = sandbox_status()
    assert status["backend"] == "unsandboxed" and "WARNING" in status["notes"][0]
    result = await sh(ws, "echo $FAKE_API_KEY; echo ran")
    assert result.stdout.strip().splitlines() == ["ran"]  # the environment is still scrubbed
    assert "without isolation" in caplog.text


def test_the_answer_names_the_wall_time_only_of_a_slow_command():
    fast = SandboxResult(0, "1\n", "", timed_out=False, truncated=False, duration_s=0.43)
    slow = SandboxResult(0, "1\n", "", timed_out=False, truncated=False, duration_s=2.345)
    assert fast.describe() == "1\n[exit status 0]"  # the same command answers the same every run
    assert slow.describe() == "1\n[exit status 0; 2.3 s]"
