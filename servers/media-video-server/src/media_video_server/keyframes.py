"""extract_keyframes: frames around a moment, by scene change or evenly spaced, saved into the workspace."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from gaia_kit import PathGuard, ToolFailure
from gaia_kit.core.calls import current_call
from gaia_kit.core.quota import make_dirs
from gaia_kit.core.settings import settings
from gaia_kit.media.files import MediaFile, clock

from . import video
from .settings import VideoSettings


@dataclass
class Frame:
    time: float
    reason: str
    path: str


def limit(max_frames: int | None) -> int:
    ceiling = settings(VideoSettings).max_keyframes
    if max_frames is None:
        return ceiling
    if max_frames < 1 or max_frames > ceiling:
        raise ToolFailure(f"max_frames must be between 1 and {ceiling} (VIDEO_MAX_KEYFRAMES).")
    return max_frames


def window(shown: str, info: video.Info, target: float, size: float) -> tuple[float, float]:
    if size <= 0:
        raise ToolFailure(f"window_size must be more than 0 seconds, not {size:g}.")
    if target < 0 or target >= info.duration:
        raise ToolFailure(
            f"target_time {target:g} s is outside {shown}, which is {info.duration:.2f} s long; "
            f"pass a time from 0 to {info.duration:.2f}."
        )
    return video.span(shown, info, max(0.0, target - size / 2), target + size / 2)


def extract(
    guard: PathGuard,
    clip: MediaFile,
    target: float,
    size: float,
    output_dir: str | None,
    mode: str,
    max_frames: int | None,
    image_format: str,
    output_format: str,
) -> str:
    """Take the frames, save them, and say where and when they are (runs in a worker thread)."""
    count = limit(max_frames)
    info = video.probe(clip)
    start, end = window(clip.shown, info, target, size)
    folder = guard.resolve(output_dir or "keyframes", write=True)
    if folder.exists() and not folder.is_dir():
        raise ToolFailure(f"{output_dir} is a file; name a directory for the frames.")
    make_dirs(folder)
    notes: list[str] = []
    call = current_call()
    if mode == "scene":
        call.progress(0, 2, "finding scene changes")
        changes = video.scene_changes(clip, start, end, settings(VideoSettings).scene_threshold)
        kept = sorted(sorted(changes, key=lambda c: -c[1])[: count - 1])
        if len(changes) > len(kept):
            notes.append(
                f"{len(changes)} scene changes were found; the {len(kept)} strongest are kept (max_frames)."
            )
        moments = [(start, "window start")] + [(t, f"scene change (score {s:.2f})") for t, s in kept]
    else:
        moments = [
            (t, "uniform") for t in video.uniform_times(start, end, min(count, math.ceil(end - start)))
        ]
    stem = Path(clip.shown.split("?")[0].rstrip("/")).stem or "video"
    names = [f"{stem}_{t:07.2f}s.{image_format}" for t, _ in moments]
    call.progress(1, 2, f"saving {len(moments)} frames")
    saved = video.grab(clip, [t for t, _ in moments], folder, names)
    frames = [Frame(t, why, guard.display(p)) for (t, why), p in zip(moments, saved, strict=True) if p]
    if not frames:
        raise ToolFailure(f"ffmpeg found no frames in {clip.shown} between {start:g} s and {end:g} s.")
    return _report(
        clip.shown, info, (start, end, target), mode, guard.display(folder), frames, notes, output_format
    )


def _report(
    shown: str,
    info: video.Info,
    when: tuple[float, float, float],
    mode: str,
    folder: str,
    frames: list[Frame],
    notes: list[str],
    output_format: str,
) -> str:
    start, end, target = when
    how = (
        f"scene change (threshold {settings(VideoSettings).scene_threshold:g}) and the window's first frame"
        if mode == "scene"
        else "uniform"
    )
    if output_format == "json":
        body = {
            "video": shown,
            "duration": round(info.duration, 3),
            "window": [round(start, 3), round(end, 3)],
            "target_time": target,
            "mode": mode,
            "output_dir": folder,
            "frames": [{"time": round(f.time, 3), "reason": f.reason, "path": f.path} for f in frames],
            "notes": notes,
        }
        return json.dumps(body, indent=2)
    if output_format == "text":
        return "\n".join([f"{f.time:.2f}s\t{f.path}" for f in frames] + notes)
    rows = [
        f"| {i} | {clock(f.time)} ({f.time:.2f} s) | {f.reason} | {f.path} |" for i, f in enumerate(frames, 1)
    ]
    lines = [
        f"# Keyframes of {shown}",
        "",
        f"- Window: {clock(start)} to {clock(end)} around {clock(target)} "
        f"(video {clock(info.duration)}, {info.width}x{info.height}, {info.fps:.3g} fps)",
        f"- Selection: {how}",
        f"- Saved {len(frames)} frame(s) in {folder}",
        *[f"- Note: {note}" for note in notes],
        "",
        "| # | Time | Why | File |",
        "|---|---|---|---|",
        *rows,
    ]
    return "\n".join(lines)
