"""terminal-controller: commands in the sandbox plus line-level file editing, per-session cwd and history.

The working directory belongs to the session and never leaves its workspace: it is kept as the
agent names it and opened beneath the workspace each time it is used, so a cwd that sandboxed code
later turns into a link out of the workspace is dropped, never listed. Every file tool opens its
file through the kit's path guard (relative paths resolve against the session cwd), with no link
followed out; writes are atomic.
"""

import json
import os
import time
from collections import deque
from pathlib import Path

from gaia_kit import KitServer, ToolFailure, atomic_write, get_settings, serve, session_of
from gaia_kit.core.hints import hints
from gaia_kit.core.session import Session
from gaia_kit.execution.sandbox import sandbox_status
from gaia_kit.execution.shell import run_command
from mcp.server.mcpserver import Context

server = KitServer(
    "terminal-controller",
    instructions=(
        "Runs shell commands in an isolated sandbox and edits files line by line, inside the session "
        "workspace. Rows are 0-based. change_directory moves the session's working directory."
    ),
)
cwds: dict[str, str] = {}
"""Each session's working directory as the agent names it, relative to the workspace."""
histories: dict[str, deque[str]] = {}


@server.on_session_end
def forget(session_id: str) -> None:
    cwds.pop(session_id, None)
    histories.pop(session_id, None)


def _cwd(session: Session) -> str:
    """The session's cwd if it is still a directory beneath the workspace, else the workspace (".")."""
    cwd = cwds.get(session.id, ".")
    if cwd != ".":
        try:
            os.close(session.paths.open_dir(cwd, write=True))
        except ToolFailure:
            cwds.pop(session.id, None)
            return "."
    return cwd


def _joined(session: Session, path: str) -> str:
    """Relative paths start at the session's cwd, named as the agent sees it (so a refusal shows no
    host path); the guard decides."""
    cwd = _cwd(session)
    return path if cwd == "." else os.path.join(cwd, path)


def _resolve(session: Session, path: str, *, write: bool = False) -> Path:
    """Where a result is placed (writes rename into a folder opened beneath the workspace)."""
    return session.paths.resolve(_joined(session, path), write=write)


def _lines(session: Session, path: str, *, write: bool = False) -> list[str]:
    with session.paths.open_file(_joined(session, path), write=write) as handle:
        if os.fstat(handle.fileno()).st_size > get_settings().max_read_bytes:
            raise ToolFailure(
                f"{path} is larger than GAIA_MAX_READ_BYTES; use execute_command with head/sed."
            )
        data = handle.read()
    return data.decode("utf-8", errors="replace").splitlines(keepends=True)


def _rows(row: int | None, rows: list[int] | None, count: int, *, allow_end: bool = False) -> list[int]:
    chosen = ([row] if row is not None else []) + list(rows or [])
    limit = count + 1 if allow_end else count
    bad = [r for r in chosen if not isinstance(r, int) or r < 0 or r >= limit]
    if bad:
        raise ToolFailure(f"Row(s) {bad} are out of range: the file has {count} rows (0-based).")
    return sorted(set(chosen))


def _replace_in_rows(lines: list[str], chosen: list[int], old: str, new: str) -> int:
    """Replace `old` by `new` in the chosen rows, in place; how many occurrences there were."""
    hits = sum(lines[i].count(old) for i in chosen)
    for i in chosen:
        lines[i] = lines[i].replace(old, new)
    return hits


def _save(target: Path, lines: list[str], message: str, shown: str) -> str:
    atomic_write(target, "".join(lines))
    return f"{message} of {shown}"


@server.tool(
    annotations=hints("Execute command", read_only=False, destructive=True, idempotent=False, open_world=True)
)
async def execute_command(command: str, ctx: Context, timeout: int = 30) -> str:
    """Execute terminal command and return results

    Args:
        command: Command line command to execute
        timeout: Command timeout in seconds, default is 30 seconds

    Returns:
        Output of the command execution
    """
    session = session_of(ctx)
    cwd = session.workspace / _cwd(session)  # entered inside the sandbox, which shows only the workspace
    result = await run_command(command, workspace=session.workspace, timeout=timeout, cwd=cwd)
    history = histories.setdefault(session.id, deque(maxlen=200))
    history.append(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{result.status()}] {command}")
    return result.describe()


