"""Test doubles for web search: Google Custom Search and SearXNG on 127.0.0.1, and a small ZIM.

    with FakeSearch(pages=PAGES) as fake:          # speaks both wire formats
        fake.google_url      # -> set GOOGLE_CSE_URL to it
        fake.searxng_url     # -> set SEARXNG_URL to it
        fake.throttle(2)     # the next two requests answer 429 with Retry-After: 0
    write_zim(path, {"Python": "<html>..."}, redirects={"Py": "Python"})

The servers' tests and benchmarks/search_latency.py share them.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from .loopback import LoopbackServer, RateLimited


@dataclass(frozen=True)
class FakePage:
    title: str
    url: str
    snippet: str


class FakeSearch(RateLimited):
    """Both search APIs over the same pages; a page matches when it contains any query word."""

    def __init__(self, pages: list[FakePage], *, delay_s: float = 0.0, key: str = "test-key"):
        self.pages = pages
        self.delay_s = delay_s
        self.key = key
        self.requests: list[dict[str, str]] = []
        app = Starlette(routes=[Route("/customsearch/v1", self._google), Route("/search", self._searxng)])
        self._loopback = LoopbackServer(app)
        self.google_url = self._loopback.url("/customsearch/v1")
        self.searxng_url = self._loopback.url("")

    def start(self) -> FakeSearch:
        self._loopback.start()
        return self

    def stop(self) -> None:
        self._loopback.stop()

    def __enter__(self) -> FakeSearch:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _matches(self, query: str) -> list[FakePage]:
        words = set(re.findall(r"\w+", query.lower()))
        return [p for p in self.pages if words & set(re.findall(r"\w+", f"{p.title} {p.snippet}".lower()))]

    async def _answer(self, request: Request) -> dict[str, str] | PlainTextResponse:
        query = dict(request.query_params)
        self.requests.append(query)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return self.refusal() or query

    async def _google(self, request: Request) -> JSONResponse | PlainTextResponse:
        query = await self._answer(request)
        if isinstance(query, PlainTextResponse):
            return query
        if query.get("key") != self.key:
            error = {
                "code": 400,
                "message": "API key not valid. Please pass a valid API key.",
                "status": "INVALID_ARGUMENT",
            }
            return JSONResponse({"error": error}, status_code=400)
        found = self._matches(query.get("q", ""))
        start, num = int(query.get("start", "1")), int(query.get("num", "10"))
        if num > 10:
            return JSONResponse({"error": {"code": 400, "message": "Invalid value for num"}}, status_code=400)
        chosen = found[start - 1 : start - 1 + num]
        body: dict = {
            "kind": "customsearch#search",
            "queries": {
                "request": [{"searchTerms": query.get("q"), "startIndex": start, "count": len(chosen)}]
            },
            "searchInformation": {"searchTime": 0.01, "totalResults": str(len(found))},
        }
        if start - 1 + num < len(found):
            body["queries"]["nextPage"] = [{"startIndex": start + num}]
        if chosen:  # Google leaves `items` out when nothing matches
            body["items"] = [
                {"kind": "customsearch#result", "title": p.title, "link": p.url, "snippet": p.snippet,
                 "displayLink": re.sub(r"^https?://([^/]+).*", r"\1", p.url)}
                for p in chosen
            ]  # fmt: skip
        return JSONResponse(body)

    async def _searxng(self, request: Request) -> JSONResponse | PlainTextResponse:
        query = await self._answer(request)
        if isinstance(query, PlainTextResponse):
            return query
        if query.get("format") != "json":
            return PlainTextResponse("Forbidden", status_code=403)  # SearXNG's answer when json is off
        found = self._matches(query.get("q", ""))
        page = int(query.get("pageno", "1"))
        chosen = found[(page - 1) * 10 : page * 10]
        results = [
            {"title": p.title, "url": p.url, "content": p.snippet, "engine": "fake", "engines": ["fake"],
             "score": 1.0 / (n + 1), "category": "general"}
            for n, p in enumerate(chosen)
        ]  # fmt: skip
        return JSONResponse(
            {"query": query.get("q"), "number_of_results": len(found), "results": results, "answers": [],
             "suggestions": [], "unresponsive_engines": []}
        )  # fmt: skip


def write_zim(
    path: Path,
    articles: Mapping[str, str],
    *,
    redirects: Mapping[str, str] | None = None,
    name: str = "wikipedia_en_test_2024-01",
) -> Path:
    """A ZIM of HTML articles (path = title with _ for spaces), with Kiwix's usual metadata."""
    from libzim.writer import Creator, Hint, Item, StringProvider

    class Page(Item):
        def __init__(self, path: str, title: str, html: str):
            super().__init__()
            self._path, self._title, self._html = path, title, html

        def get_path(self) -> str:
            return self._path

        def get_title(self) -> str:
            return self._title

        def get_mimetype(self) -> str:
            return "text/html"

        def get_contentprovider(self) -> StringProvider:
            return StringProvider(self._html)

        def get_hints(self) -> dict:
            return {Hint.FRONT_ARTICLE: True}

    with Creator(str(path)).config_indexing(True, "eng") as creator:
        first = next(iter(articles))
        creator.set_mainpath(first.replace(" ", "_"))
        for title, html in articles.items():
            creator.add_item(Page(title.replace(" ", "_"), title, html))
        for source, target in (redirects or {}).items():
            creator.add_redirection(
                source.replace(" ", "_"), source, target.replace(" ", "_"), {Hint.FRONT_ARTICLE: True}
            )
        metadata = {"Name": name, "Title": "Wikipedia test", "Language": "eng", "Creator": "Wikipedia",
                    "Publisher": "gaia-env tests", "Date": "2024-01-01", "Description": "A tiny test wiki"}  # fmt: skip
        for key, value in metadata.items():
            creator.add_metadata(key, value)
    return path
