"""Decompression bombs for tests, each a few kilobytes or megabytes on disk and made in milliseconds.

The office packages start as real files made by the tests with their own library (python-docx,
python-pptx, openpyxl); these functions then make one part claim, or really hold, far more than it
should.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

CHUNK = 1 << 20


def forge_sizes(path: Path, claims: dict[str, int]) -> Path:
    """Rewrite the package so each part named in `claims` declares that many bytes once inflated.

    Its bytes stay the same: the central directory lies, which is what the declared-size checks read
    (a reader that inflated it anyway would fail the CRC at the real end)."""
    parts = _parts(path)
    missing = set(claims) - {info.filename for info, _ in parts}
    assert not missing, f"no such parts in {path.name}: {sorted(missing)}"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for info, data in parts:
            archive.writestr(info.filename, data)
        for info in archive.filelist:
            if info.filename in claims:
                info.file_size = claims[info.filename]
    return path


def inflate_part(path: Path, name: str, head: bytes, unit: bytes, size: int, tail: bytes) -> Path:
    """Replace part `name` with head + unit repeated to `size` bytes + tail, really deflated."""
    parts = [(info, data) for info, data in _parts(path) if info.filename != name]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for info, data in parts:
            archive.writestr(info.filename, data)
        block = unit * max(1, CHUNK // len(unit))
        with archive.open(name, "w", force_zip64=True) as stream:
            stream.write(head)
            written = 0
            while written < size:
                piece = block[: size - written]
                stream.write(piece)
                written += len(piece)
            stream.write(tail)
    return path


def _parts(path: Path) -> list[tuple[zipfile.ZipInfo, bytes]]:
    with zipfile.ZipFile(path) as archive:
        return [(info, archive.read(info.filename)) for info in archive.infolist()]


def png_claiming(path: Path, width: int, height: int) -> Path:
    """A PNG whose header promises width x height pixels; its one tiny row of data never gets there."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack("!I", len(data)) + kind + data + struct.pack("!I", zlib.crc32(kind + data))

    header = struct.pack("!IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit greyscale
    data = zlib.compress(b"\x00" + b"\x00" * min(width, 1024))
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )
    return path


def long_line_csv(path: Path, line_bytes: int) -> Path:
    """A CSV with a header, one normal row, then one line of `line_bytes` bytes."""
    with open(path, "wb") as handle:
        handle.write(b"name,value\nfirst,1\n")
        block = b"x" * CHUNK
        written = 0
        while written < line_bytes:
            piece = block[: line_bytes - written]
            handle.write(piece)
            written += len(piece)
        handle.write(b",2\n")
    return path


def resident_mb(pid: int | str = "self") -> float:
    """A process's resident memory now, in MB."""
    with open(f"/proc/{pid}/statm") as handle:
        return int(handle.read().split()[1]) * 4096 / 2**20


WORD_BODY_HEAD = (
    b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
)
WORD_BODY_TAIL = b"</w:body></w:document>"
