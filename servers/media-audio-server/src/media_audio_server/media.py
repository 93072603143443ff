"""Opening audio the agent named, and everything ffmpeg and ffprobe do with it.

Local paths go through the session's path guard; URLs through the kit's HTTP client (SSRF guard,
size cap, cache) into a temporary file (gaia_kit.media.files, as for video). ffmpeg and ffprobe always run as
subprocesses with a deadline, so a damaged or endless file can neither block the event loop nor hang
the server, and confined to the one file (no playlists, no other files, no network).
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
from gaia_kit import PathGuard, ToolFailure
from gaia_kit.core.quota import place, staged
from gaia_kit.core.settings import settings
from gaia_kit.media.files import (
    MediaFile,
    RefusedFormat,
    binary,
    document_kind,
    input_args,
    opened_media,
    run_tool,
)

from .settings import AudioSettings

SAMPLE_RATE = 16_000

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


Audio = MediaFile


def opened(guard: PathGuard, source: str) -> contextlib.AbstractAsyncContextManager[Audio]:
    """The audio at a local path or URL as a local file (a downloaded one is removed afterwards)."""
    return opened_media(guard, source, noun="audio")


def _run(
    args: list[str],
    what: str,
    audio: Audio,
    timeout: float | None = None,
    writes: list[Path] | None = None,
) -> bytes:
    """Run ffmpeg/ffprobe on `audio` with a deadline (AUDIO_FFMPEG_TIMEOUT_S unless given); its stdout, or
    one sentence from its stderr."""
    return run_tool(
        args,
        what=what,
        timeout=settings(AudioSettings).ffmpeg_timeout_s if timeout is None else timeout,
        timeout_setting="AUDIO_FFMPEG_TIMEOUT_S",
        advice="trim the recording first",
        reads=[audio.path],
        writes=writes,
    )


def probe(audio: Audio) -> dict:
    """ffprobe's format and streams, or a sentence saying the file is not media ffmpeg can read."""
    _refuse_documents(audio)
    args = [binary("ffprobe"), "-v", "error", "-print_format", "json", "-show_format", "-show_streams"]
    try:
        info = json.loads(
            _run([*args, *input_args(audio.path)], f"Reading {audio.shown}", audio, 60) or b"{}"
        )
    except RefusedFormat:
        raise
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
    kind = document_kind(audio.path)
    if kind:
        raise ToolFailure(f"{audio.shown} is not audio: it is {kind} saved under this name.")


def duration_s(info: dict) -> float:
    try:
        return float(info.get("format", {}).get("duration") or 0.0)
    except ValueError:
        return 0.0


def decode(audio: Audio, start: float = 0.0, length: float | None = None) -> np.ndarray:
    """Samples as 16 kHz mono float32 (what Whisper takes), from `start` for `length` seconds."""
    args = [binary("ffmpeg"), "-nostdin", "-v", "error", "-ss", f"{start:.3f}"]
    if length is not None:
        args += ["-t", f"{length:.3f}"]
    args += [*input_args(audio.path), "-vn", "-ac", "1", "-ar", str(SAMPLE_RATE), "-f", "f32le", "-"]
    return np.frombuffer(_run(args, f"Decoding {audio.shown}", audio), dtype=np.float32)


def wav_bytes(audio: Audio, start: float, length: float) -> bytes:
    """One chunk as 16 kHz mono 16-bit WAV: small enough for hosted transcription APIs (25 MB)."""
    args = [binary("ffmpeg"), "-nostdin", "-v", "error", "-ss", f"{start:.3f}", "-t", f"{length:.3f}"]
    args += [*input_args(audio.path), "-vn", "-ac", "1", "-ar", str(SAMPLE_RATE), "-f", "wav", "-"]
    return _run(args, f"Decoding {audio.shown}", audio)


def trim(audio: Audio, target: Path, start: float, length: float | None) -> None:
    """Cut [start, start+length) into `target`, re-encoded in the target's format; written atomically."""
    args = [binary("ffmpeg"), "-nostdin", "-v", "error", "-y", "-ss", f"{start:.3f}", *input_args(audio.path)]
    if length is not None:
        args += ["-t", f"{length:.3f}"]
    with staged(target, suffix=target.suffix) as tmp:
        _run([*args, "-vn", "-map_metadata", "0", str(tmp)], f"Trimming {audio.shown}", audio, writes=[tmp])
        place(tmp, target)  # within the session's disk quota
