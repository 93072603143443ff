"""The path guard against the ways out of a workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gaia_kit import PathGuard, ToolFailure, atomic_write


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path, PathGuard]:
    workspace = tmp_path / "root" / "workspace"
    dataset = tmp_path / "data"
    workspace.mkdir(parents=True)
    dataset.mkdir()
    (dataset / "q.txt").write_text("question")
    (workspace / "mine.txt").write_text("mine")
    return workspace, dataset, PathGuard(workspace, dataset, "/workspace/gaia_dataset")


def refused(guard: PathGuard, raw: str, write: bool = False) -> str:
    with pytest.raises(ToolFailure) as info:
        guard.resolve(raw, write=write)
    return str(info.value)


def test_relative_paths_resolve_in_the_workspace(roots) -> None:
    workspace, _, guard = roots
    assert guard.resolve("mine.txt") == workspace / "mine.txt"
    assert guard.resolve("./sub/../mine.txt") == workspace / "mine.txt"
    assert guard.resolve(str(workspace / "new.txt"), write=True) == workspace / "new.txt"


@pytest.mark.parametrize(
    "raw",
    [
        "../outside.txt",
        "../../../../../../etc/passwd",
        "sub/../../x",
        "/etc/passwd",
        "/",
        "~/.bashrc",
        "/workspace/gaia_dataset/../../etc/passwd",
    ],
)
def test_escapes_are_refused(roots, raw: str) -> None:
    assert "outside the allowed directories" in refused(roots[2], raw)


def test_prefix_look_alike_is_outside(roots, tmp_path: Path) -> None:
    workspace, _, guard = roots
    twin = Path(str(workspace) + "2")
    twin.mkdir()
    (twin / "x.txt").write_text("x")
    assert "outside" in refused(guard, str(twin / "x.txt"))
    data_twin = tmp_path / "data2"
    data_twin.mkdir()
    assert "outside" in refused(guard, str(data_twin))


def test_symlink_out_of_the_workspace_is_refused(roots, tmp_path: Path) -> None:
    workspace, _, guard = roots
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    os.symlink(secret, workspace / "link.txt")
    assert "outside" in refused(guard, "link.txt")
    assert "outside" in refused(guard, "link.txt", write=True)


def test_symlinked_parent_is_refused(roots, tmp_path: Path) -> None:
    workspace, _, guard = roots
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, workspace / "door")
    assert "outside" in refused(guard, "door/new.txt", write=True)
    assert "outside" in refused(guard, "door/../../data/q.txt".replace("door/../../", "door/"))


def test_symlink_inside_the_workspace_is_fine(roots) -> None:
    workspace, _, guard = roots
    os.symlink(workspace / "mine.txt", workspace / "alias.txt")
    assert guard.resolve("alias.txt") == workspace / "mine.txt"


def test_nul_byte_and_empty_paths(roots) -> None:
    assert "NUL" in refused(roots[2], "mine.txt\x00.png")
    assert "empty" in refused(roots[2], "")
    assert "empty" in refused(roots[2], "   ")


@pytest.mark.parametrize(
    "raw", ["\uff0e\uff0e/\uff0e\uff0e/etc/passwd", "\u2025/etc", "mine\u2024txt", "\u2215etc\u2215passwd"]
)
def test_unicode_look_alikes_stay_literal_names_inside(roots, raw: str) -> None:
    workspace, _, guard = roots
    resolved = guard.resolve(raw)
    assert resolved.is_relative_to(workspace)
    assert not resolved.exists()


def test_very_long_names(roots) -> None:
    assert "longer than" in refused(roots[2], "a" * 300)
    assert "characters long" in refused(roots[2], "a/" * 3000)


def test_dataset_is_readable_under_both_names_and_never_writable(roots) -> None:
    _, dataset, guard = roots
    assert guard.resolve(str(dataset / "q.txt")) == dataset / "q.txt"
    assert guard.resolve("/workspace/gaia_dataset/q.txt") == dataset / "q.txt"
    assert guard.display(dataset / "q.txt") == "/workspace/gaia_dataset/q.txt"
    assert guard.display(dataset) == "/workspace/gaia_dataset"
    assert "read-only" in refused(guard, "/workspace/gaia_dataset/q.txt", write=True)
    assert "read-only" in refused(guard, str(dataset / "new.txt"), write=True)


def test_atomic_write_replaces_whole_file_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    atomic_write(target, "first")
    atomic_write(target, "second")
    assert target.read_text() == "second"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_atomic_write_failure_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    atomic_write(target, "original")
    with pytest.raises(TypeError):
        atomic_write(target, 12345)  # type: ignore[arg-type]  # fails mid-write, after the temp file exists
    assert target.read_text() == "original"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_paths_are_shown_as_the_agent_names_them(roots) -> None:
    workspace, dataset, guard = roots
    assert guard.display(workspace / "sub" / "a.csv") == "sub/a.csv"
    assert guard.display(workspace) == "."
    assert guard.display(Path("/etc/passwd")) == "passwd"  # nothing outside the roots is named in full
    assert str(workspace) not in guard.describe_roots() and str(dataset) not in guard.describe_roots()
    assert "/workspace/gaia_dataset" in guard.describe_roots()


def test_refusals_name_no_host_path(roots) -> None:
    workspace, dataset, guard = roots
    (workspace / "out").symlink_to("/etc")
    for raw in ("/etc/passwd", "../../x", "out/passwd", str(dataset / "new.txt")):
        message = refused(guard, raw, write=True)
        assert str(workspace) not in message and str(workspace.parent) not in message, message


def test_conceal_rewrites_host_paths_in_free_text(roots) -> None:
    workspace, dataset, guard = roots
    text = f"""File "{workspace}/s.py", line 3
cd {workspace} && ls {workspace}/
'{workspace}/my file.txt' {dataset}/q.txt {workspace}2/other {dataset}x"""
    assert (
        guard.conceal(text)
        == f"""File "s.py", line 3
cd . && ls ./
'my file.txt' /workspace/gaia_dataset/q.txt {workspace}2/other {dataset}x"""
    )
