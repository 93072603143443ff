"""analyze_video and summarize_video: sampled frames plus the audio transcript, sent to a vision model.

The model is VIDEO_LLM_BASE_URL / VIDEO_LLM_MODEL_NAME / VIDEO_LLM_API_KEY, each falling back to
MCP_LLM_* (gaia_kit.models.llm). Frames go as data URLs in the user message's content parts, downscaled the
way media-image-server sends images (gaia_kit.media.images). The transcript is made by media-audio-server's
own transcription (its backend and AUDIO_* settings), from the audio of the requested range only.
At most VIDEO_MAX_FRAMES frames are sent: a long video is sampled evenly, never read whole.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import anyio
from gaia_kit import PathGuard, ToolFailure, run_blocking
from gaia_kit.core.calls import current_call, quiet
from gaia_kit.core.quota import scratch
from gaia_kit.core.settings import settings
from gaia_kit.media.files import MediaFile, clock
from gaia_kit.media.images import data_url, image_part
from gaia_kit.models.llm import chat, configured
from media_audio_server import media as audio_media
from media_audio_server import transcribe
from PIL import Image

from . import video
from .settings import VideoSettings

PREFIX = "VIDEO"
MAX_ANSWER_TOKENS = 4096

SYSTEM = (
    "You are an expert at understanding videos. You are given frames sampled from a video, each with "
    "its timestamp, and the transcript of its audio when it has one. Reason about what happens over "
    "time: people, objects, actions, on-screen text, what is said and when. Answer from what the "
    "frames and transcript show; say plainly when something cannot be seen or heard in them."
)
SUMMARY_QUESTION = (
    "Summarize this video: its main topic, the key points in the order they come, and the important "
    "visual elements (people, objects, places, on-screen text). Use the transcript for what is said "
    "and the frames for what is shown."
)


@dataclass
class Evidence:
    shown: str
    info: video.Info
    start: float
    end: float
    times: list[float]
    images: list[str]
    """Data URLs, one per time."""
    transcript: str | None
    audio_note: str


def frame_times(start: float, end: float, sample_rate: float) -> list[float]:
    """sample_rate frames a second over [start, end), at most VIDEO_MAX_FRAMES (then evenly spread)."""
    if not sample_rate > 0:
        raise ToolFailure(f"sample_rate must be more than 0 frames per second, not {sample_rate:g}.")
    wanted = max(1, math.ceil((end - start) * sample_rate))
    return video.uniform_times(start, end, min(wanted, settings(VideoSettings).max_frames))


async def gather(
    guard: PathGuard, source: str, start: float, end: float | None, sample_rate: float, workers: int
) -> Evidence:
    """The frames and transcript of [start, end) of the video at `source`."""
    if workers < 1:
        raise ToolFailure(f"max_workers must be 1 or more, not {workers}.")
    async with video.opened(guard, source) as clip:
        info = await run_blocking(video.probe, clip)
        first, last = video.span(clip.shown, info, start, end)
        times = frame_times(first, last, sample_rate)
        with scratch(guard.workspace, prefix=".video-") as folder:
            images: list[str | None] = [None] * len(times)
            heard: dict[str, str | None] = {}
            try:
                async with anyio.create_task_group() as group:
                    # Frames in up to `workers` ffmpeg processes at once, beside the transcription.
                    batches = min(workers, settings(VideoSettings).max_workers, len(times))
                    for b in range(batches):
                        picks = list(range(b, len(times), batches))
                        group.start_soon(_frames, clip, times, picks, folder, images)
                    group.start_soon(_transcript, clip, info, first, last, folder, heard)
            except ExceptionGroup as failures:
                raise _first(failures) from None
    urls = [url for url in images if url]
    if not urls:
        raise ToolFailure(f"ffmpeg found no frames in {clip.shown} between {first:g} s and {last:g} s.")
    kept = [t for t, url in zip(times, images, strict=True) if url]
    return Evidence(clip.shown, info, first, last, kept, urls, heard.get("text"), heard.get("note") or "")


def _first(error: BaseException) -> BaseException:
    """The first real failure inside a task group's exception group: its sentence is the answer."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


