"""wayback-server: the Internet Archive's Wayback Machine through its public APIs.

- list_archived_versions: the CDX API (`output=json`, adjacent identical captures collapsed by digest).
- get_archived_content: the availability API finds the capture nearest the timestamp, then the raw
  capture is fetched in the `id_` form (no Wayback toolbar or rewritten links); the answer gives the
  capture's actual time, read from the final URL after Wayback's own redirects.

All requests go through gaia_kit.web.http (at most two at a time to archive.org, GAIA_HTTP_HOST_LIMITS)
and its record/replay cache. WAYBACK_*_URL settings point the server elsewhere (tests, mirrors).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from gaia_kit import KitServer, ToolFailure, page, run_blocking, serve, truncate
from gaia_kit.core.args import MaxLength, OutputFormat, StartIndex
from gaia_kit.core.benchmark_guard import screen_text
from gaia_kit.core.hints import hints
from gaia_kit.core.output import formatted
from gaia_kit.core.results import json_result, with_data
from gaia_kit.core.settings import settings
from gaia_kit.documents.text import sniff_encoding
from gaia_kit.pages.extract import document_text
from gaia_kit.web.errors import HttpFailure
from gaia_kit.web.http import shared_http
from gaia_kit.web.response import HttpResponse
from mcp_types import CallToolResult
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

server = KitServer(
    "wayback-server",
    web_facing=True,
    instructions=(
        "The Wayback Machine: list_archived_versions shows when a URL was captured; get_archived_content "
        "returns the capture nearest a timestamp (YYYYMMDDhhmmss, or a prefix such as 2015 or 201503)."
    ),
)

CDX_FIELDS = ["timestamp", "original", "mimetype", "statuscode", "digest", "length"]


class WaybackSettings(BaseSettings):
    """See docs/configuration.md, "Web"."""

    model_config = SettingsConfigDict(env_prefix="WAYBACK_", extra="ignore")

    availability_url: str = "https://archive.org/wayback/available"
    cdx_url: str = "https://web.archive.org/cdx/search/cdx"
    snapshot_url: str = "https://web.archive.org/web"
    max_versions: int = 1000
    """Cap on list_archived_versions (limit=0 asks for all of them)."""
    truncate_chars: int = 8000
    """Length of get_archived_content's text when truncate_content is true."""
    pdf_pages: int = 50


SiteUrl = Annotated[str, Field(description="The URL of the website to check for archived versions")]


@server.tool(
    annotations=hints("List Wayback captures", read_only=True, open_world=True), output=dict[str, Any]
)
async def list_archived_versions(
    url: SiteUrl,
    limit: Annotated[int, Field(description="Maximum number of versions to return (0 for all)")] = 10,
    from_date: Annotated[str | None, Field(description="Start date filter (YYYYMMDDhhmmss)")] = None,
    to_date: Annotated[str | None, Field(description="End date filter (YYYYMMDDhhmmss)")] = None,
    output_format: OutputFormat = "markdown",
) -> CallToolResult:
    """List available archived versions of a URL from the Wayback Machine.

    Captures come oldest first from the CDX API; consecutive captures with identical content are
    shown once. Dates may be a prefix (2015, 201503). When more exist, the answer says how to go on.
    """
    config = settings(WaybackSettings)
    site = _site(url)
    cap = config.max_versions
    wanted = cap if limit <= 0 else min(limit, cap)
    params: dict[str, Any] = {"url": site, "output": "json", "fl": ",".join(CDX_FIELDS), "collapse": "digest"}
    params |= {"limit": wanted + 1}  # one more than shown tells whether there are more
    if from_date:
        params["from"] = _timestamp(from_date, "from_date")
    if to_date:
        params["to"] = _timestamp(to_date, "to_date")
    rows = _cdx_rows(await _get(config.cdx_url, "WAYBACK_CDX_URL", params))
    versions = [_version(row, config) for row in rows[:wanted]]
    if not versions:
        window = f" between {from_date or 'the start'} and {to_date or 'now'}" if from_date or to_date else ""
        raise ToolFailure(
            f"The Wayback Machine has no capture of {site}{window}; check the URL (try it with or without "
            "www.) or widen the dates."
        )
    notes = []
    if len(rows) > wanted:
        notes.append(
            f"More captures exist; call again with from_date={versions[-1]['timestamp']} to continue"
            + (f" (at most {cap} per call, WAYBACK_MAX_VERSIONS)." if wanted == cap else ".")
        )
    found = {"url": site, "count": len(versions), "versions": versions, "notes": notes}
    return with_data(page(formatted(found, output_format, _versions_md)), found)


