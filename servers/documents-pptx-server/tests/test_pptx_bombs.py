"""PowerPoint bombs (issue 22, finding 13): refused in seconds, nothing written, the next call served."""

import io

import pytest
from gaia_kit_testing import failed, ok
from gaia_kit_testing.bombs import forge_sizes, resident_mb
from PIL import Image
from pptx import Presentation
from pptx.util import Inches

pytestmark = pytest.mark.anyio


def deck(path):
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), "blue").save(buffer, "PNG")
    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = "Arctic tern"
    slide.shapes.add_picture(buffer, Inches(1), Inches(1))
    presentation.save(path)
    return path


async def test_an_image_that_claims_a_gigabyte_is_refused_and_nothing_is_written(call, env):
    forge_sizes(deck(env.workspace / "talk.pptx"), {"ppt/media/image1.png": 2**30})
    before = resident_mb()
    refused = failed(await call("extract_pptx_content", file_path="talk.pptx"))
    assert "talk.pptx was not opened: its part ppt/media/image1.png declares 1,024.0 MB" in refused
    assert not (env.workspace / "pptx_images").exists()
    assert resident_mb() - before < 64
    assert "Arctic tern" in ok(
        await call("extract_pptx_content", file_path=str(deck(env.workspace / "ok.pptx")))
    )
