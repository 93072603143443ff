"""gaia_kit.pages.corpus: the offline index built from a folder of documents and from a ZIM, searched and read."""

from __future__ import annotations

import sqlite3

import pymupdf
import pytest
from gaia_kit import ToolFailure
from gaia_kit.core.settings import forget_settings
from gaia_kit.pages.corpus import Corpus, configured_corpus, query_terms
from gaia_kit.pages.indexing import build
from gaia_kit_testing.fake_search import write_zim

ARTICLES = {
    "Python (programming language)": (
        "<html><head><title>Python (programming language)</title></head><body><h1>Python</h1>"
        "<p>Python is a high-level programming language created by <a href='Guido_van_Rossum'>Guido van "
        "Rossum</a>. It was first released in 1991 and is named after Monty Python.</p></body></html>"
    ),
    "Guido van Rossum": (
        "<html><head><title>Guido van Rossum</title></head><body><p>Guido van Rossum is a Dutch "
        "programmer, the creator of the Python language. He was born in Haarlem.</p></body></html>"
    ),
}


def write_folder(folder):
    (folder / "sub").mkdir(parents=True)
    (folder / "page.html").write_text(
        "<html><head><title>Eiffel Tower</title><link rel='canonical' href='https://example.org/eiffel'>"
        "</head><body><nav>Home</nav><article><p>The Eiffel Tower is a wrought-iron lattice tower in "
        "Paris, 330 metres tall, completed in 1889.</p></article></body></html>"
    )
    (folder / "notes.md").write_text("# Penguins\n\nEmperor penguins breed during the Antarctic winter.\n")
    (folder / "sub" / "plain.txt").write_text("Saturn has 146 confirmed moons; Titan is the largest.\n")
    document = pymupdf.open()
    document.new_page().insert_text((72, 72), "Quarterly revenue of the zeppelin company grew 12 percent.")
    document.save(folder / "report.pdf")
    (folder / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(32))  # not a document: skipped


@pytest.fixture
def folder_corpus(tmp_path):
    write_folder(tmp_path / "docs")
    report = build(tmp_path / "docs", tmp_path / "index.sqlite")
    assert (report.kind, report.documents) == ("folder", 4)
    return Corpus.open(report.path)


@pytest.fixture
def zim_corpus(tmp_path):
    zim = write_zim(tmp_path / "wiki.zim", ARTICLES, redirects={"Python": "Python (programming language)"})
    report = build(zim, tmp_path / "wiki.sqlite")
    assert (report.kind, report.documents) == ("zim", 2)  # the redirect is not a document
    return Corpus.open(report.path)


def test_a_folder_is_indexed_by_kind_and_searched(folder_corpus, tmp_path):
    (top,) = folder_corpus.search("wrought iron Paris", 5)
    assert top.title == "Eiffel Tower" and top.url == "https://example.org/eiffel" and top.score > 0
    assert "**Paris**" in top.snippet
    assert folder_corpus.search("emperor penguins", 5)[0].title == "Penguins"
    assert folder_corpus.search("titan moons", 5)[0].title == "plain"
    pdf = folder_corpus.search("zeppelin revenue", 5)[0]
    assert pdf.url == (tmp_path / "docs" / "report.pdf").resolve().as_uri()


def test_documents_are_read_by_url_path_or_title(folder_corpus, tmp_path):
    assert "330 metres" in folder_corpus.read("http://www.example.org/eiffel/#history").text
    assert folder_corpus.read("sub/plain.txt").title == "plain"
    assert folder_corpus.read("penguins").path == "notes.md"
    assert "zeppelin" in folder_corpus.read((tmp_path / "docs" / "report.pdf").as_uri()).text
    assert folder_corpus.read("https://example.org/elsewhere") is None
    assert folder_corpus.read("  ") is None


def test_words_in_any_document_answer_when_no_document_has_all(folder_corpus):
    titles = {hit.title for hit in folder_corpus.search("penguins saturn", 5)}
    assert titles == {"Penguins", "plain"}


