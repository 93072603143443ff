"""ms-playwright's settings (PLAYWRIGHT_* variables), read through gaia_kit.core.settings; the browser binary and
headless mode come from gaia_kit.web.chromium."""

from __future__ import annotations

from pydantic_settings import BaseSettings, SettingsConfigDict


class PlaywrightSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="PLAYWRIGHT_", extra="ignore")

    allow: str = ""
    """Hosts, addresses and CIDRs the browser may reach although the SSRF rules refuse them (added to GAIA_HTTP_ALLOW)."""
    block: str = ""
    """Hosts the browser never loads (`*.` for subdomains), comma-separated, on top of the SSRF rules."""
    max_contexts: int = 64
    """Open browser contexts (sessions) per replica; a new session past it closes the least recently used one."""
    idle_s: float = 1800
    """A session's browser context closes after this many seconds without a call (run standalone:
    behind the gateway, the gateway's session TTL decides and it says when a session ends)."""
    navigation_timeout_s: float = 30
    """How long browser_navigate and browser_navigate_back wait for the page's document."""
    max_navigations: int = 0
    """Documents loading at once in one replica's Chromium; 0 means one per core. More only slow every page."""
    navigation_queue_s: float = 10
    """How long a navigation may expect to wait for one of those before it is answered busy (retry after N s)."""
    action_timeout_s: float = 10
    """How long an action waits for its element to be visible, enabled and stable."""
    settle_s: float = 3
    """After an action, how long to wait for the page to load and its network to go quiet."""
    max_wait_s: float = 60
    """The longest browser_wait_for waits, whatever it is asked."""
    snapshot_chars: int = 20_000
    """Snapshot characters an action's answer shows; browser_snapshot pages through the rest."""
    max_download_bytes: int = 512 * 1024 * 1024
    """A larger download is deleted instead of saved in the workspace."""
    http_cache: bool = False
    """Send the browser's requests through the kit's record/replay HTTP cache (replay.py): recorded under
    GAIA_HTTP_CACHE_MODE=read-write. Under GAIA_HTTP_CACHE_MODE=replay they always are, so a replay
    run never reaches the web."""
    width: int = 1280
    height: int = 720
