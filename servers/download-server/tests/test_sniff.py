"""What the first bytes say a file is, and when a declared type disagrees."""

import pytest
from download_server.sniff import same_kind, sniff_type
from gaia_kit_testing.fake_web import PDF, PNG


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (PDF[:64], "application/pdf"),
        (PNG, "image/png"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
        (b"RIFF\x24\x00\x00\x00WAVEfmt ", "audio/wav"),
        (b"\x00\x00\x00\x18ftypmp42", "video/mp4"),
        (
            b"PK\x03\x04\x14\x00\x06\x00" + b"\x00" * 22 + b"word/document.xml",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
        (b"PK\x03\x04\x14\x00" + b"\x00" * 24 + b"data.csv", "application/zip"),
        (b"\x1f\x8b\x08\x00", "application/gzip"),
        (b"  <!DOCTYPE html><html><body>hi", "text/html"),
        (b'{"a": 1}', "application/json"),
        (b"<?xml version='1.0'?><svg xmlns='http://www.w3.org/2000/svg'/>", "image/svg+xml"),
        (b"name,age\nann,3\n", "text/plain"),
        (b"", None),
        (bytes(range(256)), None),
    ],
)
def test_types_from_the_first_bytes(head, kind):
    assert sniff_type(head) == kind


@pytest.mark.parametrize(
    ("declared", "sniffed", "agree"),
    [
        ("application/pdf", "application/pdf", True),
        ("application/octet-stream", "image/png", True),
        ("", "image/png", True),
        ("text/csv; charset=utf-8", "text/plain", True),
        ("text/plain", "image/png", False),
        ("text/html", "application/pdf", False),
    ],
)
def test_declared_and_sniffed_types(declared, sniffed, agree):
    assert same_kind(declared, sniffed) is agree
