"""audio-server: mcp_transcribe_audio, speech in one or more recordings as text.

The implementation is media-audio-server's (`media_audio_server.report.transcribe_many`): the same
backends (local faster-whisper, or an OpenAI-compatible endpoint), limits and settings; this module is
only the interface agents trained on this server id expect.
"""

from typing import Annotated

from gaia_kit import KitServer, serve, session_of
from gaia_kit.core.hints import hints
from mcp.server.mcpserver import Context
from media_audio_server import report, transcribe
from pydantic import Field

server = KitServer(
    "audio-server",
    instructions=(
        "Transcribes speech in audio (or the audio track of video) at paths in the workspace or dataset, "
        "or at URLs."
    ),
)


@server.tool(annotations=hints("Transcribe audio files", read_only=True, open_world=True))
async def mcp_transcribe_audio(
    audio_urls: Annotated[
        list[str], Field(description="The input audio in given a list of filepaths or urls.")
    ],
    ctx: Context,
) -> str:
    """Transcribe the given audio in a list of filepaths or urls."""
    return await report.transcribe_many(session_of(ctx).paths, audio_urls)


def main() -> None:
    serve(server, check=transcribe.status)
