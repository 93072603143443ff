"""gaia_kit.pages.indexing: documents read from files, keyed by URL, and written into an index whole."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest
from gaia_kit.pages.indexing import Source, build_documents, file_document, url_key


@pytest.mark.parametrize(
    "url",
    [
        "https://en.wikipedia.org/wiki/Ada_Lovelace",
        "http://www.en.wikipedia.org/wiki/Ada%20Lovelace/",
        "https://EN.wikipedia.org/wiki/Ada_Lovelace#Life",
    ],
)
def test_urls_of_one_document_share_a_key(url):
    assert url_key(url) == "en.wikipedia.org/wiki/Ada_Lovelace"


def test_a_key_keeps_the_query_and_a_path_stays_as_it_is():
    assert url_key("https://example.org/search?q=x") == "example.org/search?q=x"
    assert url_key(" notes/a.md ") == "notes/a.md"


def test_a_markdown_file_is_titled_by_its_first_heading(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("intro\n\n# The Title\n\nbody")
    source = file_document(tmp_path / "notes" / "a.md", tmp_path)
    assert source is not None and (source.path, source.title) == ("notes/a.md", "The Title")
    assert source.url.startswith("file://")


def test_a_saved_web_page_answers_for_its_canonical_address(tmp_path):
    page = (
        "<html><head><title>Saved</title><link rel='canonical' href='https://example.org/saved'></head>"
        "<body><p>Saved page text.</p></body></html>"
    )
    (tmp_path / "saved.html").write_text(page)
    source = file_document(tmp_path / "saved.html", tmp_path)
    assert source is not None and source.url == "https://example.org/saved"
    assert "Saved page text." in source.text


def test_an_index_counts_what_it_skipped_and_appears_only_when_complete(tmp_path):
    documents = [
        Source("https://a.example/1", "1", "One", "first text"),
        None,
        Source("https://a.example/2", "2", "Two", "   "),
        Source("https://a.example/3", "3", "Three", "third text"),
    ]
    report = build_documents(documents, tmp_path / "i.sqlite", {"source": "test", "kind": "list"})
    assert (report.documents, report.skipped, report.kind) == (2, 2, "list")
    assert not (tmp_path / "i.sqlite.partial").exists()
    with closing(sqlite3.connect(tmp_path / "i.sqlite")) as db:
        meta = dict(db.execute("SELECT key, value FROM meta"))
        keys = [row[0] for row in db.execute("SELECT key FROM docs ORDER BY id")]
    assert (meta["documents"], meta["source"]) == ("2", "test")
    assert keys == ["a.example/1", "a.example/3"]
