"""The loopback website (gaia_kit_testing.fake_site), and MCP sessions on the one real Chromium the
tests share."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit_testing import session_call
from gaia_kit_testing.fake_site import app
from gaia_kit_testing.loopback import LoopbackServer
from ms_playwright.browser import host
from ms_playwright.server import server


@pytest.fixture(scope="session")
def site() -> Iterator[LoopbackServer]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
        for name, value in {
            "NAVIGATION_TIMEOUT_S": "3",
            "ACTION_TIMEOUT_S": "3",
            "SETTLE_S": "2",
            "MAX_WAIT_S": "4",
        }.items():
            patch.setenv(f"PLAYWRIGHT_{name}", value)
        forget_settings()
        host._guard = None  # read GAIA_HTTP_ALLOW afresh
        with LoopbackServer(app()) as served:
            yield served
        host._guard = None
    forget_settings()


_ids = itertools.count()


@pytest.fixture
async def browse(site, kit_env):
    """invoke(tool, **arguments) in a fresh browser session; the session ends with the test."""
    session_id = f"test-{next(_ids)}"
    async with session_call(server, kit_env.workspace, session_id) as invoke:
        yield invoke
    await host.end_session(session_id)
