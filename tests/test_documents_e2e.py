"""The document servers through the real gateway: a GAIA-style attachment of each kind, read from
the dataset by its /workspace/gaia_dataset path, in one rollout's session."""

from __future__ import annotations

from pathlib import Path

import openpyxl
import pymupdf
import pytest
from docx import Document
from gaia_kit_testing.gateway import RunningGateway
from pptx import Presentation
from pptx.util import Inches

SESSION = {"X-Session-Id": "documents-e2e"}


@pytest.fixture(scope="module")
def attachments(real_gateway: RunningGateway) -> Path:
    folder = real_gateway.dataset_dir / "2023" / "validation"
    folder.mkdir(parents=True, exist_ok=True)

    doc = Document()
    doc.add_heading("Quarterly report", level=1)
    doc.add_paragraph("The harbour crane lifted 4,512 containers.")
    table = doc.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Port", "Ships"
    table.cell(1, 0).text, table.cell(1, 1).text = "Hamburg", "37"
    doc.save(folder / "report.docx")

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Migration of the arctic tern"
    slide.shapes.add_textbox(
        Inches(1), Inches(2), Inches(6), Inches(1)
    ).text_frame.text = "Round trip: 70,900 km"
    slide.notes_slide.notes_text_frame.text = "Cite Egevang et al. 2010"
    deck.save(folder / "talk.pptx")

    pdf = pymupdf.open()
    for number in range(1, 4):
        page = pdf.new_page()
        page.insert_text(
            (72, 72), f"Chapter {number}: the answer on page {number} is {number * 111}.", fontsize=12
        )
    pdf.save(folder / "book.pdf")

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Sales"
    sheet.append(["region", "units"])
    for region, units in [("north", 12), ("south", 30), ("north", 8)]:
        sheet.append([region, units])
    sheet["D1"] = "=SUM(B2:B4)"
    book.save(folder / "sales.xlsx")
    return folder


def read(gateway: RunningGateway, tool: str, **arguments) -> str:
    result = gateway.call(tool, arguments, headers=SESSION)
    text = "\n".join(block["text"] for block in result["content"] if block["type"] == "text")
    assert not result["isError"], text
    return text


MOUNT = "/workspace/gaia_dataset/2023/validation"


def test_docx(real_gateway: RunningGateway, attachments: Path) -> None:
    text = read(real_gateway, "extract_docx_content", file_path=f"{MOUNT}/report.docx")
    assert "# Quarterly report" in text and "4,512 containers" in text
    assert "| Hamburg | 37 |" in text.replace("  ", " ")


def test_pptx(real_gateway: RunningGateway, attachments: Path) -> None:
    text = read(real_gateway, "extract_pptx_content", file_path=f"{MOUNT}/talk.pptx")
    assert "Migration of the arctic tern" in text and "70,900 km" in text and "Egevang" in text


def test_pdf(real_gateway: RunningGateway, attachments: Path) -> None:
    text = read(real_gateway, "convert_document_to_markdown", file_path=f"{MOUNT}/book.pdf", paginate=True)
    assert "page 2 is 222" in text and "page 3 is 333" in text
    assert text.index("page 1 is 111") < text.index("page 3 is 333")


def test_excel(real_gateway: RunningGateway, attachments: Path) -> None:
    text = read(real_gateway, "read_data_from_excel", filepath=f"{MOUNT}/sales.xlsx", sheet_name="Sales")
    assert "south" in text and "30" in text
    assert "50" in text  # D1 computed, not the formula text
    assert "=SUM(B2:B4)" not in text


def test_dataset_attachments_stay_read_only(real_gateway: RunningGateway, attachments: Path) -> None:
    before = (attachments / "sales.xlsx").read_bytes()
    result = real_gateway.call(
        "write_data_to_excel",
        {"filepath": f"{MOUNT}/sales.xlsx", "sheet_name": "Sales", "data": [["x"]], "start_cell": "A1"},
        headers=SESSION,
    )
    assert result["isError"] and "read-only" in result["content"][0]["text"]
    assert (attachments / "sales.xlsx").read_bytes() == before
