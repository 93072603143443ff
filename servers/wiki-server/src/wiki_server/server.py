"""wiki-server: Wikipedia, from the live MediaWiki action API (mediawiki.py) or, for its language,
a Wikipedia ZIM with no network (offline.py). Every tool reads through one Wiki (wiki.py) that
backend.py chooses from the settings; render.py makes the answers.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from gaia_kit import KitServer, ToolFailure, page, serve
from gaia_kit.core.args import MaxLength, OutputFormat, StartIndex
from gaia_kit.core.benchmark_guard import screen_text
from gaia_kit.core.hints import hints
from gaia_kit.core.output import formatted
from gaia_kit.core.results import json_result, with_data
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from . import render
from .backend import check, describe, wiki_for
from .mediawiki import api_template
from .wiki import end_of

MAX_SEARCH_RESULTS = 50  # the API's own ceiling for list=search without bot rights

server = KitServer(
    "wiki-server",
    web_facing=True,
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
    hits = await wiki_for(language).search(query, max(1, min(limit, MAX_SEARCH_RESULTS)))
    if not hits:
        raise ToolFailure(f"Wikipedia ({language}) has no article matching {query!r}; try other words.")
    found = {"query": query, "language": language, "results": [asdict(hit) for hit in hits]}
    return with_data(formatted(found, output_format, render.search), found)


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
    text = await wiki_for(language).content(
        title, auto_suggest=auto_suggest, redirect=redirect, intro_only=not include_full_content
    )
    screen_text(text.content, text.url, what="article")  # the whole article, before it is paged
    return page(formatted(asdict(text), output_format, render.article), start_index, max_length)


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
    intro = await wiki_for(language).introduction(title, auto_suggest=auto_suggest, redirect=redirect)
    summary = render.first_sentences(intro.content, max(1, sentences))
    found = {"title": intro.title, "url": intro.url, "summary": summary}
    return with_data(page(formatted(found, output_format, render.summary)), found)


@server.tool(
    annotations=hints("Get Wikipedia categories", read_only=True, open_world=True), output=WikiCategories
)
async def get_article_categories(
    title: Title, language: Language = "en", output_format: OutputFormat = "markdown"
) -> CallToolResult:
    """Get categories for a Wikipedia article.

    Visible categories only (hidden maintenance categories are left out).
    """
    found_title, categories = await wiki_for(language).categories(title)
    found = {"title": found_title, "categories": categories}
    return with_data(page(formatted(found, output_format, render.listing("categories", "Categories"))), found)


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
    found_title, links = await wiki_for(language).links(title)
    found = {"title": found_title, "links": links}
    shown = formatted(found, output_format, render.listing("links", "Links"))
    return with_data(page(shown, start_index, max_length), found)


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
    until = end_of(date)
    revision = await wiki_for(language).history(title, until, auto_suggest)
    return page(formatted(asdict(revision), output_format, render.history), start_index, max_length)


@server.tool(
    annotations=hints("Wikipedia capabilities", read_only=True, open_world=False), output=dict[str, Any]
)
def get_wikipedia_capabilities() -> CallToolResult:
    """Get information about Wikipedia service capabilities and configuration."""
    info = {
        "backend": describe(),
        "api_url": api_template(),
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


def main() -> None:
    serve(server, check=check)
