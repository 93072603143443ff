"""browser_use in the record/replay HTTP cache, behind the real gateway: a multi-page task (a page with
its stylesheet and script, a link clicked to a second page) is recorded into the SQLite cache against
a loopback site, the site is stopped, and the same task replays with the same pages shown to the model
and the same answer: from that SQLite file, and from Redis after `gaia-env cache export` and `import`.
A page never recorded is refused in one sentence, on the page and in the tool's answer."""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from gaia_kit_testing.fake_openai import LLM_SUFFIXES, FakeOpenAI
from gaia_kit_testing.gateway import RunningGateway, launch
from gaia_kit_testing.keepers_site import KEPT, SCRIPTED, keepers_site
from gaia_kit_testing.loopback import LoopbackServer

pytestmark = pytest.mark.slow

NOT_RECORDED = "No recorded answer for GET"
SERVER = ("--servers", "browser-server")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    for name in (f"{p}_LLM_{s}" for p in ("MCP", "BROWSERUSE") for s in LLM_SUFFIXES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BROWSERUSE_USE_VISION", "false")  # text-only model; no screenshots to send
    with FakeOpenAI(model="fake-browser-model") as server:
        for name, value in server.env("BROWSERUSE").items():
            monkeypatch.setenv(name, value)
        yield server


def step(action: dict, goal: str) -> str:
    return json.dumps({"evaluation_previous_goal": "", "memory": "", "next_goal": goal, "action": [action]})


def page_state(body: dict) -> str:
    """The browser state in the latest message: the page as the agent sees it now."""
    content = body["messages"][-1]["content"]
    text = content if isinstance(content, str) else "\n".join(p.get("text", "") for p in content)
    found = re.search(r"<browser_state>.*?</browser_state>", text, re.S)
    # Tab ids are drawn afresh by each browser.
    return re.sub(r"\b(Tab|Current tab:) [0-9A-F]{4}\b", r"\1 ?", found.group(0) if found else text)


def comparable(text: str) -> str:
    """What the cache decides, without what Chromium's start-up does: the tab it opens first (its
    new-tab page or about:blank) and so the DOM node numbers browser-use shows as element indices."""
    text = re.sub(r"\bat (chrome://\S+|about:blank)", "at (the start page)", text)
    return re.sub(r"\[\d+\]|index=\d+", "[n]", text)


def script_the_task(fake: FakeOpenAI, url: str) -> None:
    """Open the first page, click its link, report what both pages said."""
    seen: list[str] = []

    def open_first(_body: dict) -> str:
        return step({"navigate": {"url": url, "new_tab": False}}, "open the list")

    def follow_link(body: dict) -> str:
        state = page_state(body)
        seen.append(SCRIPTED if SCRIPTED in state else "the script did not run")
        index = re.search(r"\[(\d+)\]<a[^\]]*?>\s*Next page", state).group(1)
        return step({"click": {"index": int(index)}}, "open the next page")

    def report(body: dict) -> str:
        seen.append(KEPT if KEPT in page_state(body) else "the second page was not shown")
        return step({"done": {"text": "; ".join(seen), "success": True}}, "report")

    for responder in (open_first, follow_link, report):
        fake.reply_with(responder)


def browse(gateway: RunningGateway, fake: FakeOpenAI, url: str) -> tuple[str, list[str]]:
    """The tool's answer (up to its steps) and the pages the model was shown."""
    asked = len(fake.requests)
    script_the_task(fake, url)
    result = gateway.call("browser_use", {"task": "List the keepers.", "max_steps": 5}, timeout=300)
    text = result["content"][0]["text"]
    assert not result.get("isError"), text
    assert f"{SCRIPTED}; {KEPT}" in text, text
    assert "Refused" not in text, text
    # The pages the site served; Chromium's own new-tab page shows its title when it is ready to.
    shown = [page_state(body) for body in fake.requests[asked:]]
    pages = [comparable(state) for state in shown if url.rsplit("/", 1)[0] in state]
    return comparable(text.split("## Errors")[0]), pages


def refuses_what_was_never_recorded(gateway: RunningGateway, fake: FakeOpenAI, never: str) -> None:
    """The page says so to the model, and the answer says so to the caller."""
    fake.reply_with(lambda _body: step({"navigate": {"url": never, "new_tab": False}}, "open it"))
    fake.reply_with(lambda _body: step({"done": {"text": "not there", "success": False}}, "report"))
    result = gateway.call("browser_use", {"task": "Open the page.", "max_steps": 3}, timeout=300)
    text = result["content"][0]["text"]
    refused = text.split("## Refused to the browser")[1]
    assert f"{NOT_RECORDED} 127.0.0.1" in refused and "GAIA_HTTP_CACHE_MODE=replay" in refused, text
    assert NOT_RECORDED in page_state(fake.requests[-1]), fake.requests[-1]


def cache_command(env: dict[str, str], *args: str) -> str:
    argv = [sys.executable, "-m", "gaia_env", "cache", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_recorded_browsing_task_replays_with_the_site_stopped(
    tmp_path: Path, fake: FakeOpenAI, redis_url: str
) -> None:
    sqlite = {"GAIA_HTTP_CACHE_PATH": str(tmp_path / "http-cache.sqlite")}
    env = {"GAIA_HTTP_ALLOW": "127.0.0.1", "BROWSERUSE_HTTP_CACHE": "true"}
    site = LoopbackServer(keepers_site())
    site.start()
    url = site.url("/first.html")
    (tmp_path / "record").mkdir()
    recording = launch(
        tmp_path / "record", *SERVER, env={**env, **sqlite, "GAIA_HTTP_CACHE_MODE": "read-write"}
    )
    try:
        recorded = browse(recording, fake, url)
    finally:
        recording.stop()
        site.stop()

    redis = {"GAIA_HTTP_CACHE_URL": redis_url}
    dump = tmp_path / "cache.jsonl"
    assert "exported" in cache_command(sqlite, "export", str(dump))
    assert "imported" in cache_command(redis, "import", str(dump))
    for name, store in (("sqlite", sqlite), ("redis", redis)):
        (tmp_path / name).mkdir()
        replaying = launch(tmp_path / name, *SERVER, env={**env, **store, "GAIA_HTTP_CACHE_MODE": "replay"})
        try:
            capabilities = replaying.call("get_browser_capabilities")["content"][0]["text"]
            assert "every request the browser makes is recorded and replayed" in capabilities
            answer, pages = browse(replaying, fake, url)
            assert answer == recorded[0], name
            assert len(pages) == len(recorded[1]) == 2, pages
            for shown, was in zip(pages, recorded[1], strict=True):
                assert shown == was, "\n".join(difflib.unified_diff(was.splitlines(), shown.splitlines()))
            refuses_what_was_never_recorded(replaying, fake, url.replace("first", "never"))
        finally:
            replaying.stop()
