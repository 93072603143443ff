"""Markdown, JSON and plain text from one Extraction; every slide keeps its number."""

from __future__ import annotations

import json

from gaia_kit.documents.markdown import markdown_table

from .reading import Extraction, Item, Slide


def structure(result: Extraction) -> dict[str, int]:
    items = [item for slide in result.slides for item in slide.items]
    return {
        "slides": len(result.slides),
        "hidden_slides": sum(slide.hidden for slide in result.slides),
        "text_frames": sum(item.kind == "text" for item in items),
        "tables": sum(item.kind == "table" for item in items),
        "charts": sum(item.kind == "chart" for item in items),
        "images": len(result.images),
        "slides_with_notes": sum(bool(slide.notes) for slide in result.slides),
    }


def _item_markdown(item: Item) -> str:
    if item.kind == "table":
        return markdown_table(item.rows)
    if item.kind == "image":
        return f"![image]({item.path})"
    if len(item.lines) == 1 and item.kind == "text":
        return item.lines[0][1]
    return "\n".join(f"{'  ' * level}- {text}" for level, text in item.lines)


def _slide_heading(slide: Slide) -> str:
    hidden = " (hidden)" if slide.hidden else ""
    return f"Slide {slide.number}{hidden}" + (f": {slide.title}" if slide.title else "")


def as_markdown(name: str, shown: str, result: Extraction, include_structure: bool, notes: list[str]) -> str:
    parts = [f"# {name}", "", f"Path: {shown}"]
    parts += [f"{key}: {value}" for key, value in result.properties.items()]
    if include_structure:
        facts = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in structure(result).items())
        parts.append(f"Structure: {facts}" + (f"; slide size {result.size}" if result.size else ""))
    parts += notes
    for slide in result.slides:
        parts += ["", f"## {_slide_heading(slide)}"]
        parts += [f"\n{_item_markdown(item)}" for item in slide.items]
        if slide.notes:
            parts += ["", "### Speaker notes", "", slide.notes]
    if result.images:
        parts += ["", "## Images saved to the workspace", "", *(f"- {p}" for p in result.images)]
    return "\n".join(parts)


def _item_text(item: Item) -> str:
    if item.kind == "table":
        return "\n".join("\t".join(row) for row in item.rows)
    if item.kind == "image":
        return f"[image: {item.path}]"
    return "\n".join(f"{'  ' * level}{text}" for level, text in item.lines)


def as_text(name: str, shown: str, result: Extraction, include_structure: bool, notes: list[str]) -> str:
    parts = [name, f"Path: {shown}", *notes]
    if include_structure:
        parts.append(
            "Structure: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in structure(result).items())
        )
    for slide in result.slides:
        parts += ["", _slide_heading(slide), "-" * len(_slide_heading(slide))]
        parts += [_item_text(item) for item in slide.items]
        if slide.notes:
            parts += [f"Notes: {slide.notes}"]
    return "\n".join(parts)


def as_json(name: str, shown: str, result: Extraction, include_structure: bool, notes: list[str]) -> str:
    payload: dict = {
        "file_name": name,
        "path": shown,
        "properties": result.properties,
        "slide_size": result.size,
    }
    if include_structure:
        payload["structure"] = structure(result)
    payload["slides"] = [
        {
            "number": slide.number,
            "title": slide.title,
            "hidden": slide.hidden,
            "content": [_item_json(item) for item in slide.items],
            "notes": slide.notes,
        }
        for slide in result.slides
    ]
    payload |= {"images": result.images, "notes": notes}
    return json.dumps(payload, ensure_ascii=False, indent=2)


def _item_json(item: Item) -> dict:
    if item.kind == "table":
        return {"type": "table", "rows": item.rows}
    if item.kind == "image":
        return {"type": "image", "path": item.path}
    return {"type": item.kind, "paragraphs": [{"level": level, "text": text} for level, text in item.lines]}
