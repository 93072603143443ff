"""What the tools say: transcripts, metadata and trims as text an agent reads."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from gaia_kit import PathGuard, ToolFailure
from gaia_kit.media.files import clock, is_url

from . import media, transcribe


def transcript(shown: str, result: transcribe.Transcript, output_format: str) -> str:
    text = result.text or "(no speech recognised)"
    if output_format == "text":
        return text
    head = [
        f"File: {shown}",
        f"Duration: {clock(result.duration)} ({result.duration:.2f} s)",
        f"Language: {result.language or 'unknown'}",
        f"Engine: {result.engine}",
        f"Segments: {len(result.segments)}",
    ]
    if output_format == "detailed":
        return "\n".join(head) + "\n\n" + text
    rows = [
        f"[{clock(s.start)} - {clock(s.end)}] {s.text.strip()}" for s in result.segments if s.text.strip()
    ]
    return "\n".join(head) + "\n\n" + ("\n".join(rows) or text)


async def transcribe_many(guard: PathGuard, sources: list[str]) -> str:
    """Transcripts of several recordings, each under its name; one failing does not hide the others."""
    if not sources:
        raise ToolFailure("No audio given; pass at least one audio path or URL.")
    if len(sources) == 1:
        async with media.opened(guard, sources[0]) as audio:
            return (await transcribe.transcribe(audio)).text or "(no speech recognised)"
    parts = []
    for source in sources:
        try:
            async with media.opened(guard, source) as audio:
                body = (await transcribe.transcribe(audio)).text or "(no speech recognised)"
        except ToolFailure as exc:
            body = f"[Error: {exc}]"
        parts.append(f"## {source}\n{body}")
    return "\n\n".join(parts)


def metadata(audio: media.Audio, info: dict) -> str:
    fmt = info.get("format", {})
    duration = media.duration_s(info)
    lines = [
        f"File: {audio.shown}",
        f"Container: {fmt.get('format_long_name') or fmt.get('format_name', 'unknown')}",
        f"Size: {audio.size_bytes:,} bytes",
        f"Duration: {clock(duration)} ({duration:.3f} s)",
    ]
    if fmt.get("bit_rate"):
        lines.append(f"Overall bitrate: {int(fmt['bit_rate']) // 1000} kb/s")
    for stream in info.get("streams", []):
        kind = stream.get("codec_type")
        if kind == "audio":
            lines.append(
                f"Audio stream {stream.get('index')}: {stream.get('codec_long_name') or stream.get('codec_name')}, "
                f"{stream.get('sample_rate', '?')} Hz, {stream.get('channels', '?')} channel(s)"
                + (f" ({stream['channel_layout']})" if stream.get("channel_layout") else "")
                + (f", {int(stream['bit_rate']) // 1000} kb/s" if stream.get("bit_rate") else "")
            )
        elif kind:
            lines.append(f"{kind.capitalize()} stream {stream.get('index')}: {stream.get('codec_name')}")
    tags = {**fmt.get("tags", {})}
    for stream in info.get("streams", []):
        tags.update(
            {k: v for k, v in stream.get("tags", {}).items() if k.lower() not in ("encoder", "handler_name")}
        )
    if tags:
        lines.append("Tags:")
        lines += [f"  {key}: {value}" for key, value in sorted(tags.items())]
    if duration <= 0:
        lines.append("Note: the audio is zero-length; there is nothing to play or transcribe.")
    return "\n".join(lines)


def trim(guard: PathGuard, audio: media.Audio, start: float, length: float | None, output: str | None) -> str:
    info = media.probe(audio)
    total = media.duration_s(info)
    if start < 0 or (length is not None and length <= 0):
        raise ToolFailure("start_time must be 0 or more and duration more than 0 seconds.")
    if total <= 0:
        raise ToolFailure(f"{audio.shown} has no audio (zero length); there is nothing to trim.")
    if start >= total:
        raise ToolFailure(f"start_time {start:g} s is past the end of {audio.shown} ({total:.2f} s long).")
    name = PurePosixPath(audio.shown).name if not is_url(audio.shown) else audio.path.name
    stem, suffix = Path(name).stem, Path(name).suffix.lower() or ".wav"
    if suffix not in media.FORMATS or suffix in (".webm", ".mp4", ".mkv"):
        suffix = ".m4a" if suffix in (".mp4", ".mkv") else ".ogg" if suffix == ".webm" else ".wav"
    target = guard.resolve(output or f"{stem}_trimmed_{start:g}s{suffix}", write=True)
    if target.is_dir():
        raise ToolFailure(f"{output} is a directory; name a file for the clip.")
    media.trim(audio, target, start, length)
    clip = media.duration_s(media.probe(media.Audio(target, str(target), target.stat().st_size)))
    return (
        f"Trimmed {audio.shown} from {start:g} s"
        + (f" for {length:g} s" if length is not None else " to the end")
        + f" into {guard.display(target)} ({clip:.2f} s, {target.stat().st_size:,} bytes)."
    )


def formats() -> str:
    rows = [f"{ext}: {what}" for ext, what in media.FORMATS.items()]
    return (
        "Supported audio formats (anything ffmpeg decodes works; these are the usual ones):\n"
        + "\n".join(rows)
        + "\n\nVideo files are read through their audio track. Transcription decodes to 16 kHz mono; "
        "trim_audio writes the clip in the input's format (video inputs become .m4a or .ogg)."
    )
