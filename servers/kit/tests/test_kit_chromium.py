import os
import stat

import pytest
from gaia_kit.core.errors import ToolFailure
from gaia_kit.web.chromium import chromium_args, chromium_path, headless, launch_options


def test_configured_path_wins(tmp_path, monkeypatch):
    binary = tmp_path / "my-chromium"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(binary.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("GAIA_CHROMIUM_PATH", str(binary))
    assert chromium_path() == str(binary)
    assert launch_options()["executable_path"] == str(binary)


def test_bad_configured_path_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("GAIA_CHROMIUM_PATH", str(tmp_path / "absent"))
    with pytest.raises(ToolFailure, match="GAIA_CHROMIUM_PATH"):
        chromium_path()


def test_missing_browser_names_the_package(tmp_path, monkeypatch):
    monkeypatch.delenv("GAIA_CHROMIUM_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolFailure, match="package `chromium`"):
        chromium_path()


def test_found_on_path(tmp_path, monkeypatch):
    binary = tmp_path / "chromium-browser"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    monkeypatch.delenv("GAIA_CHROMIUM_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert chromium_path() == str(binary)


def test_flags_keep_the_browser_quiet():
    args = chromium_args()
    for flag in (
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-quic",
        "--no-first-run",
        "--webrtc-ip-handling-policy=disable_non_proxied_udp",  # both browsers' pages: no WebRTC UDP
    ):
        assert flag in args
    assert ("--no-sandbox" in args) == (os.geteuid() == 0)


@pytest.mark.parametrize(
    ("value", "expected"), [(None, True), ("true", True), ("false", False), ("0", False)]
)
def test_headless_unless_vnc_says_otherwise(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("GAIA_BROWSER_HEADLESS", raising=False)
    else:
        monkeypatch.setenv("GAIA_BROWSER_HEADLESS", value)
    assert headless() is expected
