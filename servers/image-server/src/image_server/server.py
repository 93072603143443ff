"""image-server: mcp_image_recognition, questions about one or more images answered by a vision model.

The implementation is media-image-server's (`media_image_server.vision.ask`): the same limits,
encoding and model settings (IMAGE_LLM_* falling back to MCP_LLM_*); this module is only the interface
agents trained on this server id expect.
"""

from typing import Annotated

from gaia_kit import KitServer, serve, session_of
from gaia_kit.core.hints import hints
from gaia_kit.models.llm import llm_status
from mcp.server.mcpserver import Context
from media_image_server import vision
from pydantic import Field

server = KitServer(
    "image-server",
    instructions=(
        "Answers a question about one or more images (paths in the workspace or dataset, or URLs) with a "
        "vision model: description, reasoning, reading text, charts and diagrams."
    ),
)


@server.tool(annotations=hints("Image recognition", read_only=True, open_world=True))
async def mcp_image_recognition(
    image_urls: Annotated[
        list[str], Field(description="The input image(s) in given a list of local filepaths or urls.")
    ],
    question: Annotated[str, Field(description="The question to ask.")],
    ctx: Context,
) -> str:
    """Solve the question by careful reasoning given the image(s) in given local filepath or url, including reasoning, ocr, etc."""
    return await vision.ask(session_of(ctx).paths, image_urls, question)


def main() -> None:
    serve(server, check=lambda: llm_status(vision.PREFIX))
