"""VIDEO_* settings: read when a tool runs (not at import), and out-of-range values refused."""

import json

import pytest
from gaia_kit_testing import failed, ok
from media_video_server.settings import VideoSettings
from pydantic import ValidationError

pytestmark = pytest.mark.anyio


async def test_video_max_keyframes_set_after_import_is_the_default_and_ceiling(
    call, kit_env, cuts, monkeypatch
):
    monkeypatch.setenv("VIDEO_MAX_KEYFRAMES", "2")
    out = json.loads(
        ok(await call("extract_keyframes", video_path="cuts.mp4", target_time=3, window_size=6, mode="uniform",
                      output_format="json"))
    )  # fmt: skip
    assert len(out["frames"]) == 2
    message = failed(await call("extract_keyframes", video_path="cuts.mp4", target_time=3, max_frames=3))
    assert "between 1 and 2 (VIDEO_MAX_KEYFRAMES)" in message


@pytest.mark.parametrize(
    "name",
    [
        "VIDEO_MAX_BYTES",
        "VIDEO_FFMPEG_TIMEOUT_S",
        "VIDEO_MAX_KEYFRAMES",
        "VIDEO_MAX_FRAMES",
        "VIDEO_MAX_SIDE",
        "VIDEO_MAX_WORKERS",
        "VIDEO_MAX_TRANSCRIPT_CHARS",
    ],
)
def test_a_limit_of_zero_is_refused(monkeypatch, name):
    monkeypatch.setenv(name, "0")
    with pytest.raises(ValidationError, match=name.removeprefix("VIDEO_").lower()):
        VideoSettings()


def test_the_scene_threshold_is_a_score_from_0_to_1(monkeypatch):
    monkeypatch.setenv("VIDEO_SCENE_THRESHOLD", "0")
    assert VideoSettings().scene_threshold == 0
    monkeypatch.setenv("VIDEO_SCENE_THRESHOLD", "1.5")
    with pytest.raises(ValidationError, match="scene_threshold"):
        VideoSettings()
