"""The benchmark-copy guard: what the web-facing tools never hand an agent.

Two rules, both configuration (docs/configuration.md, "Benchmark-copy guard"):

- **Mirrors.** A URL whose host and path match GAIA_GUARD_MIRRORS (default: the GAIA dataset's own
  pages and known copies) is refused for every session, whatever the task; a URL nested in another
  (a reader's or an archive's address) counts too.
- **Quotes.** When the session carries its task (`_meta` gaia-env/task, sent by the trainer and
  `gaia-train eval`, never shown to the model), a page, snippet, snapshot or file that quotes the task's
  question is withheld. "Quotes" is shingled containment: the question's word 5-grams
  (GAIA_GUARD_SHINGLE_WORDS) found in the text, as a share of all of them, must reach
  GAIA_GUARD_MIN_CONTAINMENT (0.5) and number at least GAIA_GUARD_MIN_SHARED (6). A page on the same
  topic shares words and a title or two, not half of the question's 5-grams in order.

What is withheld is recorded on the running call (`Call.withheld`, sent to the gateway in the result's
`_meta`, counted per session and in /metrics) and logged here for the operator.
"""

from __future__ import annotations

import logging
import math
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any
from urllib.parse import unquote, urlsplit

from mcp_types import CallToolResult, EmbeddedResource, TextContent, TextResourceContents
from pydantic import ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from gaia_kit.core.calls import current_call
from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import settings

logger = logging.getLogger("gaia_kit.benchmark_guard")

DEFAULT_MIRRORS = (
    "huggingface.co/datasets/gaia-benchmark",
    "huggingface.co/spaces/gaia-benchmark",
    "huggingface.co/api/datasets/gaia-benchmark",
    "hf.co/datasets/gaia-benchmark",
    "datasets-server.huggingface.co/*gaia-benchmark",
    "huggingface.co/datasets/*/*gaia",
)
"""Prefixes of `host/path?query` (case-insensitive, `*` any run of characters; a host also covers its
subdomains): the GAIA dataset, its viewer and API, its leaderboard Space, and copies under other names."""

_ESCAPES = re.compile(r"\\[nrt\"'/\\]|\\u[0-9a-fA-F]{4}")
_SCHEME = re.compile(r"https?://", re.IGNORECASE)
_NESTED_URL = re.compile(r"https?://[^\s\"'<>]+", re.IGNORECASE)


class Withheld(ToolFailure):
    """A result the guard withholds; its sentence says why and what to do instead."""


class GuardSettings(BaseSettings):
    """GAIA_GUARD_* variables; a number out of its range is refused in one sentence that names it."""

    model_config = SettingsConfigDict(env_prefix="GAIA_GUARD_", extra="ignore")

    mirrors: str | None = None
    """Patterns that replace DEFAULT_MIRRORS, comma-separated; `none` for no defaults."""
    extra_mirrors: str = ""
    """Patterns added to the mirrors, comma-separated."""
    shingle_words: int = 5
    min_containment: float = 0.5
    min_shared: int = 6

    @property
    def mirror_patterns(self) -> tuple[str, ...]:
        listed = DEFAULT_MIRRORS if self.mirrors is None else _patterns(self.mirrors)
        return listed + _patterns(self.extra_mirrors)

    @field_validator("shingle_words", "min_containment", "min_shared", mode="before")
    @classmethod
    def _in_range(cls, raw: Any, info: ValidationInfo) -> Any:
        kind, low, high = RANGES[info.field_name]
        text = str(raw).strip()
        if not text:
            return cls.model_fields[info.field_name].default
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            # A ToolFailure passes through pydantic as it is: the sentence names the variable.
            name = f"GAIA_GUARD_{info.field_name.upper()}"
            raise ToolFailure(
                f"{name}={text!r} is not a {kind.__name__} from {low:g} to {high:g}; fix or unset it."
            )
        return value


