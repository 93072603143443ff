"""A CSV with one enormous line (issue 22, finding 13): refused at the line, the server no larger."""

import pytest
from gaia_kit_testing import failed, ok
from gaia_kit_testing.bombs import long_line_csv, resident_mb

pytestmark = pytest.mark.anyio


async def test_a_line_past_the_limit_is_refused_and_the_next_file_is_read(call, env, monkeypatch):
    monkeypatch.setenv("GAIA_MAX_LINE_MB", "1")
    long_line_csv(env.workspace / "one-line.csv", 8 * 2**20)
    before = resident_mb()
    refused = failed(await call("extract_csv_content", file_path="one-line.csv"))
    assert "one-line.csv has a line longer than 1 MB (GAIA_MAX_LINE_MB)" in refused
    assert resident_mb() - before < 64
    (env.workspace / "fine.csv").write_text("name,value\nfirst,1\nsecond,2\n")
    assert "second" in ok(await call("extract_csv_content", file_path="fine.csv"))
