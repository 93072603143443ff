"""Start and talk to a real `gaia-env serve` process in tests."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil
from gaia_kit_testing.loopback import free_port

ROOT = Path(__file__).resolve().parents[1]
PROBE = ROOT / "tests" / "fixtures" / "probe_server.py"


@dataclass
class RunningGateway:
    url: str
    base: str
    proc: subprocess.Popen[bytes]
    workspace_root: Path
    dataset_dir: Path
    log_path: Path
    token: str | None = None
    children: list[int] = field(default_factory=list)

    def session_workspaces(self) -> list[Path]:
        """The sessions' workspace folders (not the gateway's own bookkeeping, such as .gaia-quota)."""
        return sorted(p for p in self.workspace_root.iterdir() if not p.name.startswith("."))

    def headers(self, **extra: str) -> dict[str, str]:
        headers = {"Content-Type": "application/json", **extra}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def rpc(
        self,
        method: str,
        params: dict | None = None,
        *,
        path: str = "/mcp",
        headers: dict | None = None,
        timeout: float = 60,
    ) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
        return httpx.post(
            self.base + path, json=body, headers=self.headers(**(headers or {})), timeout=timeout
        )

    def call(self, tool: str, arguments: dict | None = None, **kwargs) -> dict:
        reply = self.rpc("tools/call", {"name": tool, "arguments": arguments or {}}, **kwargs).json()
        assert "result" in reply, reply
        return reply["result"]

    def status(self) -> dict:
        return httpx.get(self.base + "/ready", headers=self.headers(), timeout=10).json()

    def server_pids(self) -> list[int]:
        return [p.pid for p in psutil.Process(self.proc.pid).children(recursive=True)]

    def server_process(self, server: str, replica: int = 0) -> psutil.Process:
        """A replica's server process as the host sees it: under the bubblewrap that confines it
        (the replica pid /ready reports), the Python running the server's program."""
        top = psutil.Process(self.status()["servers"][server]["replicas"][replica]["pid"])
        for proc in [top, *top.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                if Path(proc.cmdline()[0]).name.startswith("python"):
                    return proc
        raise AssertionError(f"no server process under {server} #{replica} ({top.cmdline()[:3]})")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def write_registry(path: Path, entries: str) -> Path:
    path.write_text(textwrap.dedent(entries).replace("{probe}", str(PROBE)))
    return path


def readable_by_servers(dataset: Path) -> None:
    """o+rX on the dataset: confined servers run as another uid (gaia_env.confine), and pytest makes
    its temporary folders 0700, as a user's own dataset folder seldom is."""
    for folder, _, files in os.walk(dataset):
        os.chmod(folder, os.stat(folder).st_mode | 0o005)
        for name in files:
            path = os.path.join(folder, name)
            os.chmod(path, os.stat(path).st_mode | 0o004)


def launch(
    tmp_path: Path,
    *args: str,
    env: dict[str, str] | None = None,
    token: str | None = None,
    wait_ready: bool = True,
    dataset_dir: Path | None = None,
) -> RunningGateway:
    port = free_port()
    # A serving gateway holds its workspace root alone: a second one in the same test gets its own.
    workspace_root = tmp_path / "workspaces"
    if workspace_root.exists():
        workspace_root = tmp_path / f"workspaces-{port}"
    if dataset_dir is None:
        dataset_dir = tmp_path / "dataset"
        dataset_dir.mkdir(exist_ok=True)
    readable_by_servers(dataset_dir)
    log_path = tmp_path / f"gateway-{port}.log"
    full_env = {**os.environ, **(env or {})}
    if token:
        full_env["MCP_AUTH_TOKEN"] = token
    cmd = [
        sys.executable,
        "-m",
        "gaia_env",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workspace-root",
        str(workspace_root),
        "--dataset-dir",
        str(dataset_dir),
        *args,
    ]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=full_env)
    gateway = RunningGateway(
        f"http://127.0.0.1:{port}/mcp",
        f"http://127.0.0.1:{port}",
        proc,
        workspace_root,
        dataset_dir,
        log_path,
        token,
    )
    if wait_ready:
        try:
            wait_until_ready(gateway)
        except RuntimeError:
            gateway.stop()  # a gateway that never got ready must not outlive the test with its servers
            raise
    return gateway


def wait_until_ready(gateway: RunningGateway, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gateway.proc.poll() is not None:
            raise RuntimeError(f"gateway exited with {gateway.proc.returncode}:\n{gateway.log()[-3000:]}")
        try:
            if httpx.get(gateway.base + "/ready", headers=gateway.headers(), timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"gateway not ready after {timeout} s:\n{gateway.log()[-3000:]}")


PROBE_REGISTRY = """
[servers.probe-a]
command = ["{python}", "{probe}"]
timeout = 4
hung_after_s = 3

[servers.probe-b]
command = ["{python}", "{probe}"]
replicas = 2
stateful = true
"""
