"""extract_docx_content and list_supported_formats through the MCP protocol, on generated documents."""

import io
import json
import zipfile
from pathlib import Path

import docx
import pytest
from documents_docx_server.server import server
from docx.opc.constants import CONTENT_TYPE as CT
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.opc.packuri import PackURI
from docx.opc.part import Part
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls
from gaia_kit.documents.convert import convert_with_libreoffice
from gaia_kit_testing import failed, ok
from PIL import Image

pytestmark = pytest.mark.anyio

FOOTNOTES = (
    f"<w:footnotes {nsdecls('w')}>"
    '<w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:footnote>'
    '<w:footnote w:id="1"><w:p><w:r><w:t>Source: the 2023 field survey.</w:t></w:r></w:p></w:footnote>'
    "</w:footnotes>"
)


def png_bytes(color: str = "red") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), color).save(buffer, "PNG")
    return buffer.getvalue()


def make_report(path: Path) -> Path:
    document = docx.Document()
    document.core_properties.title = "Annual report"
    document.core_properties.author = "Ada Lovelace"
    document.add_heading("Annual report", level=1)
    intro = document.add_paragraph("The ")
    intro.add_run("key").bold = True
    intro.add_run(" finding is growth.")
    reference = intro.add_run()
    reference._r.append(parse_xml(f'<w:footnoteReference {nsdecls("w")} w:id="1"/>'))
    document.add_heading("Results", level=2)
    document.add_paragraph("apple", style="List Bullet")
    document.add_paragraph("banana", style="List Bullet")
    document.add_paragraph("first step", style="List Number")
    table = document.add_table(rows=3, cols=2)
    for row, values in zip(table.rows, [("Name", "Qty"), ("apple", "3"), ("pear | green", "7")], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_picture(io.BytesIO(png_bytes()))
    closing = document.add_paragraph("Closing remark.")
    document.add_comment(closing.runs, text="Check this number.", author="Reviewer")
    section = document.sections[0]
    section.header.paragraphs[0].text = "ACME Corp confidential"
    section.footer.paragraphs[0].text = "Page footer text"
    footnotes = Part(
        PackURI("/word/footnotes.xml"), CT.WML_FOOTNOTES, FOOTNOTES.encode(), document.part.package
    )
    document.part.relate_to(footnotes, RT.FOOTNOTES)
    document.save(path)
    return path


async def test_tools_are_listed():
    assert {tool.name for tool in await server.list_tools()} == {
        "extract_docx_content",
        "list_supported_formats",
    }


async def test_markdown_has_everything_in_order(call, env):
    make_report(env.workspace / "report.docx")
    out = ok(await call("extract_docx_content", file_path="report.docx"))
    assert "File: report.docx" in out and "Author: Ada Lovelace" in out
    assert "Structure: 1 paragraphs" not in out and "2 headings" in out and "1 tables" in out
    body = out.split("## Content", 1)[1]
    assert body.index("# Annual report") < body.index("The **key** finding is growth.[^1]")
    assert body.index("## Results") < body.index("- apple\n- banana\n1. first step")
    assert "| Name | Qty |\n|---|---|\n| apple | 3 |\n| pear \\| green | 7 |" in body
    assert "ACME Corp confidential" in out.split("## Headers", 1)[1]
    assert "Page footer text" in out.split("## Footers", 1)[1]
    assert "[^1]: Source: the 2023 field survey." in out
    assert "- Reviewer: Check this number." in out
    images = out.split("## Images saved to the workspace", 1)[1].split()
    saved = Path(images[1])  # workspace-relative, never the host's path
    assert saved.parent == Path("docx_images/report") and (env.workspace / saved).read_bytes() == png_bytes()
    assert f"![image]({saved})" in body


async def test_images_stop_at_the_workspace_quota(call, env, workspace_quota):
    workspace_quota(1)
    make_report(env.dataset / "report.docx")  # the dataset does not count against the quota
    filler = env.workspace / "filler.bin"
    filler.write_bytes(b"f" * (2**20 - 10))
    message = failed(await call("extract_docx_content", file_path=str(env.dataset / "report.docx")))
    assert "past its quota" in message and "extract_images=false" in message and "rm -r" in message
    out = ok(
        await call("extract_docx_content", file_path=str(env.dataset / "report.docx"), extract_images=False)
    )
    assert "Annual report" in out
    filler.unlink()
    out = ok(await call("extract_docx_content", file_path=str(env.dataset / "report.docx")))
    assert "## Images saved to the workspace" in out


async def test_json_and_text_formats(call, env):
    make_report(env.workspace / "report.docx")
    data = json.loads(ok(await call("extract_docx_content", file_path="report.docx", output_format="json")))
    kinds = [b["type"] for b in data["blocks"]]
    assert kinds[:2] == ["heading", "paragraph"] and "table" in kinds and "image" in kinds
    assert data["blocks"][0] == {"type": "heading", "text": "Annual report", "level": 1}
    table = next(b for b in data["blocks"] if b["type"] == "table")
    assert table["rows"][2] == ["pear | green", "7"]
    assert {"type": "list_item", "text": "first step", "level": 0, "ordered": True} in data["blocks"]
    assert data["structure"]["tables"] == 1 and data["structure"]["images"] == 1
    assert data["footnotes"] == [{"id": "1", "text": "Source: the 2023 field survey."}]
    assert data["comments"] == [{"author": "Reviewer", "text": "Check this number."}]
    assert data["headers"] == ["ACME Corp confidential"] and data["properties"]["Title"] == "Annual report"
    plain = ok(await call("extract_docx_content", file_path="report.docx", output_format="text"))
    assert "Annual report" in plain and "apple\t3" in plain and "**" not in plain and "|---|" not in plain
    assert failed(await call("extract_docx_content", file_path="report.docx", output_format="xml"))


async def test_options_leave_parts_out(call, env):
    make_report(env.workspace / "report.docx")
    out = ok(
        await call(
            "extract_docx_content",
            file_path="report.docx",
            extract_images=False,
            extract_tables=False,
            extract_headers_footers=False,
            include_structure=False,
        )
    )
    assert "| Name |" not in out and "ACME Corp" not in out and "Structure:" not in out
    assert "![image]" not in out and not (env.workspace / "docx_images").exists()
    assert "The **key** finding" in out


async def test_paging(call, env):
    document = docx.Document()
    for i in range(200):
        document.add_paragraph(f"Paragraph number {i} says something.")
    document.save(env.workspace / "long.docx")
    first = ok(await call("extract_docx_content", file_path="long.docx", max_length=500))
    assert "Call again with start_index=500" in first and "Paragraph number 199" not in first
    rest = ok(await call("extract_docx_content", file_path="long.docx", start_index=500, max_length=100_000))
    assert "Paragraph number 199 says something." in rest


async def test_legacy_doc_through_libreoffice(call, env, tmp_path):
    source = make_report(tmp_path / "legacy.docx")
    legacy = convert_with_libreoffice(source, "doc", env.workspace, timeout=120)
    out = ok(await call("extract_docx_content", file_path=legacy.name))
    assert "Converted from legacy Word (.doc) with LibreOffice." in out
    assert "# Annual report" in out and "| apple | 3 |" in out and "ACME Corp confidential" in out
    assert list((env.workspace / "docx_images" / "legacy").iterdir())


async def test_paths_outside_the_workspace_are_refused(call, env, tmp_path):
    outside = make_report(tmp_path / "secret.docx")
    (env.workspace / "link.docx").symlink_to(outside)
    for path in (str(outside), "../../secret.docx", "link.docx", "/etc/passwd"):
        assert "Access denied" in failed(await call("extract_docx_content", file_path=path))


async def test_broken_and_mislabelled_files(call, env):
    workspace = env.workspace
    with zipfile.ZipFile(workspace / "photos.docx", "w") as archive:
        archive.writestr("holiday.txt", "not a document")
    (workspace / "page.docx").write_text("<!DOCTYPE html><html><body>Not found</body></html>")
    good = make_report(workspace / "good.docx").read_bytes()
    (workspace / "cut.docx").write_bytes(good[: len(good) // 2])
    (workspace / "empty.docx").write_bytes(b"")
    (workspace / "locked.docx").write_bytes(b"\xd0\xcf\x11\xe0" + "EncryptedPackage".encode("utf-16-le") * 4)
    expected = {
        "photos.docx": "not a Word document (it has no word/document.xml)",
        "page.docx": "HTML page",
        "cut.docx": "damaged or truncated ZIP",
        "empty.docx": "the file is empty",
        "locked.docx": "password-protected",
    }
    for name, problem in expected.items():
        message = failed(await call("extract_docx_content", file_path=name))
        assert name in message and problem in message, message
    assert "does not exist" in failed(await call("extract_docx_content", file_path="missing.docx"))
    assert "Annual report" in ok(await call("extract_docx_content", file_path="good.docx"))


async def test_list_supported_formats(call):
    out = ok(await call("list_supported_formats"))
    assert ".docx" in out and ".doc" in out and "LibreOffice" in out and "markdown" in out
    assert "(available)" in out
