"""browser_use end to end: the gateway starts browser-server from its own environment, the agent
drives the system Chromium to a page served on 127.0.0.1, and a loopback OpenAI fake plays the
model: it navigates, reads the value from the page state browser-use sends it, and finishes.
Chromium goes out only through the kit's guarding proxy: the tests allow their pages with
GAIA_HTTP_ALLOW=127.0.0.1 (clean_env)."""

from __future__ import annotations

import json
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from gaia_env.registry import load_registry
from gaia_kit_testing.fake_openai import LLM_SUFFIXES, FakeOpenAI
from gaia_kit_testing.gateway import RunningGateway, launch
from gaia_kit_testing.loopback import LoopbackServer, free_port
from gaia_kit_testing.vnc_viewer import MAGENTA, magenta_page, vnc_colour_fraction
from gaia_kit_testing.webrtc import WebRtcTargets
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

pytestmark = pytest.mark.slow

CODE = secrets.token_hex(4)


def page(_request: Any) -> HTMLResponse:
    return HTMLResponse(
        "<html><head><title>Vault</title></head><body><h1>Vault</h1>"
        f"<p>The access code is {CODE}.</p></body></html>"
    )


def colour_page(_request: Any) -> HTMLResponse:
    return HTMLResponse(magenta_page("The access code is magenta."))


def set_cookie(request: Any) -> HTMLResponse:
    response = HTMLResponse("<html><body><p>The access code is stored.</p></body></html>")
    response.set_cookie("code", request.query_params["code"], max_age=3600)  # a login, not a session cookie
    return response


def show_cookie(request: Any) -> HTMLResponse:
    return HTMLResponse(
        f"<html><body><p>The access code is {request.cookies.get('code', 'unset')}.</p></body></html>"
    )


PROBE = {"function": "async () => 'no probe set'"}


def webrtc_page(_request: Any) -> HTMLResponse:
    return HTMLResponse(
        f"<html><body><p>Calling out.</p><script>({PROBE['function']})()</script></body></html>"
    )


