"""google-search: the reference `search` and `read_webpage` tools.

Search goes through gaia_kit.pages.search (Google Programmable Search, SearXNG or the offline local
index, as configured); pages are read by gaia_kit.pages.reader, which answers from the offline index
when it holds the page and fetches it otherwise.
"""

from __future__ import annotations

from typing import Annotated, Any

from gaia_kit import KitServer, ToolFailure, page, serve
from gaia_kit.core.args import MaxLength, StartIndex
from gaia_kit.core.hints import hints
from gaia_kit.core.results import with_data
from gaia_kit.pages.reader import read_page, reader_backend
from gaia_kit.pages.search import GOOGLE_PAGE, SearchData, render, search_check, search_data, web_search
from mcp_types import CallToolResult
from pydantic import Field

DEFAULT_RESULTS = 5

server = KitServer(
    "google-search",
    web_facing=True,
    instructions="Web search (search) and page reading (read_webpage, paged for long pages).",
)


@server.tool(annotations=hints("Web search", read_only=True, open_world=True), output=SearchData)
async def search(
    query: Annotated[str, Field(description="Search query")],
    num: Annotated[float | None, Field(description="Number of results (1-10)", ge=1, le=10)] = None,
) -> CallToolResult:
    """Perform a web search query.

    Titles, URLs and snippets; read a result with read_webpage.
    """
    count = DEFAULT_RESULTS if num is None else max(1, min(int(num), GOOGLE_PAGE))
    found = await web_search(query, count)
    return with_data(page(render(found, "markdown")), search_data(found))


@server.tool(annotations=hints("Read webpage", read_only=True, open_world=True))
async def read_webpage(
    url: Annotated[str, Field(description="URL of the webpage to read")],
    start_index: StartIndex = 0,
    max_length: MaxLength = None,
) -> str:
    """Fetch and extract text content from a webpage.

    The page's main content as markdown (PDFs as page text); long pages come in pages: read on
    with start_index.
    """
    found = await read_page(url)
    heading = f"# {found.title}\n\n" if found.title else ""
    return page(f"{heading}URL: {found.url}\n\n{found.text}", start_index, max_length)


def check() -> dict[str, Any]:
    found = search_check()
    try:
        reading = reader_backend()
    except ToolFailure as exc:  # a bad READWEB_BACKEND: doctor shows it
        reading = "none"
        found["missing"].append(str(exc))
    return {"backend": f"search: {found['backend']}; pages: {reading}", "missing": found["missing"]}


def main() -> None:
    serve(server, check=check)
