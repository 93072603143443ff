"""media-video-server's settings (VIDEO_* variables), read through gaia_kit.core.settings. The vision
model's VIDEO_LLM_* variables are the kit's model settings (gaia_kit.models.llm); the transcript follows
media-audio-server's AUDIO_* settings."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class VideoSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="VIDEO_", extra="ignore")

    max_bytes: int = Field(default=256 * 2**20, gt=0)
    """Largest video read, local or downloaded."""
    ffmpeg_timeout_s: float = Field(default=300, gt=0)
    """Deadline for one ffmpeg run (scene detection, frame grabs); its process group is killed then."""
    max_keyframes: int = Field(default=20, gt=0)
    """Most frames extract_keyframes saves in one call, and the ceiling of its max_frames."""
    scene_threshold: float = Field(default=0.3, ge=0, le=1)
    """ffmpeg's scene score (0 to 1) above which a frame counts as a scene change."""
    max_frames: int = Field(default=16, gt=0)
    """Most frames sent to the vision model in one call; a longer span is sampled evenly."""
    max_side: int = Field(default=1024, gt=0)
    """Longest side, in pixels, of a frame sent to the vision model."""
    max_workers: int = Field(default=4, gt=0)
    """Ceiling on ffmpeg processes taking frames at once (the tools' max_workers)."""
    max_transcript_chars: int = Field(default=20_000, gt=0)
    """The transcript put in the prompt is cut at this length."""
