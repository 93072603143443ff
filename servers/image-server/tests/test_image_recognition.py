"""mcp_image_recognition: media-image-server's vision code behind image-server's interface."""

import json
from pathlib import Path

import pytest
from gaia_kit.testing import failed, ok
from image_server.server import server
from PIL import Image
from test_compat_schemas import compatibility_problems

pytestmark = pytest.mark.anyio

REFERENCE = json.loads(
    (Path(__file__).parents[3] / "tests" / "reference" / "aworld_tool_schemas.json").read_text()
)


@pytest.mark.parametrize("server_id", ["image-server", "media-image-server"])
async def test_tools_match_the_reference_schemas(server_id):
    if server_id == "image-server":
        tools = await server.list_tools()
    else:
        from media_image_server.server import server as media

        tools = await media.list_tools()
    ours = {tool.name: tool.input_schema for tool in tools}
    assert set(ours) == {tool["name"] for tool in REFERENCE[server_id]}
    for tool in REFERENCE[server_id]:
        assert not compatibility_problems(tool["inputSchema"], ours[tool["name"]]), tool["name"]


async def test_several_images_and_the_question_reach_the_model(call, kit_env, fake):
    Image.new("RGB", (40, 30), "blue").save(kit_env.workspace / "one.png")
    Image.new("RGB", (50, 30), "green").save(kit_env.dataset / "two.jpg")
    fake.answer("Blue, then green.")
    out = ok(
        await call(
            "mcp_image_recognition",
            image_urls=["one.png", "/workspace/gaia_dataset/two.jpg"],
            question="Which colours, in order?",
        )
    )
    assert out == "Blue, then green."
    request = fake.requests[0]
    assert request["model"] == "fake-vision"
    parts = request["messages"][-1]["content"]
    assert parts[0] == {"type": "text", "text": "Which colours, in order?"}
    assert [p["type"] for p in parts[1:]] == ["image_url", "image_url"]
    assert all(p["image_url"]["url"].startswith("data:image/png;base64,") for p in parts[1:])


async def test_bad_inputs_fail_before_the_model_is_asked(call, kit_env, fake):
    (kit_env.workspace / "notes.jpg").write_text("just text")
    assert "is not an image" in failed(
        await call("mcp_image_recognition", image_urls=["notes.jpg"], question="What is it?")
    )
    assert "No image given" in failed(await call("mcp_image_recognition", image_urls=[], question="?"))
    assert "question is empty" in failed(
        await call("mcp_image_recognition", image_urls=["notes.jpg"], question=" ")
    )
    assert not fake.requests


async def test_without_a_model_the_error_names_the_variables(call, kit_env, no_llm):
    Image.new("RGB", (30, 20)).save(kit_env.workspace / "a.png")
    message = failed(await call("mcp_image_recognition", image_urls=["a.png"], question="What is it?"))
    assert "IMAGE_LLM_MODEL_NAME" in message and "MCP_LLM_BASE_URL" in message
