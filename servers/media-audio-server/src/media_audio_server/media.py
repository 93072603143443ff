"""Opening audio the agent named, and everything ffmpeg and ffprobe do with it.

Local paths go through the session's path guard; URLs through the kit's HTTP client (SSRF guard,
size cap, cache) into a temporary file. ffmpeg and ffprobe always run as subprocesses with a
deadline, so a damaged or endless file can neither block the event loop nor hang the server.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import httpx
import numpy as np
from gaia_kit import PathGuard, ToolFailure, get_settings, run_blocking
from gaia_kit.http import shared_http

SAMPLE_RATE = 16_000
FFMPEG_TIMEOUT_S = float(os.environ.get("AUDIO_FFMPEG_TIMEOUT_S", "300"))

# What agents are told ffmpeg reads; it reads more, and the tools try any file.
FORMATS = {
    ".mp3": "MPEG audio layer 3",
    ".m4a": "AAC in an MP4 container",
    ".aac": "raw AAC",
    ".wav": "PCM WAVE",
    ".ogg": "Ogg (Vorbis or Opus)",
    ".opus": "Opus",
    ".flac": "FLAC (lossless)",
    ".webm": "WebM audio or video (the audio track)",
    ".mp4": "MP4 video (the audio track)",
    ".mkv": "Matroska (the audio track)",
    ".wma": "Windows Media Audio",
    ".aiff": "AIFF (uncompressed)",
    ".amr": "AMR speech",
}


@dataclass
class Audio:
    path: Path
    shown: str
    """The path or URL as the agent should see it."""
    size_bytes: int


def is_url(source: str) -> bool:
    return source.strip().lower().startswith(("http://", "https://"))


@contextlib.asynccontextmanager
async def opened(guard: PathGuard, source: str) -> AsyncIterator[Audio]:
    """The audio at a local path or URL as a local file (a downloaded one is removed afterwards)."""
    if not is_url(source):
        path = await run_blocking(guard.existing_file, source.strip().removeprefix("file://"))
        shown = guard.display(path)
        size = path.stat().st_size
        _check_size(shown, size)
        yield Audio(path, shown, size)
        return
    url = source.strip()
    response = await shared_http().get(url, max_bytes=get_settings().max_read_bytes)
    _check_size(url, len(response.content))
    suffix = PurePosixPath(httpx.URL(response.url).path).suffix[:8]
    with tempfile.TemporaryDirectory(prefix="gaia-audio-") as folder:
        path = Path(folder) / f"download{suffix}"
        await run_blocking(path.write_bytes, response.content)
        yield Audio(path, url, len(response.content))


def _check_size(shown: str, size: int) -> None:
    limit = get_settings().max_read_bytes
    if size > limit:
        raise ToolFailure(
            f"{shown} is {size / 2**20:.1f} MiB, over the {limit / 2**20:.0f} MiB limit for one file "
            "(GAIA_MAX_READ_BYTES); trim it or pass a compressed copy."
        )
    if size == 0:
        raise ToolFailure(f"{shown} is empty (0 bytes); there is no audio in it.")


def _tool(name: str) -> str:
    found = shutil.which(name)
    if not found:
        raise ToolFailure(f"{name} is not installed on the server; install it (apt-get install ffmpeg).")
    return found


def _run(args: list[str], what: str, timeout: float = FFMPEG_TIMEOUT_S) -> bytes:
    """Run ffmpeg/ffprobe with a deadline; its stdout, or one sentence from its stderr."""
    try:
        done = subprocess.run(args, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ToolFailure(
            f"{what} took longer than {timeout:.0f} s and was stopped (AUDIO_FFMPEG_TIMEOUT_S); "
            "trim the recording first."
        ) from None
    if done.returncode != 0:
        lines = [line for line in done.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        reason = lines[-1].strip() if lines else f"exit status {done.returncode}"
        raise ToolFailure(f"{what} failed: {reason[:300]}.")
    return done.stdout


def probe(audio: Audio) -> dict:
    """ffprobe's format and streams, or a sentence saying the file is not media ffmpeg can read."""
    _refuse_documents(audio)
    args = [_tool("ffprobe"), "-v", "error", "-print_format", "json", "-show_format", "-show_streams"]
    try:
        info = json.loads(_run([*args, str(audio.path)], f"Reading {audio.shown}", timeout=60) or b"{}")
    except ToolFailure:
        info = {}
    if not any(s.get("codec_type") == "audio" for s in info.get("streams", [])):
        kind = "has no audio track" if info.get("streams") else "is not an audio file ffmpeg can read"
        raise ToolFailure(
            f"{audio.shown} {kind} (damaged, or another kind of file under an audio name); pass an audio "
            "or video file (list_supported_formats shows the usual ones)."
        )
    return info


def _refuse_documents(audio: Audio) -> None:
    with open(audio.path, "rb") as handle:
        head = handle.read(64).lstrip().lower()
    if head.startswith((b"<!doctype html", b"<html", b"%pdf-")):
        raise ToolFailure(
            f"{audio.shown} is not audio: it is {'a PDF' if head.startswith(b'%pdf') else 'an HTML page'} "
            "saved under this name."
        )


def duration_s(info: dict) -> float:
    try:
        return float(info.get("format", {}).get("duration") or 0.0)
    except ValueError:
        return 0.0


def decode(audio: Audio, start: float = 0.0, length: float | None = None) -> np.ndarray:
    """Samples as 16 kHz mono float32 (what Whisper takes), from `start` for `length` seconds."""
    args = [_tool("ffmpeg"), "-nostdin", "-v", "error", "-ss", f"{start:.3f}"]
    if length is not None:
        args += ["-t", f"{length:.3f}"]
    args += ["-i", str(audio.path), "-vn", "-ac", "1", "-ar", str(SAMPLE_RATE), "-f", "f32le", "-"]
    return np.frombuffer(_run(args, f"Decoding {audio.shown}"), dtype=np.float32)


def wav_bytes(audio: Audio, start: float, length: float) -> bytes:
    """One chunk as 16 kHz mono 16-bit WAV: small enough for hosted transcription APIs (25 MB)."""
    args = [_tool("ffmpeg"), "-nostdin", "-v", "error", "-ss", f"{start:.3f}", "-t", f"{length:.3f}"]
    args += ["-i", str(audio.path), "-vn", "-ac", "1", "-ar", str(SAMPLE_RATE), "-f", "wav", "-"]
    return _run(args, f"Decoding {audio.shown}")


def trim(audio: Audio, target: Path, start: float, length: float | None) -> None:
    """Cut [start, start+length) into `target`, re-encoded in the target's format; written atomically."""
    tmp = target.with_name(f".{target.name}.part{target.suffix}")
    args = [_tool("ffmpeg"), "-nostdin", "-v", "error", "-y", "-ss", f"{start:.3f}", "-i", str(audio.path)]
    if length is not None:
        args += ["-t", f"{length:.3f}"]
    args += ["-vn", "-map_metadata", "0", str(tmp)]
    try:
        _run(args, f"Trimming {audio.shown}")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
