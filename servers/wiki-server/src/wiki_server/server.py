"""wiki-server: Wikipedia through the live MediaWiki action API, fetched with gaia_kit.web.http (so answers
are cached by the kit's record/replay cache and training runs can be replayed offline).

WIKI_API_URL sets the endpoint; `{lang}` in it becomes the language code. With a Wikipedia ZIM
configured (WIKI_ZIM_PATH, or GAIA_CORPUS_PATH built from one), every tool but get_article_history
answers from it with no network, for the ZIM's language (offline.py).
"""

from __future__ import annotations

import calendar
import json
import os
import re
from typing import Annotated, Any, NoReturn
from urllib.parse import quote

import mwparserfromhell
from gaia_kit import KitServer, ToolFailure, page, run_blocking, serve
from gaia_kit.core.args import MaxLength, OutputFormat, StartIndex
from gaia_kit.core.hints import hints
from gaia_kit.core.results import json_result, with_data
from gaia_kit.web.http import HttpFailure, shared_http
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from .offline import Article, ZimWiki, offline_wiki

DEFAULT_API_URL = "https://{lang}.wikipedia.org/w/api.php"
MAX_SEARCH_RESULTS = 50  # the API's own ceiling for list=search without bot rights
MAX_LINK_REQUESTS = 10  # 500 links per request: 5,000 links is more than any article has

server = KitServer(
    "wiki-server",
    instructions=(
        "Wikipedia (live MediaWiki API): search_wikipedia to find titles, get_article_content or "
        "get_article_summary to read one, get_article_links and get_article_categories to look around, "
        "get_article_history for the article as it stood on a past date."
    ),
)

Title = Annotated[str, Field(description="Title of the Wikipedia article")]


class WikiHit(BaseModel):
    title: str
    pageid: int | None = None
    snippet: str = ""
    url: str = ""


class WikiSearch(BaseModel):
    query: str
    language: str
    results: list[WikiHit]


class WikiSummary(BaseModel):
    title: str
    url: str
    summary: str


class WikiCategories(BaseModel):
    title: str
    categories: list[str]


class WikiLinks(BaseModel):
    title: str
    links: list[str]


Language = Annotated[str, Field(description="Language code for Wikipedia (e.g., 'en', 'es', 'fr')")]
AutoSuggest = Annotated[bool, Field(description="Whether to use Wikipedia's auto-suggest feature")]
Redirect = Annotated[bool, Field(description="Whether to follow redirects")]


@server.tool(annotations=hints("Search Wikipedia", read_only=True, open_world=True), output=WikiSearch)
async def search_wikipedia(
    query: Annotated[str, Field(description="The search query string")],
    limit: Annotated[int, Field(description="Maximum number of results to return")] = 10,
    language: Language = "en",
    output_format: OutputFormat = "markdown",
) -> CallToolResult:
    """search Wikipedia for articles matching the query.

    Returns titles, short snippets and URLs (at most 50 results); read one with get_article_content.
    """
    limit = max(1, min(limit, MAX_SEARCH_RESULTS))
    wiki = _offline(language)
    if wiki is not None:
        hits = await run_blocking(lambda: wiki.search(query, limit))
    else:
        hits = await _search(query, limit, language)
    if not hits:
        raise ToolFailure(f"Wikipedia ({language}) has no article matching {query!r}; try other words.")
    found = {"query": query, "language": language, "results": hits}
    return with_data(_render(found, output_format, _search_md), found)


@server.tool(annotations=hints("Get Wikipedia article", read_only=True, open_world=True))
async def get_article_content(
    title: Title,
    auto_suggest: AutoSuggest = False,
    redirect: Redirect = True,
    language: Language = "en",
    output_format: OutputFormat = "markdown",
    include_full_content: Annotated[
        bool, Field(description="Whether to include the full article content")
    ] = True,
    start_index: StartIndex = 0,
    max_length: MaxLength = None,
) -> str:
    """Retrieve the full content of a Wikipedia article.

    The article's plain text (sections as headings); long articles come in pages: read on with
    start_index. include_full_content=false gives the introduction only.
    """
    wiki = _offline(language)
    if wiki is not None:
        zim_article = await _offline_article(wiki, title, auto_suggest)
        found = await run_blocking(lambda: wiki.content(zim_article, intro_only=not include_full_content))
        return page(_render(found, output_format, _article_md), start_index, max_length)
    params = {"prop": "extracts|info", "inprop": "url", "explaintext": 1}
    if not include_full_content:
        params["exintro"] = 1
    article = await _article(title, language, auto_suggest, redirect, params)
    found = {
        "title": article["title"],
        "pageid": article.get("pageid"),
        "url": article.get("fullurl") or _article_url(language, article["title"]),
        "content": article.get("extract", ""),
    }
    return page(_render(found, output_format, _article_md), start_index, max_length)


