"""Text encodings: what a sample of bytes is, decided once for every server."""

from __future__ import annotations

import codecs

from charset_normalizer import from_bytes

BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

# Single-byte Latin code pages that a detector cannot tell apart on short samples.
_LATIN_FAMILY = {"cp1250", "cp1252", "cp1257", "latin_1", "mac_latin2", "mac_roman"} | {
    f"iso8859_{n}" for n in (1, 2, 3, 4, 9, 10, 13, 14, 15, 16)
}


def sniff_encoding(sample: bytes) -> str | None:
    """The encoding of a text sample, or None when it is not text (NUL bytes, or nothing fits)."""
    for bom, name in BOMS:
        if sample.startswith(bom):
            return name
    if b"\x00" in sample[:8192]:
        return None
    try:
        # A sample can end inside a multi-byte character; the incremental decoder allows that.
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
        return "utf-8"
    except UnicodeDecodeError:
        pass
    results = from_bytes(sample)
    best = results.best()
    if best is None:
        return None
    if best.encoding in _LATIN_FAMILY and best.encoding != "cp1252":
        # On short Western text the detector often ranks a Central European or Baltic code page first
        # (è becomes č); cp1252 is by far the most common of them, so it wins a near tie.
        for match in results:
            if "cp1252" in match.could_be_from_charset and match.chaos <= best.chaos + 0.15:
                return "cp1252"
    return best.encoding
