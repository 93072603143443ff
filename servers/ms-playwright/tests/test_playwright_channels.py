"""The browser's other channels: a page's WebRTC reaches no UDP (or TCP) service, loopback included,
from an allowed page or a data: page. The HTTP proxy guard never sees WebRTC, so Chromium itself must
keep it from sending."""

from __future__ import annotations

import pytest
from gaia_kit_testing import ok
from gaia_kit_testing.webrtc import WebRtcTargets

pytestmark = pytest.mark.anyio


async def test_webrtc_sends_nothing_from_an_allowed_page_or_a_data_page(browse, site):
    # TCP on 127.0.0.2: the tests allow-list 127.0.0.1 for their pages, not this listener.
    with WebRtcTargets(tcp_host="127.0.0.2") as targets:
        for url in (site.url("/"), "data:text/html,<title>Local</title><p>made here</p>"):
            ok(await browse("browser_navigate", url=url))
            assert "webrtc tried" in ok(await browse("browser_evaluate", function=targets.function()))
        assert targets.arrived() == {"udp": 0, "tcp": 0}
