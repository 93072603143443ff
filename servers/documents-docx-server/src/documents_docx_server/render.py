"""Markdown, JSON and plain text from one Extraction."""

from __future__ import annotations

import json

from gaia_kit.documents.markdown import markdown_table

from .reading import Block, Extraction


def _block_markdown(block: Block) -> str:
    if block.kind == "heading":
        return f"{'#' * min(block.level, 6)} {block.text}"
    if block.kind == "list_item":
        marker = "1." if block.ordered else "-"
        return f"{'  ' * block.level}{marker} {block.text}"
    if block.kind == "table":
        return markdown_table(block.rows)
    if block.kind == "image":
        return f"![image]({block.text})"
    return block.text


def _join(blocks: list[Block], render) -> str:
    out: list[str] = []
    for index, block in enumerate(blocks):
        tight = index and block.kind == "list_item" and blocks[index - 1].kind == "list_item"
        out.append(("\n" if tight else "\n\n") + render(block) if out else render(block))
    return "".join(out)


def structure(result: Extraction) -> dict[str, int]:
    kinds = [b.kind for b in result.blocks]
    words = sum(len(b.plain.split()) for b in result.blocks if b.kind != "image")
    words += sum(len(c.split()) for b in result.blocks for row in b.rows for c in row)
    return {
        "paragraphs": kinds.count("paragraph"),
        "headings": kinds.count("heading"),
        "list_items": kinds.count("list_item"),
        "tables": kinds.count("table"),
        "images": len(result.images),
        "sections": result.sections,
        "footnotes": len(result.footnotes),
        "comments": len(result.comments),
        "words": words,
    }


def as_markdown(name: str, shown: str, result: Extraction, include_structure: bool, notes: list[str]) -> str:
    # The file's facts are plain lines, so the document's own headings keep their levels.
    parts = [f"File: {name}", f"Path: {shown}"]
    parts += [f"{key}: {value}" for key, value in result.properties.items()]
    if include_structure:
        facts = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in structure(result).items())
        parts += [f"Structure: {facts}"]
    parts += notes
    if result.headers:
        parts += ["", "## Headers", "", *result.headers]
    parts += ["", "## Content", "", _join(result.blocks, _block_markdown) or "(no text)"]
    if result.footers:
        parts += ["", "## Footers", "", *result.footers]
    if result.footnotes:
        parts += ["", "## Footnotes", "", *(f"[^{i}]: {t}" for i, t in result.footnotes)]
    if result.comments:
        parts += ["", "## Comments", "", *(f"- {author}: {t}" for author, t in result.comments)]
    if result.images:
        parts += ["", "## Images saved to the workspace", "", *(f"- {p}" for p in result.images)]
    return "\n".join(parts)


def _block_text(block: Block) -> str:
    if block.kind == "table":
        return "\n".join("\t".join(row) for row in block.rows)
    if block.kind == "image":
        return f"[image: {block.text}]"
    if block.kind == "list_item":
        return f"{'  ' * block.level}{'*' if not block.ordered else '#'} {block.plain}"
    return block.plain


def as_text(name: str, shown: str, result: Extraction, include_structure: bool, notes: list[str]) -> str:
    parts = [name, f"Path: {shown}", *notes]
    if include_structure:
        parts.append(
            "Structure: " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in structure(result).items())
        )
    parts += ["", *result.headers, _join(result.blocks, _block_text), *result.footers]
    parts += [f"[{i}] {t}" for i, t in result.footnotes]
    parts += [f"Comment by {author}: {t}" for author, t in result.comments]
    parts += [f"Image saved: {p}" for p in result.images]
    return "\n".join(p for p in parts if p is not None)


def as_json(name: str, shown: str, result: Extraction, include_structure: bool, notes: list[str]) -> str:
    payload: dict = {"file_name": name, "path": shown, "properties": result.properties}
    if include_structure:
        payload["structure"] = structure(result)
    payload["blocks"] = [
        {"type": b.kind, **({"rows": b.rows} if b.kind == "table" else {"text": b.plain})}
        | ({"level": b.level} if b.kind in ("heading", "list_item") else {})
        | ({"ordered": b.ordered} if b.kind == "list_item" else {})
        for b in result.blocks
    ]
    payload |= {
        "headers": result.headers,
        "footers": result.footers,
        "footnotes": [{"id": i, "text": t} for i, t in result.footnotes],
        "comments": [{"author": a, "text": t} for a, t in result.comments],
        "images": result.images,
        "notes": notes,
    }
    return json.dumps(payload, ensure_ascii=False, indent=2)
