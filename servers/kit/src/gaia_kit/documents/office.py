"""Office Open XML files (DOCX, PPTX): what a file really is, opening it, converting a legacy one.

The Word and PowerPoint servers refuse the same wrong files with the same words, convert the
same legacy (OLE) files through LibreOffice, and save embedded images the same way; this is that
behaviour, once.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.limits import check_package
from gaia_kit.core.paths import PathGuard, atomic_write
from gaia_kit.core.quota import make_dirs
from gaia_kit.core.quota_accounting import QuotaExceeded
from gaia_kit.documents.convert import convert_with_libreoffice

OLE_MAGIC = b"\xd0\xcf\x11\xe0"
CONVERT_TIMEOUT_S = 120

T = TypeVar("T")


def describe_bytes(path: Path) -> str:
    """What a file that is not the expected format seems to be, from its first bytes."""
    with open(path, "rb") as handle:
        head = handle.read(1 << 20)  # an OLE file names its streams in the first sectors
    if not head:
        return "the file is empty"
    if head.startswith(OLE_MAGIC):
        if "EncryptedPackage".encode("utf-16-le") in head:
            return "it is password-protected (an encrypted Office file); save an unprotected copy first"
        return "it is a legacy Office (OLE) file"
    if head.startswith(b"%PDF"):
        return "it is a PDF; use the documents-pdf-server"
    if head.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html")):
        return "it is an HTML page (perhaps an error page saved under this name)"
    if head.startswith(b"PK"):
        return "it is a damaged or truncated ZIP archive"
    return f"it starts with {head[:16]!r}, which is no known document format"


def open_package(path: Path, raw: str, load: Callable[[str], T], *, kind: str, part: str, short: str) -> T:
    """load(path) for a ZIP package holding `part`, or a ToolFailure naming the file and its fault.

    kind names the format in full ("Word document"), short in the damaged-file message.
    """
    if not zipfile.is_zipfile(path):
        raise ToolFailure(f"{raw} is not a {kind}: {describe_bytes(path)}.")
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
    if part not in names:
        raise ToolFailure(
            f"{raw} is a ZIP archive but not a {kind} (it has no {part}); "
            "unpack it, or use the server for what it holds."
        )
    check_package(path, raw)  # python-docx and python-pptx load every part whole
    try:
        return load(str(path))
    except Exception as exc:
        raise ToolFailure(f"{raw} is a damaged {short} and cannot be read ({exc}).") from None


@contextmanager
def readable_copy(
    path: Path, raw: str, target_format: str, legacy_name: str
) -> Iterator[tuple[Path, list[str]]]:
    """(a file the OOXML reader can open, notes for the result), valid inside the block.

    A legacy OLE file is converted by LibreOffice into a scratch folder that lives as long as the
    block; an encrypted one is refused first, since LibreOffice would only hang on its password.
    """
    with open(path, "rb") as handle:
        legacy = handle.read(4) == OLE_MAGIC
    if not legacy:
        yield path, []
        return
    problem = describe_bytes(path)
    if "password" in problem:
        raise ToolFailure(f"{raw} cannot be read: {problem}.")
    with tempfile.TemporaryDirectory(prefix=f"gaia-{target_format}-") as scratch:
        # LibreOffice gets a private copy named as the agent named the file (it goes by the
        # suffix), never a name in the workspace that sandboxed code could turn into a link.
        private = Path(scratch) / "in" / (PurePosixPath(raw).name or "document")
        private.parent.mkdir()
        shutil.copyfile(path, private)
        converted = convert_with_libreoffice(private, target_format, Path(scratch), CONVERT_TIMEOUT_S)
        yield converted, [f"Converted from {legacy_name} with LibreOffice."]


def core_properties(core: Any) -> dict[str, str]:
    """The set core properties (title, author, ...) of a python-docx or python-pptx file."""
    values = {
        "Title": core.title,
        "Author": core.author,
        "Subject": core.subject,
        "Created": core.created.isoformat() if core.created else "",
        "Modified": core.modified.isoformat() if core.modified else "",
    }
    return {key: str(value) for key, value in values.items() if value}


class ImageFolder:
    """Saves extracted images under one workspace folder, made on the first image only.

    A document without images then leaves no empty folder behind.
    """

    def __init__(self, guard: PathGuard, relative: str) -> None:
        self._guard = guard
        self._relative = relative
        self._folder: Path | None = None

    def save(self, name: str, blob: bytes) -> str:
        """Write the image; its path as the session sees it."""
        if self._folder is None:
            self._folder = self._guard.resolve(self._relative, write=True)
            make_dirs(self._folder)  # beneath the workspace: a link on the way is refused
        target = self._folder / name
        try:
            atomic_write(target, blob)
        except QuotaExceeded as exc:
            raise QuotaExceeded(f"{exc} Or read the document with extract_images=false.") from None
        return self._guard.display(target)
