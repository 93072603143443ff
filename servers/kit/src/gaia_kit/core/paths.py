"""The one path guard: every file a tool touches is resolved here.

Allowed roots are the session workspace (read-write) and the dataset (read-only).
A path is checked twice: lexically, after joining and normalising, and again
after resolving symlinks, so neither `..` chains nor links can leave the roots.

Nothing a tool reads or writes is opened by the path `resolve` returns: between that check and
an open, sandboxed code can swap a component for a link. `open_file`, `open_dir` and `open_fd`
open the path beneath its root with no link followed out of it (gaia_kit.core.openat), and hand
the tool an open file. Writes go through gaia_kit.core.quota's `place`, which renames into a
directory opened the same way. A program that needs a path gets `local_path`: /proc/self/fd/N of
a file opened safely.

The host's own paths never go back to the agent: `display` shows a resolved path as the agent
names it (workspace files relative to the workspace, dataset files under the dataset's alias),
and `conceal` rewrites any host path of the roots inside free text (a library's error, a
command's output) the same way.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import BinaryIO

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.openat import fd_path, open_beneath, shared_fd_path
from gaia_kit.core.quota import place, staged

MAX_PATH_CHARS = 4096
MAX_NAME_BYTES = 255


class PathGuard:
    def __init__(self, workspace: Path, dataset: Path | None = None, dataset_alias: str | None = None):
        self.workspace = Path(os.path.realpath(workspace))
        self.dataset = Path(os.path.realpath(dataset)) if dataset is not None else None
        self.dataset_alias = os.path.normpath(dataset_alias) if dataset_alias else None

    @property
    def roots(self) -> list[Path]:
        return [self.workspace] + ([self.dataset] if self.dataset is not None else [])

    def describe_roots(self) -> str:
        text = "the session workspace, where relative paths resolve"
        if self.dataset is not None:
            text += f" and the read-only dataset at {self.display(self.dataset)}"
        return text

    def resolve(self, raw: str, *, write: bool = False) -> Path:
        """Return the real path for `raw`, or raise ToolFailure saying why it is refused."""
        candidate = self._lexical(raw)
        try:
            real = Path(os.path.realpath(candidate))
        except OSError:  # a link replaced by a file between realpath's lstat and its readlink
            raise ToolFailure(f"{raw} changed while it was being looked up; try again.") from None
        if write:
            if not real.is_relative_to(self.workspace):
                if self.dataset is not None and real.is_relative_to(self.dataset):
                    raise ToolFailure(f"{raw} is in the read-only dataset; write into the workspace instead.")
                raise self._outside(raw)
            return real
        if not any(real.is_relative_to(root) for root in self.roots):
            raise self._outside(raw)
        return real

    def existing_file(self, raw: str, *, write: bool = False) -> Path:
        """Resolve a file to read (or, with write, to rewrite in place): it must be a regular file.
        For naming and checks only: read it through `open_file` or `local_path`, never by this path."""
        return regular_file(self.resolve(raw, write=write), raw)

    def locate(self, raw: str, *, write: bool = False) -> tuple[Path, str]:
        """The root `raw` lies under and its path below that root, checked by name only."""
        path = self._lexical(raw)
        for root in sorted(self.roots, key=lambda root: len(root.parts), reverse=True):
            if path.is_relative_to(root):
                if write and root != self.workspace:
                    raise ToolFailure(f"{raw} is in the read-only dataset; write into the workspace instead.")
                return root, path.relative_to(root).as_posix()
        raise self._outside(raw)

    def open_fd(self, raw: str, flags: int = os.O_RDONLY, *, write: bool = False, mode: int = 0o644) -> int:
        """A descriptor for `raw` opened beneath its root, no link followed out of the allowed roots
        (with `write`, out of the workspace). The caller closes it."""
        root, relative = self.locate(raw, write=write)
        others = [] if write else [other for other in self.roots if other != root]
        try:
            return open_beneath(root, relative, flags, mode, roots=others)
        except OSError as exc:
            raise self._refusal(raw, exc) from None

    def open_file(self, raw: str, *, write: bool = False) -> BinaryIO:
        """The regular file at `raw`, open for reading (with `write`: one in the workspace, to be
        rewritten through `place`). A FIFO or device is refused without blocking."""
        fd = self.open_fd(raw, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY, write=write)
        try:
            _check_regular(os.fstat(fd).st_mode, raw)
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return os.fdopen(fd, "rb")

    def open_dir(self, raw: str, *, write: bool = False) -> int:
        """A descriptor of the directory at `raw` (list it with os.scandir(fd)); the caller closes it."""
        return self.open_fd(raw, os.O_RDONLY | os.O_DIRECTORY, write=write)

    @contextlib.contextmanager
    def local_path(self, raw: str) -> Iterator[Path]:
        """A path for a library or program that opens files by name: /proc/self/fd/N of the regular
        file at `raw`, opened safely and held open for the block. A child process sees it only if it
        inherits the descriptor (`pass_fds=(int(path.name),)`)."""
        with self.open_file(raw) as handle:
            yield fd_path(handle.fileno())

    @contextlib.contextmanager
    def program_path(self, raw: str) -> Iterator[Path]:
        """The same for a program this process starts (ffmpeg, the PDF worker, ...): the regular
        file at `raw`, opened safely and named /proc/<pid>/fd/N for the block. Programs that pick
        a format by file name need a private copy with the right suffix instead."""
        with self.open_file(raw) as handle:
            yield shared_fd_path(handle.fileno())

    def shown(self, raw: str) -> str:
        """`raw` as agents name it, without touching the file system."""
        return self.display(self._lexical(raw))

    def _refusal(self, raw: str, exc: OSError) -> ToolFailure:
        if exc.errno in (errno.EXDEV, errno.ELOOP):
            return self._outside(raw)
        if exc.errno == errno.ENOENT:
            return ToolFailure(
                f"{raw} does not exist; check the path (list its directory to see what is there)."
            )
        if exc.errno == errno.ENOTDIR:
            return ToolFailure(f"{raw} is a file, or a part of it is; a directory was expected there.")
        if exc.errno == errno.EISDIR:
            return ToolFailure(
                f"{raw} is a directory; pass a file inside it (list the directory to see its files)."
            )
        return ToolFailure(f"{raw} cannot be opened ({exc.strerror or exc}).")

    def display(self, path: Path) -> str:
        """The path as agents name it, never the host's: workspace files relative to the workspace
        (the workspace itself is `.`), dataset files under the alias agents are told. Anything else
        (no tool should show it) by its name alone."""
        path = Path(path)
        if path.is_relative_to(self.workspace):
            return path.relative_to(self.workspace).as_posix()
        if self.dataset is not None and path.is_relative_to(self.dataset):
            if not self.dataset_alias:
                return str(path)  # without an alias the host path is the agent's only name for it
            rel = path.relative_to(self.dataset)
            return self.dataset_alias if rel == Path(".") else f"{self.dataset_alias}/{rel.as_posix()}"
        return path.name

    def conceal(self, text: str) -> str:
        """`text` with every host path of the roots rewritten as `display` shows it."""
        return self._host_paths.sub(self._shown, text) if text else text

    @cached_property
    def _root_forms(self) -> list[tuple[str, Path]]:
        """Each way a root may be written on the host (as given, resolved), longest first."""
        roots = [self.workspace] + ([self.dataset] if self.dataset is not None and self.dataset_alias else [])
        forms = {(form, root) for root in roots for form in (str(root), os.path.abspath(root))}
        return sorted(forms, key=lambda pair: len(pair[0]), reverse=True)

    @cached_property
    def _host_paths(self) -> re.Pattern[str]:
        alternatives = "|".join(re.escape(form) for form, _ in self._root_forms)
        # A root matches only whole (`/data2` is not `/data`), with the rest of the path up to a separator.
        return re.compile(rf"(?:{alternatives})(?:/[^\s'\"`<>|:;,()\[\]{{}}]*)?(?![\w.-])")

    def _shown(self, match: re.Match[str]) -> str:
        found = match.group(0)
        for form, root in self._root_forms:
            if found == form or found.startswith(form + "/"):
                rest = found[len(form) :].strip("/")
                shown = self.display(root / rest if rest else root)
                return shown + "/" if found.endswith("/") else shown
        return found

    def _lexical(self, raw: str) -> Path:
        if not isinstance(raw, str) or not raw.strip():
            raise ToolFailure("The path is empty; pass a file or directory path.")
        if "\x00" in raw:
            raise ToolFailure("The path contains a NUL byte, which no file name can contain.")
        if len(raw) > MAX_PATH_CHARS:
            raise ToolFailure(f"The path is {len(raw)} characters long; the limit is {MAX_PATH_CHARS}.")
        text = os.path.expanduser(raw) if raw.startswith("~") else raw
        if self.dataset is not None and self.dataset_alias:
            norm = os.path.normpath(text)
            if norm == self.dataset_alias or norm.startswith(self.dataset_alias + os.sep):
                text = str(self.dataset) + norm[len(self.dataset_alias) :]
        joined = os.path.normpath(os.path.join(self.workspace, text))
        for part in Path(joined).parts:
            if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
                raise ToolFailure(f"A path component is longer than {MAX_NAME_BYTES} bytes: {part[:40]}...")
        path = Path(joined)
        if not any(path.is_relative_to(root) for root in self.roots):
            raise self._outside(raw)
        return path

    def _outside(self, raw: str) -> ToolFailure:
        return ToolFailure(
            f"Access denied: {raw} is outside the allowed directories ({self.describe_roots()}). "
            "Use a path inside the workspace, or a relative path."
        )


_SPECIAL = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def regular_file(path: Path, raw: str) -> Path:
    """`path` if it is a regular file; otherwise a ToolFailure that says what it is.

    Only stat is called: opening a FIFO blocks until a writer comes, and reading /dev/zero never
    ends, so what is not a regular file is refused before anything opens it.
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ToolFailure(
            f"{raw} does not exist; check the path (list its directory to see what is there)."
        ) from None
    except OSError as exc:
        raise ToolFailure(f"{raw} cannot be read ({exc.strerror or exc}).") from None
    _check_regular(mode, raw)
    return path


def _check_regular(mode: int, raw: str) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise ToolFailure(
            f"{raw} is a directory; pass a file inside it (list the directory to see its files)."
        )
    kind = next(
        (f"{name}, not a regular file" for test, name in _SPECIAL if test(mode)), "not a regular file"
    )
    raise ToolFailure(f"{raw} is {kind}; only regular files can be read.")


def free_path(folder: Path, name: str) -> Path:
    """`folder/name`, or `folder/name-1`, `-2`, ... : the first that does not exist yet."""
    target = folder / name
    stem, suffix, number = target.stem, target.suffix, 1
    while os.path.lexists(target):
        target, number = folder / f"{stem}-{number}{suffix}", number + 1
    return target


def atomic_write(path: Path, data: bytes | str, encoding: str = "utf-8") -> None:
    """Write via a temp file and rename, so a crash never leaves a half-written file.

    In a session workspace the file enters only within the session's disk quota (gaia_kit.core.quota).
    """
    payload = data.encode(encoding) if isinstance(data, str) else data
    with staged(path) as temporary:
        temporary.write_bytes(payload)
        place(temporary, path)
