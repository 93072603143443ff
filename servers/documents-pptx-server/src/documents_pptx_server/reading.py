"""One pass over a presentation: per slide its title, text in reading order, tables, notes, images."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gaia_kit import PathGuard
from gaia_kit.documents.office import ImageFolder, core_properties, open_package
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
    return open_package(
        path,
        raw,
        Presentation,
        kind="PowerPoint presentation",
        part="ppt/presentation.xml",
        short="presentation",
    )


def extract(
    presentation: PresentationType, guard: PathGuard, stem: str, *, images: bool, notes: bool
) -> Extraction:
    result = Extraction(properties=core_properties(presentation.core_properties))
    if presentation.slide_width and presentation.slide_height:
        result.size = f"{presentation.slide_width / 914400:.2f} x {presentation.slide_height / 914400:.2f} in"
    folder = ImageFolder(guard, f"pptx_images/{stem}")
    for number, slide in enumerate(presentation.slides, start=1):
        entry = Slide(number=number, hidden=slide._element.get("show") == "0")
        for shape in _reading_order(slide.shapes):
            _add_shape(shape, entry, result, folder, images)
        if notes and slide.has_notes_slide:
            entry.notes = (slide.notes_slide.notes_text_frame.text or "").strip()
        result.slides.append(entry)
    return result


def _reading_order(shapes) -> list:
    """Top to bottom, then left to right; shapes without a position keep their file order at the end."""
    placed = [s for s in shapes if s.top is not None and s.left is not None]
    unplaced = [s for s in shapes if s.top is None or s.left is None]
    return sorted(placed, key=lambda s: (s.top, s.left)) + unplaced


def _add_shape(shape, slide: Slide, result: Extraction, folder: ImageFolder, images: bool) -> None:
    if shape.shape_type == MSO_SHAPE_TYPE.GROUP:
        for inner in _reading_order(shape.shapes):
            _add_shape(inner, slide, result, folder, images)
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
            slide.items.append(Item("image", path=_save_image(shape, slide, result, folder)))
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


def _save_image(shape, slide: Slide, result: Extraction, folder: ImageFolder) -> str:
    image = shape.image
    count = sum(1 for item in slide.items if item.kind == "image") + 1
    shown = folder.save(f"slide{slide.number}_image{count}.{image.ext}", image.blob)
    result.images.append(shown)
    return shown
