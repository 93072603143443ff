"""media-image-server's settings (IMAGE_* variables), read through gaia_kit.core.settings. The vision
model's IMAGE_LLM_* variables are the kit's model settings (gaia_kit.models.llm), and IMAGE_MAX_PIXELS
is the kit's image decoding limit (gaia_kit.media.images)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ImageSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="IMAGE_", extra="ignore")

    max_side: int = Field(default=2048, gt=0)
    """Longest side, in pixels, of an image sent to the vision model; larger ones are downscaled."""
    ocr_timeout: float = Field(default=120, gt=0)
    """Seconds one tesseract run may take before it is killed."""
