"""A record/replay cache of HTTP responses in one SQLite file that several processes share.

    cache = ResponseCache(path)
    cache.put(key, entry)          # key: request_key(...) of the normalized request
    cache.get(key, ttl_s=3600)     # -> CachedResponse | None
    cache.stats(); cache.export(path); cache.import_(path); cache.clear()

The key is a hash of the normalized request (see `request_key`). Credentials (secret query values,
user:password, Authorization, cookies, API-key headers and body fields) enter it only as a digest of
their own: a response fetched with one credential is never served to a request with another, and
the stored URL has secret query values masked, so the file can be shared without leaking API keys.
WAL mode and a busy timeout let server replicas read and write it at the same time.

Gateways on several machines share one cache through Redis instead: `open_cache(url, path)` gives
a `RedisCache` (same methods) for a `redis://` or `rediss://` URL, else the SQLite file.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

# Query parameters and headers that carry credentials: never stored, and part of a key only as a digest.
SECRET_PARAMS = frozenset(
    {"key", "api_key", "apikey", "access_token", "token", "auth", "password", "secret", "client_secret"}
)
SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key", "x-goog-api-key"}
)
# Headers that change what a server answers, and so belong in the key.
KEY_HEADERS = ("accept", "accept-language", "content-type")
MASK = "***"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    method TEXT NOT NULL,
    url TEXT NOT NULL,
    status INTEGER NOT NULL,
    headers TEXT NOT NULL,
    content BLOB NOT NULL,
    final_url TEXT NOT NULL,
    created REAL NOT NULL
)
"""


class CacheError(Exception):
    """A cache backend cannot be reached or used; the message names where it is."""


@dataclass(frozen=True)
class CachedResponse:
    method: str
    url: str
    """The request URL, secrets masked."""
    status: int
    headers: dict[str, str]
    content: bytes
    final_url: str
    """The URL after redirects, secrets masked."""
    created: float


def is_secret_header(name: str) -> bool:
    name = name.lower()
    return name in SECRET_HEADERS or any(word in name for word in ("token", "secret", "api-key", "apikey"))


def masked_url(url: httpx.URL) -> str:
    """The URL without user:password, secret query values replaced, query sorted: what is stored."""
    pairs = sorted((k, MASK if k.lower() in SECRET_PARAMS else v) for k, v in url.params.multi_items())
    return str(url.copy_with(userinfo=b"", params=pairs or None, fragment=None))


def request_key(
    method: str,
    url: httpx.URL,
    headers: httpx.Headers,
    body: bytes = b"",
    body_secrets: Iterable[tuple[str, str]] = (),
) -> str:
    """A hash of method, URL (query sorted, secret params apart), the KEY_HEADERS, the body, and a
    digest of the credentials the request carries (`body_secrets`: those taken out of its body)."""
    pairs = sorted((k, v) for k, v in url.params.multi_items() if k.lower() not in SECRET_PARAMS)
    normal = url.copy_with(userinfo=b"", params=pairs or None, fragment=None)
    parts = {
        "method": method.upper(),
        "url": str(normal),
        "headers": {name: headers.get(name, "") for name in KEY_HEADERS},
        "body": hashlib.sha256(body).hexdigest(),
    }
    secrets = _credentials(url, headers, body_secrets)
    if secrets:  # absent otherwise, so keys of requests without credentials stay as they were
        parts["credentials"] = hashlib.sha256(json.dumps(secrets).encode()).hexdigest()
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def _credentials(
    url: httpx.URL, headers: httpx.Headers, body_secrets: Iterable[tuple[str, str]]
) -> list[list[str]]:
    """Every credential of a request, in one order: what a cached answer may be shared under."""
    found = [["query", k.lower(), v] for k, v in url.params.multi_items() if k.lower() in SECRET_PARAMS]
    found += [["header", k.lower(), v] for k, v in headers.multi_items() if is_secret_header(k)]
    found += [["body", k.lower(), str(v)] for k, v in body_secrets]
    if url.userinfo:
        found.append(["userinfo", "", url.userinfo.decode("latin-1")])
    return sorted(found)


class Cache(Protocol):
    """What the HTTP client and `gaia-env cache` need of a backend."""

    location: str

    def get(self, key: str, ttl_s: float = 0) -> CachedResponse | None: ...
    def put(self, key: str, entry: CachedResponse) -> None: ...
    def stats(self) -> dict[str, object]: ...
    def export(self, path: str | Path) -> int: ...
    def import_(self, path: str | Path) -> int: ...
    def clear(self) -> int: ...


