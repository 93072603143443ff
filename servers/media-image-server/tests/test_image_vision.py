"""analyze_image_ai against the loopback OpenAI-compatible fake, which checks the request."""

import pytest
from gaia_kit_testing import failed, ok, sent_content
from PIL import Image

pytestmark = pytest.mark.anyio


async def test_the_question_and_image_reach_the_model_and_its_answer_comes_back(call, kit_env, fake):
    Image.new("RGB", (4000, 1000), "red").save(kit_env.workspace / "wide.png")
    fake.answer("A plain red rectangle.")
    out = ok(await call("analyze_image_ai", file_path="wide.png", task="What colour is it?"))
    assert out == "A plain red rectangle."
    request = fake.requests[0]
    assert request["model"] == "fake-vision" and fake.headers[0]["authorization"] == "Bearer sk-image-secret"
    texts, images = sent_content(request)
    assert texts == ["What colour is it?"] and len(images) == 1
    assert images[0].size == (2048, 512) and images[0].getpixel((10, 10))[:3] == (255, 0, 0)


async def test_the_default_task_describes_the_image(call, kit_env, fake):
    Image.new("RGBA", (30, 20), (0, 0, 0, 0)).save(kit_env.workspace / "clear.png")
    fake.answer("Nothing but white.")
    assert ok(await call("analyze_image_ai", file_path="clear.png")) == "Nothing but white."
    texts, images = sent_content(fake.requests[0])
    assert texts == ["Describe what you see in this image"]
    assert images[0].size == (30, 20) and images[0].getpixel((0, 0))[:3] == (255, 255, 255)


async def test_without_a_model_the_error_names_the_variables(call, kit_env, no_llm):
    Image.new("RGB", (30, 20)).save(kit_env.workspace / "a.png")
    message = failed(await call("analyze_image_ai", file_path="a.png"))
    assert "IMAGE_LLM_BASE_URL" in message and "MCP_LLM_MODEL_NAME" in message


async def test_model_errors_are_one_sentence_without_the_key(call, kit_env, fake):
    Image.new("RGB", (30, 20)).save(kit_env.workspace / "a.png")
    fake.fail(400, "image too small sk-image-secret")
    message = failed(await call("analyze_image_ai", file_path="a.png", task="?"))
    assert "HTTP 400" in message and "sk-image-secret" not in message


async def test_a_photo_goes_as_jpeg_to_keep_the_request_small(call, kit_env, fake):
    Image.effect_noise((1600, 1200), 80).convert("RGB").save(kit_env.workspace / "grain.png")
    fake.answer("Noise.")
    ok(await call("analyze_image_ai", file_path="grain.png"))
    url = fake.requests[0]["messages"][-1]["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,") and len(url) < 3 * 2**20
