"""Trees that hostile code builds in a workspace, for the tests of whatever must remove them."""

from __future__ import annotations

import os
from pathlib import Path


def build_deep_tree(folder: Path, depth: int, link_to: Path | None = None) -> None:
    """Make `folder` hold `depth` nested folders `d`, each with a file `f` and, when `link_to` is
    given, a link `l` to it. Built through descriptors: the full path is longer than PATH_MAX."""
    folder.mkdir(parents=True, exist_ok=True)
    current = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=current)
            os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=current))
            if link_to is not None:
                os.symlink(link_to, "l", dir_fd=current)
            below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=current)
            os.close(current)
            current = below
    finally:
        os.close(current)
