"""extract_csv_content and list_supported_formats through the MCP protocol, a 1 GB file included."""

import json
import os
import textwrap

import pytest
from documents_csv_server.server import server
from gaia_kit_testing import failed, ok, run_measured

pytestmark = pytest.mark.anyio

SALES = (
    "id,product,qty,price,sold_on,paid\n"
    "1,apple,3,1.50,2023-01-05,True\n"
    "2,banana,,0.25,2023-02-11,False\n"
    '3,"cherry, red",7,4.00,2023-03-01,True\n'
    "4,apple,1,1.50,2022-12-31,True\n"
)


async def report(call, **arguments) -> dict:
    return json.loads(ok(await call("extract_csv_content", output_format="json", **arguments)))


def by_name(entries: list[dict], key: str = "column") -> dict:
    return {entry[key]: entry for entry in entries}


async def test_tools_are_listed():
    assert {tool.name for tool in await server.list_tools()} == {
        "extract_csv_content",
        "list_supported_formats",
    }


async def test_markdown_report(call, env):
    (env.workspace / "sales.csv").write_text(SALES)
    out = ok(await call("extract_csv_content", file_path="sales.csv"))
    assert out.startswith("# CSV: sales.csv")
    assert "| Rows | 4 (every row counted) |" in out
    assert "| Delimiter | ',' (detected) |" in out
    assert "## Preview (first 4 rows)" in out and "cherry, red" in out
    assert "### Numeric columns" in out and "### Date columns" in out and "### Text columns" in out
    assert "apple (2)" in out
    assert "Quartiles (25%, 50%, 75%) are exact" in out


async def test_json_report_values(call, env):
    (env.workspace / "sales.csv").write_text(SALES)
    data = await report(call, file_path="sales.csv")
    assert data["rows"] == 4 and data["column_count"] == 6
    columns = by_name(data["columns"], "name")
    assert {name: c["type"] for name, c in columns.items()} == {
        "id": "integer",
        "product": "text",
        "qty": "integer",
        "price": "float",
        "sold_on": "date",
        "paid": "boolean",
    }
    assert columns["qty"]["missing"] == 1 and columns["product"]["distinct"] == 3
    numeric = by_name(data["statistics"]["numeric"])
    assert numeric["qty"]["sum"] == 11 and numeric["qty"]["count"] == 3 and numeric["qty"]["max"] == 7
    assert numeric["price"]["mean"] == pytest.approx(1.8125) and numeric["price"]["50%"] == pytest.approx(1.5)
    assert numeric["id"]["std"] == pytest.approx(1.2909944, rel=1e-6)
    dates = by_name(data["statistics"]["dates"])
    assert dates["sold_on"]["earliest"] == "2022-12-31" and dates["sold_on"]["latest"] == "2023-03-01"
    text_columns = by_name(data["statistics"]["categorical"])
    assert text_columns["product"]["top_values"][0] == {"value": "apple", "count": 2}
    assert text_columns["paid"]["top_values"][0] == {"value": True, "count": 3}
    assert data["preview"][1] == {
        "id": 2,
        "product": "banana",
        "qty": None,
        "price": 0.25,
        "sold_on": "2023-02-11",
        "paid": False,
    }


async def test_text_format_and_list_supported_formats(call, env):
    (env.workspace / "sales.csv").write_text(SALES)
    out = ok(await call("extract_csv_content", file_path="sales.csv", output_format="text"))
    assert out.startswith("CSV: sales.csv\n==============") and "|" not in out.split("Columns\n")[0]
    formats = ok(await call("list_supported_formats"))
    assert ".csv" in formats and ".tsv" in formats and "excel" in formats
    assert failed(await call("extract_csv_content", file_path="sales.csv", output_format="xml"))


@pytest.mark.parametrize(
    ("separator", "expected"), [(";", ";"), ("\t", "\t"), ("|", "|")], ids=["semicolon", "tab", "pipe"]
)
async def test_delimiters_are_detected(call, env, separator, expected):
    body = "".join(
        separator.join(row) + "\n" for row in [["a", "b", "c"], ["1", "x,y", "2.5"], ["2", "z", "3.5"]]
    )
    (env.workspace / "d.csv").write_text(body)
    data = await report(call, file_path="d.csv")
    assert data["delimiter"] == expected and data["delimiter_detected"] is True
    assert [c["name"] for c in data["columns"]] == ["a", "b", "c"] and data["rows"] == 2


async def test_delimiter_and_header_can_be_given(call, env):
    (env.workspace / "t.tsv").write_text("1\t2\n3\t4\n")
    data = await report(call, file_path="t.tsv", delimiter="\\t", has_header=False)
    assert data["delimiter"] == "\t" and data["delimiter_detected"] is False
    assert [c["name"] for c in data["columns"]] == ["column_1", "column_2"] and data["rows"] == 2
    assert by_name(data["statistics"]["numeric"])["column_2"]["sum"] == 6
    assert "single character" in failed(await call("extract_csv_content", file_path="t.tsv", delimiter="::"))


