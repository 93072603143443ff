"""No link that sandboxed code swaps in leads a tool out of its workspace (issue 22, findings 1 and 2).

Sandboxed code owns the workspace: it can turn any name into a link at any moment. A thread here does
what such code would do. It exchanges a workspace entry with a link to a host file or directory, or
to /proc/self/environ, 10,000 times with renameat2(RENAME_EXCHANGE), while the tools read and write
that name. Every read must return the workspace's own bytes or a refusal. No write may land outside
the workspace. The tool functions run in this process for speed, and a short run goes through a real
gateway. Links planted without a race (inside e2b_sandbox/ and excel_converted/, or toward another
session, a host folder or the dataset) must not lead anywhere either.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from gaia_contract import SESSION_ID_KEY, WORKSPACE_KEY
from gaia_kit import ToolFailure
from gaia_kit_testing import failed, ok, session_call

SWAPS = 10_000
MIN_CALLS = 1_000
GATEWAY_CALLS = 100
"""Calls per race; the swapper makes many more swaps than SWAPS meanwhile (each is a microsecond)."""
WORKSPACE_TEXT = "workspace text, nothing else\n"
HOST_TEXT = "HOST-SECRET-7f3a: this host file must never be read or written\n"
SWAPPER = """
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
names = [os.fsencode(name) for name in sys.argv[1:]]
pairs = list(zip(names[::2], names[1::2]))
swaps = 0
def report(*_):
    print(swaps, flush=True)
    os._exit(0)
signal.signal(signal.SIGTERM, report)
print("swapping", flush=True)
while True:  # renameat2(RENAME_EXCHANGE): the name always exists, as one entry or the other
    first, second = pairs[swaps % len(pairs)]
    if libc.renameat2(-100, first, -100, second, 2) != 0:
        print("renameat2 failed:", os.strerror(ctypes.get_errno()), file=sys.stderr, flush=True)
        os._exit(3)
    swaps += 1
