"""What a reader sees: each tool's answer as markdown (gaia_kit.core.output.formatted makes json and text of it)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Found = dict[str, Any]


def first_sentences(text: str, count: int) -> str:
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])", text.strip())
    return " ".join(parts[:count])


def search(found: Found) -> str:
    lines = [f"# Wikipedia search: {found['query']}", ""]
    for n, hit in enumerate(found["results"], 1):
        lines.append(f"{n}. **{hit['title']}** ({hit['url']})")
        if hit["snippet"]:
            lines.append(f"   {hit['snippet']}")
    return "\n".join(lines)


def article(found: Found) -> str:
    # The API's plain-text extracts keep wikitext's `== Section ==` headings.
    body = re.sub(r"^(=+) *(.*?) *=+$", lambda m: "#" * len(m[1]) + " " + m[2], found["content"], flags=re.M)
    return f"# {found['title']}\n\nURL: {found['url']}\n\n{body}"


def summary(found: Found) -> str:
    return f"# {found['title']}\n\nURL: {found['url']}\n\n{found['summary']}"


def listing(key: str, heading: str) -> Callable[[Found], str]:
    def render(found: Found) -> str:
        items = found[key]
        lines = [f"# {heading} of {found['title']} ({len(items)})", ""]
        lines += [f"- {item}" for item in items] or ["(none)"]
        return "\n".join(lines)

    return render


def history(found: Found) -> str:
    return (
        f"# {found['title']} as of {found['requested_date']}\n\n"
        f"Revision: {found['revision_id']} ({found['timestamp']})\n"
        f"Permanent link: {found['permanent_link']}\n\n{found['content']}"
    )
