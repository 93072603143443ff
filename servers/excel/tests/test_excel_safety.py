"""Paths outside the roots, damaged files, concurrent writers and a writer killed mid-save."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import zipfile

import anyio
import pytest
from gaia_kit_testing import failed, ok
from openpyxl import Workbook, load_workbook

pytestmark = pytest.mark.anyio


def make_book(path, value="old"):
    book = Workbook()
    book.active["A1"] = value
    book.save(path)
    return path


@pytest.mark.parametrize("tool", ["read_data_from_excel", "write_data_to_excel"])
async def test_paths_outside_the_roots_are_refused(call, env, tmp_path, tool):
    outside = make_book(tmp_path / "outside.xlsx")
    (env.workspace / "link.xlsx").symlink_to(outside)
    args = {"sheet_name": "Sheet"} | ({"data": [["x"]]} if tool == "write_data_to_excel" else {})
    for raw in (str(outside), "../../outside.xlsx", "link.xlsx", "/etc/passwd"):
        assert "Access denied" in failed(await call(tool, filepath=raw, **args))
    assert load_workbook(outside).active["A1"].value == "old"


async def test_the_dataset_is_read_only(call, env):
    make_book(env.dataset / "given.xlsx")
    assert "read-only dataset" in failed(
        await call(
            "write_data_to_excel", filepath=str(env.dataset / "given.xlsx"), sheet_name="Sheet", data=[[1]]
        )
    )
    assert "old" in ok(
        await call("read_data_from_excel", filepath=str(env.dataset / "given.xlsx"), sheet_name="Sheet")
    )


async def test_damaged_files_get_one_sentence_and_the_server_keeps_serving(call, env):
    good = make_book(env.workspace / "good.xlsx")
    (env.workspace / "truncated.xlsx").write_bytes(good.read_bytes()[:300])
    (env.workspace / "empty.xlsx").write_bytes(b"")
    (env.workspace / "notes.xlsx").write_text("name,age\nann,31\n")
    (env.workspace / "random.xlsx").write_bytes(bytes(range(256)) * 8)
    # A password-protected xlsx is an OLE container holding an EncryptionInfo stream.
    ole = (
        bytes.fromhex("D0CF11E0A1B11AE1")
        + b"\x00" * 1000
        + "EncryptionInfo".encode("utf-16-le")
        + b"\x00" * 500
    )
    (env.workspace / "locked.xlsx").write_bytes(ole)
    with zipfile.ZipFile(env.workspace / "nobook.xlsx", "w") as archive:
        archive.writestr("hello.txt", "not a workbook")
    expected = {
        "truncated.xlsx": "corrupt or truncated",
        "empty.xlsx": "is empty",
        "notes.xlsx": "holds plain text",
        "random.xlsx": "not an Excel workbook",
        "locked.xlsx": "password-protected",
        "nobook.xlsx": "not a valid Excel workbook",
    }
    for name, problem in expected.items():
        for tool, extra in (
            ("read_data_from_excel", {}),
            ("format_range", {"start_cell": "A1", "bold": True}),
        ):
            message = failed(await call(tool, filepath=name, sheet_name="Sheet", **extra))
            assert problem in message and name in message, message
            assert "\n" not in message and "Traceback" not in message
    assert "old" in ok(await call("read_data_from_excel", filepath="good.xlsx", sheet_name="Sheet"))


async def test_concurrent_writers_to_one_workbook_lose_nothing(call, env):
    make_book(env.workspace / "shared.xlsx")

    async def write(i):
        ok(
            await call(
                "write_data_to_excel",
                filepath="shared.xlsx",
                sheet_name="Sheet",
                data=[[i]],
                start_cell=f"B{i}",
            )
        )

    async with anyio.create_task_group() as group:
        for i in range(1, 13):
            group.start_soon(write, i)
    sheet = load_workbook(env.workspace / "shared.xlsx").active
    assert [sheet.cell(i, 2).value for i in range(1, 13)] == list(range(1, 13))
    assert not [p for p in env.workspace.iterdir() if p.name.endswith(".tmp")]


WRITER = """
import sys
from openpyxl import load_workbook
from excel_server.files import save_atomically
from pathlib import Path

path = Path(sys.argv[1])
book = load_workbook(path)
sheet = book.active
for r in range(1, 4001):
    sheet.cell(r, 2).value = f"new-{r}"
print("ready", flush=True)
while True:
    save_atomically(book, path)
"""


def test_a_writer_killed_mid_save_leaves_the_old_or_the_new_workbook(tmp_path):
    path = tmp_path / "victim.xlsx"
    book = Workbook()
    for r in range(1, 4001):
        book.active.cell(r, 1).value = r
    book.save(path)
    old = [list(row) for row in load_workbook(path).active.iter_rows(values_only=True)]
    seen_new = False
    for attempt in range(8):
        child = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(WRITER), str(path)], stdout=subprocess.PIPE
        )
        assert child.stdout.readline().strip() == b"ready"
        time.sleep(0.05 + 0.06 * attempt)  # land the kill at different points of the save
        child.send_signal(signal.SIGKILL)
        child.wait()
        rows = [list(row) for row in load_workbook(path).active.iter_rows(values_only=True)]
        is_new = rows[0] == [1, "new-1"] and rows[-1] == [4000, "new-4000"] and len(rows) == 4000
        assert rows == old or is_new
        seen_new = seen_new or is_new
    assert seen_new  # the kills did not all land before the first save finished
    assert os.path.getsize(path) > 0


async def test_a_read_preview_of_a_large_sheet_stays_bounded(call, env):
    book = Workbook(write_only=True)
    sheet = book.create_sheet("Big")
    for i in range(30000):
        sheet.append([i, f"row {i}", i * 0.5])
    book.save(env.workspace / "big.xlsx")
    preview = json.loads(
        ok(await call("read_data_from_excel", filepath="big.xlsx", sheet_name="Big", preview_only=True))
    )
    assert len(preview["cells"]) == 30 and preview["next_start_cell"] == "A11"
