"""A file that names other files (an HLS playlist or a concat list under an audio name) is refused by
every audio tool, and never gives away the media it names (another session's, by absolute path)."""

import subprocess

import pytest
from gaia_kit_testing import failed

pytestmark = pytest.mark.anyio

SECRET_TITLE = "other-session-secret"


@pytest.fixture
def other_session_audio(kit_env):
    """Audio in another session's workspace, with a title only that audio has."""
    other = kit_env.root / "s2"
    other.mkdir()
    secret = other / "secret.mp3"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=7"]
        + ["-metadata", f"title={SECRET_TITLE}", str(secret)],
        check=True,
        capture_output=True,
    )
    return secret


PLAYLISTS = {
    "hls": "#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:7.0,\n{path}\n#EXT-X-ENDLIST\n",
    "concat": "ffconcat version 1.0\nfile '{path}'\n",
}


@pytest.mark.parametrize("kind", sorted(PLAYLISTS))
async def test_playlists_naming_another_sessions_audio_are_refused(call, kit_env, other_session_audio, kind):
    (kit_env.workspace / "innocent.mp3").write_text(PLAYLISTS[kind].format(path=other_session_audio))
    for tool, extra in (
        ("extract_audio_metadata", {}),
        ("trim_audio", {"start_time": 0, "output_path": "copy.wav"}),
        ("transcribe_audio", {}),
    ):
        message = failed(await call(tool, file_path="innocent.mp3", **extra))
        assert "innocent.mp3" in message and SECRET_TITLE not in message, (tool, message)
        assert "7.0" not in message and "pass one audio or video file" in message, (tool, message)
    assert not (kit_env.workspace / "copy.wav").exists()
