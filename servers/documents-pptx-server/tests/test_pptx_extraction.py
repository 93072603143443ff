"""extract_pptx_content and list_supported_formats through the MCP protocol, on generated decks."""

import io
import json
import zipfile
from pathlib import Path

import pytest
from documents_pptx_server.server import server
from gaia_kit.documents.convert import convert_with_libreoffice
from gaia_kit_testing import failed, ok
from PIL import Image
from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.util import Inches

pytestmark = pytest.mark.anyio


def png_bytes() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), "blue").save(buffer, "PNG")
    return buffer.getvalue()


def make_deck(path: Path) -> Path:
    deck = Presentation()
    deck.core_properties.title = "Quarterly review"
    title = deck.slides.add_slide(deck.slide_layouts[0])
    title.shapes.title.text = "Quarterly review"
    title.placeholders[1].text = "Prepared by the finance team"
    title.notes_slide.notes_text_frame.text = "Welcome everyone."
    bullets = deck.slides.add_slide(deck.slide_layouts[1])
    bullets.shapes.title.text = "Highlights"
    frame = bullets.placeholders[1].text_frame
    frame.text = "Revenue grew"
    sub = frame.add_paragraph()
    sub.text = "mostly in Europe"
    sub.level = 1
    # Added last but placed above the body: reading order follows the position, not the file.
    box = bullets.shapes.add_textbox(Inches(1), Inches(0.1), Inches(4), Inches(0.5))
    box.text_frame.text = "Top banner"
    data = deck.slides.add_slide(deck.slide_layouts[5])
    data.shapes.title.text = "Numbers"
    table = data.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(4), Inches(1.5)).table
    for r, row in enumerate([("Region", "Sales"), ("Europe", "120"), ("Asia", "80")]):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    data.shapes.add_picture(io.BytesIO(png_bytes()), Inches(6), Inches(5))
    chart_data = CategoryChartData()
    chart_data.categories = ["Q1", "Q2"]
    chart_data.add_series("Profit", (1.5, 2.5))
    chart_slide = deck.slides.add_slide(deck.slide_layouts[5])
    chart_slide.shapes.title.text = "Trend"
    chart_slide.shapes.add_chart(
        XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(2), Inches(6), Inches(4), chart_data
    )
    deck.save(path)
    return path


async def test_tools_are_listed():
    assert {tool.name for tool in await server.list_tools()} == {
        "extract_pptx_content",
        "list_supported_formats",
    }


async def test_markdown_slide_by_slide(call, env):
    make_deck(env.workspace / "deck.pptx")
    out = ok(await call("extract_pptx_content", file_path="deck.pptx"))
    assert out.startswith("# deck.pptx") and "Title: Quarterly review" in out
    assert (
        "Structure: 4 slides, 0 hidden slides, 3 text frames, 1 tables, 1 charts, 1 images, 1 slides with notes"
        in out
    )
    slides = out.split("\n## Slide ")
    assert slides[1].startswith("1: Quarterly review") and "Prepared by the finance team" in slides[1]
    assert "### Speaker notes\n\nWelcome everyone." in slides[1]
    assert slides[2].startswith("2: Highlights")
    assert slides[2].index("Top banner") < slides[2].index("- Revenue grew\n  - mostly in Europe")
    assert "| Region | Sales |\n|---|---|\n| Europe | 120 |" in slides[3]
    image = env.workspace / "pptx_images" / "deck" / "slide3_image1.png"
    assert image.read_bytes() == png_bytes() and "![image](pptx_images/deck/slide3_image1.png)" in slides[3]
    assert "Chart: " in slides[4] and "Profit: Q1=1.5, Q2=2.5" in slides[4]


