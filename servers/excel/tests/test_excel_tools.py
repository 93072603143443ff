"""Every tool through the MCP protocol, on workbooks the tests build with openpyxl."""

import json
import secrets

import pytest
from excel_server.server import server
from gaia_kit.core.settings import forget_settings
from gaia_kit_testing import failed, ok
from gaia_kit_testing.compat import REFERENCE, compatibility_problems
from openpyxl import Workbook, load_workbook
from openpyxl.worksheet.datavalidation import DataValidation

pytestmark = pytest.mark.anyio

SALES = [
    ["region", "product", "qty", "price"],
    ["north", "apple", 3, 1.5],
    ["south", "apple", 5, 1.5],
    ["north", "pear", 2, 0.5],
    ["south", "pear", 4, 0.5],
]


def make_book(path, rows=SALES, sheet="Sales"):
    book = Workbook()
    book.active.title = sheet
    for row in rows:
        book.active.append(row)
    book.save(path)
    return path


def cell_values(result_text):
    return {c["address"]: c["value"] for c in json.loads(result_text)["cells"]}


async def test_all_reference_tools_are_listed_with_compatible_schemas():
    ours = {tool.name: tool.input_schema for tool in await server.list_tools()}
    reference = REFERENCE["excel"]
    assert len(reference) == 25 and {t["name"] for t in reference} <= set(ours)
    problems = {t["name"]: compatibility_problems(t["inputSchema"], ours[t["name"]]) for t in reference}
    assert not any(problems.values()), problems


async def test_write_then_read_returns_computed_values(call, env):
    out = ok(
        await call(
            "write_data_to_excel",
            filepath="book.xlsx",
            sheet_name="Data",
            data=[["a", "b", "sum"], [1, 2, "=A2+B2"], [3, 4, "=SUM(A3:B3)"], [None, None, "=SUM(C2:C3)"]],
        )
    )
    assert "Wrote 4 row(s) x 3 column(s) to Data!A1:C4" in out and "C4: computed value: 10" in out
    assert load_workbook(env.workspace / "book.xlsx").sheetnames == ["Data"]
    values = cell_values(ok(await call("read_data_from_excel", filepath="book.xlsx", sheet_name="Data")))
    assert values["C2"] == 3 and values["C3"] == 7 and values["C4"] == 10
    with_formulas = json.loads(
        ok(await call("read_data_from_excel", filepath="book.xlsx", sheet_name="Data", include_formulas=True))
    )
    c4 = next(c for c in with_formulas["cells"] if c["address"] == "C4")
    assert c4 == {"address": "C4", "value": 10, "row": 4, "column": 3, "formula": "=SUM(C2:C3)"}


async def test_uncomputable_formula_is_reported_not_passed_off_as_a_value(call, env):
    make_book(env.workspace / "s.xlsx")
    out = ok(
        await call(
            "apply_formula",
            filepath="s.xlsx",
            sheet_name="Sales",
            cell="F1",
            formula="=SUM(OFFSET(B2,1,1,2,1))",  # OFFSET: a real function the engine lacks
        )
    )
    assert "value not computed" in out and "OFFSET" in out
    data = json.loads(
        ok(await call("read_data_from_excel", filepath="s.xlsx", sheet_name="Sales", start_cell="F1"))
    )
    f1 = data["cells"][0]
    assert f1["value"] is None and "OFFSET" in f1["not_computed"]
    assert any("could not be computed" in note for note in data["notes"])


async def test_cached_values_from_a_saved_workbook_are_used(call, env):
    # A workbook saved by Excel carries <v> cached values; build one by hand with openpyxl's XML.
    make_book(env.workspace / "cached.xlsx")
    import zipfile

    source = env.workspace / "cached.xlsx"
    with zipfile.ZipFile(source) as zin:
        parts = {name: zin.read(name) for name in zin.namelist()}
    sheet = parts["xl/worksheets/sheet1.xml"].decode()
    sheet = sheet.replace(
        "</sheetData>", '<row r="9"><c r="A9"><f>WEIRDFUNC(1)</f><v>42</v></c></row></sheetData>'
    )
    parts["xl/worksheets/sheet1.xml"] = sheet.replace('ref="A1:D5"', 'ref="A1:D9"').encode()
    with zipfile.ZipFile(source, "w") as zout:
        for name, payload in parts.items():
            zout.writestr(name, payload)
    values = cell_values(
        ok(await call("read_data_from_excel", filepath="cached.xlsx", sheet_name="Sales", start_cell="A9"))
    )
    assert values == {"A9": 42}


