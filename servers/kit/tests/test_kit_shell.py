"""gaia_kit.execution.shell: the policy and the timeout bound come before the sandbox runs anything."""

import pytest
from gaia_kit import ToolFailure
from gaia_kit.execution.shell import run_command

pytestmark = pytest.mark.anyio


async def test_refused_commands_name_the_rule(kit_env):
    with pytest.raises(ToolFailure, match="rule deny:sudo"):
        await run_command("sudo ls", workspace=kit_env.workspace, timeout=5)


async def test_timeout_must_be_within_the_maximum(kit_env):
    for timeout in (0, 10**6):
        with pytest.raises(ToolFailure, match="timeout must be between 1 and"):
            await run_command("true", workspace=kit_env.workspace, timeout=timeout)


async def test_runs_bash_in_the_given_directory(kit_env):
    (kit_env.workspace / "sub").mkdir()
    result = await run_command("pwd", workspace=kit_env.workspace, timeout=10, cwd=kit_env.workspace / "sub")
    assert result.exit_code == 0 and result.stdout.strip() == str(kit_env.workspace / "sub")