async def _frames(
    clip: MediaFile, times: list[float], picks: list[int], folder: Path, images: list[str | None]
) -> None:
    names = [f"frame{i:04d}.jpg" for i in picks]
    saved = await run_blocking(video.grab, clip, [times[i] for i in picks], folder, names)
    for i, path in zip(picks, saved, strict=True):
        if path is not None:
            images[i] = await run_blocking(_encoded, path)


def _encoded(path: Path) -> str:
    with Image.open(path) as picture:
        return data_url(picture, settings(VideoSettings).max_side)


async def _transcript(
    clip: MediaFile, info: video.Info, start: float, end: float, folder: Path, heard: dict[str, str | None]
) -> None:
    """The transcript of [start, end), with times in the video's clock; or a note saying why there is none."""
    if info.audio is None:
        heard["note"] = "The video has no audio track; the answer rests on the frames alone."
        return
    wav = folder / "audio.wav"
    try:
        await run_blocking(audio_media.trim, clip, wav, start, end - start)
        result = await transcribe.transcribe(MediaFile(wav, clip.shown, wav.stat().st_size))
    except ToolFailure as exc:
        heard["note"] = f"No transcript: {exc}"
        return
    lines = [f"[{clock(start + s.start)}] {s.text.strip()}" for s in result.segments if s.text.strip()]
    if not lines:
        heard["note"] = "The audio track has no recognisable speech in this range."
        return
    text = "\n".join(lines)
    cut = settings(VideoSettings).max_transcript_chars
    if len(text) > cut:
        text = text[:cut] + f"\n[transcript cut at {cut} characters]"
    heard["text"] = text
    heard["note"] = f"Transcript of the audio ({len(lines)} segments, {result.engine}) included."


async def answer(evidence: Evidence, question: str) -> str:
    """The model's answer to `question` about the evidence."""
    intro = [
        f"Question: {question.strip()}",
        "",
        f"Video: {evidence.shown}, {clock(evidence.info.duration)} long; the frames below cover "
        f"{clock(evidence.start)} to {clock(evidence.end)}.",
    ]
    if evidence.transcript:
        intro += ["", "Transcript of the audio (times in the video):", evidence.transcript]
    else:
        intro += ["", evidence.audio_note]
    parts: list[dict] = [{"type": "text", "text": "\n".join(intro)}]
    for moment, url in zip(evidence.times, evidence.images, strict=True):
        parts += [{"type": "text", "text": f"Frame at {clock(moment)}"}, image_part(url)]
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": parts}]
    return await chat(messages, prefix=PREFIX, max_tokens=MAX_ANSWER_TOKENS)


async def respond(
    guard: PathGuard,
    source: str,
    question: str,
    span: tuple[float, float | None],
    sample_rate: float,
    workers: int,
    output_format: str,
    title: str,
) -> str:
    """The whole tool: check the model is configured, gather the evidence, ask, report."""
    if not question.strip():
        raise ToolFailure("The question is empty; say what to find out about the video.")
    config = configured(PREFIX)  # before the costly part: no model, no frames
    call = current_call()
    call.progress(0, 2, "sampling frames and transcribing the audio")
    with quiet():  # the transcription inside counts seconds of its own
        evidence = await gather(guard, source, span[0], span[1], sample_rate, workers)
    call.progress(1, 2, f"asking the vision model about {len(evidence.times)} frames")
    reply = await answer(evidence, question)
    if output_format == "json":
        body = {
            "video": evidence.shown,
            "duration": round(evidence.info.duration, 3),
            "range": [round(evidence.start, 3), round(evidence.end, 3)],
            "frame_times": [round(t, 3) for t in evidence.times],
            "audio": evidence.audio_note,
            "transcript": evidence.transcript,
            "model": config.model,
            "answer": reply,
        }
        return json.dumps(body, indent=2)
    if output_format == "text":
        return reply if evidence.transcript else f"{reply}\n\n({evidence.audio_note})"
    spacing = (evidence.end - evidence.start) / len(evidence.times)
    return "\n".join(
        [
            f"# {title}: {evidence.shown}",
            "",
            f"- Range: {clock(evidence.start)} to {clock(evidence.end)} of {clock(evidence.info.duration)}",
            f"- Frames sent to the model: {len(evidence.times)} (one every {spacing:.2f} s)",
            f"- Audio: {evidence.audio_note}",
            f"- Model: {config.model}",
            "",
            "## Answer",
            "",
            reply,
        ]
    )