@server.tool(annotations=hints("Get Wayback capture", read_only=True, open_world=True))
async def get_archived_content(
    url: Annotated[str, Field(description="The URL of the website to fetch archived content from")],
    timestamp: Annotated[str, Field(description="The timestamp of the desired version (YYYYMMDDhhmmss)")],
    extract_text_only: Annotated[
        bool, Field(description="Extract only text content, removing HTML tags")
    ] = True,
    truncate_content: Annotated[
        bool, Field(description="Truncate content to manageable length for LLMs")
    ] = False,
    output_format: OutputFormat = "markdown",
    start_index: StartIndex = 0,
    max_length: MaxLength = None,
) -> str:
    """Fetch content from a specific archived page version.

    The capture nearest the timestamp is used; the answer gives its actual time. The page comes as
    archived (no Wayback toolbar), as markdown when extract_text_only, else as the raw HTML. Long
    content comes in parts: the answer ends with the start_index to read on.
    """
    config = settings(WaybackSettings)
    site = _site(url)
    wanted = _timestamp(timestamp, "timestamp")
    nearest = await _nearest(site, wanted, config)
    target = nearest[1] if nearest else site
    snapshot = f"{config.snapshot_url.rstrip('/')}/{nearest[0] if nearest else wanted}id_/{target}"
    try:
        response = await shared_http().get(snapshot)
    except HttpFailure as exc:
        if exc.status not in (404, 410):
            raise
        raise ToolFailure(
            f"The Wayback Machine has no capture of {site} near {wanted}; list_archived_versions shows "
            "which dates exist."
        ) from None
    found = await run_blocking(_content, response, site, wanted, extract_text_only, config)
    screen_text(found["content"], found["archive_url"])  # the whole capture, before it is paged
    if truncate_content:
        found["content"] = truncate(
            found["content"], config.truncate_chars, note="Pass truncate_content=false to read it all."
        )
    return page(formatted(found, output_format, _content_md), start_index, max_length)


@server.tool(
    annotations=hints("Wayback capabilities", read_only=True, open_world=False), output=dict[str, Any]
)
def get_wayback_capabilities() -> CallToolResult:
    """Get Wayback Machine service capabilities and configuration."""
    config = settings(WaybackSettings)
    info = {
        "apis": {
            "versions": f"CDX {config.cdx_url} (output=json, collapse=digest)",
            "nearest_capture": f"availability {config.availability_url}",
            "content": f"raw captures {config.snapshot_url}/<timestamp>id_/<url> (no Wayback toolbar)",
        },
        "timestamps": "YYYYMMDDhhmmss or a prefix (YYYY, YYYYMM, YYYYMMDD); dashes, colons and spaces are ignored",
        "max_versions_per_call": config.max_versions,
        "truncate_chars": config.truncate_chars,
        "content": "markdown of the page's main text (extract_text_only) or raw HTML; PDFs as page text",
        "rate": "at most 2 concurrent requests to archive.org (GAIA_HTTP_HOST_LIMITS); answers cached",
        "output_formats": ["markdown", "json", "text"],
    }
    return json_result(info)


# --- the APIs -------------------------------------------------------------------------------------


def _site(url: str) -> str:
    site = url.strip()
    if not site or any(c.isspace() for c in site):
        raise ToolFailure(f"{url[:200]!r} is not a URL; pass an address such as 'example.com/page'.")
    return site


def _timestamp(raw: str, name: str) -> str:
    digits = re.sub(r"[-:\sTZ/]", "", raw.strip())
    if not re.fullmatch(r"\d{4,14}", digits):
        raise ToolFailure(
            f"{name} {raw!r} is not a date; write YYYYMMDDhhmmss or a prefix such as 2015 or 201503."
        )
    return digits


async def _get(endpoint: str, setting: str, params: dict[str, Any]) -> HttpResponse:
    try:
        return await shared_http().get(endpoint, params=params)
    except HttpFailure as exc:
        if exc.status in (404, 410):
            raise ToolFailure(
                f"The Wayback API at {endpoint} answered {exc.status}; check {setting}."
            ) from None
        raise


def _cdx_rows(response: HttpResponse) -> list[dict[str, str]]:
    if not response.content.strip():
        return []  # the CDX API answers an empty body, not [], for some URLs without captures
    table = response.json()
    if not isinstance(table, list) or (table and not isinstance(table[0], list)):
        raise ToolFailure("The CDX API answered in an unexpected shape; check WAYBACK_CDX_URL.")
    header, rows = (table[0], table[1:]) if table else ([], [])
    return [dict(zip(header, row, strict=False)) for row in rows]