async def test_encodings(call, env):
    body = "city,note\nMünchen,Straße\nSão Paulo,café crème brûlée\nZürich,déjà vu à la carte\n" * 5
    (env.workspace / "latin.csv").write_bytes(body.encode("cp1252"))
    data = await report(call, file_path="latin.csv")
    assert data["encoding"] == "cp1252" and data["preview"][0]["city"] == "München"
    (env.workspace / "wide.csv").write_bytes(body.encode("utf-16"))
    data = await report(call, file_path="wide.csv")
    assert data["encoding"] == "utf-16" and data["preview"][1]["note"] == "café crème brûlée"
    given = await report(call, file_path="latin.csv", encoding="latin-1")
    assert given["encoding_detected"] is False and given["preview"][2]["city"] == "Zürich"
    assert "Unknown encoding" in failed(
        await call("extract_csv_content", file_path="latin.csv", encoding="nope-9")
    )


async def test_wrong_explicit_encoding_is_an_error_but_a_detected_one_degrades(call, env):
    # valid UTF-8 for the whole sniffed sample, then one Latin-1 byte far beyond it
    head = "id,word\n" + "".join(f"{i},plain\n" for i in range(20_000))
    (env.workspace / "late.csv").write_bytes(head.encode() + b"20000,caf\xe9\n")
    data = await report(call, file_path="late.csv")
    assert data["rows"] == 20_001 and any("replaced" in note for note in data["notes"])
    assert "not valid utf-8" in failed(
        await call("extract_csv_content", file_path="late.csv", encoding="utf-8")
    )


async def test_max_rows_and_statistics_switch(call, env):
    (env.workspace / "n.csv").write_text("x\n" + "".join(f"{i}\n" for i in range(1000)))
    limited = await report(call, file_path="n.csv", max_rows=10)
    assert limited["rows"] == 10 and "may have more" in limited["rows_note"]
    assert by_name(limited["statistics"]["numeric"])["x"]["max"] == 9
    bare = await report(call, file_path="n.csv", include_statistics=False)
    assert bare["statistics"] is None and "distinct" not in bare["columns"][0] and bare["rows"] == 1000
    md = ok(await call("extract_csv_content", file_path="n.csv", include_statistics=False))
    assert "## Statistics" not in md
    assert "positive" in failed(await call("extract_csv_content", file_path="n.csv", max_rows=0))


async def test_visualizations_are_written_to_the_workspace(call, env):
    (env.dataset / "sales.csv").write_text(SALES)
    data = await report(call, file_path="/workspace/gaia_dataset/sales.csv", generate_visualizations=True)
    charts = data["visualizations"]
    assert any("hist_03_qty" in path for path in charts) and any("correlation" in path for path in charts)
    assert any("top_values_02_product" in path for path in charts)
    for path in charts:
        assert path.startswith("csv_visualizations/")  # workspace-relative: never the host's path
        with open(env.workspace / path, "rb") as handle:
            assert handle.read(8) == b"\x89PNG\r\n\x1a\n"
    assert not (env.dataset / "csv_visualizations").exists()
    (env.workspace / "words.csv").write_text("w\n" + "".join(f"word{i}\n" for i in range(200)))
    none = await report(call, file_path="words.csv", generate_visualizations=True)
    assert none["visualizations"] == [] and "No chart was drawn" in none["notes"][0]


async def test_malformed_rows_are_skipped_and_said(call, env):
    (env.workspace / "bad.csv").write_text("a,b\n1,2\n3,4,5,6\n7,8\n")
    data = await report(call, file_path="bad.csv")
    assert (
        data["rows"] == 2
        and "Malformed rows were skipped" in data["notes"][0]
        and "line 3" in data["notes"][0]
    )


async def test_many_distinct_values_and_mixed_columns(call, env):
    rows = "".join(f"id{i},{i if i % 100 else 'n/a-' + str(i)}\n" for i in range(25_000))
    (env.workspace / "many.csv").write_text("key,value\n" + rows)
    data = await report(call, file_path="many.csv")
    columns = by_name(data["columns"], "name")
    assert columns["key"]["distinct"] == "> 10000"
    assert columns["value"]["type"] == "mixed"
    assert "top_values" not in by_name(data["statistics"]["categorical"])["key"]
    value = by_name(data["statistics"]["numeric"])["value"]
    assert value["count"] == 24_750 and value["non_numeric_values"] == 250


