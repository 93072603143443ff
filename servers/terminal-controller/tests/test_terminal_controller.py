"""terminal-controller through the MCP protocol: cwd and files stay in the session's workspace."""

import pytest
from gaia_kit_testing import failed, ok, session_call
from gaia_kit_testing.compat import REFERENCE, compatibility_problems
from terminal_controller.server import server

pytestmark = pytest.mark.anyio


async def test_tools_match_the_reference():
    ours = {tool.name: tool for tool in await server.list_tools()}
    for tool in REFERENCE["terminal-controller"]:
        assert not compatibility_problems(tool["inputSchema"], ours[tool["name"]].input_schema), tool["name"]


async def test_cd_stays_in_the_workspace(call, kit_env):
    ws = kit_env.workspace
    (ws / "sub").mkdir()
    assert ok(await call("change_directory", path="sub")) == "Switched to directory: sub"
    assert ok(await call("get_current_directory")) == "sub"  # as relative paths name it, never the host's
    assert ok(await call("execute_command", command="pwd; touch here")).startswith("sub\n")  # no host path
    assert (ws / "sub" / "here").exists()
    assert "outside the allowed" in failed(await call("change_directory", path="../.."))
    assert "outside the allowed" in failed(await call("change_directory", path="/etc"))
    ok(await call("change_directory", path=".."))
    assert ok(await call("get_current_directory")) == "."


async def test_file_tools_edit_rows_atomically(call, kit_env):
    ok(await call("write_file", path="f.txt", content="a\nb\nc\n"))
    ok(await call("write_file", path="f.txt", content="d\n", mode="append"))
    assert ok(await call("read_file", path="f.txt", start_row=1, end_row=2)) == "b\nc\n"
    ok(await call("insert_file_content", path="f.txt", content="X", row=0))
    ok(await call("update_file_content", path="f.txt", content="B", row=2))
    ok(await call("update_file_content", path="f.txt", content="D", substring="d"))
    ok(await call("delete_file_content", path="f.txt", rows=[3]))
    assert (kit_env.workspace / "f.txt").read_text() == "X\na\nB\nD\n"
    ok(await call("delete_file_content", path="f.txt", substring="X"))
    assert "write_file with content=''" in failed(await call("delete_file_content", path="f.txt"))
    assert (kit_env.workspace / "f.txt").read_text() == "\na\nB\nD\n"
    ok(await call("write_file", path="j.json", content='{"k": [1, 2]}'))
    assert '"k": [' in ok(await call("read_file", path="j.json", as_json=True))
    assert "out of range" in failed(await call("delete_file_content", path="f.txt", row=99))
    assert "📄 f.txt" in ok(await call("list_directory"))


async def test_file_tools_refuse_escapes(call, kit_env):
    (kit_env.workspace / "root").symlink_to("/")
    assert "outside the allowed" in failed(await call("read_file", path="root/etc/passwd"))
    assert "outside the allowed" in failed(await call("write_file", path="../evil.txt", content="x"))
    assert "outside the allowed" in failed(await call("read_file", path="/etc/shadow"))
    assert not (kit_env.root / "evil.txt").exists()


async def test_sessions_do_not_share_cwd_files_or_history(kit_env):
    other = kit_env.root / "s2"
    other.mkdir()
    (kit_env.workspace / "d").mkdir()
    async with session_call(server, kit_env.workspace, "s1") as one, session_call(server, other, "s2") as two:
        ok(await one("change_directory", path="d"))
        ok(await one("execute_command", command="echo private > p.txt"))
        assert ok(await two("get_current_directory")) == "."
        assert "outside the allowed" in failed(
            await two("read_file", path=str(kit_env.workspace / "d/p.txt"))
        )
        assert "No commands" in ok(await two("get_command_history"))
        assert "echo private" in ok(await one("get_command_history"))
        await server._session_ended(None, type("P", (), {"session_id": "s1"})())
        assert ok(await one("get_current_directory")) == "."


async def test_writes_and_commands_stop_at_the_workspace_quota(call, kit_env, workspace_quota):
    workspace_quota(1, max_files=50)
    ok(await call("write_file", path="big.txt", content="a" * 900_000))
    message = failed(await call("write_file", path="big.txt", content="b" * 200_000, mode="append"))
    assert "past its quota" in message and "GAIA_WORKSPACE_MAX_MB" in message
    out = ok(await call("execute_command", command="for i in $(seq 1 200); do touch f$i; done"))
    assert "files (GAIA_WORKSPACE_MAX_FILES)" in out
    assert len(list(kit_env.workspace.iterdir())) < 200
    ok(await call("execute_command", command="rm -f f* big.txt"))
    ok(await call("write_file", path="big.txt", content="c" * 900_000))
