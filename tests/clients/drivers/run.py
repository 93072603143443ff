"""Run some clients' scenarios and print one JSON object as the last line, {client: record or {"failed": sentence}}.

Usage: python run.py '{"client": {"server_url": ..., "catalog_url": ...}, ...}'
Each client is a module drive_<client> in this folder with `async def drive(server_url, catalog_url) -> dict`.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
import traceback

# mcp-use reports usage to a remote service unless told not to; these machines reach no such thing.
os.environ.setdefault("MCP_USE_ANONYMIZED_TELEMETRY", "false")


async def main(plan: dict[str, dict[str, str]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for client, urls in plan.items():
        module = importlib.import_module("drive_" + client.replace("-", "_"))
        try:
            out[client] = await module.drive(urls["server_url"], urls["catalog_url"])
        except Exception as exc:
            out[client] = {"failed": sentence(exc), "trace": traceback.format_exc()[-3000:]}
    return out


def sentence(exc: BaseException) -> str:
    """What failed, with the errors inside an ExceptionGroup (anyio task groups wrap them) spelled out."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(sentence(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}"


if __name__ == "__main__":
    # Some clients log to stdout: the record is the last line.
    print("\n" + json.dumps(asyncio.run(main(json.loads(sys.argv[1])))))
