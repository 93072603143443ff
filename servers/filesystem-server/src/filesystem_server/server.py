"""filesystem-server: read, write, edit, list and search files in the session workspace.

Every path goes through the session's guard: the workspace is read-write, the GAIA dataset is
read-only, nothing else exists. Files and directories are opened beneath their root with no link
followed out of it (the guard's open_file and open_dir), and writes are renamed into folders opened
the same way, so a link swapped in by sandboxed code between a check and an open leads nowhere.
Reads are windowed, listings and searches bounded, writes atomic.
"""

import base64
import contextlib
import errno
import json
import os
import stat as stat_module
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Literal

from gaia_kit import (
    KitServer,
    PathGuard,
    ToolFailure,
    atomic_write,
    get_settings,
    page,
    serve,
    session_of,
    truncate,
)
from gaia_kit.core.args import MaxLength
from gaia_kit.core.errors import describe_exception
from gaia_kit.core.hints import hints
from gaia_kit.core.openat import parent_beneath
from gaia_kit.core.quota import make_dirs
from gaia_kit.core.results import with_data
from mcp.server.mcpserver import Context
from mcp.types import AudioContent, CallToolResult, ImageContent
from pydantic import BaseModel, Field

from . import textio, walk
from .edits import EditOperation, apply_edits, unified_diff
from .media import media_type

server = KitServer(
    "filesystem-server",
    instructions=(
        "Files of the current session. Relative paths resolve against the session workspace, which is "
        "read-write; the GAIA dataset is read-only (list_allowed_directories shows both). Long files "
        "are read in pages: follow the start_index hint at the end of a cut result."
    ),
)

PathArg = Annotated[
    str, Field(description="File or directory path; relative paths resolve against the workspace")
]
TailLines = Annotated[
    float | None, Field(description="If provided, returns only the last N lines of the file")
]
HeadLines = Annotated[
    float | None, Field(description="If provided, returns only the first N lines of the file")
]
StartIndex = Annotated[int, Field(ge=0, description="Character offset to start reading from, for paging")]
Excludes = Annotated[list[str], Field(description="Glob patterns or names of entries to skip")]


# Structured results: the same facts as the text answers, as data.
class Entry(BaseModel):
    name: str
    type: Literal["file", "directory"]
    size: int | None = None


class Listing(BaseModel):
    entries: list[Entry]
    truncated: bool


class TreeData(BaseModel):
    tree: list[dict[str, Any]]
    truncated: bool


class Matches(BaseModel):
    paths: list[str]
    stopped: str | None = None


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


@server.tool(annotations=hints("Read text file", read_only=True, open_world=False))
def read_text_file(
    path: PathArg,
    ctx: Context,
    tail: TailLines = None,
    head: HeadLines = None,
    start_index: StartIndex = 0,
    max_length: MaxLength = None,
) -> str:
    """Read the complete contents of a file from the file system as text. Handles various text
    encodings and provides detailed error messages if the file cannot be read. Use this tool when you
    need to examine the contents of a single file. Use the 'head' parameter to read only the first N
    lines of a file, or the 'tail' parameter to read only the last N lines of a file. Operates on the
    file as text regardless of extension. Long output is cut into pages: call again with the
    start_index given at the end. Only works within allowed directories."""
    return _read_text(session_of(ctx).paths, path, head, tail, start_index, max_length)


server.add_tool(
    read_text_file,
    name="read_file",
    description="Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
    annotations=hints("Read file (deprecated)", read_only=True, open_world=False),
)


@server.tool(annotations=hints("Read media file", read_only=True, open_world=False))
def read_media_file(path: PathArg, ctx: Context) -> list[ImageContent | AudioContent]:
    """Read an image or audio file. Returns the base64 encoded data and MIME type. Only works within
    allowed directories."""
    with session_of(ctx).paths.open_file(path) as handle:
        mime = media_type(path, handle.read(16))
        if not mime.startswith(("image/", "audio/")):
            raise ToolFailure(
                f"{path} is {mime}, not an image or audio file; read text with read_text_file, and documents "
                "(PDF, DOCX, XLSX, ...) with the document server for their format."
            )
        size = os.fstat(handle.fileno()).st_size
        # Sent whole as base64: LLM APIs refuse much larger inline media anyway.
        cap = min(get_settings().max_media_bytes, get_settings().max_read_bytes)
        if size > cap:
            raise ToolFailure(
                f"{path} is {walk.format_size(size)}, over the {walk.format_size(cap)} limit for inline media; "
                "use the media-image-server or media-audio-server tools, which work on the file in place."
            )
        handle.seek(0)
        data = base64.b64encode(handle.read(cap + 1)).decode("ascii")
    if mime.startswith("image/"):
        return [ImageContent(type="image", data=data, mime_type=mime)]
    return [AudioContent(type="audio", data=data, mime_type=mime)]


