"""parxiv-server: arXiv through its export API (Atom), fetched with gaia_kit.web.http, which spaces requests
to export.arxiv.org 3 s apart as arXiv asks, and caches them for offline replay.

ARXIV_API_URL sets the endpoint; ARXIV_MAX_RESULTS caps a search (the reference asked for 300,000).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from gaia_kit import KitServer, ToolFailure, atomic_write, page, run_blocking, serve, session_of
from gaia_kit.core.args import MaxLength, OutputFormat, StartIndex
from gaia_kit.core.hints import hints
from gaia_kit.core.output import formatted
from gaia_kit.core.results import json_result, with_data
from gaia_kit.core.settings import settings
from gaia_kit.pages.extract import pdf_to_text
from gaia_kit.web.errors import HttpFailure
from gaia_kit.web.http import shared_http
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from . import categories
from .feed import Feed, Paper, normalise_id, parse

DEFAULT_API_URL = "https://export.arxiv.org/api/query"
DEFAULT_PDF_URL = "https://arxiv.org/pdf/{id}"  # for an entry without a pdf link, which is rare

server = KitServer(
    "parxiv-server",
    web_facing=True,
    instructions=(
        "arXiv papers: search_papers (keywords, or arXiv's field syntax ti:, au:, abs:, cat:), "
        "get_paper_details for one id, download_paper to save the PDF in the workspace and read its text, "
        "get_categories for the subject codes."
    ),
)


class PaperSearch(BaseModel):
    query: str
    total_results: int
    papers: list[Paper]
    notes: list[str]


PaperId = Annotated[str, Field(description="ArXiv paper ID (e.g., '2301.07041' or 'arxiv:2301.07041')")]


@server.tool(annotations=hints("Search arXiv", read_only=True, open_world=True), output=PaperSearch)
async def search_papers(
    query: Annotated[str, Field(description="Search query (keywords, title, author, etc.)")],
    sort_by: Annotated[
        Literal["relevance", "lastUpdatedDate", "submittedDate"],
        Field(description="Sort by: 'relevance', 'lastUpdatedDate', 'submittedDate'"),
    ] = "relevance",
    sort_order: Annotated[
        Literal["ascending", "descending"], Field(description="Sort order: 'ascending' or 'descending'")
    ] = "descending",
    category: Annotated[
        str | None, Field(description="Filter by ArXiv category (e.g., 'cs.AI', 'math.CO')")
    ] = None,
    output_format: OutputFormat = "markdown",
    max_results: Annotated[
        int, Field(ge=1, description="Papers to return (capped by the server, 50 unless configured)")
    ] = 10,
    start: Annotated[int, Field(ge=0, description="Offset in the results, for the next page")] = 0,
) -> CallToolResult:
    """Search ArXiv papers with flexible criteria.

    Plain words must all match (in any field); arXiv's own syntax works too: ti:, au:, abs:, cat:,
    AND, OR, ANDNOT, quotes for phrases. Results come in pages: the answer says how to get the next.
    """
    cap = _max_results()
    wanted = min(max_results, cap)
    params = {
        "search_query": _search_query(query, category),
        "start": start,
        "max_results": wanted,
        "sortBy": sort_by,
        "sortOrder": sort_order,
    }
    feed = await _fetch(params)
    notes = []
    if max_results > cap:
        notes.append(
            f"max_results {max_results} is above this server's cap; {cap} were asked for (ARXIV_MAX_RESULTS)."
        )
    shown_end = start + len(feed.papers)
    if feed.total > shown_end and feed.papers:
        notes.append(
            f"Papers {start + 1}-{shown_end} of {feed.total}; call again with start={shown_end} for more."
        )
    if not feed.papers:
        raise ToolFailure(
            f"arXiv has no paper matching {query!r}"
            + (f" in {category}" if category else "")
            + (f" past result {start}" if start else "")
            + "; try fewer or other words."
        )
    found = {
        "query": query,
        "total_results": feed.total,
        "papers": [p.as_dict() for p in feed.papers],
        "notes": notes,
    }
    return with_data(page(formatted(found, output_format, _search_md)), found)


@server.tool(annotations=hints("Get arXiv paper", read_only=True, open_world=True), output=Paper)
async def get_paper_details(paper_id: PaperId, output_format: OutputFormat = "markdown") -> CallToolResult:
    """Get detailed information about a specific ArXiv paper.

    Title, authors, dates, categories, abstract, DOI, journal reference, comments and links.
    """
    paper = await _paper(paper_id)
    return with_data(page(formatted(paper.as_dict(), output_format, _paper_md)), paper.as_dict())


@server.tool(
    annotations=hints(
        # saves arxiv/<id>.pdf in the workspace: the same call saves the same file again
        "Download arXiv paper",
        read_only=False,
        destructive=False,
        idempotent=True,
        open_world=True,
    )
)
async def download_paper(
    paper_id: PaperId,
    ctx: Context,
    extract_text: Annotated[bool, Field(description="Whether to extract text content from PDF")] = True,
    output_format: OutputFormat = "markdown",
    start_index: StartIndex = 0,
    max_length: MaxLength = None,
) -> str:
    """Download ArXiv paper PDF and optionally extract text content.

    The PDF is saved in the session workspace as arxiv/<id>.pdf; the text of its first pages
    (ARXIV_TEXT_PAGES, default 30) comes back in pages: read on with start_index.
    """
    paper = await _paper(paper_id)
    url = paper.pdf_url or DEFAULT_PDF_URL.format(id=paper.id)
    limit = settings(ArxivSettings).max_pdf_bytes
    pdf = (await shared_http().get(url, max_bytes=limit)).content
    if not pdf.startswith(b"%PDF"):
        raise ToolFailure(
            f"arXiv answered {url} with something other than a PDF (the paper may offer no PDF); "
            f"read the abstract with get_paper_details instead."
        )
    paths = session_of(ctx).paths
    target = paths.resolve(f"arxiv/{paper.id.replace('/', '_')}.pdf", write=True)
    await run_blocking(_save, target, pdf)
    found: dict[str, Any] = {"paper": paper.as_dict(), "saved_to": paths.display(target), "bytes": len(pdf)}
    if extract_text:
        found.update(
            await run_blocking(_pdf_text, target, found["saved_to"], settings(ArxivSettings).text_pages)
        )
    return page(formatted(found, output_format, _download_md), start_index, max_length)


@server.tool(annotations=hints("arXiv capabilities", read_only=True, open_world=False), output=dict[str, Any])
def get_arxiv_capabilities() -> CallToolResult:
    """Get information about ArXiv service capabilities and configuration."""
    info = {
        "backend": "arXiv export API (Atom), cached by the gaia-env HTTP record/replay cache",
        "api_url": _api_url(),
        "max_results_cap": _max_results(),
        "request_spacing": "3 s between requests to export.arxiv.org (GAIA_HTTP_HOST_INTERVALS)",
        "sort_by": ["relevance", "lastUpdatedDate", "submittedDate"],
        "query_syntax": "plain words (all must match) or ti:, au:, abs:, co:, jr:, cat:, all: with AND/OR/ANDNOT",
        "download": "PDF saved to arxiv/<id>.pdf in the workspace; text of the first ARXIV_TEXT_PAGES pages",
        "output_formats": ["markdown", "json", "text"],
    }
    return json_result(info)


@server.tool(annotations=hints("arXiv categories", read_only=True, open_world=False))
def get_categories(output_format: OutputFormat = "markdown") -> str:
    """Get available ArXiv subject categories."""
    if output_format == "json":
        return json.dumps(categories.GROUPS, indent=2)
    lines = []
    for group, members in categories.GROUPS.items():
        lines += ["", f"## {group}" if output_format == "markdown" else group]
        lines += [f"- {code}: {name}" for code, name in members.items()]
    return page("\n".join(lines).strip())


# --- the API --------------------------------------------------------------------------------------


class ArxivSettings(BaseSettings):
    """ARXIV_* variables; see docs/configuration.md. An empty variable means its default."""

    model_config = SettingsConfigDict(env_prefix="ARXIV_", extra="ignore", env_ignore_empty=True)

    api_url: str = DEFAULT_API_URL
    """The export API's endpoint (a mirror, or a loopback fake in tests)."""
    max_results: int = Field(50, gt=0)
    """The most papers one search returns (the reference asked for 300,000)."""
    max_pdf_bytes: int = Field(50 * 1024 * 1024, gt=0)
    """The largest PDF download_paper fetches."""
    text_pages: int = Field(30, gt=0)
    """How many pages of a downloaded PDF download_paper turns into text."""


