"""download-server: a file from the web into the session workspace.

The body is streamed by gaia_kit.web.http (SSRF guard on every hop, retries, record/replay cache) into a
temporary file outside the workspace, checked, and moved into place within the session's disk quota
(gaia_kit.core.quota): a failure leaves nothing behind.
DOWNLOAD_MAX_BYTES caps the size, DOWNLOAD_MAX_TIMEOUT_S the time a call may ask for.
"""

from __future__ import annotations

import mimetypes
import re
import unicodedata
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import unquote

import httpx
from gaia_kit import KitServer, PathGuard, ToolFailure, run_blocking, serve, session_of
from gaia_kit.core.args import OutputFormat
from gaia_kit.core.benchmark_guard import screen_file
from gaia_kit.core.hints import hints
from gaia_kit.core.output import formatted
from gaia_kit.core.quota import place, room_for, staged
from gaia_kit.core.results import json_result, with_data
from gaia_kit.core.settings import settings
from gaia_kit.web.errors import TooLarge
from gaia_kit.web.http import shared_http
from gaia_kit.web.response import HttpResponse
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from .sniff import same_kind, sniff_type

MAX_NAME_BYTES = 200
DEFAULT_NAME = "download"

server = KitServer(
    "download-server",
    web_facing=True,
    instructions=(
        "download_file saves a URL's file into the session workspace and reports its size and type; "
        "open it with the matching document, media or filesystem tool."
    ),
)


class DownloadSettings(BaseSettings):
    """See docs/configuration.md, "Web"."""

    model_config = SettingsConfigDict(env_prefix="DOWNLOAD_", extra="ignore")

    max_bytes: int = 100 * 1024 * 1024
    max_timeout_s: int = 600


class Downloaded(BaseModel):
    success: bool
    url: str
    final_url: str
    bytes: int
    content_type: str
    server_content_type: str | None
    notes: list[str]
    saved_to: str


@server.tool(
    annotations=hints(
        # overwrite=true replaces an existing file; the same call saves the same file again
        "Download file",
        read_only=False,
        destructive=True,
        idempotent=True,
        open_world=True,
    ),
    output=Downloaded,
)
async def download_file(
    url: Annotated[str, Field(description="HTTP/HTTPS URL of the file to download")],
    output_file_path: Annotated[
        str,
        Field(
            description="Local path where the file should be saved (absolute or relative to workspace); "
            "a directory (ending in /) takes the file's own name"
        ),
    ],
    ctx: Context,
    overwrite: Annotated[
        bool, Field(description="Whether to overwrite existing files (default: False)")
    ] = False,
    timeout: Annotated[int, Field(ge=1, description="Download timeout in seconds (default: 60)")] = 60,
    output_format: OutputFormat = "markdown",
) -> CallToolResult:
    """Download a file from a URL into the session workspace.

    The file name is made safe, the size is capped (see get_download_capabilities) and so is the
    session workspace's disk quota, the type is sniffed from the bytes, and the file appears only
    once complete: a failed download leaves nothing behind. An existing file is kept unless
    overwrite is true.
    """
    config = settings(DownloadSettings)
    paths = session_of(ctx).paths
    target, into_folder = _target(paths, output_file_path)
    folder = target if into_folder else target.parent
    if not into_folder:
        _check_free(paths, target, overwrite)
    seconds = min(timeout, config.max_timeout_s)
    room = await run_blocking(room_for, target)
    limit = config.max_bytes if room is None else min(config.max_bytes, room)
    with staged(target, suffix=".part") as temporary:
        try:
            response = await shared_http().download(
                url, temporary, max_bytes=max(limit, 1), timeout_s=seconds
            )
        except TooLarge:
            raise ToolFailure(_too_large(url, config.max_bytes, room)) from None
        await run_blocking(screen_file, temporary, response.url)  # a file that quotes the task never lands
        if into_folder:
            target = paths.resolve(str(folder / _name_of(response)), write=True)
        _check_free(paths, target, overwrite)  # again: the name may be new, or another call took it
        report = await run_blocking(_finish, temporary, target, response, overwrite)
    report = {"url": url, **report, "saved_to": paths.display(target)}
    if timeout > seconds:
        report["notes"].append(f"timeout {timeout} s was lowered to {seconds} s (DOWNLOAD_MAX_TIMEOUT_S).")
    report = {"success": True, **report}
    return with_data(formatted(report, output_format, _report_md), report)


@server.tool(
    annotations=hints("Download capabilities", read_only=True, open_world=False), output=dict[str, Any]
)
def get_download_capabilities() -> CallToolResult:
    """Get information about download service capabilities and configuration."""
    config = settings(DownloadSettings)
    info = {
        "protocols": ["http", "https"],
        "max_file_bytes": config.max_bytes,
        "max_timeout_s": config.max_timeout_s,
        "default_timeout_s": 60,
        "saves_to": "the session workspace only (absolute paths must lie inside it)",
        "file_names": "control and reserved characters become '_'; a directory target takes the file's own name",
        "atomic": "streamed to a hidden .part file, moved into place when complete",
        "quota": "the file must fit in the session workspace's quota (GAIA_WORKSPACE_MAX_MB, GAIA_WORKSPACE_MAX_FILES)",
        "content_type": "sniffed from the first bytes and compared with the server's Content-Type",
        "address_guard": "loopback, private, link-local and cloud-metadata addresses are refused (GAIA_HTTP_ALLOW)",
        "cache": "downloads up to GAIA_HTTP_CACHE_MAX_FILE_BYTES are recorded for offline replay",
        "output_formats": ["markdown", "json", "text"],
    }
    return json_result(info)


