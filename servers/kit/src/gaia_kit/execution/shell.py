"""An agent's shell command, run the one way both terminal servers run it.

The command policy decides first, the agent's timeout must lie within the operator's maximum, and
bash runs the command in the sandbox with that timeout as its wall-clock limit.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import settings
from gaia_kit.execution.policy import PolicySettings, check_command
from gaia_kit.execution.sandbox import Limits, SandboxResult, run_sandboxed


async def run_command(
    command: str, *, workspace: Path, timeout: int, cwd: Path | None = None
) -> SandboxResult:
    """Run `command` with bash in the sandbox, or raise ToolFailure naming the rule that refused it."""
    verdict = check_command(command)
    if not verdict.allowed:
        raise ToolFailure(f"Command refused: {verdict.reason}.")
    limit = settings(PolicySettings).max_timeout_s
    if timeout <= 0 or timeout > limit:
        raise ToolFailure(f"timeout must be between 1 and {limit} seconds.")
    limits = replace(Limits.from_settings(), wall_s=timeout)
    return await run_sandboxed(["bash", "-c", command], workspace=workspace, cwd=cwd, limits=limits)
