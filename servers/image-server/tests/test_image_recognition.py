"""mcp_image_recognition: media-image-server's vision code behind image-server's interface."""

import pytest
from gaia_kit_testing import failed, ok
from gaia_kit_testing.compat import REFERENCE, compatibility_problems
from image_server.server import server
from PIL import Image

pytestmark = pytest.mark.anyio


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


async def test_urls_and_paths_mix(call, kit_env, fake, tmp_path, monkeypatch):
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    root = tmp_path / "site"
    root.mkdir()
    Image.new("RGB", (64, 48), "yellow").save(root / "sun.jpg")
    Image.new("RGB", (40, 30), "blue").save(kit_env.workspace / "sky.png")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *args: None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_port}/sun.jpg"
    # The kit's client reads its settings when a server first uses it: allow-list the site up front.
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "off")
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    try:
        fake.answer("Yellow sun, blue sky.")
        out = ok(await call("mcp_image_recognition", image_urls=[url, "sky.png"], question="Colours?"))
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert out == "Yellow sun, blue sky."
    parts = fake.requests[0]["messages"][-1]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "image_url"]
