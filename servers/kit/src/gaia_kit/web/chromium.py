"""The system Chromium the browser servers drive: where it is, how to launch it, headless or not.

Playwright's own browser download is not used: images and CI machines install Debian's
`chromium` package, and servers pass its path as `executable_path`.

    from gaia_kit.web.chromium import launch_options
    browser = await playwright.chromium.launch(**launch_options())
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from pydantic_settings import BaseSettings, SettingsConfigDict

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import settings


class ChromiumSettings(BaseSettings):
    """GAIA_CHROMIUM_PATH and GAIA_BROWSER_HEADLESS."""

    model_config = SettingsConfigDict(env_prefix="GAIA_", extra="ignore")

    chromium_path: str = ""
    """The browser binary, a path or a name on PATH; empty searches PATH for CANDIDATES."""
    browser_headless: str = "true"
    """Anything but 0, false, no or off is headless (the gateway's --vnc mode sets false, with DISPLAY)."""


CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# Without these Chromium phones home (updates, sync, field trials, QUIC probes) and floods a
# closed network with retries; the GPU process only costs memory on a headless server.
QUIET_FLAGS = (
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
)
# WebRTC sends UDP (STUN, TURN, peer traffic) from the browser process itself, around the HTTP proxy
# that guards page loads: a page could reach any UDP service, loopback included. With this policy
# WebRTC uses UDP only through a proxy (an HTTP proxy carries none), and its TCP (TURN) goes the way
# page loads go: through the guarding proxy (gaia_kit.web.proxy) both browser servers launch with.
CHANNEL_FLAGS = (
    "--force-webrtc-ip-handling-policy",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
)


def chromium_path() -> str:
    """The browser binary: GAIA_CHROMIUM_PATH, else the first Chromium or Chrome on PATH."""
    configured = settings(ChromiumSettings).chromium_path.strip()
    if configured:
        if os.path.isfile(configured) and os.access(configured, os.X_OK):
            return configured
        found = shutil.which(configured)
        if found:
            return found
        raise ToolFailure(
            f"GAIA_CHROMIUM_PATH is {configured}, which is not an executable file; "
            "point it at the Chromium binary or unset it to search PATH."
        )
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    raise ToolFailure(
        "No Chromium browser found; install the Debian package `chromium` "
        "(apt-get install -y chromium) or set GAIA_CHROMIUM_PATH to a Chromium binary."
    )


def chromium_args() -> list[str]:
    """Command-line flags for every launch; root needs --no-sandbox (Chromium refuses otherwise)."""
    args = [*QUIET_FLAGS, *CHANNEL_FLAGS]
    if os.geteuid() == 0:
        args.append("--no-sandbox")
    return args


def headless() -> bool:
    """Headless unless GAIA_BROWSER_HEADLESS=false (the gateway's --vnc mode sets it, with DISPLAY)."""
    return settings(ChromiumSettings).browser_headless.strip().lower() not in {"0", "false", "no", "off"}


def launch_options() -> dict[str, Any]:
    """Keyword arguments for Playwright's `chromium.launch(...)`."""
    return {"executable_path": chromium_path(), "args": chromium_args(), "headless": headless()}
