"""The answer-size table of docs/tools.md: characters of each tool's answer on the demo tasks and
on realistic local inputs. benchmarks/answer_sizes.py measures them into answer_sizes.json beside
this module; a test measures again and compares, so the table stays true.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SIZES_FILE = Path(__file__).with_name("answer_sizes.json")


def load() -> list[dict[str, Any]]:
    return json.loads(SIZES_FILE.read_text()) if SIZES_FILE.exists() else []


def render(rows: list[dict[str, Any]]) -> list[str]:
    """The docs/tools.md section."""
    if not rows:
        return []
    out = [
        "## Answer sizes",
        "",
        "Characters of each answer (what an episode pays in tokens, about 4 characters a token), on the",
        "demo tasks (`gaia-train demo-data`) and on realistic local inputs. Measured by",
        "`uv run python -m benchmarks.answer_sizes`; a test measures again and compares. Tools whose",
        "answers depend on the web, a search engine or an LLM are not listed: their size is what the",
        "page, the engine or the model returns, capped by `GAIA_MAX_OUTPUT_CHARS` and paged.",
        "",
        "| server | tool | input | characters |",
        "|---|---|---|---|",
    ]
    for row in rows:
        out.append(f"| {row['server']} | `{row['tool']}` | {row['input']} | {row['chars']:,} |")
    return [*out, ""]
