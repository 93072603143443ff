"""`gaia-env serve --vnc`: the view comes up with the gateway and goes away with it."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import psutil
import pytest
from gaia_kit_testing.gateway import launch
from gaia_kit_testing.loopback import LoopbackServer, free_port
from gaia_kit_testing.probe import PROBE_REGISTRY, write_registry
from gaia_kit_testing.vnc_viewer import MAGENTA, magenta_page, vnc_colour_fraction
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

pytestmark = pytest.mark.slow

VIEW_PROGRAMS = ("Xvfb", "x11vnc", "websockify")


def view_processes(gateway_pid: int) -> dict[str, int]:
    found = {}
    for child in psutil.Process(gateway_pid).children(recursive=True):
        try:
            line = " ".join(child.cmdline())
        except psutil.Error:  # websockify's finished per-connection children linger as zombies
            continue
        for name in VIEW_PROGRAMS:
            if name in line.split(" ")[0] or f"/usr/bin/{name}" in line:
                found[name] = child.pid
    return found


def test_serve_vnc_runs_the_view_gives_servers_the_display_and_stops_it_all(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "probe.toml", PROBE_REGISTRY)
    port = free_port()
    gateway = launch(
        tmp_path, "--config", str(registry), "--servers", "probe-a", "--vnc", "--vnc-port", str(port)
    )
    try:
        assert f"VNC view at http://127.0.0.1:{port}/vnc.html?autoconnect=true" in gateway.log()
        page = httpx.get(f"http://127.0.0.1:{port}/vnc.html", timeout=10)
        assert page.status_code == 200 and "noVNC" in page.text
        processes = view_processes(gateway.proc.pid)
        assert set(processes) == set(VIEW_PROGRAMS), processes
        # The servers the gateway starts are told where the display is and to run headful.
        server = next(
            p for p in psutil.Process(gateway.proc.pid).children() if "probe_server" in " ".join(p.cmdline())
        )
        env = server.environ()
        assert env["DISPLAY"].startswith(":") and env["GAIA_BROWSER_HEADLESS"] == "false"
    finally:
        assert gateway.stop() in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it handled
    alive = [
        pid
        for pid in processes.values()
        if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"
    ]
    assert not alive, f"left running after shutdown: {alive}"
    # Nor anything they forked: no process anywhere still serves this view's port.
    serving = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if f"127.0.0.1:{port}" in " ".join(p.info["cmdline"] or [])
    ]
    assert not serving, f"still serving the view after shutdown: {serving}"


def test_a_view_that_cannot_start_stops_serve_with_a_clear_message(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "probe.toml", PROBE_REGISTRY)
    gateway = launch(
        tmp_path,
        "--config",
        str(registry),
        "--vnc",
        env={"GAIA_NOVNC_DIR": str(tmp_path)},
        wait_ready=False,
    )
    assert gateway.proc.wait(30) == 2
    assert "the VNC view did not start" in gateway.log() and "GAIA_NOVNC_DIR" in gateway.log()


def test_the_view_shows_the_page_ms_playwright_opened(tmp_path: Path) -> None:
    """The chain: an agent navigates with ms-playwright; a person opens noVNC and sees that page."""
    app = Starlette(routes=[Route("/", lambda _: HTMLResponse(magenta_page("Watched live.")))])
    port = free_port()
    with LoopbackServer(app) as site:
        gateway = launch(
            tmp_path,
            *("--servers", "ms-playwright", "--vnc", "--vnc-port", str(port)),
            env={"PLAYWRIGHT_ALLOW": "127.0.0.1"},  # the test page is on loopback, which SSRF rules refuse
        )
        try:
            result = gateway.call(
                "browser_navigate", {"url": site.url("/")}, headers={"X-Session-Id": "agent"}
            )
            assert not result.get("isError"), result
            fraction = vnc_colour_fraction(f"http://127.0.0.1:{port}/vnc.html?autoconnect=true", MAGENTA)
            assert fraction >= 0.3, f"only {fraction:.0%} of the VNC screen shows the agent's page"
        finally:
            gateway.stop()
