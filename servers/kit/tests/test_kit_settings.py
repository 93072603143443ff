from __future__ import annotations

import pytest
from gaia_kit.core.settings import KitSettings, forget_settings, get_settings, settings
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
