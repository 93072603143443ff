"""Media files an agent names, and the ffmpeg-family tools that read them, for the audio, image and
video servers alike.

A local path is opened through the session's path guard (no link followed out of its root) and
handed to ffmpeg as /proc/<pid>/fd/N of that open file; a URL through the kit's HTTP client (SSRF guard,
size cap, cache) into a scratch folder beside the session workspaces (gaia_kit.core.quota.scratch),
removed after the call: no sandboxed code sees it, and a file being read never counts against the
session's disk quota (GAIA_MAX_READ_BYTES bounds it).
Tools run as subprocesses in their own process group with a deadline: a damaged or endless file can
neither block the event loop (callers run them in a worker thread) nor leave a process behind.

A file may name other files (an HLS playlist or a concat list saved as `talk.mp3`), so every input is
opened with `input_args`: the file protocol only, and only the container formats in DEMUXERS (never a
playlist, list or manifest); and `run_tool` runs ffmpeg confined (gaia_kit.execution.confine) with
only the files of the call visible and no network, so a format that names another file finds nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import httpx

from gaia_kit.core.blocking import run_blocking
from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.openat import shared_fd_path
from gaia_kit.core.paths import PathGuard
from gaia_kit.core.quota import scratch
from gaia_kit.core.settings import get_settings
from gaia_kit.execution.confine import run_confined
from gaia_kit.web.http import shared_http

# Container formats (ffmpeg's demuxer names) media tools open: audio, video and GIF. Left out on
# purpose: playlists and lists that name other files or URLs (hls, dash, concat, imf,
# webm_dash_manifest, ffmetadata), network and device inputs (rtp, rtsp, sdp, lavfi, v4l2, x11grab)
# and image sequences (image2, which expands patterns).
DEMUXERS = (
    "aac,ac3,aiff,amr,amrnb,amrwb,ape,asf,au,avi,caf,dsf,dts,dtshd,dv,eac3,flac,flv,gif,h264,hevc,ivf,"
    "live_flv,m4v,matroska,mlp,mov,mp3,mpc,mpc8,mpeg,mpegts,mpegvideo,mxf,nut,obu,ogg,oma,rm,shn,tak,"
    "truehd,tta,voc,w64,wav,wv,wtv,xwma"
)
NOT_ON_ALLOW_LIST = "not on whitelist"
"""What ffmpeg says when a file is of a format outside DEMUXERS."""


class RefusedFormat(ToolFailure):
    """The file is a playlist, a list or another format the media tools do not open."""


@dataclass
class MediaFile:
    path: Path
    shown: str
    """The path or URL as the agent should see it."""
    size_bytes: int


def is_url(source: str) -> bool:
    return source.strip().lower().startswith(("http://", "https://"))


@contextlib.asynccontextmanager
async def opened_media(
    guard: PathGuard,
    source: str,
    *,
    noun: str,
    limit: int | None = None,
    limit_setting: str = "GAIA_MAX_READ_BYTES",
) -> AsyncIterator[MediaFile]:
    """The media at a local path or URL as a local file, within `limit` bytes (default GAIA_MAX_READ_BYTES).

    `noun` ("audio", "video") names what the file should hold, in error text.
    """
    limit = limit or get_settings().max_read_bytes
    if not is_url(source):
        raw = source.strip().removeprefix("file://")
        with await run_blocking(guard.open_file, raw) as handle:
            shown = guard.shown(raw)
            size = os.fstat(handle.fileno()).st_size
            check_size(shown, size, limit, limit_setting, noun)
            yield MediaFile(shared_fd_path(handle.fileno()), shown, size)
        return
    url = source.strip()
    # Streamed to disk: a long video never sits in memory whole.
    with scratch(guard.workspace, prefix=".download-") as folder:
        body = folder / "download"
        response = await shared_http().download(url, body, max_bytes=limit)
        path = body.with_suffix(PurePosixPath(httpx.URL(response.url).path).suffix[:8])
        body.rename(path)
        size = path.stat().st_size
        check_size(url, size, limit, limit_setting, noun)
        yield MediaFile(path, url, size)


def check_size(shown: str, size: int, limit: int, setting: str, noun: str) -> None:
    if size > limit:
        raise ToolFailure(
            f"{shown} is {size / 2**20:.1f} MiB, over the {limit / 2**20:.0f} MiB limit for one file "
            f"({setting}); trim it or pass a compressed copy."
        )
    if size == 0:
        raise ToolFailure(f"{shown} is empty (0 bytes); there is no {noun} in it.")


def document_kind(path: Path) -> str | None:
    """'a PDF' or 'an HTML page' when a media file is really a document saved under a media name."""
    with open(path, "rb") as handle:
        head = handle.read(64).lstrip().lower()
    if head.startswith(b"%pdf-"):
        return "a PDF"
    if head.startswith((b"<!doctype html", b"<html")):
        return "an HTML page"
    return None


def clock(seconds: float) -> str:
    """mm:ss.ss, or h:mm:ss.ss past the hour: how media tools print a time."""
    minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours:d}:{minutes:02d}:{rest:05.2f}" if hours else f"{minutes:02d}:{rest:05.2f}"


def binary(name: str) -> str:
    """The path of ffmpeg or ffprobe, or a sentence saying how to install it."""
    found = shutil.which(name)
    if not found:
        raise ToolFailure(f"{name} is not installed on the server; install it (apt-get install ffmpeg).")
    return found


def input_args(path: Path) -> list[str]:
    """ffmpeg's or ffprobe's options for reading `path`: one local file of an allowed container format."""
    return ["-protocol_whitelist", "file", "-format_whitelist", DEMUXERS, "-i", str(path)]


def run_tool(
    args: list[str],
    *,
    what: str,
    timeout: float,
    timeout_setting: str,
    advice: str,
    reads: list[Path],
    writes: list[Path] | None = None,
) -> bytes:
    """Run a command with a deadline, seeing only `reads` and `writes`; its stdout, or one sentence
    from its stderr.

    At the deadline the whole process group is killed and the sentence names `timeout_setting`,
    followed by `advice` (what the agent can do: trim the file, ask for a shorter range).
    """
    try:
        done = run_confined(args, reads=reads, writes=writes or [], timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ToolFailure(
            f"{what} took longer than {timeout:.0f} s and was stopped ({timeout_setting}); {advice}."
        ) from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        refused = next((line for line in lines if NOT_ON_ALLOW_LIST in line.lower()), None)
        if refused is not None:
            raise RefusedFormat(
                f"{what} failed: the file is of format {_format_name(refused)!r}, a playlist, a list of "
                "other files or another format the media tools do not open; pass one audio or video file."
            )
        reason = lines[-1].strip() if lines else f"exit status {done.returncode}"
        raise ToolFailure(f"{what} failed: {reason[:300].rstrip('.')}.")
    return done.stdout


def _format_name(line: str) -> str:
    """'hls' from ffmpeg's "[hls @ 0x55...] Format not on whitelist 'aac,...'" line."""
    return line.split("@", 1)[0].strip(" [") if line.startswith("[") and "@" in line else "unknown"
