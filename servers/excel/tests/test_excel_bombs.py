"""Spreadsheet bombs (issue 22, finding 13): refused in seconds, the server no larger, the next call served."""

import pytest
from gaia_kit_testing import failed, ok
from gaia_kit_testing.bombs import forge_sizes, inflate_part, resident_mb
from openpyxl import Workbook

pytestmark = pytest.mark.anyio


def book(path, **cells):
    workbook = Workbook()
    sheet = workbook.active
    sheet.title = "Sheet"
    for address, value in cells.items():
        sheet[address] = value
    workbook.save(path)
    return path


async def test_a_cell_at_the_far_corner_is_refused_for_edits_and_read_in_a_stream(call, env):
    book(env.workspace / "far.xlsx", A1="first", XFD1048576="last")
    before = resident_mb()
    refused = failed(await call("insert_rows", filepath="far.xlsx", sheet_name="Sheet", start_row=2, count=1))
    assert "spans A1:XFD1048576 (17,179,869,184 cells)" in refused and "GAIA_EXCEL_MAX_CELLS" in refused
    assert "read_data_from_excel, which streams" in refused
    read = ok(await call("read_data_from_excel", filepath="far.xlsx", sheet_name="Sheet"))
    assert "first" in read and "last" in read
    assert resident_mb() - before < 64


async def test_shared_strings_that_claim_300_mb_are_refused_unread(call, env):
    path = book(env.workspace / "strings.xlsx", A1="text")
    inflate_part(path, "xl/sharedStrings.xml", b"<sst>", b"<si><t>a</t></si>", 2**20, b"</sst>")
    forge_sizes(path, {"xl/sharedStrings.xml": 300 * 2**20})
    refused = failed(await call("read_data_from_excel", filepath="strings.xlsx", sheet_name="Sheet"))
    assert (
        "strings.xlsx was not opened: its part xl/sharedStrings.xml declares 300.0 MB once inflated"
        in refused
    )
    assert "GAIA_DOC_MAX_PART_MB" in refused
    book(env.workspace / "fine.xlsx", A1="served")
    assert "served" in ok(await call("read_data_from_excel", filepath="fine.xlsx", sheet_name="Sheet"))


async def test_a_sheet_that_grows_past_the_call_memory_limit_is_stopped(call, env, monkeypatch):
    """What passes the declared-size checks (one 40 MB text cell) meets the per-call memory limit."""
    monkeypatch.setenv("GAIA_CALL_MEMORY_MB", "48")
    monkeypatch.setenv("GAIA_DOC_MAX_RATIO", "100000")
    path = book(env.workspace / "cell.xlsx", A1=1)
    inflate_part(path, "xl/worksheets/sheet1.xml", SHEET_HEAD, b"x", 40 * 2**20, SHEET_TAIL)
    before = resident_mb()
    refused = failed(
        await call(
            "write_data_to_excel", filepath="cell.xlsx", sheet_name="Sheet", data=[["x"]], start_cell="B1"
        )
    )
    assert "more than the 48 MB of memory one call may use (GAIA_CALL_MEMORY_MB)" in refused
    assert resident_mb() - before < 64
    book(env.workspace / "small.xlsx", A1=1)
    ok(
        await call(
            "write_data_to_excel", filepath="small.xlsx", sheet_name="Sheet", data=[["x"]], start_cell="B1"
        )
    )


SHEET_HEAD = (
    b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
    b'<row r="1"><c r="A1" t="inlineStr"><is><t>'
)
SHEET_TAIL = b"</t></is></c></row></sheetData></worksheet>"
