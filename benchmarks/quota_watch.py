"""How far a sandboxed command gets past the workspace quota before it is stopped, and what watching costs.

Each writer runs in the real sandbox (bubblewrap) against a fresh workspace with a 100 MB /
20,000-file quota; the overshoot is what the workspace holds after the command was stopped. The
cost is the CPU time this process (the server side: watching and counting) spends during a
command that writes 200 MB under no quota versus under the quota's watch.

    uv run python -m benchmarks.quota_watch
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

WRITERS = {
    "shell loop, 256 KB files": "i=0; while true; do head -c 262144 /dev/zero > c$i; i=$((i+1)); done",
    "python, 1 MB files": "python3 -c \"\nb=b'x'*(1<<20)\nfor i in range(10**6):\n  open(f'g{i}','wb').write(b)\"",
    "python, one growing file": "python3 -c \"\nb=b'x'*(1<<16)\nf=open('big','wb')\nwhile True: f.write(b)\"",
    "python, empty files": "python3 -c \"\nfor i in range(10**7):\n  open(f'f{i}','w').close()\"",
}
COST = "for i in $(seq 1 200); do head -c 1048576 /dev/zero > w$i; done"


async def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="quota-bench-")) / "workspaces"
    os.environ.update(
        GAIA_WORKSPACE_ROOT=str(root), GAIA_WORKSPACE_MAX_MB="100", GAIA_WORKSPACE_MAX_FILES="20000"
    )
    from gaia_kit.core.quota import measure
    from gaia_kit.core.settings import forget_settings
    from gaia_kit.execution.sandbox import Limits, run_sandboxed

    limits = Limits(wall_s=60, cpu_s=60)
    print("| writer | stopped after | workspace holds (quota 100 MB, 20,000 entries) |")
    print("|---|---|---|")
    for name, script in WRITERS.items():
        workspace = root / f"s-{abs(hash(name))}"
        workspace.mkdir(parents=True)
        result = await run_sandboxed(["bash", "-c", script], workspace=workspace, limits=limits)
        used = measure(workspace)
        why = "quota" if result.quota_stop else result.status()
        print(
            f"| {name} | {result.duration_s:.2f} s ({why}) | {used.bytes / 2**20:.1f} MB, {used.files:,} entries |"
        )
        shutil.rmtree(workspace)
    for label, quota in (("no quota", "0"), ("quota watched", "100000")):
        os.environ["GAIA_WORKSPACE_MAX_MB"] = os.environ["GAIA_WORKSPACE_MAX_FILES"] = quota
        forget_settings()
        workspace = root / f"cost-{quota}"
        workspace.mkdir(parents=True)
        cpu, wall = time.process_time(), time.monotonic()
        await run_sandboxed(["bash", "-c", COST], workspace=workspace, limits=limits)
        print(
            f"200 x 1 MB files, {label}: {time.monotonic() - wall:.2f} s wall, "
            f"{(time.process_time() - cpu) * 1000:.0f} ms CPU in the server process"
        )
        shutil.rmtree(workspace)
    shutil.rmtree(root.parent)


if __name__ == "__main__":
    asyncio.run(main())
