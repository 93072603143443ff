"""Listing, tree and search: breadth-first, never following links out of a directory, always bounded.

Directories are walked by descriptor: the top one opened through the path guard, each one below
opened relative to its parent with O_NOFOLLOW, so a link swapped in while walking is listed as a
link, never entered.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from gaia_kit.core.openat import open_at

MAX_LIST_ENTRIES = 10_000
MAX_TREE_ENTRIES = 2_000
MAX_SEARCH_RESULTS = 1_000
MAX_SEARCH_SCANNED = 200_000

_GLOB_CHARS = set("*?[")


def is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


def scan(directory: int, limit: int) -> tuple[list[os.DirEntry], bool]:
    """Up to `limit` entries of the open `directory`, sorted by name, and whether there were more."""
    entries: list[os.DirEntry] = []
    with os.scandir(directory) as iterator:
        for entry in iterator:
            if len(entries) >= limit:
                return sorted(entries, key=lambda e: e.name), True
            entries.append(entry)
    return sorted(entries, key=lambda e: e.name), False


def format_size(size: int) -> str:
    units = ["B", "KB", "MB", "GB", "TB"]
    if size <= 0:
        return "0 B"
    value = float(size)
    for unit in units:
        if value < 1024 or unit == units[-1]:
            return f"{size} B" if unit == "B" else f"{value:.2f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def excluded(relative: str, name: str, patterns: list[str]) -> bool:
    """Exclusion in the spirit of minimatch: a glob against the relative path or the name, or a
    plain name that matches any path component."""
    rel = relative.lower()
    low_name = name.lower()
    for raw in patterns:
        pattern = raw.strip().strip("/").lower()
        if not pattern:
            continue
        if _GLOB_CHARS & set(pattern):
            bare = pattern[3:] if pattern.startswith("**/") else pattern
            bare = bare[:-3] if bare.endswith("/**") else bare
            if fnmatchcase(rel, pattern) or fnmatchcase(rel, bare) or fnmatchcase(low_name, bare):
                return True
        elif pattern == low_name or pattern in rel.split("/") or rel.startswith(pattern + "/"):
            return True
    return False


def matches(relative: str, name: str, pattern: str) -> bool:
    """Case-insensitive: a glob when the pattern has wildcards, otherwise a substring of the name."""
    needle = pattern.lower()
    if _GLOB_CHARS & set(needle):
        target = relative.lower() if "/" in needle else name.lower()
        if needle.startswith("**/") and fnmatchcase(relative.lower(), needle[3:]):
            return True
        return fnmatchcase(target, needle)
    return needle in name.lower()


def _scan_below(root: int, relative: str, limit: int) -> tuple[list[os.DirEntry], bool]:
    """Entries of the directory at `relative` under the open `root`; no link is followed out of
    the root, and a link in last place is not entered."""
    fd = open_at(root, None, relative, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        return scan(fd, limit)
    finally:
        os.close(fd)


def _walk(root: int, exclude: list[str]) -> Iterator[tuple[os.DirEntry, str, int]]:
    """Breadth-first (entry, relative path, depth) under the open `root`; symlinked directories are
    listed, not entered."""
    queue: deque[tuple[str, int]] = deque([("", 1)])
    while queue:
        prefix, depth = queue.popleft()
        try:
            entries, _ = (
                _scan_below(root, prefix, MAX_SEARCH_SCANNED) if prefix else scan(root, MAX_SEARCH_SCANNED)
            )
        except OSError:
            continue
        for entry in entries:
            relative = f"{prefix}{entry.name}"
            if excluded(relative, entry.name, exclude):
                continue
            yield entry, relative, depth
            if is_dir(entry) and not entry.is_symlink():
                queue.append((relative + "/", depth + 1))


@dataclass
class SearchResult:
    paths: list[str] = field(default_factory=list)
    """Relative to the directory searched."""
    scanned: int = 0
    stopped: str = ""


def search(root: int, pattern: str, exclude: list[str]) -> SearchResult:
    result = SearchResult()
    for entry, relative, _ in _walk(root, exclude):
        result.scanned += 1
        if matches(relative, entry.name, pattern):
            result.paths.append(relative)
            if len(result.paths) >= MAX_SEARCH_RESULTS:
                result.stopped = f"the first {MAX_SEARCH_RESULTS} matches are shown"
                break
        if result.scanned >= MAX_SEARCH_SCANNED:
            result.stopped = f"the search stopped after looking at {MAX_SEARCH_SCANNED} entries"
            break
    return result


@dataclass
class Tree:
    children: list[dict[str, Any]]
    entries: int
    cut: bool


def tree(root: int, exclude: list[str], max_depth: int | None, max_entries: int = MAX_TREE_ENTRIES) -> Tree:
    """Breadth-first under the open `root`, so a cut tree still shows the top levels whole; a
    directory whose contents were not (all) listed carries "truncated": true."""
    top: list[dict[str, Any]] = []
    queue: deque[tuple[str, str, int, dict[str, Any] | None, list[dict[str, Any]]]] = deque(
        [("", "", 1, None, top)]
    )
    count = 0
    cut = False
    while queue:
        directory, prefix, depth, owner, children = queue.popleft()
        if count >= max_entries:
            _mark_truncated(owner)
            cut = True
            continue
        try:
            entries, more = (
                _scan_below(root, directory, MAX_LIST_ENTRIES) if directory else scan(root, MAX_LIST_ENTRIES)
            )
        except OSError:
            _mark_truncated(owner)
            continue
        for entry in entries:
            relative = prefix + entry.name
            if excluded(relative, entry.name, exclude):
                continue
            if count >= max_entries:
                more = True
                break
            node: dict[str, Any] = {"name": entry.name, "type": "directory" if is_dir(entry) else "file"}
            if node["type"] == "directory":
                node["children"] = []
                if entry.is_symlink():
                    node["symlink"] = True  # listed, not entered: links can form cycles
                elif max_depth is None or depth < max_depth:
                    queue.append((relative, relative + "/", depth + 1, node, node["children"]))
                else:
                    node["truncated"] = True
                    cut = True
            children.append(node)
            count += 1
        if more:
            _mark_truncated(owner)
            cut = True
    return Tree(children=top, entries=count, cut=cut)


def _mark_truncated(node: dict[str, Any] | None) -> None:
    if node is not None:
        node["truncated"] = True
