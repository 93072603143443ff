"""The probe server, a program the gateway's tests and benchmarks run as a server (its tools echo,
sleep, burn CPU, hang or crash on demand), and registries that name it."""

from __future__ import annotations

import textwrap
from pathlib import Path

# Run as a file, not with -m: its folder holds nothing that could shadow a module it imports.
PROBE = Path(__file__).with_name("probe_server.py")

PROBE_REGISTRY = """
[servers.probe-a]
command = ["{python}", "{probe}"]
timeout = 4
hung_after_s = 3

[servers.probe-b]
command = ["{python}", "{probe}"]
replicas = 2
stateful = true
"""
"""Two probe servers: probe-a with a short timeout and hang detection, probe-b stateful with two replicas."""


def write_registry(path: Path, entries: str) -> Path:
    """Write a servers.toml to `path`, `{probe}` in `entries` replaced by the probe server's path."""
    path.write_text(textwrap.dedent(entries).replace("{probe}", str(PROBE)))
    return path
