"""What the gateway benchmarks share: a bare-socket HTTP/1.1 client, starting `gaia-env serve` (with
gaia_kit_testing's launcher), and reading a process tree's CPU, memory and processes.

The client is raw asyncio streams on purpose: an httpx client spends about 2 ms of CPU per request,
which on a 2-core machine would make the load generator, not the gateway, the thing measured.
"""

from __future__ import annotations

import asyncio
import json
import statistics
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
from gaia_kit_testing.gateway import RunningGateway, launch

READY_TIMEOUT_S = 300.0


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    headers = {
        k.strip().lower(): v.strip() for k, _, v in (line.partition(b":") for line in head.split(b"\r\n")[1:])
    }
    if b"content-length" in headers:
        return status, await reader.readexactly(int(headers[b"content-length"]))
    chunks = []
    while (size := int((await reader.readuntil(b"\r\n")).strip(), 16)) > 0:
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)
    await reader.readexactly(2)
    return status, b"".join(chunks)


class RawClient:
    """One keep-alive connection to the gateway; reconnects once if the server closed it."""

    def __init__(self, url: str, headers: dict[str, str]):
        parts = urlsplit(url)
        self.host, self.port, self.path, self.netloc = parts.hostname, parts.port, parts.path, parts.netloc
        self.headers = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def request(self, method: str, body: bytes = b"") -> tuple[int, bytes]:
        head = (
            f"{method} {self.path} HTTP/1.1\r\nHost: {self.netloc}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\n{self.headers}Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        for attempt in (1, 2):
            if self._streams is None:
                self._streams = await asyncio.open_connection(self.host, self.port)
            reader, writer = self._streams
            try:
                writer.write(head + body)
                return await read_response(reader)
            except (ConnectionError, asyncio.IncompleteReadError):
                await self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def call(self, request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        status, payload = await self.request("POST", json.dumps(body).encode())
        if status != 200:
            raise ConnectionError(f"HTTP {status}: {payload[:200]!r}")
        return json.loads(payload)

    async def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


def start_gateway(
    tmp: Path, dataset: Path, *args: str, env: dict[str, str] | None = None, log_level: str = "warning"
) -> RunningGateway:
    """The benchmarks' gateway: quiet logs, and five minutes to get ready (a loaded machine)."""
    return launch(
        tmp, "--log-level", log_level, *args, env=env, dataset_dir=dataset, ready_timeout=READY_TIMEOUT_S
    )


def tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def tree_rss_mib(pid: int) -> float:
    total = 0
    for proc in tree(pid):
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total / 2**20


def cpu_seconds(processes: list[psutil.Process]) -> float:
    """CPU time of these processes and of the children they have reaped (subprocesses that ended)."""
    total = 0.0
    for proc in processes:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system + times.children_user + times.children_system
    return total


def latency_summary(latencies: list[float], elapsed_s: float) -> dict[str, float]:
    """Throughput and p50/p99 (ms) of one measurement's call latencies (seconds)."""
    ordered = sorted(latencies)
    return {
        "calls_per_s": len(ordered) / elapsed_s,
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[int(len(ordered) * 0.99) - 1] * 1000,
    }
