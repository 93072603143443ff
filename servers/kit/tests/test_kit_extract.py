import pymupdf
import pytest
from gaia_kit import ToolFailure
from gaia_kit.pages.extract import document_text, html_to_markdown, pdf_to_text, visible_text

SENTENCE = "The quick survey of lighthouse keepers found forty two of them still at work. "
ARTICLE = f"""<html><head><title>Keepers &amp; Lights</title><script>var x = 1;</script></head>
<body><nav><a href="/">Home</a></nav><article><h1>Lighthouse keepers</h1>
<p>{SENTENCE * 6}</p><p>See <a href="https://example.org/source">the source</a>.</p>
<table><tr><th>year</th><th>keepers</th></tr><tr><td>1990</td><td>42</td></tr></table>
<p>{SENTENCE * 6}</p><img src="/pic.png" alt="a lighthouse"></article><footer>(c) 2026</footer></body></html>"""


def make_pdf(pages: list[str]) -> bytes:
    document = pymupdf.open()
    for text in pages:
        document.new_page().insert_text((72, 72), text)
    return document.tobytes()


def test_html_becomes_markdown_with_links_and_tables():
    extracted = html_to_markdown(ARTICLE, "https://example.org/keepers")
    assert extracted.title == "Keepers & Lights"
    assert "# Lighthouse keepers" in extracted.text
    assert "[the source](https://example.org/source)" in extracted.text
    assert "| 1990 | 42 |" in extracted.text
    assert "var x" not in extracted.text and "pic.png" not in extracted.text


def test_images_kept_on_request_with_absolute_links():
    extracted = html_to_markdown(ARTICLE, "https://example.org/keepers", images=True)
    assert "![a lighthouse](https://example.org/pic.png)" in extracted.text


def test_tiny_page_still_gives_its_text():
    assert "just this" in html_to_markdown("<html><body><p>just this</p></body></html>").text
    assert visible_text("<style>p{}</style><p>a</p><p>b</p>") == "a \n\nb"


def test_pdf_pages_are_numbered_and_capped():
    extracted = pdf_to_text(make_pdf(["alpha page", "beta page", "gamma page"]), 2)
    assert extracted.kind == "pdf" and extracted.pages == 3
    assert "--- Page 1 ---\nalpha page" in extracted.text and "beta page" in extracted.text
    assert "gamma" not in extracted.text


def test_document_text_dispatches_on_type_and_bytes(tmp_path):
    assert document_text(make_pdf(["x marks"]), "application/octet-stream").kind == "pdf"
    assert document_text(ARTICLE.encode(), "text/html; charset=utf-8").kind == "html"
    assert document_text(b"<!DOCTYPE html><html><body><p>hi</p></body></html>", "").kind == "html"
    plain = document_text("caf\u00e9 notes".encode("latin-1"), "text/plain; charset=latin-1")
    assert plain.kind == "text" and plain.text == "caf\u00e9 notes"


def test_unreadable_inputs_fail_in_one_sentence(tmp_path):
    with pytest.raises(ToolFailure, match="not a readable PDF"):
        pdf_to_text(b"%PDF-1.4 broken", 5)
    with pytest.raises(ToolFailure, match="binary"):
        document_text(b"\x00\x01\x02" * 100, "application/zip", "https://example.org/a.zip")
