"""ms-playwright in the record/replay HTTP cache, behind the real gateway: a multi-page browsing task is
recorded against a loopback site (a page, its stylesheet and script, a link followed to a second page),
the site is stopped, and a gateway in replay mode plays the same task with the same snapshots; a page
never recorded is refused in one sentence."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gaia_kit_testing.gateway import RunningGateway, launch
from gaia_kit_testing.keepers_site import KEPT, SCRIPTED, keepers_site
from gaia_kit_testing.loopback import LoopbackServer

pytestmark = pytest.mark.slow


def browse(gateway: RunningGateway, first_url: str) -> list[str]:
    """The task: open the first page, follow its link, read the second page."""

    def call(tool: str, arguments: dict) -> str:
        result = gateway.call(tool, arguments, headers={"X-Session-Id": "replayed"}, timeout=120)
        assert not result["isError"], result
        return result["content"][0]["text"]

    opened = call("browser_navigate", {"url": first_url})
    assert SCRIPTED in opened  # the script ran, so it was served too
    ref = re.search(r'link "Next page" \[ref=(\w+)\]', opened).group(1)
    followed = call("browser_click", {"element": "Next page link", "ref": ref})
    assert KEPT in followed
    return [opened, followed, call("browser_snapshot", {})]


def test_a_recorded_browsing_task_replays_with_the_site_stopped(tmp_path: Path) -> None:
    cache = tmp_path / "http-cache.sqlite"
    env = {
        "GAIA_HTTP_ALLOW": "127.0.0.1",
        "GAIA_HTTP_CACHE_PATH": str(cache),
        "PLAYWRIGHT_HTTP_CACHE": "true",
    }
    site = LoopbackServer(keepers_site())
    site.start()
    first_url = site.url("/first.html")
    (tmp_path / "record").mkdir()
    (tmp_path / "replay").mkdir()
    recording = launch(
        tmp_path / "record", "--servers", "ms-playwright", env={**env, "GAIA_HTTP_CACHE_MODE": "read-write"}
    )
    try:
        recorded = browse(recording, first_url)
    finally:
        recording.stop()
        site.stop()

    replaying = launch(
        tmp_path / "replay", "--servers", "ms-playwright", env={**env, "GAIA_HTTP_CACHE_MODE": "replay"}
    )
    try:
        assert browse(replaying, first_url) == recorded
        missing = replaying.call(
            "browser_navigate",
            {"url": first_url.replace("first", "never")},
            headers={"X-Session-Id": "replayed"},
        )
        assert missing["isError"] and "No recorded answer for GET" in missing["content"][0]["text"], missing
        assert "GAIA_HTTP_CACHE_MODE=replay answers only from the cache" in missing["content"][0]["text"]
    finally:
        replaying.stop()
