"""Opening and saving workbooks: what a file really is, conversion, locking and atomic saves.

Reads open the file in openpyxl's read_only mode (rows are streamed from the zip, so memory stays
flat for any size). Edits load the whole workbook, so they are refused above a size limit.
Saves go to a temporary file in the same directory that is then renamed over the original:
a crash or a kill mid-save leaves the previous file whole.

Workbooks are read from files the path guard opened (openpyxl gets /proc/self/fd/N of one), never
by a name that sandboxed code could turn into a link meanwhile; a legacy .xls goes to LibreOffice as
a private copy; the converted copies are written into excel_converted/ through folders opened
beneath the workspace, and read back the same way.
"""

from __future__ import annotations

import contextlib
import csv
import fcntl
import hashlib
import io
import math
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO, NamedTuple
from xml.etree.ElementTree import ParseError

from gaia_kit import PathGuard, ToolFailure
from gaia_kit.core.limits import check_package, line_limited
from gaia_kit.core.openat import fd_path
from gaia_kit.core.quota import make_dirs, place, scratch, staged
from gaia_kit.core.settings import settings
from gaia_kit.documents.text import sniff_encoding
from openpyxl import Workbook, load_workbook
from openpyxl.utils.cell import range_boundaries
from openpyxl.utils.exceptions import InvalidFileException
from openpyxl.worksheet._read_only import ReadOnlyWorksheet
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

WORKBOOK_SUFFIXES = (".xlsx", ".xlsm", ".xltx", ".xltm")
CONVERTED_SUFFIXES = (".xls", ".csv", ".tsv")
CONVERTED_DIR = "excel_converted"
OLE_MAGIC = bytes.fromhex("D0CF11E0A1B11AE1")
CONVERT_TIMEOUT = 120.0


_DIMENSION = re.compile(rb'<(?:\w+:)?dimension\b[^>]*\bref="([A-Za-z]+[0-9]+(?::[A-Za-z]+[0-9]+)?)"')


def _size_from_head(sheet: ReadOnlyWorksheet) -> None:
    """Read a sheet's declared size from the head of its XML.

    openpyxl's own version, run for every sheet when a workbook is opened read_only, parses the
    whole sheet when <dimension> is missing (it waits for the end of <sheetData>): minutes for a
    200 MB workbook. <dimension> always precedes <sheetData>, so the head is enough.
    """
    with sheet._get_source() as source:
        head = source.read(1 << 16).split(b"sheetData", 1)[0]
    match = _DIMENSION.search(head)
    if match is None:
        return
    try:
        bounds = range_boundaries(match[1].decode().upper())
    except ValueError:
        return
    if None not in bounds:
        sheet._min_column, sheet._min_row, sheet._max_column, sheet._max_row = bounds


ReadOnlyWorksheet._get_size = _size_from_head


class EditSettings(BaseSettings):
    """GAIA_EXCEL_MAX_CELLS and GAIA_EXCEL_MAX_EDIT_MB; see docs/configuration.md."""

    model_config = SettingsConfigDict(env_prefix="GAIA_EXCEL_", extra="ignore", env_ignore_empty=True)

    max_cells: float = Field(20_000_000, gt=0)
    """The largest used range (rows x columns) of a sheet loaded whole, for edits and formulas."""
    max_edit_mb: float = Field(40, gt=0)
    """The largest workbook edited; reads stream and have no limit."""


def max_cells() -> int:
    """GAIA_EXCEL_MAX_CELLS: the largest used range (rows x columns) of a sheet loaded whole."""
    return int(settings(EditSettings).max_cells)


def max_edit_bytes() -> int:
    """Edits load the whole workbook (openpyxl keeps every cell as an object: ~50x the file size)."""
    return int(settings(EditSettings).max_edit_mb * 1024 * 1024)


def kind_of(handle: BinaryIO) -> str:
    """What the bytes say the open file is: xlsx (a zip), xls, encrypted, text, empty or unknown."""
    handle.seek(0)
    head = handle.read(1 << 20)
    if not head:
        return "empty"
    if head.startswith(b"PK\x03\x04"):
        return "xlsx"
    if head.startswith(OLE_MAGIC):
        # Password-protected xlsx files are OLE containers holding an EncryptionInfo stream.
        return "encrypted" if "EncryptionInfo".encode("utf-16-le") in head else "xls"
    if sniff_encoding(head[:65536]) is not None:
        return "text"
    return "unknown"


class Workfile(NamedTuple):
    path: Path
    """/proc/self/fd/N of the xlsx opened through the path guard, valid inside the `with` block."""
    converted: str | None
    """The converted copy's name as the agent sees it, when `raw` was not an xlsx itself."""


@contextlib.contextmanager
def readable(guard: PathGuard, raw: str) -> Iterator[Workfile]:
    """The xlsx to read for `raw`, open: the file itself, or its conversion in the workspace."""
    with guard.open_file(raw) as handle:
        converted = _xlsx_for(guard, handle, raw)
        if converted is None:
            yield Workfile(fd_path(handle.fileno()), None)
            return
    with guard.open_file(converted) as copy:
        yield Workfile(fd_path(copy.fileno()), converted)