@server.tool(annotations=hints("Get Wikipedia summary", read_only=True, open_world=True), output=WikiSummary)
async def get_article_summary(
    title: Title,
    sentences: Annotated[int, Field(description="Number of sentences to return in the summary")] = 5,
    auto_suggest: AutoSuggest = False,
    redirect: Redirect = True,
    language: Language = "en",
    output_format: OutputFormat = "markdown",
) -> CallToolResult:
    """Get a summary of a Wikipedia article.

    The first `sentences` sentences of the article's introduction.
    """
    wiki = _offline(language)
    if wiki is not None:
        zim_article = await _offline_article(wiki, title, auto_suggest)
        intro = await run_blocking(lambda: wiki.content(zim_article, intro_only=True, links=False))
        article = {"title": intro["title"], "fullurl": intro["url"], "extract": intro["content"]}
    else:
        params = {"prop": "extracts|info", "inprop": "url", "explaintext": 1, "exintro": 1}
        article = await _article(title, language, auto_suggest, redirect, params)
    found = {
        "title": article["title"],
        "url": article.get("fullurl") or _article_url(language, article["title"]),
        "summary": _first_sentences(article.get("extract", ""), max(1, sentences)),
    }
    return with_data(page(_render(found, output_format, _summary_md)), found)


@server.tool(
    annotations=hints("Get Wikipedia categories", read_only=True, open_world=True), output=WikiCategories
)
async def get_article_categories(
    title: Title, language: Language = "en", output_format: OutputFormat = "markdown"
) -> CallToolResult:
    """Get categories for a Wikipedia article.

    Visible categories only (hidden maintenance categories are left out).
    """
    wiki = _offline(language)
    if wiki is not None:
        zim_article = await _offline_article(wiki, title, False)
        found = {"title": zim_article.title, "categories": wiki.categories(zim_article)}
    else:
        params = {"prop": "categories", "cllimit": "max", "clshow": "!hidden"}
        article = await _article(title, language, False, True, params)
        names = [c["title"].split(":", 1)[-1] for c in article.get("categories", [])]
        found = {"title": article["title"], "categories": names}
    return with_data(page(_render(found, output_format, _list_md("categories", "Categories"))), found)


@server.tool(annotations=hints("Get Wikipedia links", read_only=True, open_world=True), output=WikiLinks)
async def get_article_links(
    title: Title,
    language: Language = "en",
    output_format: OutputFormat = "markdown",
    start_index: StartIndex = 0,
    max_length: MaxLength = None,
) -> CallToolResult:
    """Get links from a Wikipedia article.

    Titles of the articles it links to (main namespace), in pages: read on with start_index.
    """
    wiki = _offline(language)
    if wiki is not None:
        zim_article = await _offline_article(wiki, title, False)
        found = {"title": zim_article.title, "links": await run_blocking(lambda: wiki.links(zim_article))}
        return with_data(
            page(_render(found, output_format, _list_md("links", "Links")), start_index, max_length), found
        )
    params: dict[str, Any] = {"prop": "links", "pllimit": "max", "plnamespace": 0}
    links: list[str] = []
    found_title = title
    for _ in range(MAX_LINK_REQUESTS):
        data = await _query(language, {"titles": title, "redirects": 1, **params})
        article = _only_page(data, title, language, allow_missing=True)
        if article is None:
            await _missing_or(title, language)
        found_title = article["title"]
        links += [link["title"] for link in article.get("links", [])]
        if "continue" not in data:
            break
        params.update(data["continue"])
    found = {"title": found_title, "links": links}
    return with_data(
        page(_render(found, output_format, _list_md("links", "Links")), start_index, max_length), found
    )


