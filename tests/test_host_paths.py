"""No answer names a host path: every tool, through the real gateway, succeeding and refusing.

The calls are benchmarks/tool_cost.py's (every server, realistic inputs, loopback fakes for the
web and the model), once each, then the same tools with paths they must refuse: outside the
workspace, `..`, a missing file, a symlink out. No answer (text, structuredContent, error
sentence, the gateway's own errors) may contain the session's workspace directory, the workspace
root or the dataset's host directory: agents see their files as they named them, workspace files
relative to the workspace and dataset files under the dataset's alias (issues 22 and 24).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from benchmarks import tool_cost

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[1]
PATH_ARGUMENTS = (
    "path", "file_path", "filepath", "video_path", "video_url", "source", "destination", "output_file_path"
)  # fmt: skip
PATH_LISTS = ("paths", "image_urls", "audio_urls")
OUTSIDE = ("/etc/hostname", "../../outside.txt", "link-out/hostname", "link-file")
"""Paths no tool may read or write: absolute outside, `..` out, through a symlink to /etc."""
MISSING = "missing/nothing.csv"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("hostpaths")
    with tool_cost.serving(tmp) as (meter, ctx):
        (ctx.workspace / "link-out").symlink_to("/etc")
        (ctx.workspace / "link-file").symlink_to("/etc/hostname")
        for case in tool_cost.CASES:
            started = time.monotonic()
            meter.call(case.server, case.tool, case.args(ctx, 0))
            print(f"{time.monotonic() - started:6.1f} s  {case.tool}", file=sys.stderr, flush=True)
        tool_cost.run_playwright(meter, ctx, 1)
        refusals = []
        for case in tool_cost.CASES:
            for bad in (*OUTSIDE, MISSING):
                arguments = with_path(case.args(ctx, 1), bad)
                if arguments is not None:
                    meter.call(case.server, case.tool, arguments)
                    refusals.append((case.tool, bad, meter.answers[-1][2]))
        hidden = {str(ctx.workspace), str(ctx.workspace.parent), str(tmp / "dataset")}
        yield Served(meter.answers, refusals, sorted(hidden | {os.path.realpath(p) for p in hidden}))


@dataclass
class Served:
    answers: list[tuple[str, str, dict[str, Any]]]
    """Every call's server, tool and JSON-RPC reply."""
    refusals: list[tuple[str, str, dict[str, Any]]]
    """The calls with a bad path: tool, path, reply."""
    hidden: list[str]
    """The host paths no answer may contain."""


def with_path(arguments: dict[str, Any], path: str) -> dict[str, Any] | None:
    """`arguments` with each path in them replaced by `path`; None when they take no path."""
    named = [key for key in PATH_ARGUMENTS if key in arguments]
    listed = [key for key in PATH_LISTS if key in arguments]
    if not named and not listed:
        return None
    return {**arguments, **dict.fromkeys(named, path), **{key: [path] for key in listed}}


def test_no_answer_names_a_host_path(served: Served) -> None:
    tools = {(server, tool) for server, tool, _ in served.answers}
    assert len(tools) >= 120, f"only {len(tools)} tools were called"
    leaks: dict[str, str] = {}
    for server, tool, reply in served.answers:
        text = json.dumps(reply, ensure_ascii=False)
        for path in served.hidden:
            at = text.find(path)
            if at >= 0:
                leaks.setdefault(f"{server} {tool}", text[max(0, at - 80) : at + 120])
    assert not leaks, f"{len(leaks)} tools name a host path:\n" + "\n".join(
        f"{name}: ...{excerpt}..." for name, excerpt in sorted(leaks.items())
    )


def test_paths_out_of_the_workspace_are_refused(served: Served) -> None:
    """Each path out of the workspace is refused with the guard's sentence: a tool error, or, for
    read_multiple_files (which answers each file on its own line), that file's line."""
    assert len(served.refusals) > 200
    accepted = [
        f"{tool} {bad}: {json.dumps(reply)[:200]}"
        for tool, bad, reply in served.refusals
        if bad in OUTSIDE and not refused(reply)
    ]
    assert not accepted, "\n".join(accepted)


def refused(reply: dict[str, Any]) -> bool:
    result = reply.get("result", {})
    text = " ".join(block.get("text", "") for block in result.get("content", []))
    return bool(result.get("isError")) or "Access denied" in text