@server.tool(annotations=hints("Command history", read_only=True, open_world=False))
def get_command_history(ctx: Context, count: int = 10) -> str:
    """Get recent command execution history

    Args:
        count: Number of recent commands to return

    Returns:
        Formatted command history record
    """
    entries = list(histories.get(session_of(ctx).id, ()))
    entries = entries[-count:] if count > 0 else []
    return "\n".join(entries) if entries else "No commands have been executed in this session yet."


@server.tool(annotations=hints("Current directory", read_only=True, open_world=False))
def get_current_directory(ctx: Context) -> str:
    """Get current working directory

    Returns:
        Path of current working directory
    """
    return _cwd(session_of(ctx))


@server.tool(
    annotations=hints(
        "Change directory", read_only=False, destructive=False, idempotent=True, open_world=False
    )
)
def change_directory(path: str, ctx: Context) -> str:
    """Change current working directory

    Args:
        path: Directory path to switch to

    Returns:
        Operation result information
    """
    session = session_of(ctx)
    joined = _joined(session, path)
    try:
        os.close(session.paths.open_dir(joined, write=True))
    except ToolFailure as exc:
        if "outside" in str(exc) or "read-only" in str(exc):
            raise
        raise ToolFailure(f"{path} is not a directory; list_directory shows what exists.") from None
    shown = session.paths.shown(joined)
    cwds[session.id] = shown
    return f"Switched to directory: {shown}"


@server.tool(annotations=hints("List directory", read_only=True, open_world=False))
def list_directory(ctx: Context, path: str | None = None) -> str:
    """List files and subdirectories in the specified directory

    Args:
        path: Directory path to list contents, default is current directory

    Returns:
        List of directory contents
    """
    session = session_of(ctx)
    joined = _joined(session, path) if path else _cwd(session)
    try:
        fd = session.paths.open_dir(joined)
    except ToolFailure as exc:
        if "outside" in str(exc):
            raise
        raise ToolFailure(f"{path} is not a directory.") from None
    try:
        with os.scandir(fd) as found:
            listed = [(entry.name, entry.is_dir(follow_symlinks=False), entry) for entry in found]
        entries = sorted(listed, key=lambda item: (not item[1], item[0]))
        shown = session.paths.shown(joined)
        if not entries:
            return f"{shown} is empty."
        lines = [f"Contents of {shown}:"]
        for name, folder, entry in entries[:1000]:
            lines.append(
                f"📁 {name}/" if folder else f"📄 {name} ({entry.stat(follow_symlinks=False).st_size} bytes)"
            )
    finally:
        os.close(fd)
    if len(entries) > 1000:
        lines.append(
            f"... and {len(entries) - 1000} more; narrow the listing with execute_command (ls | head)."
        )
    return "\n".join(lines)


@server.tool(
    annotations=hints("Write file", read_only=False, destructive=True, idempotent=False, open_world=False)
)
def write_file(path: str, content: str, ctx: Context, mode: str = "overwrite") -> str:
    """Write content to a file

    Args:
        path: Path to the file
        content: Content to write (string or JSON object)
        mode: Write mode ('overwrite' or 'append')

    Returns:
        Operation result information
    """
    if mode not in ("overwrite", "append"):
        raise ToolFailure("mode must be 'overwrite' or 'append'.")
    session = session_of(ctx)
    target = _resolve(session, path, write=True)
    old = "".join(_lines(session, path, write=True)) if mode == "append" and target.exists() else ""
    atomic_write(target, old + content)  # makes missing folders beneath the workspace
    return f"{'Appended' if old else 'Wrote'} {len(content)} characters to {path}"


@server.tool(annotations=hints("Read file", read_only=True, open_world=False))
def read_file(
    path: str, ctx: Context, start_row: int | None = None, end_row: int | None = None, as_json: bool = False
) -> str:
    """Read content from a file with optional row selection

    Args:
        path: Path to the file
        start_row: Starting row to read from (0-based, optional)
        end_row: Ending row to read to (0-based, inclusive, optional)
        as_json: If True, attempt to parse file content as JSON (optional)

    Returns:
        File content or selected lines, optionally parsed as JSON
    """
    lines = _lines(session_of(ctx), path)
    start = start_row or 0
    end = len(lines) - 1 if end_row is None else end_row
    if start < 0 or (lines and start >= len(lines)) or end < start:
        raise ToolFailure(f"Rows {start}..{end} are not in the file, which has {len(lines)} rows (0-based).")
    text = "".join(lines[start : end + 1])
    if as_json:
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except json.JSONDecodeError as exc:
            raise ToolFailure(
                f"The selected content is not valid JSON ({exc}); read it with as_json=false."
            ) from None
    cap = get_settings().max_output_chars
    if len(text) > cap:
        return (
            f"{text[:cap]}\n\n[Output truncated at {cap} characters; read fewer rows with start_row/end_row.]"
        )
    return text


