"""The one interface the tools read Wikipedia through, whichever backend answers.

Two implementations: the live MediaWiki action API (mediawiki.py), for every language, and a
Wikipedia ZIM (offline.py), for its own language with no network. Both answer with the records
below and fail with the same sentences, so a tool never asks which one it has (backend.py chooses).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from typing import NoReturn, Protocol

from gaia_kit import ToolFailure


@dataclass(frozen=True)
class Hit:
    title: str
    pageid: int | None
    snippet: str
    url: str


@dataclass(frozen=True)
class Text:
    """An article's text (or its introduction), under the title it was found by."""

    title: str
    pageid: int | None
    url: str
    content: str


@dataclass(frozen=True)
class Revision:
    title: str
    requested_date: str
    revision_id: int
    timestamp: str
    permanent_link: str
    content: str


class Wiki(Protocol):
    async def search(self, query: str, limit: int) -> list[Hit]: ...

    async def content(self, title: str, *, auto_suggest: bool, redirect: bool, intro_only: bool) -> Text: ...

    async def introduction(self, title: str, *, auto_suggest: bool, redirect: bool) -> Text:
        """The introduction as plain text (no links), for summaries."""

    async def categories(self, title: str) -> tuple[str, list[str]]:
        """The article's title and its visible categories."""

    async def links(self, title: str) -> tuple[str, list[str]]:
        """The article's title and the titles of the articles it links to."""

    async def history(self, title: str, until: str, auto_suggest: bool) -> Revision:
        """The revision in force at `until` (an end_of timestamp)."""


def require_title(title: str) -> None:
    if not title.strip():
        raise ToolFailure("The title is empty; pass an article title (find one with search_wikipedia).")


def require_query(query: str) -> None:
    if not query.strip():
        raise ToolFailure("The search query is empty; pass some words to search for.")


def missing(title: str, language: str, hits: list[Hit]) -> NoReturn:
    """Fail for a missing article, naming the closest titles a search found."""
    if hits:
        names = "; ".join(hit.title for hit in hits)
        raise ToolFailure(
            f"No Wikipedia ({language}) article is titled {title!r}; did you mean one of: {names}? "
            f"Call again with one of these titles."
        )
    raise ToolFailure(
        f"No Wikipedia ({language}) article is titled {title!r}, and a search finds nothing close; try other words."
    )


def end_of(date: str) -> str:
    """'YYYY/MM/DD' or 'YYYY/MM' (or with dashes) -> the last second of that day, as the API wants it."""
    match = re.fullmatch(r"\s*(\d{4})[/-](\d{1,2})(?:[/-](\d{1,2}))?\s*", date)
    if not match:
        raise ToolFailure(f"The date {date!r} is not YYYY/MM/DD or YYYY/MM; write it like 2023/06/15.")
    year, month = int(match[1]), int(match[2])
    if not 1 <= month <= 12:
        raise ToolFailure(f"The date {date!r} has no month {month}; write it like 2023/06/15.")
    last = calendar.monthrange(year, month)[1]
    day = int(match[3]) if match[3] else last
    if not 1 <= day <= last:
        raise ToolFailure(f"The date {date!r} has no day {day} in that month; write it like 2023/06/15.")
    return f"{year:04d}-{month:02d}-{day:02d}T23:59:59Z"
