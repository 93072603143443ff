"""Cell values, workbook metadata, merged cells, validation rules and range checks come as data too."""

import json

import pytest
from gaia_kit_testing import ok

pytestmark = pytest.mark.anyio


async def test_reading_tools_return_their_answer_as_structured_content(call):
    ok(await call("write_data_to_excel", filepath="b.xlsx", sheet_name="S", data=[["n", "x"], ["a", 2]]))
    ok(await call("merge_cells", filepath="b.xlsx", sheet_name="S", start_cell="D1", end_cell="E1"))

    read = await call("read_data_from_excel", filepath="b.xlsx", sheet_name="S")
    assert read.structured_content == json.loads(ok(read))
    meta = await call("get_workbook_metadata", filepath="b.xlsx")
    assert meta.structured_content == json.loads(ok(meta))
    assert [s["name"] for s in meta.structured_content["sheets"]] == ["S"]

    merged = await call("get_merged_cells", filepath="b.xlsx", sheet_name="S")
    assert merged.structured_content == {"sheet_name": "S", "merged_ranges": ["D1:E1"]}
    rules = await call("get_data_validation_info", filepath="b.xlsx", sheet_name="S")
    assert "no data validation rules" in ok(rules)
    assert rules.structured_content == {"sheet_name": "S", "validation_rules": []}

    inside = await call(
        "validate_excel_range", filepath="b.xlsx", sheet_name="S", start_cell="A1", end_cell="B2"
    )
    assert "inside" in ok(inside)
    assert inside.structured_content["inside_data"] is True and inside.structured_content["range"] == "A1:B2"
