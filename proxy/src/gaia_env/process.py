"""One server process and its persistent MCP client session over stdio.

A plain JSON-RPC line client: requests are matched to replies by id, so many calls
share one pipe. When the process exits every pending call fails at once.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import logging
import os
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import psutil

from .confine import CONFINE_ENV, Confinement, Launch
from .errors import GatewayError
from .logs import ServerLog

logger = logging.getLogger("gaia_env.process")

PROTOCOL_VERSION = "2025-11-25"
MAX_LINE_BYTES = 256 * 1024 * 1024


class ServerGone(Exception):
    """The server process exited (or was stopped) while a call was pending."""


class CallTimeout(Exception):
    pass


Progress = Callable[[float, float | None, str | None], None]
"""Called with (progress, total, message) for each notifications/progress of a call."""


class RemoteError(GatewayError):
    """The server answered a request with a JSON-RPC error; it is passed on unchanged."""


class ServerProcess:
    def __init__(self, name: str, argv: list[str], env: Mapping[str, str], nice: int = 0):
        self.name = name
        self.argv = argv
        self.env = dict(env)
        self.nice = nice
        self.proc: asyncio.subprocess.Process | None = None
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=50)
        self.exited = asyncio.Event()
        self.last_heard = time.monotonic()
        """When the server last wrote anything on stdout (a reply, a notification, a request)."""
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._progress: dict[int, Progress] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._outbox: list[bytes] = []
        self._launch: Launch | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def cpu_seconds(self) -> float:
        """CPU time the server and what it started have used (the first process may be bubblewrap
        holding the server in its namespace), 0 once it is gone."""
        try:
            top = psutil.Process(self.proc.pid) if self.proc else None
            family = [top, *top.children(recursive=True)] if top else []
        except psutil.Error:
            return 0.0
        total = 0.0
        for proc in family:
            with contextlib.suppress(psutil.Error):
                times = proc.cpu_times()
                total += times.user + times.system
        return total

    async def start(self, timeout: float) -> list[dict[str, Any]]:
        """Spawn, handshake, and return the server's tools."""
        self._launch = confined_launch(self.argv, self.env, self.name)
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self._launch.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=self._launch.env,
                start_new_session=True,  # its own process group, so the whole tree can be killed
                limit=MAX_LINE_BYTES,
            )
        except OSError:
            self._launch.cleanup()
            raise
        self._tasks = [
            asyncio.create_task(self._read_replies(), name=f"{self.name}-stdout"),
            asyncio.create_task(self._read_stderr(), name=f"{self.name}-stderr"),
        ]
        init = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "gaia-env-gateway", "version": "0.1.0"},
        }
        await self.request("initialize", init, timeout)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = await self.list_tools(timeout)
        # Only once it serves: a start-up (imports, models) at low priority on a busy machine
        # would miss its startup_timeout.
        self._lower_priority()
        return tools

    def _lower_priority(self) -> None:
        """Renice the server's process group (what it starts later, Chromium or a sandbox, inherits
        it) and its scheduling autogroup: with autogroups (Linux's default on desktops and many
        servers) each session shares the CPU as one, so the server's own session, which it leads,
        would otherwise weigh as much as the gateway's whatever its processes' nice values."""
        if self.nice <= 0 or self.proc is None:
            return
        nice = min(19, os.getpriority(os.PRIO_PROCESS, 0) + self.nice)
        try:
            os.setpriority(os.PRIO_PGRP, self.proc.pid, nice)
        except OSError as exc:  # the process already gone; its exit is reported on its own
            logger.debug("%s: cannot renice (%s)", self.name, exc)
        with contextlib.suppress(OSError):  # no autogroups in this kernel, or not ours to change
            Path(f"/proc/{self.proc.pid}/autogroup").write_text(str(nice))

    async def list_tools(self, timeout: float) -> list[dict[str, Any]]:
        tools: list[dict[str, Any]] = []
        cursor = None
        while True:
            result = await self.request("tools/list", {"cursor": cursor} if cursor else {}, timeout)
            tools.extend(result.get("tools", []))
            cursor = result.get("nextCursor")
            if not cursor:
                return tools

    async def request(
        self, method: str, params: dict[str, Any], timeout: float, on_progress: Progress | None = None
    ) -> dict[str, Any]:
        """Send one request and wait for its answer; with `on_progress`, the server is given a
        progress token (the request id) and its progress notifications are handed to it."""
        if self.exited.is_set():
            raise ServerGone(self.last_words())
        request_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        if on_progress is not None:
            self._progress[request_id] = on_progress
            params = {**params, "_meta": {**params.get("_meta", {}), "progressToken": request_id}}
        try:
            self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            self._cancel(request_id, f"timed out after {timeout:g} s")
            raise CallTimeout(method) from None
        except asyncio.CancelledError:
            self._cancel(request_id, "the client cancelled the call")
            raise
        finally:
            self._pending.pop(request_id, None)
            self._progress.pop(request_id, None)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification; a server that is gone has nothing left to tell."""
        if not self.exited.is_set():
            with contextlib.suppress(ServerGone, AssertionError):
                self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _cancel(self, request_id: int, reason: str) -> None:
        if not self.exited.is_set():
            with contextlib.suppress(Exception):
                self._send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/cancelled",
                        "params": {"requestId": request_id, "reason": reason},
                    }
                )

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        if self.proc.stdin.is_closing():
            raise ServerGone(self.last_words())
        # Messages queued in one event-loop turn leave in one write: under load that saves a
        # syscall and a wake-up of the server per call.
        if not self._outbox:
            asyncio.get_running_loop().call_soon(self._flush)
        self._outbox.append(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def _flush(self) -> None:
        data, self._outbox = b"".join(self._outbox), []
        if self.proc is not None and self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.write(data)

    async def _read_replies(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            while line := await self.proc.stdout.readline():
                self.last_heard = time.monotonic()
                try:
                    message = json.loads(line)
                except ValueError:
                    logger.warning("%s wrote a non-JSON line to stdout: %.200r", self.name, line)
                    continue
                self._dispatch(message)
        except (ValueError, asyncio.LimitOverrunError):
            logger.error("%s sent a message over %d bytes; stopping it", self.name, MAX_LINE_BYTES)
        except ConnectionError:
            pass
        finally:
            await self._on_exit()

    def _dispatch(self, message: dict[str, Any]) -> None:
        if message.get("method") == "notifications/progress":
            self._relay_progress(message.get("params") or {})
            return
        if "method" in message:
            if "id" in message:  # a request from the server: we offer no client features but ping
                reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
                if message["method"] == "ping":
                    reply["result"] = {}
                else:
                    reply["error"] = {
                        "code": -32601,
                        "message": f"The gateway does not offer {message['method']}",
                    }
                with contextlib.suppress(ServerGone, AssertionError):
                    self._send(reply)
            return
        future = self._pending.get(message.get("id"))  # type: ignore[arg-type]
        if future is None or future.done():
            return
        if "error" in message:
            error = message["error"] or {}
            future.set_exception(
                RemoteError(error.get("code", -32603), error.get("message", ""), error.get("data"))
            )
        else:
            future.set_result(message.get("result") or {})

    def _relay_progress(self, params: dict[str, Any]) -> None:
        relay = self._progress.get(params.get("progressToken"))  # type: ignore[arg-type]
        progress = params.get("progress")
        if relay is None or not isinstance(progress, int | float) or isinstance(progress, bool):
            return
        total = params.get("total")
        message = params.get("message")
        relay(
            float(progress),
            float(total) if isinstance(total, int | float) else None,
            message if isinstance(message, str) else None,
        )

    async def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        relay = ServerLog(self.name, self.stderr_tail)
        with contextlib.suppress(ValueError, ConnectionError):
            await relay.follow(self.proc.stderr)

    async def _on_exit(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                await self.proc.wait()
        if self._launch is not None:
            await asyncio.to_thread(self._launch.cleanup)
        self.exited.set()
        error = ServerGone(self.last_words())
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)

    def last_words(self) -> str:
        code = self.proc.returncode if self.proc else None
        tail = next((line for line in reversed(self.stderr_tail) if line.strip()), "")
        status = f"exited with code {code}" if code is not None else "stopped"
        if code is not None and code < 0:
            with contextlib.suppress(ValueError):
                status = f"was killed by {signal.Signals(-code).name}"
        return f"{status}{': ' + tail[:300] if tail else ''}"

    async def stop(self, grace: float = 3.0) -> None:
        """Stop the server and every process it started, whatever it does."""
        if self.proc is None:
            return
        family = _process_tree(self.proc.pid)
        if self.proc.returncode is None and self.proc.stdin is not None:
            self.proc.stdin.close()  # a stdio server exits on EOF
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(grace / 2):
                    await self.exited.wait()
        family += [p for p in _process_tree(self.proc.pid) if p not in family]
        _signal_all(self.proc.pid, family, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace / 2):
                await self.exited.wait()
        _signal_all(self.proc.pid, family, signal.SIGKILL)
        await self.exited.wait()
        for task in self._tasks:
            task.cancel()

    def kill(self) -> None:
        """Kill at once (a hung server); the supervisor notices the exit."""
        if self.proc is not None:
            _signal_all(self.proc.pid, _process_tree(self.proc.pid), signal.SIGKILL)


def confined_launch(argv: list[str], env: Mapping[str, str], name: str) -> Launch:
    """How the server starts: confined (confine.py) when its environment says GAIA_SERVER_CONFINE=1,
    as the gateway's always does unless the operator turned it off (the gateway also prepares the
    host for it); a process started with an environment that does not say so runs plain."""
    confinement = Confinement.from_env(env) if env.get(CONFINE_ENV) == "1" else None
    return confinement.launch(argv, env, name) if confinement else Launch(list(argv), dict(env))


def _process_tree(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _signal_all(pid: int, family: list[psutil.Process], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)  # the group started with the server (start_new_session)
    for proc in family:  # and children that left the group
        with contextlib.suppress(psutil.Error):
            proc.send_signal(sig)
