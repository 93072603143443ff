"""Readable text from fetched documents: web pages to markdown, PDFs to page text.

One place for this because the page reader, the offline corpus, the archive reader and the
paper downloader all turn the same kinds of bytes into text an agent reads.
"""

from __future__ import annotations

import html as html_lib
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pymupdf
import trafilatura

from gaia_kit.core.errors import ToolFailure
from gaia_kit.documents.text import sniff_encoding


@dataclass(frozen=True)
class Extracted:
    title: str
    text: str
    kind: str  # "html", "pdf" or "text"
    pages: int = 0  # PDFs only: the page count of the whole document


def html_to_markdown(page: str, url: str | None = None, *, images: bool = False) -> Extracted:
    """The main content of a page as markdown (links and tables kept, navigation dropped)."""
    text = trafilatura.extract(
        page,
        url=url,
        output_format="markdown",
        include_links=True,
        include_tables=True,
        include_images=images,
        favor_recall=True,
    )
    # Short or unusual pages defeat boilerplate removal; all their visible text beats nothing.
    if not text or not text.strip():
        text = visible_text(page)
    return Extracted(title=html_title(page), text=text.strip(), kind="html")


def html_title(page: str) -> str:
    found = re.search(r"<title[^>]*>(.*?)</title>", page, flags=re.I | re.S)
    if found:
        return " ".join(html_lib.unescape(found.group(1)).split())
    metadata = trafilatura.extract_metadata(page)
    return (metadata.title or "") if metadata else ""


def visible_text(page: str) -> str:
    parser = _VisibleText()
    parser.feed(page)
    parser.close()
    return re.sub(r"\n{3,}", "\n\n", "".join(parser.parts)).strip()


class _VisibleText(HTMLParser):
    _hidden = {"script", "style", "noscript", "template", "head"}
    _blocks = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden_depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._hidden:
            self._hidden_depth += 1
        elif tag in self._blocks:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._hidden and self._hidden_depth:
            self._hidden_depth -= 1
        elif tag in self._blocks:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._hidden_depth and data.strip():
            self.parts.append(" ".join(data.split()) + " ")


def pdf_to_text(source: Path | bytes, max_pages: int, *, name: str = "the PDF") -> Extracted:
    """The text of the first max_pages pages, each under a '--- Page N ---' line."""
    try:
        if isinstance(source, Path):
            document = pymupdf.open(source)
        else:
            document = pymupdf.open(stream=source, filetype="pdf")
    except (pymupdf.FileDataError, RuntimeError, ValueError):
        raise ToolFailure(f"{name} is not a readable PDF; check that the file or link is a PDF.") from None
    with document:
        pages = document.page_count
        shown = min(pages, max_pages)
        parts = [f"--- Page {n + 1} ---\n{document[n].get_text().strip()}" for n in range(shown)]
        title = (document.metadata or {}).get("title") or ""
    return Extracted(title=title, text="\n\n".join(parts), kind="pdf", pages=pages)


def document_text(
    body: bytes, content_type: str, url: str | None = None, *, max_pages: int = 50, images: bool = False
) -> Extracted:
    """Dispatch on what the bytes are (content type first, then the bytes themselves)."""
    kind = content_type.split(";")[0].strip().lower()
    if kind == "application/pdf" or body.startswith(b"%PDF-"):
        return pdf_to_text(body, max_pages, name=url or "the PDF")
    encoding = _charset(content_type) or sniff_encoding(body[:65536])
    if encoding is None:
        raise ToolFailure(
            f"{url or 'The document'} is binary ({kind or 'unknown type'}), not a page or a PDF; "
            "save it with a download tool and open it with the matching document tool."
        )
    text = body.decode(encoding, errors="replace")
    if "html" in kind or _looks_like_html(text):
        return html_to_markdown(text, url, images=images)
    return Extracted(title="", text=text, kind="text")


def _charset(content_type: str) -> str | None:
    found = re.search(r"charset=([\w.-]+)", content_type, flags=re.I)
    return found.group(1) if found else None


def _looks_like_html(text: str) -> bool:
    head = text[:1024].lstrip().lower()
    return head.startswith(("<!doctype html", "<html")) or "<body" in head
