"""Every server starts the same way: stdio by default, or streamable HTTP for standalone use."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer

from gaia_kit.core.logs import log_to_stderr

Check = Callable[[], dict[str, Any]]


def serve(server: MCPServer, argv: list[str] | None = None, check: Check | None = None) -> None:
    """Start `server`. `check` reports, for `gaia-env doctor`, the backend in use and what is missing."""
    parser = argparse.ArgumentParser(prog=server.name, description=f"The {server.name} MCP server.")
    parser.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--check", action="store_true", help="print what this server needs and has, as JSON")
    args = parser.parse_args(argv)
    if args.check:
        report = {"backend": "local", "missing": [], "notes": []}
        report.update(check() if check else {})
        sys.stdout.write(json.dumps(report) + "\n")
        return
    # Logs go to stderr, one JSON record a line, which the gateway relays into its own log; on
    # stdio, stdout carries the protocol.
    log_to_stderr(logging.WARNING)
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=args.host, port=args.port, stateless_http=True, json_response=True)
