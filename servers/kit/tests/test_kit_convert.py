"""convert_with_libreoffice with the real LibreOffice: round trips, concurrency, deadline, absence."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

import docx
import pytest
from gaia_kit import ToolFailure
from gaia_kit.documents import convert
from gaia_kit.documents.convert import convert_with_libreoffice
from gaia_kit_testing.loopback import LoopbackServer
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


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
    with pytest.raises(ToolFailure, match="gone.doc does not exist"):
        convert_with_libreoffice(source, "docx", tmp_path / "out", timeout=120)


def test_missing_libreoffice_names_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(convert, "soffice_binary", lambda: None)
    with pytest.raises(ToolFailure, match="libreoffice-writer-nogui"):
        convert_with_libreoffice(tmp_path / "x.doc", "docx", tmp_path, timeout=5)


def test_a_doc_linking_to_a_url_makes_no_request(tmp_path: Path) -> None:
    hits: list[str] = []

    async def count(request: Request) -> Response:
        hits.append(request.url.path)
        return Response(b"", media_type="image/png")

    app = Starlette(routes=[Route("/{name}", count)])
    with LoopbackServer(app) as site:
        page = tmp_path / "linked.html"
        page.write_text(
            f'<html><body><p>Linked picture</p><img src="{site.url("/picture.png")}"></body></html>'
        )
        # The fixture is made by LibreOffice unconfined (it fetches the picture once while converting).
        made = subprocess.run(
            ["soffice", f"-env:UserInstallation={(tmp_path / 'profile').as_uri()}", "--headless"]
            + ["--convert-to", "doc:MS Word 97", "--outdir", str(tmp_path), str(page)],
            capture_output=True,
            timeout=120,
        )
        assert made.returncode == 0 and (tmp_path / "linked.doc").read_bytes()[:4] == b"\xd0\xcf\x11\xe0"
        assert hits, "the listener saw the unconfined conversion's request"
        hits.clear()
        converted = convert_with_libreoffice(tmp_path / "linked.doc", "docx", tmp_path / "out", timeout=120)
        texts = [p.text for p in docx.Document(converted).paragraphs]
        assert "Linked picture" in texts and hits == []
