"""HttpClient.download: a body streamed into a file, capped, timed, recorded and replayed."""

from __future__ import annotations

import pytest
from gaia_kit import ToolFailure
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.errors import HttpFailure, TooLarge
from gaia_kit.web.http import HttpClient
from gaia_kit_testing.fake_web import FakeWeb

pytestmark = pytest.mark.anyio


@pytest.fixture
def web():
    with FakeWeb(slow_s=3) as fake:
        yield fake


def settings(tmp_path, **overrides) -> HttpSettings:
    values = {"allow": "127.0.0.1", "cache_path": tmp_path / "cache.sqlite", "backoff_base_s": 0.01}
    return HttpSettings(**{**values, **overrides})


async def test_the_body_lands_in_the_file_after_redirects_and_retries(web, tmp_path):
    target = tmp_path / "blob.bin"
    web.throttle(1)
    async with HttpClient(settings(tmp_path)) as http:
        response = await http.download(web.url("/redirect?to=/blob.bin"), target)
    assert response.status == 200 and response.content == b"" and response.url == web.url("/blob.bin")
    assert target.read_bytes() == bytes(range(256)) * 8
    assert response.headers["content-type"] == "application/octet-stream"


async def test_a_body_past_the_cap_is_aborted(web, tmp_path):
    async with HttpClient(settings(tmp_path)) as http:
        with pytest.raises(ToolFailure, match="larger than 100 bytes"):
            await http.download(web.url("/bytes/5000"), tmp_path / "big", max_bytes=100)


async def test_the_callers_timeout_bounds_the_download(web, tmp_path):
    async with HttpClient(settings(tmp_path)) as http:
        with pytest.raises(ToolFailure, match=r"within 0\.5 s \(the timeout asked for\)"):
            await http.download(web.url("/slow"), tmp_path / "slow", timeout_s=0.5)


async def test_an_error_answer_is_an_http_failure(web, tmp_path):
    async with HttpClient(settings(tmp_path)) as http:
        with pytest.raises(HttpFailure, match="HTTP 404"):
            await http.download(web.url("/missing"), tmp_path / "missing")


async def test_small_downloads_replay_offline_and_large_ones_are_not_recorded(web, tmp_path):
    async with HttpClient(settings(tmp_path, cache_max_file_bytes=4096)) as http:
        await http.download(web.url("/doc.pdf"), tmp_path / "first.pdf")
        await http.download(web.url("/bytes/5000"), tmp_path / "big")
    web.stop()
    async with HttpClient(settings(tmp_path, cache_mode="replay")) as http:
        response = await http.download(web.url("/doc.pdf"), tmp_path / "again.pdf")
        assert (
            response.from_cache
            and (tmp_path / "again.pdf").read_bytes() == (tmp_path / "first.pdf").read_bytes()
        )
        with pytest.raises(ToolFailure, match="No recorded answer"):
            await http.download(web.url("/bytes/5000"), tmp_path / "big-again")


async def test_the_cap_holds_for_recorded_answers_too(web, tmp_path):
    async with HttpClient(settings(tmp_path)) as http:
        await http.download(web.url("/bytes/500"), tmp_path / "first")
        with pytest.raises(TooLarge, match="larger than 100 bytes"):
            await http.download(web.url("/bytes/500"), tmp_path / "again", max_bytes=100)
    assert len(web.requests) == 1
