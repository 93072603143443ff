"""What opening a file beneath its root costs, against a plain open by name.

    uv run python -m benchmarks.open_beneath [--opens 20000]

Opens one file three directories deep, in one run, each way: `open()` by the full name (what the
servers did before paths were resolved without a race), `open_beneath` with openat2, and
`open_beneath` with the component walk (kernels without openat2, and absolute links). It prints
microseconds per open and the ratios to the plain open; docs/benchmarks.md keeps a run.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from gaia_kit.core import openat
from gaia_kit.core.openat import open_beneath


def per_open(opens: int, open_once: Callable[[], int]) -> float:
    started = time.perf_counter()
    for _ in range(opens):
        os.close(open_once())
    return (time.perf_counter() - started) / opens * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opens", type=int, default=20_000)
    opens = parser.parse_args().opens
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "a" / "b" / "c").mkdir(parents=True)
        (root / "a" / "b" / "c" / "file.txt").write_text("x")
        full = str(root / "a" / "b" / "c" / "file.txt")
        plain = per_open(opens, lambda: os.open(full, os.O_RDONLY))
        openat._openat2_works = None
        kernel = per_open(opens, lambda: open_beneath(root, "a/b/c/file.txt"))
        if not openat._openat2_works:
            print("openat2 is not available here: the second row is the walk too")
        openat._openat2_works = False
        walk = per_open(opens, lambda: open_beneath(root, "a/b/c/file.txt"))
    print(f"{'way':<28}{'µs per open':>12}{'x plain':>10}")
    for name, cost in (
        ("open() by name", plain),
        ("open_beneath, openat2", kernel),
        ("open_beneath, walk", walk),
    ):
        print(f"{name:<28}{cost:>12.1f}{cost / plain:>10.1f}")


if __name__ == "__main__":
    main()