@server.tool(
    annotations=hints(
        "Insert file content", read_only=False, destructive=False, idempotent=False, open_world=False
    )
)
def insert_file_content(
    path: str, content: str, ctx: Context, row: int | None = None, rows: list[int] | None = None
) -> str:
    """Insert content at specific row(s) in a file

    Args:
        path: Path to the file
        content: Content to insert (string or JSON object)
        row: Row number to insert at (0-based, optional)
        rows: List of row numbers to insert at (0-based, optional)

    Returns:
        Operation result information
    """
    session = session_of(ctx)
    target = _resolve(session, path, write=True)
    lines = _lines(session, path, write=True) if target.exists() else []
    chosen = _rows(row, rows, len(lines), allow_end=True) or [len(lines)]
    piece = content if content.endswith("\n") else content + "\n"
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    for index in reversed(chosen):
        lines.insert(index, piece)
    return _save(target, lines, f"Inserted content at row(s) {chosen}", path)


@server.tool(
    annotations=hints(
        "Delete file content", read_only=False, destructive=True, idempotent=False, open_world=False
    )
)
def delete_file_content(
    path: str,
    ctx: Context,
    row: int | None = None,
    rows: list[int] | None = None,
    substring: str | None = None,
) -> str:
    """Delete content at specific row(s) from a file

    Args:
        path: Path to the file
        row: Row number to delete (0-based, optional)
        rows: List of row numbers to delete (0-based, optional)
        substring: If provided, only delete this substring within the specified row(s), not the entire row (optional)

    Returns:
        Operation result information
    """
    if row is None and not rows and not substring:
        raise ToolFailure(
            "Nothing to delete: pass row, rows or substring. To empty a file on purpose, "
            "use write_file with content='' and mode='overwrite'."
        )
    session = session_of(ctx)
    target = _resolve(session, path, write=True)
    lines = _lines(session, path, write=True)
    chosen = _rows(row, rows, len(lines)) or list(range(len(lines)))
    if substring:
        hits = _replace_in_rows(lines, chosen, substring, "")
        message = f"Deleted {hits} occurrence(s) of the substring in row(s) {chosen}"
    else:
        lines = [line for i, line in enumerate(lines) if i not in set(chosen)]
        message = f"Deleted row(s) {chosen}"
    return _save(target, lines, message, path)


@server.tool(
    annotations=hints(
        "Update file content", read_only=False, destructive=True, idempotent=True, open_world=False
    )
)
def update_file_content(
    path: str,
    content: str,
    ctx: Context,
    row: int | None = None,
    rows: list[int] | None = None,
    substring: str | None = None,
) -> str:
    """Update content at specific row(s) in a file

    Args:
        path: Path to the file
        content: New content to place at the specified row(s)
        row: Row number to update (0-based, optional)
        rows: List of row numbers to update (0-based, optional)
        substring: If provided, only replace this substring within the specified row(s), not the entire row

    Returns:
        Operation result information
    """
    session = session_of(ctx)
    target = _resolve(session, path, write=True)
    lines = _lines(session, path, write=True)
    chosen = _rows(row, rows, len(lines))
    if not chosen and not substring:
        raise ToolFailure("Pass row or rows to replace, or substring to replace within every row.")
    chosen = chosen or list(range(len(lines)))
    if substring:
        hits = _replace_in_rows(lines, chosen, substring, content)
        if not hits:  # nothing was replaced, and nothing is written
            raise ToolFailure(f"The substring was not found in row(s) {chosen}; nothing was changed.")
        message = f"Replaced {hits} occurrence(s) in row(s) {chosen}"
    else:
        for i in chosen:
            ending = "\n" if lines[i].endswith("\n") else ""
            lines[i] = content.rstrip("\n") + ending
        message = f"Updated row(s) {chosen}"
    return _save(target, lines, message, path)


def main() -> None:
    serve(server, check=sandbox_status)
