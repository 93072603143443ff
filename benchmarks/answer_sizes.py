"""Characters of each tool's answer on the demo tasks and on realistic inputs.

    uv run python -m benchmarks.answer_sizes [--check]

Every tool-response token comes out of an RL episode's response budget, so answer sizes are part
of the interface. Each case calls its tool in-process through MCP, as the gateway calls it. The
rows go to proxy/src/gaia_env/answer_sizes.json, which `make docs` renders into docs/tools.md;
--check compares with that file instead (tests/test_answer_sizes.py does the same). Only tools
whose answers depend on local inputs alone are measured: search, web pages and LLM-written
answers vary with what is fetched or generated.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gaia_env import answer_sizes
from gaia_kit_testing import formula_cases
from gaia_train.demo.snapshot import write_demo_snapshot

ROOT = Path(__file__).resolve().parents[1]
DEMO = "/workspace/gaia_dataset/2023/validation"
CSV = f"{DEMO}/bf91b735-7582-5766-b10f-21a635956ffb.csv"
XLSX = f"{DEMO}/fe93fde1-49b5-518c-9f10-6edcad66b086.xlsx"


@dataclass(frozen=True)
class Case:
    server: str
    module: str
    tool: str
    arguments: dict[str, Any]
    input: str


CASES = [
    Case(
        "filesystem-server", "filesystem_server.server", "read_text_file", {"path": CSV}, "demo CSV (sales)"
    ),
    Case(
        "filesystem-server",
        "filesystem_server.server",
        "list_directory",
        {"path": DEMO},
        "demo folder, 7 files",
    ),
    Case(
        "filesystem-server",
        "filesystem_server.server",
        "directory_tree",
        {"path": DEMO},
        "demo folder, 7 files",
    ),
    Case("filesystem-server", "filesystem_server.server", "get_file_info", {"path": CSV}, "demo CSV"),
    Case(
        "filesystem-server",
        "filesystem_server.server",
        "search_files",
        {"path": DEMO, "pattern": "*.csv"},
        "demo folder, *.csv",
    ),
    Case(
        "filesystem-server",
        "filesystem_server.server",
        "list_directory_with_sizes",
        {"path": DEMO},
        "demo folder, 7 files",
    ),
    Case(
        "filesystem-server",
        "filesystem_server.server",
        "read_multiple_files",
        {"paths": [CSV, f"{DEMO}/7b6abdfa-c890-5b8d-9833-b1495494e82b.csv"]},
        "the two demo CSVs",
    ),
    Case("terminal-controller", "terminal_controller.server", "read_file", {"path": CSV}, "demo CSV"),
    Case(
        "documents-pptx-server",
        "documents_pptx_server.server",
        "extract_pptx_content",
        {"file_path": "deck.pptx"},
        "3 slides: title, bullets, a table",
    ),
    Case(
        "documents-csv-server",
        "documents_csv_server.server",
        "extract_csv_content",
        {"file_path": CSV},
        "demo CSV",
    ),
    Case(
        "documents-txt-server",
        "documents_txt_server.server",
        "extract_text_content",
        {"file_path": CSV},
        "demo CSV",
    ),
    Case(
        "documents-docx-server",
        "documents_docx_server.server",
        "extract_docx_content",
        {"file_path": f"{DEMO}/1345a9a7-eb38-5b1b-9dfd-e5aae8cb08d3.docx"},
        "demo memo (DOCX)",
    ),
    Case(
        "documents-pdf-server",
        "documents_pdf_server.server",
        "convert_document_to_markdown",
        {"file_path": f"{DEMO}/394b0863-5a7d-5197-a545-e21a44fb4c73.pdf"},
        "demo lab report (PDF)",
    ),
    Case(
        "media-image-server",
        "media_image_server.server",
        "get_image_metadata",
        {"file_path": f"{DEMO}/ddf03a5c-40db-5945-96df-773ba2dd0423.png"},
        "demo PNG",
    ),
    Case(
        "media-image-server",
        "media_image_server.server",
        "extract_text_ocr",
        {"file_path": f"{DEMO}/ddf03a5c-40db-5945-96df-773ba2dd0423.png"},
        "demo PNG (a gate code)",
    ),
    Case(
        "media-audio-server",
        "media_audio_server.server",
        "extract_audio_metadata",
        {"file_path": f"{DEMO}/9fbd49bd-4cab-55b0-ba61-0a79c2e0f3cb.wav"},
        "demo WAV",
    ),
    Case("excel", "excel_server.server", "get_workbook_metadata", {"filepath": XLSX}, "demo XLSX"),
    Case(
        "excel",
        "excel_server.server",
        "read_data_from_excel",
        {"filepath": XLSX, "sheet_name": "Stock"},
        "demo XLSX, 9 x 3 (layout cells)",
    ),
    Case(
        "excel",
        "excel_server.server",
        "read_data_from_excel",
        {"filepath": XLSX, "sheet_name": "Stock", "layout": "rows"},
        "demo XLSX, 9 x 3 (layout rows)",
    ),
    Case(
        "excel",
        "excel_server.server",
        "read_data_from_excel",
        {"filepath": "table.xlsx", "sheet_name": "Data", "max_rows": 50},
        "50 rows x 8 columns (layout cells)",
    ),
    Case(
        "excel",
        "excel_server.server",
        "read_data_from_excel",
        {"filepath": "table.xlsx", "sheet_name": "Data", "max_rows": 50, "layout": "rows"},
        "50 rows x 8 columns (layout rows)",
    ),
    Case(
        "excel",
        "excel_server.server",
        "read_data_from_excel",
        {"filepath": "table.xlsx", "sheet_name": "Data", "layout": "rows"},
        "400 rows x 8 columns (layout rows, one page)",
    ),
    Case(
        "excel",
        "excel_server.server",
        "read_data_from_excel",
        {"filepath": "cases.xlsx", "sheet_name": "Calc", "include_formulas": True, "layout": "rows"},
        "20 formulas, no cached values (rows)",
    ),
    Case(
        "excel",
        "excel_server.server",
        "get_merged_cells",
        {"filepath": XLSX, "sheet_name": "Stock"},
        "demo XLSX",
    ),
    Case(
        "excel",
        "excel_server.server",
        "get_data_validation_info",
        {"filepath": XLSX, "sheet_name": "Stock"},
        "demo XLSX",
    ),
    Case(
        "excel",
        "excel_server.server",
        "validate_excel_range",
        {"filepath": XLSX, "sheet_name": "Stock", "start_cell": "A1", "end_cell": "C9"},
        "demo XLSX",
    ),
    Case(
        "excel",
        "excel_server.server",
        "write_data_to_excel",
        {"filepath": "new.xlsx", "sheet_name": "Out", "data": [["a", "b", "sum"], [1, 2, "=A2+B2"]]},
        "2 rows, one formula",
    ),
    Case(
        "excel",
        "excel_server.server",
        "apply_formula",
        {"filepath": "table.xlsx", "sheet_name": "Data", "cell": "J1", "formula": "=SUM(C2:C101)"},
        "one formula",
    ),
]


def prepare(root: Path) -> tuple[Path, Path]:
    """A dataset (the demo tasks) and a session workspace with the realistic workbooks."""
    dataset, workspace = root / "dataset", root / "workspaces" / "sizes"
    workspace.mkdir(parents=True)
    write_demo_snapshot(dataset)
    _table(workspace / "table.xlsx")
    _deck(workspace / "deck.pptx")
    formula_cases.build(workspace / "cases.xlsx")
    return dataset, workspace


def _table(path: Path) -> None:
    """A typical attachment table: ids, names, categories, dates, amounts."""
    from datetime import date, timedelta

    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Data"
    sheet.append(["id", "name", "qty", "price", "category", "date", "region", "paid"])
    for i in range(1, 401):
        sheet.append(
            [i, f"Item {i:03d}", (i * 7) % 23, round(1.25 * (i % 17) + 0.5, 2), ["tools", "toys", "food"][i % 3],
             date(2024, 1, 1) + timedelta(days=i), ["North", "South", "East", "West"][i % 4], i % 5 != 0]
        )  # fmt: skip
    book.save(path)


def _deck(path: Path) -> None:
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    title = deck.slides.add_slide(deck.slide_layouts[0])
    title.shapes.title.text = "Quarterly review"
    title.placeholders[1].text = "Operations, Q3 2024"
    bullets = deck.slides.add_slide(deck.slide_layouts[1])
    bullets.shapes.title.text = "Highlights"
    body = bullets.placeholders[1].text_frame
    body.text = "Revenue up 12% on Q2"
    for line in ("Two new warehouses opened", "Returns down to 3.1%"):
        body.add_paragraph().text = line
    table_slide = deck.slides.add_slide(deck.slide_layouts[5])
    table_slide.shapes.title.text = "By region"
    rows = [["Region", "Units", "Revenue"], ["North", "120", "3,070"], ["South", "83", "2,595"]]
    table = table_slide.shapes.add_table(3, 3, Inches(1), Inches(2), Inches(6), Inches(1.5)).table
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    deck.save(path)


async def measure(dataset: Path, workspace: Path) -> list[dict[str, Any]]:
    from gaia_kit.core.settings import forget_settings
    from gaia_kit_testing import session_call

    os.environ["GAIA_WORKSPACE_ROOT"] = str(workspace.parent)
    os.environ["GAIA_DATASET_DIR"] = str(dataset)
    forget_settings()
    rows = []
    for case in CASES:
        server = importlib.import_module(case.module).server
        async with session_call(server, workspace) as call:
            result = await call(case.tool, **case.arguments)
        body = "\n".join(getattr(block, "text", "") or getattr(block, "data", "") for block in result.content)
        if result.is_error:
            raise RuntimeError(f"{case.server} {case.tool} failed on {case.input}: {body}")
        rows.append({"server": case.server, "tool": case.tool, "input": case.input, "chars": len(body)})
    return rows


def run() -> list[dict[str, Any]]:
    import anyio

    with tempfile.TemporaryDirectory(prefix="answer-sizes-") as folder:
        dataset, workspace = prepare(Path(folder))
        return anyio.run(measure, dataset, workspace)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="store_true", help="compare with the committed sizes, write nothing"
    )
    args = parser.parse_args()
    rows = run()
    for row in rows:
        print(f"{row['server']:22} {row['tool']:30} {row['chars']:>7,}  {row['input']}")
    if args.check:
        sys.exit(
            0 if rows == answer_sizes.load() else "the sizes changed: run without --check, then make docs"
        )
    answer_sizes.SIZES_FILE.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"wrote {answer_sizes.SIZES_FILE}; run `make docs` to update docs/tools.md")


if __name__ == "__main__":
    main()
