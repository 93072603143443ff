"""media-video-server: keyframes by scene change or uniform sampling (ffmpeg), and questions and
summaries answered by a vision model from sampled frames plus the audio transcript
(VIDEO_LLM_* falling back to MCP_LLM_*; the transcript by media-audio-server's own code).
"""

from typing import Annotated, Literal

from gaia_kit import KitServer, ToolFailure, run_blocking, serve, session_of
from gaia_kit.core.hints import hints
from gaia_kit.core.settings import settings
from gaia_kit.media.files import binary
from gaia_kit.models.llm import llm_status
from mcp.server.mcpserver import Context
from pydantic import Field

from . import ask, keyframes, video
from .settings import VideoSettings

server = KitServer(
    "media-video-server",
    instructions=(
        "Reads videos in the workspace, the dataset or at a URL: extract_keyframes saves the frames around "
        "a moment (at scene changes, or evenly spaced) into the workspace with their timestamps; "
        "analyze_video answers a question and summarize_video summarises, from sampled frames and the "
        "transcript of the audio, through a vision model."
    ),
)

OutputFormat = Annotated[
    Literal["markdown", "json", "text"], Field(description="Output format: 'markdown', 'json', or 'text'")
]


@server.tool(
    annotations=hints(
        # frames are saved into the workspace; the same call saves the same frames
        "Extract keyframes",
        read_only=False,
        destructive=False,
        idempotent=True,
        open_world=True,
    )
)
async def extract_keyframes(
    video_path: Annotated[str, Field(description="The input video filepath or URL.")],
    target_time: Annotated[
        float,
        Field(
            description="The specific time point for extraction (in seconds), centered within the window_size."
        ),
    ],
    ctx: Context,
    window_size: Annotated[
        float, Field(description="The window size for extraction (in seconds, default: 5).")
    ] = 5,
    output_dir: Annotated[
        str | None,
        Field(description="Directory where extracted frames will be saved (default: workspace/keyframes)."),
    ] = None,
    output_format: OutputFormat = "markdown",
    mode: Annotated[
        Literal["scene", "uniform"],
        Field(
            description="'scene': the window's first frame and every scene change in it; "
            "'uniform': one frame a second (evenly spread when max_frames is smaller)"
        ),
    ] = "scene",
    max_frames: Annotated[
        int | None, Field(description="At most this many frames (default and ceiling: VIDEO_MAX_KEYFRAMES)")
    ] = None,
    image_format: Annotated[
        Literal["jpg", "png"], Field(description="Image format of the saved frames")
    ] = "jpg",
) -> str:
    """Extract key frames around a target time with scene detection.

    This tool provides keyframe extraction with:
    - Scene detection for significant frame changes
    - Configurable time windows
    - Automatic output directory management
    - LLM-optimized result formatting
    Frames are saved into the session workspace; the answer lists each file with its timestamp.
    """
    guard = session_of(ctx).paths
    async with video.opened(guard, video_path) as clip:
        return await run_blocking(
            keyframes.extract,
            guard,
            clip,
            target_time,
            window_size,
            output_dir,
            mode,
            max_frames,
            image_format,
            output_format,
        )


@server.tool(annotations=hints("Analyze video", read_only=True, open_world=True))
async def analyze_video(
    video_url: Annotated[str, Field(description="Path or URL to the video file to analyze")],
    question: Annotated[str, Field(description="Question or task for video analysis")],
    ctx: Context,
    sample_rate: Annotated[float, Field(description="Frame sampling rate (frames per second)")] = 1.0,
    start_time: Annotated[float, Field(description="Start time in seconds")] = 0.0,
    end_time: Annotated[float | None, Field(description="End time in seconds (None for full video)")] = None,
    output_format: OutputFormat = "markdown",
    max_workers: Annotated[int, Field(description="Maximum number of parallel workers for analysis")] = 4,
) -> str:
    """Analyze video content using AI with parallel processing.

    This tool provides comprehensive video analysis capabilities including:
    - Content understanding and description
    - Object and scene detection
    - Action and movement analysis
    - Temporal event tracking
    - Question-answering about video content
    - Parallel processing for faster analysis
    Frames (at most VIDEO_MAX_FRAMES, spread evenly over long ranges) and the audio transcript go to
    the vision model together.
    """
    return await ask.respond(
        session_of(ctx).paths,
        video_url,
        question,
        (start_time, end_time),
        sample_rate,
        max_workers,
        output_format,
        "Video analysis",
    )


@server.tool(annotations=hints("Summarize video", read_only=True, open_world=True))
async def summarize_video(
    video_url: Annotated[str, Field(description="The input video filepath or URL to summarize.")],
    ctx: Context,
    sample_rate: Annotated[float, Field(description="Sample n frames per second (default: 1).")] = 1,
    start_time: Annotated[
        float, Field(description="Start time of the video segment in seconds (default: 0).")
    ] = 0,
    end_time: Annotated[
        float | None, Field(description="End time of the video segment in seconds (default: None).")
    ] = None,
    output_format: OutputFormat = "markdown",
) -> str:
    """Summarize the main content of a video using AI analysis.

    This tool provides AI-powered video summarization with:
    - Key point extraction
    - Main topic identification
    - Important visual element recognition
    - LLM-optimized result formatting
    """
    return await ask.respond(
        session_of(ctx).paths,
        video_url,
        ask.SUMMARY_QUESTION,
        (start_time, end_time),
        sample_rate,
        settings(VideoSettings).max_workers,
        output_format,
        "Video summary",
    )


def check() -> dict:
    """For `--check`: ffmpeg for keyframes, the vision model for questions and summaries."""
    report = llm_status(ask.PREFIX)
    report["backend"] = f"ffmpeg keyframes; vision model: {report['backend']}"
    for tool in ("ffmpeg", "ffprobe"):
        try:
            binary(tool)
        except ToolFailure:
            report["missing"] = [*report["missing"], f"{tool} (apt-get install ffmpeg)"]
    return report


def main() -> None:
    serve(server, check=check)