def open_cache(url: str, path: str | Path) -> Cache:
    """The Redis cache at `url` when it is a redis:// or rediss:// URL, else the SQLite file `path`."""
    if url.startswith(("redis://", "rediss://")):
        return RedisCache(url)
    if url:
        raise CacheError(
            f"GAIA_HTTP_CACHE_URL={url!r} is not a redis:// or rediss:// URL; unset it to use the file."
        )
    return ResponseCache(path)


class ResponseCache:
    """One SQLite file of recorded responses; every method opens its own connection (process-safe)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.location = str(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(_SCHEMA)

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        # A connection per operation: cheap next to an HTTP request, and safe across threads.
        with closing(sqlite3.connect(self.path, timeout=30)) as db:
            db.execute("PRAGMA busy_timeout=30000")
            # With WAL, NORMAL never corrupts the file; a power cut may lose the last few entries.
            db.execute("PRAGMA synchronous=NORMAL")
            with db:
                yield db

    def get(self, key: str, ttl_s: float = 0) -> CachedResponse | None:
        """The entry for `key`, or None; with ttl_s > 0, entries older than that count as missing."""
        with self._db() as db:
            row = db.execute(
                "SELECT method, url, status, headers, content, final_url, created FROM responses WHERE key=?",
                (key,),
            ).fetchone()
        return _fresh(_entry(row), ttl_s) if row is not None else None

    def put(self, key: str, entry: CachedResponse) -> None:
        with self._db() as db:
            db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)", _row(key, entry))

    def stats(self) -> dict[str, object]:
        with self._db() as db:
            count, size, oldest, newest = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(LENGTH(content)), 0), MIN(created), MAX(created) FROM responses"
            ).fetchone()
            urls = [url for (url,) in db.execute("SELECT url FROM responses")]
        return {
            "path": str(self.path),
            "entries": count,
            "content_bytes": size,
            "file_bytes": self.path.stat().st_size if self.path.exists() else 0,
            "oldest": oldest,
            "newest": newest,
            "hosts": _by_host(urls),
        }

    def export(self, path: str | Path) -> int:
        """Write every entry as one JSON line (content in base64); return how many."""
        count = 0
        with self._db() as db, open(path, "w", encoding="utf-8") as out:
            for row in db.execute("SELECT * FROM responses ORDER BY created, key"):
                out.write(json.dumps(_record(row), sort_keys=True) + "\n")
                count += 1
        return count

    def import_(self, path: str | Path) -> int:
        """Add the entries of an export (replacing entries with the same key); return how many."""
        with open(path, encoding="utf-8") as lines:
            rows = [_from_record(json.loads(line)) for line in lines if line.strip()]
        return self._put_rows(rows)

    def clear(self) -> int:
        """Remove every entry; return how many there were."""
        with self._db() as db:
            removed = db.execute("DELETE FROM responses").rowcount
        with closing(sqlite3.connect(self.path, timeout=30)) as db:
            db.execute("VACUUM")  # give the space back; outside a transaction
        return removed

    def _put_rows(self, rows: Iterable[tuple]) -> int:
        rows = list(rows)
        with self._db() as db:
            db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        return len(rows)


# Fields of one entry, in the order of the SQLite columns after the key.
FIELDS = ("method", "url", "status", "headers", "content", "final_url", "created")


class RedisCache:
    """The same cache in Redis, one hash per entry under a key prefix: shared by gateways on many
    machines. Entries carry their `created` time, so TTLs behave as in the file (replay ignores
    them); Redis's own `maxmemory` with an LRU policy bounds its size."""

    def __init__(self, url: str, prefix: str = "gaia-env:http:"):
        try:
            import redis
        except ImportError:
            raise CacheError(
                "GAIA_HTTP_CACHE_URL names Redis, but this environment lacks the redis package (pip install redis)."
            ) from None
        self.location = masked_url(httpx.URL(url))  # no password in messages
        self.prefix = prefix
        self._error = redis.RedisError
        self._redis = redis.Redis.from_url(url, socket_timeout=10, socket_connect_timeout=5)
        with self._guard():
            self._redis.ping()

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except self._error as exc:
            raise CacheError(f"Redis at {self.location}: {exc}") from None

    def get(self, key: str, ttl_s: float = 0) -> CachedResponse | None:
        with self._guard():
            found = self._redis.hgetall(self.prefix + key)
        return _fresh(_entry(_unpack(found)), ttl_s) if found else None

    def put(self, key: str, entry: CachedResponse) -> None:
        with self._guard():
            self._redis.hset(self.prefix + key, mapping=_pack(key, entry))

    def stats(self) -> dict[str, object]:
        urls, created, size = [], [], 0
        for batch in self._batches():
            pipe = self._redis.pipeline(transaction=False)
            for name in batch:
                pipe.hmget(name, "url", "created")
                pipe.hstrlen(name, "content")
            with self._guard():
                answers = pipe.execute()
            for (url, when), length in zip(answers[::2], answers[1::2], strict=True):
                if url is not None:  # removed between the scan and the read
                    urls.append(url.decode())
                    created.append(float(when))
                    size += length
        return {
            "url": self.location,
            "entries": len(urls),
            "content_bytes": size,
            "oldest": min(created, default=None),
            "newest": max(created, default=None),
            "hosts": _by_host(urls),
        }

    def export(self, path: str | Path) -> int:
        count = 0
        with open(path, "w", encoding="utf-8") as out:
            for batch in self._batches():
                pipe = self._redis.pipeline(transaction=False)
                for name in batch:
                    pipe.hgetall(name)
                with self._guard():
                    found = pipe.execute()
                for fields in filter(None, found):
                    out.write(json.dumps(_record(_unpack(fields)), sort_keys=True) + "\n")
                    count += 1
        return count

    def import_(self, path: str | Path) -> int:
        with open(path, encoding="utf-8") as lines:
            rows = [_from_record(json.loads(line)) for line in lines if line.strip()]
        pipe = self._redis.pipeline(transaction=False)
        for row in rows:
            pipe.hset(self.prefix + row[0], mapping=dict(zip(("key", *FIELDS), row, strict=True)))
        with self._guard():
            pipe.execute()
        return len(rows)

    def clear(self) -> int:
        removed = 0
        for batch in self._batches():
            with self._guard():
                removed += self._redis.unlink(*batch)
        return removed

    def _batches(self, size: int = 500) -> Iterator[list[bytes]]:
        """The entries' Redis keys, a batch at a time (SCAN: never blocks Redis like KEYS would)."""
        batch: list[bytes] = []
        with self._guard():
            for name in self._redis.scan_iter(match=self.prefix + "*", count=size):
                batch.append(name)
                if len(batch) == size:
                    yield batch
                    batch = []
        if batch:
            yield batch


