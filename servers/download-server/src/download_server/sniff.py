"""What a file is, from its first bytes: the type a download is reported as, whatever the server said."""

from __future__ import annotations

from gaia_kit.documents.text import sniff_encoding

# (offset, magic, type); the first match wins, so longer signatures sharing a prefix come first.
SIGNATURES: list[tuple[int, bytes, str]] = [
    (0, b"%PDF-", "application/pdf"),
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (0, b"BM", "image/bmp"),
    (0, b"II*\x00", "image/tiff"),
    (0, b"MM\x00*", "image/tiff"),
    (0, b"PK\x03\x04", "application/zip"),
    (0, b"\x1f\x8b", "application/gzip"),
    (0, b"BZh", "application/x-bzip2"),
    (0, b"\xfd7zXZ\x00", "application/x-xz"),
    (0, b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (0, b"Rar!\x1a\x07", "application/vnd.rar"),
    (0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "application/x-ole-storage"),  # .doc, .xls, .ppt
    (0, b"SQLite format 3\x00", "application/vnd.sqlite3"),
    (0, b"OggS", "audio/ogg"),
    (0, b"fLaC", "audio/flac"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"\xff\xfb", "audio/mpeg"),
    (0, b"\x1aE\xdf\xa3", "video/webm"),
    (4, b"ftyp", "video/mp4"),
    (0, b"\x7fELF", "application/x-executable"),
    (0, b"MZ", "application/x-msdownload"),
    (0, b"%!PS", "application/postscript"),
]
RIFF = {b"WAVE": "audio/wav", b"WEBP": "image/webp", b"AVI ": "video/x-msvideo"}
# Zip-based office files show their kind in the entry paths near the start.
ZIP_KINDS = {
    b"word/": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    b"xl/": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    b"ppt/": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
}


def sniff_type(head: bytes) -> str | None:
    """The media type the bytes show, or None when they show none (empty, or unknown binary)."""
    if head.startswith(b"RIFF") and head[8:12] in RIFF:
        return RIFF[head[8:12]]
    for offset, magic, kind in SIGNATURES:
        if head[offset : offset + len(magic)] == magic:
            return _zip_kind(head) if kind == "application/zip" else kind
    if not head or sniff_encoding(head) is None:
        return None
    text = head.lstrip()[:256].lower()
    if text.startswith((b"<!doctype html", b"<html")) or b"<body" in text:
        return "text/html"
    if text.startswith(b"<?xml") or text.startswith(b"<svg"):
        return "image/svg+xml" if b"<svg" in head[:1024].lower() else "application/xml"
    if text[:1] in (b"{", b"["):
        return "application/json"
    return "text/plain"


def _zip_kind(head: bytes) -> str:
    return next((kind for marker, kind in ZIP_KINDS.items() if marker in head), "application/zip")


def same_kind(declared: str, sniffed: str) -> bool:
    """Whether a declared type agrees with the sniffed one (text subtypes and generic binary are lenient)."""
    declared = declared.split(";")[0].strip().lower()
    if not declared or declared in ("application/octet-stream", "binary/octet-stream"):
        return True
    if declared == sniffed:
        return True
    if sniffed == "text/plain" and (
        declared.startswith("text/") or declared.endswith(("+xml", "json", "xml"))
    ):
        return True
    if sniffed.startswith("application/vnd.openxmlformats") and declared in ("application/zip",):
        return True
    return declared.split("/")[0] == sniffed.split("/")[0] == "text"
