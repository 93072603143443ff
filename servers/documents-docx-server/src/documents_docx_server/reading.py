"""One pass over a Word document: blocks in reading order, and everything around the body.

The body is walked element by element (paragraphs and tables interleaved as in the file), so
headings, list items, tables and images keep their order. Footnotes and comments live in parts
python-docx has no API for; they are read from their XML directly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import docx
from docx.document import Document
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.oxml.ns import qn
from docx.table import Table
from docx.text.hyperlink import Hyperlink
from docx.text.paragraph import Paragraph
from docx.text.run import Run
from gaia_kit import PathGuard
from gaia_kit.documents.office import ImageFolder, core_properties, open_package
from lxml import etree

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_HEADING = re.compile(r"^heading\s*(\d)$", re.IGNORECASE)


@dataclass
class Block:
    kind: str  # heading, paragraph, list_item, table, image
    text: str = ""  # with markdown marks (bold, italic, links, [^n])
    plain: str = ""  # the same text without marks
    level: int = 0
    ordered: bool = False
    rows: list[list[str]] = field(default_factory=list)


@dataclass
class Extraction:
    blocks: list[Block] = field(default_factory=list)
    headers: list[str] = field(default_factory=list)
    footers: list[str] = field(default_factory=list)
    footnotes: list[tuple[str, str]] = field(default_factory=list)
    comments: list[tuple[str, str]] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    sections: int = 0


def open_document(path: Path, raw: str) -> Document:
    """The document, or a ToolFailure naming the file and what is wrong with it."""
    return open_package(
        path, raw, docx.Document, kind="Word document", part="word/document.xml", short="Word document"
    )


def extract(
    document: Document, guard: PathGuard, stem: str, *, images: bool, tables: bool, headers: bool
) -> Extraction:
    result = Extraction(properties=_properties(document), sections=len(document.sections))
    saved = _save_images(document, guard, stem) if images else {}
    result.images = list(dict.fromkeys(saved.values()))
    numbering = _numbering_formats(document)
    for child in document.element.body.iterchildren():
        if child.tag == qn("w:p"):
            block = _paragraph(Paragraph(child, document), numbering, saved)
            if block is not None:
                result.blocks.append(block)
            result.blocks += [Block("image", text=p, plain=p) for p in _images_in(child, saved) if images]
        elif child.tag == qn("w:tbl") and tables:
            result.blocks.append(Block("table", rows=_rows(Table(child, document))))
    if headers:
        result.headers, result.footers = _headers_footers(document)
    result.footnotes = _notes(document, RT.FOOTNOTES, "footnote")
    result.comments = _comments(document)
    return result


def _paragraph(paragraph: Paragraph, numbering: dict[tuple[str, str], str], saved: dict) -> Block | None:
    text = _inline_text(paragraph, marks=True).strip()
    if not text:
        return None
    plain = _inline_text(paragraph, marks=False).strip()
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    match = _HEADING.match(style)
    if match:
        return Block("heading", text=text, plain=plain, level=int(match.group(1)))
    if style == "Title":
        return Block("heading", text=text, plain=plain, level=1)
    num = paragraph._p.find(f"{W}pPr/{W}numPr")
    if num is not None or style.startswith("List"):
        level = 0
        ordered = "Number" in style
        if num is not None:
            ilvl = num.find(f"{W}ilvl")
            num_id = num.find(f"{W}numId")
            level = int(ilvl.get(f"{W}val", "0")) if ilvl is not None else 0
            key = (num_id.get(f"{W}val", "") if num_id is not None else "", str(level))
            ordered = numbering.get(key, "bullet" if not ordered else "decimal") != "bullet"
        return Block("list_item", text=text, plain=plain, level=level, ordered=ordered)
    return Block("paragraph", text=text, plain=plain)


def _inline_text(paragraph: Paragraph, marks: bool) -> str:
    """Runs with bold/italic marks, hyperlinks as links, footnote references as [^n] (or plain)."""
    parts = []
    for item in paragraph.iter_inner_content():
        if isinstance(item, Hyperlink):
            label = item.text.strip()
            linked = marks and item.address and label
            parts.append(f"[{label}]({item.address})" if linked else item.text)
        elif isinstance(item, Run):
            parts.append(_run_text(item, marks))
    return "".join(parts)


def _run_text(run: Run, marks: bool) -> str:
    pieces = []
    for node in run._r.iterchildren():
        if node.tag == qn("w:t"):
            pieces.append(node.text or "")
        elif node.tag == qn("w:tab"):
            pieces.append("\t")
        elif node.tag in (qn("w:br"), qn("w:cr")):
            pieces.append("\n")
        elif node.tag == qn("w:footnoteReference"):
            pieces.append(f"[^{node.get(qn('w:id'))}]" if marks else f"[{node.get(qn('w:id'))}]")
    text = "".join(pieces)
    if not marks or not text.strip():
        return text
    core = text.strip()
    if run.bold and run.italic:
        core = f"***{core}***"
    elif run.bold:
        core = f"**{core}**"
    elif run.italic:
        core = f"*{core}*"
    lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
    return f"{lead}{core}{trail}"


def _numbering_formats(document: Document) -> dict[tuple[str, str], str]:
    """(numId, level) -> number format ('bullet', 'decimal', ...), to tell bullets from numbers."""
    try:
        root = document.part.numbering_part.element
    except (KeyError, NotImplementedError):
        return {}
    abstract = {
        a.get(f"{W}abstractNumId"): {
            lvl.get(f"{W}ilvl"): (
                lvl.find(f"{W}numFmt").get(f"{W}val") if lvl.find(f"{W}numFmt") is not None else ""
            )
            for lvl in a.iter(f"{W}lvl")
        }
        for a in root.iter(f"{W}abstractNum")
    }
    formats = {}
    for num in root.iter(f"{W}num"):
        ref = num.find(f"{W}abstractNumId")
        levels = abstract.get(ref.get(f"{W}val") if ref is not None else None, {})
        for level, fmt in levels.items():
            formats[(num.get(f"{W}numId"), level)] = fmt
    return formats


def _rows(table: Table) -> list[list[str]]:
    rows = []
    for row in table.rows:
        cells = []
        for cell in row.cells:
            text = "\n".join(p.text for p in cell.paragraphs).strip()
            for nested in cell.tables:  # a table inside a cell: its text, row by row
                text += " " + " / ".join(" | ".join(r) for r in _rows(nested))
            cells.append(text.strip())
        rows.append(cells)
    return rows


def _save_images(document: Document, guard: PathGuard, stem: str) -> dict[str, str]:
    """Save every image the body refers to into the workspace; rId -> displayed path."""
    saved: dict[str, str] = {}
    folder = ImageFolder(guard, f"docx_images/{stem}")
    seen: dict[str, str] = {}
    for rel_id, rel in document.part.rels.items():
        if rel.is_external or rel.reltype != RT.IMAGE:
            continue
        part = rel.target_part
        name = Path(str(part.partname)).name
        if name not in seen:
            seen[name] = folder.save(name, part.blob)
        saved[rel_id] = seen[name]
    return saved


def _images_in(element: etree._Element, saved: dict[str, str]) -> list[str]:
    blip = "{http://schemas.openxmlformats.org/drawingml/2006/main}blip"
    embed = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}embed"
    return [saved[b.get(embed)] for b in element.iter(blip) if b.get(embed) in saved]


def _headers_footers(document: Document) -> tuple[list[str], list[str]]:
    headers: dict[str, None] = {}
    footers: dict[str, None] = {}
    for section in document.sections:
        for kind, into in (("header", headers), ("footer", footers)):
            for variant in ("", "first_page_", "even_page_"):
                part = getattr(section, f"{variant}{kind}")
                if part.is_linked_to_previous:
                    continue
                text = "\n".join(p.text for p in part.paragraphs if p.text.strip())
                for table in part.tables:
                    text += "\n" + "\n".join(" | ".join(r) for r in _rows(table))
                if text.strip():
                    into[text.strip()] = None
    return list(headers), list(footers)


def _related_xml(document: Document, reltype: str) -> etree._Element | None:
    for rel in document.part.rels.values():
        if rel.reltype == reltype and not rel.is_external:
            return etree.fromstring(rel.target_part.blob)
    return None


def _text_of(element: etree._Element) -> str:
    paragraphs = ["".join(t.text or "" for t in p.iter(f"{W}t")) for p in element.iter(f"{W}p")]
    return "\n".join(p for p in paragraphs if p.strip()).strip()


def _notes(document: Document, reltype: str, tag: str) -> list[tuple[str, str]]:
    root = _related_xml(document, reltype)
    if root is None:
        return []
    notes = []
    for note in root.iter(f"{W}{tag}"):
        if note.get(f"{W}type") in ("separator", "continuationSeparator", "continuationNotice"):
            continue
        text = _text_of(note)
        if text:
            notes.append((note.get(f"{W}id", ""), text))
    return notes


def _comments(document: Document) -> list[tuple[str, str]]:
    root = _related_xml(document, RT.COMMENTS)
    if root is None:
        return []
    return [(c.get(f"{W}author", "unknown"), _text_of(c)) for c in root.iter(f"{W}comment") if _text_of(c)]


def _properties(document: Document) -> dict[str, str]:
    properties = core_properties(document.core_properties)
    if document.core_properties.last_modified_by:
        properties["Last modified by"] = str(document.core_properties.last_modified_by)
    return properties