async def test_json_and_text_formats(call, env):
    make_deck(env.workspace / "deck.pptx")
    data = json.loads(ok(await call("extract_pptx_content", file_path="deck.pptx", output_format="json")))
    assert [s["number"] for s in data["slides"]] == [1, 2, 3, 4]
    assert [s["title"] for s in data["slides"]] == ["Quarterly review", "Highlights", "Numbers", "Trend"]
    second = data["slides"][1]["content"]
    assert second[1] == {
        "type": "text",
        "paragraphs": [{"level": 0, "text": "Revenue grew"}, {"level": 1, "text": "mostly in Europe"}],
    }
    assert {"type": "table", "rows": [["Region", "Sales"], ["Europe", "120"], ["Asia", "80"]]} in data[
        "slides"
    ][2]["content"]
    assert data["slides"][0]["notes"] == "Welcome everyone." and data["structure"]["slides"] == 4
    plain = ok(await call("extract_pptx_content", file_path="deck.pptx", output_format="text"))
    assert "Slide 3: Numbers" in plain and "Europe\t120" in plain and "|---|" not in plain
    assert failed(await call("extract_pptx_content", file_path="deck.pptx", output_format="html"))


async def test_options_leave_parts_out(call, env):
    make_deck(env.workspace / "deck.pptx")
    out = ok(
        await call(
            "extract_pptx_content",
            file_path="deck.pptx",
            extract_images=False,
            extract_notes=False,
            include_structure=False,
        )
    )
    assert "Welcome everyone." not in out and "![image]" not in out and "Structure:" not in out
    assert not (env.workspace / "pptx_images").exists() and "| Europe | 120 |" in out


async def test_paging(call, env):
    deck = Presentation()
    for i in range(60):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Topic {i}"
        slide.placeholders[1].text_frame.text = "Some words about this topic. " * 5
    deck.save(env.workspace / "long.pptx")
    first = ok(await call("extract_pptx_content", file_path="long.pptx", max_length=1000))
    assert "Call again with start_index=1000" in first and "Topic 59" not in first
    rest = ok(await call("extract_pptx_content", file_path="long.pptx", start_index=1000, max_length=40_000))
    assert "## Slide 60: Topic 59" in rest


async def test_legacy_ppt_through_libreoffice(call, env, tmp_path):
    legacy = convert_with_libreoffice(make_deck(tmp_path / "old.pptx"), "ppt", env.workspace, timeout=120)
    out = ok(await call("extract_pptx_content", file_path=legacy.name))
    assert "Converted from legacy PowerPoint (.ppt) with LibreOffice." in out
    assert "## Slide 1: Quarterly review" in out and "| Europe | 120 |" in out and "Welcome everyone." in out


async def test_paths_outside_the_workspace_are_refused(call, env, tmp_path):
    outside = make_deck(tmp_path / "secret.pptx")
    (env.workspace / "link.pptx").symlink_to(outside)
    for path in (str(outside), "../../secret.pptx", "link.pptx", "/etc/hostname"):
        assert "Access denied" in failed(await call("extract_pptx_content", file_path=path))


async def test_broken_and_mislabelled_files(call, env):
    workspace = env.workspace
    with zipfile.ZipFile(workspace / "music.pptx", "w") as archive:
        archive.writestr("song.txt", "la la la")
    (workspace / "page.pptx").write_text("<html><body>Login required</body></html>")
    good = make_deck(workspace / "good.pptx").read_bytes()
    (workspace / "cut.pptx").write_bytes(good[: len(good) // 3])
    (workspace / "locked.pptx").write_bytes(b"\xd0\xcf\x11\xe0" + "EncryptedPackage".encode("utf-16-le"))
    (workspace / "report.pptx").write_bytes(b"%PDF-1.7\n")
    expected = {
        "music.pptx": "not a PowerPoint presentation (it has no ppt/presentation.xml)",
        "page.pptx": "HTML page",
        "cut.pptx": "damaged or truncated ZIP",
        "locked.pptx": "password-protected",
        "report.pptx": "documents-pdf-server",
    }
    for name, problem in expected.items():
        message = failed(await call("extract_pptx_content", file_path=name))
        assert name in message and problem in message, message
    assert "Quarterly review" in ok(await call("extract_pptx_content", file_path="good.pptx"))


async def test_list_supported_formats(call):
    out = ok(await call("list_supported_formats"))
    assert ".pptx" in out and ".ppt" in out and "(available)" in out and "speaker notes" in out