async def test_read_pages_large_sheets_and_previews(call, env):
    rows = [["id", "text"]] + [[i, "x" * 200] for i in range(1, 2001)]
    make_book(env.workspace / "big.xlsx", rows)
    first = json.loads(ok(await call("read_data_from_excel", filepath="big.xlsx", sheet_name="Sales")))
    assert len(json.dumps(first)) < 45_000
    next_cell = first["next_start_cell"]
    assert next_cell.startswith("A") and any("start_cell=" in n for n in first["notes"])
    second = json.loads(
        ok(await call("read_data_from_excel", filepath="big.xlsx", sheet_name="Sales", start_cell=next_cell))
    )
    assert second["cells"][0]["address"] == next_cell
    assert first["cells"][-1]["row"] + 1 == second["cells"][0]["row"]
    preview = json.loads(
        ok(await call("read_data_from_excel", filepath="big.xlsx", sheet_name="Sales", preview_only=True))
    )
    assert {c["row"] for c in preview["cells"]} == set(range(1, 11)) and preview["next_start_cell"] == "A11"
    window = cell_values(
        ok(
            await call(
                "read_data_from_excel",
                filepath="big.xlsx",
                sheet_name="Sales",
                start_cell="A5",
                end_cell="A7",
            )
        )
    )
    assert window == {"A5": 4, "A6": 5, "A7": 6}
    limited = json.loads(
        ok(await call("read_data_from_excel", filepath="big.xlsx", sheet_name="Sales", max_rows=3))
    )
    assert limited["next_start_cell"] == "A4"


async def test_validation_rules_are_reported(call, env):
    book = Workbook()
    sheet = book.active
    sheet["A1"] = "yes"
    rule = DataValidation(type="list", formula1='"yes,no"', allow_blank=True)
    rule.add("A1:A10")
    sheet.add_data_validation(rule)
    book.save(env.workspace / "v.xlsx")
    info = json.loads(ok(await call("get_data_validation_info", filepath="v.xlsx", sheet_name="Sheet")))
    assert info["validation_rules"][0]["applies_to"] == "A1:A10"
    assert info["validation_rules"][0]["allowed_values"] == ["yes", "no"]
    data = json.loads(ok(await call("read_data_from_excel", filepath="v.xlsx", sheet_name="Sheet")))
    assert data["cells"][0]["validation"]["type"] == "list"
    make_book(env.workspace / "plain.xlsx")
    assert "no data validation" in ok(
        await call("get_data_validation_info", filepath="plain.xlsx", sheet_name="Sales")
    )


async def test_saves_stop_at_the_workspace_quota(call, env, workspace_quota):
    workspace_quota(1)
    ok(await call("create_workbook", filepath="q.xlsx"))
    rows = [
        [secrets.token_urlsafe(60) for _ in range(10)] for _ in range(3000)
    ]  # about 1.8 MB, incompressible
    message = failed(await call("write_data_to_excel", filepath="q.xlsx", sheet_name="Sheet", data=rows))
    assert "Saving q.xlsx would take the session workspace past its quota" in message, message
    assert "GAIA_WORKSPACE_MAX_MB" in message and "rm -r" in message
    assert load_workbook(env.workspace / "q.xlsx")["Sheet"].max_row == 1  # the old file is intact
    ok(await call("write_data_to_excel", filepath="q.xlsx", sheet_name="Sheet", data=rows[:50]))