RANGES: dict[str, tuple[type, float, float]] = {
    "shingle_words": (int, 2, 20),
    "min_containment": (float, 0.05, 1.0),
    "min_shared": (int, 1, 1000),
}


def _patterns(text: str) -> tuple[str, ...]:
    return tuple(p.strip().lower() for p in text.split(",") if p.strip() and p.strip().lower() != "none")


# ---- mirrors -------------------------------------------------------------------------------------


def mirror_pattern(url: str) -> str | None:
    """The GAIA_GUARD_MIRRORS pattern that `url` (or a URL nested in it) matches, or None."""
    decoded = unquote(url)
    nested = [decoded[m.start() :] for m in _SCHEME.finditer(decoded) if m.start() > 0]
    for candidate in [url, *nested[:4]]:
        parts = urlsplit(candidate if "://" in candidate else f"https://{candidate}")
        host = (parts.hostname or "").lower().removeprefix("www.")
        rest = unquote(parts.path or "/").lower() + (
            f"?{unquote(parts.query).lower()}" if parts.query else ""
        )
        for pattern in settings(GuardSettings).mirror_patterns:
            if _matches(host, rest, pattern):
                return pattern
    return None


def _matches(host: str, rest: str, pattern: str) -> bool:
    host_pattern, slash, path_pattern = pattern.partition("/")
    if not (fnmatchcase(host, host_pattern) or host.endswith("." + host_pattern)):
        return False
    return not slash or fnmatchcase(rest, f"/{path_pattern}*")


def refuse_mirror(url: str) -> None:
    """Raise Withheld when `url` is a known copy of the benchmark; every session is refused it."""
    pattern = mirror_pattern(url)
    if pattern is None:
        return
    record("mirror", url, 1.0)
    raise Withheld(mirror_sentence(url, pattern))


def mirror_sentence(url: str, pattern: str) -> str:
    return (
        f"Refused {url[:200]}: it is a known copy of the benchmark (GAIA_GUARD_MIRRORS lists {pattern}), "
        "not a source; look for the answer in the original sources."
    )


# ---- quotes --------------------------------------------------------------------------------------


def words(text: str) -> list[str]:
    """The words of `text` as the guard compares them: NFKC, lower case, JSON and markup escapes undone."""
    text = _ESCAPES.sub(" ", unicodedata.normalize("NFKC", text)).lower()
    return re.findall(r"\w+", text)


@dataclass(frozen=True)
class Question:
    shingles: frozenset[tuple[str, ...]]
    vocabulary: frozenset[str]
    size: int
    needed: int
    """Shared shingles that make a quote: the containment share of `size`, at least GAIA_GUARD_MIN_SHARED."""


@lru_cache(maxsize=64)
def question(text: str) -> Question:
    thresholds = settings(GuardSettings)
    n = thresholds.shingle_words
    found = words(text)
    shingles = frozenset(tuple(found[i : i + n]) for i in range(len(found) - n + 1))
    needed = max(thresholds.min_shared, math.ceil(thresholds.min_containment * len(shingles)))
    return Question(shingles, frozenset(found), len(shingles), needed)


def containment(task: str, text: str) -> float:
    """The share of the task question's word shingles that `text` contains (0 for a question too short
    to screen: one with fewer shingles than GAIA_GUARD_MIN_SHARED)."""
    asked = question(task)
    if asked.size < asked.needed or not asked.size:
        return 0.0
    return _shared(asked, text, stop_at=asked.size) / asked.size


def _shared(asked: Question, text: str, stop_at: int) -> int:
    n = settings(GuardSettings).shingle_words
    found = words(text)
    seen: set[tuple[str, ...]] = set()
    for i in range(len(found) - n + 1):
        if found[i] not in asked.vocabulary:  # most positions: one set lookup, no tuple built
            continue
        shingle = tuple(found[i : i + n])
        if shingle in asked.shingles:
            seen.add(shingle)
            if len(seen) >= stop_at:
                break
    return len(seen)


