"""The VNC view (`gaia-env serve --vnc`): watch the agents' browsers live in a web page.

    Xvfb (a virtual X display)  <-  the browser servers, headful (DISPLAY, GAIA_BROWSER_HEADLESS=false)
      x11vnc (VNC on loopback)  ->  websockify + noVNC's files on HOST:5901
                                    http://HOST:5901/vnc.html?autoconnect=true

Debian's xvfb, x11vnc, novnc and websockify packages provide the programs and the noVNC page. The
web port listens on loopback unless GAIA_VNC_HOST names another address AND GAIA_VNC_PASSWORD is
set; x11vnc itself only ever listens on loopback. Every process runs in its own process group, is
told to die with the gateway (PR_SET_PDEATHSIG), and is stopped, group and all, on shutdown.
"""

from __future__ import annotations

import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

logger = logging.getLogger("gaia_env.vnc")

PROGRAMS = ("Xvfb", "x11vnc", "websockify")
PACKAGES = "xvfb x11vnc novnc websockify"
DEFAULT_WEB_DIR = Path("/usr/share/novnc")
STARTUP_TIMEOUT_S = 20.0
PR_SET_PDEATHSIG = 1


class VncError(RuntimeError):
    """The view cannot start; the message says what to install or set."""


@dataclass(frozen=True)
class VncConfig:
    host: str = "127.0.0.1"
    port: int = 5901
    password: str | None = field(default=None, repr=False)
    geometry: str = "1280x800x24"
    web_dir: Path = DEFAULT_WEB_DIR

    @classmethod
    def from_env(cls, host: str | None = None, port: int | None = None) -> VncConfig:
        """GAIA_VNC_HOST, GAIA_VNC_PORT, GAIA_VNC_PASSWORD, GAIA_VNC_GEOMETRY, GAIA_NOVNC_DIR;
        `host` and `port` (the command line) win over the variables."""
        env = os.environ
        return cls(
            host=host or env.get("GAIA_VNC_HOST", "").strip() or "127.0.0.1",
            port=port or int(env.get("GAIA_VNC_PORT", "").strip() or 5901),
            password=env.get("GAIA_VNC_PASSWORD") or None,
            geometry=env.get("GAIA_VNC_GEOMETRY", "").strip() or "1280x800x24",
            web_dir=Path(env.get("GAIA_NOVNC_DIR", "").strip() or DEFAULT_WEB_DIR),
        )

    @property
    def bind_host(self) -> str:
        """Where the web page listens: the configured host only when a password protects it."""
        return self.host if self.password or _is_loopback(self.host) else "127.0.0.1"


