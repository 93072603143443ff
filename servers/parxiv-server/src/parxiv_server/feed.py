"""The arXiv export API's Atom feed, read with the standard library's ElementTree."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from typing import Any

from gaia_kit import ToolFailure

NS = {
    "atom": "http://www.w3.org/2005/Atom",
    "arxiv": "http://arxiv.org/schemas/atom",
    "opensearch": "http://a9.com/-/spec/opensearch/1.1/",
}
NEW_ID = re.compile(r"\d{4}\.\d{4,5}(v\d+)?")
OLD_ID = re.compile(r"[a-z][a-z-]*(\.[A-Z]{2})?/\d{7}(v\d+)?")


@dataclass
class Paper:
    id: str
    """The arXiv id with its version, e.g. 2301.07041v2."""
    title: str
    authors: list[str]
    summary: str
    published: str
    updated: str
    primary_category: str
    categories: list[str] = field(default_factory=list)
    abs_url: str = ""
    pdf_url: str = ""
    doi: str = ""
    journal_ref: str = ""
    comment: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Feed:
    total: int
    start: int
    papers: list[Paper]


def normalise_id(raw: str) -> str:
    """'arxiv:2301.07041', 'https://arxiv.org/abs/2301.07041v2', '2301.07041.pdf' -> the bare id."""
    text = raw.strip()
    text = re.sub(r"^(arxiv:|https?://(export\.)?arxiv\.org/(abs|pdf)/)", "", text, flags=re.I)
    text = re.sub(r"\.pdf$", "", text)
    if NEW_ID.fullmatch(text) or OLD_ID.fullmatch(text):
        return text
    raise ToolFailure(
        f"{raw!r} is not an arXiv id; pass one like '2301.07041', 'arxiv:2301.07041v2' or 'hep-th/9901001' "
        f"(search_papers finds ids)."
    )


def parse(xml: bytes) -> Feed:
    try:
        root = ET.fromstring(xml)
    except ET.ParseError:
        raise ToolFailure(
            "The arXiv API answered with something other than an Atom feed; check ARXIV_API_URL or try again later."
        ) from None
    entries = root.findall("atom:entry", NS)
    # The API reports a bad query as a feed whose one entry is titled Error, its reason in the summary.
    if len(entries) == 1 and "/api/errors" in _text(entries[0], "atom:id"):
        reason = _text(entries[0], "atom:summary") or "no reason given"
        raise ToolFailure(f"arXiv refused the query ({reason}); fix the query and try again.")
    papers = [_paper(entry) for entry in entries]
    papers = [paper for paper in papers if paper.title]  # an unknown id comes back as an empty entry
    total = _int(root.findtext("opensearch:totalResults", "0", NS))
    return Feed(total, _int(root.findtext("opensearch:startIndex", "0", NS)), papers)


def _paper(entry: ET.Element) -> Paper:
    abs_url = _text(entry, "atom:id")
    pdf_url = ""
    for link in entry.findall("atom:link", NS):
        if link.get("title") == "pdf" or link.get("type") == "application/pdf":
            pdf_url = link.get("href", "")
        elif link.get("rel") == "alternate":
            abs_url = link.get("href", abs_url)
    primary = entry.find("arxiv:primary_category", NS)
    return Paper(
        id=abs_url.rstrip("/").split("/abs/")[-1],
        title=_text(entry, "atom:title"),
        authors=[_squash(a.findtext("atom:name", "", NS)) for a in entry.findall("atom:author", NS)],
        summary=_text(entry, "atom:summary"),
        published=_text(entry, "atom:published"),
        updated=_text(entry, "atom:updated"),
        primary_category=primary.get("term", "") if primary is not None else "",
        categories=[c.get("term", "") for c in entry.findall("atom:category", NS)],
        abs_url=abs_url,
        pdf_url=pdf_url,
        doi=_text(entry, "arxiv:doi"),
        journal_ref=_text(entry, "arxiv:journal_ref"),
        comment=_text(entry, "arxiv:comment"),
    )


def _text(element: ET.Element, path: str) -> str:
    return _squash(element.findtext(path, "", NS))


def _squash(text: str) -> str:
    """Titles and abstracts come wrapped at fixed columns: one line, single spaces."""
    return re.sub(r"\s+", " ", text).strip()


def _int(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0
