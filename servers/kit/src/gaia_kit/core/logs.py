"""Logs a machine can read: one JSON object a line, with the session and tool being served.

Servers write these to stderr, where the gateway reads each line as one structured record (a
traceback included), instead of the SDK's terminal boxes split over many lines.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
import time
from typing import Any

session: contextvars.ContextVar[str | None] = contextvars.ContextVar("gaia_session", default=None)
tool: contextvars.ContextVar[str | None] = contextvars.ContextVar("gaia_tool", default=None)

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "color_message",
    "taskName",
}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(self.fields(record), default=str, ensure_ascii=False)

    def fields(self, record: logging.LogRecord) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, var in (("session", session), ("tool", tool)):
            if (value := var.get()) is not None:
                entry[key] = value
        entry.update({k: v for k, v in record.__dict__.items() if k not in _STANDARD})
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info).splitlines()[-1]
            entry["traceback"] = self.formatException(record.exc_info)
        return entry


def log_to_stderr(level: int | str = logging.WARNING, formatter: logging.Formatter | None = None) -> None:
    """Send every log record to stderr as one JSON line, replacing handlers set up before (the SDK's)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter or JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper() if isinstance(level, str) else level)