# --- where the file goes --------------------------------------------------------------------------


def _target(paths: PathGuard, raw: str) -> tuple[Path, bool]:
    """The checked path, and whether it is a folder (the file then takes the name the answer gives)."""
    if not raw or not raw.strip():
        raise ToolFailure(
            "output_file_path is empty; pass a file path in the workspace, such as 'files/report.pdf'."
        )
    checked = paths.resolve(raw, write=True)
    if raw.endswith("/") or checked.is_dir():
        return checked, True
    return paths.resolve(str(checked.parent / safe_name(checked.name)), write=True), False


def safe_name(name: str) -> str:
    """A file name with no path separators, control or reserved characters, nor leading dots."""
    name = unicodedata.normalize("NFC", name)
    name = re.sub(r'[\x00-\x1f\x7f<>:"/\\|?*]', "_", name)
    name = re.sub(r"\s+", " ", name).strip(" .")
    if not name:
        return DEFAULT_NAME
    stem, dot, extension = name.rpartition(".")
    if len(name.encode()) > MAX_NAME_BYTES:
        keep = f".{extension[:16]}" if dot and stem else ""
        cut = (stem if dot and stem else name).encode()[: MAX_NAME_BYTES - len(keep.encode())]
        name = cut.decode(errors="ignore") + keep
    return name


def _name_of(response: HttpResponse) -> str:
    """The answer's own name: Content-Disposition, else the URL's last path segment."""
    disposition = response.headers.get("content-disposition", "")
    found = re.search(r"filename\*\s*=\s*[\w-]+''([^;]+)", disposition, flags=re.I) or re.search(
        r'filename\s*=\s*"?([^";]+)"?', disposition, flags=re.I
    )
    if found:
        return safe_name(unquote(found.group(1)).rsplit("/", 1)[-1].rsplit("\\", 1)[-1])
    segment = unquote(httpx.URL(response.url).path.rstrip("/").rsplit("/", 1)[-1])
    return safe_name(segment)


def _check_free(paths: PathGuard, target: Path, overwrite: bool) -> None:
    if target.is_dir():
        raise ToolFailure(f"{paths.display(target)} is a directory; name a file inside it.")
    if target.exists() and not overwrite:
        raise ToolFailure(
            f"{paths.display(target)} already exists; pass overwrite=true to replace it, "
            "or choose another output_file_path."
        )


# --- the file -------------------------------------------------------------------------------------


def _finish(temporary: Path, target: Path, response: HttpResponse, overwrite: bool) -> dict[str, Any]:
    """Sniff the complete file, then move it into place (without overwrite, only if the name is free)."""
    with temporary.open("rb") as handle:
        head = handle.read(8192)
    size = temporary.stat().st_size
    declared = response.headers.get("content-type", "").split(";")[0].strip().lower()
    sniffed = sniff_type(head)
    notes = []
    if sniffed and declared and not same_kind(declared, sniffed):
        notes.append(f"The server called it {declared}, but the bytes are {sniffed}.")
    by_name = mimetypes.guess_type(target.name)[0]
    if sniffed and by_name and not same_kind(by_name, sniffed):
        notes.append(f"The name's extension suggests {by_name}, but the bytes are {sniffed}.")
    if size == 0:
        notes.append("The server sent an empty file.")
    try:
        place(temporary, target, replace=overwrite)
    except FileExistsError:
        raise ToolFailure(
            f"{target.name} appeared while downloading; pass overwrite=true, or choose another output_file_path."
        ) from None
    return {
        "final_url": response.url,
        "bytes": size,
        "content_type": sniffed or declared or "application/octet-stream",
        "server_content_type": declared or None,
        "notes": notes,
    }


def _too_large(url: str, max_bytes: int, room: int | None) -> str:
    if room is not None and room < max_bytes:
        return (
            f"The file at {url[:200]} is larger than the {room / 2**20:,.1f} MB left in the session "
            "workspace's quota (GAIA_WORKSPACE_MAX_MB); nothing was saved. Delete files the session no "
            "longer needs (for example with a terminal command: rm -r <path>), then download again."
        )
    return (
        f"The file at {url[:200]} is larger than {max_bytes:,} bytes (DOWNLOAD_MAX_BYTES); "
        "nothing was saved. Find a smaller file, or ask for the limit to be raised."
    )


def _report_md(report: dict[str, Any]) -> str:
    declared = report["server_content_type"]
    said = f" (server said {declared})" if declared and declared != report["content_type"] else ""
    lines = [
        "# Download complete",
        "",
        f"**Saved to:** {report['saved_to']}",
        f"**Size:** {report['bytes']:,} bytes",
        f"**Type:** {report['content_type']}{said}",
        f"**URL:** {report['url']}",
    ]
    if report["final_url"] != report["url"]:
        lines.append(f"**Redirected to:** {report['final_url']}")
    return "\n".join(lines + [f"Note: {note}" for note in report["notes"]])


def check() -> dict[str, Any]:
    config = settings(DownloadSettings)
    return {
        "backend": "HTTP(S) via gaia_kit.web.http into the session workspace",
        "notes": [f"files up to {config.max_bytes:,} bytes (DOWNLOAD_MAX_BYTES)"],
    }


def main() -> None:
    serve(server, check=check)
