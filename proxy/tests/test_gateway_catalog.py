"""Tool naming across servers, and the registry."""

from __future__ import annotations

from pathlib import Path

import pytest
from gaia_env import catalog
from gaia_env.registry import RegistryError, load_registry, select_enabled

TOOLS = {
    "documents-txt-server": ["extract_text_content", "list_supported_formats"],
    "documents-csv-server": ["extract_csv_content", "list_supported_formats"],
}


def test_unique_names_stay_bare_and_shared_names_are_qualified() -> None:
    names = catalog.exposed_names(TOOLS)
    assert set(names) == {
        "extract_text_content",
        "extract_csv_content",
        "documents-txt-server__list_supported_formats",
        "documents-csv-server__list_supported_formats",
    }
    assert names["documents-csv-server__list_supported_formats"] == catalog.ToolRoute(
        "documents-csv-server", "list_supported_formats"
    )


def test_qualified_form_is_always_accepted() -> None:
    only_txt = {"documents-txt-server": TOOLS["documents-txt-server"]}
    assert catalog.resolve("list_supported_formats", only_txt) == catalog.ToolRoute(
        "documents-txt-server", "list_supported_formats"
    )
    assert catalog.resolve("documents-txt-server__extract_text_content", only_txt) == catalog.ToolRoute(
        "documents-txt-server", "extract_text_content"
    )
    assert catalog.resolve("list_supported_formats", TOOLS) is None
    assert catalog.resolve("documents-txt-server__nope", TOOLS) is None


def test_long_qualified_names_stay_legal_and_distinct() -> None:
    long_tools = {
        "a-very-long-server-identifier-for-testing": ["an_equally_long_tool_name_x", "shared"],
        "another-very-long-server-identifier-too": ["an_equally_long_tool_name_x", "shared"],
    }
    names = catalog.exposed_names(long_tools)
    assert len(names) == 4
    assert all(catalog.VALID_NAME.match(n) for n in names)
    for name, route in names.items():
        assert catalog.resolve(name, long_tools) == route


def test_registry_errors_are_clear(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[servers.x]\ncommand = ["y"]\nreplica = 2\n')
    with pytest.raises(RegistryError, match="unknown keys: replica"):
        load_registry(bad)
    bad.write_text("[servers.x\n")
    with pytest.raises(RegistryError, match="not valid TOML"):
        load_registry(bad)
    with pytest.raises(RegistryError, match="not found"):
        load_registry(tmp_path / "missing.toml")
    bad.write_text('[servers.x]\ncommand = ["y"]\nnice = -5\n')
    with pytest.raises(RegistryError, match="nice must be a number from 0 to 19"):
        load_registry(bad)


def test_shipped_registry_and_selection() -> None:
    registry = load_registry()
    assert {"filesystem-server", "documents-txt-server", "documents-csv-server"} <= set(registry)
    chosen = select_enabled(registry, ["documents-txt-server"], replicas=3)
    assert list(chosen) == ["documents-txt-server"] and chosen["documents-txt-server"].replicas == 3
    with pytest.raises(RegistryError, match="Valid ids: .*filesystem-server"):
        select_enabled(registry, ["nope"])
