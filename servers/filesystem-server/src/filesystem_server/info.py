"""What a path is (size, times, permissions, type) and which roots the session may reach."""

from __future__ import annotations

import os
import stat as stat_module
from datetime import UTC, datetime
from typing import Literal

from gaia_kit import session_of
from gaia_kit.core.hints import hints
from gaia_kit.core.results import with_data
from gaia_kit.core.tools import tool
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel

from . import walk
from .media import media_type
from .tool import PathArg


class FileInfo(BaseModel):
    path: str
    type: Literal["file", "directory", "other"]
    size: int
    created: str | None
    modified: str
    accessed: str
    changed: str
    permissions: str
    writable: bool
    mimeType: str | None = None


class Root(BaseModel):
    path: str
    writable: bool


class Roots(BaseModel):
    directories: list[Root]


@tool(hints("Get file info", read_only=True, open_world=False), output=FileInfo)
def get_file_info(path: PathArg, ctx: Context) -> CallToolResult:
    """Retrieve detailed metadata about a file or directory. Returns comprehensive information including
    size, creation time, last modified time, permissions, and type. This tool is perfect for
    understanding file characteristics without reading the actual content. Only works within allowed
    directories."""
    guard = session_of(ctx).paths
    root, _ = guard.locate(path)
    fd = guard.open_fd(path, os.O_PATH)  # stat without opening: a FIFO would block an open for reading
    try:
        info = os.fstat(fd)
        head = b""
        if stat_module.S_ISREG(info.st_mode):
            with open(os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC), "rb") as handle:
                head = handle.read(16)
    finally:
        os.close(fd)
    writable = root == guard.workspace
    birth = getattr(info, "st_birthtime", None)
    kind = (
        "directory"
        if stat_module.S_ISDIR(info.st_mode)
        else "file"
        if stat_module.S_ISREG(info.st_mode)
        else "other"
    )
    lines = {
        "path": guard.shown(path),
        "type": kind,
        "size": f"{info.st_size} ({walk.format_size(info.st_size)})",
        "created": _when(birth) if birth else "not recorded by this filesystem (see changed)",
        "modified": _when(info.st_mtime),
        "accessed": _when(info.st_atime),
        "changed": _when(info.st_ctime),
        "isDirectory": str(kind == "directory").lower(),
        "isFile": str(kind == "file").lower(),
        "permissions": oct(stat_module.S_IMODE(info.st_mode))[-3:],
        "writable": str(writable).lower(),
    }
    if kind == "file":
        lines["mimeType"] = media_type(path, head)
    data = FileInfo(
        path=lines["path"], type=kind, size=info.st_size, created=_when(birth) if birth else None,
        modified=_when(info.st_mtime), accessed=_when(info.st_atime), changed=_when(info.st_ctime),
        permissions=lines["permissions"], writable=writable,
        mimeType=lines.get("mimeType"),
    )  # fmt: skip
    return with_data("\n".join(f"{key}: {value}" for key, value in lines.items()), data)


@tool(hints("List allowed directories", read_only=True, open_world=False), output=Roots)
def list_allowed_directories(ctx: Context) -> CallToolResult:
    """Returns the list of directories that this server is allowed to access. Subdirectories within these
    allowed directories are also accessible. Use this to understand which directories and their nested
    paths are available before trying to access files."""
    guard = session_of(ctx).paths
    workspace = guard.display(guard.workspace)
    lines = ["Allowed directories:", workspace]
    notes = [f"{workspace}: the session workspace (read-write); relative paths resolve here."]
    roots = [Root(path=workspace, writable=True)]
    if guard.dataset is not None and guard.dataset.is_dir():
        shown = guard.display(guard.dataset)
        lines.append(shown)
        notes.append(f"{shown}: the GAIA dataset (read-only).")
        roots.append(Root(path=shown, writable=False))
    return with_data("\n".join([*lines, "", *notes]), Roots(directories=roots))


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")