def quotes_task(text: str) -> float | None:
    """The containment when `text` quotes the calling session's task question, else None."""
    task = current_call().task_question
    if not task or not text:
        return None
    asked = question(task)
    if asked.size < asked.needed:
        return None
    shared = _shared(asked, text, stop_at=asked.size)
    return shared / asked.size if shared >= asked.needed else None


def screen_text(text: str, source: str, what: str = "page") -> None:
    """Raise Withheld when `text` (from `source`, a URL or a name) quotes the calling session's task."""
    overlap = quotes_task(text)
    if overlap is None:
        return
    record("quotes_task", source, overlap)
    raise Withheld(withheld_sentence(what, source, overlap))


def withheld_sentence(what: str, source: str, overlap: float) -> str:
    return (
        f"Withheld: this {what} ({source[:200]}) quotes the task's question ({overlap:.0%} of its phrases), "
        "so it is a copy of the benchmark, not a source; look for the answer elsewhere."
    )


def keep_unquoted(
    items: Iterable[Any], text_of: Any, source_of: Any, what: str = "search result"
) -> list[Any]:
    """The items that neither come from a mirror nor quote the task; the others are recorded as withheld."""
    kept = []
    for item in items:
        source = source_of(item)
        if mirror_pattern(source) is not None:
            record("mirror", source, 1.0)
            continue
        overlap = quotes_task(text_of(item))
        if overlap is not None:
            record("quotes_task", source, overlap)
            continue
        kept.append(item)
    return kept


def record(reason: str, source: str, overlap: float) -> None:
    call = current_call()
    with call._lock:
        call.withheld.append({"reason": reason, "source": source[:500], "overlap": round(overlap, 3)})
    logger.warning(
        "withheld %s", reason, extra={"source": source[:500], "overlap": round(overlap, 3), "tool": call.tool}
    )


def screen_result(result: Any, arguments: dict[str, Any] | None = None) -> Any:
    """A web-facing tool's result, or an isError result in its place when it shows a mirror or its text
    quotes the task. The call's own arguments echoed in the result (a query that is the question) are
    the agent's words, not the page's: they are left out of the comparison."""
    if not isinstance(result, CallToolResult) or result.is_error:
        return result
    text = "\n".join(_texts(result))
    for value in (arguments or {}).values():
        if isinstance(value, str) and len(value) >= 20:
            text = text.replace(value, " ")
    source = _first_url(text) or current_call().tool
    # The first address a result names is the page it shows (a snapshot's "Page URL", a reader's "URL"):
    # a link followed into a mirror is refused here, whatever the task.
    pattern = mirror_pattern(source)
    if pattern is not None:
        record("mirror", source, 1.0)
        sentence = mirror_sentence(source, pattern)
        return CallToolResult(content=[TextContent(type="text", text=sentence)], is_error=True)
    overlap = quotes_task(text)
    if overlap is None:
        return result
    record("quotes_task", source, overlap)
    sentence = withheld_sentence("result", source, overlap)
    return CallToolResult(content=[TextContent(type="text", text=sentence)], is_error=True)


def _texts(result: CallToolResult) -> list[str]:
    found = []
    for block in result.content:
        if isinstance(block, TextContent):
            found.append(block.text)
        elif isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents):
            found.append(block.resource.text)
    if result.structured_content is not None and not found:
        found.append(str(result.structured_content))
    return found


def _first_url(text: str) -> str | None:
    match = _NESTED_URL.search(text)
    return match.group(0).rstrip(".,;)") if match else None


SCREENED_FILE_BYTES = 8 * 1024 * 1024


def screen_file(path: Any, source: str) -> None:
    """Raise Withheld when a downloaded file's text quotes the task (its first SCREENED_FILE_BYTES, read
    as UTF-8: text, HTML, JSON, CSV and uncompressed data files; compressed formats are not read)."""
    if not current_call().task_question:
        return
    with open(path, "rb") as handle:
        head = handle.read(SCREENED_FILE_BYTES)
    screen_text(head.decode("utf-8", errors="ignore"), source, what="file")
