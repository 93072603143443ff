"""Start a real `gaia-env serve`, wait for /ready, talk to it, stop it: the one launcher that the
end-to-end tests and the benchmarks share."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

from .loopback import free_port

READY_TIMEOUT_S = 90.0


@dataclass
class RunningGateway:
    url: str
    base: str
    proc: subprocess.Popen[bytes]
    workspace_root: Path
    dataset_dir: Path
    log_path: Path
    token: str | None = None

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

    def status(self, timeout: float = 30) -> dict:
        return httpx.get(self.base + "/ready", headers=self.headers(), timeout=timeout).json()

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

    def stop(self, grace_s: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def readable_by_servers(dataset: Path) -> None:
    """o+rX on the dataset: confined servers run as another uid (gaia_env.confine), and pytest and
    mkdtemp make their temporary folders 0700, as a user's own dataset folder seldom is."""
    for folder, _, files in os.walk(dataset):
        os.chmod(folder, os.stat(folder).st_mode | 0o005)
        for name in files:
            path = os.path.join(folder, name)
            os.chmod(path, os.stat(path).st_mode | 0o004)


def launch(
    folder: Path,
    *args: str,
    env: Mapping[str, str | None] | None = None,
    token: str | None = None,
    wait_ready: bool = True,
    dataset_dir: Path | None = None,
    ready_timeout: float = READY_TIMEOUT_S,
) -> RunningGateway:
    """`gaia-env serve` on a free loopback port, its workspaces, log and (unless given) dataset in
    `folder`; `args` go to `serve` as they are (`--config`, `--servers`, `--log-level`, ...). `env` is
    added to this process's environment; a variable set to None there is left out."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    # A serving gateway holds its workspace root alone: a second one in the same folder gets its own.
    workspace_root = folder / "workspaces"
    if workspace_root.exists():
        workspace_root = folder / f"workspaces-{port}"
    if dataset_dir is None:
        dataset_dir = folder / "dataset"
    dataset_dir.mkdir(parents=True, exist_ok=True)
    readable_by_servers(dataset_dir)
    log_path = folder / f"gateway-{port}.log"
    full_env = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    if token:
        full_env["MCP_AUTH_TOKEN"] = token
    cmd = [sys.executable, "-m", "gaia_env", "serve", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--workspace-root", str(workspace_root), "--dataset-dir", str(dataset_dir), *args]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=full_env)
    base = f"http://127.0.0.1:{port}"
    gateway = RunningGateway(base + "/mcp", base, proc, workspace_root, dataset_dir, log_path, token)
    if wait_ready:
        try:
            wait_until_ready(gateway, ready_timeout)
        except RuntimeError:
            gateway.stop()  # a gateway that never got ready must not outlive its caller with its servers
            raise
    return gateway


def wait_until_ready(gateway: RunningGateway, timeout: float = READY_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if gateway.proc.poll() is not None:
            raise RuntimeError(f"gateway exited with {gateway.proc.returncode}:\n{gateway.log()[-3000:]}")
        try:
            if httpx.get(gateway.base + "/ready", headers=gateway.headers(), timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        # Short: benchmarks time a cold start to /ready with this loop.
        time.sleep(0.05)
    raise RuntimeError(f"gateway not ready after {timeout} s:\n{gateway.log()[-3000:]}")