def _xlsx_for(guard: PathGuard, handle: BinaryIO, raw: str) -> str | None:
    """None when the open file is an xlsx; else the converted copy's path (made if missing or stale)."""
    kind = kind_of(handle)
    name = PurePosixPath(guard.shown(raw))
    suffix = name.suffix.lower()
    if kind == "empty":
        raise ToolFailure(f"{raw} is empty (0 bytes); it holds no workbook.")
    if kind == "encrypted":
        raise ToolFailure(
            f"{raw} is password-protected; remove the password (in Excel or LibreOffice) and try again."
        )
    if kind == "xlsx":
        return None
    if kind == "xls":
        return _converted(guard, handle, name, raw, _xls_to_xlsx)
    if kind == "text" and suffix in (".csv", ".tsv", ".txt"):
        return _converted(guard, handle, name, raw, _csv_to_xlsx)
    if kind == "text":
        raise ToolFailure(
            f"{raw} is not an Excel workbook: it holds plain text; if it is CSV, rename it to .csv to read it."
        )
    raise ToolFailure(f"{raw} is not an Excel workbook (its first bytes match no spreadsheet format).")


def open_for_read(path: Path, raw: str, *, data_only: bool = True):
    """A read_only workbook; close it when done (it keeps the zip open)."""
    return _load(path, raw, read_only=True, data_only=data_only)


def open_full(path: Path, raw: str, *, data_only: bool = False, vba: bool = False):
    """The whole workbook in memory, for edits and for evaluating formulas (`vba`: keep macros)."""
    size = path.stat().st_size
    if size > max_edit_bytes():
        raise ToolFailure(
            f"{raw} is {size / 1e6:.0f} MB, too large to load whole (limit {max_edit_bytes() / 1e6:.0f} MB, "
            "set GAIA_EXCEL_MAX_EDIT_MB); read it with read_data_from_excel, which streams."
        )
    book = _load(path, raw, read_only=False, data_only=data_only, vba=vba)
    _check_used_ranges(book, raw)
    return book


def _check_used_ranges(book: Workbook, raw: str) -> None:
    """Edits and formulas walk a sheet's used range: one cell at XFD1048576 makes it 17 billion cells."""
    for sheet in book.worksheets:
        area = sheet.max_row * sheet.max_column
        if area > max_cells():
            raise ToolFailure(
                f"{raw} was not loaded: sheet '{sheet.title}' spans {sheet.dimensions} ({area:,} cells), over the "
                f"{max_cells():,} cells a sheet loaded whole may span (GAIA_EXCEL_MAX_CELLS); read it with "
                "read_data_from_excel, which streams, or move its far-away cells closer."
            )


def _streamed_part(name: str) -> bool:
    """Worksheets are streamed in read_only mode; every other part is loaded whole."""
    return name.startswith("xl/worksheets/") and name.endswith(".xml")


def _load(path: Path, raw: str, *, read_only: bool, data_only: bool, vba: bool = False):
    # A file object, not the name: openpyxl judges a name by its extension, and /proc/self/fd/N
    # has none. Opened anew each time, so two workbooks on one file never share an offset; a
    # read_only workbook keeps it open until the workbook goes.
    check_package(path, raw, streamed=_streamed_part if read_only else lambda name: False)
    handle = open(path, "rb")  # noqa: SIM115
    try:
        book = _parse(handle, raw, read_only=read_only, data_only=data_only, vba=vba)
    except BaseException:
        handle.close()
        raise
    if not read_only:
        handle.close()
    return book


