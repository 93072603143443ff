"""terminal-server: shell commands in the sandbox, in the session workspace, with per-session history."""

import json
import time
from collections import deque
from typing import Annotated, Any, Literal

from gaia_kit import KitServer, serve, session_of
from gaia_kit.core.hints import hints
from gaia_kit.core.results import json_result, with_data
from gaia_kit.core.settings import settings
from gaia_kit.execution.policy import PolicySettings
from gaia_kit.execution.sandbox import Limits, sandbox_status
from gaia_kit.execution.shell import run_command
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

HISTORY_PER_SESSION = 200

server = KitServer(
    "terminal-server",
    instructions=(
        "Runs shell commands (bash) in an isolated sandbox whose working directory is the session "
        "workspace. Python (numpy, pandas, openpyxl, matplotlib) and node are available; no network."
    ),
)
histories: dict[str, deque[dict]] = {}


@server.on_session_end
def forget(session_id: str) -> None:
    histories.pop(session_id, None)


class HistoryEntry(BaseModel):
    command: str
    timestamp: str
    exit_code: int | None
    timed_out: bool
    duration_s: float


class CommandRun(HistoryEntry):
    stdout: str
    stderr: str
    truncated: bool
    status: str
    quota: str | None = None


class History(BaseModel):
    entries: list[HistoryEntry]


# Both tools take the same output_format, so their schemas say the same thing.
FormatArg = Annotated[
    Literal["markdown", "json", "text"], Field(description="Output format: 'markdown', 'json', or 'text'")
]


@server.tool(
    annotations=hints(
        "Execute command", read_only=False, destructive=True, idempotent=False, open_world=True
    ),
    output=CommandRun,
)
async def execute_command(
    command: Annotated[str, Field(description="Terminal command to execute")],
    ctx: Context,
    timeout: Annotated[int, Field(description="Command timeout in seconds (default: 30)")] = 30,
    output_format: FormatArg = "markdown",
) -> CallToolResult:
    """Execute a terminal command with safety checks and timeout controls.

    The command runs with bash in an isolated sandbox: the session workspace is the working
    directory (read-write), the dataset is read-only, there is no network. A timeout kills every
    process the command started. Refused commands say which policy rule refused them.

    Specialized Feature:
    - Execute Python code and output the result to stdout
        - Example (Directly execute simple Python code): `python -c "nums = [1, 2, 3, 4]
    sum_of_nums = sum(nums)
    print(f'{sum_of_nums=}')"`
        - Example (Execute code from a file): `python my_script.py`
    """
    session = session_of(ctx)
    result = await run_command(command, workspace=session.workspace, timeout=timeout)
    entry = {
        "command": command,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "duration_s": round(result.duration_s, 3),
    }
    histories.setdefault(session.id, deque(maxlen=HISTORY_PER_SESSION)).append(entry)
    data = {
        **entry,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "truncated": result.truncated,
        "status": result.status(),
        **({"quota": result.quota_note} if result.quota_note else {}),
    }
    return with_data(_command_text(command, result, data, output_format), data)


def _command_text(command: str, result: Any, data: dict[str, Any], output_format: str) -> str:
    if output_format == "json":
        return json.dumps(data, ensure_ascii=False)
    if output_format == "text":
        return result.describe()
    parts = [f"**Command:** `{command}`", f"**Status:** {result.status()} ({result.duration_s:.2f} s)"]
    parts.append(
        f"**Output:**\n```\n{result.stdout.rstrip()}\n```" if result.stdout.strip() else "**Output:** (none)"
    )
    if result.stderr.strip():
        parts.append(f"**Errors:**\n```\n{result.stderr.rstrip()}\n```")
    if result.quota_note:
        parts.append(f"**Disk quota:** {result.quota_note.strip('[]')}")
    return "\n\n".join(parts)


@server.tool(annotations=hints("Command history", read_only=True, open_world=False), output=History)
def get_command_history(
    ctx: Context,
    count: Annotated[int, Field(description="Number of recent commands to return (default: 10)")] = 10,
    output_format: FormatArg = "markdown",
) -> CallToolResult:
    """Retrieve recent command execution history (this session's only)."""
    entries = list(histories.get(session_of(ctx).id, ()))[-max(0, count) :] if count > 0 else []
    return with_data(_history_text(entries, output_format), History(entries=entries))


def _history_text(entries: list[dict[str, Any]], output_format: str) -> str:
    if output_format == "json":
        return json.dumps(entries, ensure_ascii=False)
    if not entries:
        return "No commands have been executed in this session yet."
    lines = [
        f"{i}. `{e['command']}` exit={e['exit_code']}{' (timed out)' if e['timed_out'] else ''} "
        f"{e['duration_s']} s at {e['timestamp']}"
        for i, e in enumerate(entries, 1)
    ]
    return ("# Command history\n\n" if output_format == "markdown" else "") + "\n".join(lines)


@server.tool(
    annotations=hints("Terminal capabilities", read_only=True, open_world=False), output=dict[str, Any]
)
def get_terminal_capabilities() -> CallToolResult:
    """Get information about terminal service capabilities and configuration."""
    status, limits, policy = sandbox_status(), Limits.from_settings(), settings(PolicySettings)
    return json_result(
        {
            "shell": "bash",
            "sandbox": status,
            "limits": limits.__dict__,
            "max_timeout_s": policy.max_timeout_s,
            "policy": {
                "mode": policy.policy,
                "deny" if policy.policy == "denylist" else "allow": policy.deny
                if policy.policy == "denylist"
                else policy.allow,
            },
            "languages": ["python (numpy, pandas, openpyxl, matplotlib)", "bash", "node"],
            "network": status.get("notes", [""])[0].startswith("network on"),
            "history": "per session, released when the session ends",
        }
    )


def main() -> None:
    serve(server, check=sandbox_status)