async def test_header_only_file(call, env):
    (env.workspace / "head.csv").write_text("a,b,c\n")
    data = await report(call, file_path="head.csv")
    assert data["rows"] == 0 and [c["name"] for c in data["columns"]] == ["a", "b", "c"]
    assert [c["type"] for c in data["columns"]] == ["empty", "empty", "empty"]
    assert "(no data rows)" in ok(await call("extract_csv_content", file_path="head.csv"))


async def test_long_reports_are_paged(call, env, monkeypatch):
    monkeypatch.setenv("GAIA_MAX_OUTPUT_CHARS", "1500")
    from gaia_kit.core.settings import forget_settings

    forget_settings()
    (env.workspace / "sales.csv").write_text(SALES)
    first = ok(await call("extract_csv_content", file_path="sales.csv"))
    assert "Call again with start_index=1500" in first
    second = ok(await call("extract_csv_content", file_path="sales.csv", start_index=1500))
    assert second and not second.startswith("# CSV")


async def test_bad_inputs(call, env):
    assert "does not exist" in failed(await call("extract_csv_content", file_path="missing.csv"))
    assert "directory" in failed(await call("extract_csv_content", file_path="."))
    assert "outside the allowed directories" in failed(
        await call("extract_csv_content", file_path="/etc/passwd")
    )
    (env.workspace / "book.xlsx").write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    assert "excel" in failed(await call("extract_csv_content", file_path="book.xlsx"))
    (env.workspace / "blob.csv").write_bytes(b"\x01\x00\x02\x00" * 100)
    assert "binary" in failed(await call("extract_csv_content", file_path="blob.csv"))
    (env.workspace / "empty.csv").write_text("")
    assert "empty" in failed(await call("extract_csv_content", file_path="empty.csv"))
    (env.workspace / "blank.csv").write_text("\n\n\n")
    assert "no header or rows" in failed(await call("extract_csv_content", file_path="blank.csv"))
    assert failed(await call("extract_csv_content", file_path="sales.csv", max_rows="ten"))
    assert failed(await call("extract_csv_content"))


@pytest.mark.slow
def test_a_1gb_csv_is_streamed_exactly_in_bounded_memory(tmp_path):
    """~1 GB of rows: the count must be exact, the sums exact, and peak RSS far below the file size."""
    lines_per_block = 20_000
    block = "".join(
        f"{i},{i % 13},{(i % 1000) / 4:.2f},{('north', 'south', 'east', 'west')[i % 4]},2023-{i % 12 + 1:02d}-{i % 28 + 1:02d},item number {i}\n"
        for i in range(lines_per_block)
    ).encode()
    blocks = (1 << 30) // len(block) + 1
    root = tmp_path / "workspaces"
    workspace = root / "s1"
    workspace.mkdir(parents=True)
    with open(workspace / "big.csv", "wb") as handle:
        handle.write(b"id,qty,price,region,day,label\n")
        for _ in range(blocks):
            handle.write(block)
    size = os.path.getsize(workspace / "big.csv")
    assert size > 1 << 30
    script = textwrap.dedent(
        f"""
        import anyio, json
        from mcp import Client
        from documents_csv_server.server import server

        async def main():
            async with Client(server) as client:
                result = await client.call_tool(
                    "extract_csv_content",
                    {{"file_path": "big.csv", "output_format": "json", "generate_visualizations": True}},
                    meta={{"gaia-env/session-id": "s1", "gaia-env/workspace": {str(workspace)!r}}},
                )
            text = result.content[0].text
            print(json.dumps({{"error": result.is_error, "text": text}}))

        anyio.run(main)
        """
    )
    outcome = run_measured(
        script, env={"GAIA_WORKSPACE_ROOT": str(root), "GAIA_DATASET_DIR": str(tmp_path / "dataset")}
    )
    assert not outcome["error"], outcome["text"]
    data = json.loads(outcome["text"])
    rows = blocks * lines_per_block
    assert data["rows"] == rows and data["rows_note"] == "every row counted"
    numeric = by_name(data["statistics"]["numeric"])
    assert numeric["qty"]["sum"] == blocks * sum(i % 13 for i in range(lines_per_block))
    assert numeric["id"]["max"] == lines_per_block - 1 and numeric["id"]["count"] == rows
    assert numeric["price"]["mean"] == pytest.approx(
        sum((i % 1000) / 4 for i in range(lines_per_block)) / lines_per_block
    )
    assert "estimated" in data["statistics"]["quartiles"]
    assert by_name(data["columns"], "name")["region"]["distinct"] == 4
    assert by_name(data["columns"], "name")["day"]["type"] == "date"
    assert len(data["visualizations"]) >= 3
    assert outcome["peak_rss_kb"] < 600 * 1024, f"peak RSS {outcome['peak_rss_kb'] // 1024} MB"