async def test_workbook_and_sheet_management(call, env):
    assert "Created workbook" in ok(await call("create_workbook", filepath="new.xlsx"))
    assert "already exists" in failed(await call("create_workbook", filepath="new.xlsx"))
    ok(await call("create_worksheet", filepath="new.xlsx", sheet_name="Two"))
    assert "already exists" in failed(await call("create_worksheet", filepath="new.xlsx", sheet_name="Two"))
    ok(await call("write_data_to_excel", filepath="new.xlsx", sheet_name="Two", data=[[1, 2]]))
    ok(await call("copy_worksheet", filepath="new.xlsx", source_sheet="Two", target_sheet="Three"))
    ok(await call("rename_worksheet", filepath="new.xlsx", old_name="Three", new_name="Copy"))
    ok(await call("delete_worksheet", filepath="new.xlsx", sheet_name="Sheet"))
    meta = json.loads(ok(await call("get_workbook_metadata", filepath="new.xlsx", include_ranges=True)))
    assert [s["name"] for s in meta["sheets"]] == ["Two", "Copy"]
    assert meta["sheets"][1]["used_range"] == "A1:B1"
    book = load_workbook(env.workspace / "new.xlsx")
    assert book["Copy"]["B1"].value == 2
    ok(await call("delete_worksheet", filepath="new.xlsx", sheet_name="Copy"))
    assert "only sheet" in failed(await call("delete_worksheet", filepath="new.xlsx", sheet_name="Two"))
    assert "no sheet named 'Nope'" in failed(
        await call("rename_worksheet", filepath="new.xlsx", old_name="Nope", new_name="X")
    )
    assert "not a valid sheet name" in failed(
        await call("create_worksheet", filepath="new.xlsx", sheet_name="bad/name")
    )
    assert "create_workbook first" in failed(
        await call("create_worksheet", filepath="none.xlsx", sheet_name="A")
    )


async def test_formulas_apply_and_validate(call, env):
    make_book(env.workspace / "s.xlsx")
    out = ok(
        await call("apply_formula", filepath="s.xlsx", sheet_name="Sales", cell="C6", formula="=SUM(C2:C5)")
    )
    assert "computed value: 14" in out
    assert load_workbook(env.workspace / "s.xlsx")["Sales"]["C6"].value == "=SUM(C2:C5)"
    checked = ok(
        await call(
            "validate_formula_syntax",
            filepath="s.xlsx",
            sheet_name="Sales",
            cell="A1",
            formula="=AVERAGE(D2:D5)*2",
        )
    )
    assert "is valid" in checked and "computed value: 2" in checked
    for bad in (
        '=WEBSERVICE("http://x")',
        '=INDIRECT("A1")',
        '=HYPERLINK("http://x")',
        '=RTD("a",,"b")',
        "=DGET(A1:D5,1,A1:A2)",
    ):
        assert "not allowed" in failed(
            await call("apply_formula", filepath="s.xlsx", sheet_name="Sales", cell="E1", formula=bad)
        )
    assert "not allowed" in failed(
        await call(
            "write_data_to_excel", filepath="s.xlsx", sheet_name="Sales", data=[['=WEBSERVICE("http://x")']]
        )
    )
    assert "malformed" in failed(
        await call(
            "validate_formula_syntax", filepath="s.xlsx", sheet_name="Sales", cell="A1", formula="=SUM(1,"
        )
    )
    assert load_workbook(env.workspace / "s.xlsx")["Sales"]["E1"].value is None


async def test_format_merge_and_conditional_format(call, env):
    make_book(env.workspace / "f.xlsx")
    out = ok(
        await call(
            "format_range",
            filepath="f.xlsx",
            sheet_name="Sales",
            start_cell="A1",
            end_cell="D1",
            bold=True,
            font_color="#FF0000",
            bg_color="yellow",
            border_style="thin",
            number_format="0.00",
            alignment="center",
            wrap_text=True,
            protection={"locked": False},
            conditional_format={
                "type": "cell_is",
                "params": {"operator": "greaterThan", "formula": ["3"], "bg_color": "FFC7CE"},
            },
        )  # fmt: skip
    )
    assert "font" in out and "conditional format" in out
    sheet = load_workbook(env.workspace / "f.xlsx")["Sales"]
    assert sheet["B1"].font.b and sheet["B1"].font.color.rgb == "FFFF0000"
    assert sheet["B1"].fill.start_color.rgb == "FFFFFF00" and sheet["B1"].alignment.horizontal == "center"
    assert sheet["B1"].protection.locked is False and len(sheet.conditional_formatting) == 1
    assert "not a color" in failed(
        await call("format_range", filepath="f.xlsx", sheet_name="Sales", start_cell="A1", font_color="nope")
    )
    ok(await call("merge_cells", filepath="f.xlsx", sheet_name="Sales", start_cell="A7", end_cell="B8"))
    merged = json.loads(ok(await call("get_merged_cells", filepath="f.xlsx", sheet_name="Sales")))
    assert merged["merged_ranges"] == ["A7:B8"]
    ok(await call("unmerge_cells", filepath="f.xlsx", sheet_name="Sales", start_cell="A7", end_cell="B8"))
    assert "no merged cells" in ok(await call("get_merged_cells", filepath="f.xlsx", sheet_name="Sales"))
    assert "not a merged range" in failed(
        await call("unmerge_cells", filepath="f.xlsx", sheet_name="Sales", start_cell="A7", end_cell="B8")
    )


