"""gaia_kit.documents.office and gaia_kit.documents.markdown: telling files apart, opening packages, images, tables."""

from __future__ import annotations

import zipfile
from pathlib import Path

import docx
import pytest
from gaia_kit import PathGuard, ToolFailure
from gaia_kit.documents.markdown import markdown_table
from gaia_kit.documents.office import ImageFolder, describe_bytes, open_package, readable_copy


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "empty"),
        (b"\xd0\xcf\x11\xe0" + "EncryptedPackage".encode("utf-16-le"), "password-protected"),
        (b"\xd0\xcf\x11\xe0rest", "legacy Office (OLE)"),
        (b"%PDF-1.7", "use the documents-pdf-server"),
        (b"  <!DOCTYPE html><html>", "HTML page"),
        (b"PK\x03\x04cut", "damaged or truncated ZIP"),
        (b"GIF89a", "no known document format"),
    ],
)
def test_describe_bytes(tmp_path: Path, content: bytes, expected: str) -> None:
    (tmp_path / "f").write_bytes(content)
    assert expected in describe_bytes(tmp_path / "f")


def open_word(path: Path) -> object:
    return open_package(
        path, "f.docx", docx.Document, kind="Word document", part="word/document.xml", short="doc"
    )


def test_open_package_names_what_is_wrong(tmp_path: Path) -> None:
    (tmp_path / "f.docx").write_bytes(b"%PDF-1.7")
    with pytest.raises(ToolFailure, match="f.docx is not a Word document: it is a PDF"):
        open_word(tmp_path / "f.docx")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as archive:
        archive.writestr("readme.txt", "hi")
    with pytest.raises(ToolFailure, match="it has no word/document.xml"):
        open_word(tmp_path / "other.zip")
    with zipfile.ZipFile(tmp_path / "broken.docx", "w") as archive:
        archive.writestr("word/document.xml", "<not xml")
    with pytest.raises(ToolFailure, match="is a damaged doc and cannot be read"):
        open_word(tmp_path / "broken.docx")


def test_open_package_and_readable_copy_of_a_modern_file(tmp_path: Path) -> None:
    path = tmp_path / "ok.docx"
    document = docx.Document()
    document.add_paragraph("hello")
    document.save(path)
    with readable_copy(path, "ok.docx", "docx", "legacy Word (.doc)") as (readable, notes):
        assert (readable, notes) == (path, [])  # nothing to convert
    assert [p.text for p in open_word(path).paragraphs] == ["hello"]


def test_readable_copy_refuses_an_encrypted_file(tmp_path: Path) -> None:
    path = tmp_path / "locked.docx"
    path.write_bytes(b"\xd0\xcf\x11\xe0" + "EncryptedPackage".encode("utf-16-le"))
    with pytest.raises(ToolFailure, match="locked.docx cannot be read: it is password-protected"):
        with readable_copy(path, "locked.docx", "docx", "legacy Word (.doc)"):
            pass


def test_image_folder_is_made_on_the_first_image_only(tmp_path: Path) -> None:
    guard = PathGuard(tmp_path)
    folder = ImageFolder(guard, "docx_images/report")
    assert not (tmp_path / "docx_images").exists()
    shown = folder.save("a.png", b"png bytes")
    assert (tmp_path / "docx_images" / "report" / "a.png").read_bytes() == b"png bytes"
    assert shown == guard.display(tmp_path / "docx_images" / "report" / "a.png")


def test_markdown_table_pads_and_escapes() -> None:
    assert markdown_table([]) == ""
    assert markdown_table([["a", "b"], ["x|y"], ["line\nbreak", "z"]]) == "\n".join(
        ["| a | b |", "|---|---|", "| x\\|y |  |", "| line<br>break | z |"]
    )
