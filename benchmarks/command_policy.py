"""Command policy: the cost of parsing a command into shell words, by shape and length.

uv run python -m benchmarks.command_policy [--sizes 25000,100000,400000]

The terminal servers parse every command before it runs, so the parse must grow linearly with
the length: across lengths x16, a ratio near 16 is linear and near 256 quadratic. The parse the
policy uses (`shell_tokens`, one regex pass) runs beside the standard library's `shlex`, which
the policy used before and which grows a token one character at a time. Commands above
GAIA_TERMINAL_MAX_COMMAND_BYTES (default 65,536) are refused before any parse.
"""

import argparse
import shlex
import time
from collections.abc import Callable

from gaia_kit.execution.policy import shell_tokens

SHAPES: dict[str, Callable[[int], str]] = {
    "one long word": lambda n: "echo " + "a" * n,
    "quoted text": lambda n: "echo '" + "a;" * (n // 2) + "'",
    "assignments": lambda n: "A=1 " * (n // 4) + "ls",
    "separators": lambda n: "ls;" * (n // 3),
    "one operator run": lambda n: "|" * n + "ls",
}


def shlex_words(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()\n")
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def seconds(parse: Callable[[str], object], command: str, repeats: int = 3) -> float:
    """Best of `repeats`: the machine's noise only ever adds time."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        parse(command)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="25000,100000,400000")
    sizes = [int(size) for size in parser.parse_args().sizes.split(",")]
    heads = " | ".join(f"{size:,} chars" for size in sizes)
    print(f"| shape | parser | {heads} | last / first (lengths x{sizes[-1] / sizes[0]:.0f}) |")
    print("|---|---|" + "---:|" * (len(sizes) + 1))
    for name, make in SHAPES.items():
        commands = [make(size) for size in sizes]
        for label, parse in (("shell_tokens", shell_tokens), ("shlex", shlex_words)):
            times = [seconds(parse, command) for command in commands]
            cells = " | ".join(f"{t * 1000:.1f} ms" for t in times)
            print(f"| {name} | {label} | {cells} | {times[-1] / times[0]:.0f}x |", flush=True)


if __name__ == "__main__":
    main()
