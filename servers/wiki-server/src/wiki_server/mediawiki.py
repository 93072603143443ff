"""The live MediaWiki action API of one language's Wikipedia (`action=query`, `formatversion=2`).

Fetched with gaia_kit.web.http, so answers are cached by the kit's record/replay cache and a training
run can be replayed offline. WIKI_API_URL sets the endpoint; `{lang}` in it becomes the language.
"""

from __future__ import annotations

import re
from typing import Any, NoReturn
from urllib.parse import quote

from gaia_kit import ToolFailure
from gaia_kit.core.settings import settings
from gaia_kit.web.errors import HttpFailure
from gaia_kit.web.http import shared_http
from pydantic_settings import BaseSettings, SettingsConfigDict

from .wiki import Hit, Revision, Text, missing, require_query, require_title
from .wikitext import render_wikitext

DEFAULT_API_URL = "https://{lang}.wikipedia.org/w/api.php"
MAX_LINK_REQUESTS = 10  # 500 links per request: 5,000 links is more than any article has


class MediaWikiSettings(BaseSettings):
    """WIKI_API_URL; see docs/configuration.md."""

    model_config = SettingsConfigDict(env_prefix="WIKI_", extra="ignore", env_ignore_empty=True)

    api_url: str = DEFAULT_API_URL
    """The action API's endpoint; `{lang}` in it becomes the language asked for."""


def api_template() -> str:
    return settings(MediaWikiSettings).api_url


class MediaWiki:
    def __init__(self, language: str):
        self.language = language

    async def search(self, query: str, limit: int) -> list[Hit]:
        require_query(query)
        data = await self._query({"list": "search", "srsearch": query, "srlimit": limit, "srprop": "snippet"})
        return [
            Hit(hit["title"], hit.get("pageid"), _strip_html(hit.get("snippet", "")), self._url(hit["title"]))
            for hit in data.get("query", {}).get("search", [])
        ]

    async def content(self, title: str, *, auto_suggest: bool, redirect: bool, intro_only: bool) -> Text:
        params: dict[str, Any] = {"prop": "extracts|info", "inprop": "url", "explaintext": 1}
        if intro_only:
            params["exintro"] = 1
        article = await self._article(title, auto_suggest, redirect, params)
        url = article.get("fullurl") or self._url(article["title"])
        return Text(article["title"], article.get("pageid"), url, article.get("extract", ""))

    async def introduction(self, title: str, *, auto_suggest: bool, redirect: bool) -> Text:
        return await self.content(title, auto_suggest=auto_suggest, redirect=redirect, intro_only=True)

    async def categories(self, title: str) -> tuple[str, list[str]]:
        params = {"prop": "categories", "cllimit": "max", "clshow": "!hidden"}
        article = await self._article(title, False, True, params)
        return article["title"], [c["title"].split(":", 1)[-1] for c in article.get("categories", [])]

    async def links(self, title: str) -> tuple[str, list[str]]:
        params: dict[str, Any] = {"prop": "links", "pllimit": "max", "plnamespace": 0}
        links: list[str] = []
        found = title
        for _ in range(MAX_LINK_REQUESTS):
            data = await self._query({"titles": title, "redirects": 1, **params})
            article = _first_page(data)
            if article is None:
                await self._missing(title)
            found = article["title"]
            links += [link["title"] for link in article.get("links", [])]
            if "continue" not in data:
                break
            params.update(data["continue"])
        return found, links

    async def history(self, title: str, until: str, auto_suggest: bool) -> Revision:
        resolved = (await self._article(title, True, True, {}))["title"] if auto_suggest else title
        params: dict[str, Any] = {
            "prop": "revisions",
            "titles": resolved,
            "rvprop": "ids|timestamp|content",
            "rvslots": "main",
            "rvlimit": 1,
            "rvstart": until,
            "rvdir": "older",
        }
        if auto_suggest:
            params["redirects"] = 1
        article = _first_page(await self._query(params))
        if article is None:
            await self._missing(title)
        revisions = article.get("revisions") or []
        if not revisions:
            raise ToolFailure(
                f"The Wikipedia article {article['title']!r} did not exist yet on {until[:10]}; try a later date."
            )
        revision = revisions[0]
        wikitext = revision.get("slots", {}).get("main", {}).get("content", revision.get("content", ""))
        return Revision(
            title=article["title"],
            requested_date=until[:10],
            revision_id=revision["revid"],
            timestamp=revision["timestamp"],
            permanent_link=f"{self._site()}/w/index.php?oldid={revision['revid']}",
            content=render_wikitext(wikitext),
        )

    # --- the API ----------------------------------------------------------------------------------

    def _api_url(self) -> str:
        if not re.fullmatch(r"[a-z][a-z0-9-]{1,15}", self.language):
            raise ToolFailure(
                f"{self.language!r} is not a Wikipedia language code; use one like 'en', 'de' or 'zh-yue'."
            )
        return api_template().replace("{lang}", self.language)

    def _site(self) -> str:
        """The site's base URL, for links given to the reader (not fetched)."""
        return self._api_url().rsplit("/w/api.php", 1)[0].rsplit("/api.php", 1)[0]

    def _url(self, title: str) -> str:
        return f"{self._site()}/wiki/{quote(title.replace(' ', '_'))}"

    async def _query(self, params: dict[str, Any]) -> dict[str, Any]:
        url = self._api_url()
        try:
            response = await shared_http().get(
                url, params={"action": "query", "format": "json", "formatversion": 2, **params}
            )
        except HttpFailure as exc:
            if exc.status == 404:
                raise ToolFailure(
                    f"The Wikipedia API at {url} answered 404; check WIKI_API_URL and the language code "
                    f"{self.language!r}."
                ) from None
            raise
        data = response.json()
        if "error" in data:
            error = data["error"]
            raise ToolFailure(
                f"Wikipedia refused the request ({error.get('info', error.get('code'))}); check the arguments."
            )
        return data

    async def _article(
        self, title: str, auto_suggest: bool, redirect: bool, params: dict[str, Any]
    ) -> dict[str, Any]:
        """The page record for `title`; a missing title fails with the search results as suggestions."""
        require_title(title)
        query = {"titles": title, **params}
        if redirect:
            query["redirects"] = 1
        article = _first_page(await self._query(query))
        if article is not None:
            return article
        if auto_suggest:
            hits = await self.search(title, 1)
            if hits:
                query["titles"] = hits[0].title
                article = _first_page(await self._query(query))
                if article is not None:
                    return article
        await self._missing(title)

    async def _missing(self, title: str) -> NoReturn:
        missing(title, self.language, await self.search(title, 5))


def _first_page(data: dict[str, Any]) -> dict[str, Any] | None:
    """The one page a query asked for; None when it does not exist."""
    pages = data.get("query", {}).get("pages", [])
    if not pages or pages[0].get("missing") or pages[0].get("invalid"):
        return None
    return pages[0]


def _strip_html(snippet: str) -> str:
    return re.sub(r"<[^>]+>", "", snippet).replace("&quot;", '"').replace("&amp;", "&").replace("&#039;", "'")
