"""media-image-server: text in images (tesseract OCR), image metadata (Pillow), questions about images
(an OpenAI-compatible vision model: IMAGE_LLM_* falling back to MCP_LLM_*).

image-server's mcp_image_recognition is `vision.ask` too: one implementation, two interfaces.
"""

from typing import Annotated

from gaia_kit import KitServer, page, run_blocking, serve, session_of
from gaia_kit.core.args import MaxLength, StartIndex
from gaia_kit.core.hints import hints
from gaia_kit.core.results import with_data
from gaia_kit.models.llm import llm_status
from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from . import metadata, ocr, vision
from .images import Opened, decoded, in_worker, load

server = KitServer(
    "media-image-server",
    instructions=(
        "Reads images in the workspace, the dataset or at a URL: extract_text_ocr for the text in an "
        "image (local tesseract, no key), get_image_metadata for format, size, EXIF (camera, timestamps, "
        "GPS) and animation frames, analyze_image_ai to ask a vision model anything about an image."
    ),
)


@server.tool(annotations=hints("OCR image text", read_only=True, open_world=True))
async def extract_text_ocr(
    file_path: Annotated[str, Field(description="Path to the image file for OCR")],
    ctx: Context,
    language: Annotated[str, Field(description="OCR language code (e.g., 'eng', 'spa', 'fra')")] = "eng",
    preprocess: Annotated[bool, Field(description="Whether to preprocess image for better OCR")] = True,
    word_boxes: Annotated[
        bool, Field(description="Also list each word with its box (left, top, width, height) and confidence")
    ] = False,
    start_index: StartIndex = 0,
    max_length: MaxLength = None,
) -> str:
    """Extract text from images using Optical Character Recognition (OCR).

    This tool uses Tesseract OCR to extract text content from images,
    with optional preprocessing to improve recognition accuracy.
    Languages can be combined ('eng+fra'); preprocessing converts to grayscale, inverts dark-mode
    screenshots and upscales small text.
    """
    language = await run_blocking(ocr.check_language, language)
    opened = await load(session_of(ctx).paths, file_path)
    return await in_worker(_ocr_report, opened, language, preprocess, word_boxes, start_index, max_length)


def _ocr_report(
    opened: Opened,
    language: str,
    preprocess: bool,
    word_boxes: bool,
    start_index: int,
    max_length: int | None,
) -> str:
    with opened.image:
        frames = getattr(opened.image, "n_frames", 1)
        reading = ocr.recognise(decoded(opened), language, preprocess, opened.shown)
    header = [f"File: {opened.shown}", f"Size: {opened.image.width} x {opened.image.height} pixels"]
    header.append(f"Language: {language}" + (" (preprocessed)" if preprocess else ""))
    if opened.mislabelled:
        header.append(f"Note: {opened.mislabelled}.")
    if frames > 1:
        header.append(f"Frames: {frames}; the first was read")
    if reading.words:
        mean = sum(w.confidence for w in reading.words) / len(reading.words)
        header.append(f"Words: {len(reading.words)}, mean confidence {mean:.0f}%")
    body = reading.text or "(no text found; if there is text, try preprocess=false or another language)"
    if word_boxes and reading.words:
        rows = [
            f"{w.text}\t{w.left}\t{w.top}\t{w.width}\t{w.height}\t{w.confidence:.0f}" for w in reading.words
        ]
        body += "\n\nWord boxes (text, left, top, width, height, confidence):\n" + "\n".join(rows)
    return page("\n".join(header) + "\n\n" + body, start_index, max_length)


@server.tool(annotations=hints("Analyze image", read_only=True, open_world=True))
async def analyze_image_ai(
    file_path: Annotated[str, Field(description="Path to the image file for AI analysis")],
    ctx: Context,
    task: Annotated[
        str, Field(description="Specific analysis task or question about the image")
    ] = "Describe what you see in this image",
) -> str:
    """Analyze image content using AI vision models.

    This tool uses advanced AI models to analyze and describe image content,
    answer questions about images, or perform specific visual reasoning tasks.
    """
    return await vision.ask(session_of(ctx).paths, [file_path], task)


@server.tool(annotations=hints("Image metadata", read_only=True, open_world=True), output=metadata.ImageFacts)
async def get_image_metadata(
    file_path: Annotated[str, Field(description="Path to the image file to analyze")],
    ctx: Context,
) -> CallToolResult:
    """Extract comprehensive metadata from image files.

    This tool analyzes image files and extracts detailed metadata including
    dimensions, format, color mode, file size, and other technical information.
    EXIF timestamps and GPS position are given in readable form, and animated images list their frames.
    """
    opened = await load(session_of(ctx).paths, file_path)
    text, facts = await in_worker(metadata.described, opened)
    return with_data(text, facts)


def check() -> dict:
    """For `--check`: tesseract and its language packs, and the vision model."""
    report = llm_status(vision.PREFIX)
    report["backend"] = f"local OCR and metadata; vision model: {report['backend']}"
    languages = ocr.installed_languages()
    if not languages:
        report["missing"] = [
            *report["missing"],
            "tesseract (apt-get install tesseract-ocr tesseract-ocr-eng)",
        ]
    else:
        report["notes"] = [*report["notes"], f"OCR languages installed: {', '.join(languages)}"]
    return report


def main() -> None:
    serve(server, check=check)
