"""gaia_kit.core.limits: declared sizes refused before anything is inflated."""

from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import docx
import pytest
from gaia_kit import ToolFailure
from gaia_kit.core.limits import LineTooLong, check_package, check_pixels, open_line_limited
from gaia_kit.core.settings import forget_settings
from gaia_kit_testing.bombs import forge_sizes, inflate_part, long_line_csv

GB = 2**30


@pytest.fixture
def word(tmp_path: Path) -> Path:
    document = docx.Document()
    document.add_paragraph("An ordinary paragraph.")
    document.save(tmp_path / "report.docx")
    return tmp_path / "report.docx"


def test_an_ordinary_package_passes(word: Path) -> None:
    check_package(word, "report.docx")


def test_a_part_that_claims_a_gigabyte_is_refused_unread(word: Path) -> None:
    forge_sizes(word, {"word/document.xml": GB})
    assert word.stat().st_size < 100_000
    with pytest.raises(ToolFailure) as refused:
        check_package(word, "report.docx")
    message = str(refused.value)
    assert "report.docx was not opened: its part word/document.xml declares 1,024.0 MB" in message
    assert "GAIA_DOC_MAX_PART_MB" in message and "decompression bomb" in message


def test_streamed_parts_may_be_larger_but_not_inflate_a_thousandfold(word: Path, monkeypatch) -> None:
    forge_sizes(word, {"word/document.xml": 200 * 2**20})
    monkeypatch.setenv("GAIA_DOC_MAX_RATIO", str(10**9))
    check_package(word, "report.docx", streamed=lambda name: name == "word/document.xml")
    with pytest.raises(ToolFailure, match="over the 64 MB one part may hold"):
        check_package(word, "report.docx")
    monkeypatch.delenv("GAIA_DOC_MAX_RATIO")
    forget_settings()  # the limits are read once per process: read them again after each change
    inflate_part(word, "word/document.xml", b"<w:document>", b"<w:p/>", 8 * 2**20, b"</w:document>")
    with pytest.raises(ToolFailure, match=r"inflates [\d,]+ times .* over the 100 times allowed"):
        check_package(word, "report.docx")
    monkeypatch.setenv("GAIA_DOC_MAX_RATIO", "100000")
    forget_settings()
    check_package(word, "report.docx")
    monkeypatch.setenv("GAIA_DOC_MAX_RATIO", "many")
    forget_settings()
    with pytest.raises(ToolFailure, match="GAIA_DOC_MAX_RATIO is set to 'many'; set it to a number"):
        check_package(word, "report.docx")
    monkeypatch.setenv("GAIA_DOC_MAX_RATIO", "-2")
    forget_settings()
    with pytest.raises(ToolFailure, match="GAIA_DOC_MAX_RATIO is set to -2; set it to a positive number"):
        check_package(word, "report.docx")


def test_the_sum_of_the_parts_is_bounded_too(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GAIA_DOC_MAX_TOTAL_MB", "100")
    monkeypatch.setenv("GAIA_DOC_MAX_RATIO", str(10**9))  # forged parts inflate without bound
    path = tmp_path / "many.xlsx"
    with zipfile.ZipFile(path, "w") as archive:
        for number in range(3):
            archive.writestr(f"xl/media/image{number}.png", b"png")
    forge_sizes(path, {f"xl/media/image{n}.png": 40 * 2**20 for n in range(3)})
    with pytest.raises(ToolFailure, match="its parts declare 120.0 MB once inflated, over the 100 MB"):
        check_package(path, "many.xlsx")


def test_pixels_promised_by_a_header_are_checked() -> None:
    check_pixels("photo.png", (4000, 3000))
    with pytest.raises(ToolFailure, match=r"photo.png is too large to decode \(100000 x 100000 pixels\)"):
        check_pixels("photo.png", (100_000, 100_000))


def test_a_line_past_the_limit_stops_the_reader(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GAIA_MAX_LINE_MB", "1")
    normal = tmp_path / "normal.csv"
    normal.write_bytes(b"a,b\n" + b"1,2\n" * 500_000)  # 2 MB in short lines: fine
    with open_line_limited(normal, "normal.csv") as handle:
        assert sum(1 for _ in csv.reader(io.TextIOWrapper(handle, "utf-8"))) == 500_001
    # one long line split over reads: its length is carried from one read to the next
    bombed = long_line_csv(tmp_path / "long.csv", 3 * 2**20)
    with pytest.raises(LineTooLong, match=r"long.csv has a line longer than 1 MB \(GAIA_MAX_LINE_MB\)"):
        with open_line_limited(bombed, "long.csv") as handle:
            for _ in csv.reader(io.TextIOWrapper(handle, "utf-8")):
                pass
