"""Structured logs: one JSON object a line, with the request id, and the servers' stderr relayed in.

Kit servers write JSON records to stderr (gaia_kit.core.logs); each becomes one gateway record with its
own level and the server, session and tool it came from. Anything else a server prints (a
library's chatter, a traceback at a crash) is grouped by burst into one record, its level read
from the text, instead of one record per terminal line.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import json
import logging
import re
from typing import Any

from gaia_kit.core.logs import JsonFormatter as KitJsonFormatter
from gaia_kit.core.logs import log_to_stderr

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)

server_logger = logging.getLogger("gaia_env.server")

BURST_S = 0.05
"""Plain stderr lines closer together than this belong to one record (a traceback, a box)."""
MAX_BURST_LINES = 200

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "warn": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "fatal": logging.CRITICAL,
}
_TEXT_LEVEL = re.compile(r"\b(CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG)\b")


class JsonFormatter(KitJsonFormatter):
    def fields(self, record: logging.LogRecord) -> dict[str, Any]:
        entry = super().fields(record)
        if rid := request_id.get():
            entry["request_id"] = rid
        return entry


def configure(level: str = "info", json_logs: bool = True) -> None:
    formatter = (
        JsonFormatter() if json_logs else logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s")
    )
    log_to_stderr(level, formatter)
    # The SDK logs every session at INFO; keep it to warnings unless debugging.
    if level.lower() != "debug":
        for noisy in ("mcp", "uvicorn.access", "httpx"):
            logging.getLogger(noisy).setLevel(logging.WARNING)


class ServerLog:
    """Relays one server process's stderr into the gateway's log, record by record."""

    def __init__(self, name: str, tail: collections.deque[str]):
        server, _, replica = name.partition("#")
        self.context = {"server": server, "replica": int(replica) if replica.isdigit() else replica}
        self.tail = tail
        self._burst: list[str] = []

    async def follow(self, stream: asyncio.StreamReader) -> None:
        try:
            while True:
                try:
                    if self._burst:
                        line = await asyncio.wait_for(stream.readline(), BURST_S)
                    else:
                        line = await stream.readline()
                except TimeoutError:
                    self.flush()
                    continue
                if not line:
                    return
                self.feed(line.decode("utf-8", "replace").rstrip("\r\n"))
        finally:
            self.flush()

    def feed(self, text: str) -> None:
        record = _json_record(text)
        if record is None:
            if text.strip():
                self.tail.append(text)
            self._burst.append(text)
            if len(self._burst) >= MAX_BURST_LINES:
                self.flush()
            return
        self.flush()
        message = str(record.pop("msg", record.pop("message", "")))
        level = _LEVELS.get(str(record.pop("level", "info")).lower(), logging.INFO)
        record.pop("ts", None)
        if "logger" in record:
            record["server_logger"] = record.pop("logger")
        self.tail.append(message + (f": {record['error']}" if record.get("error") else ""))
        server_logger.log(level, message, extra={**_safe_extra(record), **self.context})

    def flush(self) -> None:
        lines, self._burst = self._burst, []
        while lines and not lines[-1].strip():
            lines.pop()
        if not any(line.strip() for line in lines):
            return
        text = "\n".join(lines)
        found = _TEXT_LEVEL.findall(text)
        if "Traceback (most recent call last)" in text:
            found.append("ERROR")
        level = max((_LEVELS[word.lower()] for word in found), default=logging.INFO)
        server_logger.log(level, text, extra=self.context)


def _json_record(text: str) -> dict[str, Any] | None:
    if not text.startswith("{"):
        return None
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) and ("msg" in record or "message" in record) else None


_RESERVED = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


def _safe_extra(record: dict[str, Any]) -> dict[str, Any]:
    """A server's fields as `extra`, renaming any that would clash with LogRecord's own attributes."""
    return {(f"server_{k}" if k in _RESERVED else k): v for k, v in record.items()}
