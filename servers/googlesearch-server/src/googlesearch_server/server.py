"""googlesearch-server: the reference `search_google` tool over the kit's web search backends.

Google Programmable Search when GOOGLE_API_KEY and GOOGLE_CSE_ID are set, else SearXNG when
SEARXNG_URL is set, else the offline local index (GAIA_CORPUS_PATH); SEARCH_BACKEND forces one.
The backends live in gaia_kit.pages.search, shared with google-search.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from gaia_kit import KitServer, page, serve
from gaia_kit.core.hints import hints
from gaia_kit.core.results import json_result, with_data
from gaia_kit.pages.search import (
    GOOGLE_PAGE,
    SearchData,
    describe_backend,
    render,
    search_check,
    search_data,
    web_search,
)
from mcp_types import CallToolResult
from pydantic import Field

server = KitServer(
    "googlesearch-server",
    web_facing=True,
    instructions=(
        "Web search: search_google returns titles, URLs and snippets; get_search_capabilities says "
        "which backend (Google, SearXNG or the offline index) answers."
    ),
)


@server.tool(annotations=hints("Google search", read_only=True, open_world=True), output=SearchData)
async def search_google(
    query: Annotated[str, Field(description="The search query string to search for")],
    num_results: Annotated[
        int, Field(description="Number of search results to return (1-10, default: 5)")
    ] = 5,
    safe_search: Annotated[bool, Field(description="Whether to enable safe search filtering")] = True,
    language: Annotated[
        str, Field(description="Language code for search results (e.g., 'en', 'es', 'fr')")
    ] = "en",
    country: Annotated[
        str, Field(description="Country code for search results (e.g., 'us', 'uk', 'ca')")
    ] = "us",
    output_format: Annotated[
        Literal["markdown", "json", "text"], Field(description="Output format: 'markdown', 'json', or 'text'")
    ] = "json",
) -> CallToolResult:
    """Search the web using Google Custom Search API.

    Titles, URLs and snippets of the best results (at most 10); read a result with a page-reading
    tool. The backend is Google Programmable Search, SearXNG or an offline index, as configured.
    """
    found = await web_search(
        query, max(1, min(num_results, GOOGLE_PAGE)), safe=safe_search, language=language, country=country
    )
    return with_data(page(render(found, output_format)), search_data(found))


@server.tool(
    annotations=hints("Search capabilities", read_only=True, open_world=False), output=dict[str, Any]
)
def get_search_capabilities() -> CallToolResult:
    """Get information about search service capabilities and configuration."""
    info: dict[str, Any] = {
        "backend": describe_backend(),
        "backends": {
            "google": "Google Programmable Search (GOOGLE_API_KEY, GOOGLE_CSE_ID)",
            "searxng": "a SearXNG instance's JSON API (SEARXNG_URL)",
            "corpus": "the offline local index (GAIA_CORPUS_PATH, built by `gaia-env corpus build`)",
        },
        "selection": "SEARCH_BACKEND, or auto: google, then searxng, then corpus, whichever is configured",
        "tools": ["search_google", "get_search_capabilities"],
        "max_results": GOOGLE_PAGE,
        "options": ["safe_search", "language", "country"],
        "output_formats": ["json", "markdown", "text"],
        "cache": "online answers are cached by the gaia-env HTTP record/replay cache (GAIA_HTTP_CACHE_MODE)",
    }
    return json_result(info)


def check() -> dict[str, Any]:
    return search_check()


def main() -> None:
    serve(server, check=check)
