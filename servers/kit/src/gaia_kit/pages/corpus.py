"""The offline local index: documents or a Kiwix ZIM in one SQLite FTS5 file, ranked by BM25.

    build(folder_or_zim, index_path)        # streaming, batched; the file appears only when complete
    corpus = Corpus.open(index_path)
    corpus.search("who wrote hamlet", 10)   # -> [Hit(title, url, snippet, score)]
    corpus.read(url_or_title)               # -> Document | None

`configured_corpus()` is the index named by GAIA_CORPUS_PATH (None when unset): web search,
page reading and wiki-server answer from it with no network at all.
"""

from __future__ import annotations

import html as html_lib
import json
import multiprocessing
import os
import posixpath
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from gaia_kit.core.errors import ToolFailure
from gaia_kit.documents.text import sniff_encoding
from gaia_kit.pages.extract import html_to_markdown, pdf_to_text

CORPUS_ENV = "GAIA_CORPUS_PATH"
FILE_SUFFIXES = {".html", ".htm", ".md", ".markdown", ".txt", ".pdf"}
MAX_QUERY_TERMS = 16
RANK_CAP = 2000  # matches ranked in full; a broader query is ranked by title, then its first matches
MAX_PDF_PAGES = 500
BATCH = 500

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs (id INTEGER PRIMARY KEY, url TEXT NOT NULL, key TEXT NOT NULL, path TEXT NOT NULL,
                   title TEXT NOT NULL, text TEXT NOT NULL);
CREATE VIRTUAL TABLE docs_fts USING fts5(title, text, content='docs', content_rowid='id',
                                         tokenize='porter unicode61 remove_diacritics 2');