async def test_tables_charts_and_pivots(call, env):
    make_book(env.workspace / "t.xlsx")
    assert "Table1" in ok(
        await call("create_table", filepath="t.xlsx", sheet_name="Sales", data_range="A1:D5")
    )
    assert "overlaps" in failed(
        await call(
            "create_table", filepath="t.xlsx", sheet_name="Sales", data_range="A1:B3", table_name="Second"
        )
    )
    ok(
        await call(
            "create_chart",
            filepath="t.xlsx",
            sheet_name="Sales",
            data_range="B1:C5",
            chart_type="bar",
            target_cell="F2",
            title="Qty",
        )
    )
    assert "unknown" in failed(
        await call(
            "create_chart",
            filepath="t.xlsx",
            sheet_name="Sales",
            data_range="B1:C5",
            chart_type="donut3d",
            target_cell="F2",
        )
    )
    # The reference's default aggregation ("mean") was refused by its own validator; here it works.
    out = ok(
        await call(
            "create_pivot_table",
            filepath="t.xlsx",
            sheet_name="Sales",
            data_range="A1:D5",
            rows=["product"],
            values=["qty"],
        )
    )
    assert "Sales_pivot" in out
    book = load_workbook(env.workspace / "t.xlsx")
    assert len(book["Sales"].tables) == 1 and len(book["Sales"]._charts) == 1
    pivot = [list(r) for r in book["Sales_pivot"].iter_rows(values_only=True)]
    assert pivot == [["product", "mean(qty)"], ["apple", 4], ["pear", 3]]
    ok(
        await call(
            "create_pivot_table",
            filepath="t.xlsx",
            sheet_name="Sales",
            data_range="A1:D5",
            rows=["region"],
            values=["qty"],
            columns=["product"],
            agg_func="sum",
        )
    )
    crossed = [
        list(r) for r in load_workbook(env.workspace / "t.xlsx")["Sales_pivot_2"].iter_rows(values_only=True)
    ]
    assert crossed == [["region", "sum(qty) | apple", "sum(qty) | pear"], ["north", 3, 2], ["south", 5, 4]]
    assert "no column named" in failed(
        await call(
            "create_pivot_table",
            filepath="t.xlsx",
            sheet_name="Sales",
            data_range="A1:D5",
            rows=["nope"],
            values=["qty"],
        )
    )


