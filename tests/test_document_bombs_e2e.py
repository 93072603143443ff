"""Document bombs through the real gateway (issue 22, finding 13).

Each bomb is a few kilobytes on disk and claims (or really inflates to) hundreds of megabytes to a
gigabyte. Each gets one clear refusal, nothing lands in the workspace, the servers are no larger
afterwards and never restarted, and every server serves the next call.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import docx
import psutil
from gaia_kit_testing.bombs import (
    WORD_BODY_HEAD,
    WORD_BODY_TAIL,
    forge_sizes,
    inflate_part,
    long_line_csv,
    resident_mb,
)
from gaia_kit_testing.gateway import RunningGateway
from openpyxl import Workbook
from PIL import Image
from pptx import Presentation
from pptx.util import Inches

SERVERS = "excel,documents-docx-server,documents-pptx-server,documents-csv-server"
SESSION = {"X-Session-Id": "bombs-e2e"}
GB = 2**30
CALL_MEMORY_MB = 96
ENV = {
    "GAIA_CALL_MEMORY_MB": str(CALL_MEMORY_MB),
    "GAIA_DOC_MAX_RATIO": "100000",  # lets the real bomb below past the ratio check, to the memory limit
    "GAIA_MAX_LINE_MB": "1",
}


def picture() -> io.BytesIO:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), "red").save(buffer, "PNG")
    return buffer


def make_bombs(folder: Path) -> None:
    book = Workbook()
    book.active.title = "Sheet"
    book.active["A1"], book.active["XFD1048576"] = "first", "last"
    book.save(folder / "far.xlsx")

    book = Workbook()
    book.active.title = "Sheet"
    book.active["A1"] = "text"
    book.save(folder / "strings.xlsx")
    inflate_part(
        folder / "strings.xlsx", "xl/sharedStrings.xml", b"<sst>", b"<si><t>a</t></si>", 2**20, b"</sst>"
    )
    forge_sizes(folder / "strings.xlsx", {"xl/sharedStrings.xml": 300 * 2**20})

    document = docx.Document()
    document.add_paragraph("A figure:")
    document.add_picture(picture())
    document.save(folder / "photo.docx")
    forge_sizes(folder / "photo.docx", {"word/media/image1.png": GB})

    docx.Document().save(folder / "body.docx")
    forge_sizes(folder / "body.docx", {"word/document.xml": GB})

    docx.Document().save(folder / "long.docx")
    paragraph = b"<w:p><w:r><w:t>" + b"x" * 2**20 + b"</w:t></w:r></w:p>"
    inflate_part(
        folder / "long.docx",
        "word/document.xml",
        WORD_BODY_HEAD,
        paragraph,
        60 * len(paragraph),
        WORD_BODY_TAIL,
    )

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Arctic tern"
    slide.shapes.add_picture(picture(), Inches(1), Inches(1))
    deck.save(folder / "talk.pptx")
    forge_sizes(folder / "talk.pptx", {"ppt/media/image1.png": GB})

    long_line_csv(folder / "line.csv", 8 * 2**20)


def make_good_files(folder: Path) -> None:
    book = Workbook()
    book.active.title = "Sheet"
    book.active["A1"] = "served"
    book.save(folder / "good.xlsx")
    document = docx.Document()
    document.add_paragraph("Served after the bombs.")
    document.save(folder / "good.docx")
    deck = Presentation()
    deck.slides.add_slide(deck.slide_layouts[5]).shapes.title.text = "Served too"
    deck.save(folder / "good.pptx")
    (folder / "good.csv").write_text("name,value\nserved,1\n")


def answer(gateway: RunningGateway, tool: str, **arguments) -> tuple[bool, str]:
    result = gateway.call(tool, arguments, headers=SESSION, timeout=120)
    return result["isError"], "\n".join(b["text"] for b in result["content"] if b["type"] == "text")


def servers_resident_mb(gateway: RunningGateway) -> float:
    servers = psutil.Process(gateway.proc.pid).children()  # the servers, not the workers they fork
    return sum(resident_mb(server.pid) for server in servers)


def test_every_bomb_gets_a_sentence_and_the_servers_stay_small(gateway_factory, tmp_path: Path) -> None:
    gateway = gateway_factory("--servers", SERVERS, "--replicas", "1", env=ENV)
    make_good_files(gateway.dataset_dir)
    assert answer(
        gateway, "read_data_from_excel", filepath="/workspace/gaia_dataset/good.xlsx", sheet_name="Sheet"
    )[1].count("served")
    (workspace,) = gateway.session_workspaces()
    make_bombs(tmp_path)
    for bomb in tmp_path.iterdir():
        if bomb.is_file() and bomb.suffix in (".xlsx", ".docx", ".pptx", ".csv"):
            shutil.copy(bomb, workspace / bomb.name)
    for name in ("extract_docx_content", "extract_pptx_content", "extract_csv_content"):  # start each once
        answer(gateway, name, file_path=f"/workspace/gaia_dataset/good.{name.split('_')[1]}")
    before = servers_resident_mb(gateway)

    bombs = [
        ("insert_rows", {"filepath": "far.xlsx", "sheet_name": "Sheet", "start_row": 2, "count": 1},
         "spans A1:XFD1048576 (17,179,869,184 cells)"),
        ("read_data_from_excel", {"filepath": "strings.xlsx", "sheet_name": "Sheet"},
         "its part xl/sharedStrings.xml declares 300.0 MB once inflated"),
        ("extract_docx_content", {"file_path": "photo.docx"},
         "its part word/media/image1.png declares 1,024.0 MB once inflated"),
        ("extract_docx_content", {"file_path": "body.docx"},
         "its part word/document.xml declares 1,024.0 MB once inflated"),
        ("extract_docx_content", {"file_path": "long.docx"},
         f"more than the {CALL_MEMORY_MB} MB of memory one call may use (GAIA_CALL_MEMORY_MB)"),
        ("extract_pptx_content", {"file_path": "talk.pptx"},
         "its part ppt/media/image1.png declares 1,024.0 MB once inflated"),
        ("extract_csv_content", {"file_path": "line.csv"}, "has a line longer than 1 MB (GAIA_MAX_LINE_MB)"),
    ]  # fmt: skip
    for tool, arguments, expected in bombs:
        is_error, text = answer(gateway, tool, **arguments)
        assert is_error and expected in text, (tool, text)
        assert str(workspace) not in text  # the agent's names, never the host's path

    grown = servers_resident_mb(gateway) - before
    assert grown < 100, f"the servers grew by {grown:.0f} MB"
    assert not (workspace / "docx_images").exists() and not (workspace / "pptx_images").exists()
    ready = gateway.status()["servers"]
    assert all(ready[server]["restarts"] == 0 for server in SERVERS.split(",")), ready
    served = [
        answer(
            gateway, "read_data_from_excel", filepath="/workspace/gaia_dataset/good.xlsx", sheet_name="Sheet"
        ),
        answer(gateway, "extract_docx_content", file_path="/workspace/gaia_dataset/good.docx"),
        answer(gateway, "extract_pptx_content", file_path="/workspace/gaia_dataset/good.pptx"),
        answer(gateway, "extract_csv_content", file_path="/workspace/gaia_dataset/good.csv"),
    ]
    assert [is_error for is_error, _ in served] == [False] * 4, served
    assert "Served after the bombs." in served[1][1] and "Served too" in served[2][1]
