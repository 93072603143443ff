"""Every filesystem tool through the MCP protocol, in a throwaway workspace and dataset."""

import base64
import json
import os
import struct
import zlib

import pytest
from filesystem_server.server import server
from gaia_kit.core.settings import forget_settings
from gaia_kit_testing import failed, ok

pytestmark = pytest.mark.anyio


def png_bytes() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


def wav_bytes() -> bytes:
    samples = b"\x00\x00" * 800
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    body = (
        b"WAVE"
        + b"fmt "
        + struct.pack("<I", len(fmt))
        + fmt
        + b"data"
        + struct.pack("<I", len(samples))
        + samples
    )
    return b"RIFF" + struct.pack("<I", len(body)) + body


async def test_every_reference_tool_is_listed():
    names = {tool.name for tool in await server.list_tools()}
    assert names == {
        "read_file",
        "read_text_file",
        "read_media_file",
        "read_multiple_files",
        "write_file",
        "edit_file",
        "create_directory",
        "list_directory",
        "list_directory_with_sizes",
        "directory_tree",
        "move_file",
        "search_files",
        "get_file_info",
        "list_allowed_directories",
    }


async def test_write_then_read_relative_and_absolute(call, env):
    assert (
        ok(await call("write_file", path="notes/a.txt", content="héllo\nworld\n"))
        == "Successfully wrote to notes/a.txt"
    )
    assert (env.workspace / "notes" / "a.txt").read_text(encoding="utf-8") == "héllo\nworld\n"
    assert ok(await call("read_text_file", path="notes/a.txt")) == "héllo\nworld\n"
    assert ok(await call("read_file", path=str(env.workspace / "notes" / "a.txt"))) == "héllo\nworld\n"
    # no temp files left behind by the atomic write
    assert sorted(os.listdir(env.workspace / "notes")) == ["a.txt"]


async def test_head_and_tail(call, env):
    lines = [f"line {i}" for i in range(1, 3001)]
    (env.workspace / "big.txt").write_text("\n".join(lines) + "\n")
    assert ok(await call("read_text_file", path="big.txt", head=3)) == "line 1\nline 2\nline 3"
    assert ok(await call("read_text_file", path="big.txt", tail=2)) == "line 2999\nline 3000"
    assert ok(await call("read_text_file", path="big.txt", tail=3000)).splitlines() == lines
    assert ok(await call("read_text_file", path="big.txt", tail=9999)).splitlines() == lines
    (env.workspace / "nonl.txt").write_text("a\nb\nc")
    assert ok(await call("read_text_file", path="nonl.txt", tail=2)) == "b\nc"
    assert "both head and tail" in failed(await call("read_text_file", path="big.txt", head=1, tail=1))
    assert "whole number" in failed(await call("read_text_file", path="big.txt", head=1.5))


