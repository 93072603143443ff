from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from gaia_kit import ToolFailure
from gaia_kit.core.settings import KitSettings, cache_dir, forget_settings, get_settings, settings
from pydantic import Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict


class Knobs(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KNOBS_", extra="ignore")

    turns: int = 3


def test_one_instance_per_class_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOBS_TURNS", "5")
    first = settings(Knobs)
    monkeypatch.setenv("KNOBS_TURNS", "7")
    assert settings(Knobs) is first and first.turns == 5
    assert settings(KitSettings) is get_settings()


def test_forget_settings_reads_the_environment_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOBS_TURNS", "5")
    before, kit = settings(Knobs), get_settings()
    monkeypatch.setenv("KNOBS_TURNS", "7")
    forget_settings()
    assert settings(Knobs).turns == 7 and settings(Knobs) is not before
    assert get_settings() is not kit


class Limits(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KNOBS_", extra="ignore")

    memory_mb: int = Field(512, ge=0)
    ratio: float = Field(100, gt=0)
    pixels: float = Field(9e7, gt=0, validation_alias="KNOBS_PIXELS_ALIAS")
    layout: Literal["cells", "rows"] = "cells"


def test_a_value_that_is_not_a_number_is_one_sentence_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KNOBS_MEMORY_MB", "lots")
    with pytest.raises(ToolFailure) as failure:
        settings(Limits)
    assert str(failure.value) == "KNOBS_MEMORY_MB is set to 'lots'; set it to a whole number."
    assert not isinstance(failure.value.__cause__, ValidationError)
    monkeypatch.setenv("KNOBS_MEMORY_MB", "64")
    monkeypatch.setenv("KNOBS_RATIO", "many")
    with pytest.raises(ToolFailure, match=r"^KNOBS_RATIO is set to 'many'; set it to a number\.$"):
        settings(Limits)


def test_a_negative_number_names_the_bound_it_breaks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOBS_RATIO", "-2")
    with pytest.raises(ToolFailure, match=r"^KNOBS_RATIO is set to -2; set it to a positive number\.$"):
        settings(Limits)
    monkeypatch.delenv("KNOBS_RATIO")
    monkeypatch.setenv("KNOBS_MEMORY_MB", "-1")
    with pytest.raises(ToolFailure, match=r"^KNOBS_MEMORY_MB is set to -1; set it to 0 or more\.$"):
        settings(Limits)


def test_an_alias_and_a_choice_are_named_as_the_environment_spells_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KNOBS_PIXELS_ALIAS", "0")
    monkeypatch.setenv("KNOBS_LAYOUT", "grid")
    with pytest.raises(ToolFailure) as failure:
        settings(Limits)
    assert str(failure.value) == (
        "KNOBS_PIXELS_ALIAS is set to 0; set it to a positive number. KNOBS_LAYOUT is set to 'grid'; set it to 'cells' or 'rows'."
    )
    monkeypatch.delenv("KNOBS_PIXELS_ALIAS")
    monkeypatch.setenv("KNOBS_LAYOUT", "rows")
    assert settings(Limits).layout == "rows"  # a failed read is not kept: fixed, it reads again


def test_the_cache_folder_follows_xdg_cache_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "gaia-env"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    forget_settings()
    assert cache_dir() == Path.home() / ".cache" / "gaia-env"
