"""Where code runs: an E2B cloud sandbox per session (with E2B_API_KEY), or the local sandbox.

Both keep one sandbox per session, reused across calls, and release it when the session ends.
Uploads are read from a file the path guard opened; the local sandbox's folder is written only
through folders opened beneath the workspace and listed by descriptor, so a link that sandboxed code
plants in or as `e2b_sandbox/` leads no upload, and no listing, out of the workspace.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import anyio
from gaia_kit import Session, ToolFailure, run_blocking
from gaia_kit.core.quota import copy_into, make_dirs
from gaia_kit.core.usage import charge, check_budget
from gaia_kit.execution.sandbox import Limits, run_sandboxed

from .driver import DRIVER, STATE_FILE

logger = logging.getLogger("e2b_code_server")

SANDBOX_DIR = "e2b_sandbox"
E2B_HOME = "/home/user"


@dataclass
class RunOutput:
    stdout: str = ""
    stderr: str = ""
    error: str | None = None
    results: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    note: str | None = None

    def render(self, sandbox_id: str) -> str:
        parts = [f"sandbox_id: {sandbox_id}"]
        parts.append(f"stdout:\n{self.stdout.rstrip()}" if self.stdout.strip() else "stdout: (empty)")
        if self.stderr.strip():
            parts.append(f"stderr:\n{self.stderr.rstrip()}")
        parts += [f"result:\n{result}" for result in self.results]
        parts.append(f"error: {self.error}" if self.error else "error: none")
        if self.files:
            parts.append("files written:\n" + "\n".join(f"- {name}" for name in self.files))
        if self.note:
            parts.append(f"note: {self.note}")
        return "\n\n".join(parts)


class LocalBackend:
    """The session's sandbox is a directory in its workspace; Python variables persist on disk there."""

    name = "local"

    def __init__(self) -> None:
        self._dirs: dict[str, Path] = {}

    def sandbox_id(self, session: Session) -> str:
        digest = hashlib.sha256(f"{session.id}\0{session.workspace}".encode()).hexdigest()
        return f"local-{digest[:16]}"

    def _dir(self, session: Session) -> Path:
        folder = session.workspace / SANDBOX_DIR
        make_dirs(folder)  # beneath the workspace: a link planted as e2b_sandbox is refused
        self._dirs[session.id] = folder
        return folder

    async def upload(self, session: Session, source: BinaryIO, name: str) -> str:
        folder = await run_blocking(self._dir, session)
        target = folder / name
        # Renamed into e2b_sandbox/ opened beneath the workspace, within the session's disk quota: a
        # link at the name is replaced, one on the way refused.
        await run_blocking(copy_into, source, target)
        shown = session.paths.display
        return f"{shown(target)} (code runs in {shown(folder)}: open it as {name})"

    async def run(self, session: Session, code: str, language: str) -> RunOutput:
        folder = await run_blocking(self._dir, session)
        argv = {
            "python": ["python3", "-c", DRIVER],
            "bash": ["bash", "-s"],
            "js": ["node", "-"],
        }[language]
        before = await run_blocking(_snapshot, session)
        limits = Limits.from_settings()
        outcome = await run_sandboxed(
            argv, workspace=session.workspace, cwd=folder, stdin=code, limits=limits
        )
        output = RunOutput(stdout=outcome.stdout, stderr=outcome.stderr, note=outcome.quota_note)
        if outcome.timed_out or outcome.exit_code != 0:
            lines = [line for line in outcome.stderr.strip().splitlines() if not line.startswith("[Not kept")]
            detail = lines[-1] if lines and outcome.exit_code == 1 else outcome.status()
            output.error = detail
        after = await run_blocking(_snapshot, session)
        output.files = [
            session.paths.display(folder / name) for name, stamp in after.items() if before.get(name) != stamp
        ]
        return output

    async def release(self, session_id: str) -> None:
        folder = self._dirs.pop(session_id, None)
        if folder is not None:
            await run_blocking(shutil.rmtree, folder, True)

    def status(self) -> dict[str, Any]:
        from gaia_kit.execution.sandbox import sandbox_status

        report = sandbox_status()
        report["notes"] = ["No E2B_API_KEY: code runs in the local sandbox.", *report.get("notes", [])]
        return {**report, "backend": f"local ({report['backend']})"}