async def test_copy_and_delete_ranges_rows_and_columns(call, env):
    make_book(env.workspace / "r.xlsx", [[1, 2, "=A1+B1"], [3, 4, "=A2+B2"], [5, 6, "=A3+B3"]], sheet="S")
    ok(
        await call(
            "copy_range",
            filepath="r.xlsx",
            sheet_name="S",
            source_start="A1",
            source_end="C1",
            target_start="A5",
        )
    )
    sheet = load_workbook(env.workspace / "r.xlsx")["S"]
    assert [c.value for c in sheet[5]] == [1, 2, "=A5+B5"]
    ok(await call("create_worksheet", filepath="r.xlsx", sheet_name="T"))
    ok(
        await call(
            "copy_range",
            filepath="r.xlsx",
            sheet_name="S",
            source_start="A2",
            source_end="B2",
            target_start="B2",
            target_sheet="T",
        )
    )
    assert load_workbook(env.workspace / "r.xlsx")["T"]["C2"].value == 4
    ok(await call("delete_range", filepath="r.xlsx", sheet_name="S", start_cell="A1", end_cell="A1"))
    sheet = load_workbook(env.workspace / "r.xlsx")["S"]
    assert [sheet.cell(r, 1).value for r in range(1, 5)] == [3, 5, None, 1]
    ok(
        await call(
            "delete_range",
            filepath="r.xlsx",
            sheet_name="S",
            start_cell="A2",
            end_cell="A2",
            shift_direction="left",
        )
    )
    assert load_workbook(env.workspace / "r.xlsx")["S"]["A2"].value == 4
    assert "up or left" in failed(
        await call(
            "delete_range",
            filepath="r.xlsx",
            sheet_name="S",
            start_cell="A1",
            end_cell="A1",
            shift_direction="down",
        )
    )
    ok(await call("insert_rows", filepath="r.xlsx", sheet_name="S", start_row=1, count=2))
    ok(await call("insert_columns", filepath="r.xlsx", sheet_name="S", start_col=1))
    sheet = load_workbook(env.workspace / "r.xlsx")["S"]
    assert sheet["B3"].value == 3 and sheet["A3"].value is None
    ok(await call("delete_sheet_rows", filepath="r.xlsx", sheet_name="S", start_row=1, count=2))
    ok(await call("delete_sheet_columns", filepath="r.xlsx", sheet_name="S", start_col=1))
    assert load_workbook(env.workspace / "r.xlsx")["S"]["A1"].value == 3
    assert "1 or more" in failed(await call("insert_rows", filepath="r.xlsx", sheet_name="S", start_row=0))


async def test_validate_excel_range(call, env):
    make_book(env.workspace / "s.xlsx")
    assert "inside the sheet's data range A1:D5" in ok(
        await call(
            "validate_excel_range", filepath="s.xlsx", sheet_name="Sales", start_cell="B2", end_cell="C3"
        )
    )
    assert "outside" in ok(
        await call(
            "validate_excel_range", filepath="s.xlsx", sheet_name="Sales", start_cell="A1", end_cell="Z99"
        )
    )
    assert "not a cell address" in failed(
        await call("validate_excel_range", filepath="s.xlsx", sheet_name="Sales", start_cell="1A")
    )


async def test_csv_inputs_are_read_through_a_conversion(call, env):
    (env.dataset / "people.csv").write_text("name;age\nann;31\nbob;27\n")
    data = json.loads(
        ok(await call("read_data_from_excel", filepath=str(env.dataset / "people.csv"), sheet_name="people"))
    )
    assert {c["address"]: c["value"] for c in data["cells"]} == {
        "A1": "name",
        "B1": "age",
        "A2": "ann",
        "B2": 31,
        "A3": "bob",
        "B3": 27,
    }
    assert any("converted" in note for note in data["notes"])
    assert list((env.workspace / "excel_converted").glob("people-*.xlsx"))
    assert "does not write" in failed(
        await call("write_data_to_excel", filepath="people.csv", sheet_name="people", data=[[1]])
    )


async def test_xlsm_keeps_its_macros(call, env):
    import zipfile

    make_book(env.workspace / "plain.xlsx")
    macro = env.workspace / "m.xlsm"
    with zipfile.ZipFile(env.workspace / "plain.xlsx") as zin, zipfile.ZipFile(macro, "w") as zout:
        for name in zin.namelist():
            zout.writestr(name, zin.read(name))
        zout.writestr("xl/vbaProject.bin", b"VBA-PROJECT-BYTES")
    ok(
        await call(
            "write_data_to_excel", filepath="m.xlsm", sheet_name="Sales", data=[["changed"]], start_cell="F1"
        )
    )
    with zipfile.ZipFile(macro) as archive:
        assert archive.read("xl/vbaProject.bin") == b"VBA-PROJECT-BYTES"
    assert load_workbook(macro)["Sales"]["F1"].value == "changed"