def _pack(key: str, entry: CachedResponse) -> dict[str, Any]:
    # The key travels inside the hash too, so an export does not depend on the prefix.
    return dict(zip(("key", *FIELDS), _row(key, entry), strict=True))


def _unpack(fields: dict[bytes, bytes]) -> tuple:
    """A Redis hash as the row tuple the SQLite file stores."""
    text = {name.decode(): value for name, value in fields.items()}
    return (
        text["key"].decode(),
        text["method"].decode(),
        text["url"].decode(),
        int(text["status"]),
        text["headers"].decode(),
        text["content"],
        text["final_url"].decode(),
        float(text["created"]),
    )


def _entry(row: tuple) -> CachedResponse:
    method, url, status, headers, content, final_url, created = row[-7:]
    return CachedResponse(method, url, status, json.loads(headers), bytes(content), final_url, created)


def _fresh(entry: CachedResponse, ttl_s: float) -> CachedResponse | None:
    """None when ttl_s > 0 and the entry is older than that."""
    return None if ttl_s > 0 and time.time() - entry.created > ttl_s else entry


def _by_host(urls: Iterable[str]) -> dict[str, int]:
    by_host: dict[str, int] = {}
    for url in urls:
        host = httpx.URL(url).host
        by_host[host] = by_host.get(host, 0) + 1
    return dict(sorted(by_host.items(), key=lambda item: -item[1]))


def _row(key: str, entry: CachedResponse) -> tuple:
    headers = json.dumps(entry.headers, sort_keys=True)
    return (
        key,
        entry.method,
        entry.url,
        entry.status,
        headers,
        entry.content,
        entry.final_url,
        entry.created,
    )


def _record(row: tuple) -> dict[str, object]:
    key, method, url, status, headers, content, final_url, created = row
    return {
        "key": key,
        "method": method,
        "url": url,
        "status": status,
        "headers": json.loads(headers),
        "content_b64": base64.b64encode(bytes(content)).decode("ascii"),
        "final_url": final_url,
        "created": created,
    }


def _from_record(record: dict) -> tuple:
    entry = CachedResponse(
        method=record["method"],
        url=record["url"],
        status=int(record["status"]),
        headers=dict(record["headers"]),
        content=base64.b64decode(record["content_b64"]),
        final_url=record["final_url"],
        created=float(record["created"]),
    )
    return _row(record["key"], entry)