def _snapshot(session: Session) -> dict[str, tuple[int, int]]:
    """Every file under the sandbox directory with its size and mtime, to report what a run wrote.
    Walked by descriptor from the folder opened beneath the workspace; links are not followed."""
    stamps: dict[str, tuple[int, int]] = {}
    try:
        top = session.paths.open_dir(SANDBOX_DIR, write=True)
    except ToolFailure:
        return stamps  # gone, or made a link out of the workspace by the code that ran: nothing to list
    try:
        for folder, _, names, fd in os.fwalk(".", dir_fd=top):
            for name in names:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and not name.startswith(STATE_FILE):
                    stamps[os.path.normpath(os.path.join(folder, name))] = (info.st_size, info.st_mtime_ns)
    finally:
        os.close(top)
    return stamps


@dataclass
class _Box:
    sandbox: Any
    last_used: float
    lock: anyio.Lock = field(default_factory=anyio.Lock)


class E2BBackend:
    """One E2B sandbox per session. The SDK is synchronous: every call runs in a worker thread."""

    name = "e2b"

    def __init__(self, api_key: str, idle_s: float, wall_s: float):
        self._api_key = api_key
        self._idle_s = idle_s
        self._wall_s = wall_s
        self._boxes: dict[str, _Box] = {}
        self._creating = anyio.Lock()

    def sandbox_id(self, session: Session) -> str:
        box = self._boxes.get(session.id)
        return box.sandbox.sandbox_id if box else ""

    async def _box(self, session: Session) -> _Box:
        await self._reap_idle()
        async with self._creating:  # one creation per session, even for concurrent first calls
            box = self._boxes.get(session.id)
            if box is None:
                from e2b_code_interpreter import Sandbox

                # E2B's own timeout kills the sandbox if this process dies without releasing it.
                sandbox = await run_blocking(
                    lambda: Sandbox.create(timeout=int(self._idle_s), api_key=self._api_key)
                )
                box = self._boxes[session.id] = _Box(sandbox, time.monotonic())
        box.last_used = time.monotonic()
        return box

    async def upload(self, session: Session, source: BinaryIO, name: str) -> str:
        check_budget(self.name)
        box = await self._box(session)
        target = f"{E2B_HOME}/{name}"
        data = await run_blocking(source.read)
        async with box.lock:
            await run_blocking(lambda: box.sandbox.files.write(target, data))
        charge(self.name, bytes=len(data))
        return target

    async def run(self, session: Session, code: str, language: str) -> RunOutput:
        check_budget(self.name)
        charge(self.name)  # the sandbox runs (and bills) whether or not the code succeeds
        box = await self._box(session)
        async with box.lock:
            execution = await run_blocking(
                lambda: box.sandbox.run_code(code, language=language, timeout=self._wall_s)
            )
            # Each call pushes E2B's idle deadline back, as our own reaper does.
            await run_blocking(lambda: box.sandbox.set_timeout(int(self._idle_s)))
        output = RunOutput(
            stdout="".join(execution.logs.stdout),
            stderr="".join(execution.logs.stderr),
            results=[r.text for r in execution.results if r.text],
        )
        if execution.error is not None:
            error = execution.error
            output.error = f"{error.name}: {error.value}"
            output.stderr = f"{output.stderr}{error.traceback}"
        return output

    async def release(self, session_id: str) -> None:
        box = self._boxes.pop(session_id, None)
        if box is not None:
            try:
                await run_blocking(box.sandbox.kill)
            except Exception as exc:  # already gone on E2B's side: nothing left to release
                logger.warning("killing E2B sandbox of session %s failed: %s", session_id, exc)

    async def _reap_idle(self) -> None:
        now = time.monotonic()
        for session_id, box in list(self._boxes.items()):
            if now - box.last_used > self._idle_s and not box.lock.locked():
                await self.release(session_id)

    def status(self) -> dict[str, Any]:
        return {
            "backend": "e2b",
            "missing": [],
            "notes": [f"E2B sandboxes, killed after {self._idle_s:.0f} s idle"],
        }
