"""media-audio-server: transcription (local faster-whisper, or an OpenAI-compatible endpoint),
metadata with ffprobe, trimming with ffmpeg.

audio-server's mcp_transcribe_audio is `report.transcribe_many` too: one implementation, two interfaces.
"""

from typing import Annotated, Any, Literal

from gaia_kit import KitServer, page, run_blocking, serve, session_of
from gaia_kit.core.args import MaxLength, StartIndex
from gaia_kit.core.hints import hints
from gaia_kit.core.results import with_data
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from . import media, report, transcribe


class AudioFacts(BaseModel):
    """ffprobe's view of the file: its container (format) and streams, as ffprobe reports them."""

    file: str
    size_bytes: int
    duration_s: float
    format: dict[str, Any]
    streams: list[dict[str, Any]]


server = KitServer(
    "media-audio-server",
    instructions=(
        "Reads audio (and the audio track of video) in the workspace, the dataset or at a URL: "
        "transcribe_audio for speech to text, extract_audio_metadata for duration, codec and tags, "
        "trim_audio to cut a clip into the workspace, list_supported_formats."
    ),
)


@server.tool(annotations=hints("Transcribe audio", read_only=True, open_world=True))
async def transcribe_audio(
    file_path: Annotated[str, Field(description="Path to the audio file to transcribe")],
    ctx: Context,
    model_size: Annotated[
        Literal["tiny", "base", "small", "medium", "large"],
        Field(
            description="Whisper model size: tiny (fastest), base (balanced), small, medium, large (most accurate)"
        ),
    ] = "base",
    output_format: Annotated[
        Literal["text", "detailed", "segments"],
        Field(
            description="Output format: 'text' (plain text), 'detailed' (with metadata), 'segments' (timestamped)"
        ),
    ] = "text",
    language: Annotated[
        str | None, Field(description="Spoken language as an ISO code ('en', 'de'); detected when omitted")
    ] = None,
    start_index: StartIndex = 0,
    max_length: MaxLength = None,
) -> str:
    """Transcribe audio file to text using OpenAI Whisper.

    This tool converts speech in audio files to text with high accuracy.
    Supports multiple languages and provides various output formats including
    timestamped segments for detailed analysis.
    model_size picks a larger local model only where the operator has installed one.
    """
    async with media.opened(session_of(ctx).paths, file_path) as audio:
        result = await transcribe.transcribe(audio, language, model_size)
    return page(report.transcript(audio.shown, result, output_format), start_index, max_length)


@server.tool(annotations=hints("Audio metadata", read_only=True, open_world=True), output=AudioFacts)
async def extract_audio_metadata(
    file_path: Annotated[str, Field(description="Path to the audio file to analyze")],
    ctx: Context,
) -> CallToolResult:
    """Extract comprehensive metadata from audio files.

    This tool analyzes audio files and extracts detailed metadata including
    duration, sample rate, channels, bitrate, codec, and other technical information.
    """
    async with media.opened(session_of(ctx).paths, file_path) as audio:
        info = await run_blocking(media.probe, audio)
    facts = AudioFacts(
        file=audio.shown, size_bytes=audio.size_bytes, duration_s=media.duration_s(info),
        format={**info.get("format", {}), "filename": audio.shown}, streams=info.get("streams", []),
    )  # fmt: skip
    return with_data(page(report.metadata(audio, info)), facts)


@server.tool(
    annotations=hints(
        # writes the clip into the workspace (replacing a file of that name): the same call, the same clip
        "Trim audio",
        read_only=False,
        destructive=True,
        idempotent=True,
        open_world=True,
    )
)
async def trim_audio(
    file_path: Annotated[str, Field(description="Path to the audio file to trim")],
    start_time: Annotated[float, Field(description="Start time in seconds")],
    ctx: Context,
    duration: Annotated[float | None, Field(description="Duration in seconds (if None, trim to end)")] = None,
    output_path: Annotated[
        str | None,
        Field(
            description="Where to write the clip in the workspace (default: <name>_trimmed_<start>s.<ext>)"
        ),
    ] = None,
) -> str:
    """Trim audio file to specified time range.

    This tool cuts audio files to extract specific segments based on start time
    and duration. Useful for creating clips or removing unwanted sections.
    The clip is written into the session workspace and its path returned.
    """
    guard = session_of(ctx).paths
    async with media.opened(guard, file_path) as audio:
        return await run_blocking(report.trim, guard, audio, start_time, duration, output_path)


@server.tool(annotations=hints("List supported audio formats", read_only=True, open_world=False))
def list_supported_formats() -> str:
    """List all supported audio formats for processing."""
    return report.formats()


def main() -> None:
    serve(server, check=transcribe.status)
