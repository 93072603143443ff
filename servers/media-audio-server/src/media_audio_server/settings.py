"""media-audio-server's settings (AUDIO_* variables), read through gaia_kit.core.settings. The
transcription endpoint's AUDIO_LLM_* variables are the kit's model settings (gaia_kit.models.llm)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class AudioSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AUDIO_", extra="ignore", str_strip_whitespace=True)

    transcription_backend: str = "local"
    """`local` (faster-whisper on the CPU), `openai` (an OpenAI-compatible /audio/transcriptions
    endpoint) or `openai-whisper` (PyTorch Whisper, an optional install); checked when a call uses it."""
    whisper_model: str = ""
    """The local CTranslate2 model: a folder, or a folder name in `whisper_model_dir`; empty for the
    packaged tiny.en model."""
    whisper_model_dir: str = ""
    """A mounted folder of models that `model_size` picks from (for openai-whisper: ~/.cache/whisper
    when empty)."""
    openai_whisper_model: str = ""
    """The openai-whisper backend's .pt checkpoint: a file, or a name in `whisper_model_dir`."""
    whisper_threads: int = Field(default=0, ge=0)
    """CPU threads of the local model; 0 leaves it to CTranslate2 (OMP_NUM_THREADS, else 4)."""
    chunk_s: float = Field(default=600, gt=0)
    """Recordings are decoded and transcribed in chunks this many seconds long, so memory stays bounded."""
    transcription_timeout_s: float = Field(default=1800, gt=0)
    """Deadline for one whole transcription."""
    ffmpeg_timeout_s: float = Field(default=300, gt=0)
    """Deadline for one ffmpeg run (decoding, trimming)."""
