"""IMAGE_* settings: read when a tool runs (not at import), and out-of-range values refused."""

import pytest
from gaia_kit_testing import ok, sent_content
from media_image_server.settings import ImageSettings
from PIL import Image
from pydantic import ValidationError

pytestmark = pytest.mark.anyio


async def test_image_max_side_set_after_import_bounds_the_image_sent(call, kit_env, fake, monkeypatch):
    monkeypatch.setenv("IMAGE_MAX_SIDE", "100")
    Image.new("RGB", (400, 200), "red").save(kit_env.workspace / "wide.png")
    fake.answer("Red.")
    ok(await call("analyze_image_ai", file_path="wide.png", task="What colour is it?"))
    _, images = sent_content(fake.requests[0])
    assert images[0].size == (100, 50)


@pytest.mark.parametrize("name", ["IMAGE_MAX_SIDE", "IMAGE_OCR_TIMEOUT"])
def test_a_limit_of_zero_is_refused(monkeypatch, name):
    monkeypatch.setenv(name, "0")
    with pytest.raises(ValidationError, match=name.removeprefix("IMAGE_").lower()):
        ImageSettings()
