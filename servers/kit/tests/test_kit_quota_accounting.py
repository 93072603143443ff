"""gaia_kit.core.quota_accounting: what a workspace holds against its limits, and the sentence when full."""

from __future__ import annotations

import pytest
from gaia_kit.core.quota_accounting import (
    QUOTA_DIR,
    Quota,
    QuotaExceeded,
    Usage,
    measure,
    prepare_root,
    release,
    session_workspace,
    size_text,
)

MB = 1024 * 1024


@pytest.fixture
def quota(kit_env, workspace_quota) -> Quota:
    """The s1 workspace with a 4 MB, 20-file quota."""
    workspace_quota(4, 20)
    found = Quota.of(kit_env.workspace)
    assert found is not None
    return found


@pytest.mark.parametrize(
    ("size", "text"),
    [(9_999, "9,999 bytes"), (12_345, "12.1 KB"), (5 * MB, "5.0 MB"), (3 * 2**30, "3.0 GB")],
)
def test_sizes_read_as_a_person_writes_them(size, text):
    assert size_text(size) == text


def test_a_path_belongs_to_the_workspace_named_first_under_the_root(kit_env, tmp_path):
    assert session_workspace(kit_env.workspace / "a" / "b.txt") == kit_env.workspace
    assert session_workspace(kit_env.root) is None
    assert session_workspace(kit_env.root / QUOTA_DIR / "locks") is None
    assert session_workspace(tmp_path / "elsewhere") is None


def test_growth_past_a_limit_is_refused_with_the_use_and_the_way_out(quota):
    used = Usage(3 * MB, 5)
    quota.check(used, MB, 1, "Saving a.bin")  # exactly full is allowed
    with pytest.raises(QuotaExceeded) as refused:
        quota.check(used, MB + 1, 1, "Saving a.bin")
    message = str(refused.value)
    assert message.startswith("Saving a.bin would take the session workspace past its quota")
    assert "3.0 MB of 4 MB (GAIA_WORKSPACE_MAX_MB) and 5 of 20 files (GAIA_WORKSPACE_MAX_FILES)" in message
    assert "rm -r" in message


def test_a_workspace_over_its_quota_may_still_shrink(quota):
    over = Usage(9 * MB, 30)
    assert quota.over(over) and quota.room(over) == 0
    quota.check(over, -MB, -1, "Replacing a.bin")


def test_counting_stops_a_little_past_the_limit_it_is_given(kit_env):
    folder = kit_env.workspace
    for depth in range(15):  # a folder and a file at each level: counted a folder at a time
        folder = folder / f"d{depth}"
        folder.mkdir()
        (folder / "f").write_bytes(b"x")
    assert measure(kit_env.workspace).files == 30
    assert 10 < measure(kit_env.workspace, stop_after=10).files < 30


def test_the_root_is_prepared_emptied_of_staging_and_a_lock_is_released(quota, kit_env):
    stale = kit_env.root / QUOTA_DIR / "staging" / "crashed.tmp"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_bytes(b"half")
    prepare_root(kit_env.root)
    assert not stale.exists() and (kit_env.root / QUOTA_DIR / "locks").is_dir()
    with quota.locked():
        pass
    lock = kit_env.root / QUOTA_DIR / "locks" / "s1.lock"
    assert lock.exists()
    release(kit_env.workspace)
    assert not lock.exists()