@server.tool(annotations=hints("Get Wikipedia revision", read_only=True, open_world=True))
async def get_article_history(
    title: Title,
    date: Annotated[
        str,
        Field(
            description="Target date in YYYY/MM/DD format. If day is omitted, last day of month will be used"
        ),
    ],
    language: Language = "en",
    auto_suggest: Annotated[
        bool, Field(description="Whether to use Wikipedia's auto-suggest feature and handle redirects")
    ] = False,
    output_format: OutputFormat = "markdown",
    start_index: StartIndex = 0,
    max_length: MaxLength = None,
) -> str:
    """Get historical version of a Wikipedia page closest to the specified date.

    The revision in force at the end of that day (UTC): its id, timestamp, permanent link and its
    text rendered readable (templates and markup removed), in pages: read on with start_index.
    """
    until = _end_of(date)
    if _offline(language) is not None:
        try:
            return await _history(
                title, until, language, auto_suggest, output_format, start_index, max_length
            )
        except ToolFailure as exc:
            raise ToolFailure(
                f"get_article_history needs the live MediaWiki API (a ZIM holds one revision per article), "
                f"and it failed: {exc}"
            ) from None
    return await _history(title, until, language, auto_suggest, output_format, start_index, max_length)


async def _history(
    title: str,
    until: str,
    language: str,
    auto_suggest: bool,
    output_format: str,
    start_index: int,
    max_length: int | None,
) -> str:
    resolved = title
    if auto_suggest:
        resolved = (await _article(title, language, True, True, {}))["title"]
    params = {
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
    article = _only_page(await _query(language, params), title, language, allow_missing=True)
    if article is None:
        await _missing_or(title, language)
    revisions = article.get("revisions") or []
    if not revisions:
        raise ToolFailure(
            f"The Wikipedia article {article['title']!r} did not exist yet on {until[:10]}; try a later date."
        )
    revision = revisions[0]
    wikitext = revision.get("slots", {}).get("main", {}).get("content", revision.get("content", ""))
    found = {
        "title": article["title"],
        "requested_date": until[:10],
        "revision_id": revision["revid"],
        "timestamp": revision["timestamp"],
        "permanent_link": f"{_site(language)}/w/index.php?oldid={revision['revid']}",
        "content": render_wikitext(wikitext),
    }
    return page(_render(found, output_format, _history_md), start_index, max_length)


@server.tool(
    annotations=hints("Wikipedia capabilities", read_only=True, open_world=False), output=dict[str, Any]
)
def get_wikipedia_capabilities() -> CallToolResult:
    """Get information about Wikipedia service capabilities and configuration."""
    info = {
        "backend": _backend(),
        "api_url": _api_template(),
        "tools": [
            "search_wikipedia",
            "get_article_content",
            "get_article_summary",
            "get_article_categories",
            "get_article_links",
            "get_article_history",
            "get_wikipedia_capabilities",
        ],
        "search_results_max": MAX_SEARCH_RESULTS,
        "output_formats": ["markdown", "json", "text"],
        "history": "revision in force at the end of the given day (UTC), rendered from wikitext",
    }
    return json_result(info)


# --- offline -------------------------------------------------------------------------------------


def _offline(language: str) -> ZimWiki | None:
    """The ZIM, when one is configured and is in this language; else None (the live API answers)."""
    wiki = offline_wiki()
    return wiki if wiki is not None and wiki.language in ("", language) else None


async def _offline_article(wiki: ZimWiki, title: str, auto_suggest: bool) -> Article:
    if not title.strip():
        raise ToolFailure("The title is empty; pass an article title (find one with search_wikipedia).")
    article = await run_blocking(lambda: wiki.article(title))
    if article is not None:
        return article
    hits = await run_blocking(lambda: wiki.search(title, 5))
    if auto_suggest and hits:
        article = await run_blocking(lambda: wiki.article(hits[0]["title"]))
        if article is not None:
            return article
    _missing(title, wiki.language, hits)


# --- the API --------------------------------------------------------------------------------------


def _api_template() -> str:
    return os.environ.get("WIKI_API_URL") or DEFAULT_API_URL


def _api_url(language: str) -> str:
    if not re.fullmatch(r"[a-z][a-z0-9-]{1,15}", language):
        raise ToolFailure(
            f"{language!r} is not a Wikipedia language code; use one like 'en', 'de' or 'zh-yue'."
        )
    return _api_template().replace("{lang}", language)


def _site(language: str) -> str:
    """The site's base URL, for links given to the reader (not fetched)."""
    return _api_url(language).rsplit("/w/api.php", 1)[0].rsplit("/api.php", 1)[0]


def _article_url(language: str, title: str) -> str:
    return f"{_site(language)}/wiki/{quote(title.replace(' ', '_'))}"


async def _query(language: str, params: dict[str, Any]) -> dict[str, Any]:
    url = _api_url(language)
    try:
        response = await shared_http().get(
            url, params={"action": "query", "format": "json", "formatversion": 2, **params}
        )
    except HttpFailure as exc:
        if exc.status == 404:
            raise ToolFailure(
                f"The Wikipedia API at {url} answered 404; check WIKI_API_URL and the language code {language!r}."
            ) from None
        raise
    data = response.json()
    if "error" in data:
        error = data["error"]
        raise ToolFailure(
            f"Wikipedia refused the request ({error.get('info', error.get('code'))}); check the arguments."
        )
    return data


async def _search(query: str, limit: int, language: str) -> list[dict[str, Any]]:
    if not query.strip():
        raise ToolFailure("The search query is empty; pass some words to search for.")
    data = await _query(
        language, {"list": "search", "srsearch": query, "srlimit": limit, "srprop": "snippet"}
    )
    return [
        {
            "title": hit["title"],
            "pageid": hit.get("pageid"),
            "snippet": _strip_html(hit.get("snippet", "")),
            "url": _article_url(language, hit["title"]),
        }
        for hit in data.get("query", {}).get("search", [])
    ]


async def _article(
    title: str, language: str, auto_suggest: bool, redirect: bool, params: dict[str, Any]
) -> dict[str, Any]:
    """The page record for `title`; a missing title fails with the search results as suggestions."""
    if not title.strip():
        raise ToolFailure("The title is empty; pass an article title (find one with search_wikipedia).")
    query = {"titles": title, **params}
    if redirect:
        query["redirects"] = 1
    article = _only_page(await _query(language, query), title, language, allow_missing=True)
    if article is not None:
        return article
    if auto_suggest:
        hits = await _search(title, 1, language)
        if hits:
            query["titles"] = hits[0]["title"]
            article = _only_page(await _query(language, query), title, language, allow_missing=True)
            if article is not None:
                return article
    await _missing_or(title, language)


def _only_page(data: dict[str, Any], title: str, language: str, allow_missing: bool = False) -> Any:
    pages = data.get("query", {}).get("pages", [])
    if not pages or pages[0].get("missing") or pages[0].get("invalid"):
        if allow_missing:
            return None
        raise ToolFailure(
            f"No Wikipedia ({language}) article is titled {title!r}; find the title with search_wikipedia."
        )
    return pages[0]


async def _missing_or(title: str, language: str) -> NoReturn:
    """Fail for a missing article, naming the closest titles the search finds."""
    _missing(title, language, await _search(title, 5, language))


def _missing(title: str, language: str, hits: list[dict[str, Any]]) -> NoReturn:
    if hits:
        names = "; ".join(hit["title"] for hit in hits)
        raise ToolFailure(
            f"No Wikipedia ({language}) article is titled {title!r}; did you mean one of: {names}? "
            f"Call again with one of these titles."
        )
    raise ToolFailure(
        f"No Wikipedia ({language}) article is titled {title!r}, and a search finds nothing close; try other words."
    )


# --- text -----------------------------------------------------------------------------------------


def _end_of(date: str) -> str:
    """'YYYY/MM/DD' or 'YYYY/MM' (or with dashes) -> the last second of that day, as the API wants it."""
    match = re.fullmatch(r"\s*(\d{4})[/-](\d{1,2})(?:[/-](\d{1,2}))?\s*", date)
    if not match:
        raise ToolFailure(f"The date {date!r} is not YYYY/MM/DD or YYYY/MM; write it like 2023/06/15.")
    year, month = int(match[1]), int(match[2])
    if not 1 <= month <= 12:
        raise ToolFailure(f"The date {date!r} has no month {month}; write it like 2023/06/15.")
    last = calendar.monthrange(year, month)[1]
    day = int(match[3]) if match[3] else last
    if not 1 <= day <= last:
        raise ToolFailure(f"The date {date!r} has no day {day} in that month; write it like 2023/06/15.")
    return f"{year:04d}-{month:02d}-{day:02d}T23:59:59Z"


def render_wikitext(wikitext: str) -> str:
    """Readable text from wikitext: headings kept, templates, refs, files and markup removed."""
    code = mwparserfromhell.parse(wikitext)
    for ref in code.filter_tags(matches=lambda node: str(node.tag).strip().lower() == "ref"):
        code.remove(ref)
    for link in code.filter_wikilinks():
        target = str(link.title).strip()  # [[:Category:X]] is a link in the text, [[Category:X]] is not
        if not target.startswith(":") and target.split(":")[0].strip().lower() in _NON_TEXT_LINKS:
            code.remove(link)
    # '#' opens a numbered list in wikitext, so headings wait behind a marker until the markup is gone.
    for heading in code.filter_headings():
        code.replace(heading, f"\n{_HEADING}{heading.level}{_HEADING}{heading.title.strip_code().strip()}\n")
    text = code.strip_code(normalize=True, collapse=True)
    text = re.sub(rf"{_HEADING}(\d){_HEADING}", lambda m: "#" * int(m[1]) + " ", text)
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"^ (?=\S)", "- ", text, flags=re.M)  # list items: strip_code leaves a space where '*' was
    return re.sub(r"\n{3,}", "\n\n", text).strip()


