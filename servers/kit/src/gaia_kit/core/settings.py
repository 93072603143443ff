"""Settings every server reads from its environment (GAIA_* variables), and their one lifetime.

Every settings class of the kit and the servers is read through `settings(cls)`: once per process, on
first use, so a changed environment needs a restart. Tests that change it call `forget_settings()`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TypeVar, cast

from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_workspace_root() -> Path:
    return Path(tempfile.gettempdir()) / "gaia-env" / "workspaces"


class KitSettings(BaseSettings):
    """Shared configuration. The gateway passes the same values to every server it starts."""

    model_config = SettingsConfigDict(env_prefix="GAIA_", extra="ignore")

    workspace_root: Path = _default_workspace_root()
    """Parent of every session workspace; a workspace named in `_meta` must live under it."""

    dataset_dir: Path = Path("gaia_dataset")
    """The GAIA dataset, readable by every session and never writable."""

    dataset_alias: str = "/workspace/gaia_dataset"
    """The path agents are told the dataset lives at; it maps onto `dataset_dir`."""

    max_output_chars: int = 40_000
    """Cap on the text a tool returns in one call; longer output is paged."""

    max_read_bytes: int = 64 * 1024 * 1024
    """Cap on the bytes a tool reads into memory from one file."""

    max_media_bytes: int = 20 * 1024 * 1024
    """Cap on an image or audio file returned inline as base64."""

    workspace_max_mb: int = 4096
    """Most bytes one session workspace may hold (gaia_kit.core.quota); 0 for no limit."""

    workspace_max_files: int = 50_000
    """Most files, folders and links one session workspace may hold; 0 for no limit."""

    workspace: str = ""
    """The one workspace of a server run standalone (no gateway); a fresh temporary one when unset."""

    gateway_sessions: bool = False
    """Set by the gateway: it owns session lifetimes (one TTL) and says when each ends, so servers
    keep no idle timers of their own."""


S = TypeVar("S", bound=BaseSettings)

_read: dict[type[BaseSettings], BaseSettings] = {}


def settings(cls: type[S]) -> S:
    """The process's one instance of `cls`, read from the environment the first time it is asked for."""
    found = _read.get(cls)
    if found is None:
        # Two threads may both read it; setdefault keeps the first, so every caller sees one instance.
        found = _read.setdefault(cls, cls())
    return cast(S, found)


def forget_settings() -> None:
    """Drop every instance read so far: the next `settings(cls)` reads the environment again."""
    _read.clear()


def get_settings() -> KitSettings:
    return settings(KitSettings)
