"""Several real `gaia-env serve` replicas behind Debian's nginx running the shipped
deploy/nginx/gaia-env.conf, sharing a real redis-server: what tests/test_multi_replica.py and
benchmarks/multi_replica_load.py start.

    with Cluster.start(tmp_path, NGINX_CONF, servers="terminal-controller", replicas=3) as cluster:
        cluster.lb          # http://127.0.0.1:<port>: nginx
        cluster.replicas[1].kill(); cluster.replicas[1].start()

The nginx file is rendered from the shipped one with only the listen address and the upstream
addresses replaced, so the test runs the rule users run.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from .gateway import readable_by_servers
from .loopback import free_port

UPSTREAM_SERVER = re.compile(r"^(\s*)server gateway-\d+:8080( [^;]*)?;\n", re.M)


def render_nginx_conf(shipped_conf: Path, listen: str, upstreams: list[str]) -> str:
    """The shipped file with `listen` and the upstream `server` lines (same parameters) replaced."""
    text = shipped_conf.read_text()
    shipped = list(UPSTREAM_SERVER.finditer(text))
    if not shipped or "listen 8080;" not in text:
        raise RuntimeError(f"{shipped_conf} no longer has 'listen 8080;' and 'server gateway-N:8080' lines")
    indent, params = shipped[0].group(1), shipped[0].group(2) or ""
    lines = "".join(f"{indent}server {address}{params};\n" for address in upstreams)
    text = text[: shipped[0].start()] + lines + text[shipped[-1].end() :]
    return text.replace("listen 8080;", f"listen {listen};")


def fail_timeout_s(shipped_conf: Path) -> float:
    """How long nginx skips a replica after a failed connection (the shipped `fail_timeout`)."""
    return float(re.search(r"fail_timeout=(\d+)s", shipped_conf.read_text()).group(1))


def _wait(check, what: str, timeout: float, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-3000:] if log and log.exists() else ""
    raise RuntimeError(f"{what} after {timeout:.0f} s\n{tail}")


@dataclass
class Replica:
    """One `gaia-env serve` on a fixed port and workspace root, so a restart is the same replica."""

    name: str
    port: int
    root: Path
    command: list[str]
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT, env=self.env)

    def wait_ready(self, timeout: float = 240) -> None:
        def ready() -> bool:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError(
                    f"replica {self.name} exited:\n{self.log.read_text(errors='replace')[-3000:]}"
                )
            try:
                return httpx.get(self.base + "/ready", timeout=5).status_code == 200
            except httpx.HTTPError:
                return False

        _wait(ready, f"replica {self.name} not ready", timeout, self.log)

    def incarnation(self) -> str:
        return httpx.get(self.base + "/sessions", timeout=10).json()["incarnation"]

    def sessions(self) -> list[dict]:
        return httpx.get(self.base + "/sessions", timeout=30).json()["sessions"]

    def kill(self) -> list[int]:
        """SIGKILL the gateway alone, as a crash would; return its server processes' pids."""
        assert self.proc is not None
        children = [p.pid for p in psutil.Process(self.proc.pid).children(recursive=True)]
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        return children

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Cluster:
    lb: str
    redis_url: str
    replicas: list[Replica]
    nginx_log: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @classmethod
    def start(
        cls,
        tmp: Path,
        shipped_conf: Path,
        servers: str,
        replicas: int = 3,
        env: dict[str, str] | None = None,
        session_ttl: float = 1800,
    ) -> Cluster:
        for binary in ("nginx", "redis-server"):
            if shutil.which(binary) is None and not Path(f"/usr/sbin/{binary}").exists():
                raise RuntimeError(
                    f"{binary} is missing: apt-get install -y {binary} (make test installs it)."
                )
        started: list[subprocess.Popen[bytes]] = []
        cluster: Cluster | None = None
        try:
            redis_port = free_port()
            redis_url = f"redis://127.0.0.1:{redis_port}/0"
            redis_argv = ["redis-server", "--bind", "127.0.0.1", "--port", str(redis_port), "--save", ""]
            started.append(subprocess.Popen([*redis_argv, "--dir", str(tmp)], stdout=subprocess.DEVNULL))
            dataset = tmp / "dataset"
            dataset.mkdir(exist_ok=True)
            readable_by_servers(dataset)
            members = []
            for n in range(1, replicas + 1):
                name, port = f"gateway-{n}", free_port()
                full_env = {
                    **os.environ,
                    **(env or {}),
                    "GAIA_REPLICA_ID": name,
                    "GAIA_HTTP_CACHE_URL": redis_url,
                }
                command = [
                    sys.executable, "-m", "gaia_env", "serve", "--host", "127.0.0.1", "--port", str(port),
                    "--workspace-root", str(tmp / name), "--dataset-dir", str(dataset),
                    "--servers", servers, "--replicas", "1", "--session-ttl", str(session_ttl),
                    "--log-level", "warning",
                ]  # fmt: skip
                members.append(Replica(name, port, tmp / name, command, full_env, tmp / f"{name}.log"))
            lb_port = free_port()
            conf = tmp / "nginx.conf"
            conf.write_text(
                render_nginx_conf(
                    shipped_conf, f"127.0.0.1:{lb_port}", [f"127.0.0.1:{m.port}" for m in members]
                )
            )
            nginx_log = tmp / "nginx.log"
            cluster = cls(f"http://127.0.0.1:{lb_port}", redis_url, members, nginx_log, started)
            for member in members:
                member.start()
            for member in members:
                member.wait_ready()
            nginx = ["nginx", "-e", "stderr", "-p", str(tmp), "-c", str(conf)]
            with nginx_log.open("ab") as log:
                started.append(
                    subprocess.Popen(
                        [*nginx, "-g", f"daemon off; pid {tmp / 'nginx.pid'};"],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
            _wait(cluster._lb_answers, "nginx does not answer", 30, nginx_log)
            return cluster
        except BaseException:
            if cluster is not None:
                cluster.stop()
            else:
                for proc in started:
                    proc.kill()
            raise

    def _lb_answers(self) -> bool:
        if self.processes[-1].poll() is not None:
            raise RuntimeError(f"nginx exited:\n{self.nginx_log.read_text(errors='replace')[-3000:]}")
        try:
            return httpx.get(self.lb + "/health", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False

    def by_incarnation(self) -> dict[str, Replica]:
        """`name/incarnation` (the X-Gaia-Replica value) -> replica, for the replicas running now."""
        return {f"{r.name}/{r.incarnation()}": r for r in self.replicas if r.proc and r.proc.poll() is None}

    def stop(self) -> None:
        for member in self.replicas:
            member.stop()
        for proc in reversed(self.processes):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