def _api_url() -> str:
    return settings(ArxivSettings).api_url


def _max_results() -> int:
    return settings(ArxivSettings).max_results


def _search_query(query: str, category: str | None) -> str:
    if not query.strip():
        raise ToolFailure("The search query is empty; pass some words to search for.")
    if re.search(r"\b(ti|au|abs|co|jr|cat|rn|id|all):|\b(AND|OR|ANDNOT)\b", query):
        expression = query.strip()  # the caller wrote arXiv's syntax
    else:
        words = re.findall(r'"[^"]+"|[^\s"]+', query)
        expression = " AND ".join(f"all:{word}" for word in words)
    if category:
        if category not in categories.ALL and category not in {c.split(".")[0] for c in categories.ALL}:
            raise ToolFailure(
                f"{category!r} is not an arXiv category; get_categories lists them (e.g. 'cs.AI')."
            )
        expression = f"({expression}) AND cat:{category}"
    return expression


async def _fetch(params: dict[str, Any]) -> Feed:
    try:
        response = await shared_http().get(_api_url(), params=params)
    except HttpFailure as exc:
        if exc.status == 404:
            raise ToolFailure(f"The arXiv API at {_api_url()} answered 404; check ARXIV_API_URL.") from None
        raise
    return parse(response.content)


async def _paper(raw_id: str) -> Paper:
    paper_id = normalise_id(raw_id)
    feed = await _fetch({"id_list": paper_id, "max_results": 1})
    if not feed.papers:
        raise ToolFailure(
            f"arXiv has no paper with id {paper_id}; check the id, or find the paper with search_papers."
        )
    return feed.papers[0]


