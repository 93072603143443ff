"""readweb-server: one web page (or PDF link) as clean markdown, through gaia_kit.pages.reader.

The reader fetches with gaia_kit.web.http (SSRF guard, retries, size cap, record/replay cache) and
extracts locally with no key; READWEB_BACKEND, JINA_API_KEY and TAVILY_API_KEY pick a keyed backend.
"""

from __future__ import annotations

from typing import Annotated, Any

from gaia_kit import KitServer, ToolFailure, page, serve
from gaia_kit.core.args import MaxLength, StartIndex
from gaia_kit.core.hints import hints
from gaia_kit.core.settings import settings
from gaia_kit.pages.reader import ReaderSettings, WebPage, read_page, reader_backend
from pydantic import Field

server = KitServer(
    "readweb-server",
    web_facing=True,
    instructions=(
        "read_url returns a web page's main content (or a linked PDF's text) as markdown; "
        "long pages come in parts: call again with the start_index the answer names."
    ),
)


@server.tool(annotations=hints("Read URL", read_only=True, open_world=True))
async def read_url(
    url: Annotated[str, Field(description="The URL to read")],
    include_images: Annotated[bool, Field(description="Also list the images found on the page")] = False,
    start_index: StartIndex = 0,
    max_length: MaxLength = None,
) -> str:
    """Extract a web page's content and convert it to clean, readable markdown.

    Navigation, ads and footers are dropped; links and tables are kept. A PDF link gives the PDF's
    text, page by page. Long pages come in parts: the answer ends with the start_index to read on.
    """
    found = await read_page(url, images=include_images)
    return page(_render(found), start_index, max_length)


def _render(found: WebPage) -> str:
    lines = [f"# {found.title}"] if found.title else []
    lines += [f"URL: {found.url}", f"Content type: {found.content_type}", "", found.text]
    if found.images:
        lines += ["", "## Images", *(f"- {src}" for src in found.images)]
    return "\n".join(lines)


def check() -> dict[str, Any]:
    config = settings(ReaderSettings)
    try:
        backend = reader_backend()
    except ToolFailure as exc:
        return {"backend": "none", "missing": [str(exc)]}
    fallback = ", local extraction if it fails" if config.readweb_backend in ("", "auto") else ""
    described = {
        "local": "local fetch + trafilatura (keyless)",
        "jina": f"Jina Reader at {config.jina_api_url}{fallback}",
        "tavily": f"Tavily extract at {config.tavily_api_url}{fallback}",
    }[backend]
    notes = [] if backend != "local" else ["JINA_API_KEY or TAVILY_API_KEY would enable a hosted reader"]
    return {"backend": described, "notes": notes}


def main() -> None:
    serve(server, check=check)
