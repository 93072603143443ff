"""Settings every server reads from its environment (GAIA_* variables), and their one lifetime.

Every settings class of the kit and the servers is read through `settings(cls)`: once per process, on
first use, so a changed environment needs a restart. Tests that change it call `forget_settings()`.
A value that does not validate is a ToolFailure whose sentence names the variable and what to set it to.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from gaia_kit.core.errors import ToolFailure


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


class CacheSettings(BaseSettings):
    """XDG_CACHE_HOME: the base folder of every cache the kit keeps (the HTTP cache, the offline index)."""

    model_config = SettingsConfigDict(env_prefix="", extra="ignore")

    xdg_cache_home: str = ""
    """The user's cache folder (the XDG base directory spec); ~/.cache when unset or empty."""


def cache_dir() -> Path:
    """The folder gaia-env keeps its caches in: $XDG_CACHE_HOME/gaia-env, else ~/.cache/gaia-env."""
    home = settings(CacheSettings).xdg_cache_home
    return Path(home or Path.home() / ".cache") / "gaia-env"


S = TypeVar("S", bound=BaseSettings)

_read: dict[type[BaseSettings], BaseSettings] = {}


def settings(cls: type[S]) -> S:
    """The process's one instance of `cls`, read from the environment the first time it is asked for."""
    found = _read.get(cls)
    if found is None:
        # Two threads may both read it; setdefault keeps the first, so every caller sees one instance.
        found = _read.setdefault(cls, _read_environment(cls))
    return cast(S, found)


def _read_environment(cls: type[S]) -> S:
    try:
        return cls()
    except ValidationError as exc:
        # pydantic's report names fields and error codes; the operator needs the variable to fix.
        raise ToolFailure(" ".join(_sentence(cls, error) for error in exc.errors())) from None


def _sentence(cls: type[BaseSettings], error: Mapping[str, Any]) -> str:
    """`NAME is set to VALUE; set it to WHAT.` for one value that did not validate."""
    if not error["loc"]:
        return f"The settings {cls.__name__} do not validate: {error['msg']}; fix the environment."
    return f"{_variable(cls, str(error['loc'][0]))} is set to {_shown(error['input'])}; set it to {_wanted(error)}."


def _variable(cls: type[BaseSettings], located: str) -> str:
    """The environment variable behind a field: the prefix and the field's name, or its alias."""
    if located in cls.model_fields:
        return f"{cls.model_config.get('env_prefix', '')}{located}".upper()
    return located.upper()  # an alias (validation_alias) is the variable's whole name


def _shown(given: Any) -> str:
    if isinstance(given, str):
        try:
            float(given)
        except ValueError:
            return repr(given)
        return given.strip()  # a number reads better bare: "is -1", not "is '-1'"
    return repr(given)


_PARSED_AS = {
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_parsing": "a number",
    "bool_parsing": "true or false",
}


def _wanted(error: Mapping[str, Any]) -> str:
    """What a value must be, from the check it failed (a bound's type says whole number or not)."""
    kind, ctx = error["type"], error.get("ctx", {})
    if kind in _PARSED_AS:
        return _PARSED_AS[kind]
    if kind == "literal_error":
        return str(ctx["expected"])
    if kind == "greater_than":
        number = "whole number" if isinstance(ctx["gt"], int) else "number"
        return f"a positive {number}" if ctx["gt"] == 0 else f"a {number} above {ctx['gt']:g}"
    if kind == "greater_than_equal":
        return f"{ctx['ge']:g} or more"
    if kind == "less_than_equal":
        return f"{ctx['le']:g} or less"
    message = str(error["msg"])
    return f"a valid value ({message[:1].lower()}{message[1:]})"


def forget_settings() -> None:
    """Drop every instance read so far: the next `settings(cls)` reads the environment again."""
    _read.clear()


def get_settings() -> KitSettings:
    return settings(KitSettings)
