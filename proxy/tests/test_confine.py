"""The confined command line (confine.py), without starting anything: what is shown, in what order."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from gaia_env.confine import Bind, Confinement, ConfinementUnavailable, _outermost_first, _server_ids


def test_server_ids_default_to_nobody_and_never_root() -> None:
    assert _server_ids("") == (65534, 65534)
    assert _server_ids("1234") == (1234, 1234)
    assert _server_ids("1234:99") == (1234, 99)
    for bad in ("0", "5:0", "nobody", "-3"):
        with pytest.raises(ConfinementUnavailable, match="GAIA_SERVER_UID"):
            _server_ids(bad)


def test_parents_are_mounted_before_what_they_hold() -> None:
    binds = [
        Bind(Path("/h/.pyenv/py"), Path("/h/.pyenv/py")),
        Bind(Path("/private/home"), Path("/h"), writable=True),
        Bind(Path("/repo/.venv"), Path("/repo/.venv")),  # inside the read-only checkout: left out
        Bind(Path("/repo"), Path("/repo")),
        Bind(Path("/repo/ws"), Path("/repo/ws"), writable=True),  # writable inside it: kept
    ]
    assert [str(b.dest) for b in _outermost_first(binds)] == ["/h", "/repo", "/repo/ws", "/h/.pyenv/py"]


def test_the_command_shows_the_workspace_root_writable_and_the_dataset_read_only(tmp_path: Path) -> None:
    root, dataset = tmp_path / "ws", tmp_path / "data"
    root.mkdir()
    dataset.mkdir()
    env = {"GAIA_WORKSPACE_ROOT": str(root), "GAIA_DATASET_DIR": str(dataset), "HOME": str(tmp_path / "home")}
    env["GAIA_HTTP_CACHE_PATH"] = str(tmp_path / "cache" / "http.sqlite")
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    confinement = Confinement.from_env({**env, "GAIA_SERVER_UID": "4321:4321"})
    launch = confinement.launch([sys.executable, "-m", "some_server"], env, "some-server#0")
    try:
        argv = launch.argv
        pairs = {(argv[i], argv[i + 1], argv[i + 2]) for i in range(len(argv) - 2)}
        assert ("--bind", str(root), str(root)) in pairs
        assert ("--ro-bind", str(dataset), str(dataset)) in pairs
        assert ("--bind", str(launch.private), "/tmp") in pairs
        sources = {src for op, src, _ in pairs if op in ("--bind", "--ro-bind", "--ro-bind-try")}
        assert not sources & {"/", "/root", "/home", "/etc", "/etc/shadow", "/proc", "/tmp"}
        assert argv[-3:] == [sys.executable, "-m", "some_server"]
        assert launch.env["TMPDIR"] == "/tmp" and launch.env["PYTHONPYCACHEPREFIX"].endswith("pycache")
        quiet = confinement.launch(["true"], {**env, "PYTHONDONTWRITEBYTECODE": "1"}, "quiet")
        quiet.cleanup()
        assert "PYTHONPYCACHEPREFIX" not in quiet.env  # it would hide the .pyc files beside the sources
        if os.geteuid() == 0:  # root: no user namespace, setpriv drops to the uid after /proc is mounted
            assert "--unshare-user" not in argv and "--reuid=4321" in " ".join(argv)
        else:
            assert "--unshare-user" in argv and "setpriv" not in argv
    finally:
        launch.cleanup()
    assert not launch.private.exists()
    confinement.forget_private_base()
    assert not confinement.private_base.exists()


def test_opting_out_is_read_from_the_environment() -> None:
    assert Confinement.from_env({"GAIA_SERVER_CONFINE": "0"}) is None
    assert Confinement.from_env({"GAIA_SERVER_CONFINE": "off"}) is None
    assert Confinement.from_env({}) is not None


def test_a_home_that_is_the_root_or_the_checkout_is_not_hidden(tmp_path: Path) -> None:
    from gaia_env.registry import REPO_ROOT

    # The bytecode cache named, or a relative HOME would put one in the directory pytest runs in.
    env = {"GAIA_WORKSPACE_ROOT": str(tmp_path), "GAIA_SERVER_CONFINE": "1", "XDG_CACHE_HOME": str(tmp_path)}
    confinement = Confinement.from_env(env)
    for home, expected in (
        ("/", "/tmp"),
        (str(REPO_ROOT), "/tmp"),
        ("relative", "/tmp"),
        ("/home/gaia", "/home/gaia"),
    ):
        launch = confinement.launch(["true"], {**env, "HOME": home}, "home")
        launch.cleanup()
        assert launch.env["HOME"] == expected, home
