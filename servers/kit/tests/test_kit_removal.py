"""gaia_kit.core.removal: a tree of any depth is removed, and nothing a link points to."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from gaia_kit.core.removal import remove_tree
from gaia_kit_testing import build_deep_tree


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the tree, with a file: what links in the tree point to."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "keep.txt").write_text("keep")
    return folder


def test_a_tree_deeper_than_the_recursion_limit_is_removed(tmp_path: Path, outside: Path):
    tree = tmp_path / "workspace"
    build_deep_tree(tree, 1500, link_to=outside)
    remove_tree(tree)
    assert not tree.exists()
    assert (outside / "keep.txt").read_text() == "keep"


def test_links_are_removed_never_followed(tmp_path: Path, outside: Path):
    tree = tmp_path / "workspace"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "to-dir").symlink_to(outside)
    (tree / "to-file").symlink_to(outside / "keep.txt")
    (tree / "dangling").symlink_to(tmp_path / "nowhere")
    link_as_top = tmp_path / "top-link"
    link_as_top.symlink_to(outside)
    remove_tree(tree)
    remove_tree(link_as_top)
    assert not tree.exists() and not link_as_top.is_symlink()
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]


def test_a_missing_path_or_a_file_is_fine(tmp_path: Path):
    remove_tree(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    remove_tree(tmp_path / "file")
    assert not (tmp_path / "file").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
def test_folders_whose_permissions_were_taken_away_are_removed():
    # As root every folder is writable; as the user who built the tree (here nobody), a folder with
    # mode 000 or 500 is not, until the removal gives the permissions back. A forked child drops to
    # nobody with everything already imported (nobody may not read this checkout).
    base = Path(tempfile.mkdtemp(prefix="gaia-removal-"))
    tree = base / "workspace"
    try:
        os.chown(base, 65534, 65534)
        child = os.fork()
        if child == 0:
            code = 1
            try:
                os.setgid(65534)
                os.setuid(65534)
                (tree / "locked" / "inner").mkdir(parents=True)
                (tree / "locked" / "inner" / "f").write_text("x")
                (tree / "readonly").mkdir()
                (tree / "readonly" / "g").write_text("x")
                os.chmod(tree / "locked" / "inner", 0o000)
                os.chmod(tree / "locked", 0o000)
                os.chmod(tree / "readonly", 0o500)
                remove_tree(tree)
                code = 0 if not tree.exists() else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert not tree.exists()
    finally:
        shutil.rmtree(base)
