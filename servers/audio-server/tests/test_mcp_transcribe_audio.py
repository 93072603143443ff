"""mcp_transcribe_audio: media-audio-server's transcription behind audio-server's interface."""

import functools
import re
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest
from audio_server.server import server
from gaia_kit_testing import failed, ok
from gaia_kit_testing.compat import REFERENCE, compatibility_problems

pytestmark = pytest.mark.anyio


SENTENCE = "The museum opens on Monday morning"


def words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


async def test_tool_matches_the_reference_schema():
    ours = {tool.name: tool.input_schema for tool in await server.list_tools()}
    assert set(ours) == {tool["name"] for tool in REFERENCE["audio-server"]}
    for tool in REFERENCE["audio-server"]:
        assert not compatibility_problems(tool["inputSchema"], ours[tool["name"]]), tool["name"]


async def test_a_path_and_a_url_are_transcribed_by_the_local_model(call, kit_env, tmp_path, monkeypatch):
    monkeypatch.delenv("AUDIO_TRANSCRIPTION_BACKEND", raising=False)
    site = tmp_path / "site"
    site.mkdir()
    subprocess.run(["espeak-ng", "-s", "140", "-w", str(site / "talk.wav"), SENTENCE], check=True)
    subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-v",
            "error",
            "-i",
            str(site / "talk.wav"),
            str(kit_env.workspace / "talk.ogg"),
        ],
        check=True,
    )
    assert words(ok(await call("mcp_transcribe_audio", audio_urls=["talk.ogg"]))) == words(SENTENCE)

    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "off")
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    (kit_env.workspace / "bad.mp3").write_text("not audio")
    url = f"http://127.0.0.1:{httpd.server_port}/talk.wav"
    try:
        out = ok(await call("mcp_transcribe_audio", audio_urls=[url, "bad.mp3"]))
    finally:
        httpd.shutdown()
        httpd.server_close()
    first, second = out.split("## bad.mp3")
    assert first.startswith(f"## {url}") and words(first.split("\n", 1)[1]) == words(SENTENCE)
    assert "not an audio file ffmpeg can read" in second


async def test_nothing_given_or_outside_the_workspace(call, tmp_path):
    assert "No audio given" in failed(await call("mcp_transcribe_audio", audio_urls=[]))
    assert "Access denied" in failed(await call("mcp_transcribe_audio", audio_urls=["/etc/hostname"]))
