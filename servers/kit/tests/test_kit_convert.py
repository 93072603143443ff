"""convert_with_libreoffice with the real LibreOffice: round trips, concurrency, deadline, absence."""

from __future__ import annotations

import threading
from pathlib import Path

import docx
import pytest
from gaia_kit import ToolFailure
from gaia_kit.documents import convert
from gaia_kit.documents.convert import convert_with_libreoffice


def make_docx(path: Path, text: str) -> Path:
    document = docx.Document()
    document.add_paragraph(text)
    document.save(path)
    return path


def test_docx_to_doc_and_back(tmp_path: Path) -> None:
    source = make_docx(tmp_path / "note.docx", "Round trip through LibreOffice")
    legacy = convert_with_libreoffice(source, "doc", tmp_path / "doc", timeout=120)
    assert legacy == tmp_path / "doc" / "note.doc"
    assert legacy.read_bytes().startswith(b"\xd0\xcf\x11\xe0")  # the OLE2 header of a legacy .doc
    back = convert_with_libreoffice(legacy, "docx", tmp_path / "back", timeout=120)
    texts = [p.text for p in docx.Document(back).paragraphs]
    assert "Round trip through LibreOffice" in texts


def test_concurrent_conversions_do_not_share_a_profile(tmp_path: Path) -> None:
    sources = [make_docx(tmp_path / f"file{i}.docx", f"document number {i}") for i in range(3)]
    results: dict[int, Path | BaseException] = {}

    def work(i: int) -> None:
        try:
            results[i] = convert_with_libreoffice(sources[i], "pdf", tmp_path / f"out{i}", timeout=120)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            results[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for i in range(3):
        assert isinstance(results[i], Path), results[i]
        assert results[i].read_bytes().startswith(b"%PDF")


def test_deadline_stops_the_conversion(tmp_path: Path) -> None:
    source = make_docx(tmp_path / "slow.docx", "never finished")
    with pytest.raises(ToolFailure, match="longer than"):
        convert_with_libreoffice(source, "pdf", tmp_path / "out", timeout=0.05)


def test_a_file_libreoffice_cannot_load_is_a_clear_failure(tmp_path: Path) -> None:
    source = tmp_path / "gone.doc"  # LibreOffice reads almost anything as text, but not nothing
    with pytest.raises(ToolFailure, match="could not convert gone.doc"):
        convert_with_libreoffice(source, "docx", tmp_path / "out", timeout=120)


def test_missing_libreoffice_names_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(convert, "soffice_binary", lambda: None)
    with pytest.raises(ToolFailure, match="libreoffice-writer-nogui"):
        convert_with_libreoffice(tmp_path / "x.doc", "docx", tmp_path, timeout=5)