class VncView:
    def __init__(self, config: VncConfig):
        self.config = config
        self.display: str | None = None
        self.processes: list[subprocess.Popen[bytes]] = []
        self._dir: Path | None = None

    @property
    def url(self) -> str:
        host = self.config.bind_host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.config.port}/vnc.html?autoconnect=true"

    def env(self) -> dict[str, str]:
        """What the browser servers need to run headful on this display."""
        assert self.display, "start() first"
        return {"DISPLAY": self.display, "GAIA_BROWSER_HEADLESS": "false"}

    def start(self) -> dict[str, str]:
        """Start Xvfb, x11vnc and websockify; return env(). On any failure nothing is left running."""
        self._preflight()
        self._dir = Path(tempfile.mkdtemp(prefix="gaia-vnc-"))
        try:
            self.display = self._start_xvfb()
            rfb_port = _free_port()
            self._spawn("x11vnc", self._x11vnc_argv(rfb_port))
            _wait_for_port("127.0.0.1", rfb_port, self.processes[-1], self._log("x11vnc"))
            self._spawn(
                "websockify",
                [
                    "websockify",
                    "--web",
                    str(self.config.web_dir),
                    f"{self.config.bind_host}:{self.config.port}",
                    f"127.0.0.1:{rfb_port}",
                ],
            )
            _wait_for_port(
                _connect_host(self.config.bind_host),
                self.config.port,
                self.processes[-1],
                self._log("websockify"),
            )
        except BaseException:
            self.stop()
            raise
        if self.config.bind_host != self.config.host:
            logger.warning(
                "VNC view on %s only: set GAIA_VNC_PASSWORD to serve it on %s",
                self.config.bind_host,
                self.config.host,
            )
        logger.info("VNC view of display %s at %s", self.display, self.url)
        return self.env()

    def stop(self) -> None:
        """Stop every process (and whatever it forked), newest first; remove the temp files."""
        for process in reversed(self.processes):
            _stop_group(process)
        self.processes.clear()
        if self._dir:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def _preflight(self) -> None:
        missing = [p for p in PROGRAMS if shutil.which(p) is None]
        if missing:
            raise VncError(
                f"--vnc needs {', '.join(missing)}: install the Debian packages {PACKAGES} "
                "(scripts/system-deps.sh does)."
            )
        if not (self.config.web_dir / "vnc.html").is_file():
            raise VncError(
                f"noVNC's page is not at {self.config.web_dir}/vnc.html: install the Debian package novnc "
                "or set GAIA_NOVNC_DIR to the folder holding vnc.html."
            )
        if self.config.password and len(self.config.password) > 8:
            logger.warning("VNC passwords are cut to 8 characters; GAIA_VNC_PASSWORD is longer")

    def _start_xvfb(self) -> str:
        # -displayfd: Xvfb picks a free display and writes its number once it accepts clients.
        read_fd, write_fd = os.pipe()
        try:
            self._spawn(
                "Xvfb",
                [
                    "Xvfb",
                    "-displayfd",
                    str(write_fd),
                    "-screen",
                    "0",
                    self.config.geometry,
                    "-nolisten",
                    "tcp",
                ],
                pass_fds=(write_fd,),
            )
        finally:
            os.close(write_fd)
        try:
            number = _read_line(read_fd, self.processes[-1], self._log("Xvfb"))
        finally:
            os.close(read_fd)
        return f":{number}"

    def _x11vnc_argv(self, rfb_port: int) -> list[str]:
        argv = ["x11vnc", "-display", self.display or "", "-rfbport", str(rfb_port), "-localhost"]
        argv += ["-forever", "-shared", "-quiet", "-noxdamage"]
        if self.config.password:
            assert self._dir is not None
            passwd = self._dir / "passwd"
            # -storepasswd writes the DES-obfuscated file VNC auth uses; the password never hits argv.
            subprocess.run(
                ["x11vnc", "-storepasswd", "-", str(passwd)],
                input=f"{self.config.password}\n".encode(),
                capture_output=True,
                check=True,
                timeout=10,
            )
            argv += ["-rfbauth", str(passwd)]
        else:
            argv += ["-nopw"]
        return argv

    def _spawn(self, name: str, argv: list[str], pass_fds: tuple[int, ...] = ()) -> None:
        assert self._dir is not None
        with open(self._log(name), "wb") as log:
            self.processes.append(
                subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    pass_fds=pass_fds,
                    preexec_fn=_own_group_dying_with_parent,
                )
            )

    def _log(self, name: str) -> Path:
        assert self._dir is not None
        return self._dir / f"{name}.log"


def _own_group_dying_with_parent() -> None:
    """In the child before exec: its own process group, and SIGTERM when the gateway dies."""
    os.setsid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _stop_group(process: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            pass
        try:
            process.wait(grace)
            # The leader is gone; forked helpers (websockify's per-connection children) may not be.
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue
        return


def _read_line(fd: int, process: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    data = b""
    os.set_blocking(fd, False)
    while not data.endswith(b"\n"):
        if process.poll() is not None or time.monotonic() > deadline:
            raise VncError(f"Xvfb did not start: {_tail(log)}")
        try:
            chunk = os.read(fd, 64)
        except BlockingIOError:
            time.sleep(0.05)
            continue
        if not chunk:
            time.sleep(0.05)
        data += chunk
    return data.decode().strip()


def _wait_for_port(host: str, port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    name = Path(str(process.args[0])).name  # type: ignore[index]
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise VncError(f"{name} exited at start: {_tail(log)}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise VncError(f"{name} did not listen on {host}:{port} within {STARTUP_TIMEOUT_S:.0f} s: {_tail(log)}")


def _tail(log: Path) -> str:
    try:
        text = log.read_text(errors="replace").strip()
    except OSError:
        return "no output"
    return text[-500:] or "no output"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _is_loopback(host: str) -> bool:
    return host in {"localhost", "127.0.0.1", "::1"} or host.startswith("127.")


def _connect_host(bind_host: str) -> str:
    """Where to knock to see that the page is up: a wildcard bind answers on loopback."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(bind_host, bind_host)