def attachment(_request: Any) -> Response:
    return Response(
        b"r" * 300_000,
        media_type="application/octet-stream",
        headers={"Content-Disposition": 'attachment; filename="report.bin"'},
    )


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackServer]:
    routes = [
        Route("/report.bin", attachment),
        Route("/vault", page),
        Route("/colour", colour_page),
        Route("/set", set_cookie),
        Route("/show", show_cookie),
        Route("/webrtc", webrtc_page),
    ]
    with LoopbackServer(Starlette(routes=routes)) as server:
        yield server


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No model settings from the machine leak into the gateway the test starts."""
    for name in (f"{p}_LLM_{s}" for p in ("MCP", "BROWSERUSE") for s in LLM_SUFFIXES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BROWSERUSE_USE_VISION", "false")  # text-only model; no screenshots to send
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")  # the test pages; 127.0.0.2 stays refused
    return monkeypatch


@pytest.fixture
def fake(clean_env: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI(model="fake-browser-model", api_key="sk-browser-secret") as server:
        for name, value in server.env("BROWSERUSE").items():
            clean_env.setenv(name, value)
        yield server


def start_gateway(tmp_path: Path) -> RunningGateway:
    return launch(tmp_path, "--servers", "browser-server")


def texts(result: dict) -> str:
    return "\n".join(block["text"] for block in result["content"] if block["type"] == "text")


def conversation_text(body: dict) -> str:
    """Everything the agent told the model, flattened (content may be a list of parts)."""
    parts = []
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(part.get("text", "") for part in content if isinstance(part, dict))
    return "\n".join(parts)


def step(action: dict, goal: str) -> str:
    return json.dumps({"evaluation_previous_goal": "", "memory": "", "next_goal": goal, "action": [action]})


def navigate_to_task_url(body: dict) -> str:
    url = re.search(r"http://127\.0\.0\.1:\d+/[\w?=]+", conversation_text(body)).group(0)
    return step({"navigate": {"url": url, "new_tab": False}}, "open the vault page")


def report_code(body: dict) -> str:
    # The latest user message carries the browser state: the page as the agent sees it now.
    latest = conversation_text({"messages": [body["messages"][-1]]})
    found = re.search(r"access code is (\w+)", latest)
    text = found.group(1) if found else "the page did not show a code"
    return step({"done": {"text": text, "success": bool(found)}}, "report the code")


def test_registered_as_stateful_with_its_own_environment() -> None:
    spec = load_registry()["browser-server"]
    assert spec.stateful
    assert spec.argv()[0].endswith("servers/browser-server/.venv/bin/python")
    assert spec.missing_program() is None, spec.missing_program()


def test_browser_use_reads_a_value_from_a_local_page(
    tmp_path: Path, fake: FakeOpenAI, site: LoopbackServer
) -> None:
    fake.reply_with(navigate_to_task_url)
    fake.reply_with(report_code)
    gateway = start_gateway(tmp_path)
    try:
        task = f"Open {site.url('/vault')} and tell me the access code shown there."
        result = gateway.call("browser_use", {"task": task, "max_steps": 5}, timeout=300)
        body = texts(result)
        assert not result.get("isError"), body
        assert CODE in body.split("## Steps")[0], body
        assert site.url("/vault") in body.split("## URLs visited")[1], body

        assert "Model: fake-browser-model." in texts(gateway.call("get_browser_capabilities"))
    finally:
        gateway.stop()
    # The model saw the right model name and key, and got the page's text from the agent.
    assert [r["model"] for r in fake.requests] == ["fake-browser-model"] * 2
    assert fake.headers[0]["authorization"] == "Bearer sk-browser-secret"
    assert fake.pending == 0


def test_each_session_keeps_its_own_browser_profile_until_it_ends(
    tmp_path: Path, fake: FakeOpenAI, site: LoopbackServer
) -> None:
    # The server's TMPDIR, to watch its profiles go; short, as Chromium puts a unix socket under it.
    server_tmp = Path(tempfile.mkdtemp(prefix="bs-"))
    gateway = launch(tmp_path, "--servers", "browser-server", env={"TMPDIR": str(server_tmp)})

    def browse(session: str, path: str) -> str:
        fake.reply_with(navigate_to_task_url)
        fake.reply_with(report_code)
        task = f"Open {site.url(path)} and tell me the access code."
        result = gateway.call(
            "browser_use", {"task": task, "max_steps": 4}, headers={"X-Session-Id": session}, timeout=300
        )
        return texts(result).split("## Steps")[0]

    try:
        assert "stored" in browse("alice", "/set?code=alpha")
        assert "alpha" in browse("alice", "/show")  # the cookie outlives the call, within the session
        assert "unset" in browse("bob", "/show")  # and never reaches another session

        # a confined server's /tmp is its private folder under the gateway's TMPDIR (gaia_env.confine)
        def profiles() -> list[Path]:
            try:
                return list(server_tmp.glob("**/browser-server-*/profiles/alice-*"))
            except FileNotFoundError:  # a folder went while the walk read it: the removal is under way
                return [server_tmp / "being removed"]

        assert profiles()
        ended = httpx.delete(gateway.url, headers=gateway.headers(**{"X-Session-Id": "alice"}))
        assert ended.json() == {"ended": True}
        deadline = time.monotonic() + 30
        while profiles() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not profiles(), "the profile outlived its session"
        assert "unset" in browse("alice", "/show")  # a new session of the same name starts clean
    finally:
        gateway.stop()
        shutil.rmtree(server_tmp, ignore_errors=True)


def test_webrtc_from_an_allowed_page_or_a_data_page_sends_nothing(
    tmp_path: Path, fake: FakeOpenAI, site: LoopbackServer
) -> None:
    # TCP on 127.0.0.2: GAIA_HTTP_ALLOW lets the pages on 127.0.0.1 through, not this listener.
    with WebRtcTargets(tcp_host="127.0.0.2") as targets:
        PROBE["function"] = targets.function(wait_ms=2000)
        data_page = "data:text/html," + quote(f"<p>Made here.</p><script>({PROBE['function']})()</script>")
        for url in (site.url("/webrtc"), data_page):
            fake.reply_with(
                lambda _body, url=url: step({"navigate": {"url": url, "new_tab": False}}, "call out")
            )
        fake.reply_with(lambda _body: step({"wait": {"seconds": 3}}, "let the page's scripts run"))
        fake.reply_with(lambda _body: step({"done": {"text": "visited", "success": True}}, "finish"))
        gateway = start_gateway(tmp_path)
        try:
            result = gateway.call("browser_use", {"task": "Visit the pages.", "max_steps": 5}, timeout=300)
            assert not result.get("isError"), texts(result)
        finally:
            gateway.stop()
        visited = texts(result).split("## URLs visited")[1]
        assert site.url("/webrtc") in visited and "data:text/html" in visited, texts(result)
        # No UDP at all, and TURN over TCP goes through the guarding proxy, which refuses 127.0.0.2.
        assert targets.arrived() == {"udp": 0, "tcp": 0}


def report_page(body: dict) -> str:
    latest = conversation_text({"messages": [body["messages"][-1]]})
    found = re.search(r"Refused to fetch from [^\n]*GAIA_HTTP_ALLOW|access code is \w+", latest)
    text = found.group(0) if found else "the page showed neither a refusal nor a code"
    return step({"done": {"text": text, "success": bool(found)}}, "report what the page shows")


def test_loopback_is_refused_by_the_proxy_unless_gaia_http_allow_lists_it(
    tmp_path: Path, fake: FakeOpenAI, clean_env: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []

    def vault(request: Any) -> HTMLResponse:
        seen.append(request.url.path)
        return page(request)

    with LoopbackServer(Starlette(routes=[Route("/vault", vault)])) as local:
        task = f"Open {local.url('/vault')} and tell me the access code shown there."
        answers = {}
        for allow in ("", "127.0.0.1"):
            clean_env.setenv("GAIA_HTTP_ALLOW", allow)
            fake.reply_with(navigate_to_task_url)
            fake.reply_with(report_page)
            gateway = start_gateway(tmp_path)
            try:
                result = gateway.call("browser_use", {"task": task, "max_steps": 4}, timeout=300)
            finally:
                gateway.stop()
            answers[allow] = texts(result).split("## Steps")[0]
            if not allow:
                # The proxy's refusal is the page, and the loopback server never saw a request.
                assert "Refused to fetch from 127.0.0.1" in answers[allow], texts(result)
                assert seen == []
    assert f"access code is {CODE}" in answers["127.0.0.1"], answers
    assert "/vault" in seen


def test_with_vnc_the_browser_runs_headful_on_the_display_people_watch(
    tmp_path: Path, fake: FakeOpenAI, site: LoopbackServer
) -> None:
    showing, seen = threading.Event(), threading.Event()

    def look_then_finish(body: dict) -> str:
        # The agent waits for this answer with the page open: the viewer looks now.
        showing.set()
        seen.wait(120)
        return report_code(body)

    fake.reply_with(navigate_to_task_url)
    fake.reply_with(look_then_finish)
    port = free_port()
    gateway = launch(tmp_path, "--servers", "browser-server", "--vnc", "--vnc-port", str(port))
    try:
        with ThreadPoolExecutor(1) as pool:
            task = f"Open {site.url('/colour')} and tell me the access code."
            call = pool.submit(gateway.call, "browser_use", {"task": task, "max_steps": 5}, timeout=300)
            assert showing.wait(120), gateway.log()[-3000:]
            try:
                fraction = vnc_colour_fraction(f"http://127.0.0.1:{port}/vnc.html?autoconnect=true", MAGENTA)
            finally:
                seen.set()
            body = texts(call.result())
        assert fraction >= 0.3, f"only {fraction:.0%} of the VNC screen shows the agent's page"
        assert "magenta" in body.split("## Steps")[0], body
    finally:
        gateway.stop()


def test_json_format_and_the_deadline(
    tmp_path: Path, fake: FakeOpenAI, site: LoopbackServer, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("BROWSERUSE_TASK_TIMEOUT", "8")
    for _ in range(40):  # a model that keeps waiting, never finishing
        fake.reply_with(lambda body: step({"wait": {"seconds": 3}}, "wait for the page"))
    gateway = start_gateway(tmp_path)
    try:
        task = f"Open {site.url('/vault')} and wait."
        result = gateway.call("browser_use", {"task": task, "extract_format": "json"}, timeout=300)
        report = json.loads(texts(result))
        assert report["done"] is False and report["result"] is None
        assert "deadline" in report["note"] and "BROWSERUSE_TASK_TIMEOUT" in report["note"]
        assert report["steps"], report
        # The server is still serving, and the browser is gone (no Chromium left under the gateway).
        assert "browser_use" in texts(gateway.call("get_browser_capabilities"))
        assert not [pid for pid in gateway.server_pids() if "chrom" in _name(pid)]
    finally:
        gateway.stop()


def test_downloads_enter_the_workspace_within_its_quota(
    tmp_path: Path, fake: FakeOpenAI, site: LoopbackServer, clean_env: pytest.MonkeyPatch
) -> None:
    """Chromium saves a download outside the workspace; it enters downloads/ only if it fits."""
    finish = lambda body: step({"done": {"text": "downloaded", "success": True}}, "finish")  # noqa: E731
    for _ in range(2):
        fake.reply_with(navigate_to_task_url)
        fake.reply_with(finish)
    gateway = launch(tmp_path, "--servers", "browser-server", env={"GAIA_WORKSPACE_MAX_MB": "1"})
    try:
        task = f"Download {site.url('/report.bin')}."
        first = texts(gateway.call("browser_use", {"task": task, "max_steps": 3}, timeout=300, headers=ALICE))
        assert "## Downloads" in first and "report.bin (300,000 bytes)" in first, first
        workspace = next(p for p in gateway.workspace_root.iterdir() if p.name.startswith("s-"))
        (workspace / "filler.bin").write_bytes(b"f" * 800_000)
        second = texts(
            gateway.call("browser_use", {"task": task, "max_steps": 3}, timeout=300, headers=ALICE)
        )
        assert "report.bin was discarded" in second and "GAIA_WORKSPACE_MAX_MB" in second, second
        assert [p.name for p in (workspace / "downloads").iterdir()] == ["report.bin"]
    finally:
        gateway.stop()


ALICE = {"X-Session-Id": "alice"}


def test_without_a_model_the_error_names_the_variables(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    gateway = start_gateway(tmp_path)
    try:
        result = gateway.call("browser_use", {"task": "Open example.org"})
        assert result["isError"]
        message = texts(result)
        assert "BROWSERUSE_LLM_BASE_URL (or MCP_LLM_BASE_URL)" in message
        assert "BROWSERUSE_LLM_MODEL_NAME (or MCP_LLM_MODEL_NAME)" in message
        capabilities = texts(gateway.call("get_browser_capabilities"))
        assert "No model configured" in capabilities and "chromium" in capabilities.lower()
    finally:
        gateway.stop()


def _name(pid: int) -> str:
    import psutil

    try:
        return psutil.Process(pid).name().lower()
    except psutil.Error:
        return ""


def test_a_bad_setting_is_named(tmp_path: Path, fake: FakeOpenAI, clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("BROWSERUSE_TASK_TIMEOUT", "soon")
    gateway = start_gateway(tmp_path)
    try:
        result = gateway.call("browser_use", {"task": "Open example.org"})
        assert result["isError"] and "BROWSERUSE_TASK_TIMEOUT is set to 'soon'" in texts(result)
        assert fake.requests == []
    finally:
        gateway.stop()


def test_a_model_that_always_fails_is_one_clear_error(
    tmp_path: Path, fake: FakeOpenAI, site: LoopbackServer
) -> None:
    for _ in range(40):
        fake.fail(400, "This model does not support response_format json_schema.")
    gateway = start_gateway(tmp_path)
    try:
        task = f"Open {site.url('/vault')} and tell me the access code."
        result = gateway.call(
            "browser_use", {"task": task, "max_steps": 3, "extract_format": "json"}, timeout=300
        )
        message = texts(result)
        assert result["isError"], message
        assert "failed at every step" in message and "json_schema" in message
        # The server is still serving.
        assert "browser_use" in texts(gateway.call("get_browser_capabilities"))
    finally:
        gateway.stop()


def test_steps_are_progress_and_a_cancelled_run_closes_its_browser(
    tmp_path: Path, fake: FakeOpenAI, site: LoopbackServer
) -> None:
    import anyio
    from mcp import Client

    for _ in range(40):  # a model that keeps the agent waiting, step after step
        fake.reply_with(lambda body: step({"wait": {"seconds": 1}}, "wait for the page"))
    gateway = start_gateway(tmp_path)
    steps: list[float] = []

    async def run_then_cancel() -> None:
        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            steps.append(done)

        task = f"Open {site.url('/vault')} and wait."
        async with Client(gateway.url, mode="legacy") as client, anyio.create_task_group() as group:
            group.start_soon(
                lambda: client.call_tool(
                    "browser_use", {"task": task, "max_steps": 30}, progress_callback=on_progress
                )
            )
            with anyio.fail_after(240):
                while len(steps) < 2:
                    await anyio.sleep(0.1)
            group.cancel_scope.cancel()

    try:
        anyio.run(run_then_cancel)
        assert len(steps) >= 2 and steps == sorted(set(steps))  # one notification a step
        deadline = time.monotonic() + 60
        while [pid for pid in gateway.server_pids() if "chrom" in _name(pid)] and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in gateway.server_pids() if "chrom" in _name(pid)], (
            "Chromium outlived the call"
        )
        assert "browser_use" in texts(gateway.call("get_browser_capabilities"))
    finally:
        gateway.stop()
