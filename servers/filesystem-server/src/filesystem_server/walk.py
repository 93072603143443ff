"""Listing, tree and search: breadth-first, never following links out of a directory, always bounded."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

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


def scan(directory: Path, limit: int) -> tuple[list[os.DirEntry], bool]:
    """Up to `limit` entries of `directory`, sorted by name, and whether there were more."""
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


def _walk(root: Path, exclude: list[str]) -> Iterator[tuple[os.DirEntry, str, int]]:
    """Breadth-first (entry, relative path, depth); symlinked directories are listed, not entered."""
    queue: deque[tuple[Path, str, int]] = deque([(root, "", 1)])
    while queue:
        directory, prefix, depth = queue.popleft()
        try:
            entries, _ = scan(directory, MAX_SEARCH_SCANNED)
        except OSError:
            continue
        for entry in entries:
            relative = f"{prefix}{entry.name}"
            if excluded(relative, entry.name, exclude):
                continue
            yield entry, relative, depth
            if is_dir(entry) and not entry.is_symlink():
                queue.append((Path(entry.path), relative + "/", depth + 1))


@dataclass
class SearchResult:
    paths: list[Path] = field(default_factory=list)
    scanned: int = 0
    stopped: str = ""


def search(root: Path, pattern: str, exclude: list[str]) -> SearchResult:
    result = SearchResult()
    for entry, relative, _ in _walk(root, exclude):
        result.scanned += 1
        if matches(relative, entry.name, pattern):
            result.paths.append(Path(entry.path))
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


def tree(root: Path, exclude: list[str], max_depth: int | None, max_entries: int = MAX_TREE_ENTRIES) -> Tree:
    """Breadth-first, so a cut tree still shows the top levels whole; a directory whose contents
    were not (all) listed carries "truncated": true."""
    top: list[dict[str, Any]] = []
    queue: deque[tuple[Path, str, int, dict[str, Any] | None, list[dict[str, Any]]]] = deque(
        [(root, "", 1, None, top)]
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
            entries, more = scan(directory, MAX_LIST_ENTRIES)
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
                    queue.append((Path(entry.path), relative + "/", depth + 1, node, node["children"]))
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
