"""Bounded text output: every result is capped and says how to get the next page."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from gaia_kit.core.settings import get_settings


def page(
    text: str,
    start_index: int = 0,
    max_length: int | None = None,
    *,
    start_param: str = "start_index",
) -> str:
    """Return one window of `text`, with a footer naming the argument that reads on."""
    limit = max_length if max_length and max_length > 0 else get_settings().max_output_chars
    limit = min(limit, get_settings().max_output_chars)
    total = len(text)
    start = max(0, start_index)
    if start >= total and total:
        return f"[No more content: start_index {start} is past the end ({total} characters).]"
    window = text[start : start + limit]
    end = start + len(window)
    if end >= total:
        return window
    return (
        f"{window}\n\n[Output truncated: characters {start}-{end} of {total}. "
        f"Call again with {start_param}={end} to read more.]"
    )


def truncate(text: str, limit: int, *, note: str = "") -> str:
    """Cut `text` to `limit` characters, saying so, for outputs that cannot be paged."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n\n[Output truncated at {limit} of {len(text)} characters.{(' ' + note) if note else ''}]"


def formatted(found: dict[str, Any], output_format: str, markdown: Callable[[dict[str, Any]], str]) -> str:
    """`found` as JSON, as `markdown(found)`, or ("text") that markdown without heading marks and bold."""
    if output_format == "json":
        return json.dumps(found, indent=2, ensure_ascii=False)
    text = markdown(found)
    if output_format == "text":
        text = re.sub(r"^#+ |\*\*", "", text, flags=re.M)
    return text
