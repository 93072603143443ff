"""The four output formats, and what kind of text a file holds."""

from __future__ import annotations

import html
import json
from pathlib import Path

from .reading import Extraction

# extension -> (content type, code-fence language)
FORMATS: dict[str, tuple[str, str]] = {
    ".txt": ("Plain text", ""),
    ".text": ("Plain text", ""),
    ".log": ("Log file", ""),
    ".md": ("Markdown", "markdown"),
    ".markdown": ("Markdown", "markdown"),
    ".rst": ("reStructuredText", "rst"),
    ".csv": ("CSV", "csv"),
    ".tsv": ("TSV", "tsv"),
    ".json": ("JSON", "json"),
    ".jsonl": ("JSON Lines", "json"),
    ".ndjson": ("JSON Lines", "json"),
    ".xml": ("XML", "xml"),
    ".html": ("HTML", "html"),
    ".htm": ("HTML", "html"),
    ".yaml": ("YAML", "yaml"),
    ".yml": ("YAML", "yaml"),
    ".toml": ("TOML", "toml"),
    ".ini": ("INI", "ini"),
    ".cfg": ("Configuration", "ini"),
    ".conf": ("Configuration", ""),
    ".tex": ("LaTeX", "latex"),
    ".bib": ("BibTeX", "bibtex"),
    ".srt": ("Subtitles (SRT)", ""),
    ".vtt": ("Subtitles (WebVTT)", ""),
    ".sql": ("SQL", "sql"),
    ".py": ("Python source", "python"),
    ".js": ("JavaScript source", "javascript"),
    ".ts": ("TypeScript source", "typescript"),
    ".java": ("Java source", "java"),
    ".c": ("C source", "c"),
    ".h": ("C header", "c"),
    ".cpp": ("C++ source", "cpp"),
    ".hpp": ("C++ header", "cpp"),
    ".cs": ("C# source", "csharp"),
    ".go": ("Go source", "go"),
    ".rs": ("Rust source", "rust"),
    ".rb": ("Ruby source", "ruby"),
    ".php": ("PHP source", "php"),
    ".sh": ("Shell script", "bash"),
    ".r": ("R source", "r"),
    ".css": ("CSS", "css"),
    ".pdb": ("Protein Data Bank", ""),
}


def content_type(path: Path, head: str) -> tuple[str, str]:
    known = FORMATS.get(path.suffix.lower())
    if known:
        return known
    stripped = head.lstrip()
    if stripped.startswith("<?xml"):
        return "XML", "xml"
    if stripped[:1] in "{[" and stripped:
        return "JSON-like text", "json"
    if stripped.lower().startswith(("<!doctype html", "<html")):
        return "HTML", "html"
    if stripped.startswith("#!"):
        return "Script", ""
    return "Plain text", ""


def _size(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if value < 1024 or unit == "TB":
            return f"{size:,} bytes" if unit == "bytes" else f"{value:.1f} {unit} ({size:,} bytes)"
        value /= 1024
    raise AssertionError("unreachable")


def facts(path: Path, shown: str, result: Extraction, kind: str) -> dict[str, str]:
    stats = result.stats
    prefix = "" if stats.complete else "≥ "
    rows = {
        "File": path.name,
        "Path": shown,
        "Size": _size(result.size),
        "Encoding": f"{result.encoding} ({'detected' if result.detected else 'as requested'})",
        "Content type": kind,
        "Lines": f"{prefix}{stats.lines:,}",
        "Words": f"{prefix}{stats.words:,}",
        "Characters": f"{prefix}{stats.characters:,}",
    }
    if not stats.complete:
        rows["Statistics"] = f"counted over the first {_size(stats.scanned_bytes)} only"
    if stats.replaced:
        rows["Undecodable"] = (
            f"{stats.replaced:,} characters could not be decoded as {result.encoding} and show as \ufffd; "
            "pass another encoding if that is wrong"
        )
    return rows


def paging_note(result: Extraction, total: int | None) -> str:
    end = result.start + len(result.content)
    if result.more:
        of = f" of {total:,}" if total is not None else ""
        return (
            f"[Content truncated: characters {result.start:,}-{end:,}{of}. "
            f"Call again with start_index={end} to read more.]"
        )
    if not result.content and result.start:
        return f"[No more content: start_index {result.start} is past the end of the text.]"
    if not result.content:
        return "[The file is empty.]"
    return ""


def _fence(text: str) -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return fence


def as_markdown(rows: dict[str, str], content: str, language: str, note: str) -> str:
    table = "\n".join(f"| {key} | {value} |" for key, value in rows.items())
    parts = [f"# {rows['File']}", "", "| Property | Value |", "|---|---|", table, "", "## Content", ""]
    if content:
        fence = _fence(content)
        parts += [f"{fence}{language}", content.rstrip("\n"), fence]
    if note:
        parts += ["", note]
    return "\n".join(parts)


def as_text(rows: dict[str, str], content: str, note: str) -> str:
    header = "\n".join(f"{key}: {value}" for key, value in rows.items())
    return "\n".join(part for part in (header, "-" * 40, content, note) if part)


def as_html(rows: dict[str, str], content: str, note: str) -> str:
    cells = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows.items())
    body = f"<pre>{html.escape(content)}</pre>" if content else ""
    tail = f"<p>{html.escape(note)}</p>" if note else ""
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{html.escape(rows['File'])}</title></head>\n<body>\n<h1>{html.escape(rows['File'])}</h1>\n"
        f"<table>{cells}</table>\n{body}\n{tail}\n</body></html>"
    )


def as_json(path: Path, shown: str, result: Extraction, kind: str, note: str) -> str:
    stats = result.stats
    end = result.start + len(result.content)
    payload = {
        "file_name": path.name,
        "path": shown,
        "size_bytes": result.size,
        "encoding": result.encoding,
        "encoding_detected": result.detected,
        "content_type": kind,
        "statistics": {
            "lines": stats.lines,
            "words": stats.words,
            "characters": stats.characters,
            "undecodable_characters": stats.replaced,
            "complete": stats.complete,
            "scanned_bytes": stats.scanned_bytes,
        },
        "start_index": result.start,
        "end_index": end,
        "truncated": result.more,
        "next_start_index": end if result.more else None,
        "content": result.content,
    }
    if note:
        payload["note"] = note
    return json.dumps(payload, ensure_ascii=False, indent=2)
