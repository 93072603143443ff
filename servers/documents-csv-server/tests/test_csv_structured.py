"""The CSV report is also structuredContent: the json format's object, beside whichever text was asked for."""

import json

import pytest
from gaia_kit_testing import ok

pytestmark = pytest.mark.anyio


async def test_the_report_is_data_whatever_the_text_format(call, kit_env):
    (kit_env.workspace / "scores.csv").write_text("name,score\nada,3\nbob,5\n")
    markdown = await call("extract_csv_content", file_path="scores.csv")
    as_json = await call("extract_csv_content", file_path="scores.csv", output_format="json")
    assert ok(markdown).startswith("#")
    assert markdown.structured_content == json.loads(ok(as_json)) == as_json.structured_content
    assert [c["name"] for c in markdown.structured_content["columns"]] == ["name", "score"]
