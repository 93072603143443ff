"""Questions about images, answered by an OpenAI-compatible vision model through gaia_kit.models.llm.

The model is IMAGE_LLM_BASE_URL / IMAGE_LLM_MODEL_NAME / IMAGE_LLM_API_KEY, each falling back to
MCP_LLM_*. Images go as data URLs in the user message's content parts (the OpenAI vision format),
downscaled first: a vision model tiles large images down anyway, and the request stays small.
"""

from __future__ import annotations

from gaia_kit import PathGuard, ToolFailure
from gaia_kit.core.settings import settings
from gaia_kit.media.images import data_url, image_part
from gaia_kit.models.llm import chat

from .images import Opened, decoded, in_worker, load
from .settings import ImageSettings

PREFIX = "IMAGE"
MAX_IMAGES = 10
MAX_ANSWER_TOKENS = 4096

SYSTEM = (
    "You are an expert at reading images: objects, people, scenes, charts, tables, diagrams, maps, "
    "handwriting and printed text. Look carefully, reason step by step about what the image shows, "
    "transcribe text exactly when it matters, and say plainly when something cannot be seen or read."
)


def _encoded(opened: Opened) -> str:
    with opened.image:
        return data_url(decoded(opened), settings(ImageSettings).max_side)


async def ask(guard: PathGuard, sources: list[str], question: str) -> str:
    """The model's answer to `question` about the images at `sources`, in that order."""
    if not question.strip():
        raise ToolFailure("The question is empty; say what to find out about the image.")
    if not sources:
        raise ToolFailure("No image given; pass at least one image path.")
    if len(sources) > MAX_IMAGES:
        raise ToolFailure(f"{len(sources)} images given; ask about at most {MAX_IMAGES} at a time.")
    parts: list[dict] = [{"type": "text", "text": question.strip()}]
    for source in sources:
        url = await in_worker(_encoded, await load(guard, source))
        parts.append(image_part(url))
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": parts}]
    return await chat(messages, prefix=PREFIX, max_tokens=MAX_ANSWER_TOKENS)
