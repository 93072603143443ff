"""Transcription reports the seconds it has transcribed, and a cancelled one stops at the next segment."""

import subprocess

import anyio
import pytest
from gaia_contract import SESSION_ID_KEY, WORKSPACE_KEY
from gaia_kit_testing import ok
from mcp import Client
from media_audio_server import media, transcribe
from media_audio_server.server import server

pytestmark = pytest.mark.anyio


def looped(speech, target, times: int) -> None:
    subprocess.run(
        ["ffmpeg", "-v", "error", "-stream_loop", str(times), "-i", str(speech), "-ar", "16000", str(target)],
        check=True,
    )


async def test_progress_counts_seconds_up_to_the_duration(kit_env, speech, monkeypatch):
    monkeypatch.setenv("AUDIO_TRANSCRIPTION_BACKEND", "local")
    looped(speech, kit_env.workspace / "three.wav", 2)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    meta = {SESSION_ID_KEY: "s1", WORKSPACE_KEY: str(kit_env.workspace)}
    async with Client(server) as client:
        result = await client.call_tool(
            "transcribe_audio", {"file_path": "three.wav"}, progress_callback=on_progress, meta=meta
        )
    assert "museum" in ok(result).lower()
    duration = seen[-1][1]
    assert duration and seen[-1][0] == pytest.approx(duration)
    assert [d for d, _, _ in seen] == sorted({d for d, _, _ in seen}) and len(seen) >= 2
    assert {m for _, _, m in seen} == {"seconds transcribed"}


async def test_a_cancelled_transcription_stops_and_frees_the_model(kit_env, speech, monkeypatch):
    monkeypatch.setenv("AUDIO_TRANSCRIPTION_BACKEND", "local")
    monkeypatch.setenv("AUDIO_CHUNK_S", "5")
    looped(speech, kit_env.workspace / "long.wav", 200)  # about seven minutes: some ninety chunks
    decoded = []
    real_decode = media.decode

    def counting_decode(*args, **kwargs):
        decoded.append(args[1:])
        return real_decode(*args, **kwargs)

    monkeypatch.setattr(media, "decode", counting_decode)
    started = anyio.Event()

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        started.set()

    meta = {SESSION_ID_KEY: "s1", WORKSPACE_KEY: str(kit_env.workspace)}
    async with Client(server) as client, anyio.create_task_group() as group:
        group.start_soon(
            lambda: client.call_tool(
                "transcribe_audio", {"file_path": "long.wav"}, progress_callback=on_progress, meta=meta
            )
        )
        with anyio.fail_after(120):
            await started.wait()
        group.cancel_scope.cancel()
    with anyio.fail_after(60):
        while transcribe._run_lock.locked():  # the worker thread holds it until it stops
            await anyio.sleep(0.1)
    assert 1 <= len(decoded) < 10  # it stopped after a chunk or two of some ninety