@pytest.mark.parametrize(
    "query",
    ['"', "AND", "OR NOT", "NEAR(a b)", "title:paris", "*", "paris*", "(", "a\x00b", "'; DROP TABLE docs; --",
     "^tower", "-paris", "{title text}: tower", "", "   ", "ÉIFFEL tówer", "x" * 5000, "tower " * 100],
)  # fmt: skip
def test_fts_syntax_in_a_query_never_fails(folder_corpus, query):
    hits = folder_corpus.search(query, 5)
    assert all(hit.title for hit in hits)


def test_a_query_is_only_ever_quoted_words():
    assert query_terms('NEAR(x "y") OR title:z*') == ['"near"', '"x"', '"y"', '"or"', '"title"', '"z"']


def test_a_zim_is_indexed_with_wikipedia_urls_and_its_metadata(zim_corpus):
    (top,) = zim_corpus.search("dutch programmer haarlem", 5)
    assert top.title == "Guido van Rossum" and top.url == "https://en.wikipedia.org/wiki/Guido_van_Rossum"
    article = zim_corpus.read("https://en.wikipedia.org/wiki/Python_(programming_language)")
    assert article.title == "Python (programming language)" and "released in 1991" in article.text
    assert zim_corpus.read("Guido van Rossum").path == "Guido_van_Rossum"
    stats = zim_corpus.stats()
    assert stats["documents"] == 2 and stats["kind"] == "zim"
    assert stats["zim_metadata"]["Name"] == "wikipedia_en_test_2024-01"


def test_a_rebuild_replaces_the_index_whole(tmp_path, folder_corpus):
    (tmp_path / "docs" / "notes.md").unlink()
    build(tmp_path / "docs", tmp_path / "index.sqlite")
    assert Corpus.open(tmp_path / "index.sqlite").read("notes.md") is None
    assert not (tmp_path / "index.sqlite.partial").exists()


def test_bad_sources_and_indexes_say_what_to_do(tmp_path, monkeypatch):
    with pytest.raises(ToolFailure, match="neither a folder nor a .zim"):
        build(tmp_path / "missing", tmp_path / "x.sqlite")
    (tmp_path / "broken.zim").write_bytes(b"not a zim")
    with pytest.raises(ToolFailure, match="not a readable ZIM"):
        build(tmp_path / "broken.zim", tmp_path / "x.sqlite")
    with pytest.raises(ToolFailure, match="gaia-env corpus build"):
        Corpus.open(tmp_path / "none.sqlite")
    sqlite3.connect(tmp_path / "other.sqlite").execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(ToolFailure, match="not an offline index"):
        Corpus.open(tmp_path / "other.sqlite")
    monkeypatch.delenv("GAIA_CORPUS_PATH", raising=False)
    assert configured_corpus() is None
    monkeypatch.setenv("GAIA_CORPUS_PATH", str(tmp_path / "none.sqlite"))
    forget_settings()  # read once per process: read it again
    with pytest.raises(ToolFailure, match="GAIA_CORPUS_PATH"):
        configured_corpus()


def test_a_query_broader_than_the_rank_cap_puts_title_matches_first(tmp_path, monkeypatch):
    from gaia_kit.pages import corpus as corpus_module

    (tmp_path / "many").mkdir()
    for n in range(8):
        (tmp_path / "many" / f"{n}.txt").write_text(f"Document {n} mentions the river once.")
    (tmp_path / "many" / "z.md").write_text("# River\n\nA river is a natural stream of water.")
    index = build(tmp_path / "many", tmp_path / "many.sqlite").path
    monkeypatch.setattr(corpus_module, "RANK_CAP", 3)
    hits = Corpus.open(index).search("river", 3)  # z.md is indexed last: past the first 3 matches
    assert hits[0].title == "River" and len({hit.url for hit in hits}) == 3


def test_worker_processes_build_the_same_index(tmp_path):
    write_folder(tmp_path / "docs")
    zim = write_zim(tmp_path / "wiki.zim", ARTICLES, redirects={"Python": "Python (programming language)"})
    for source in (tmp_path / "docs", zim):
        one = Corpus.open(build(source, tmp_path / "one.sqlite", jobs=1).path)
        two = Corpus.open(build(source, tmp_path / "two.sqlite", jobs=2).path)
        rows = "SELECT url, path, title, text FROM docs ORDER BY id"
        assert one._db().execute(rows).fetchall() == two._db().execute(rows).fetchall()
