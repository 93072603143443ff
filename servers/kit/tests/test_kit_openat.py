"""open_beneath and its kin: no link leads out of the root, by openat2 and by the component walk alike."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from gaia_kit.core import openat
from gaia_kit.core.openat import make_dirs_beneath, open_beneath, parent_beneath


@pytest.fixture(params=["openat2", "walk"])
def way(request, monkeypatch) -> str:
    """Each test runs twice: with openat2 where the kernel has it, and with the component walk."""
    if request.param == "walk":
        monkeypatch.setattr(openat, "_openat2_works", False)
    else:
        monkeypatch.setattr(openat, "_openat2_works", None)
    return request.param


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "sub" / "inner.txt").write_text("inner")
    (outside / "secret.txt").write_text("secret")
    return root, outside


def read(root: Path, relative: str, **kwargs) -> str:
    fd = open_beneath(root, relative, **kwargs)
    with open(fd, "rb") as handle:
        return handle.read().decode()


def escapes(root: Path, relative: str, flags: int = os.O_RDONLY, **kwargs) -> bool:
    with pytest.raises(OSError) as caught:
        os.close(open_beneath(root, relative, flags, **kwargs))
    return caught.value.errno in (errno.EXDEV, errno.ELOOP)


def test_plain_paths_open(way, tree) -> None:
    root, _ = tree
    assert read(root, "sub/inner.txt") == "inner"
    assert read(root, "./sub/../sub/inner.txt") == "inner"


def test_links_out_of_the_root_are_refused(way, tree) -> None:
    root, outside = tree
    (root / "abs").symlink_to(outside / "secret.txt")
    (root / "rel").symlink_to("../outside/secret.txt")
    (root / "door").symlink_to(outside)
    (root / "sub" / "up").symlink_to("../..")
    (root / "environ").symlink_to("/proc/self/environ")
    (root / "proc-root").symlink_to("/proc/self/root")
    for name in (
        "abs",
        "rel",
        "door/secret.txt",
        "sub/up/outside/secret.txt",
        "environ",
        "proc-root/etc/hostname",
    ):
        assert escapes(root, name), name
    assert escapes(root, "../outside/secret.txt")


def test_links_that_stay_inside_are_followed(way, tree) -> None:
    root, _ = tree
    (root / "rel").symlink_to("sub/inner.txt")
    (root / "abs").symlink_to(root / "sub" / "inner.txt")  # ln -s "$PWD/..." in the sandbox
    (root / "sub" / "back").symlink_to("../sub")
    assert read(root, "rel") == "inner"
    assert read(root, "abs") == "inner"
    assert read(root, "sub/back/back/inner.txt") == "inner"


def test_absolute_links_into_another_allowed_root(way, tree) -> None:
    root, outside = tree
    (root / "data").symlink_to(outside / "secret.txt")
    assert escapes(root, "data")
    assert read(root, "data", roots=[outside]) == "secret"


def test_loops_end(way, tree) -> None:
    root, _ = tree
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    with pytest.raises(OSError) as caught:
        open_beneath(root, "a")
    assert caught.value.errno == errno.ELOOP


def test_nofollow_is_kept_for_the_last_component(way, tree) -> None:
    root, _ = tree
    (root / "rel").symlink_to("sub/inner.txt")
    with pytest.raises(OSError) as caught:
        open_beneath(root, "rel", os.O_RDONLY | os.O_NOFOLLOW)
    assert caught.value.errno == errno.ELOOP


def test_make_dirs_stays_beneath(way, tree) -> None:
    root, outside = tree
    os.close(make_dirs_beneath(root, "new/deeper"))
    assert (root / "new" / "deeper").is_dir()
    (root / "door").symlink_to(outside)
    with pytest.raises(OSError) as caught:
        make_dirs_beneath(root, "door/made")
    assert caught.value.errno in (errno.EXDEV, errno.ELOOP)
    assert not (outside / "made").exists()


def test_renames_go_into_the_folder_opened(way, tree) -> None:
    root, outside = tree
    (root / "door").symlink_to(outside)
    with pytest.raises(OSError):
        with parent_beneath(root, "door/planted.txt"):
            pass
    with parent_beneath(root, "sub/new.txt") as (folder, name):
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o644, dir_fd=folder)
        os.close(fd)
    assert (root / "sub" / "new.txt").exists()
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
