"""Changing the workspace: write, edit, make directories, move. Writes are atomic and renamed into
folders opened beneath the workspace."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Annotated

from gaia_kit import PathGuard, ToolFailure, atomic_write, get_settings, session_of, truncate
from gaia_kit.core.hints import hints
from gaia_kit.core.openat import parent_beneath
from gaia_kit.core.quota import make_dirs
from gaia_kit.core.tools import tool
from mcp.server.mcpserver import Context
from pydantic import Field

from . import textio, walk
from .edits import EditOperation, apply_edits, unified_diff
from .tool import PathArg


@tool(hints("Write file", read_only=False, destructive=True, idempotent=True, open_world=False))
def write_file(
    path: PathArg, content: Annotated[str, Field(description="The complete new text")], ctx: Context
) -> str:
    """Create a new file or completely overwrite an existing file with new content. Use with caution as
    it will overwrite existing files without warning. Handles text content with proper encoding (UTF-8).
    Missing parent directories are created. Only works within allowed directories."""
    target = session_of(ctx).paths.resolve(path, write=True)
    if target.is_dir():
        raise ToolFailure(f"{path} is a directory; give a file path inside it.")
    atomic_write(target, content)  # makes missing parents, within the session's disk quota
    return f"Successfully wrote to {path}"


@tool(hints("Edit file", read_only=False, destructive=True, idempotent=False, open_world=False))
def edit_file(
    path: PathArg,
    edits: Annotated[list[EditOperation], Field(description="Edits applied in order")],
    ctx: Context,
    dryRun: Annotated[bool, Field(description="Preview changes using git-style diff format")] = False,
) -> str:
    """Make line-based edits to a text file. Each edit replaces exact line sequences with new content
    (if the exact text is not found, lines are matched ignoring indentation). Returns a git-style diff
    showing the changes made. Only works within allowed directories."""
    guard = session_of(ctx).paths
    limit = get_settings().max_read_bytes
    with guard.open_file(path, write=True) as handle:
        if os.fstat(handle.fileno()).st_size > limit:
            raise ToolFailure(f"{path} is larger than {walk.format_size(limit)}, too large to edit in place.")
        encoding = textio.detect_encoding(handle, path)
        handle.seek(0)
        raw = handle.read(limit + 1)
    target = guard.resolve(path, write=True)  # where the result is placed (renamed in, beneath the workspace)
    try:
        original = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ToolFailure(
            f"{path} is not valid {encoding} throughout (byte {exc.start}); edit_file will not rewrite it."
        ) from None
    crlf = "\r\n" in original and original.count("\r\n") == original.count("\n")
    content = original.replace("\r\n", "\n")
    modified, notes = apply_edits(content, edits)
    diff = unified_diff(content, modified, guard.display(target))
    if not dryRun and modified != content:
        # Keep the file's own conventions: its encoding (BOM included) and its line endings.
        atomic_write(target, modified.replace("\n", "\r\n") if crlf else modified, encoding=encoding)
    tail = [*notes, "Dry run: nothing was written."] if dryRun else notes
    result = diff + ("\n" + "\n".join(tail) if tail else "")
    return truncate(result, get_settings().max_output_chars, note="The edit itself is complete.")


@tool(hints("Create directory", read_only=False, destructive=False, idempotent=True, open_world=False))
def create_directory(path: PathArg, ctx: Context) -> str:
    """Create a new directory or ensure a directory exists. Can create multiple nested directories in one
    operation. If the directory already exists, this operation will succeed silently. Perfect for
    setting up directory structures for projects or ensuring required paths exist. Only works within
    allowed directories."""
    target = session_of(ctx).paths.resolve(path, write=True)
    if target.exists() and not target.is_dir():
        raise ToolFailure(f"{path} already exists and is a file, so no directory can be created there.")
    make_dirs(target)
    return f"Successfully created directory {path}"


@tool(hints("Move file", read_only=False, destructive=True, idempotent=False, open_world=False))
def move_file(
    source: Annotated[str, Field(description="The file or directory to move")],
    destination: Annotated[str, Field(description="Its new path; must not exist yet")],
    ctx: Context,
) -> str:
    """Move or rename files and directories. Can move files between directories and rename them in a
    single operation. If the destination exists, the operation will fail. Works across different
    directories and can be used for simple renaming within the same directory. Both source and
    destination must be within allowed directories (and outside the read-only dataset)."""
    guard = session_of(ctx).paths
    origin, target = _unfollowed(guard, source), _unfollowed(guard, destination)
    if target.is_relative_to(origin):
        raise ToolFailure(f"Cannot move {source} into itself.")
    workspace = guard.workspace
    try:
        with (
            parent_beneath(workspace, origin.relative_to(workspace).as_posix(), create=False) as (src, name),
            parent_beneath(workspace, target.relative_to(workspace).as_posix()) as (dst, new_name),
        ):
            if not _entry_exists(src, name):
                raise ToolFailure(f"{source} does not exist; list its directory to see what is there.")
            if _entry_exists(dst, new_name):
                raise ToolFailure(
                    f"Destination already exists: {destination}. Choose another name or move it first."
                )
            # rename(2) moves the entry itself: a link is moved, not followed.
            os.rename(name, new_name, src_dir_fd=src, dst_dir_fd=dst)
    except FileNotFoundError:
        raise ToolFailure(f"{source} does not exist; list its directory to see what is there.") from None
    except OSError as exc:
        if exc.errno in (errno.EXDEV, errno.ELOOP, errno.ENOTDIR):
            raise ToolFailure(
                f"Cannot move {source} to {destination}: a folder on the way is a link out of the "
                "workspace, or a file. Use paths inside the workspace."
            ) from None
        raise
    return f"Successfully moved {source} to {destination}"


def _entry_exists(folder: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _unfollowed(guard: PathGuard, raw: str) -> Path:
    """The path itself, not what a final symlink points to: move_file moves links, not their targets.
    The parent still goes through the guard, so the result is inside a writable root."""
    guard.resolve(raw, write=True)  # every check of the guard, on the full path
    name = Path(raw.rstrip("/")).name
    if name in ("", ".", ".."):
        raise ToolFailure(f"{raw} names a directory by . or ..; give the path of the entry itself.")
    return guard.resolve(str(Path(raw.rstrip("/")).parent), write=True) / name