_NON_TEXT_LINKS = {"file", "image", "media", "category"}
_HEADING = "\ue000"  # a private-use character: never in an article, kept by strip_code


def _first_sentences(text: str, count: int) -> str:
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])", text.strip())
    return " ".join(parts[:count])


def _strip_html(snippet: str) -> str:
    return re.sub(r"<[^>]+>", "", snippet).replace("&quot;", '"').replace("&amp;", "&").replace("&#039;", "'")


def _render(found: dict[str, Any], output_format: str, markdown: Any) -> str:
    if output_format == "json":
        return json.dumps(found, indent=2, ensure_ascii=False)
    text = markdown(found)
    if output_format == "text":
        text = re.sub(r"^#+ |\*\*|^- ", "", text, flags=re.M)
    return text


def _search_md(found: dict[str, Any]) -> str:
    lines = [f"# Wikipedia search: {found['query']}", ""]
    for n, hit in enumerate(found["results"], 1):
        lines.append(f"{n}. **{hit['title']}** ({hit['url']})")
        if hit["snippet"]:
            lines.append(f"   {hit['snippet']}")
    return "\n".join(lines)


def _article_md(found: dict[str, Any]) -> str:
    body = re.sub(r"^(=+) *(.*?) *=+$", lambda m: "#" * len(m[1]) + " " + m[2], found["content"], flags=re.M)
    return f"# {found['title']}\n\nURL: {found['url']}\n\n{body}"