async def test_tail_of_crlf_and_non_utf8(call, env):
    (env.workspace / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    assert ok(await call("read_text_file", path="crlf.txt", tail=2)) == "two\r\nthree"
    (env.workspace / "latin.txt").write_bytes("café crème brûlée, déjà vu à la carte\n".encode("cp1252") * 50)
    assert "café crème" in ok(await call("read_text_file", path="latin.txt", tail=1))


async def test_long_file_is_paged(call, env, monkeypatch):
    monkeypatch.setenv("GAIA_MAX_OUTPUT_CHARS", "1000")
    forget_settings()
    body = "".join(f"{i:05d}\n" for i in range(1000))  # 6000 characters
    (env.workspace / "long.txt").write_text(body)
    first = ok(await call("read_text_file", path="long.txt"))
    assert first.startswith(body[:1000]) and "start_index=1000" in first
    second = ok(await call("read_text_file", path="long.txt", start_index=1000, max_length=500))
    assert second.startswith(body[1000:1500]) and "start_index=1500" in second
    last = ok(await call("read_text_file", path="long.txt", start_index=5500))
    assert last == body[5500:]
    assert "past the end" in ok(await call("read_text_file", path="long.txt", start_index=9000))


async def test_read_errors(call, env):
    assert "does not exist" in failed(await call("read_text_file", path="missing.txt"))
    assert "directory" in failed(await call("read_text_file", path="."))
    assert "outside the allowed directories" in failed(await call("read_text_file", path="/etc/passwd"))
    assert "outside the allowed directories" in failed(
        await call("read_text_file", path="../../../etc/hostname")
    )
    (env.workspace / "blob.bin").write_bytes(b"\x00\x01\x02binary\x00" * 100)
    assert "binary" in failed(await call("read_text_file", path="blob.bin"))
    (env.workspace / "empty.txt").write_text("")
    assert "empty" in ok(await call("read_text_file", path="empty.txt"))
    # wrong argument types are refused with a message, not a crash
    assert failed(await call("read_text_file", path=["a", "b"]))
    assert failed(await call("read_text_file"))


async def test_symlink_out_of_the_workspace_is_refused(call, env, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (env.workspace / "link.txt").symlink_to(secret)
    assert "outside the allowed directories" in failed(await call("read_text_file", path="link.txt"))
    assert "outside the allowed directories" in failed(await call("write_file", path="link.txt", content="x"))
    assert secret.read_text() == "top secret"


async def test_dataset_is_readable_but_not_writable(call, env):
    (env.dataset / "2023").mkdir()
    (env.dataset / "2023" / "q.txt").write_text("question")
    assert ok(await call("read_text_file", path="/workspace/gaia_dataset/2023/q.txt")) == "question"
    assert ok(await call("read_text_file", path=str(env.dataset / "2023" / "q.txt"))) == "question"
    assert "read-only" in failed(
        await call("write_file", path="/workspace/gaia_dataset/2023/new.txt", content="x")
    )
    assert "read-only" in failed(
        await call(
            "edit_file", path="/workspace/gaia_dataset/2023/q.txt", edits=[{"oldText": "q", "newText": "Q"}]
        )
    )
    assert "read-only" in failed(await call("create_directory", path="/workspace/gaia_dataset/new"))
    assert "read-only" in failed(
        await call("move_file", source="/workspace/gaia_dataset/2023/q.txt", destination="q.txt")
    )
    assert (env.dataset / "2023" / "q.txt").read_text() == "question"
    listing = ok(await call("list_directory", path="/workspace/gaia_dataset"))
    assert listing == "[DIR] 2023"


async def test_read_media_file(call, env):
    (env.workspace / "dot.png").write_bytes(png_bytes())
    result = await call("read_media_file", path="dot.png")
    assert not result.is_error
    [block] = result.content
    assert block.type == "image" and block.mime_type == "image/png"
    assert base64.b64decode(block.data) == png_bytes()
    # the content decides, not a misleading extension
    (env.workspace / "sound.bin").write_bytes(wav_bytes())
    [audio] = (await call("read_media_file", path="sound.bin")).content
    assert audio.type == "audio" and audio.mime_type == "audio/wav"
    (env.workspace / "doc.txt").write_text("plain text")
    assert "not an image or audio" in failed(await call("read_media_file", path="doc.txt"))
    assert "does not exist" in failed(await call("read_media_file", path="nope.png"))


async def test_read_media_file_size_cap(call, env, monkeypatch):
    monkeypatch.setenv("GAIA_MAX_READ_BYTES", "1000")
    forget_settings()
    (env.workspace / "big.png").write_bytes(png_bytes() + b"\x00" * 5000)
    assert "limit" in failed(await call("read_media_file", path="big.png"))


async def test_read_multiple_files_reports_failures_per_file(call, env):
    (env.workspace / "a.txt").write_text("alpha")
    (env.workspace / "b.txt").write_text("beta")
    out = ok(await call("read_multiple_files", paths=["a.txt", "missing.txt", "b.txt", "/etc/passwd"]))
    parts = out.split("\n---\n")
    assert parts[0] == "a.txt:\nalpha\n"
    assert parts[1].startswith("missing.txt: Error - ") and "does not exist" in parts[1]
    assert parts[2] == "b.txt:\nbeta\n"
    assert "outside the allowed directories" in parts[3]
    assert "paths is empty" in failed(await call("read_multiple_files", paths=[]))


async def test_read_multiple_files_shares_the_cap(call, env, monkeypatch):
    monkeypatch.setenv("GAIA_MAX_OUTPUT_CHARS", "2000")
    forget_settings()
    (env.workspace / "x.txt").write_text("x" * 5000)
    (env.workspace / "y.txt").write_text("y" * 10)
    out = ok(await call("read_multiple_files", paths=["x.txt", "y.txt"]))
    assert "x" * 1000 in out and "x" * 1001 not in out
    assert "start_index=1000" in out and "y.txt:\nyyyyyyyyyy" in out


async def test_edit_file_exact_dry_run_and_diff(call, env):
    target = env.workspace / "code.py"
    target.write_text("def f():\n    return 1\n\n\nprint(f())\n")
    preview = ok(
        await call(
            "edit_file", path="code.py", edits=[{"oldText": "return 1", "newText": "return 2"}], dryRun=True
        )
    )
    assert preview.startswith("```diff\n") and "-    return 1" in preview and "+    return 2" in preview
    assert "Dry run" in preview
    assert target.read_text().count("return 1") == 1
    applied = ok(
        await call("edit_file", path="code.py", edits=[{"oldText": "return 1", "newText": "return 2"}])
    )
    assert "+    return 2" in applied and "--- " in applied and "+++ " in applied
    assert target.read_text() == "def f():\n    return 2\n\n\nprint(f())\n"


async def test_edit_file_whitespace_tolerant_and_multiple_edits(call, env):
    target = env.workspace / "nested.py"
    target.write_text("class A:\n    def g(self):\n        x = 1\n        return x\n")
    edits = [
        # wrong indentation in oldText: matched line by line, re-indented to the file's
        {"oldText": "x = 1\nreturn x", "newText": "x = 2\nif x:\n    return x"},
        {"oldText": "class A:", "newText": "class B:"},
    ]
    ok(await call("edit_file", path="nested.py", edits=edits))
    assert (
        target.read_text()
        == "class B:\n    def g(self):\n        x = 2\n        if x:\n            return x\n"
    )


async def test_edit_file_keeps_crlf_and_reports_ambiguity(call, env):
    target = env.workspace / "win.txt"
    target.write_bytes(b"a = 1\r\nb = 1\r\na = 1\r\n")
    out = ok(await call("edit_file", path="win.txt", edits=[{"oldText": "a = 1", "newText": "a = 9"}]))
    assert "occurs 2 times" in out
    assert target.read_bytes() == b"a = 9\r\nb = 1\r\na = 1\r\n"


async def test_edit_file_failures_change_nothing(call, env):
    target = env.workspace / "t.txt"
    target.write_text("one\ntwo\n")
    edits = [{"oldText": "one", "newText": "ONE"}, {"oldText": "three", "newText": "THREE"}]
    assert "Could not find exact match for edit 2" in failed(
        await call("edit_file", path="t.txt", edits=edits)
    )
    assert target.read_text() == "one\ntwo\n"
    assert "empty oldText" in failed(
        await call("edit_file", path="t.txt", edits=[{"oldText": "", "newText": "x"}])
    )
    assert failed(await call("edit_file", path="t.txt", edits=[{"old": "one"}]))
    assert "does not exist" in failed(
        await call("edit_file", path="nope.txt", edits=[{"oldText": "a", "newText": "b"}])
    )


async def test_create_directory_and_listings(call, env):
    assert ok(await call("create_directory", path="a/b/c")) == "Successfully created directory a/b/c"
    assert ok(await call("create_directory", path="a/b/c")) == "Successfully created directory a/b/c"
    (env.workspace / "a" / "small.txt").write_text("x" * 10)
    (env.workspace / "a" / "large.txt").write_text("x" * 5000)
    assert ok(await call("list_directory", path="a")) == "[DIR] b\n[FILE] large.txt\n[FILE] small.txt"
    by_size = ok(await call("list_directory_with_sizes", path="a", sortBy="size"))
    lines = by_size.splitlines()
    assert lines[0].startswith("[FILE] large.txt") and "4.88 KB" in lines[0]
    assert lines[1].startswith("[FILE] small.txt") and "10 B" in lines[1]
    assert "Total: 2 files, 1 directories" in by_size and "Combined size: 4.89 KB" in by_size
    by_name = ok(await call("list_directory_with_sizes", path="a"))
    assert by_name.splitlines()[0].startswith("[DIR] b")
    assert failed(await call("list_directory_with_sizes", path="a", sortBy="date"))
    (env.workspace / "file.txt").write_text("x")
    assert "already exists and is a file" in failed(await call("create_directory", path="file.txt"))
    assert "is a file, not a directory" in failed(await call("list_directory", path="file.txt"))
    assert "does not exist" in failed(await call("list_directory", path="nowhere"))


async def test_directory_tree(call, env):
    (env.workspace / "src" / "pkg").mkdir(parents=True)
    (env.workspace / "src" / "pkg" / "mod.py").write_text("")
    (env.workspace / "src" / "empty").mkdir()
    (env.workspace / "node_modules" / "x").mkdir(parents=True)
    (env.workspace / "README.md").write_text("")
    tree = json.loads(ok(await call("directory_tree", path=".", excludePatterns=["node_modules"])))
    assert tree == [
        {"name": "README.md", "type": "file"},
        {
            "name": "src",
            "type": "directory",
            "children": [
                {"name": "empty", "type": "directory", "children": []},
                {"name": "pkg", "type": "directory", "children": [{"name": "mod.py", "type": "file"}]},
            ],
        },
    ]
    shallow = ok(await call("directory_tree", path=".", max_depth=1, excludePatterns=["*.md"]))
    payload, note = shallow.split("\n\n[Tree cut", 1)
    nodes = json.loads(payload)
    assert {node["name"] for node in nodes} == {"node_modules", "src"}
    assert all(node["children"] == [] and node["truncated"] for node in nodes)


async def test_directory_tree_is_bounded_and_survives_link_cycles(call, env):
    deep = env.workspace / "deep"
    deep.mkdir()
    for i in range(2100):
        (deep / f"f{i:04d}").write_text("")
    (env.workspace / "loop").symlink_to(env.workspace, target_is_directory=True)
    out = ok(await call("directory_tree", path=".", start_index=0))
    assert "Tree cut after 2000 entries" in out or "Call again with start_index" in out
    full = out
    index = 0
    while "Call again with start_index=" in full.rsplit("\n", 1)[-1]:
        index = int(full.rsplit("start_index=", 1)[1].split(" ")[0])
        full = full.rsplit("\n\n[Output truncated", 1)[0] + ok(
            await call("directory_tree", path=".", start_index=index)
        )
    assert "Tree cut after 2000 entries" in full
    tree = json.loads(full.split("\n\n[Tree cut", 1)[0])
    loop = next(node for node in tree if node["name"] == "loop")
    assert loop.get("symlink") is True and loop["children"] == []
    deep_node = next(node for node in tree if node["name"] == "deep")
    assert deep_node["truncated"] is True


async def test_move_file(call, env):
    (env.workspace / "a.txt").write_text("A")
    (env.workspace / "b.txt").write_text("B")
    assert (
        ok(await call("move_file", source="a.txt", destination="sub/c.txt"))
        == "Successfully moved a.txt to sub/c.txt"
    )
    assert (env.workspace / "sub" / "c.txt").read_text() == "A" and not (env.workspace / "a.txt").exists()
    assert "already exists" in failed(await call("move_file", source="b.txt", destination="sub/c.txt"))
    assert (env.workspace / "sub" / "c.txt").read_text() == "A"
    assert "does not exist" in failed(await call("move_file", source="zzz.txt", destination="y.txt"))
    assert "into itself" in failed(await call("move_file", source="sub", destination="sub/inner"))
    assert "outside the allowed directories" in failed(
        await call("move_file", source="b.txt", destination="/tmp/b.txt")
    )


async def test_move_file_moves_a_link_not_its_target(call, env):
    (env.workspace / "real.txt").write_text("data")
    (env.workspace / "alias.txt").symlink_to(env.workspace / "real.txt")
    ok(await call("move_file", source="alias.txt", destination="renamed.txt"))
    assert (env.workspace / "renamed.txt").is_symlink() and (env.workspace / "real.txt").read_text() == "data"
    assert "names a directory" in failed(await call("move_file", source=".", destination="elsewhere"))


async def test_search_files(call, env):
    (env.workspace / "data" / "raw").mkdir(parents=True)
    (env.workspace / "data" / "raw" / "Sales_2023.CSV").write_text("")
    (env.workspace / "data" / "sales_notes.txt").write_text("")
    (env.workspace / "data" / "other.txt").write_text("")
    (env.workspace / "skip").mkdir()
    (env.workspace / "skip" / "sales.csv").write_text("")
    out = ok(await call("search_files", path=".", pattern="sales", excludePatterns=["skip"]))
    found = sorted(out.splitlines())
    assert found == ["data/raw/Sales_2023.CSV", "data/sales_notes.txt"]
    globbed = ok(await call("search_files", path="data", pattern="*.csv"))
    assert globbed.splitlines() == ["data/raw/Sales_2023.CSV"]
    assert ok(await call("search_files", path=".", pattern="nothing-like-this")) == "No matches found"
    assert "pattern is empty" in failed(await call("search_files", path=".", pattern=" "))
    (env.dataset / "file1.pdf").write_text("")
    assert ok(await call("search_files", path="/workspace/gaia_dataset", pattern=".pdf")) == (
        "/workspace/gaia_dataset/file1.pdf"
    )


async def test_get_file_info(call, env):
    (env.workspace / "f.txt").write_text("12345")
    os.chmod(env.workspace / "f.txt", 0o640)
    info = dict(line.split(": ", 1) for line in ok(await call("get_file_info", path="f.txt")).splitlines())
    assert info["size"].startswith("5 ") and info["isFile"] == "true" and info["isDirectory"] == "false"
    assert info["permissions"] == "640" and info["mimeType"] == "text/plain" and info["writable"] == "true"
    assert info["modified"].endswith("+00:00")
    folder = ok(await call("get_file_info", path="."))
    assert "isDirectory: true" in folder
    assert "does not exist" in failed(await call("get_file_info", path="nope"))


async def test_list_allowed_directories(call, env):
    out = ok(await call("list_allowed_directories"))
    lines = out.splitlines()
    assert lines[0] == "Allowed directories:"
    assert lines[1] == "."  # the workspace, as relative paths name it: never the host's path
    assert lines[2] == "/workspace/gaia_dataset"
    assert "read-only" in out and "read-write" in out


async def test_sessions_do_not_share_workspaces(env):
    from mcp import Client

    other = env.root / "s2"
    async with Client(server) as client:
        await client.call_tool(
            "write_file",
            {"path": "mine.txt", "content": "s2 data"},
            meta={"gaia-env/session-id": "s2", "gaia-env/workspace": str(other)},
        )
        result = await client.call_tool(
            "read_text_file",
            {"path": "mine.txt"},
            meta={"gaia-env/session-id": "s1", "gaia-env/workspace": str(env.workspace)},
        )
    assert result.is_error
    assert (other / "mine.txt").read_text() == "s2 data"


async def test_writes_stop_at_the_workspace_quota_and_resume_once_space_is_freed(call, env, workspace_quota):
    workspace_quota(1, max_files=5)
    ok(await call("write_file", path="a.txt", content="a" * 600_000))
    message = failed(await call("write_file", path="b.txt", content="b" * 600_000))
    assert "past its quota: it holds 585.9 KB of 1 MB (GAIA_WORKSPACE_MAX_MB)" in message, message
    assert "rm -r" in message and not (env.workspace / "b.txt").exists()
    edit = [{"oldText": "a" * 10, "newText": "c" * 500_000}]
    assert "past its quota" in failed(await call("edit_file", path="a.txt", edits=edit))
    assert "5 files (GAIA_WORKSPACE_MAX_FILES)" in failed(
        await call("create_directory", path="d1/d2/d3/d4/d5")
    )
    (env.workspace / "a.txt").unlink()
    ok(await call("write_file", path="b.txt", content="b" * 600_000))
    ok(await call("create_directory", path="d1/d2/d3"))
