"""Web search for every server that offers it: one function, three backends, one output shape.

    found = await web_search("eiffel tower height", 5, safe=True, language="en", country="us")
    found.backend, found.results  # [SearchResult(title, url, snippet)]

Backends (SEARCH_BACKEND; see docs/configuration.md, "Web search"):
- `google`: Google Programmable Search, the Custom Search JSON API (GOOGLE_API_KEY, GOOGLE_CSE_ID).
- `searxng`: a SearXNG instance's JSON API (SEARXNG_URL; keyless, self-hosted).
- `corpus`: the offline local index (GAIA_CORPUS_PATH; gaia_kit.pages.corpus), no network at all.
- `auto` (default): the first of those that is configured, in that order.
Online answers go through gaia_kit.web.http, so they are cached and replay offline.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_settings import BaseSettings, SettingsConfigDict

from gaia_kit.core.benchmark_guard import keep_unquoted
from gaia_kit.core.blocking import run_blocking
from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import settings
from gaia_kit.pages.corpus import CORPUS_ENV, configured_corpus, configured_path
from gaia_kit.web.http import shared_http

Backend = Literal["google", "searxng", "corpus"]
BACKENDS = ("google", "searxng", "corpus", "auto")
GOOGLE_PAGE = 10  # the Custom Search API's most results per request
GOOGLE_MAX = 100  # and the deepest it pages (start + num <= 100)
SEARXNG_MAX_PAGES = 5
MAX_RESULTS = 50
NOTHING_CONFIGURED = (
    "No web search backend is configured; set GOOGLE_API_KEY and GOOGLE_CSE_ID (Google Programmable "
    f"Search), SEARXNG_URL (a SearXNG instance) or {CORPUS_ENV} (an offline index from `gaia-env corpus build`)."
)


class SearchSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", extra="ignore")

    search_backend: str = "auto"
    google_api_key: str = ""
    google_cse_id: str = ""
    google_cse_url: str = "https://www.googleapis.com/customsearch/v1"
    searxng_url: str = ""


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str


@dataclass(frozen=True)
class SearchResults:
    query: str
    backend: Backend
    results: list[SearchResult]


def search_backend() -> Backend:
    """The backend a search uses, from SEARCH_BACKEND and what is configured."""
    config = settings(SearchSettings)
    wanted = config.search_backend.strip().lower() or "auto"
    if wanted not in BACKENDS:
        raise ToolFailure(
            f"SEARCH_BACKEND={config.search_backend!r} is not one of {', '.join(BACKENDS)}; fix or unset it."
        )
    google = bool(config.google_api_key and config.google_cse_id)
    if wanted == "auto":
        if google:
            return "google"
        if config.searxng_url:
            return "searxng"
        if configured_path():
            return "corpus"
        raise ToolFailure(NOTHING_CONFIGURED)
    if wanted == "google" and not google:
        raise ToolFailure("SEARCH_BACKEND=google needs GOOGLE_API_KEY and GOOGLE_CSE_ID; set both.")
    if wanted == "searxng" and not config.searxng_url:
        raise ToolFailure("SEARCH_BACKEND=searxng needs SEARXNG_URL (e.g. http://127.0.0.1:8888); set it.")
    if wanted == "corpus" and not configured_path():
        raise ToolFailure(f"SEARCH_BACKEND=corpus needs {CORPUS_ENV}, an index from `gaia-env corpus build`.")
    return wanted  # type: ignore[return-value]


def describe_backend() -> str:
    """One line for `gaia-env doctor` and the capabilities tools: which backend, or why none."""
    config = settings(SearchSettings)
    try:
        backend = search_backend()
    except ToolFailure as exc:
        return f"none: {exc}"
    if backend == "google":
        return f"google (Custom Search JSON API at {config.google_cse_url}, engine {config.google_cse_id})"
    if backend == "searxng":
        return f"searxng (JSON API at {config.searxng_url})"
    return f"corpus (offline index at {configured_path()})"


def search_check() -> dict[str, Any]:
    """What `gaia-env doctor` prints for a search server: the backend, or "none" and what to set."""
    line = describe_backend()
    if line.startswith("none: "):
        return {"backend": "none", "missing": [line.removeprefix("none: ")]}
    return {"backend": line, "missing": []}


async def web_search(
    query: str, num: int, *, safe: bool = True, language: str = "en", country: str = "us"
) -> SearchResults:
    """At most `num` (capped at MAX_RESULTS) results for `query` from the configured backend."""
    if not query.strip():
        raise ToolFailure("The search query is empty; pass some words to search for.")
    config = settings(SearchSettings)
    backend = search_backend()
    num = max(1, min(int(num), MAX_RESULTS))
    if backend == "google":
        results = await _google(config, query, num, safe, language, country)
    elif backend == "searxng":
        results = await _searxng(config, query, num, safe, language)
    else:
        results = await _corpus(query, num)
    kept = keep_unquoted(results, lambda r: f"{r.title}\n{r.snippet}", lambda r: r.url)
    return SearchResults(query, backend, kept[:num])


# ---- Google Programmable Search ------------------------------------------------------------------


async def _google(
    config: SearchSettings, query: str, num: int, safe: bool, language: str, country: str
) -> list[SearchResult]:
    results: list[SearchResult] = []
    start = 1
    while len(results) < num and start + min(GOOGLE_PAGE, num - len(results)) - 1 <= GOOGLE_MAX:
        params = {
            "key": config.google_api_key,
            "cx": config.google_cse_id,
            "q": query,
            "num": min(GOOGLE_PAGE, num - len(results)),
            "start": start,
            "safe": "active" if safe else "off",
            "hl": language,
            "lr": f"lang_{language}",
            "gl": country,
        }
        response = await shared_http().get(
            config.google_cse_url, params=params, check=False, paid="google-search"
        )
        if response.status >= 400:
            raise ToolFailure(_google_error(response.status, response.content))
        answer = response.json()
        items = answer.get("items") or []
        results += [
            SearchResult(_one_line(i.get("title")), i.get("link", ""), _one_line(i.get("snippet")))
            for i in items
        ]
        if not items or not answer.get("queries", {}).get("nextPage"):
            break
        start += len(items)
    return results


def _google_error(status: int, body: bytes) -> str:
    try:
        answer = json.loads(body)
    except ValueError:
        answer = {}
    error = answer.get("error", {}) if isinstance(answer, dict) else {}
    message = _one_line(error.get("message") if isinstance(error, dict) else str(error)) or f"HTTP {status}"
    if status == 429:
        return f"Google Custom Search is rate-limiting or out of daily quota ({message}); try again later."
    return (
        f"Google Custom Search refused the request (HTTP {status}: {message.rstrip('.')}); "
        "check GOOGLE_API_KEY and GOOGLE_CSE_ID."
    )


# ---- SearXNG -------------------------------------------------------------------------------------


async def _searxng(
    config: SearchSettings, query: str, num: int, safe: bool, language: str
) -> list[SearchResult]:
    url = config.searxng_url.rstrip("/") + "/search"
    results: list[SearchResult] = []
    seen: set[str] = set()
    for page in range(1, SEARXNG_MAX_PAGES + 1):
        params = {
            "q": query,
            "format": "json",
            "pageno": page,
            "language": language,
            "safesearch": 1 if safe else 0,
        }
        response = await shared_http().get(url, params=params, check=False)
        if response.status == 403:
            raise ToolFailure(
                f"The SearXNG instance at {config.searxng_url} refuses JSON answers; add `json` to "
                "search.formats in its settings.yml."
            )
        if response.status >= 400:
            raise ToolFailure(
                f"The SearXNG instance at {config.searxng_url} answered HTTP {response.status}; check "
                "SEARXNG_URL and that the instance is up."
            )
        items = response.json().get("results") or []
        fresh = [i for i in items if i.get("url") and i["url"] not in seen]
        seen.update(i["url"] for i in fresh)
        results += [
            SearchResult(_one_line(i.get("title")), i["url"], _one_line(i.get("content"))) for i in fresh
        ]
        if not fresh or len(results) >= num:
            break
    return results


# ---- the offline index ---------------------------------------------------------------------------


async def _corpus(query: str, num: int) -> list[SearchResult]:
    def search() -> list[SearchResult]:
        corpus = configured_corpus()
        assert corpus is not None  # search_backend chose corpus because the path is set
        return [SearchResult(hit.title, hit.url, hit.snippet) for hit in corpus.search(query, num)]

    return await run_blocking(search)


# ---- output --------------------------------------------------------------------------------------


class SearchHit(BaseModel):
    title: str
    url: str
    snippet: str


class SearchData(BaseModel):
    """A search tool's structured result: what render()'s JSON form holds."""

    query: str
    backend: str
    count: int
    results: list[SearchHit]


def search_data(found: SearchResults) -> SearchData:
    hits = [SearchHit(**asdict(r)) for r in found.results]
    return SearchData(query=found.query, backend=found.backend, count=len(hits), results=hits)


def render(found: SearchResults, output_format: str = "markdown") -> str:
    """The results as JSON, markdown or plain text; no results is a sentence, not an empty list."""
    if output_format == "json":
        body = {"query": found.query, "backend": found.backend, "count": len(found.results),
                "results": [asdict(r) for r in found.results]}  # fmt: skip
        return json.dumps(body, indent=2, ensure_ascii=False)
    if not found.results:
        return f"No results for {found.query!r} ({found.backend}); try other or fewer words."
    if output_format == "text":
        blocks = [f"{n}. {r.title}\n   {r.url}\n   {r.snippet}" for n, r in enumerate(found.results, 1)]
        return f"Search results for {found.query!r}:\n\n" + "\n\n".join(blocks)
    blocks = [f"{n}. **[{r.title}]({r.url})**\n   {r.snippet}" for n, r in enumerate(found.results, 1)]
    return f"# Search results for: {found.query}\n\n" + "\n\n".join(blocks)


def _one_line(text: Any) -> str:
    return re.sub(r"\s+", " ", str(text or "")).strip()