def _summary_md(found: dict[str, Any]) -> str:
    return f"# {found['title']}\n\nURL: {found['url']}\n\n{found['summary']}"


def _list_md(key: str, heading: str) -> Any:
    def render(found: dict[str, Any]) -> str:
        items = found[key]
        lines = [f"# {heading} of {found['title']} ({len(items)})", ""]
        lines += [f"- {item}" for item in items] or ["(none)"]
        return "\n".join(lines)

    return render


def _history_md(found: dict[str, Any]) -> str:
    return (
        f"# {found['title']} as of {found['requested_date']}\n\n"
        f"Revision: {found['revision_id']} ({found['timestamp']})\n"
        f"Permanent link: {found['permanent_link']}\n\n{found['content']}"
    )


def _backend() -> str:
    live = "live MediaWiki action API, cached by the gaia-env HTTP record/replay cache"
    wiki = offline_wiki()
    if wiki is None:
        return live
    return f"{wiki.describe()}; other languages and get_article_history: {live}"


def check() -> dict[str, Any]:
    try:
        backend = _backend()
    except ToolFailure as exc:
        return {"backend": f"live MediaWiki API at {_api_template()}", "missing": [str(exc)]}
    return {
        "backend": backend if offline_wiki() else f"live MediaWiki API at {_api_template()}",
        "notes": [
            "answers are cached by the kit's HTTP cache (GAIA_HTTP_CACHE_MODE=replay for offline reruns)"
        ],
    }


def main() -> None:
    serve(server, check=check)