def _save(target: Path, pdf: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, pdf)


def _pdf_text(path: Path, shown: str, max_pages: int) -> dict[str, Any]:
    try:
        extracted = pdf_to_text(path, max_pages, name=f"The PDF saved at {shown}")
    except ToolFailure:
        raise ToolFailure(
            f"The PDF saved at {shown} cannot be read; open the abstract with get_paper_details."
        ) from None
    shown = min(extracted.pages, max_pages)
    pages = extracted.pages
    note = f"first {shown} of {pages} pages (ARXIV_TEXT_PAGES)" if shown < pages else f"all {pages} pages"
    return {"pages": pages, "text_covers": note, "text": extracted.text}


# --- output ---------------------------------------------------------------------------------------


def _paper_lines(paper: dict[str, Any], abstract: bool = True) -> list[str]:
    authors = paper["authors"]
    shown = ", ".join(authors[:10]) + (f" and {len(authors) - 10} more" if len(authors) > 10 else "")
    lines = [
        f"**arXiv:** {paper['id']}",
        f"**Authors:** {shown}",
        f"**Published:** {paper['published'][:10]}   **Updated:** {paper['updated'][:10]}",
        f"**Categories:** {', '.join(paper['categories']) or paper['primary_category']}"
        f" (primary {paper['primary_category']})",
    ]
    for key, label in (("doi", "DOI"), ("journal_ref", "Journal"), ("comment", "Comment")):
        if paper[key]:
            lines.append(f"**{label}:** {paper[key]}")
    lines.append(
        f"**Links:** {paper['abs_url']}" + (f" | PDF {paper['pdf_url']}" if paper["pdf_url"] else "")
    )
    if abstract:
        lines += ["", paper["summary"]]
    return lines


def _paper_md(paper: dict[str, Any]) -> str:
    return "\n".join([f"# {paper['title']}", "", *_paper_lines(paper)])


def _search_md(found: dict[str, Any]) -> str:
    lines = [f"# arXiv search: {found['query']} ({found['total_results']} results)"]
    for paper in found["papers"]:
        lines += ["", f"## {paper['title']}", *_paper_lines(paper)]
    if found["notes"]:
        lines += ["", *found["notes"]]
    return "\n".join(lines)


def _download_md(found: dict[str, Any]) -> str:
    paper = found["paper"]
    lines = [f"# {paper['title']}", "", f"Saved to: {found['saved_to']} ({found['bytes']:,} bytes)"]
    lines += _paper_lines(paper, abstract=False)
    if "text" in found:
        lines += ["", f"Text ({found['text_covers']}):", "", found["text"]]
    return "\n".join(lines)


def check() -> dict[str, Any]:
    return {
        "backend": f"arXiv export API at {_api_url()}",
        "notes": [f"searches capped at {_max_results()} results (ARXIV_MAX_RESULTS)"],
    }


def main() -> None:
    serve(server, check=check)
