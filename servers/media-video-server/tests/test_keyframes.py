"""extract_keyframes: frames at scene cuts and evenly spaced, saved into the workspace; bad inputs."""

import json
import shutil
from pathlib import Path

import anyio
import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit_testing import failed, ok
from gaia_kit_testing.compat import REFERENCE, compatibility_problems
from media_video_server.server import server
from PIL import Image

pytestmark = pytest.mark.anyio


PURE = {"red": (255, 0, 0), "blue": (0, 0, 255), "green": (0, 128, 0)}


def colour_of(path: Path) -> str:
    """The named colour closest to the centre pixel of a saved frame (JPEG shifts colours a little)."""
    with Image.open(path) as picture:
        pixel = picture.convert("RGB").getpixel((picture.width // 2, picture.height // 2))
    return min(PURE, key=lambda name: sum((a - b) ** 2 for a, b in zip(PURE[name], pixel, strict=True)))


async def test_tools_match_the_reference_schemas():
    ours = {tool.name: tool.input_schema for tool in await server.list_tools()}
    assert set(ours) == {tool["name"] for tool in REFERENCE["media-video-server"]}
    for tool in REFERENCE["media-video-server"]:
        assert not compatibility_problems(tool["inputSchema"], ours[tool["name"]]), tool["name"]


async def test_scene_mode_finds_the_cuts(call, kit_env, cuts):
    out = json.loads(
        ok(
            await call(
                "extract_keyframes", video_path="cuts.mp4", target_time=3, window_size=6, output_format="json"
            )
        )
    )
    times = [frame["time"] for frame in out["frames"]]
    assert times[0] == 0 and [round(t, 1) for t in times[1:]] == [2.0, 4.0]
    assert [colour_of(kit_env.workspace / frame["path"]) for frame in out["frames"]] == [
        "red",
        "blue",
        "green",
    ]
    assert all(Path(f["path"]).parent == Path("keyframes") for f in out["frames"])  # workspace-relative
    assert "scene change" in out["frames"][1]["reason"]
    table = ok(await call("extract_keyframes", video_path="cuts.mp4", target_time=4, window_size=2))
    assert "00:03.00 to 00:05.00" in table and "| 2 | 00:04.00 (4.00 s) | scene change" in table


async def test_uniform_mode_takes_one_frame_a_second_bounded_by_max_frames(call, kit_env, cuts):
    out = ok(
        await call(
            "extract_keyframes", video_path="cuts.mp4", target_time=3, window_size=4, mode="uniform",
            output_format="text", output_dir="frames/uniform", image_format="png",
        )
    )  # fmt: skip
    lines = out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["1.00s", "2.00s", "3.00s", "4.00s"]
    assert all(line.endswith(".png") and "\tframes/uniform/" in line for line in lines)
    assert colour_of(kit_env.workspace / lines[2].split("\t")[1]) == "blue"
    two = json.loads(
        ok(await call("extract_keyframes", video_path="cuts.mp4", target_time=3, window_size=6, mode="uniform",
                      max_frames=2, output_format="json"))
    )  # fmt: skip
    assert [f["time"] for f in two["frames"]] == [0.0, 3.0]


async def test_more_cuts_than_max_frames_keeps_the_strongest(call, kit_env, make_cuts):
    make_cuts(
        kit_env.workspace / "flags.mp4", ("red", "blue", "green", "white", "black", "yellow"), seconds=1
    )
    out = json.loads(
        ok(await call("extract_keyframes", video_path="flags.mp4", target_time=3, window_size=6, max_frames=3,
                      output_format="json"))
    )  # fmt: skip
    assert len(out["frames"]) == 3 and out["frames"][0]["time"] == 0
    assert all(round(f["time"], 1) in (1.0, 2.0, 3.0, 4.0, 5.0) for f in out["frames"][1:])
    assert "5 scene changes were found" in out["notes"][0]
    assert "max_frames must be between 1 and" in failed(
        await call("extract_keyframes", video_path="flags.mp4", target_time=3, max_frames=1000)
    )


async def test_a_video_at_a_url_is_downloaded_into_the_workspace_and_removed(call, kit_env, site, make_cuts):
    make_cuts(site.root / "clip.mp4")
    out = ok(await call("extract_keyframes", video_path=f"{site.url}/clip.mp4", target_time=2, window_size=2))
    assert f"Keyframes of {site.url}/clip.mp4" in out and "clip_0002.00s.jpg" in out
    assert not list(kit_env.workspace.glob(".download-*"))
    assert "HTTP 404" in failed(
        await call("extract_keyframes", video_path=f"{site.url}/gone.mp4", target_time=1)
    )


async def test_bad_inputs_are_one_sentence_each(call, kit_env, cuts, tmp_path, speech):
    (kit_env.workspace / "notes.mp4").write_text("this is just text, not a video")
    (kit_env.workspace / "page.mp4").write_text("<!DOCTYPE html><html>Not found</html>")
    (kit_env.workspace / "empty.mp4").write_bytes(b"")
    shutil.copy(speech, kit_env.workspace / "voice.wav")
    shutil.copy(cuts, tmp_path / "outside.mp4")

    async def refusal(**arguments):
        return failed(await call("extract_keyframes", **{"target_time": 1, **arguments}))

    assert "is not a video file ffmpeg can read" in await refusal(video_path="notes.mp4")
    assert "an HTML page" in await refusal(video_path="page.mp4")
    assert "empty (0 bytes)" in await refusal(video_path="empty.mp4")
    assert "has no video track" in await refusal(video_path="voice.wav")
    assert "does not exist" in await refusal(video_path="missing.mp4")
    assert "Access denied" in await refusal(video_path=str(tmp_path / "outside.mp4"))
    assert "Access denied" in await refusal(video_path="cuts.mp4", output_dir="../elsewhere")
    assert "outside" in await refusal(video_path="cuts.mp4", target_time=60)
    assert "window_size must be more than 0" in await refusal(video_path="cuts.mp4", window_size=0)
    (kit_env.workspace / "taken").write_text("a file")
    assert "is a file" in await refusal(video_path="cuts.mp4", output_dir="taken")
    # and the server is still serving
    assert "Saved 2 frame(s)" in ok(
        await call("extract_keyframes", video_path="cuts.mp4", target_time=2, window_size=2)
    )


async def test_dataset_videos_are_read_and_frames_go_to_the_workspace(call, kit_env, make_cuts):
    make_cuts(kit_env.dataset / "given.mp4")
    out = ok(await call("extract_keyframes", video_path="/workspace/gaia_dataset/given.mp4", target_time=1))
    assert "keyframes/given_0000.00s.jpg" in out and str(kit_env.workspace) not in out
    assert (kit_env.workspace / "keyframes" / "given_0000.00s.jpg").exists()
    assert "read-only dataset" in failed(
        await call("extract_keyframes", video_path="/workspace/gaia_dataset/given.mp4", target_time=1,
                   output_dir="/workspace/gaia_dataset/frames")
    )  # fmt: skip


async def test_size_limit_and_ffmpeg_deadline(call, kit_env, cuts, slow, monkeypatch):
    monkeypatch.setenv("VIDEO_MAX_BYTES", "1000")
    assert "over the" in (
        message := failed(await call("extract_keyframes", video_path="cuts.mp4", target_time=1))
    )
    assert "VIDEO_MAX_BYTES" in message
    monkeypatch.delenv("VIDEO_MAX_BYTES")
    monkeypatch.setenv("VIDEO_FFMPEG_TIMEOUT_S", "0.2")
    forget_settings()  # settings are read once per process: these calls read the changed environment
    message = failed(await call("extract_keyframes", video_path="slow.mp4", target_time=30, window_size=60))
    assert "was stopped (VIDEO_FFMPEG_TIMEOUT_S)" in message
    monkeypatch.delenv("VIDEO_FFMPEG_TIMEOUT_S")
    forget_settings()
    assert ok(await call("extract_keyframes", video_path="cuts.mp4", target_time=1, window_size=1))


async def test_keyframes_do_not_wait_for_a_slow_analysis(call, kit_env, cuts, fake):
    fake.hold.clear()
    fake.answer("done")
    order = []

    async def analysis():
        ok(await call("analyze_video", video_url="cuts.mp4", question="What colours?"))
        order.append("analysis")

    async with anyio.create_task_group() as tg:
        tg.start_soon(analysis)
        await anyio.to_thread.run_sync(fake.arrived.wait, 60)
        ok(await call("extract_keyframes", video_path="cuts.mp4", target_time=3))
        order.append("keyframes")
        fake.hold.set()
    assert order == ["keyframes", "analysis"]


async def test_a_playlist_naming_another_sessions_video_is_refused(call, kit_env, make_cuts):
    other = kit_env.root / "s2"
    other.mkdir()
    secret = make_cuts(other / "secret.ts")
    playlist = f"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:6.0,\n{secret}\n#EXT-X-ENDLIST\n"
    (kit_env.workspace / "clip.mp4").write_text(playlist)
    message = failed(await call("extract_keyframes", video_path="clip.mp4", target_time=3, window_size=6))
    assert "clip.mp4" in message and "format 'hls'" in message and "pass one audio or video file" in message
    assert not (kit_env.workspace / "keyframes").exists()