"""


class Swapper:
    """Another process (as sandboxed code is) that exchanges each `name` with its `spare` in turn
    until stopped: one is the workspace's entry, the other a link out."""

    def __init__(self, *pairs: tuple[Path, Path]):
        self.argv = [sys.executable, "-c", SWAPPER, *(str(path) for pair in pairs for path in pair)]
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(self.argv, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None and self.process.stdout.readline() == "swapping\n"

    def stop(self) -> int:
        """Stop swapping; how many swaps were made."""
        assert self.process is not None
        self.process.terminate()
        out, _ = self.process.communicate(timeout=30)
        assert self.process.returncode == 0, out
        return int(out.strip())


def context(workspace: Path, session: str = "s1") -> Any:
    """What `session_of` reads from an MCP Context: the workspace the gateway names in `_meta`."""
    meta = {WORKSPACE_KEY: str(workspace), SESSION_ID_KEY: session}
    return SimpleNamespace(request_context=SimpleNamespace(meta=meta))


def race(
    swapper: Swapper, call: Callable[[], str | None], check: Callable[[str], None], calls: int = MIN_CALLS
) -> None:
    """Call the tool `calls` times while the swapper swaps (at least SWAPS times); check every answer."""
    swapper.start()
    try:
        for _ in range(calls):
            try:
                answer = call()
            except ToolFailure as refusal:
                answer = str(refusal)
            check(answer)
    finally:
        swaps = swapper.stop()
    assert swaps >= SWAPS, f"only {swaps} swaps during the calls"


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A host folder outside every root, with a file in it."""
    folder = tmp_path / "host"
    folder.mkdir()
    (folder / "secret.txt").write_text(HOST_TEXT)
    return folder


@pytest.fixture
def swapped_file(kit_env, host) -> Iterator[tuple[Path, Swapper]]:
    """`swap.txt` in the workspace, a regular file or (swapped in) a link to the host file."""
    workspace = kit_env.workspace
    (workspace / "swap.txt").write_text(WORKSPACE_TEXT)
    (workspace / ".spare").symlink_to(host / "secret.txt")
    yield workspace, Swapper((workspace / "swap.txt", workspace / ".spare"))


def never_host(answer: str) -> None:
    assert "HOST-SECRET" not in answer, answer[:300]


ENVIRON_MARKERS = ("PATH=", "GAIA_WORKSPACE_ROOT=", "HOME=")


def never_environ(answer: str) -> None:
    assert not any(marker in answer for marker in ENVIRON_MARKERS), answer[:300]


@pytest.mark.parametrize("tool", ["read_text_file", "extract_text_content", "terminal_read_file"])
def test_reads_never_follow_a_swapped_link(swapped_file, tool: str) -> None:
    workspace, swapper = swapped_file
    ctx = context(workspace)
    race(swapper, READERS[tool](ctx, "swap.txt"), never_host)


def test_reads_never_reach_the_servers_environment(kit_env) -> None:
    workspace = kit_env.workspace
    (workspace / "swap.txt").write_text(WORKSPACE_TEXT)
    (workspace / ".spare").symlink_to("/proc/self/environ")
    ctx = context(workspace)
    readers = [READERS[name](ctx, "swap.txt") for name in ("read_text_file", "terminal_read_file")]
    turn = iter(range(1 << 30))
    race(
        Swapper((workspace / "swap.txt", workspace / ".spare")),
        lambda: readers[next(turn) % 2](),
        never_environ,
    )


def test_a_folder_swapped_for_a_link_leads_no_write_out(kit_env, host) -> None:
    from filesystem_server.writing import write_file

    workspace = kit_env.workspace
    (workspace / "folder").mkdir()
    (workspace / ".spare").symlink_to(host)
    ctx = context(workspace)
    swapper = Swapper((workspace / "folder", workspace / ".spare"))
    race(swapper, lambda: write_file.fn("folder/out.txt", WORKSPACE_TEXT, ctx), never_host)
    assert sorted(p.name for p in host.iterdir()) == ["secret.txt"]
    assert (host / "secret.txt").read_text() == HOST_TEXT


def _read_text_file(ctx: Any, path: str) -> Callable[[], str]:
    from filesystem_server.reading import read_text_file

    return lambda: read_text_file.fn(path, ctx)


def _extract_text_content(ctx: Any, path: str) -> Callable[[], str]:
    from documents_txt_server.server import extract_text_content

    return lambda: extract_text_content(path, ctx, output_format="text")


def _terminal_read_file(ctx: Any, path: str) -> Callable[[], str]:
    from terminal_controller.server import read_file

    return lambda: read_file(path, ctx)


READERS = {
    "read_text_file": _read_text_file,
    "extract_text_content": _extract_text_content,
    "terminal_read_file": _terminal_read_file,
}


# --- links planted without a race --------------------------------------------------------------------


@pytest.fixture
def places(kit_env, host) -> dict[str, Path]:
    """Where a planted link may point: another session's workspace, a host folder, the dataset."""
    other = kit_env.root / "s2"
    other.mkdir()
    (other / "notes.txt").write_text("B's notes\n")
    (kit_env.dataset / "given.txt").write_text("the dataset's own file\n")
    return {"another session": other, "a host folder": host, "the dataset": kit_env.dataset}


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["another session", "a host folder", "the dataset"])
async def test_e2b_upload_never_writes_through_a_planted_link(kit_env, places, where: str) -> None:
    from e2b_code_server.server import server

    target = places[where]
    before = snapshot(target)
    workspace = kit_env.workspace
    (workspace / "upload.txt").write_text("B WAS HERE\n")
    (workspace / "e2b_sandbox").symlink_to(target)
    async with session_call(server, workspace) as call:
        answer = failed(await call("e2b_upload_file", path="upload.txt"))
    assert "link" in answer and str(target) not in answer
    assert snapshot(target) == before
    # A link at the file's own name is replaced, never written through.
    (workspace / "e2b_sandbox").unlink()
    (workspace / "e2b_sandbox").mkdir()
    victim = next(iter(sorted(p for p in target.rglob("*") if p.is_file())))
    (workspace / "e2b_sandbox" / "upload.txt").symlink_to(victim)
    async with session_call(server, workspace) as call:
        ok(await call("e2b_upload_file", path="upload.txt"))
    assert snapshot(target) == before
    assert (workspace / "e2b_sandbox" / "upload.txt").read_text() == "B WAS HERE\n"