async def _nearest(site: str, wanted: str, config: WaybackSettings) -> tuple[str, str] | None:
    """(timestamp, original URL) of the capture the availability API finds nearest, or None."""
    params = {"url": site, "timestamp": wanted}
    try:
        response = await _get(config.availability_url, "WAYBACK_AVAILABILITY_URL", params)
    except HttpFailure as exc:
        if exc.status == 429 or exc.status >= 500:
            return None  # the id_ form finds the nearest capture too, by redirecting to it
        raise
    answer = response.json()
    closest = (answer.get("archived_snapshots") or {}).get("closest") if isinstance(answer, dict) else None
    if not closest or not closest.get("available", True) or not closest.get("timestamp"):
        return None
    original = re.sub(r"^.*?/web/\d+[a-z_]*/", "", closest.get("url", "")) or site
    return str(closest["timestamp"]), original


def _version(row: dict[str, str], config: WaybackSettings) -> dict[str, Any]:
    stamp = row.get("timestamp", "")
    length = row.get("length", "")
    return {
        "timestamp": stamp,
        "date": _iso(stamp),
        "original": row.get("original", ""),
        "status": row.get("statuscode", ""),
        "mimetype": row.get("mimetype", ""),
        "length": int(length) if length.isdigit() else None,
        "archive_url": f"{config.snapshot_url.rstrip('/')}/{stamp}/{row.get('original', '')}",
    }


def _iso(stamp: str) -> str:
    try:
        return datetime.strptime(stamp[:14].ljust(14, "0"), "%Y%m%d%H%M%S").replace(tzinfo=UTC).isoformat()
    except ValueError:
        return stamp


def _content(
    response: HttpResponse, site: str, wanted: str, extract: bool, config: WaybackSettings
) -> dict[str, Any]:
    final = re.search(r"/web/(\d{4,14})[a-z_]*/(.*)$", response.url)
    actual = final.group(1) if final else wanted
    original = final.group(2) if final else site
    content_type = response.headers.get("content-type", "")
    if extract:
        extracted = document_text(response.content, content_type, original, max_pages=config.pdf_pages)
        title, text = extracted.title, extracted.text
    else:
        if sniff_encoding(response.content[:65536]) is None:
            raise ToolFailure(
                f"The capture of {site} is binary ({content_type or 'unknown type'}); pass "
                "extract_text_only=true for a PDF's text, or save it with download_file."
            )
        title, text = "", response.text()
    if not text.strip():
        raise ToolFailure(f"The capture of {site} at {actual} has no readable text; try another timestamp.")
    return {
        "url": site,
        "requested_timestamp": wanted,
        "snapshot_timestamp": actual,
        "snapshot_date": _iso(actual),
        "original": original,
        "archive_url": f"{config.snapshot_url.rstrip('/')}/{actual}/{original}",
        "content_type": content_type.split(";")[0].strip(),
        "title": title,
        "content": text,
    }


# --- output ---------------------------------------------------------------------------------------


def _versions_md(found: dict[str, Any]) -> str:
    lines = [f"# Archived versions of {found['url']} ({found['count']} shown)", ""]
    for version in found["versions"]:
        size = f", {version['length']:,} bytes" if version["length"] is not None else ""
        lines.append(
            f"- **{version['timestamp']}** ({version['date']}) HTTP {version['status']}, "
            f"{version['mimetype']}{size}: {version['archive_url']}"
        )
    return "\n".join(lines + ([""] + found["notes"] if found["notes"] else []))


def _content_md(found: dict[str, Any]) -> str:
    lines = [f"# {found['title'] or found['url']}", ""]
    lines.append(f"**Snapshot:** {found['snapshot_timestamp']} ({found['snapshot_date']})")
    if found["snapshot_timestamp"] != found["requested_timestamp"]:
        lines.append(f"**Requested:** {found['requested_timestamp']} (the nearest capture is shown)")
    lines += [f"**Archived URL:** {found['archive_url']}", f"**Content type:** {found['content_type']}"]
    return "\n".join(lines + ["", found["content"]])


def check() -> dict[str, Any]:
    config = settings(WaybackSettings)
    return {"backend": f"Wayback Machine APIs (CDX {config.cdx_url}, availability, id_ captures)"}


def main() -> None:
    serve(server, check=check)
