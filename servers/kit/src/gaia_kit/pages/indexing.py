"""Building the offline index: documents from a folder or a Kiwix ZIM, converted (in worker
processes when asked), batched into one SQLite FTS5 file that appears only when complete."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from gaia_kit.core.errors import ToolFailure
from gaia_kit.documents.text import sniff_encoding
from gaia_kit.pages.extract import html_to_markdown, pdf_to_text
from gaia_kit.pages.zim import absolute_links, open_zim, zim_metadata, zim_url

FILE_SUFFIXES = {".html", ".htm", ".md", ".markdown", ".txt", ".pdf"}
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
class Source:
    """One document to index, as the readers below yield it."""

    url: str
    path: str
    title: str
    text: str


def url_key(url: str) -> str:
    """What two URLs of one document share: no scheme, www., fragment, trailing / or %-escapes."""
    parts = urlsplit(url.strip())
    if not parts.netloc:
        return url.strip()
    host = parts.netloc.lower().removeprefix("www.")
    path = unquote(parts.path).replace(" ", "_").rstrip("/")
    return f"{host}{path}" + (f"?{parts.query}" if parts.query else "")


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
