"""Programs a tool hands a file to see that file only: no other file, no network, no server secret."""

import os
import socket

import pytest
from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import forget_settings
from gaia_kit.execution.confine import run_confined


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_API_KEY", "sk-must-not-leak")
    forget_settings()
    (tmp_path / "given.txt").write_text("given")
    (tmp_path / "other.txt").write_text("other")
    (tmp_path / "out").mkdir()
    yield tmp_path
    forget_settings()


def sh(script: str, **kw):
    return run_confined(["sh", "-c", script], timeout=30, **kw)


def test_only_the_files_handed_over_are_visible(files):
    given, other = files / "given.txt", files / "other.txt"
    done = sh(f"cat {given}; cat {other}; ls {files}", reads=[given])
    assert done.stdout.decode() == "given" + "given.txt\n"
    assert b"other.txt: No such file" in done.stderr


def test_only_writes_are_writable(files):
    given, out = files / "given.txt", files / "out"
    done = sh(
        f"echo changed > {given}; echo made > {out}/made.txt; echo x > /usr/x", reads=[given], writes=[out]
    )
    assert given.read_text() == "given" and (out / "made.txt").read_text() == "made\n"
    assert done.stderr.count(b"Read-only file system") == 2, done.stderr


def test_no_network_not_even_loopback_and_no_server_environment(files):
    with socket.socket() as listener, socket.socket(type=socket.SOCK_DGRAM) as udp:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        udp.bind(("127.0.0.1", 0))
        code = (
            "import os, socket\n"
            f"socket.socket(type=socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {udp.getsockname()[1]}))\n"
            "print(os.environ.get('FAKE_API_KEY'))\n"
            f"socket.create_connection(('127.0.0.1', {listener.getsockname()[1]}), timeout=3)\n"
        )
        done = run_confined(["python3", "-c", code], timeout=30)
        assert done.stdout == b"None\n" and b"ConnectionRefusedError" in done.stderr, done.stderr
        listener.setblocking(False)
        udp.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()
        with pytest.raises(BlockingIOError):
            udp.recv(10)


def test_a_link_swapped_in_for_a_handed_file_is_refused(files):
    link = files / "link.txt"
    os.symlink(files / "other.txt", link)
    with pytest.raises(ToolFailure, match="link.txt could not be handed to sh .*replaced by a link"):
        sh(f"cat {link}", reads=[link])
