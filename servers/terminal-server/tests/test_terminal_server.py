"""terminal-server through the MCP protocol: sandboxed, per-session, policy on shell words."""

import json

import pytest
from gaia_kit_testing import failed, ok, session_call
from gaia_kit_testing.compat import REFERENCE, compatibility_problems
from terminal_server.server import histories, server

pytestmark = pytest.mark.anyio


async def test_tools_match_the_reference():
    ours = {tool.name: tool for tool in await server.list_tools()}
    for tool in REFERENCE["terminal-server"]:
        assert not compatibility_problems(tool["inputSchema"], ours[tool["name"]].input_schema), tool["name"]


async def test_format_words_are_not_refused(call, env_ws):
    out = ok(await call("execute_command", command="""python -c "print('{}'.format(1))" """))
    assert "exit status 0" in out and "```\n1\n```" in out
    assert "exit status 0" in ok(await call("execute_command", command="ls --format=long"))


async def test_refusals_name_the_rule(call):
    assert "rule deny:sudo" in failed(await call("execute_command", command="echo hi && sudo ls"))
    assert "rule rm-root" in failed(await call("execute_command", command="rm -rf /"))


async def test_runs_in_the_workspace_with_json_output(call, env_ws):
    data = json.loads(ok(await call("execute_command", command="echo hi > a.txt; pwd", output_format="json")))
    # The workspace is the working directory; answers show it as `.`, never the host's path.
    assert data["stdout"].strip() == "." and (env_ws / "a.txt").read_text() == "hi\n"
    assert data["exit_code"] == 0 and not data["timed_out"]


async def test_timeout_kills_the_process_group(call, env_ws):
    out = ok(
        await call(
            "execute_command", command="(sleep 3; touch late) & sleep 10", timeout=1, output_format="text"
        )
    )
    assert "wall-time limit of 1 s" in out
    ok(await call("execute_command", command="sleep 3"))
    assert not (env_ws / "late").exists()


async def test_history_is_per_session_and_released(kit_env):
    other = kit_env.root / "s2"
    other.mkdir()
    async with session_call(server, kit_env.workspace, "s1") as one, session_call(server, other, "s2") as two:
        ok(await one("execute_command", command="echo secret-one > mine.txt"))
        ok(await two("execute_command", command="echo two"))
        assert "secret-one" in ok(await one("get_command_history"))
        history_two = ok(await two("get_command_history", output_format="json"))
        assert "secret-one" not in history_two and len(json.loads(history_two)) == 1
        assert "No such file" in ok(await two("execute_command", command="cat ../s1/mine.txt; ls"))
        await server._session_ended(None, type("P", (), {"session_id": "s1"})())
        assert "s1" not in histories


async def test_capabilities_describe_the_sandbox(call):
    data = json.loads(ok(await call("get_terminal_capabilities")))
    assert data["sandbox"]["backend"] == "bubblewrap" and data["network"] is False


async def test_a_command_crossing_the_workspace_quota_is_stopped_and_the_session_goes_on(
    call, env_ws, workspace_quota
):
    workspace_quota(2)
    writer = "i=0; while true; do head -c 100000 /dev/zero > part$i; i=$((i+1)); done"
    out = ok(await call("execute_command", command=writer, timeout=30))
    assert "went past its quota" in out and "GAIA_WORKSPACE_MAX_MB" in out and "rm -r" in out
    held = sum(p.stat().st_size for p in env_ws.iterdir())
    assert 2 * 2**20 < held < 8 * 2**20  # stopped within a few writes of the limit
    assert "over its quota" in ok(await call("execute_command", command="echo more > more.txt"))
    assert "exit status 0" in ok(await call("execute_command", command="rm part*"))
    out = ok(await call("execute_command", command="echo fine > more.txt; cat more.txt"))
    assert "fine" in out and "quota" not in out
