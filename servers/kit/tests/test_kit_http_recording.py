"""gaia_kit.web.recording: which requests the cache answers, under which key, and what it keeps."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from gaia_kit import ToolFailure
from gaia_kit.core.calls import Call, enter, leave
from gaia_kit.core.hints import hints
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.recording import Recorder, cache_key, cache_mode, storable
from gaia_kit.web.response import HttpResponse

pytestmark = pytest.mark.anyio


def settings(tmp_path, mode: str = "read-write") -> HttpSettings:
    return HttpSettings(cache_mode=mode, cache_path=tmp_path / "http.sqlite", cache_url="")


def inside(tool: str, **annotations: bool) -> Iterator[None]:
    token = enter(Call(tool, hints(tool, open_world=True, **annotations)))
    yield
    leave(token)


@pytest.fixture
def in_search_tool() -> Iterator[None]:
    yield from inside("search", read_only=True)


@pytest.fixture
def in_posting_tool() -> Iterator[None]:
    yield from inside("post_comment", read_only=False, destructive=False, idempotent=False)


def test_outside_a_tool_gets_are_cached_and_posts_are_not(tmp_path):
    assert cache_mode(settings(tmp_path), "GET", None) == "read-write"
    assert cache_mode(settings(tmp_path), "POST", True) == "off"
    assert cache_mode(settings(tmp_path), "GET", False) == "off"
    assert cache_mode(settings(tmp_path, "off"), "GET", True) == "off"


def test_a_read_only_tool_may_ask_for_its_posts_to_be_cached(tmp_path, in_search_tool):
    assert cache_mode(settings(tmp_path), "POST", None) == "off"
    assert cache_mode(settings(tmp_path), "POST", True) == "read-write"
    assert cache_mode(settings(tmp_path, "replay"), "POST", None) == "replay"


def test_replay_refuses_a_tool_whose_requests_may_not_be_replayed(tmp_path, in_posting_tool):
    assert cache_mode(settings(tmp_path), "GET", None) == "off"
    with pytest.raises(ToolFailure, match="post_comment is not marked idempotent"):
        cache_mode(settings(tmp_path, "replay"), "GET", None)


@pytest.mark.parametrize(
    ("status", "kept"), [(200, True), (301, True), (404, True), (403, False), (429, False), (503, False)]
)
def test_only_answers_that_do_not_depend_on_luck_or_keys_are_stored(status, kept):
    assert storable(status) is kept


def test_a_json_body_key_ignores_field_order_and_digests_secrets():
    def key(body: dict) -> str:
        return cache_key(httpx.Request("POST", "https://api.example.org/q", json=body), body)

    assert key({"q": "x", "n": 1}) == key({"n": 1, "q": "x"})
    assert key({"q": "x", "api_key": "a"}) != key({"q": "x", "api_key": "b"})


async def test_a_recorded_answer_is_found_again_with_its_final_url(tmp_path):
    recorder, request = Recorder(settings(tmp_path)), httpx.Request("GET", "https://example.org/p")
    answer = HttpResponse(200, {"content-type": "text/plain"}, b"body", "https://example.org/final")
    assert await recorder.lookup(request, "read-write", "k") is None
    await recorder.record(request, "k", answer, answer.content)
    hit = await recorder.lookup(request, "replay", "k")
    assert hit == HttpResponse(
        200, {"content-type": "text/plain"}, b"body", "https://example.org/final", True
    )
    assert await recorder.lookup(request, "off", "k") is None


async def test_a_failure_is_not_recorded_and_replay_explains_the_miss(tmp_path):
    recorder, request = Recorder(settings(tmp_path)), httpx.Request("GET", "https://example.org/p")
    await recorder.record(request, "k", HttpResponse(503, {}, b"", str(request.url)), b"")
    with pytest.raises(
        ToolFailure, match=r"No recorded answer for GET example.org/p in the HTTP cache .*http.sqlite"
    ):
        await recorder.lookup(request, "replay", "k")


async def test_an_unusable_cache_names_the_setting_to_change(tmp_path):
    (tmp_path / "dir").mkdir()
    unusable = Recorder(HttpSettings(cache_path=tmp_path / "dir", cache_url=""))
    with pytest.raises(ToolFailure, match="GAIA_HTTP_CACHE_PATH"):
        await unusable.lookup(httpx.Request("GET", "https://example.org/"), "read-write", "k")
    not_redis = Recorder(HttpSettings(cache_url="http://cache.example.org"))
    with pytest.raises(ToolFailure, match="GAIA_HTTP_CACHE_URL"):
        await not_redis.lookup(httpx.Request("GET", "https://example.org/"), "read-write", "k")


def test_a_redis_location_is_shown_without_its_password():
    assert Recorder(HttpSettings(cache_url="redis://user:pw@cache:6379/0")).location == "redis://cache:6379/0"
