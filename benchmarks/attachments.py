"""Attachments like a GAIA task's, generated for the benchmarks: a CSV, a text file, an xlsx (300 rows,
a merged range, a spare sheet), a docx, a pptx, a PDF, a scanned page, speech and a short video."""

from __future__ import annotations

import subprocess
from pathlib import Path


def make_attachments(folder: Path) -> Path:
    """Write the attachments into `folder` and return it."""
    import docx
    import openpyxl
    import pptx
    import pymupdf
    from PIL import Image, ImageDraw, ImageFont

    folder.mkdir(parents=True, exist_ok=True)
    rows = [("region", "product", "units", "price", "day")]
    rows += [
        (f"R{n % 7}", f"P{n % 13}", n % 50, round(1.5 + n % 9, 2), f"2023-01-{n % 28 + 1:02d}")
        for n in range(300)
    ]
    (folder / "sales.csv").write_text("\n".join(",".join(map(str, row)) for row in rows) + "\n")
    (folder / "notes.txt").write_text("".join(f"Line {n}: the museum opens on Monday.\n" for n in range(400)))
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Data"
    for row in rows:
        sheet.append(row)
    sheet.merge_cells("J1:K1")
    book.create_sheet("Spare").append(["spare", 1])
    book.save(folder / "sales.xlsx")
    document = docx.Document()
    document.add_heading("Quarterly report", 1)
    for n in range(12):
        document.add_paragraph(f"Paragraph {n}: the museum sold {n * 17} tickets.")
    document.save(folder / "report.docx")
    deck = pptx.Presentation()
    for n in range(5):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide {n}"
        slide.placeholders[1].text = f"Point {n}: visitors grew by {n * 3}%."
    deck.save(folder / "deck.pptx")
    pdf = pymupdf.open()
    for n in range(5):
        page = pdf.new_page()
        page.insert_text(
            (72, 72), f"Chapter {n}\n" + "\n".join(f"Sentence {k} of page {n}." for k in range(30))
        )
    pdf.save(folder / "paper.pdf")
    font = ImageFont.load_default(size=26)
    image = Image.new("L", (1275, 700), 255)
    draw = ImageDraw.Draw(image)
    for row in range(12):
        draw.text(
            (80, 60 + row * 48),
            f"Line {row + 1}: the quick brown fox jumps over the lazy dog",
            fill=0,
            font=font,
        )
    image.save(folder / "scan.png")
    subprocess.run(
        [
            "espeak-ng",
            "-s",
            "150",
            "-w",
            str(folder / "speech.wav"),
            "The museum opens on Monday morning at nine",
        ],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [
            "ffmpeg",
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=320x240:rate=10:duration=6",
            "-i",
            str(folder / "speech.wav"),
            "-shortest",
            "-c:v",
            "libx264",
            "-c:a",
            "aac",
            "-y",
            str(folder / "clip.mp4"),
        ],
        check=True,
        capture_output=True,
    )
    return folder
