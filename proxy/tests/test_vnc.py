"""The VNC view's processes: where they listen, what VNC auth they ask for, and that stop() leaves none."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from gaia_env.vnc import VncConfig, VncError, VncView
from gaia_kit_testing.loopback import free_port

pytestmark = pytest.mark.slow


@pytest.fixture
def views() -> Iterator[list[VncView]]:
    started: list[VncView] = []
    yield started
    for view in started:
        view.stop()


def start(views: list[VncView], **config: object) -> VncView:
    view = VncView(VncConfig(port=free_port(), **config))  # type: ignore[arg-type]
    views.append(view)
    view.start()
    return view


def listening(pid: int) -> set[str]:
    return {c.laddr.ip for c in psutil.Process(pid).net_connections("tcp") if c.status == psutil.CONN_LISTEN}


def security_types(port: int) -> list[int]:
    """The RFB 3.8 handshake up to the server's list of security types (1 = none, 2 = VNC password)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        assert sock.recv(12).startswith(b"RFB ")
        sock.sendall(b"RFB 003.008\n")
        count = sock.recv(1)[0]
        return list(sock.recv(count))


def rfb_port(view: VncView) -> int:
    argv = [str(a) for a in view.processes[1].args]  # type: ignore[union-attr]
    return int(argv[argv.index("-rfbport") + 1])


def test_without_a_password_everything_listens_on_loopback_only(views: list[VncView]) -> None:
    view = start(views, host="0.0.0.0")
    assert view.config.bind_host == "127.0.0.1" and "127.0.0.1" in view.url
    assert view.env() == {"DISPLAY": view.display, "GAIA_BROWSER_HEADLESS": "false"}
    xvfb, x11vnc, websockify = view.processes
    assert listening(websockify.pid) == {"127.0.0.1"}
    assert listening(x11vnc.pid) <= {"127.0.0.1", "::1"}
    assert security_types(rfb_port(view)) == [1]
    page = httpx.get(f"http://127.0.0.1:{view.config.port}/vnc.html", timeout=10)
    assert page.status_code == 200 and "noVNC" in page.text
    pids = [p.pid for p in view.processes]
    view.stop()
    assert not [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]


def test_a_password_opens_the_page_to_the_configured_host_and_guards_vnc(views: list[VncView]) -> None:
    view = start(views, host="0.0.0.0", password="s3cret")
    _, x11vnc, websockify = view.processes
    assert listening(websockify.pid) == {"0.0.0.0"}
    assert listening(x11vnc.pid) <= {"127.0.0.1", "::1"}  # only websockify is reachable from outside
    assert security_types(rfb_port(view)) == [2]
    assert "s3cret" not in " ".join(str(a) for p in view.processes for a in p.args)  # type: ignore[union-attr]


def test_missing_programs_and_pages_are_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(VncError, match="install the Debian packages xvfb x11vnc novnc websockify"):
        VncView(VncConfig()).start()
    monkeypatch.undo()
    with pytest.raises(VncError, match="GAIA_NOVNC_DIR"):
        VncView(VncConfig(web_dir=tmp_path)).start()


def test_settings_come_from_the_environment_and_the_command_line_wins(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GAIA_VNC_PASSWORD", raising=False)
    monkeypatch.delenv("GAIA_NOVNC_DIR", raising=False)
    monkeypatch.setenv("GAIA_VNC_HOST", "0.0.0.0")
    monkeypatch.setenv("GAIA_VNC_PORT", "6001")
    monkeypatch.setenv("GAIA_VNC_GEOMETRY", "800x600x24")
    assert VncConfig.from_env() == VncConfig(host="0.0.0.0", port=6001, geometry="800x600x24")
    assert VncConfig.from_env(host="127.0.0.2", port=7000).port == 7000
