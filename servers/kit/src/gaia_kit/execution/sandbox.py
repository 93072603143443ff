"""The one sandbox for code execution: bubblewrap, local, no key needed.

Inside: the session workspace read-write, the dataset read-only (at its real path and at the alias
agents are told), /usr, a few files of /etc, the Python that runs this server (with its data
libraries) read-only; a fresh /tmp and /var/tmp (tmpfs of GAIA_SANDBOX_TMP_MB each); no network
unless enabled; new PID, IPC, UTS and network namespaces. Memory is bounded per process (RLIMIT_AS,
GAIA_SANDBOX_MEMORY_MB) and for the whole sandbox, its tmpfs files included (execution.memory,
GAIA_SANDBOX_TOTAL_MEMORY_MB). Sandboxed code never runs as root: as root we stay outside a user namespace and drop
to a per-workspace uid with setpriv, because RLIMIT_NPROC is not enforced for global root (a fork
bomb would exhaust the host's pids); as another user bubblewrap makes a user namespace, where
the process count is per namespace. Limits are set inside with prlimit, so bubblewrap itself is
never constrained. The environment is built from scratch: no API key or gateway variable leaks in.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.quota_accounting import size_text
from gaia_kit.core.quota_watch import CommandWatch
from gaia_kit.core.settings import get_settings, settings
from gaia_kit.execution.memory import MemoryWatch

logger = logging.getLogger("gaia_kit.execution.sandbox")

# What sandboxed code may see of /etc: name resolution, certificates, locale, fonts, alternatives.
ETC_ENTRIES = (
    "alternatives", "ca-certificates", "ca-certificates.conf", "fonts", "group", "host.conf", "hosts",
    "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "mime.types", "nsswitch.conf", "passwd",
    "protocols", "services", "ssl", "timezone", "magic", "inputrc", "bash.bashrc", "python3", "python3.11",
)  # fmt: skip
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|^MCP_|^GAIA_", re.IGNORECASE)
SANDBOX_UID_BASE = 200_000
SANDBOX_UID_SPAN = 50_000


class SandboxSettings(BaseSettings):
    """GAIA_SANDBOX and GAIA_SANDBOX_* variables: the backend and the default limits per execution."""

    model_config = SettingsConfigDict(env_prefix="GAIA_SANDBOX_", extra="ignore")

    backend: Literal["bubblewrap", "unsandboxed"] = Field(
        "bubblewrap", validation_alias=AliasChoices("GAIA_SANDBOX", "GAIA_SANDBOX_BACKEND")
    )
    """`unsandboxed` runs code directly on the host (limits only): an explicit, logged choice."""
    wall_s: float = 30
    cpu_s: float = 30
    memory_mb: int = 2048
    processes: int = 256
    file_size_mb: int = 256
    output_chars: int = 100_000
    network: bool = False
    """Let sandboxed code reach the network (it shares the host's); off by default."""
    tmp_mb: int = 512
    """Size of the fresh /tmp (and of the fresh /var/tmp) each execution gets."""
    total_memory_mb: int | None = None
    """All processes of one execution plus its /tmp and /var/tmp files; memory_mb when unset."""


SHOWN_FROM_S = 1.0
"""A command's wall time is in its answer from this long on."""


@dataclass(frozen=True)
class Limits:
    wall_s: float = 30
    cpu_s: float = 30
    memory_mb: int = 2048
    processes: int = 256
    file_size_mb: int = 256
    output_chars: int = 100_000
    total_memory_mb: int | None = None
    """The whole sandbox (every process and its tmpfs files); memory_mb (one process's) when None."""

    @classmethod
    def from_settings(cls) -> Limits:
        s = settings(SandboxSettings)
        return cls(
            s.wall_s, s.cpu_s, s.memory_mb, s.processes, s.file_size_mb, s.output_chars, s.total_memory_mb
        )

    @property
    def sandbox_bytes(self) -> int:
        return (self.total_memory_mb or self.memory_mb) * 1024 * 1024


@dataclass
class SandboxResult:
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    truncated: bool
    duration_s: float
    wall_s: float = 0
    quota_stop: str | None = None
    """Why the command was stopped for crossing the workspace quota, if it was."""
    quota_note: str | None = None
    """A line about the workspace quota for the agent (over it after the run, or files capped by it)."""
    memory_stop: str | None = None
    """Why the command was stopped for crossing the memory limit of the whole sandbox, if it was."""

    def describe(self) -> str:
        """One text block for an agent: output, errors, exit status, why it stopped."""
        parts = [self.stdout.rstrip("\n") if self.stdout.strip() else "(no output)"]
        if self.stderr.strip():
            parts.append(f"[stderr]\n{self.stderr.rstrip()}")
        # A fast command's wall time tells the agent nothing, costs tokens in every answer and makes
        # the same command answer differently each run (a policy learnt from those digits).
        took = f"; {self.duration_s:.1f} s" if self.duration_s >= SHOWN_FROM_S else ""
        parts.append(f"[{self.status()}{took}]")
        if self.quota_note:
            parts.append(f"[{self.quota_note}]")
        return "\n".join(parts)

    def status(self) -> str:
        if self.memory_stop:
            return self.memory_stop
        if self.quota_stop:
            return self.quota_stop
        if self.timed_out:
            return (
                f"stopped: the wall-time limit of {self.wall_s:g} s was reached and every process was "
                "killed; make the command faster or raise its timeout"
            )
        code = self.exit_code
        if code is None:
            return "stopped"
        if code < 0 or code > 128:
            number = -code if code < 0 else code - 128
            name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else str(number)
            why = {
                "SIGXCPU": " (CPU time limit reached)",
                "SIGXFSZ": " (file size limit reached)",
                "SIGKILL": " (killed: a limit such as CPU time or memory)",
            }.get(name, "")
            return f"exit status {code}: killed by {name}{why}"
        return f"exit status {code}"


class SandboxUnavailable(ToolFailure):
    """bubblewrap cannot run here; the message says why and what the operator can do."""


async def run_sandboxed(
    argv: list[str],
    *,
    workspace: Path,
    cwd: Path | None = None,
    stdin: str | None = None,
    limits: Limits | None = None,
    network: bool = False,
    env: dict[str, str] | None = None,
) -> SandboxResult:
    """Run `argv` in the sandbox with `workspace` mounted read-write; never raises for the command's failure."""
    sandbox = settings(SandboxSettings)
    limits = limits or Limits.from_settings()
    workspace = Path(os.path.realpath(workspace))
    if not workspace.is_dir():
        raise ToolFailure("The session workspace does not exist; start a new session.")
    cwd = Path(os.path.realpath(cwd)) if cwd is not None else workspace
    if not cwd.is_relative_to(workspace) or not cwd.is_dir():
        raise ToolFailure(
            "The working directory is no longer a directory inside the workspace; change to another one."
        )
    network = network or sandbox.network
    environment = _environment(workspace, env)
    watch = await CommandWatch.begin(workspace)
    file_size = limits.file_size_mb * 1024 * 1024
    if watch is not None and watch.file_size_room is not None:
        file_size = min(file_size, watch.file_size_room)
    inner = [*_prlimit(limits, file_size), "--", *argv]
    if sandbox.backend == "unsandboxed":
        logger.warning("GAIA_SANDBOX=unsandboxed: running %s on the host without isolation", argv[:1])
        command, preexec = inner, None
        spawn_env, spawn_cwd = environment, cwd
    else:
        problem = _bubblewrap_problem()
        if problem:
            raise SandboxUnavailable(problem)
        uid = _sandbox_uid(workspace) if os.geteuid() == 0 else None
        if uid is not None:
            await asyncio.to_thread(_hand_over, workspace, uid)
        command = _bwrap_command(inner, workspace, cwd, environment, network, uid)
        preexec, spawn_env, spawn_cwd = None, {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, workspace
    result = await _execute(command, spawn_env, spawn_cwd, stdin, limits, preexec, watch)
    if watch is not None and result.quota_stop is None:
        result.quota_note = await watch.note_after()
        if (
            result.quota_note is None
            and file_size < limits.file_size_mb * 1024 * 1024
            and _hit_file_size(result)
        ):
            result.quota_note = (
                f"Files were capped at the {size_text(file_size)} left in the session workspace's "
                f"quota ({watch.quota.describe(watch.start)}); delete files to make room."
            )
    return result


def _hit_file_size(result: SandboxResult) -> bool:
    code = result.exit_code
    xfsz = int(signal.SIGXFSZ)
    return code in (-xfsz, 128 + xfsz) or any(
        words in result.stderr for words in ("File too large", "File size limit exceeded")
    )


def sandbox_status() -> dict:
    """For --check and `gaia-env doctor`: the backend in use, what is missing, and notes."""
    sandbox = settings(SandboxSettings)
    missing = [tool for tool in ("prlimit",) if shutil.which(tool) is None]
    if sandbox.backend == "unsandboxed":
        return {
            "backend": "unsandboxed",
            "missing": missing,
            "notes": [
                "WARNING: GAIA_SANDBOX=unsandboxed runs model-written code directly on this host "
                "with limits but no isolation; use it only inside a disposable container."
            ],
        }
    problem = _bubblewrap_problem()
    return {
        "backend": "bubblewrap",
        "missing": missing + ([problem] if problem else []),
        "notes": [f"network {'on' if sandbox.network else 'off'}; limits {Limits.from_settings()}"],
    }


# --- building the sandbox -------------------------------------------------------------------


def _bwrap_command(
    inner: list[str], workspace: Path, cwd: Path, env: dict[str, str], network: bool, uid: int | None
) -> list[str]:
    sandbox = settings(SandboxSettings)
    args = ["bwrap", "--die-with-parent", "--new-session", "--hostname", "gaia-sandbox"]
    args += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    args += [] if network else ["--unshare-net"]
    # As root: no user namespace (see the module docstring); setpriv drops to `uid` inside.
    args += ["--unshare-user", "--cap-drop", "ALL"] if uid is None else []
    args += system_mounts()
    if network:
        args += ["--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"]
    args += ["--size", str(sandbox.tmp_mb * 1024 * 1024), "--perms", "1777", "--tmpfs", "/tmp"]
    args += ["--size", str(sandbox.tmp_mb * 1024 * 1024), "--perms", "1777", "--tmpfs", "/var/tmp"]
    made: set[str] = {"/", "/usr", "/etc", "/tmp", "/var", "/proc", "/dev"}
    for source in _runtime_roots():
        args += _mount(["--ro-bind"], source, source, made)
    dataset = get_settings().dataset_dir
    if dataset.is_dir():
        real = Path(os.path.realpath(dataset))
        args += _mount(["--ro-bind"], real, real, made)
        alias = get_settings().dataset_alias
        if alias and Path(alias) != real and not Path(alias).is_relative_to(workspace):
            args += _mount(["--ro-bind"], real, Path(alias), made)
    args += _mount(["--bind"], workspace, workspace, made)
    args += ["--chdir", str(cwd), "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    if uid is not None:
        drop = [f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all"]
        inner = ["setpriv", *drop, "--bounding-set=-all", "--no-new-privs", "--", *inner]
    return [*args, "--", *inner]


def system_mounts() -> list[str]:
    """bubblewrap arguments for what any program needs to start: /usr, the top-level library and
    binary folders, /proc, /dev and a few files of /etc, all read-only."""
    args = ["--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev", *root_program_dirs()]
    args += ["--perms", "0755", "--dir", "/etc"]
    for name in ETC_ENTRIES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


def root_program_dirs() -> list[str]:
    """bubblewrap arguments for /bin, /lib and their kin as the host has them: links into /usr
    (merged /usr) or read-only folders. The gateway's server confinement uses them too."""
    args: list[str] = []
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = Path("/") / top
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            args += ["--ro-bind", str(host), str(host)]
    return args


def _mount(kind: list[str], source: Path, dest: Path, made: set[str]) -> list[str]:
    """Bind `source` on `dest`, creating its parents traversable (bubblewrap would make them 0700)."""
    args: list[str] = []
    for parent in reversed(dest.parents):
        if str(parent) not in made:
            made.add(str(parent))
            args += ["--perms", "0755", "--dir", str(parent)]
    made.add(str(dest))
    return [*args, *kind, str(source), str(dest)]


@lru_cache(maxsize=1)
def _runtime_roots() -> list[Path]:
    """Installations outside /usr that sandboxed python and node need: this Python and its venv."""
    roots = {Path(os.path.realpath(sys.base_prefix)), Path(os.path.realpath(sys.prefix))}
    node = shutil.which("node")
    if node:
        roots.add(Path(os.path.realpath(node)).parent.parent)
    return sorted(r for r in roots if not r.is_relative_to("/usr") and r != Path("/"))


def _environment(workspace: Path, extra: dict[str, str] | None) -> dict[str, str]:
    """Built from nothing: the host's variables (API keys, tokens, gateway settings) never pass."""
    bin_dir = str(Path(sys.executable).parent)
    env = {
        "PATH": f"{bin_dir}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": str(workspace),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "dumb",
        "TMPDIR": "/tmp",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": "/tmp/matplotlib",
        # One thread per math library: predictable under the address-space and process limits.
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    for key, value in (extra or {}).items():
        if SECRET_NAME.search(key):
            logger.warning("not passing %s into the sandbox: it looks like a secret", key)
            continue
        env[key] = value
    return env


def _prlimit(limits: Limits, file_size: int) -> list[str]:
    def both(value: int) -> str:
        return f"{value}:{value}"

    return [
        "prlimit",
        f"--as={both(limits.memory_mb * 1024 * 1024)}",
        # SIGXCPU at the soft limit (so the result can say why), SIGKILL a second later.
        f"--cpu={max(1, int(limits.cpu_s + 0.999))}:{max(1, int(limits.cpu_s + 0.999)) + 1}",
        f"--nproc={both(limits.processes)}",
        f"--fsize={both(file_size)}",
        "--core=0:0",
    ]


def _sandbox_uid(workspace: Path) -> int:
    """One unprivileged uid per workspace, the same in every server process, so ownership agrees."""
    digest = hashlib.sha256(str(workspace).encode()).digest()
    return SANDBOX_UID_BASE + int.from_bytes(digest[:4], "big") % SANDBOX_UID_SPAN


def _hand_over(workspace: Path, uid: int) -> None:
    """Give the workspace tree to the sandbox uid. fwalk with dir fds never follows a planted link."""
    os.chown(workspace, uid, uid, follow_symlinks=False)
    for _, dirs, files, dir_fd in os.fwalk(workspace, follow_symlinks=False):
        for name in dirs + files:
            with contextlib.suppress(FileNotFoundError):
                os.chown(name, uid, uid, dir_fd=dir_fd, follow_symlinks=False)


@lru_cache(maxsize=1)
def _bubblewrap_problem() -> str | None:
    """Why bubblewrap cannot run here, or None. Checked once per process."""
    if shutil.which("bwrap") is None:
        return (
            "The sandbox needs bubblewrap, which is not installed (apt-get install bubblewrap). "
            "To run code without isolation anyway, set GAIA_SANDBOX=unsandboxed (not recommended)."
        )
    for tool in ("prlimit", "setpriv") if os.geteuid() == 0 else ("prlimit",):
        if shutil.which(tool) is None:
            return f"The sandbox needs {tool} (apt-get install util-linux)."
    probe = ["bwrap", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--unshare-pid"]
    probe += ["--unshare-net"] + ([] if os.geteuid() == 0 else ["--unshare-user"]) + ["--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not start ({exc})."
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"
        return (
            f"bubblewrap cannot create namespaces here ({detail}). In Docker run with "
            "--security-opt seccomp=unconfined --security-opt systempaths=unconfined, or enable user "
            "namespaces; GAIA_SANDBOX=unsandboxed runs code without isolation (not recommended)."
        )
    return None


# --- running --------------------------------------------------------------------------------


class _Capture:
    """Keeps the head and the tail of a stream; the middle is counted and dropped."""

    def __init__(self, limit: int):
        self.half = max(1, limit // 2)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.half:
                del self.tail[: len(self.tail) - self.half]

    @property
    def truncated(self) -> bool:
        return self.total > len(self.head) + min(len(self.tail), self.half)

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        if not self.truncated:
            return head + self.tail.decode("utf-8", "replace")
        tail = bytes(self.tail[-self.half :]).decode("utf-8", "replace")
        dropped = self.total - len(self.head) - min(len(self.tail), self.half)
        return f"{head}\n[... {dropped} bytes of output elided ...]\n{tail}"


async def _drain(stream: asyncio.StreamReader, capture: _Capture) -> None:
    while chunk := await stream.read(65536):
        capture.add(chunk)


async def _execute(
    command: list[str],
    env: dict[str, str],
    cwd: Path,
    stdin: str | None,
    limits: Limits,
    preexec,
    watch: CommandWatch | None = None,
) -> SandboxResult:
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=env,
        start_new_session=True,  # its own process group: the deadline kills the whole group
        preexec_fn=preexec,
    )
    out, err = _Capture(limits.output_chars), _Capture(limits.output_chars)
    readers = [
        asyncio.create_task(_drain(process.stdout, out)),
        asyncio.create_task(_drain(process.stderr, err)),
    ]
    timed_out = False
    quota_stop = memory_stop = None
    watcher = asyncio.ensure_future(watch.crossed()) if watch is not None else None
    memory = MemoryWatch(process.pid, limits.sandbox_bytes)
    memory_watcher = asyncio.ensure_future(memory.crossed())
    try:
        if stdin is not None:
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                process.stdin.write(stdin.encode())
                await process.stdin.drain()
            process.stdin.close()
        exited = asyncio.ensure_future(process.wait())
        racing = {exited, memory_watcher} | ({watcher} if watcher is not None else set())
        done, _ = await asyncio.wait(racing, timeout=limits.wall_s, return_when=asyncio.FIRST_COMPLETED)
        if memory_watcher in done and exited not in done:
            memory_stop = memory.stopped_message(memory_watcher.result())
        elif watcher is not None and watcher in done and exited not in done:
            quota_stop = watch.stopped_message(watcher.result())
        elif exited not in done:
            timed_out = True
    finally:
        memory_watcher.cancel()
        if watcher is not None:
            watcher.cancel()
        # Whatever happened (exit, deadline, quota, cancellation), nothing it started outlives it.
        _kill_group(process.pid)
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        _, pending = await asyncio.wait(readers, timeout=2)
        for task in pending:
            task.cancel()
    return SandboxResult(
        exit_code=None if timed_out or quota_stop or memory_stop else process.returncode,
        stdout=out.text(),
        stderr=err.text(),
        timed_out=timed_out,
        truncated=out.truncated or err.truncated,
        duration_s=time.monotonic() - started,
        wall_s=limits.wall_s,
        quota_stop=quota_stop,
        memory_stop=memory_stop,
    )


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
