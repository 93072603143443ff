"""A small GAIA-format set of the project's own, for demos, tests and smoke runs.

Every question needs a tool to answer: a CSV to aggregate, an xlsx to filter, a docx and a PDF
to read, an image to OCR and a spoken clip to transcribe. The attachments are generated here,
deterministically, so the answers are known exactly. The layout is a GAIA snapshot's:
`<out>/2023/validation/metadata.jsonl` (or .parquet) with the attachments beside it, and a
`2023/test` split whose answers are hidden ("?"), as upstream. The libraries that write the
attachments come with the trainer's `demo` extra.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd
from docx import Document
from fpdf import FPDF
from openpyxl import Workbook
from PIL import Image, ImageDraw, ImageFont

ESPEAK = "espeak-ng"
_NAMESPACE = uuid.UUID("6f1c1f64-3a5e-4d0b-9a55-6a2f0d1c7e10")

SALES = [
    ("North", "kettle", 40, 25),
    ("North", "toaster", 12, 60),
    ("South", "kettle", 75, 25),
    ("South", "blender", 8, 90),
    ("East", "toaster", 66, 60),
    ("East", "kettle", 51, 25),
    ("West", "blender", 30, 90),
    ("West", "kettle", 9, 25),
    ("North", "blender", 15, 90),
]
STOCK = [
    ("bolt", 120, "A"),
    ("nut", 4, "B"),
    ("washer", 7, "B"),
    ("screw", 55, "B"),
    ("hinge", 3, "A"),
    ("bracket", 9, "B"),
    ("rivet", 10, "B"),
    ("clamp", 2, "C"),
]
SPOKEN = "The delivery will arrive on Thursday at nine in the morning."


class DemoDataError(RuntimeError):
    pass


@dataclass(frozen=True)
class DemoTask:
    key: str
    level: int
    question: str
    answer: str
    extension: str
    write: Callable[[Path], None]

    @property
    def task_id(self) -> str:
        return str(uuid.uuid5(_NAMESPACE, self.key))


def _write_sales_csv(path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["region", "product", "units", "unit_price"])
        writer.writerows(SALES)


def _write_stock_xlsx(path: Path) -> None:
    book = Workbook()
    sheet = book.active
    sheet.title = "Stock"
    sheet.append(["item", "quantity", "warehouse"])
    for row in STOCK:
        sheet.append(list(row))
    book.save(path)


def _write_memo_docx(path: Path) -> None:
    document = Document()
    document.add_heading("Internal memo", level=1)
    document.add_paragraph("To: the platform team. From: research operations.")
    document.add_paragraph(
        "Starting next quarter the data migration project will be known by its codename, Blue Heron. "
        "Please use the codename in every ticket and status report."
    )
    document.add_paragraph("The kickoff meeting is in room 4.12.")
    # A fixed date keeps the file identical from run to run.
    document.core_properties.created = datetime(2024, 1, 1)
    document.core_properties.modified = datetime(2024, 1, 1)
    document.save(path)


def _write_report_pdf(path: Path) -> None:
    pdf = FPDF()
    pdf.set_creation_date(datetime(2024, 1, 1))
    pdf.set_compression(False)  # plain text streams: any PDF reader, however simple, finds the words
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    lines = [
        "Laboratory report 17: boiling points of the solvent samples",
        "Sample A boiled at 78.4 degrees Celsius.",
        "Sample B boiled at 82.1 degrees Celsius.",
        "Sample C boiled at 87.5 degrees Celsius.",
        "All measurements were taken at sea-level pressure.",
    ]
    for line in lines:
        pdf.cell(0, 10, line, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


def _write_note_png(path: Path) -> None:
    image = Image.new("RGB", (900, 220), "white")
    draw = ImageDraw.Draw(image)
    draw.text((40, 70), "GATE CODE 4729", fill="black", font=ImageFont.load_default(size=72))
    image.save(path)


def _write_spoken_wav(path: Path) -> None:
    if shutil.which(ESPEAK) is None:
        raise DemoDataError(
            f"the spoken clip needs {ESPEAK}, which is not installed: apt-get install {ESPEAK} "
            "(or pass --skip-audio to leave the audio task out)"
        )
    subprocess.run(
        [ESPEAK, "-v", "en-us", "-s", "150", "-w", str(path), SPOKEN], check=True, capture_output=True
    )


def _revenue(region: str) -> int:
    return sum(units * price for reg, _, units, price in SALES if reg == region)


def _regions_over(threshold: int) -> str:
    totals: dict[str, int] = {}
    for region, _, units, _ in SALES:
        totals[region] = totals.get(region, 0) + units
    return ", ".join(sorted(r for r, t in totals.items() if t > threshold))


DEMO_TASKS = [
    DemoTask(
        "csv-revenue",
        1,
        "The attached CSV file lists sales by region. What was the total revenue (units times unit price) "
        "of the North region, in dollars?",
        str(_revenue("North")),
        "csv",
        _write_sales_csv,
    ),
    DemoTask(
        "csv-regions",
        2,
        "Using the attached sales CSV, which regions sold more than 60 units in total across all products? "
        "Give them in alphabetical order.",
        _regions_over(60),
        "csv",
        _write_sales_csv,
    ),
    DemoTask(
        "xlsx-low-stock",
        2,
        "In the attached spreadsheet, how many items stored in warehouse B have a quantity below 10?",
        str(sum(1 for _, qty, wh in STOCK if wh == "B" and qty < 10)),
        "xlsx",
        _write_stock_xlsx,
    ),
    DemoTask(
        "docx-codename",
        1,
        "What is the codename of the data migration project, according to the attached memo?",
        "Blue Heron",
        "docx",
        _write_memo_docx,
    ),
    DemoTask(
        "pdf-boiling",
        2,
        "At what temperature, in degrees Celsius, did sample C boil according to the attached lab report?",
        "87.5",
        "pdf",
        _write_report_pdf,
    ),
    DemoTask(
        "png-gate-code",
        1,
        "What gate code is written in the attached image?",
        "4729",
        "png",
        _write_note_png,
    ),
    DemoTask(
        "wav-delivery",
        3,
        "On which day of the week will the delivery arrive, according to the attached recording?",
        "Thursday",
        "wav",
        _write_spoken_wav,
    ),
]

TEST_TASKS = [
    DemoTask(
        "test-csv-south",
        1,
        "The attached CSV file lists sales by region. How many units did the South region sell in total?",
        str(sum(u for r, _, u, _ in SALES if r == "South")),
        "csv",
        _write_sales_csv,
    ),
]


def _write_split(
    root: Path, split: str, tasks: list[DemoTask], hide_answers: bool, metadata_format: str
) -> None:
    split_dir = root / "2023" / split
    split_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for task in tasks:
        file_name = f"{task.task_id}.{task.extension}"
        task.write(split_dir / file_name)
        rows.append(
            {
                "task_id": task.task_id,
                "Question": task.question,
                "Level": str(task.level),  # upstream snapshots store it as a string
                "Final answer": "?" if hide_answers else task.answer,
                "file_name": file_name,
                "Annotator Metadata": {"Steps": "generated by gaia-train demo-data", "Tools": task.extension},
            }
        )
    if metadata_format == "parquet":
        pd.DataFrame(rows).to_parquet(split_dir / "metadata.parquet", index=False)
    else:
        with (split_dir / "metadata.jsonl").open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_demo_snapshot(
    out: Path, *, metadata_format: str = "jsonl", skip_audio: bool = False
) -> list[DemoTask]:
    """Write the demo snapshot under `out`; returns the validation tasks written."""
    if metadata_format not in ("jsonl", "parquet"):
        raise DemoDataError(f"metadata format must be jsonl or parquet, got {metadata_format!r}")
    out = Path(out)
    if (out / "2023").exists() and any((out / "2023").iterdir()):
        raise DemoDataError(
            f"{out / '2023'} already exists and is not empty; choose another --out or remove it"
        )
    tasks = [t for t in DEMO_TASKS if not (skip_audio and t.extension == "wav")]
    if not skip_audio and shutil.which(ESPEAK) is None:
        _write_spoken_wav(out / "unused.wav")  # raises the message that names the package
    try:
        _write_split(out, "validation", tasks, hide_answers=False, metadata_format=metadata_format)
        _write_split(out, "test", TEST_TASKS, hide_answers=True, metadata_format=metadata_format)
    except BaseException:
        # No half-written snapshot: a second try must not trip over the first.
        shutil.rmtree(out / "2023", ignore_errors=True)
        raise
    return tasks
