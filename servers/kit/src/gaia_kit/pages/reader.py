"""The one page reader: a URL in, its main content as markdown out.

    page = await read_page("https://example.com/article", images=True)
    page.url, page.title, page.text, page.content_type, page.backend, page.images

Backends (READWEB_BACKEND):
- `local` (keyless): fetch with gaia_kit.web.http (SSRF guard, retries, size cap, record/replay cache)
  and extract with gaia_kit.pages.extract (trafilatura for pages, PyMuPDF for PDFs).
- `jina`: Jina Reader (JINA_API_KEY), `GET <JINA_API_URL><url>` answered as JSON.
- `tavily`: Tavily extract (TAVILY_API_KEY), `POST <TAVILY_API_URL>` with a JSON body.
- `auto` (default): Jina when its key is set, else Tavily when its key is set, else local; a keyed
  backend that fails falls back to local, so a quota or outage costs quality, not the answer.
Before any of them, a page the offline index (GAIA_CORPUS_PATH, gaia_kit.pages.corpus) holds is
answered from it, with no network.

Every failure is a ToolFailure in one sentence; a page with no readable text is a failure too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urljoin

import httpx
from pydantic_settings import BaseSettings, SettingsConfigDict

from gaia_kit.core.benchmark_guard import refuse_mirror, screen_text
from gaia_kit.core.blocking import run_blocking
from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import settings
from gaia_kit.core.usage import charge
from gaia_kit.pages.corpus import configured_corpus
from gaia_kit.pages.extract import document_text
from gaia_kit.web.http import shared_http

Backend = Literal["local", "jina", "tavily", "corpus"]
BACKENDS = ("local", "jina", "tavily", "auto")
MAX_IMAGES = 50
ACCEPT = "text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8,*/*;q=0.5"


@dataclass(frozen=True)
class WebPage:
    url: str
    """The address after redirects (as the backend reports it)."""
    title: str
    text: str
    """Markdown (pages), page-marked text (PDFs) or plain text; never empty."""
    content_type: str
    """What the server sent (`text/html`, `application/pdf`, ...), or `text/markdown` from a keyed backend."""
    backend: Backend
    images: tuple[str, ...] = ()
    """Image URLs found on the page, when asked for; at most MAX_IMAGES."""


class ReaderSettings(BaseSettings):
    """See docs/configuration.md, "Reading web pages"."""

    model_config = SettingsConfigDict(env_prefix="", extra="ignore")

    readweb_backend: str = "auto"
    readweb_pdf_pages: int = 50
    jina_api_key: str = ""
    jina_api_url: str = "https://r.jina.ai/"
    tavily_api_key: str = ""
    tavily_api_url: str = "https://api.tavily.com/extract"


def reader_backend() -> Backend:
    """The backend a read uses first, from READWEB_BACKEND and the keys that are set."""
    config = settings(ReaderSettings)
    wanted = config.readweb_backend.strip().lower() or "auto"
    if wanted not in BACKENDS:
        raise ToolFailure(
            f"READWEB_BACKEND={config.readweb_backend!r} is not one of {', '.join(BACKENDS)}; fix or unset it."
        )
    if wanted == "auto":
        return "jina" if config.jina_api_key else "tavily" if config.tavily_api_key else "local"
    if wanted == "jina" and not config.jina_api_key:
        raise ToolFailure("READWEB_BACKEND=jina needs JINA_API_KEY; set it, or use READWEB_BACKEND=local.")
    if wanted == "tavily" and not config.tavily_api_key:
        raise ToolFailure(
            "READWEB_BACKEND=tavily needs TAVILY_API_KEY; set it, or use READWEB_BACKEND=local."
        )
    return wanted  # type: ignore[return-value]


async def read_page(url: str, *, images: bool = False) -> WebPage:
    """The readable content of `url`: from the offline index when it has it, else the configured backend.

    A known benchmark mirror is refused, and a page that quotes the session's task is withheld
    (gaia_kit.core.benchmark_guard), whichever backend read it."""
    refuse_mirror(url)
    found = await _read_any(url, images)
    refuse_mirror(found.url)
    screen_text(found.text, found.url)
    return found


async def _read_any(url: str, images: bool) -> WebPage:
    offline = await _read_corpus(url)
    if offline is not None:
        return offline
    url = _checked_url(url)
    config = settings(ReaderSettings)
    backend = reader_backend()
    if backend == "local":
        return await _read_local(url, images, config)
    reader = _read_jina if backend == "jina" else _read_tavily
    try:
        return await reader(url, images, config)
    except ToolFailure:
        if config.readweb_backend.strip().lower() not in ("", "auto"):
            raise
    return await _read_local(url, images, config)


def _checked_url(url: str) -> str:
    url = url.strip()
    if not re.match(r"(?i)https?://", url):
        if "://" in url or not url:
            raise ToolFailure(f"Only http and https URLs can be read, not {url[:200]!r}; pass a full URL.")
        url = "https://" + url  # a bare host such as "example.com/page"
    return url


async def _read_corpus(url: str) -> WebPage | None:
    def lookup() -> WebPage | None:
        corpus = configured_corpus()
        address = url.strip() if "://" in url else "https://" + url.strip()  # a URL, never a title
        document = corpus.read(address) if corpus is not None and url.strip() else None
        if document is None:
            return None
        return _page(document.url, document.title, document.text, "text/markdown", "corpus", ())

    return await run_blocking(lookup)


# ---- local ---------------------------------------------------------------------------------------


async def _read_local(url: str, images: bool, config: ReaderSettings) -> WebPage:
    response = await shared_http().get(url, headers={"Accept": ACCEPT})
    content_type = response.headers.get("content-type", "")
    extracted = await run_blocking(
        lambda: document_text(
            response.content, content_type, response.url, max_pages=config.readweb_pdf_pages, images=images
        )
    )
    found = _html_images(response.text(), response.url) if images and extracted.kind == "html" else ()
    kind = content_type.split(";")[0].strip().lower() or extracted.kind
    return _page(response.url, extracted.title, extracted.text, kind, "local", found)


def _html_images(html: str, base: str) -> tuple[str, ...]:
    sources = re.findall(r"""<img\b[^>]*?\bsrc\s*=\s*["']([^"']+)["']""", html, flags=re.I)
    return _unique(urljoin(base, src) for src in sources if not src.startswith("data:"))


# ---- Jina Reader ---------------------------------------------------------------------------------


async def _read_jina(url: str, images: bool, config: ReaderSettings) -> WebPage:
    headers = {
        "Accept": "application/json",
        "Authorization": f"Bearer {config.jina_api_key}",
        "X-Retain-Images": "all" if images else "none",
    }
    if images:
        headers["X-With-Images-Summary"] = "true"
    response = await shared_http().get(
        config.jina_api_url.rstrip("/") + "/" + url, headers=headers, paid="jina"
    )
    data = _field(response.json(), "data", "Jina Reader")
    tokens = (data.get("usage") or {}).get("tokens") if isinstance(data.get("usage"), dict) else None
    if not response.from_cache and isinstance(tokens, int):
        charge("jina", calls=0, input_tokens=tokens)  # Jina bills by the tokens it returns
    found = data.get("images") or {}
    listed = found.values() if isinstance(found, dict) else found
    return _page(
        data.get("url") or url, data.get("title") or "", data.get("content") or "", "text/markdown", "jina",
        _unique(str(src) for src in listed) if images else (),
    )  # fmt: skip


# ---- Tavily extract ------------------------------------------------------------------------------


async def _read_tavily(url: str, images: bool, config: ReaderSettings) -> WebPage:
    body = {"urls": [url], "include_images": images, "extract_depth": "basic", "format": "markdown"}
    headers = {"Authorization": f"Bearer {config.tavily_api_key}"}
    # An extract is a read: cached like a GET, so a training run replays it offline.
    response = await shared_http().post(
        config.tavily_api_url, json=body, headers=headers, cache=True, paid="tavily"
    )
    answer = response.json()
    results = _field(answer, "results", "Tavily")
    if not results:
        failed = answer.get("failed_results") or [{}]
        reason = failed[0].get("error") if isinstance(failed[0], dict) else None
        raise ToolFailure(
            f"Tavily could not extract {url} ({reason or 'no result'}); check the URL or try READWEB_BACKEND=local."
        )
    result = results[0]
    return _page(
        result.get("url") or url, result.get("title") or "", result.get("raw_content") or "", "text/markdown",
        "tavily", _unique(str(src) for src in result.get("images") or []) if images else (),
    )  # fmt: skip


# ---- shared --------------------------------------------------------------------------------------


def _field(answer: Any, name: str, service: str) -> Any:
    if not isinstance(answer, dict) or answer.get(name) is None:
        raise ToolFailure(f"{service} answered without '{name}'; check its API URL setting or try later.")
    return answer[name]


def _page(url: str, title: str, text: str, content_type: str, backend: Backend, images: Any) -> WebPage:
    if not text.strip():
        raise ToolFailure(
            f"{_where(url)} has no readable text (it may be built by scripts, or empty); "
            "try a browser tool or another source."
        )
    return WebPage(url, title.strip(), text.strip(), content_type, backend, tuple(images))


def _unique(urls: Any) -> tuple[str, ...]:
    return tuple(dict.fromkeys(urls))[:MAX_IMAGES]


def _where(url: str) -> str:
    try:
        parsed = httpx.URL(url)
        return f"{parsed.host}{parsed.path}"
    except (httpx.InvalidURL, TypeError):
        return url[:200]
