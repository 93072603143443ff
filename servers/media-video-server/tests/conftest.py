import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from gaia_kit_testing.fake_openai import llm_fixtures
from gaia_kit_testing.loopback import LoopbackServer
from gaia_kit_testing.server_call import call_fixture
from media_video_server.server import server
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

no_llm, fake = llm_fixtures("VIDEO", model="fake-vision", api_key="sk-video-secret")

COLOURS = ("red", "blue", "green")


def ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", *args], check=True, capture_output=True)


def colour_cuts(target: Path, colours=COLOURS, seconds: float = 2, size: str = "320x240") -> Path:
    """A video of plain colours, `seconds` each: hard cuts at seconds, 2 * seconds, ..."""
    inputs = []
    for colour in colours:
        inputs += ["-f", "lavfi", "-i", f"color={colour}:s={size}:r=25:d={seconds}"]
    joined = "".join(f"[{i}]" for i in range(len(colours))) + f"concat=n={len(colours)}:v=1:a=0"
    ffmpeg(*inputs, "-filter_complex", joined, "-pix_fmt", "yuv420p", str(target))
    return target


call = call_fixture(server)


@pytest.fixture
def make_cuts():
    """make_cuts(target, colours=COLOURS, seconds=2): a video of plain colours with hard cuts."""
    return colour_cuts


@pytest.fixture
def slow(kit_env):
    """slow.mp4 in the workspace: a minute of 720p test pattern, for deadlines to cut short."""
    target = kit_env.workspace / "slow.mp4"
    pattern = ["-f", "lavfi", "-i", "testsrc2=s=1280x720:r=30:d=60"]
    ffmpeg(*pattern, "-pix_fmt", "yuv420p", "-preset", "ultrafast", str(target))
    return target


@pytest.fixture
def cuts(kit_env):
    """cuts.mp4 in the workspace: 2 s red, 2 s blue, 2 s green."""
    return colour_cuts(kit_env.workspace / "cuts.mp4")


@pytest.fixture
def talking(kit_env, speech):
    """talk.mp4 in the workspace: a test pattern with the kit's spoken sentence on its audio track."""
    target = kit_env.workspace / "talk.mp4"
    pattern = ["-f", "lavfi", "-i", "testsrc=s=320x240:r=10"]
    ffmpeg(*pattern, "-i", str(speech), "-shortest", "-pix_fmt", "yuv420p", "-c:a", "aac", str(target))
    return target


@pytest.fixture
def site(tmp_path, monkeypatch, fresh_http):
    """A loopback web site serving tmp_path/site, allow-listed for the kit's HTTP client, no cache."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "off")
    app = Starlette(routes=[Mount("/", StaticFiles(directory=root))])  # Starlette turns misses into 404s
    with LoopbackServer(app) as web:
        yield SimpleNamespace(root=root, url=web.url())
