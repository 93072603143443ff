"""One pass over a presentation: per slide its title, text in reading order, tables, notes, images."""

from __future__ import annotations

import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from gaia_kit import PathGuard, ToolFailure, atomic_write
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE, PP_PLACEHOLDER
from pptx.presentation import Presentation as PresentationType

_TITLES = {PP_PLACEHOLDER.TITLE, PP_PLACEHOLDER.CENTER_TITLE, PP_PLACEHOLDER.VERTICAL_TITLE}


@dataclass
class Item:
    kind: str  # text, table, image, chart
    lines: list[tuple[int, str]] = field(default_factory=list)  # (indent level, text) of a text frame
    rows: list[list[str]] = field(default_factory=list)
    path: str = ""


@dataclass
class Slide:
    number: int
    title: str = ""
    hidden: bool = False
    items: list[Item] = field(default_factory=list)
    notes: str = ""


@dataclass
class Extraction:
    slides: list[Slide] = field(default_factory=list)
    images: list[str] = field(default_factory=list)
    properties: dict[str, str] = field(default_factory=dict)
    size: str = ""


def open_presentation(path: Path, raw: str) -> PresentationType:
    """The presentation, or a ToolFailure naming the file and what is wrong with it."""
    if not zipfile.is_zipfile(path):
        raise ToolFailure(f"{raw} is not a PowerPoint presentation: {describe_bytes(path)}.")
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
    if "ppt/presentation.xml" not in names:
        raise ToolFailure(
            f"{raw} is a ZIP archive but not a PowerPoint presentation (it has no ppt/presentation.xml); "
            "unpack it, or use the server for what it holds."
        )
    try:
        return Presentation(str(path))
    except Exception as exc:
        raise ToolFailure(f"{raw} is a damaged presentation and cannot be read ({exc}).") from None


def describe_bytes(path: Path) -> str:
    """What a file that is not the expected format seems to be, from its first bytes."""
    with open(path, "rb") as handle:
        head = handle.read(1 << 20)  # an OLE file names its streams in the first sectors
    if not head:
        return "the file is empty"
    if head.startswith(b"\xd0\xcf\x11\xe0"):
        if "EncryptedPackage".encode("utf-16-le") in head:
            return "it is password-protected (an encrypted Office file); save an unprotected copy first"
        return "it is a legacy Office (OLE) file"
    if head.startswith(b"%PDF"):
        return "it is a PDF; use the documents-pdf-server"
    if head.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html")):
        return "it is an HTML page (perhaps an error page saved under this name)"
    if head.startswith(b"PK"):
        return "it is a damaged or truncated ZIP archive"
    return f"it starts with {head[:16]!r}, which is no known document format"


def extract(
    presentation: PresentationType, guard: PathGuard, stem: str, *, images: bool, notes: bool
) -> Extraction:
    result = Extraction(properties=_properties(presentation))
    if presentation.slide_width and presentation.slide_height:
        result.size = f"{presentation.slide_width / 914400:.2f} x {presentation.slide_height / 914400:.2f} in"
    folder: list[Path] = []  # created on the first image only
    for number, slide in enumerate(presentation.slides, start=1):
        entry = Slide(number=number, hidden=slide._element.get("show") == "0")
        for shape in _reading_order(slide.shapes):
            _add_shape(shape, entry, result, guard, stem, folder, images)
        if notes and slide.has_notes_slide:
            entry.notes = (slide.notes_slide.notes_text_frame.text or "").strip()
        result.slides.append(entry)
    return result


def _reading_order(shapes) -> list:
    """Top to bottom, then left to right; shapes without a position keep their file order at the end."""
    placed = [s for s in shapes if s.top is not None and s.left is not None]
    unplaced = [s for s in shapes if s.top is None or s.left is None]
    return sorted(placed, key=lambda s: (s.top, s.left)) + unplaced


def _add_shape(shape, slide: Slide, result: Extraction, guard, stem, folder, images: bool) -> None:
    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        for inner in _reading_order(shape.shapes):
            _add_shape(inner, slide, result, guard, stem, folder, images)
        return
    if shape.is_placeholder and shape.placeholder_format.type in _TITLES and shape.has_text_frame:
        if not slide.title:
            slide.title = shape.text_frame.text.strip()
            return
    if getattr(shape, "has_table", False) and shape.has_table:
        rows = [[cell.text.strip() for cell in row.cells] for row in shape.table.rows]
        slide.items.append(Item("table", rows=rows))
    elif getattr(shape, "has_chart", False) and shape.has_chart:
        slide.items.append(Item("chart", lines=_chart_lines(shape.chart)))
    elif shape.shape_type == MSO_SHAPE_TYPE.PICTURE or hasattr(shape, "image"):
        if images:
            slide.items.append(Item("image", path=_save_image(shape, slide, result, guard, stem, folder)))
    elif shape.has_text_frame:
        lines = [(p.level, "".join(r.text for r in p.runs).strip()) for p in shape.text_frame.paragraphs]
        lines = [(level, text) for level, text in lines if text]
        if lines:
            slide.items.append(Item("text", lines=lines))


def _chart_lines(chart) -> list[tuple[int, str]]:
    title = chart.chart_title.text_frame.text if chart.has_title else ""
    lines = [(0, f"Chart: {title or chart.chart_type}")]
    try:
        categories = [str(c) for c in chart.plots[0].categories]
    except (IndexError, AttributeError):
        categories = []
    for plot in chart.plots:
        for series in plot.series:
            values = list(series.values)
            pairs = zip(categories, values, strict=False) if categories else enumerate(values, 1)
            lines.append((1, f"{series.name}: " + ", ".join(f"{c}={v}" for c, v in pairs)))
    return lines


def _save_image(shape, slide: Slide, result: Extraction, guard, stem, folder: list[Path]) -> str:
    if not folder:
        target_dir = guard.resolve(f"pptx_images/{stem}", write=True)
        target_dir.mkdir(parents=True, exist_ok=True)
        folder.append(target_dir)
    image = shape.image
    count = sum(1 for item in slide.items if item.kind == "image") + 1
    target = folder[0] / f"slide{slide.number}_image{count}.{image.ext}"
    atomic_write(target, image.blob)
    shown = guard.display(target)
    result.images.append(shown)
    return shown


def _properties(presentation: PresentationType) -> dict[str, str]:
    core = presentation.core_properties
    values = {
        "Title": core.title,
        "Author": core.author,
        "Subject": core.subject,
        "Created": core.created.isoformat() if core.created else "",
        "Modified": core.modified.isoformat() if core.modified else "",
    }
    return {key: str(value) for key, value in values.items() if value}
