"""Looking around: directory listings, the tree, and search, each bounded and paged."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from gaia_kit import PathGuard, ToolFailure, page, session_of
from gaia_kit.core.hints import hints
from gaia_kit.core.results import with_data
from gaia_kit.core.tools import tool
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from . import walk
from .tool import PathArg, StartIndex

Excludes = Annotated[list[str], Field(description="Glob patterns or names of entries to skip")]


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


@tool(hints("List directory", read_only=True, open_world=False), output=Listing)
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


@tool(hints("List directory with sizes", read_only=True, open_world=False), output=Listing)
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


@tool(hints("Directory tree", read_only=True, open_world=False), output=TreeData)
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


@tool(hints("Search files", read_only=True, open_world=False), output=Matches)
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


def _listing_cut_note() -> str:
    return (
        f"[Listing stopped after {walk.MAX_LIST_ENTRIES} entries; use search_files with a pattern "
        "to find specific files.]"
    )
