"""Encoding and dialect of a delimited text file, from a sample of its first bytes."""

from __future__ import annotations

import codecs
import csv
from dataclasses import dataclass
from pathlib import Path

from gaia_kit import ToolFailure
from gaia_kit.documents.text import sniff_encoding

SAMPLE_BYTES = 64 * 1024
DELIMITERS = ",;\t|"

_NOT_CSV = (
    (b"PK\x03\x04", "an Excel workbook or other ZIP file; use the excel server for spreadsheets"),
    (b"\xd0\xcf\x11\xe0", "an old-style Excel/Office file; use the excel server for spreadsheets"),
    (b"%PDF", "a PDF document; use the documents-pdf-server"),
    (b"PAR1", "a Parquet file, not CSV"),
    (b"\x1f\x8b", "a gzip archive; decompress it first"),
)
_DELIMITER_NAMES = {
    "\\t": "\t",
    "tab": "\t",
    "\t": "\t",
    "comma": ",",
    "semicolon": ";",
    "pipe": "|",
    "space": " ",
}


@dataclass(frozen=True)
class Layout:
    encoding: str
    encoding_detected: bool
    delimiter: str
    delimiter_detected: bool
    skipinitialspace: bool
    sample_line_bytes: float
    """Average bytes per line in the sample, to size chunks."""


def detect(path: Path, raw: str, encoding: str | None, delimiter: str | None) -> Layout:
    with open(path, "rb") as handle:
        sample = handle.read(SAMPLE_BYTES)
    if not sample:
        raise ToolFailure(f"{raw} is empty; there is no table to read.")
    for magic, what in _NOT_CSV:
        if sample.startswith(magic):
            raise ToolFailure(f"{raw} is not a CSV file: it is {what}.")
    if encoding:
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise ToolFailure(
                f"Unknown encoding {encoding!r}; pass a Python codec name such as utf-8, cp1252 or latin-1, "
                "or omit encoding to detect it."
            ) from None
        chosen = encoding
    else:
        chosen = sniff_encoding(sample)
        if chosen is None:
            raise ToolFailure(f"{raw} is a binary file, not delimited text; use the server for its format.")
    # Cut the sample at its last complete line so the sniffer never sees half a row.
    text = sample.decode(chosen, errors="replace")
    if len(sample) == SAMPLE_BYTES and "\n" in text:
        text = text[: text.rindex("\n") + 1]
    lines = max(1, text.count("\n"))
    line_bytes = len(sample) / lines
    if delimiter is not None:
        chosen_delimiter = _DELIMITER_NAMES.get(delimiter.lower(), delimiter)
        if len(chosen_delimiter) != 1:
            raise ToolFailure(
                f"delimiter must be a single character such as ',', ';', '|' or '\\t', not {delimiter!r}."
            )
        return Layout(
            chosen, not encoding, chosen_delimiter, False, _spaced(text, chosen_delimiter), line_bytes
        )
    found = _sniff_delimiter(text)
    return Layout(chosen, not encoding, found, True, _spaced(text, found), line_bytes)


def _sniff_delimiter(text: str) -> str:
    try:
        return csv.Sniffer().sniff(text, delimiters=DELIMITERS).delimiter
    except csv.Error:
        pass
    # The sniffer gives up on ragged samples; fall back to the candidate seen most often on every line.
    rows = [line for line in text.splitlines()[:50] if line.strip()]
    best, best_score = ",", 0
    for candidate in DELIMITERS:
        counts = [line.count(candidate) for line in rows]
        if counts and min(counts) > 0 and sum(counts) > best_score:
            best, best_score = candidate, sum(counts)
    return best


def _spaced(text: str, delimiter: str) -> bool:
    """Whether every delimiter in the sample is followed by a space ("a, b, c")."""
    if delimiter == " ":
        return False
    sample = text[:8192]
    return sample.count(delimiter) > 0 and sample.count(delimiter) == sample.count(delimiter + " ")