@server.tool(annotations=hints("Read multiple files", read_only=True, open_world=False))
def read_multiple_files(
    paths: Annotated[list[str], Field(description="File paths to read")],
    ctx: Context,
) -> str:
    """Read the contents of multiple files simultaneously. This is more efficient than reading files one
    by one when you need to analyze or compare multiple files. Each file's content is returned with its
    path as a reference. Failed reads for individual files won't stop the entire operation. Each file
    gets an equal share of the output cap; a cut file says how to read the rest. Only works within
    allowed directories."""
    if not paths:
        raise ToolFailure("paths is empty; pass at least one file path.")
    guard = session_of(ctx).paths
    cap = get_settings().max_output_chars
    share = max(500, cap // len(paths))
    results = []
    for raw in paths:
        try:
            with guard.open_file(raw) as handle:
                encoding = textio.detect_encoding(handle, raw)
                text, more = textio.read_window(handle, encoding, 0, share)
            if more:
                text += (
                    f"\n[File cut at {len(text)} characters; read on with "
                    f"read_text_file(path={raw!r}, start_index={len(text)}).]"
                )
            results.append(f"{raw}:\n{text}\n")
        except Exception as exc:  # one unreadable file must not hide the others
            reason = (
                str(exc) if isinstance(exc, ToolFailure) else describe_exception("read_multiple_files", exc)
            )
            results.append(f"{raw}: Error - {reason}")
    return truncate("\n---\n".join(results), cap + 1_000, note="Read fewer files per call.")


@server.tool(
    annotations=hints("Write file", read_only=False, destructive=True, idempotent=True, open_world=False)
)
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


@server.tool(
    annotations=hints("Edit file", read_only=False, destructive=True, idempotent=False, open_world=False)
)
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


@server.tool(
    annotations=hints(
        "Create directory", read_only=False, destructive=False, idempotent=True, open_world=False
    )
)
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


@server.tool(annotations=hints("List directory", read_only=True, open_world=False), output=Listing)
def list_directory(path: PathArg, ctx: Context, start_index: StartIndex = 0) -> CallToolResult:
    """Get a detailed listing of all files and directories in a specified path. Results clearly
    distinguish between files and directories with [FILE] and [DIR] prefixes. This tool is essential for
    understanding directory structure and finding specific files within a directory. Only works within
    allowed directories."""
    with _open_dir(session_of(ctx).paths, path) as directory:
        entries, more = walk.scan(directory, walk.MAX_LIST_ENTRIES)
        lines = [f"{'[DIR]' if walk.is_dir(e) else '[FILE]'} {e.name}" for e in entries]
        found = [Entry(name=e.name, type="directory" if walk.is_dir(e) else "file") for e in entries]
    if more:
        lines.append(_listing_cut_note())
    text = page("\n".join(lines) if lines else f"{path} is empty.", start_index)
    return with_data(text, Listing(entries=found, truncated=more))


@server.tool(annotations=hints("List directory with sizes", read_only=True, open_world=False), output=Listing)
def list_directory_with_sizes(
    path: PathArg,
    ctx: Context,
    sortBy: Annotated[Literal["name", "size"], Field(description="Sort entries by name or size")] = "name",
    start_index: StartIndex = 0,
) -> CallToolResult:
    """Get a detailed listing of all files and directories in a specified path, including sizes. Results
    clearly distinguish between files and directories with [FILE] and [DIR] prefixes. This tool is
    useful for understanding directory structure and finding specific files within a directory. Only
    works within allowed directories."""
    rows = []
    with _open_dir(session_of(ctx).paths, path) as directory:
        entries, more = walk.scan(directory, walk.MAX_LIST_ENTRIES)
        for entry in entries:
            folder = walk.is_dir(entry)
            try:
                size = 0 if folder else entry.stat().st_size
            except OSError:
                size = 0
            rows.append((entry.name, folder, size))
    if sortBy == "size":
        rows.sort(key=lambda row: row[2], reverse=True)
    lines = [
        f"{'[DIR]' if folder else '[FILE]'} {name.ljust(30)} {'' if folder else walk.format_size(size).rjust(10)}"
        for name, folder, size in rows
    ]
    files = sum(1 for _, folder, _ in rows if not folder)
    lines += [
        "",
        f"Total: {files} files, {len(rows) - files} directories",
        f"Combined size: {walk.format_size(sum(size for _, _, size in rows))}",
    ]
    if more:
        lines.append(_listing_cut_note())
    found = [
        Entry(name=name, type="directory" if folder else "file", size=None if folder else size)
        for name, folder, size in rows
    ]
    return with_data(page("\n".join(lines), start_index), Listing(entries=found, truncated=more))


@server.tool(annotations=hints("Directory tree", read_only=True, open_world=False), output=TreeData)
def directory_tree(
    path: PathArg,
    ctx: Context,
    excludePatterns: Excludes = [],  # noqa: B006 - pydantic copies defaults; the schema shows []
    max_depth: Annotated[int | None, Field(ge=1, description="Levels to descend (default: no limit)")] = None,
    start_index: StartIndex = 0,
) -> CallToolResult:
    """Get a recursive tree view of files and directories as a JSON structure. Each entry includes 'name',
    'type' (file/directory), and 'children' for directories. Files have no children array, while
    directories always have a children array (which may be empty). The output is formatted with 2-space
    indentation for readability. Large trees are cut breadth-first: a directory whose contents were not
    listed carries "truncated": true. Only works within allowed directories."""
    with _open_dir(session_of(ctx).paths, path) as directory:
        result = walk.tree(directory, excludePatterns, max_depth)
    text = json.dumps(result.children, indent=2, ensure_ascii=False)
    if result.cut:
        text += (
            f"\n\n[Tree cut after {result.entries} entries or at max_depth; entries marked "
            '"truncated": true have more inside. Call directory_tree on a subdirectory, or pass '
            "excludePatterns, to see more.]"
        )
    return with_data(page(text, start_index), TreeData(tree=result.children, truncated=result.cut))


@server.tool(
    annotations=hints("Move file", read_only=False, destructive=True, idempotent=False, open_world=False)
)
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


@server.tool(annotations=hints("Search files", read_only=True, open_world=False), output=Matches)
def search_files(
    path: PathArg,
    pattern: Annotated[str, Field(description="Part of a name (case-insensitive), or a glob such as *.csv")],
    ctx: Context,
    excludePatterns: Excludes = [],  # noqa: B006 - pydantic copies defaults; the schema shows []
    start_index: StartIndex = 0,
) -> CallToolResult:
    """Recursively search for files and directories matching a pattern. Searches through all
    subdirectories from the starting path. The search is case-insensitive and matches partial names;
    a pattern with * ? or [ is a glob against the name (or, if it contains '/', the relative path).
    Returns full paths to all matching items. Great for finding files when you don't know their exact
    location. Only searches within allowed directories."""
    if not pattern.strip():
        raise ToolFailure("pattern is empty; pass part of a file name or a glob such as *.pdf.")
    guard = session_of(ctx).paths
    with _open_dir(guard, path) as directory:
        result = walk.search(directory, pattern, excludePatterns)
    shown = [guard.shown(os.path.join(path, found)) for found in result.paths]
    text = "\n".join(shown) or "No matches found"
    if result.stopped:
        text += f"\n\n[Search cut short: {result.stopped}. Search a subdirectory or use a narrower pattern.]"
    return with_data(page(text, start_index), Matches(paths=shown, stopped=result.stopped or None))


@server.tool(annotations=hints("Get file info", read_only=True, open_world=False), output=FileInfo)
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


@server.tool(annotations=hints("List allowed directories", read_only=True, open_world=False), output=Roots)
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


def _read_text(
    guard: PathGuard, raw: str, head: float | None, tail: float | None, start: int, max_length: int | None
) -> str:
    if head and tail:
        raise ToolFailure("Cannot specify both head and tail parameters simultaneously; pass one of them.")
    with guard.open_file(raw) as handle:
        return _read_open_text(handle, raw, head, tail, start, max_length)


def _read_open_text(
    handle: BinaryIO, raw: str, head: float | None, tail: float | None, start: int, max_length: int | None
) -> str:
    encoding = textio.detect_encoding(handle, raw)
    settings = get_settings()
    if head or tail:
        count = _line_count(head or tail, "head" if head else "tail")
        reader = textio.head_lines if head else textio.tail_lines
        text, capped = reader(handle, encoding, count, settings.max_read_bytes)
        if capped:
            text += (
                f"\n\n[Stopped after {walk.format_size(settings.max_read_bytes)}: the lines are very long. "
                "Page through the file with start_index instead.]"
            )
        return page(text, start, max_length) if text else f"[No lines: {raw} is empty.]"
    limit = min(max_length or settings.max_output_chars, settings.max_output_chars)
    text, more = textio.read_window(handle, encoding, start, limit)
    size = os.fstat(handle.fileno()).st_size
    if not text:
        if start and size:
            return f"[No more content: start_index {start} is past the end of the file.]"
        return f"[{raw} is empty.]"
    if more:
        end = start + len(text)
        text += (
            f"\n\n[Output truncated: characters {start}-{end} of a {size}-byte file. "
            f"Call again with start_index={end} to read more.]"
        )
    return text


def _line_count(value: float, name: str) -> int:
    if value < 0 or value != int(value):
        raise ToolFailure(f"{name} must be a positive whole number of lines, not {value}.")
    return int(value)


@contextlib.contextmanager
def _open_dir(guard: PathGuard, raw: str) -> Iterator[int]:
    try:
        fd = guard.open_dir(raw)
    except ToolFailure as exc:
        if "does not exist" in str(exc):
            raise ToolFailure(
                f"{raw} does not exist; call list_allowed_directories to see where to start."
            ) from None
        if "a directory was expected" in str(exc):
            raise ToolFailure(
                f"{raw} is a file, not a directory; read it with read_text_file or get_file_info."
            ) from None
        raise
    try:
        yield fd
    finally:
        os.close(fd)


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


def _listing_cut_note() -> str:
    return (
        f"[Listing stopped after {walk.MAX_LIST_ENTRIES} entries; use search_files with a pattern "
        "to find specific files.]"
    )


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def main() -> None:
    serve(server)
