"""Wikipedia from a Kiwix ZIM file, with no network: search, content, summary, links, categories.

The ZIM is WIKI_ZIM_PATH, or the ZIM the offline index (GAIA_CORPUS_PATH) was built from when that
was a Wikipedia dump. Search uses that index when it has one (BM25 over the articles' text), else the
ZIM's own full-text index, else its title index. Articles are read from the ZIM itself and turned
into markdown by gaia_kit.pages.extract; links and categories come from the article's HTML. A ZIM holds
one revision per article, so history comes from the live API.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from gaia_kit import ToolFailure, run_blocking
from gaia_kit.core.settings import settings
from gaia_kit.pages.corpus import Corpus, configured_corpus
from gaia_kit.pages.extract import html_to_markdown, visible_text
from gaia_kit.pages.zim import (
    absolute_links,
    open_zim,
    wikipedia_language,
    zim_metadata,
    zim_targets,
    zim_url,
)
from pydantic import field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .mediawiki import MediaWiki
from .wiki import Hit, Revision, Text, missing, require_query, require_title

ZIM_ENV = "WIKI_ZIM_PATH"
BACKEND_ENV = "WIKI_BACKEND"
SNIPPET_CHARS = 200


class OfflineSettings(BaseSettings):
    """WIKI_BACKEND and WIKI_ZIM_PATH; see docs/configuration.md."""

    model_config = SettingsConfigDict(env_prefix="WIKI_", extra="ignore")

    backend: Literal["auto", "api", "zim"] = "auto"
    """`auto` answers from a configured ZIM when there is one, `api` always live, `zim` never live."""
    zim_path: str = ""
    """A Wikipedia .zim from Kiwix; when empty, the ZIM the offline index was built from, if any."""

    @field_validator("backend", mode="before")
    @classmethod
    def _any_case(cls, value: Any) -> Any:
        return (value.strip().lower() or "auto") if isinstance(value, str) else value


@dataclass(frozen=True)
class Article:
    title: str
    path: str
    url: str
    html: str


class ZimWiki:
    """The Wiki interface over one archive; every read is blocking libzim, so it runs in a thread."""

    def __init__(self, zim: Zim, live: MediaWiki):
        self.zim = zim
        self.live = live

    async def search(self, query: str, limit: int) -> list[Hit]:
        return await run_blocking(self.zim.search, query, limit)

    async def content(self, title: str, *, auto_suggest: bool, redirect: bool, intro_only: bool) -> Text:
        article = await self._article(title, auto_suggest)  # the ZIM always follows redirects
        return await run_blocking(self.zim.text, article, intro_only, True)

    async def introduction(self, title: str, *, auto_suggest: bool, redirect: bool) -> Text:
        article = await self._article(title, auto_suggest)
        return await run_blocking(self.zim.text, article, True, False)

    async def categories(self, title: str) -> tuple[str, list[str]]:
        article = await self._article(title, False)
        return article.title, await run_blocking(self.zim.categories, article)

    async def links(self, title: str) -> tuple[str, list[str]]:
        article = await self._article(title, False)
        return article.title, await run_blocking(self.zim.links, article)

    async def history(self, title: str, until: str, auto_suggest: bool) -> Revision:
        try:
            return await self.live.history(title, until, auto_suggest)
        except ToolFailure as exc:
            raise ToolFailure(
                f"get_article_history needs the live MediaWiki API (a ZIM holds one revision per article), "
                f"and it failed: {exc}"
            ) from None

    async def _article(self, title: str, auto_suggest: bool) -> Article:
        require_title(title)
        article = await run_blocking(self.zim.article, title)
        if article is not None:
            return article
        hits = await run_blocking(self.zim.search, title, 5)
        if auto_suggest and hits:
            article = await run_blocking(self.zim.article, hits[0].title)
            if article is not None:
                return article
        missing(title, self.zim.language, hits)


class Zim:
    """An open Wikipedia ZIM (and the index built from it, when there is one); blocking reads."""

    def __init__(self, path: Path, corpus: Corpus | None):
        self.path = path
        self.archive = open_zim(path)
        self.metadata = zim_metadata(self.archive)
        self.language = wikipedia_language(self.metadata) or ""
        self.corpus = corpus
        self.name = path.stem

    def describe(self) -> str:
        search = "the offline index" if self.corpus else "the ZIM's own index"
        return f"offline Wikipedia ({self.language or 'unknown language'}) from {self.path}, searched with {search}"

    # ---- search --------------------------------------------------------------------------------

    def search(self, query: str, limit: int) -> list[Hit]:
        require_query(query)
        if self.corpus is not None:
            return [
                Hit(hit.title, None, hit.snippet.replace("**", ""), hit.url)
                for hit in self.corpus.search(query, limit)
            ]
        hits = []
        for path in self._zim_search(query, limit):
            article = self._entry(path, redirect=True)
            if article is not None:
                snippet = " ".join(visible_text(article.html).split())[:SNIPPET_CHARS]
                hits.append(Hit(article.title, None, snippet, article.url))
        return hits

    def _zim_search(self, query: str, limit: int) -> list[str]:
        from libzim.search import Query, Searcher
        from libzim.suggestion import SuggestionSearcher

        try:
            if self.archive.has_fulltext_index:
                found = Searcher(self.archive).search(Query().set_query(query))
            else:
                found = SuggestionSearcher(self.archive).suggest(query)
            return list(found.getResults(0, limit))
        except RuntimeError:  # a query the ZIM's index cannot parse finds nothing
            return []

    # ---- articles ------------------------------------------------------------------------------

    def article(self, title: str) -> Article | None:
        """The article with this title (first letter in any case, _ or spaces), redirects followed."""
        title = title.strip()
        if not title:
            return None
        path = title.replace(" ", "_")
        for candidate in dict.fromkeys([path, path[:1].upper() + path[1:]]):
            for full in (candidate, f"A/{candidate}"):  # the old namespace scheme keeps articles under A/
                found = self._entry(full, redirect=True)
                if found is not None:
                    return found
        try:
            return self._from(self.archive.get_entry_by_title(title))
        except KeyError:
            return None

    def _entry(self, path: str, redirect: bool) -> Article | None:
        try:
            entry = self.archive.get_entry_by_path(path)
        except KeyError:
            return None
        return self._from(entry) if redirect or not entry.is_redirect else None

    def _from(self, entry: Any) -> Article | None:
        for _ in range(10):  # a chain of redirects, bounded
            if not entry.is_redirect:
                break
            entry = entry.get_redirect_entry()
        item = entry.get_item()
        if not item.mimetype.startswith("text/html"):
            return None
        html = bytes(item.content).decode("utf-8", errors="replace")
        title = entry.title or entry.path.removeprefix("A/").replace("_", " ")
        return Article(title, entry.path, zim_url(self.metadata, self.name, entry.path), html)

    def text(self, article: Article, intro_only: bool, links: bool) -> Text:
        html = article.html
        if intro_only:  # the introduction is what comes before the first section heading
            html = re.split(r"<h2\b", html, maxsplit=1, flags=re.I)[0]
        html = absolute_links(html, article.path, self.metadata, self.name)
        text = html_to_markdown(html, article.url).text
        if not links:  # plain text, as the API's extracts are
            text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
        return Text(article.title, None, article.url, text)

    def links(self, article: Article) -> list[str]:
        """Titles of the articles it links to; other namespaces (File:, Category:, Help:) and media left out."""
        titles = []
        for target in self._targets(article):
            name = target.replace("_", " ")
            if not re.match(r"[^ :]+:", name) and not MEDIA.search(name) and name != article.title:
                titles.append(name)
        return list(dict.fromkeys(titles))

    def categories(self, article: Article) -> list[str]:
        """The categories it links to (Kiwix's Wikipedia dumps often leave them out: then none)."""
        found = [
            t.split(":", 1)[1].replace("_", " ") for t in self._targets(article) if t.startswith("Category:")
        ]
        return list(dict.fromkeys(found))

    def _targets(self, article: Article) -> list[str]:
        return [t.removeprefix("A/") for t in zim_targets(article.html, article.path)]


MEDIA = re.compile(r"\.(?:png|jpe?g|svg|gif|webp|css|js)$", re.I)


@lru_cache(maxsize=2)
def _open(path: str, corpus_path: str | None, mtime: float) -> Zim:
    corpus = Corpus.open(corpus_path) if corpus_path else None
    return Zim(Path(path), corpus)


def configured_zim() -> Zim | None:
    """The Wikipedia ZIM configured, or None when the live API is to answer; opened once per file."""
    config = settings(OfflineSettings)
    backend = config.backend
    if backend == "api":
        return None
    corpus = configured_corpus()
    from_corpus = corpus is not None and corpus.meta.get("kind") == "zim"
    wikipedia = from_corpus and wikipedia_language(json.loads(corpus.meta.get("zim_metadata", "{}")))
    zim = config.zim_path.strip() or (corpus.meta["source"] if wikipedia else "")
    if not zim:
        if backend == "zim":
            raise ToolFailure(
                f"{BACKEND_ENV}=zim needs {ZIM_ENV} (a Wikipedia .zim from Kiwix) or GAIA_CORPUS_PATH built from one."
            )
        return None
    path = Path(zim).expanduser()
    if not path.is_file():
        raise ToolFailure(
            f"The Wikipedia ZIM {path} does not exist; download one from Kiwix or fix {ZIM_ENV}."
        )
    # The index answers searches only when it was built from this very ZIM.
    same = from_corpus and Path(corpus.meta.get("source", "")).resolve() == path.resolve()
    return _open(str(path.resolve()), str(corpus.path) if same else None, path.stat().st_mtime)
