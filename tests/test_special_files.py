"""Every tool that reads a file refuses FIFOs, sockets and devices at once, and opens none of them.

Opening a FIFO blocks until a writer comes (a sandboxed command can make one in the workspace)
and /dev/zero never ends: either would hold a worker thread until the call's deadline. The kit's
path guard looks at the file type with stat before anything opens the path.
"""

from __future__ import annotations

import errno
import importlib
import os
import socket
import stat
from pathlib import Path

import anyio
import pytest
from gaia_kit import PathGuard, ToolFailure
from gaia_kit_testing import failed, session_call

pytestmark = pytest.mark.anyio

# (server module, tool, arguments); "{path}" is replaced by the special file's path.
READERS = [
    ("filesystem_server.server", "read_text_file", {"path": "{path}"}),
    ("filesystem_server.server", "read_file", {"path": "{path}"}),
    ("filesystem_server.server", "read_text_file", {"path": "{path}", "tail": 3}),
    ("filesystem_server.server", "read_media_file", {"path": "{path}"}),
    (
        "filesystem_server.server",
        "edit_file",
        {"path": "{path}", "edits": [{"oldText": "a", "newText": "b"}]},
    ),
    ("terminal_controller.server", "read_file", {"path": "{path}"}),
    ("terminal_controller.server", "update_file_content", {"path": "{path}", "content": "x"}),
    ("documents_csv_server.server", "extract_csv_content", {"file_path": "{path}"}),
    ("documents_docx_server.server", "extract_docx_content", {"file_path": "{path}"}),
    ("documents_pptx_server.server", "extract_pptx_content", {"file_path": "{path}"}),
    ("documents_pdf_server.server", "convert_document_to_markdown", {"file_path": "{path}"}),
    ("documents_txt_server.server", "extract_text_content", {"file_path": "{path}"}),
    ("excel_server.server", "read_data_from_excel", {"filepath": "{path}", "sheet_name": "Sheet"}),
    ("excel_server.server", "get_workbook_metadata", {"filepath": "{path}"}),
    ("media_image_server.server", "get_image_metadata", {"file_path": "{path}"}),
    ("media_audio_server.server", "extract_audio_metadata", {"file_path": "{path}"}),
    ("media_video_server.server", "extract_keyframes", {"video_path": "{path}", "target_time": 1}),
]


@pytest.fixture
def fifo(kit_env) -> Path:
    path = kit_env.workspace / "pipe.txt"
    os.mkfifo(path)
    return path


def nobody_reads(fifo: Path) -> bool:
    """True when no process or thread holds the FIFO open for reading (a blocked open() would)."""
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as exc:
        return exc.errno == errno.ENXIO
    return False


@pytest.mark.parametrize(
    ("module", "tool", "arguments"), READERS, ids=[f"{m.split('.')[0]}:{t}" for m, t, _ in READERS]
)
async def test_a_fifo_is_refused_fast_and_never_opened(kit_env, fifo, module, tool, arguments):
    server = importlib.import_module(module).server
    filled = {k: (v.format(path=fifo.name) if isinstance(v, str) else v) for k, v in arguments.items()}
    async with session_call(server, kit_env.workspace) as call:
        with anyio.fail_after(10):
            message = failed(await call(tool, **filled))
    assert "named pipe (FIFO)" in message and "regular file" in message, message
    assert nobody_reads(fifo)


async def test_read_multiple_files_reports_the_fifo_and_reads_the_rest(kit_env, fifo):
    from filesystem_server.server import server

    (kit_env.workspace / "ok.txt").write_text("fine\n")
    async with session_call(server, kit_env.workspace) as call:
        with anyio.fail_after(10):
            result = await call("read_multiple_files", paths=[fifo.name, "ok.txt"])
    body = result.content[0].text
    assert "named pipe (FIFO)" in body and "fine" in body
    assert nobody_reads(fifo)


def test_a_unix_socket_is_refused(kit_env):
    path = kit_env.workspace / "agent.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    try:
        with pytest.raises(ToolFailure, match="is a socket, not a regular file"):
            PathGuard(kit_env.workspace).existing_file("agent.sock")
    finally:
        listener.close()


def test_devices_are_refused(kit_env):
    # /dev as the read-only dataset: /dev/zero and /dev/null are then inside the allowed roots.
    guard = PathGuard(kit_env.workspace, Path("/dev"), dataset_alias="/devices")
    with pytest.raises(ToolFailure, match="is a character device, not a regular file"):
        guard.existing_file("/devices/zero")
    with pytest.raises(ToolFailure, match="is a character device"):
        guard.existing_file("/dev/null")
    block = next((p for p in Path("/dev").iterdir() if p.is_block_device()), None)
    if block is not None:
        with pytest.raises(ToolFailure, match="is a block device"):
            guard.existing_file(str(block))


async def test_a_device_made_in_the_workspace_is_refused_by_the_tools(kit_env):
    path = kit_env.workspace / "zero.txt"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))  # what /dev/zero is
    except PermissionError:
        pytest.skip("mknod needs CAP_MKNOD; the guard's device check is tested on /dev above")
    from filesystem_server.server import server

    async with session_call(server, kit_env.workspace) as call:
        with anyio.fail_after(10):
            assert "character device" in failed(await call("read_text_file", path="zero.txt"))


def test_a_symlink_to_a_regular_file_still_reads(kit_env):
    (kit_env.workspace / "real.txt").write_text("x")
    (kit_env.workspace / "link.txt").symlink_to(kit_env.workspace / "real.txt")
    assert PathGuard(kit_env.workspace).existing_file("link.txt").name == "real.txt"
