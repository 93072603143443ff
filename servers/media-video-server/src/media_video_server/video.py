"""Opening a video the agent named, and what ffprobe and ffmpeg tell and take from it.

Inputs come through gaia_kit.media.files (path guard, or the kit's HTTP client into the workspace, with
VIDEO_MAX_BYTES as the cap). ffmpeg runs through the kit too: a subprocess in its own process group,
killed at VIDEO_FFMPEG_TIMEOUT_S, confined to the one video (no playlists, no other files, no network). Frames are taken by seeking to each time, so a long video costs
the frames asked for, not a decode of the whole file; only scene detection decodes its window.
"""

from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from gaia_kit import PathGuard, ToolFailure
from gaia_kit.core.quota import place, scratch
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

from .settings import VideoSettings

# Seek a hair before a frame's printed time: pts_time is rounded, and seeking past the real
# timestamp by a microsecond would give the next frame.
SEEK_EARLY_S = 0.001


@dataclass
class Info:
    duration: float
    width: int
    height: int
    fps: float
    codec: str
    audio: str | None
    """The audio codec, or None when the video has no audio track."""


def opened(guard: PathGuard, source: str) -> contextlib.AbstractAsyncContextManager[MediaFile]:
    """The video at a local path or URL as a local file (a downloaded one is removed afterwards)."""
    return opened_media(
        guard, source, noun="video", limit=settings(VideoSettings).max_bytes, limit_setting="VIDEO_MAX_BYTES"
    )


def ffmpeg(args: list[str], what: str, video: MediaFile, writes: list[Path] | None = None) -> bytes:
    return run_tool(
        [binary("ffmpeg"), "-nostdin", "-v", "error", *args],
        what=what,
        timeout=settings(VideoSettings).ffmpeg_timeout_s,
        timeout_setting="VIDEO_FFMPEG_TIMEOUT_S",
        advice="ask for a shorter time range or a smaller video",
        reads=[video.path],
        writes=writes,
    )


def probe(video: MediaFile) -> Info:
    """What the video holds, or one sentence saying why it is not a video ffmpeg can read."""
    kind = document_kind(video.path)
    if kind:
        raise ToolFailure(f"{video.shown} is not a video: it is {kind} saved under this name.")
    args = [binary("ffprobe"), "-v", "error", "-print_format", "json", "-show_format", "-show_streams"]
    try:
        info = json.loads(
            run_tool(
                [*args, *input_args(video.path)],
                what=f"Reading {video.shown}",
                timeout=60,
                timeout_setting="ffprobe's 60 s limit",
                advice="the file is probably damaged",
                reads=[video.path],
            )
            or b"{}"
        )
    except RefusedFormat:
        raise
    except ToolFailure:
        info = {}
    streams = info.get("streams", [])
    # A cover picture in an MP3 is a "video" stream of one frame: that is not a video.
    pictures = [
        s
        for s in streams
        if s.get("codec_type") == "video" and not s.get("disposition", {}).get("attached_pic")
    ]
    if not pictures:
        kind = (
            "has no video track (it is audio only; use transcribe_audio)"
            if streams
            else ("is not a video file ffmpeg can read (damaged, or another kind of file under a video name)")
        )
        raise ToolFailure(f"{video.shown} {kind}.")
    picture = pictures[0]
    sound = next((s for s in streams if s.get("codec_type") == "audio"), None)
    duration = _number(info.get("format", {}).get("duration")) or _number(picture.get("duration"))
    if duration <= 0:
        raise ToolFailure(f"{video.shown} has no length (0 s); there are no frames to take from it.")
    return Info(
        duration=duration,
        width=int(picture.get("width") or 0),
        height=int(picture.get("height") or 0),
        fps=_rate(picture.get("avg_frame_rate") or picture.get("r_frame_rate") or ""),
        codec=str(picture.get("codec_name") or "unknown"),
        audio=str(sound.get("codec_name") or "unknown") if sound else None,
    )


def _number(raw: object) -> float:
    try:
        return float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0


def _rate(raw: str) -> float:
    top, _, bottom = raw.partition("/")
    return _number(top) / _number(bottom) if _number(bottom) else _number(top)


def span(shown: str, info: Info, start: float, end: float | None) -> tuple[float, float]:
    """[start, end) checked against the video; end defaults to (and is cut at) the video's end."""
    if start < 0:
        raise ToolFailure(f"start_time must be 0 or more seconds, not {start:g}.")
    if end is not None and end <= start:
        raise ToolFailure(f"end_time ({end:g} s) must be after start_time ({start:g} s).")
    if start >= info.duration:
        raise ToolFailure(f"start_time {start:g} s is past the end of {shown} ({info.duration:.2f} s long).")
    return start, min(end if end is not None else info.duration, info.duration)


def uniform_times(start: float, end: float, count: int) -> list[float]:
    """`count` evenly spaced times from `start` (inclusive) towards `end` (exclusive)."""
    step = (end - start) / count
    return [start + i * step for i in range(count)]


def scene_changes(video: MediaFile, start: float, end: float, threshold: float) -> list[tuple[float, float]]:
    """(time, score) of every frame in [start, end) that differs from the one before by more than
    `threshold` (ffmpeg's scene score, 0 to 1)."""
    # Scored at full size: ffmpeg's scene score is cheap next to decoding, and scaling frames down first
    # cost more CPU than it saved (benchmarks/video_keyframes.py).
    graph = f"select='gt(scene,{threshold})',metadata=print:file=-"
    args = ["-ss", f"{start:.3f}", "-t", f"{end - start:.3f}", *input_args(video.path)]
    out = ffmpeg(
        [*args, "-an", "-sn", "-dn", "-vf", graph, "-f", "null", "-"],
        f"Finding scene changes in {video.shown}",
        video,
    )
    times = [float(t) for t in re.findall(rb"pts_time:(\S+)", out)]
    scores = [float(s) for s in re.findall(rb"lavfi\.scene_score=(\S+)", out)]
    # With input seeking, ffmpeg counts time from the seek point.
    return [(start + t, score) for t, score in zip(times, scores, strict=False) if start + t < end]


def grab(video: MediaFile, times: list[float], folder: Path, names: list[str]) -> list[Path | None]:
    """The frame at each time, saved as folder/name (.jpg or .png); None where the video has no frame.

    One ffmpeg process seeks to every time (one input per time), and the frames are renamed into
    place only when all are written, so a reader never sees half a picture.
    """
    if not times:
        return []
    args: list[str] = []
    outputs: list[str] = []
    with scratch(folder, prefix=".frames-") as work:
        for moment in times:
            args += ["-ss", f"{max(0.0, moment - SEEK_EARLY_S):.3f}", *input_args(video.path)]
        for i, name in enumerate(names):
            outputs.append(str(work / f"{i:04d}{Path(name).suffix}"))
            quality = ["-q:v", "2"] if name.endswith(".jpg") else []
            args += ["-map", f"{i}:v:0", "-frames:v", "1", *quality, "-update", "1", outputs[-1]]
        ffmpeg(["-y", *args], f"Taking frames from {video.shown}", video, writes=[work])
        saved: list[Path | None] = []
        for temp, name in zip(outputs, names, strict=True):
            if Path(temp).is_file() and Path(temp).stat().st_size:
                place(Path(temp), folder / name)  # within the session's disk quota
                saved.append(folder / name)
            else:
                saved.append(None)
        return saved