@pytest.mark.anyio
@pytest.mark.parametrize("where", ["another session", "a host folder", "the dataset"])
async def test_excel_converted_copy_never_follows_a_planted_link(kit_env, places, where: str) -> None:
    from excel_server.server import server

    target = places[where]
    before = snapshot(target)
    workspace = kit_env.workspace
    (workspace / "people.csv").write_text("name,age\nAda,36\n")
    (workspace / "excel_converted").symlink_to(target)
    async with session_call(server, workspace) as call:
        answer = failed(await call("read_data_from_excel", filepath="people.csv", sheet_name="people"))
    assert "link" in answer and str(target) not in answer
    assert snapshot(target) == before


@pytest.mark.anyio
async def test_a_stale_link_as_the_converted_copy_is_not_read(kit_env, places) -> None:
    """A converted copy replaced by a link to another session's workbook: converted again, not read."""
    from excel_server.server import server
    from openpyxl import Workbook

    other = places["another session"]
    book = Workbook()
    book.active.title = "people"
    book.active.append(["name", "age"])
    book.active.append(["OTHER SESSION'S ROW", 1])
    book.save(other / "theirs.xlsx")
    workspace = kit_env.workspace
    (workspace / "people.csv").write_text("name,age\nAda,36\n")
    async with session_call(server, workspace) as call:
        assert "Ada" in ok(await call("read_data_from_excel", filepath="people.csv", sheet_name="people"))
        (copy,) = (workspace / "excel_converted").iterdir()
        copy.unlink()
        copy.symlink_to(other / "theirs.xlsx")
        later = (workspace / "people.csv").stat().st_mtime + 60
        os.utime(other / "theirs.xlsx", (later, later))  # newer than its source: it looks current
        again = ok(await call("read_data_from_excel", filepath="people.csv", sheet_name="people"))
    assert "Ada" in again and "OTHER SESSION" not in again
    assert not copy.is_symlink()


@pytest.mark.anyio
async def test_no_tool_changes_the_dataset(kit_env, places) -> None:
    from e2b_code_server.server import server as e2b
    from excel_server.server import server as excel
    from filesystem_server.server import server as filesystem
    from openpyxl import Workbook
    from terminal_controller.server import server as terminal

    dataset = kit_env.dataset
    Workbook().save(dataset / "given.xlsx")
    before = snapshot(dataset)
    workspace = kit_env.workspace
    (workspace / "ds").symlink_to(dataset)
    (workspace / "given.txt").symlink_to(dataset / "given.txt")
    (workspace / "given.xlsx").symlink_to(dataset / "given.xlsx")
    (workspace / "e2b_sandbox").symlink_to(dataset)
    (workspace / "excel_converted").symlink_to(dataset)
    (workspace / "upload.txt").write_text("POISONED DATASET FILE")
    (workspace / "people.csv").write_text("name\nPOISONED\n")
    edit = [{"oldText": "dataset", "newText": "POISONED"}]
    attempts = [
        (filesystem, "write_file", {"path": "given.txt", "content": "POISONED DATASET FILE"}),
        (filesystem, "write_file", {"path": "ds/given.txt", "content": "POISONED DATASET FILE"}),
        (filesystem, "write_file", {"path": "ds/new.txt", "content": "POISONED DATASET FILE"}),
        (filesystem, "edit_file", {"path": "given.txt", "edits": edit}),
        (filesystem, "create_directory", {"path": "ds/made"}),
        (filesystem, "move_file", {"source": "ds/given.txt", "destination": "moved.txt"}),
        (filesystem, "write_file", {"path": "/workspace/gaia_dataset/given.txt", "content": "POISONED"}),
        (terminal, "write_file", {"path": "ds/given.txt", "content": "POISONED"}),
        (terminal, "update_file_content", {"path": "given.txt", "content": "POISONED", "row": 0}),
        (terminal, "insert_file_content", {"path": "ds/given.txt", "content": "POISONED", "row": 0}),
        (
            excel,
            "write_data_to_excel",
            {"filepath": "given.xlsx", "sheet_name": "Sheet", "data": [["POISONED"]]},
        ),
        (excel, "write_data_to_excel", {"filepath": "ds/given.xlsx", "sheet_name": "Sheet", "data": [["X"]]}),
        (excel, "read_data_from_excel", {"filepath": "people.csv", "sheet_name": "people"}),
        (e2b, "e2b_upload_file", {"path": "upload.txt"}),
    ]
    for server, tool, arguments in attempts:
        async with session_call(server, workspace) as call:
            answer = await call(tool, **arguments)
        assert answer.is_error, (tool, arguments)
        assert snapshot(dataset) == before, (tool, arguments)