async def test_xls_inputs_are_read_through_libreoffice(call, env, tmp_path):
    from gaia_kit.documents.convert import convert_with_libreoffice

    source = tmp_path / "legacy.xlsx"
    book = Workbook()
    book.active.title = "Old"
    book.active.append(["item", "cost"])
    book.active.append(["lamp", 12.5])
    book.save(source)
    xls = convert_with_libreoffice(source, "xls", env.dataset, timeout=120)
    assert xls.suffix == ".xls"
    data = json.loads(ok(await call("read_data_from_excel", filepath=str(xls), sheet_name="Old")))
    assert {c["address"]: c["value"] for c in data["cells"]} == {
        "A1": "item",
        "B1": "cost",
        "A2": "lamp",
        "B2": 12.5,
    }
    meta = json.loads(ok(await call("get_workbook_metadata", filepath=str(xls))))
    assert [s["name"] for s in meta["sheets"]] == ["Old"] and "converted_copy" in meta


async def test_rows_layout_carries_the_same_values_in_a_fraction_of_the_characters(call, env):
    from gaia_kit_testing import formula_cases

    formula_cases.build(env.workspace / "cases.xlsx")
    arguments = {"filepath": "cases.xlsx", "sheet_name": "Sales"}
    per_cell = ok(await call("read_data_from_excel", **arguments))
    as_rows = ok(await call("read_data_from_excel", layout="rows", **arguments))
    data = json.loads(as_rows)
    assert data["range"] == "A1:E7" and data["rows"][0] == formula_cases.SALES[0]
    assert data["rows"][1] == ["Apple", "East", "2024-01-15", 10, 1.5]
    flat = {
        f"{chr(ord('A') + c)}{r + 1}": v
        for r, row in enumerate(data["rows"])
        for c, v in enumerate(row)
        if v is not None
    }
    assert flat == cell_values(per_cell)
    assert len(as_rows) < len(per_cell) / 4
    calc = json.loads(
        ok(
            await call(
                "read_data_from_excel",
                filepath="cases.xlsx",
                sheet_name="Calc",
                layout="rows",
                include_formulas=True,
            )
        )
    )
    assert [row[1] for row in calc["rows"]][:4] == [7, 4, 2, 8] and calc["formulas"]["B20"] == "=B1+B2*B17"


async def test_rows_layout_pages_and_keeps_gaps_in_place(call, env):
    rows = [["id", "v"]] + [[i, i * 2] for i in range(1, 30)]
    make_book(env.workspace / "p.xlsx", rows=rows)
    book = load_workbook(env.workspace / "p.xlsx")
    book.active["B3"] = None
    book.active["D2"] = "far"
    book.save(env.workspace / "p.xlsx")
    first = json.loads(
        ok(
            await call(
                "read_data_from_excel", filepath="p.xlsx", sheet_name="Sales", layout="rows", max_rows=3
            )
        )
    )
    assert first["rows"] == [["id", "v"], [1, 2, None, "far"], [2]] and first["next_start_cell"] == "A4"
    more = json.loads(
        ok(
            await call(
                "read_data_from_excel", filepath="p.xlsx", sheet_name="Sales", layout="rows", start_cell="A4"
            )
        )
    )
    assert more["range"].startswith("A4:") and more["rows"][0] == [3, 6] and len(more["rows"]) == 27


async def test_the_layout_default_is_a_server_setting(call, env, monkeypatch):
    make_book(env.workspace / "s.xlsx")
    monkeypatch.setenv("GAIA_EXCEL_READ_LAYOUT", "rows")
    assert "rows" in json.loads(ok(await call("read_data_from_excel", filepath="s.xlsx", sheet_name="Sales")))
    assert "cells" in json.loads(
        ok(await call("read_data_from_excel", filepath="s.xlsx", sheet_name="Sales", layout="cells"))
    )
    monkeypatch.setenv("GAIA_EXCEL_READ_LAYOUT", "grid")
    forget_settings()  # settings are read once per process: read them again
    assert "GAIA_EXCEL_READ_LAYOUT is set to 'grid'; set it to 'cells' or 'rows'." in failed(
        await call("read_data_from_excel", filepath="s.xlsx", sheet_name="Sales")
    )
