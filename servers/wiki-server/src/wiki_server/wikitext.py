"""Readable text from wikitext (a past revision's source), with mwparserfromhell."""

from __future__ import annotations

import re

import mwparserfromhell

_NON_TEXT_LINKS = {"file", "image", "media", "category"}
_HEADING = "\ue000"  # a private-use character: never in an article, kept by strip_code


def render_wikitext(wikitext: str) -> str:
    """Headings kept, templates, refs, files and markup removed."""
    code = mwparserfromhell.parse(wikitext)
    for ref in code.filter_tags(matches=lambda node: str(node.tag).strip().lower() == "ref"):
        code.remove(ref)
    for link in code.filter_wikilinks():
        target = str(link.title).strip()  # [[:Category:X]] is a link in the text, [[Category:X]] is not
        if not target.startswith(":") and target.split(":")[0].strip().lower() in _NON_TEXT_LINKS:
            code.remove(link)
    # '#' opens a numbered list in wikitext, so headings wait behind a marker until the markup is gone.
    for heading in code.filter_headings():
        code.replace(heading, f"\n{_HEADING}{heading.level}{_HEADING}{heading.title.strip_code().strip()}\n")
    text = code.strip_code(normalize=True, collapse=True)
    text = re.sub(rf"{_HEADING}(\d){_HEADING}", lambda m: "#" * int(m[1]) + " ", text)
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"^ (?=\S)", "- ", text, flags=re.M)  # list items: strip_code leaves a space where '*' was
    return re.sub(r"\n{3,}", "\n\n", text).strip()