"""
# Built after the rows are in: one sort instead of an index updated on every insert.
_INDEXES = """
CREATE INDEX docs_key ON docs(key);
CREATE INDEX docs_path ON docs(path);
CREATE INDEX docs_title ON docs(title COLLATE NOCASE);
"""


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


@dataclass(frozen=True)
class Source:
    """One document to index, as the readers below yield it."""

    url: str
    path: str
    title: str
    text: str


# ---- reading an index -----------------------------------------------------------------------


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


def url_key(url: str) -> str:
    """What two URLs of one document share: no scheme, www., fragment, trailing / or %-escapes."""
    parts = urlsplit(url.strip())
    if not parts.netloc:
        return url.strip()
    host = parts.netloc.lower().removeprefix("www.")
    path = unquote(parts.path).replace(" ", "_").rstrip("/")
    return f"{host}{path}" + (f"?{parts.query}" if parts.query else "")


@lru_cache(maxsize=4)
def _open_cached(path: str, mtime: float) -> Corpus:
    return Corpus.open(path)


def configured_corpus() -> Corpus | None:
    """The index GAIA_CORPUS_PATH names (reopened when it is rebuilt), or None when it is unset."""
    value = os.environ.get(CORPUS_ENV, "").strip()
    if not value:
        return None
    path = Path(value).expanduser()
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return Corpus.open(path)  # fails with the sentence that says how to build it
    return _open_cached(str(path), mtime)


def default_index_path() -> Path:
    value = os.environ.get(CORPUS_ENV, "").strip()
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gaia-env" / "corpus.sqlite"


# ---- building ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BuildReport:
    path: Path
    kind: str
    documents: int
    skipped: int
    seconds: float


def build(
    source: str | Path,
    index_path: str | Path,
    *,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
) -> BuildReport:
    """Index a folder of documents or a .zim file (converted in `jobs` processes); written to a
    temporary file, then moved into place."""
    source, index_path = Path(source).expanduser(), Path(index_path).expanduser()
    started = time.monotonic()
    if source.is_dir():
        kind, meta, documents = "folder", {}, folder_documents(source, jobs)
    elif source.is_file() and source.suffix.lower() == ".zim":
        kind = "zim"
        archive = open_zim(source)
        meta = {"zim_metadata": json.dumps(zim_metadata(archive), ensure_ascii=False)}
        documents = zim_documents(archive, jobs)
    else:
        raise ToolFailure(f"{source} is neither a folder nor a .zim file; pass one of those to index.")
    meta.update({"source": str(source.resolve()), "kind": kind})
    return build_documents(documents, index_path, meta, progress=progress, started=started)


def build_documents(
    documents: Iterable[Source | None],
    index_path: str | Path,
    meta: dict[str, str],
    *,
    progress: Callable[[int], None] | None = None,
    started: float | None = None,
) -> BuildReport:
    """Index any stream of documents (None or empty text counts as skipped); `meta` needs source and kind."""
    started = time.monotonic() if started is None else started
    index_path = Path(index_path).expanduser()
    index_path.parent.mkdir(parents=True, exist_ok=True)
    partial = index_path.with_name(index_path.name + ".partial")
    partial.unlink(missing_ok=True)
    skipped = [0]
    db = sqlite3.connect(partial)
    try:
        db.execute("PRAGMA journal_mode=OFF")
        db.execute("PRAGMA synchronous=OFF")
        db.executescript(_SCHEMA)
        count = _insert_all(db, documents, skipped, progress)
        db.executescript(_INDEXES)
        db.execute("INSERT INTO docs_fts(docs_fts) VALUES ('optimize')")
        built = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        rows = {**meta, "documents": str(count), "built": built}
        with db:
            db.executemany("INSERT INTO meta VALUES (?, ?)", rows.items())
    finally:
        db.close()
    os.replace(partial, index_path)
    return BuildReport(
        index_path, meta.get("kind", ""), count, skipped[0], round(time.monotonic() - started, 2)
    )


def _insert_all(
    db: sqlite3.Connection,
    documents: Iterable[Source | None],
    skipped: list[int],
    progress: Callable[[int], None] | None,
) -> int:
    count, batch = 0, []
    for document in documents:
        if document is None or not document.text.strip():
            skipped[0] += 1
            continue
        batch.append(document)
        if len(batch) >= BATCH:
            count += _insert(db, batch)
            batch.clear()
            if progress:
                progress(count)
    count += _insert(db, batch)
    return count


def _insert(db: sqlite3.Connection, batch: list[Source]) -> int:
    with db:
        for doc in batch:
            rowid = db.execute(
                "INSERT INTO docs(url, key, path, title, text) VALUES (?, ?, ?, ?, ?)",
                (doc.url, url_key(doc.url), doc.path, doc.title, doc.text),
            ).lastrowid
            db.execute(
                "INSERT INTO docs_fts(rowid, title, text) VALUES (?, ?, ?)", (rowid, doc.title, doc.text)
            )
    return len(batch)


def _converted(
    convert: Callable[[Any], Source | None],
    items: Iterable[Any],
    jobs: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple = (),
) -> Iterator[Source | None]:
    """convert(item) for every item, in order; in `jobs` worker processes when jobs > 1 (HTML to
    markdown is the slow part of a build: ~20-60 ms an article)."""
    if jobs <= 1:
        if initializer:
            initializer(*initargs)
        yield from map(convert, items)
        return
    with multiprocessing.Pool(jobs, initializer=initializer, initargs=initargs) as pool:
        yield from pool.imap(convert, items, chunksize=32)


def folder_documents(folder: Path, jobs: int = 1) -> Iterator[Source | None]:
    """Every html, md, txt and pdf file under the folder, in path order; None for an unreadable one."""
    files = (f for f in sorted(folder.rglob("*")) if f.is_file() and f.suffix.lower() in FILE_SUFFIXES)
    return _converted(_file_or_none, ((file, folder) for file in files), jobs)


def _file_or_none(job: tuple[Path, Path]) -> Source | None:
    try:
        return file_document(*job)
    except (OSError, ToolFailure):
        return None


def file_document(file: Path, folder: Path) -> Source | None:
    relative = file.relative_to(folder).as_posix()
    url = file.resolve().as_uri()
    if file.suffix.lower() == ".pdf":
        extracted = pdf_to_text(file, MAX_PDF_PAGES, name=str(file))
        return Source(url, relative, extracted.title or file.stem, extracted.text)
    body = file.read_bytes()
    encoding = sniff_encoding(body[:65536])
    if encoding is None:
        return None
    text = body.decode(encoding, errors="replace")
    if file.suffix.lower() in (".html", ".htm"):
        canonical = re.search(r"<link[^>]+rel=[\"']?canonical[\"']?[^>]*>", text, flags=re.I)
        href = re.search(r"href=[\"']([^\"']+)", canonical.group(0)) if canonical else None
        if href and href.group(1).startswith(("http://", "https://")):
            url = href.group(1)  # a saved web page answers for its address on the web
        extracted = html_to_markdown(text, url)
        return Source(url, relative, extracted.title or file.stem, extracted.text)
    heading = (
        re.search(r"^#\s+(.+)$", text, flags=re.M) if file.suffix.lower() in (".md", ".markdown") else None
    )
    return Source(url, relative, heading.group(1).strip() if heading else file.stem, text)


# ---- Kiwix ZIM files --------------------------------------------------------------------------


def open_zim(path: str | Path):  # -> libzim.reader.Archive
    from libzim.reader import Archive  # imported here: only ZIM users pay for loading libzim

    try:
        return Archive(str(path))
    except RuntimeError as exc:
        raise ToolFailure(
            f"{path} is not a readable ZIM file ({exc}); download it again from Kiwix."
        ) from None


def zim_metadata(archive) -> dict[str, str]:
    found = {}
    for key in archive.metadata_keys:
        if key.startswith("Illustration"):
            continue  # images
        try:
            found[key] = bytes(archive.get_metadata(key)).decode("utf-8", errors="replace")
        except RuntimeError:
            continue
    return found


def wikipedia_language(metadata: dict[str, str]) -> str | None:
    """The language code when the ZIM is a Wikipedia dump (Kiwix names them wikipedia_<lang>_...)."""
    name = metadata.get("Name", "") or metadata.get("Title", "")
    match = re.match(r"wikipedia_([a-z][a-z0-9-]*)_", name)
    if match:
        return match.group(1)
    source = metadata.get("Source", "")
    match = re.match(r"(?:https?://)?([a-z][a-z0-9-]*)\.wikipedia\.org", source)
    return match.group(1) if match else None


def zim_url(metadata: dict[str, str], archive_name: str, path: str) -> str:
    language = wikipedia_language(metadata)
    article = path.removeprefix("A/")  # the old namespace scheme prefixes articles with A/
    if language:
        return f"https://{language}.wikipedia.org/wiki/{article}"
    return f"zim://{archive_name}/{article}"


def zim_documents(archive: Any, jobs: int = 1) -> Iterator[Source | None]:
    """Every HTML article of the ZIM as markdown; None for redirects, media and metadata entries."""
    path = str(archive.filename)
    try:
        yield from _converted(_zim_entry, range(archive.entry_count), jobs, _open_zim_here, (path,))
    finally:
        _here.clear()  # a one-process build opened the ZIM here: let it go


_here: dict[str, Any] = {}  # the ZIM this process converts entries of (each worker opens its own)


def _open_zim_here(path: str) -> None:
    archive = open_zim(path)
    _here.update(archive=archive, metadata=zim_metadata(archive), name=Path(path).stem)


def _zim_entry(index: int) -> Source | None:
    archive, metadata, name = _here["archive"], _here["metadata"], _here["name"]
    entry = archive._get_entry_by_id(index)
    if entry.is_redirect:
        return None
    item = entry.get_item()
    if not item.mimetype.startswith("text/html"):
        return None
    html = bytes(item.content).decode("utf-8", errors="replace")
    url = zim_url(metadata, name, entry.path)
    extracted = html_to_markdown(absolute_links(html, entry.path, metadata, name), url)
    return Source(url, entry.path, entry.title or extracted.title or entry.path, extracted.text)


_HREF = re.compile(r"""(<a\b[^>]*?\bhref\s*=\s*)(["'])([^"']+)\2""", flags=re.I)


def zim_target(href: str, entry_path: str) -> str | None:
    """The ZIM path a link inside an article points to (fragment and query dropped); None if it leaves."""
    href = html_lib.unescape(href).strip()
    if (
        not href
        or href.startswith(("#", "/"))
        or re.match(r"[a-z][a-z0-9+.-]*://|(?:mailto|javascript|data|tel):", href, re.I)
    ):
        return None
    path = unquote(re.split(r"[#?]", href, maxsplit=1)[0])
    if not path:
        return None
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(entry_path), path))
    return None if resolved.startswith("..") or resolved == "." else resolved


def zim_targets(html: str, entry_path: str) -> list[str]:
    """Every ZIM path the article links to, in order, duplicates kept."""
    return [t for m in _HREF.finditer(html) if (t := zim_target(m.group(3), entry_path)) is not None]


def absolute_links(html: str, entry_path: str, metadata: dict[str, str], archive_name: str) -> str:
    """The article with its links inside the ZIM rewritten to the articles' URLs (Wikipedia's, for a dump)."""

    def rewrite(match: re.Match[str]) -> str:
        target = zim_target(match.group(3), entry_path)
        if target is None:
            return match.group(0)
        return f"{match.group(1)}{match.group(2)}{zim_url(metadata, archive_name, target)}{match.group(2)}"

    return _HREF.sub(rewrite, html)
