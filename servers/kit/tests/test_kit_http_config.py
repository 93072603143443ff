"""gaia_kit.web.config: the GAIA_HTTP_* settings, the host=number lists and the User-Agent."""

from __future__ import annotations

import pytest
from gaia_kit import ToolFailure
from gaia_kit.web.config import HttpSettings, host_numbers, user_agent


def test_settings_come_from_gaia_http_variables(monkeypatch, tmp_path):
    monkeypatch.setenv("GAIA_HTTP_RETRIES", "5")
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "replay")
    monkeypatch.setenv("GAIA_HTTP_CACHE_PATH", str(tmp_path / "c.sqlite"))
    settings = HttpSettings()
    assert (settings.retries, settings.attempts, settings.cache_mode) == (5, 6, "replay")
    assert settings.cache_path == tmp_path / "c.sqlite"


def test_the_default_cache_file_lives_under_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.delenv("GAIA_HTTP_CACHE_PATH", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert HttpSettings().cache_path == tmp_path / "gaia-env" / "http-cache.sqlite"


def test_host_numbers_read_lower_cased_pairs_and_skip_blanks():
    pairs = host_numbers(" Export.arXiv.org=3, ,*.wikipedia.org=1,", "GAIA_HTTP_HOST_INTERVALS")
    assert pairs == {"export.arxiv.org": 3.0, "*.wikipedia.org": 1.0}


def test_a_malformed_host_number_names_the_variable():
    with pytest.raises(ToolFailure, match="GAIA_HTTP_HOST_LIMITS has a malformed entry 'archive.org'"):
        host_numbers("archive.org", "GAIA_HTTP_HOST_LIMITS")


def test_the_user_agent_names_the_project_and_the_contact():
    assert user_agent().startswith("gaia-env/") and "MCP tool environment" in user_agent()
    assert user_agent("ops@example.org").endswith("(+ops@example.org)")
