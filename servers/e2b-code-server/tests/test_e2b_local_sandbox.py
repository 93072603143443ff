"""e2b_upload_file and e2b_run_code on the local sandbox backend (no E2B_API_KEY), through MCP."""

import pytest
from e2b_code_server import server as module
from e2b_code_server.backends import LocalBackend
from gaia_kit.core.server import SessionEndedParams
from gaia_kit_testing import failed, ok
from gaia_kit_testing.compat import REFERENCE, compatibility_problems

pytestmark = pytest.mark.anyio


async def test_reference_tools_are_served_compatibly():
    assert isinstance(module.backend(), LocalBackend)
    ours = {tool.name: tool.input_schema for tool in await module.server.list_tools()}
    reference = REFERENCE["e2b-code-server"]
    assert {t["name"] for t in reference} == set(ours)
    assert not {
        t["name"]: p for t in reference if (p := compatibility_problems(t["inputSchema"], ours[t["name"]]))
    }


async def test_upload_then_read_the_file_in_code(call, kit_env):
    (kit_env.dataset / "numbers.csv").write_text("n\n3\n4\n5\n")
    uploaded = ok(await call("e2b_upload_file", path=str(kit_env.dataset / "numbers.csv")))
    assert "e2b_sandbox/numbers.csv" in uploaded
    sandbox_id = uploaded.split("sandbox_id: ")[1].split(")")[0]
    out = ok(
        await call(
            "e2b_run_code",
            sandbox_id=sandbox_id,
            code_block="import csv\nrows = list(csv.DictReader(open('numbers.csv')))\nprint(sum(int(r['n']) for r in rows))",
        )
    )
    assert "stdout:\n12" in out and "error: none" in out and f"sandbox_id: {sandbox_id}" in out


async def test_state_persists_across_calls_and_errors_are_reported(call):
    ok(
        await call(
            "e2b_run_code", code_block="import math\nbase = 40\ndef grow(x, step=2):\n    return x + step"
        )
    )
    out = ok(await call("e2b_run_code", code_block="print(grow(base), math.floor(2.5))\nbase + 1"))
    assert "stdout:\n42 2\n41" in out
    broken = ok(await call("e2b_run_code", code_block="x = 1\nundefined_name"))
    assert "error: NameError: name 'undefined_name' is not defined" in broken and "<cell>" in broken
    assert "stdout:\n1" in ok(await call("e2b_run_code", code_block="print(x)"))


async def test_two_sessions_are_isolated(call, call_s2):
    ok(await call("e2b_run_code", code_block="secret = 'only s1'\nopen('mine.txt', 'w').write('s1')"))
    other = ok(
        await call_s2(
            "e2b_run_code", code_block="print('secret' in dir())\nimport os\nprint(os.listdir('.'))"
        )
    )
    assert "stdout:\nFalse\n[]" in other
    mismatch = failed(await call_s2("e2b_run_code", sandbox_id="local-0000000000000000", code_block="1"))
    assert "Unknown sandbox_id" in mismatch


async def test_files_written_are_reported(call, kit_env):
    out = ok(await call("e2b_run_code", code_block="open('result.txt', 'w').write('42')\nprint('done')"))
    assert "files written:\n- e2b_sandbox/result.txt" in out  # as other tools name it, never the host's path
    again = ok(await call("e2b_run_code", code_block="print(open('result.txt').read())"))
    assert "stdout:\n42" in again and "files written" not in again


async def test_bash_and_js_run_in_the_same_directory(call):
    ok(await call("e2b_run_code", code_block="open('shared.txt', 'w').write('hello')"))
    assert "stdout:\nhello" in ok(await call("e2b_run_code", code_block="cat shared.txt", language="bash"))
    js = ok(await call("e2b_run_code", code_block="console.log(6 * 7)", language="js"))
    assert "stdout:\n42" in js
    assert "exit status 3" in ok(await call("e2b_run_code", code_block="exit 3", language="bash"))


async def test_session_end_releases_the_sandbox(call, kit_env):
    ok(await call("e2b_run_code", code_block="kept = 1"))
    assert (kit_env.workspace / "e2b_sandbox").is_dir()
    await module.server._session_ended(None, SessionEndedParams(session_id="s1"))
    assert not (kit_env.workspace / "e2b_sandbox").exists()
    out = ok(await call("e2b_run_code", code_block="print('kept' in dir())"))
    assert "stdout:\nFalse" in out


async def test_bad_inputs(call):
    assert "empty" in failed(await call("e2b_run_code"))
    assert "does not exist" in failed(await call("e2b_upload_file", path="nope.csv"))
    assert "outside the allowed" in failed(await call("e2b_upload_file", path="/etc/passwd"))


async def test_runs_and_uploads_stop_at_the_workspace_quota(call, kit_env, workspace_quota):
    workspace_quota(2)
    code = "for i in range(10):\n    open(f'p{i}', 'wb').write(b'x' * 2**20)"
    out = ok(await call("e2b_run_code", code_block=code))
    # Stopped mid-run by the watcher, or, when the ten writes beat its first tick (a loaded
    # machine), reported over the quota once it ended: either way the agent is told, and the next
    # write is refused below.
    assert ("went past its quota" in out or "is over its quota" in out) and "GAIA_WORKSPACE_MAX_MB" in out, (
        out
    )
    (kit_env.dataset / "big.bin").write_bytes(b"b" * 3 * 2**20)
    message = failed(await call("e2b_upload_file", path=str(kit_env.dataset / "big.bin")))
    assert "past its quota" in message and "rm -r" in message
    ok(await call("e2b_run_code", code_block="import glob, os\nfor p in glob.glob('p*'): os.remove(p)"))
    (kit_env.dataset / "big.bin").write_bytes(b"b" * 2**20)
    assert "e2b_sandbox/big.bin" in ok(await call("e2b_upload_file", path=str(kit_env.dataset / "big.bin")))
