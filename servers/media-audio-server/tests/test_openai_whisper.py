"""The optional openai-whisper backend: checkpoint lookup, loading, chunked decoding, errors.

No real checkpoint can be downloaded here, so the model is a randomly initialised Whisper of the
tiny.en shape written by the test: what it says is noise, but everything around it is real (the
checkpoint found on disk, loaded once, audio decoded by ffmpeg in chunks, segments and language
reported). The words of real speech are checked for the default backend in test_audio_tools.py.
"""

import re
import shutil

import pytest
from gaia_kit_testing import failed, ok
from media_audio_server import transcribe

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def checkpoint_dir(tmp_path_factory):
    try:
        import torch
        from whisper.model import ModelDimensions, Whisper
    except ImportError:
        pytest.fail("openai-whisper is missing: make test installs it (scripts/whisper-extra.sh)")
    torch.manual_seed(0)
    # tiny.en's vocabulary (51864 tokens: English-only) with narrow layers, so decoding noise is quick.
    dims = ModelDimensions(
        n_mels=80, n_audio_ctx=1500, n_audio_state=64, n_audio_head=2, n_audio_layer=1,
        n_vocab=51864, n_text_ctx=448, n_text_state=64, n_text_head=2, n_text_layer=1,
    )  # fmt: skip
    folder = tmp_path_factory.mktemp("whisper-models")
    torch.save({"dims": dims.__dict__, "model_state_dict": Whisper(dims).state_dict()}, folder / "tiny.en.pt")
    return folder


@pytest.fixture
def openai_whisper(monkeypatch, checkpoint_dir):
    monkeypatch.setenv("AUDIO_TRANSCRIPTION_BACKEND", "openai-whisper")
    monkeypatch.setenv("AUDIO_WHISPER_MODEL_DIR", str(checkpoint_dir))
    monkeypatch.delenv("AUDIO_OPENAI_WHISPER_MODEL", raising=False)
    return checkpoint_dir


async def test_a_checkpoint_on_disk_transcribes_in_chunks(call, kit_env, speech, openai_whisper, monkeypatch):
    from whisper.model import Whisper

    monkeypatch.setenv("AUDIO_CHUNK_S", "1.5")  # the 3 s clip becomes several chunks
    # Whisper falls back to sampling when greedy decoding looks wrong, as a random model's always
    # does, and some samples lead a random model to a step with every token masked (NaN logits).
    # Greedy decoding only, for this noise model; real checkpoints keep whisper's fallback.
    greedy = Whisper.transcribe
    monkeypatch.setattr(
        Whisper,
        "transcribe",
        lambda model, audio, **options: greedy(model, audio, **options, temperature=0.0),
    )
    shutil.copy(speech, kit_env.workspace / "talk.wav")
    out = ok(await call("transcribe_audio", file_path="talk.wav", output_format="segments"))
    assert "Engine: local openai-whisper, checkpoint tiny.en.pt" in out
    times = [float(m) for m in re.findall(r"\[00:(\d\d\.\d\d) - ", out)]
    assert times == sorted(times)
    assert times and max(times) <= 3.0  # noise stamped past a 1.5 s chunk stays inside it
    assert transcribe.status() == {
        "backend": "local openai-whisper", "missing": [], "notes": [f"checkpoint {openai_whisper / 'tiny.en.pt'}"],
    }  # fmt: skip


async def test_a_missing_checkpoint_is_named_with_what_to_set(
    call, kit_env, speech, openai_whisper, monkeypatch
):
    monkeypatch.setenv("AUDIO_OPENAI_WHISPER_MODEL", "large-v3")
    shutil.copy(speech, kit_env.workspace / "talk.wav")
    message = failed(await call("transcribe_audio", file_path="talk.wav"))
    assert "large-v3.pt" in message and "AUDIO_OPENAI_WHISPER_MODEL" in message
    assert "never downloaded" in message
    assert transcribe.status()["backend"] == "none"


async def test_an_unknown_backend_lists_the_three(call, kit_env, speech, monkeypatch):
    monkeypatch.setenv("AUDIO_TRANSCRIPTION_BACKEND", "whisperx")
    shutil.copy(speech, kit_env.workspace / "talk.wav")
    message = failed(await call("transcribe_audio", file_path="talk.wav"))
    assert "local, openai, openai-whisper" in message and "'whisperx'" in message