@pytest.mark.anyio
async def test_terminal_cwd_turned_into_a_link_lists_nothing_outside(kit_env, places) -> None:
    from terminal_controller.server import server

    workspace = kit_env.workspace
    (workspace / "here").mkdir()
    (workspace / "here" / "mine.txt").write_text("mine\n")
    async with session_call(server, workspace) as call:
        ok(await call("change_directory", path="here"))
        assert "mine.txt" in ok(await call("list_directory"))
        for where in ("another session", "a host folder"):
            os.rename(workspace / "here", workspace / "here-real")
            (workspace / "here").symlink_to(places[where])
            listing = await call("list_directory")
            assert "notes.txt" not in str(listing) and "secret.txt" not in str(listing), listing
            assert "outside" in failed(await call("change_directory", path="here"))
            assert "B's notes" not in str(await call("read_file", path="notes.txt"))
            (workspace / "here").unlink()
            os.rename(workspace / "here-real", workspace / "here")
            ok(await call("change_directory", path="here"))


# --- through a real gateway --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_short_race_through_the_gateway(gateway_factory, tmp_path: Path) -> None:
    host = tmp_path / "host"
    host.mkdir()
    (host / "secret.txt").write_text(HOST_TEXT)
    gateway = gateway_factory(
        "--servers", "filesystem-server,terminal-controller,documents-txt-server", "--replicas", "1"
    )
    session = {"headers": {"X-Session-Id": "race"}}
    ok_answer = gateway.call(
        "filesystem-server__write_file", {"path": "swap.txt", "content": WORKSPACE_TEXT}, **session
    )
    assert not ok_answer.get("isError"), ok_answer
    (workspace,) = gateway.session_workspaces()
    (workspace / "folder").mkdir()
    (workspace / ".spare-file").symlink_to(host / "secret.txt")
    (workspace / ".spare-folder").symlink_to(host)
    swapper = Swapper(
        (workspace / "swap.txt", workspace / ".spare-file"),
        (workspace / "folder", workspace / ".spare-folder"),
    )
    swapper.start()
    calls = [
        ("filesystem-server__read_text_file", {"path": "swap.txt"}),
        ("extract_text_content", {"file_path": "swap.txt"}),
        ("terminal-controller__read_file", {"path": "swap.txt"}),
        ("filesystem-server__write_file", {"path": "folder/out.txt", "content": WORKSPACE_TEXT}),
    ]
    try:
        for number in range(GATEWAY_CALLS):
            tool, arguments = calls[number % len(calls)]
            never_host(json.dumps(gateway.call(tool, arguments, **session)))
    finally:
        swaps = swapper.stop()
    assert swaps >= SWAPS
    assert sorted(p.name for p in host.iterdir()) == ["secret.txt"]
    assert (host / "secret.txt").read_text() == HOST_TEXT
