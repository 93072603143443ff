"""AUDIO_* settings: their defaults and meaning, and out-of-range values refused."""

import pytest
from gaia_kit.core.settings import forget_settings
from media_audio_server import transcribe
from media_audio_server.settings import AudioSettings
from pydantic import ValidationError


def test_chunks_follow_audio_chunk_s_set_after_import(monkeypatch):
    monkeypatch.setenv("AUDIO_CHUNK_S", "4")
    assert transcribe._chunks(10.0) == [(0.0, 4.0), (4.0, 4.0), (8.0, 2.0)]


def test_the_backend_name_is_trimmed_and_case_blind_and_empty_means_local(monkeypatch):
    for value, backend in ((" OpenAI ", "openai"), ("", "local"), (None, "local")):
        if value is None:
            monkeypatch.delenv("AUDIO_TRANSCRIPTION_BACKEND")
        else:
            monkeypatch.setenv("AUDIO_TRANSCRIPTION_BACKEND", value)
        forget_settings()  # read once per process: each value needs a fresh read
        assert transcribe.backend() == backend


def test_whisper_threads_zero_means_auto_and_negative_is_refused(monkeypatch):
    monkeypatch.setenv("AUDIO_WHISPER_THREADS", "0")
    assert AudioSettings().whisper_threads == 0
    monkeypatch.setenv("AUDIO_WHISPER_THREADS", "-1")
    with pytest.raises(ValidationError, match="whisper_threads"):
        AudioSettings()


@pytest.mark.parametrize("name", ["AUDIO_CHUNK_S", "AUDIO_TRANSCRIPTION_TIMEOUT_S", "AUDIO_FFMPEG_TIMEOUT_S"])
def test_a_length_or_deadline_of_zero_is_refused(monkeypatch, name):
    monkeypatch.setenv(name, "0")
    with pytest.raises(ValidationError, match=name.removeprefix("AUDIO_").lower()):
        AudioSettings()
