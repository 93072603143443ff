from __future__ import annotations

import socket
import threading
import time
from collections import deque
from typing import Any

import anyio
import pytest
import uvicorn
from gaia_kit_testing.server_call import call_fixture
from media_audio_server.server import server
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

call = call_fixture(server)


@pytest.fixture
def fake_endpoint(monkeypatch):
    """A loopback /v1/audio/transcriptions endpoint, with the server pointed at it."""
    with FakeTranscriptions(model="fake-whisper", api_key="sk-audio-secret") as fake:
        for prefix in ("MCP", "AUDIO"):
            for suffix in ("BASE_URL", "MODEL_NAME", "API_KEY"):
                monkeypatch.delenv(f"{prefix}_LLM_{suffix}", raising=False)
        monkeypatch.setenv("AUDIO_TRANSCRIPTION_BACKEND", "openai")
        monkeypatch.setenv("AUDIO_LLM_BASE_URL", fake.base_url)
        monkeypatch.setenv("AUDIO_LLM_MODEL_NAME", fake.model)
        monkeypatch.setenv("AUDIO_LLM_API_KEY", fake.api_key)
        yield fake


# A loopback OpenAI-compatible /v1/audio/transcriptions endpoint (multipart in, JSON out).


class FakeTranscriptions:
    def __init__(self, model: str, api_key: str):
        self.model, self.api_key = model, api_key
        self.requests: list[dict[str, Any]] = []
        self.script: deque[str] = deque()
        self.busy = 0
        """How many of the next requests answer 429 (Retry-After: 0), as a rate-limited API does."""
        self.hold = threading.Event()
        self.hold.set()
        self.arrived = threading.Event()
        app = Starlette(routes=[Route("/v1/audio/transcriptions", self._transcribe, methods=["POST"])])
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    async def _transcribe(self, request: Request) -> JSONResponse:
        if request.headers.get("authorization") != f"Bearer {self.api_key}":
            return JSONResponse({"error": {"message": "Incorrect API key provided."}}, status_code=401)
        if self.busy:
            self.busy -= 1
            return JSONResponse({"error": {"message": "Rate limit reached"}}, 429, {"Retry-After": "0"})
        form = await request.form()
        upload = form.get("file")
        if form.get("model") != self.model or upload is None:
            return JSONResponse({"error": {"message": "model and file are required"}}, status_code=400)
        data = await upload.read()
        self.requests.append(
            {**{k: v for k, v in form.items() if k != "file"}, "file": data, "filename": upload.filename}
        )
        self.arrived.set()
        while not self.hold.is_set():  # a slow transcription, released by the test
            await _sleep()
        text = self.script.popleft() if self.script else ""
        return JSONResponse({"text": text, "language": "english", "duration": 1.0,
                             "segments": [{"start": 0.0, "end": 1.0, "text": text}]})  # fmt: skip

    def __enter__(self) -> FakeTranscriptions:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the fake transcription server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.hold.set()
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()


async def _sleep() -> None:
    await anyio.sleep(0.01)
