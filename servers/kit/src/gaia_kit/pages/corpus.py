"""The offline local index: documents or a Kiwix ZIM in one SQLite FTS5 file, ranked by BM25.

    build(folder_or_zim, index_path)        # streaming, batched; the file appears only when complete
    corpus = Corpus.open(index_path)
    corpus.search("who wrote hamlet", 10)   # -> [Hit(title, url, snippet, score)]
    corpus.read(url_or_title)               # -> Document | None

`configured_corpus()` is the index named by GAIA_CORPUS_PATH (None when unset): web search,
page reading and wiki-server answer from it with no network at all. This module reads an index;
gaia_kit.pages.indexing builds one (its `build` is offered here too), gaia_kit.pages.zim reads
Kiwix files.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from contextlib import closing
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote

from pydantic_settings import BaseSettings, SettingsConfigDict

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import cache_dir, settings
from gaia_kit.pages.indexing import BuildReport, Source, build, build_documents, url_key

# The offline index's door: read it here, and build it with the same import.
__all__ = [
    "CORPUS_ENV",
    "BuildReport",
    "Corpus",
    "Document",
    "Hit",
    "Source",
    "build",
    "build_documents",
    "configured_corpus",
    "configured_path",
    "default_index_path",
    "query_terms",
]

CORPUS_ENV = "GAIA_CORPUS_PATH"
MAX_QUERY_TERMS = 16
RANK_CAP = 2000  # matches ranked in full; a broader query is ranked by title, then its first matches


class CorpusSettings(BaseSettings):
    """GAIA_CORPUS_PATH; see docs/configuration.md."""

    model_config = SettingsConfigDict(env_prefix="GAIA_", extra="ignore")

    corpus_path: str = ""
    """The offline index web search, page reading and wiki-server answer from; none when empty."""


@dataclass(frozen=True)
class Hit:
    title: str
    url: str
    snippet: str
    score: float
    """BM25, higher is better (FTS5's bm25() negated), title matches weighted 5 to 1."""


@dataclass(frozen=True)
class Document:
    url: str
    title: str
    text: str
    path: str
    """The file path under the indexed folder, or the ZIM entry's path."""


class Corpus:
    """A built index, opened read-only; safe to share between threads (one connection each)."""

    def __init__(self, path: Path, meta: dict[str, str]):
        self.path = path
        self.meta = meta
        self._local = threading.local()

    @classmethod
    def open(cls, path: str | Path) -> Corpus:
        path = Path(path).expanduser()
        if not path.is_file():
            raise ToolFailure(
                f"There is no offline index at {path}; build one with `gaia-env corpus build FOLDER_OR_ZIM "
                f"--output {path}` or fix {CORPUS_ENV}."
            )
        try:
            with closing(_connect(path)) as db:
                meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.Error:
            raise ToolFailure(
                f"{path} is not an offline index built by `gaia-env corpus build`; rebuild it or fix {CORPUS_ENV}."
            ) from None
        return cls(path, meta)

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = self._local.db = _connect(self.path)
        return db

    def search(self, query: str, limit: int = 10) -> list[Hit]:
        """Documents with every word of the query, best first; with none, those with any word."""
        terms = query_terms(query)
        if not terms or limit < 1:
            return []
        for expression in dict.fromkeys([" AND ".join(terms), " OR ".join(terms)]):
            hits = self._ranked(expression, limit)
            if hits:
                return hits
        return []

    def _ranked(self, expression: str, limit: int) -> list[Hit]:
        if self._count(expression) <= RANK_CAP:
            return self._match(expression, limit)
        # Ranking costs ~10 µs a document: a query as broad as a common word would take seconds.
        # Rank the documents whose title matches, then the first RANK_CAP of the rest.
        titles = f"{{title}} : ({expression})"
        hits = self._match(titles, limit, bounded=self._count(titles) > RANK_CAP)
        seen = {hit.url for hit in hits}
        rest = [hit for hit in self._match(expression, limit, bounded=True) if hit.url not in seen]
        return (hits + rest)[:limit]

    def _count(self, expression: str) -> int:
        """How many documents match, counted up to RANK_CAP + 1 (cheap: no ranking)."""
        sql = "SELECT count(*) FROM (SELECT rowid FROM docs_fts WHERE docs_fts MATCH ? LIMIT ?)"
        return self._db().execute(sql, (expression, RANK_CAP + 1)).fetchone()[0]

    def _match(self, expression: str, limit: int, bounded: bool = False) -> list[Hit]:
        db = self._db()
        where, params = "docs_fts MATCH ?", [expression]
        if bounded:  # only the first RANK_CAP matches, in index order
            sql = "SELECT max(rowid) FROM (SELECT rowid FROM docs_fts WHERE docs_fts MATCH ? LIMIT ?)"
            where += " AND rowid <= ?"
            params.append(db.execute(sql, (expression, RANK_CAP)).fetchone()[0])
        ranked = db.execute(
            f"SELECT rowid, bm25(docs_fts, 5.0, 1.0) AS r FROM docs_fts WHERE {where} ORDER BY r LIMIT ?",
            (*params, limit),
        ).fetchall()
        hits = []
        for rowid, rank in ranked:  # snippets for the few shown only: building one costs a tokenizing pass
            title, url, snip = db.execute(
                "SELECT d.title, d.url, snippet(docs_fts, 1, '**', '**', ' … ', 24) FROM docs_fts "
                "JOIN docs d ON d.id = docs_fts.rowid WHERE docs_fts MATCH ? AND docs_fts.rowid = ?",
                (expression, rowid),
            ).fetchone()
            # Markdown heading marks read as noise once the snippet is one line.
            snip = re.sub(r"(?:^|(?<=\s))#{1,6} ", "", snip)
            hits.append(Hit(title, url, " ".join(snip.split()), round(-rank, 6)))
        return hits

    def read(self, url_or_title: str) -> Document | None:
        """The document with this URL (scheme, www., fragment and a trailing / ignored), path or title."""
        wanted = url_or_title.strip()
        if not wanted:
            return None
        db = self._db()
        columns = "SELECT url, title, text, path FROM docs"
        row = (
            db.execute(f"{columns} WHERE key = ? LIMIT 1", (url_key(wanted),)).fetchone()
            or db.execute(f"{columns} WHERE path = ? LIMIT 1", (wanted,)).fetchone()
            or db.execute(f"{columns} WHERE title = ? COLLATE NOCASE LIMIT 1", (wanted,)).fetchone()
            or db.execute(
                f"{columns} WHERE title = ? COLLATE NOCASE LIMIT 1", (wanted.replace("_", " "),)
            ).fetchone()
        )
        return Document(*row) if row else None

    def stats(self) -> dict[str, object]:
        info: dict[str, object] = {
            key: json.loads(value) if key == "zim_metadata" else value for key, value in self.meta.items()
        }
        info["documents"] = self._db().execute("SELECT COUNT(*) FROM docs").fetchone()[0]
        return {"path": str(self.path), "file_bytes": self.path.stat().st_size, **info}


def _connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, check_same_thread=False)
    db.execute("PRAGMA query_only=1")
    db.execute("PRAGMA cache_size=-65536")  # 64 MiB of pages per connection: the hot terms stay in
    return db


def query_terms(query: str) -> list[str]:
    """The query's words as quoted FTS5 strings: no user input is ever read as FTS syntax."""
    words = re.findall(r"\w+", query.lower())
    unique = list(dict.fromkeys(words))[:MAX_QUERY_TERMS]
    return [f'"{word}"' for word in unique]


@lru_cache(maxsize=4)
def _open_cached(path: str, mtime: float) -> Corpus:
    return Corpus.open(path)


def configured_path() -> str:
    """GAIA_CORPUS_PATH as set, or "" when it is unset or blank."""
    return settings(CorpusSettings).corpus_path.strip()


def configured_corpus() -> Corpus | None:
    """The index GAIA_CORPUS_PATH names (reopened when it is rebuilt), or None when it is unset."""
    value = configured_path()
    if not value:
        return None
    path = Path(value).expanduser()
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return Corpus.open(path)  # fails with the sentence that says how to build it
    return _open_cached(str(path), mtime)


def default_index_path() -> Path:
    value = configured_path()
    return Path(value).expanduser() if value else cache_dir() / "corpus.sqlite"
