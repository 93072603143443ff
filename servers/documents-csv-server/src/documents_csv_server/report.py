"""A profile as a report: one dictionary, rendered as markdown, plain text or JSON."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pandas as pd
from tabulate import tabulate

from .profile import Column, Profile
from .sniff import Layout

MAX_PREVIEW_COLUMNS = 20
MAX_CELL_CHARS = 60
TOP_VALUES = 5


def build(
    profile: Profile,
    layout: Layout,
    *,
    name: str,
    shown: str,
    size: int,
    max_rows: int | None,
    charts: list[str],
    statistics: bool,
) -> dict[str, Any]:
    rows = profile.rows
    if profile.limited_by_max_rows:
        rows_note = f"the first {rows:,} rows were read (max_rows={max_rows}); the file may have more"
    else:
        rows_note = "every row counted"
    report: dict[str, Any] = {
        "file": name,
        "path": shown,
        "size_bytes": size,
        "encoding": layout.encoding,
        "encoding_detected": layout.encoding_detected,
        "delimiter": layout.delimiter,
        "delimiter_detected": layout.delimiter_detected,
        "rows": rows,
        "rows_note": rows_note,
        "column_count": len(profile.columns),
        "columns": [_column_summary(column, rows, statistics) for column in profile.columns],
        "preview": _records(profile.preview),
        "statistics": _statistics(profile) if statistics else None,
        "visualizations": charts,
        "notes": [],
    }
    if profile.skipped_bad_lines:
        report["notes"].append(
            f"Malformed rows were skipped (the first problem: {profile.skipped_bad_lines}); the counts cover "
            "the rows that parsed. Pass delimiter= if the delimiter was guessed wrong."
        )
    if profile.replaced_bytes:
        report["notes"].append(
            f"Some bytes were not valid {layout.encoding} and were replaced with \ufffd; pass encoding= to "
            "read them differently."
        )
    return report


def _column_summary(column: Column, rows: int, statistics: bool) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "name": column.name,
        "type": column.kind,
        "non_null": column.non_null,
        "missing": rows - column.non_null,
    }
    if statistics:
        summary["distinct"] = _distinct(column)
    return summary


def _distinct(column: Column) -> int | str:
    if column.counts is None:
        return f"> {column.distinct_cap}"
    return len(column.counts)


def _statistics(profile: Profile) -> dict[str, Any]:
    exact = profile.sample_is_complete
    numeric, text, dates = [], [], []
    for column in profile.columns:
        kind = column.kind
        if kind in ("integer", "float", "mixed"):
            numeric.append(_numeric(column, profile.sample, kind == "integer"))
        elif kind in ("date", "datetime"):
            dates.append(
                {
                    "column": column.name,
                    "count": column.non_null,
                    "earliest": column.earliest,
                    "latest": column.latest,
                }
            )
        elif kind in ("text", "boolean", "mixed"):
            text.append(_categorical(column))
    return {
        "numeric": numeric,
        "categorical": text,
        "dates": dates,
        "quartiles": "exact" if exact else f"estimated from a uniform sample of {len(profile.sample):,} rows",
    }


def _numeric(column: Column, sample: pd.DataFrame, integral: bool) -> dict[str, Any]:
    agg = column.numeric
    quartiles: list[float | None] = [None, None, None]
    if column.name in sample.columns:
        values = pd.to_numeric(sample[column.name], errors="coerce").dropna().to_numpy(dtype="float64")
        if len(values):
            quartiles = [float(q) for q in np.quantile(values, [0.25, 0.5, 0.75])]
    result = {
        "column": column.name,
        "count": agg.count,
        "mean": agg.mean,
        "std": None if math.isnan(agg.std) else agg.std,
        "min": agg.minimum,
        "25%": quartiles[0],
        "50%": quartiles[1],
        "75%": quartiles[2],
        "max": agg.maximum,
        "sum": agg.total,
    }
    if integral:
        for key in ("min", "max", "sum"):
            result[key] = int(result[key])
    if column.kind == "mixed" or column.text_values:
        result["non_numeric_values"] = column.text_values
    return result


def _categorical(column: Column) -> dict[str, Any]:
    entry: dict[str, Any] = {"column": column.name, "count": column.non_null, "distinct": _distinct(column)}
    if column.counts is not None:
        top = sorted(column.counts.items(), key=lambda item: (-item[1], str(item[0])))[:TOP_VALUES]
        entry["top_values"] = [{"value": _plain(value), "count": count} for value, count in top]
    return entry


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return value


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    cleaned = frame.astype(object).where(frame.notna(), None)
    return [{str(k): _plain(v) for k, v in row.items()} for row in cleaned.to_dict(orient="records")]


# ---- rendering ---------------------------------------------------------------------------------


def _num(value: Any, digits: int = 10) -> str:
    if value is None:
        return ""
    if isinstance(value, int | np.integer):
        return str(int(value))
    value = float(value)
    if math.isnan(value):
        return ""
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.{digits}g}"


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    text = text.replace("\n", " ").replace("|", "\\|")
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


def _table(headers: list[str], rows: list[list[Any]], fmt: str) -> str:
    if fmt == "github":
        # Unpadded: markdown needs no aligned columns, and padding was half of every answer's characters.
        lines = [headers, ["---"] * len(headers), *rows]
        return "\n".join(
            "| " + " | ".join("" if v is None else str(v) for v in line) + " |" for line in lines
        )
    return tabulate(rows, headers=headers, tablefmt=fmt, disable_numparse=True)


def render(report: dict[str, Any], output_format: str) -> str:
    if output_format == "json":
        return json.dumps(report, ensure_ascii=False, indent=2, default=str)
    markdown = output_format == "markdown"
    fmt = "github" if markdown else "simple"

    def heading(level: int, text: str) -> str:
        if markdown:
            return f"{'#' * level} {text}"
        return f"{text}\n{'=' * len(text)}" if level == 1 else f"{text}\n{'-' * len(text)}"

    out: list[str] = [heading(1, f"CSV: {report['file']}"), ""]
    delimiter = {"\t": "tab", " ": "space"}.get(report["delimiter"], report["delimiter"])
    facts = [
        ["Path", report["path"]],
        ["Size", f"{report['size_bytes']:,} bytes"],
        [
            "Encoding",
            f"{report['encoding']} ({'detected' if report['encoding_detected'] else 'as requested'})",
        ],
        ["Delimiter", f"{delimiter!r} ({'detected' if report['delimiter_detected'] else 'as requested'})"],
        ["Rows", f"{report['rows']:,} ({report['rows_note']})"],
        ["Columns", str(report["column_count"])],
    ]
    out += [_table(["Property", "Value"], facts, fmt), ""]

    out += [heading(2, "Columns"), ""]
    with_distinct = any("distinct" in c for c in report["columns"])
    headers = ["#", "Column", "Type", "Non-null", "Missing"] + (["Distinct"] if with_distinct else [])
    rows = [
        [i + 1, _cell(c["name"]), c["type"], c["non_null"], c["missing"]]
        + ([c.get("distinct", "")] if with_distinct else [])
        for i, c in enumerate(report["columns"])
    ]
    out += [_table(headers, rows, fmt), ""]

    preview = report["preview"]
    out += [heading(2, f"Preview (first {len(preview)} rows)"), ""]
    if preview:
        names = list(preview[0])[:MAX_PREVIEW_COLUMNS]
        out.append(_table([_cell(n) for n in names], [[_cell(r[n]) for n in names] for r in preview], fmt))
        if report["column_count"] > MAX_PREVIEW_COLUMNS:
            out.append(f"\n(The first {MAX_PREVIEW_COLUMNS} of {report['column_count']} columns are shown.)")
    else:
        out.append("(no data rows)")
    out.append("")

    stats = report["statistics"]
    if stats:
        out += [heading(2, "Statistics"), ""]
        if stats["numeric"]:
            keys = ["count", "mean", "std", "min", "25%", "50%", "75%", "max", "sum"]
            rows = [
                [_cell(s["column"])] + [_num(s[k], 15 if k == "sum" else 10) for k in keys]
                for s in stats["numeric"]
            ]
            out += [heading(3, "Numeric columns"), "", _table(["Column", *keys], rows, fmt), ""]
            out += [
                f"Quartiles (25%, 50%, 75%) are {stats['quartiles']}; the other figures cover every row.",
                "",
            ]
        if stats["dates"]:
            rows = [[_cell(d["column"]), d["count"], d["earliest"], d["latest"]] for d in stats["dates"]]
            out += [
                heading(3, "Date columns"),
                "",
                _table(["Column", "Count", "Earliest", "Latest"], rows, fmt),
                "",
            ]
        if stats["categorical"]:
            rows = []
            for entry in stats["categorical"]:
                if "top_values" in entry:
                    top = "; ".join(f"{_cell(t['value'])} ({t['count']:,})" for t in entry["top_values"])
                else:
                    top = "(too many distinct values to rank)"
                rows.append([_cell(entry["column"]), entry["count"], entry["distinct"], top])
            out += [
                heading(3, "Text columns"),
                "",
                _table(["Column", "Count", "Distinct", "Most common values"], rows, fmt),
                "",
            ]

    if report["visualizations"]:
        out += [heading(2, "Visualizations"), ""] + [f"- {path}" for path in report["visualizations"]] + [""]
    if report["notes"]:
        out += [heading(2, "Notes"), ""] + [f"- {note}" for note in report["notes"]] + [""]
    return "\n".join(out).rstrip() + "\n"
