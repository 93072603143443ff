"""gaia_kit.web.cache on its own: keys, TTL, stats, export/import, clear, two processes on one cache;
each behaviour on both backends, the SQLite file and a real redis-server."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
import time

import httpx
import pytest
from gaia_kit.web.cache import (
    CachedResponse,
    CacheError,
    RedisCache,
    ResponseCache,
    masked_url,
    open_cache,
    request_key,
)


@pytest.fixture(params=["sqlite", "redis"])
def make_cache(request, tmp_path):
    """make_cache(name): a cache of the backend under test; different names never share entries."""
    if request.param == "sqlite":
        return lambda name="c": ResponseCache(tmp_path / name / "c.sqlite")
    url = request.getfixturevalue("redis_url")
    return lambda name="c": RedisCache(url, prefix=f"test:{name}:")


def entry(url: str, content: bytes = b"body", created: float | None = None) -> CachedResponse:
    return CachedResponse(
        "GET",
        url,
        200,
        {"content-type": "text/plain"},
        content,
        url,
        time.time() if created is None else created,
    )


def key(url: str, **headers: str) -> str:
    return request_key("GET", httpx.URL(url), httpx.Headers(headers))


def test_keys_normalize_the_query_and_tell_credentials_apart():
    base = key("https://api.example.org/search?q=a&lang=en")
    assert key("https://API.example.org:443/search?lang=en&q=a") == base
    with_key = key("https://api.example.org/search?q=a&lang=en&key=s3cret")
    assert with_key not in (base, key("https://api.example.org/search?q=a&lang=en&key=other"))
    assert key("https://api.example.org/search?key=s3cret&lang=en&q=a") == with_key
    bearer = key("https://api.example.org/search?q=a&lang=en", authorization="Bearer x")
    assert bearer not in (base, key("https://api.example.org/search?q=a&lang=en", authorization="Bearer y"))
    assert key("https://api.example.org/search?q=a&lang=en", cookie="s=1") not in (base, bearer)
    assert key("https://user:pw@api.example.org/search?q=a&lang=en") not in (
        base,
        key("https://user:other@api.example.org/search?q=a&lang=en"),
    )
    assert "s3cret" not in with_key
    assert key("https://api.example.org/search?q=b&lang=en") != base
    assert key("https://api.example.org/search?q=a&lang=en", accept="application/json") != base
    post = request_key("POST", httpx.URL("https://api.example.org/search"), httpx.Headers(), b'{"q": 1}')
    assert post != request_key(
        "POST", httpx.URL("https://api.example.org/search"), httpx.Headers(), b'{"q": 2}'
    )
    assert (
        masked_url(httpx.URL("https://u:pw@x.org/p?z=1&key=s3cret#frag"))
        == "https://x.org/p?key=%2A%2A%2A&z=1"
    )
    assert masked_url(httpx.URL("https://x.org/p")) == "https://x.org/p"


def test_get_put_and_ttl(make_cache):
    cache = make_cache()
    cache.put("k1", entry("https://a.org/1", b"\x00\xffbytes"))
    cache.put("k2", entry("https://a.org/2", created=time.time() - 100))
    assert cache.get("k1").content == b"\x00\xffbytes"
    assert cache.get("k2", ttl_s=50) is None  # expired for a 50 s TTL
    assert cache.get("k2", ttl_s=0).url == "https://a.org/2"  # 0: never expires
    assert cache.get("missing") is None


def test_stats_export_import_round_trip_and_clear(make_cache, tmp_path):
    cache = make_cache()
    originals = {f"k{n}": entry(f"https://a.org/{n}", bytes([n]) * 10) for n in range(3)}
    originals["w"] = entry("https://en.wikipedia.org/wiki/X", b"wiki")
    for name, value in originals.items():
        cache.put(name, value)
    stats = cache.stats()
    assert (stats["entries"], stats["content_bytes"]) == (4, 34)
    assert stats["hosts"] == {"a.org": 3, "en.wikipedia.org": 1}

    dump = tmp_path / "dump.jsonl"
    assert cache.export(dump) == 4 and len(dump.read_text().splitlines()) == 4
    assert cache.clear() == 4 and cache.stats()["entries"] == 0

    other = make_cache("other")
    assert other.import_(dump) == 4
    assert {name: other.get(name) for name in originals} == originals
    assert other.import_(dump) == 4 and other.stats()["entries"] == 4  # importing again replaces


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_two_processes_share_one_cache(backend, tmp_path, request):
    url = request.getfixturevalue("redis_url") if backend == "redis" else ""
    path = tmp_path / "shared.sqlite"
    open_cache(url, path)
    writer = textwrap.dedent(
        f"""
        import time
        from gaia_kit.web.cache import CachedResponse, open_cache
        cache = open_cache({url!r}, {str(path)!r})
        for n in range(200):
            cache.put(f"child{{n}}", CachedResponse("GET", f"https://c.org/{{n}}", 200, {{}}, b"c", "", time.time()))
        print(cache.get("parent0") is not None or "parent not seen yet")
        """
    )
    child = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    cache = open_cache(url, path)
    for n in range(200):
        cache.put(f"parent{n}", entry(f"https://p.org/{n}", b"p"))
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err.decode()[-2000:]
    assert cache.stats()["entries"] == 400
    assert cache.get("child199").url == "https://c.org/199"


def test_open_cache_picks_the_backend_from_the_url(tmp_path, redis_url):
    assert isinstance(open_cache("", tmp_path / "c.sqlite"), ResponseCache)
    assert isinstance(open_cache(redis_url, tmp_path / "unused.sqlite"), RedisCache)
    assert not (tmp_path / "unused.sqlite").exists()
    with pytest.raises(CacheError, match="not a redis:// or rediss:// URL"):
        open_cache("memcached://127.0.0.1", tmp_path / "c.sqlite")


def test_an_unreachable_redis_is_named_without_its_password():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(CacheError, match=f"Redis at redis://127.0.0.1:{port}/0") as raised:
        RedisCache(f"redis://:s3cret@127.0.0.1:{port}/0")
    assert "s3cret" not in str(raised.value)


def test_redis_entries_keep_bytes_headers_and_the_key_across_prefixes(redis_url, tmp_path):
    first = RedisCache(redis_url, prefix="a:")
    stored = CachedResponse(
        "POST", "https://x.org/q?key=%2A%2A%2A", 404, {"x-h": "v"}, b"\x00\xff", "https://x.org/q", 5.0
    )
    first.put("k", stored)
    assert first.get("k") == stored
    dump = tmp_path / "dump.jsonl"
    first.export(dump)
    second = RedisCache(redis_url, prefix="b:")
    assert second.import_(dump) == 1 and second.get("k") == stored
    assert first.clear() == 1 and first.get("k") is None and second.get("k") == stored
