"""Listings, searches and file info carry their facts as structuredContent beside the unchanged text."""

import pytest
from gaia_kit_testing import ok

pytestmark = pytest.mark.anyio


async def test_listings_and_searches_are_data_too(call, env):
    ok(await call("write_file", path="docs/notes.txt", content="hello"))
    ok(await call("create_directory", path="docs/empty"))

    listing = await call("list_directory_with_sizes", path="docs")
    assert "[FILE] notes.txt" in ok(listing)
    assert listing.structured_content == {
        "entries": [
            {"name": "empty", "type": "directory", "size": None},
            {"name": "notes.txt", "type": "file", "size": 5},
        ],
        "truncated": False,
    }
    tree = await call("directory_tree", path=".")
    assert tree.structured_content["tree"][0]["children"][1] == {"name": "notes.txt", "type": "file"}

    found = await call("search_files", path=".", pattern="notes")
    assert found.structured_content == {"paths": [ok(found).strip()], "stopped": None}

    info = await call("get_file_info", path="docs/notes.txt")
    assert info.structured_content["size"] == 5 and info.structured_content["mimeType"] == "text/plain"
    assert "size: 5" in ok(info)

    roots = await call("list_allowed_directories")
    assert roots.structured_content["directories"][0] == {"path": ".", "writable": True}


async def test_failures_carry_no_data(call):
    missing = await call("list_directory", path="nowhere")
    assert missing.is_error and missing.structured_content is None