def _parse(handle: BinaryIO, raw: str, *, read_only: bool, data_only: bool, vba: bool):
    try:
        return load_workbook(handle, read_only=read_only, data_only=data_only, keep_vba=vba)
    except zipfile.BadZipFile:
        raise ToolFailure(
            f"{raw} is corrupt or truncated: it is not a readable xlsx (zip) archive."
        ) from None
    except (
        KeyError,
        ParseError,
        InvalidFileException,
        ValueError,
        TypeError,
        AttributeError,
        IndexError,
    ) as exc:
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        raise ToolFailure(f"{raw} is damaged or not a valid Excel workbook ({detail}).") from None
    except (EOFError, zipfile.LargeZipFile, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ToolFailure(f"{raw} could not be read: it is truncated or damaged ({exc}).") from None


# ----------------------------------------------------------------------------- edits


@contextlib.contextmanager
def editing(guard: PathGuard, raw: str, *, create: bool = False) -> Iterator[Workbook]:
    """Load `raw` for editing under its lock, and save it atomically if the block succeeds."""
    path = guard.resolve(raw, write=True)
    suffix = path.suffix.lower()
    if suffix in CONVERTED_SUFFIXES:
        raise ToolFailure(
            f"{raw} is a {suffix} file, which this server reads but does not write; read it once with "
            f"read_data_from_excel (it is converted to {CONVERTED_DIR}/) and edit the .xlsx copy."
        )
    if suffix not in WORKBOOK_SUFFIXES:
        raise ToolFailure(f"{raw} does not end in .xlsx or .xlsm; name the workbook with one of those.")
    with workbook_lock(path):
        if path.exists():
            with readable(guard, raw) as found:  # a clear error for corrupt, encrypted or mislabelled files
                book = open_full(found.path, raw, vba=suffix in (".xlsm", ".xltm"))
        elif create:
            if not path.parent.is_dir():
                raise ToolFailure(f"The folder of {raw} does not exist; create it first.")
            book = Workbook()
        else:
            raise ToolFailure(f"{raw} does not exist; create it with create_workbook first.")
        yield book
        save_atomically(book, path)


@contextlib.contextmanager
def workbook_lock(path: Path) -> Iterator[None]:
    """Serialise writers of one workbook, across threads and replica processes alike.

    flock locks belong to an open file description, so two threads that open the lock file
    separately exclude each other just as two processes do.
    """
    folder = Path(tempfile.gettempdir()) / "gaia-env-excel-locks"
    folder.mkdir(parents=True, exist_ok=True)
    lock = folder / (hashlib.sha256(str(path).encode()).hexdigest()[:32] + ".lock")
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def save_atomically(book: Workbook, path: Path) -> None:
    """Save to a temp file, flush it to disk, then move it over `path` within the session's disk quota."""
    with staged(path) as tmp:
        book.save(tmp)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        place(tmp, path)


# ----------------------------------------------------------------------------- conversions


def _converted(guard: PathGuard, source: BinaryIO, name: PurePosixPath, raw: str, convert) -> str:
    """Convert once per source version into the workspace; later reads reuse the copy. Returns the
    copy's path as the agent names it."""
    digest = hashlib.sha256(str(name).encode()).hexdigest()[:8]
    shown = f"{CONVERTED_DIR}/{name.stem[:80]}-{digest}.xlsx"
    target = guard.workspace / shown
    changed = os.fstat(source.fileno()).st_mtime_ns
    if _fresh(guard, shown, changed):
        return shown
    make_dirs(target.parent)  # beneath the workspace: a link planted as excel_converted is refused
    with workbook_lock(target):
        # Another call may have converted it while this one waited for the lock.
        if not _fresh(guard, shown, changed):
            convert(source, name, target, raw)
    return shown


def _fresh(guard: PathGuard, shown: str, changed: int) -> bool:
    """Whether the converted copy exists, beneath the workspace, and is newer than its source."""
    try:
        fd = guard.open_fd(shown, os.O_PATH, write=True)
    except ToolFailure:
        return False
    try:
        return os.fstat(fd).st_mtime_ns >= changed
    finally:
        os.close(fd)


def _xls_to_xlsx(source: BinaryIO, name: PurePosixPath, target: Path, raw: str) -> None:
    from gaia_kit.documents.convert import convert_with_libreoffice

    with scratch(target, prefix=".convert-") as out:
        # LibreOffice gets a private copy, not a name in the workspace that could become a link.
        private = out / "in" / f"{name.stem[:80] or 'book'}.xls"
        private.parent.mkdir()
        source.seek(0)
        with open(private, "wb") as copy:
            shutil.copyfileobj(source, copy)
        produced = convert_with_libreoffice(private, "xlsx", out, CONVERT_TIMEOUT)
        place(produced, target)


def _csv_to_xlsx(source: BinaryIO, name: PurePosixPath, target: Path, raw: str) -> None:
    """Stream the CSV into a write_only workbook; numbers become numbers."""
    source.seek(0)
    sample = source.read(65536)
    encoding = sniff_encoding(sample) or "utf-8"
    text = sample.decode(encoding, errors="replace")
    try:
        dialect = csv.Sniffer().sniff(text[:16384], delimiters=",;\t|")
        delimiter = dialect.delimiter
    except csv.Error:
        delimiter = "\t" if name.suffix.lower() == ".tsv" else ","
    book = Workbook(write_only=True)
    sheet = book.create_sheet(title=_sheet_title(name.stem))
    source.seek(0)
    # the caller closes the file too; closing it twice is harmless
    with io.TextIOWrapper(
        line_limited(source, raw), encoding=encoding, errors="replace", newline=""
    ) as handle:
        for row in csv.reader(handle, delimiter=delimiter):
            sheet.append([_typed(value) for value in row])
    save_atomically(book, target)


def _typed(value: str):
    text = value.strip()
    if not text:
        return None
    if text.lstrip("+-").isdigit() and len(text) < 16:
        return int(text)
    try:
        number = float(text)
    except ValueError:
        return value
    return number if math.isfinite(number) else value


def _sheet_title(stem: str) -> str:
    cleaned = "".join("_" if ch in "[]:*?/\\" else ch for ch in stem).strip("'") or "Sheet1"
    return cleaned[:31]
