"""The one outbound HTTP client every server uses for URLs it did not configure itself.

    async with HttpClient() as http:            # or: http = shared_http()
        response = await http.get(url, params={"q": "x"})
        response.status, response.headers, response.content, response.text(), response.json()
        response.url, response.from_cache

What it adds to httpx: connect/read/total timeouts; retries with exponential backoff and jitter on
429, 5xx and connection errors, honouring Retry-After; a per-host concurrency limit (and a pause
between requests where a site asks for one); a cap on the bytes read; a descriptive User-Agent; an
SSRF guard; the record/replay cache of gaia_kit.web.cache, for the requests the calling tool's annotations
allow (gaia_kit.core.calls.replay_allowed: read-only and idempotent tools, and idempotent tools' GETs).
Every failure is a ToolFailure in one sentence (HttpFailure, with `.status`, for an HTTP error answer).

The SSRF guard (gaia_kit.web.ssrf) sits in the transport: redirects are followed here, not by httpx,
so every hop is checked, and proxies from the environment are not used, since a proxy would
resolve the name itself.
"""

from __future__ import annotations

import asyncio
import json as jsonlib
import logging
import os
import sqlite3
import ssl
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cached_property
from http import HTTPStatus
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
import charset_normalizer
import httpx
from anyio import AsyncFile
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from gaia_kit.core.benchmark_guard import refuse_mirror
from gaia_kit.core.blocking import run_blocking
from gaia_kit.core.calls import current_call, replay_allowed
from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.retry import retry_wait
from gaia_kit.core.usage import charge, check_budget
from gaia_kit.web.cache import (
    SECRET_PARAMS,
    Cache,
    CachedResponse,
    CacheError,
    is_secret_header,
    masked_url,
    open_cache,
    request_key,
)
from gaia_kit.web.ssrf import (
    AllowList,
    check_literal,
    guarded_transport,
    host_matches,
)

logger = logging.getLogger("gaia_kit.web.http")

CacheMode = Literal["off", "read-write", "replay"]
T = TypeVar("T")

REDIRECTS = {301, 302, 303, 307, 308}
PROGRESS_STEP_BYTES = 1024 * 1024
IDEMPOTENT = {"GET", "HEAD", "OPTIONS", "PUT", "DELETE"}
# Headers dropped from what callers see and what is stored: the body is already decoded, and
# cookies are per-client state that must not travel through a shared cache.
DROPPED_HEADERS = {"content-encoding", "content-length", "transfer-encoding", "set-cookie", "connection"}


def _mask_logged_urls(record: logging.LogRecord) -> bool:
    if isinstance(record.args, tuple):
        record.args = tuple(masked_url(arg) if isinstance(arg, httpx.URL) else arg for arg in record.args)
    return True


# httpx logs every request's full URL at INFO, API keys in the query included.
logging.getLogger("httpx").addFilter(_mask_logged_urls)


def _default_cache_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "gaia-env" / "http-cache.sqlite"


class HttpSettings(BaseSettings):
    """GAIA_HTTP_* variables; see docs/configuration.md, "Outbound HTTP"."""

    model_config = SettingsConfigDict(env_prefix="GAIA_HTTP_", extra="ignore")

    connect_timeout_s: float = 10.0
    read_timeout_s: float = 30.0
    """Longest silence while waiting for the answer or the next chunk of it."""
    total_timeout_s: float = 120.0
    """Deadline for one call, retries and redirects included."""
    retries: int = 3
    backoff_base_s: float = 0.5
    max_retry_after_s: float = 60.0
    """A Retry-After longer than this fails the call at once instead of waiting."""
    max_redirects: int = 5
    max_bytes: int = 50 * 1024 * 1024
    per_host_limit: int = 8
    host_limits: str = (
        "*.wikipedia.org=1,*.wikimedia.org=1,*.wiktionary.org=1,export.arxiv.org=1,"
        "archive.org=2,*.archive.org=2"
    )
    """Concurrent requests per process for these hosts (`*.` matches subdomains, which share one limit)."""
    host_intervals: str = "export.arxiv.org=3"
    """Seconds between the starts of two requests to these hosts (arXiv asks for 3)."""
    ca_bundle: Path | None = None
    """PEM file of certificate authorities to trust instead of the system's (a private CA)."""
    allow: str = ""
    """Hosts, addresses and CIDRs the SSRF guard lets through, comma-separated."""
    contact: str = ""
    """A URL or e-mail address put in the User-Agent, as Wikimedia's policy asks."""
    cache_mode: CacheMode = "read-write"
    cache_path: Path = Field(default_factory=_default_cache_path)
    cache_max_file_bytes: int = 20 * 1024 * 1024
    """Downloads (HttpClient.download) larger than this are not recorded, so replay misses them."""
    cache_ttl_s: float = 7 * 24 * 3600
    cache_url: str = ""
    """redis://host:6379/0 keeps the cache in Redis, shared by gateways on many machines, instead of cache_path."""
    """Age after which read-write mode fetches again; 0 keeps entries forever. Replay ignores it."""


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: dict[str, str]
    """Lower-case names; the body is already decoded, so no content-encoding or content-length."""
    content: bytes
    url: str
    """The URL after redirects, with secret query values masked."""
    from_cache: bool = False

    def text(self) -> str:
        charset = httpx.Headers(self.headers).get("content-type", "").partition("charset=")[2]
        charset = charset.split(";")[0].strip().strip('"')
        if charset:
            try:
                return self.content.decode(charset, errors="replace")
            except LookupError:
                pass
        best = charset_normalizer.from_bytes(self.content).best()
        return str(best) if best is not None else self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        try:
            return jsonlib.loads(self.content)
        except ValueError:
            host = httpx.URL(self.url).host
            raise ToolFailure(f"{host} answered with something other than JSON; check the URL.") from None


class HttpFailure(ToolFailure):
    """An HTTP error answer (4xx, or 5xx after the retries), with its status for callers that care."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class TooLarge(ToolFailure):
    """An answer past the byte cap; callers with their own cap setting catch it to name that setting."""

    def __init__(self, url: httpx.URL, max_bytes: int):
        super().__init__(
            f"The answer from {_where(url)} is larger than {max_bytes:,} bytes, the cap "
            f"(GAIA_HTTP_MAX_BYTES); fetch a smaller resource or raise the cap."
        )
        self.max_bytes = max_bytes


def user_agent(contact: str = "") -> str:
    try:
        version = metadata.version("gaia-kit")
    except metadata.PackageNotFoundError:
        version = "0"
    about = f"+{contact}" if contact else "MCP tool environment for LLM agents"
    return f"gaia-env/{version} ({about})"


# ---- the client --------------------------------------------------------------------------------


def _pairs(text: str, variable: str) -> dict[str, float]:
    """`host=number,...` as a dict; a malformed entry names the variable to fix."""
    pairs: dict[str, float] = {}
    for part in filter(None, (part.strip() for part in text.split(","))):
        name, _, value = part.partition("=")
        try:
            pairs[name.strip().lower()] = float(value)
        except ValueError:
            raise ToolFailure(
                f"{variable} has a malformed entry {part!r}; write host=number, comma-separated."
            ) from None
    return pairs


def _where(url: httpx.URL) -> str:
    return f"{url.host}:{url.port}" if url.port else url.host


@dataclass
class _Answer:
    status: int
    headers: httpx.Headers
    content: bytes


class HttpClient:
    """Timeouts, retries, per-host limits, size cap, SSRF guard and cache around one httpx client."""

    def __init__(self, settings: HttpSettings | None = None):
        self.settings = settings or HttpSettings()
        self.allow = AllowList(self.settings.allow)
        self.user_agent = user_agent(self.settings.contact)
        self._limits = _pairs(self.settings.host_limits, "GAIA_HTTP_HOST_LIMITS")
        self._intervals = _pairs(self.settings.host_intervals, "GAIA_HTTP_HOST_INTERVALS")
        self._limiters: dict[str, anyio.CapacityLimiter] = {}
        self._next_start: dict[str, float] = {}
        timeout = httpx.Timeout(self.settings.read_timeout_s, connect=self.settings.connect_timeout_s)
        bundle = self.settings.ca_bundle
        verify = (
            ssl.create_default_context(cafile=bundle) if bundle else httpx.create_ssl_context(trust_env=False)
        )
        # trust_env=False: an environment proxy would resolve names itself, past the guard.
        self._client = httpx.AsyncClient(
            timeout=timeout,
            transport=guarded_transport(self.allow, verify),
            trust_env=False,
            follow_redirects=False,
        )

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.aclose()

    @cached_property
    def cache(self) -> Cache:
        return open_cache(self.settings.cache_url, self.settings.cache_path)

    @property
    def cache_location(self) -> str:
        """Where the cache lives, as messages show it (a Redis URL without its password)."""
        url = self.settings.cache_url
        return masked_url(httpx.URL(url)) if url else str(self.settings.cache_path)

    async def _in_cache(self, use: Callable[[Cache], T]) -> T:
        """Run `use(cache)` in a worker thread (opening the cache is I/O too); errors name the settings."""
        try:
            return await run_blocking(lambda: use(self.cache))
        except CacheError as exc:
            raise ToolFailure(
                f"The HTTP cache cannot be used ({exc}); check GAIA_HTTP_CACHE_URL, or set GAIA_HTTP_CACHE_MODE=off."
            ) from None
        except (sqlite3.Error, OSError) as exc:
            raise ToolFailure(
                f"The HTTP cache {self.settings.cache_path} cannot be used ({exc}); set GAIA_HTTP_CACHE_PATH "
                f"to a writable file, or GAIA_HTTP_CACHE_MODE=off."
            ) from None

    async def get(self, url: str, **kwargs: Any) -> HttpResponse:
        return await self.request("GET", url, **kwargs)

    async def post(self, url: str, **kwargs: Any) -> HttpResponse:
        return await self.request("POST", url, **kwargs)

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        data: Mapping[str, Any] | None = None,
        content: bytes | None = None,
        cache: bool | None = None,
        check: bool = True,
        max_bytes: int | None = None,
        paid: str | None = None,
    ) -> HttpResponse:
        """Send one request. `cache`: None caches GETs only; `check`: raise HttpFailure on 4xx/5xx;
        `paid`: the paid backend it goes to (gaia_kit.core.usage): refused when the session's budget for
        it is spent and counted when sent; an answer replayed from the cache is free."""
        request = self._build(method.upper(), url, params, headers, json, data, content)
        mode = self._cache_mode(request.method, cache)
        key = _cache_key(request, json) if mode != "off" else ""
        hit = await self._recorded(request, mode, key)
        if hit is not None:
            return self._checked(hit, check)
        if paid is not None:
            check_budget(paid)
            charge(paid)  # sent is spent, whatever the answer
        response = await self._deadline(request, self._follow(request, max_bytes or self.settings.max_bytes))
        if mode == "read-write":
            await self._record(request, key, response, response.content)
        return self._checked(response, check)

    async def download(
        self,
        url: str,
        path: Path,
        *,
        headers: Mapping[str, str] | None = None,
        max_bytes: int | None = None,
        timeout_s: float | None = None,
    ) -> HttpResponse:
        """GET `url` into the file `path` chunk by chunk, so a large body never sits in memory whole.

        The returned response's `content` is empty for a 2xx answer (the body is in the file). Bodies up
        to GAIA_HTTP_CACHE_MAX_FILE_BYTES are recorded and replayed like any GET; larger ones are not.
        A failure may leave part of a body in `path`: write to a temporary file and rename on success.
        """
        request = self._build("GET", url, None, headers, None, None, None)
        mode = self._cache_mode("GET", None)
        key = _cache_key(request, None) if mode != "off" else ""
        hit = await self._recorded(request, mode, key)
        limit = max_bytes or self.settings.max_bytes
        if hit is not None:
            if len(hit.content) > limit:
                raise TooLarge(request.url, limit)
            if hit.status < 300:
                await anyio.Path(path).write_bytes(hit.content)
                hit = HttpResponse(hit.status, hit.headers, b"", hit.url, from_cache=True)
            return self._checked(hit, True)
        async with await anyio.open_file(path, "w+b") as sink:
            response = await self._deadline(request, self._follow(request, limit, sink), timeout_s)
        size = (await anyio.Path(path).stat()).st_size
        if mode == "read-write" and size <= self.settings.cache_max_file_bytes:
            body = await anyio.Path(path).read_bytes() if response.status < 300 else response.content
            await self._record(request, key, response, body)
        return self._checked(response, True)

    async def _recorded(self, request: httpx.Request, mode: CacheMode, key: str) -> HttpResponse | None:
        """The cached answer to `request`, None to fetch it, or in replay mode a miss explained."""
        if mode == "off":
            return None
        ttl = 0 if mode == "replay" else self.settings.cache_ttl_s
        hit = await self._in_cache(lambda cache: cache.get(key, ttl))
        if hit is not None:
            return _from_cache(hit)
        if mode == "replay":
            raise ToolFailure(
                f"No recorded answer for {request.method} {_where(request.url)}{request.url.path} in the "
                f"HTTP cache {self.cache_location}, and GAIA_HTTP_CACHE_MODE=replay answers only "
                f"from the cache; record it first with GAIA_HTTP_CACHE_MODE=read-write."
            )
        return None

    async def _record(self, request: httpx.Request, key: str, response: HttpResponse, body: bytes) -> None:
        if not _storable(response.status):
            return
        entry = CachedResponse(
            request.method, masked_url(request.url), response.status, response.headers,
            body, response.url, time.time(),
        )  # fmt: skip
        await self._in_cache(lambda cache: cache.put(key, entry))

    async def _deadline(
        self, request: httpx.Request, work: Awaitable[HttpResponse], timeout_s: float | None = None
    ) -> HttpResponse:
        """`work` within the call's deadline (the caller's timeout_s, else GAIA_HTTP_TOTAL_TIMEOUT_S)."""
        seconds = timeout_s or self.settings.total_timeout_s
        try:
            with anyio.fail_after(seconds):
                return await work
        except TimeoutError:
            limit = "the timeout asked for" if timeout_s else "GAIA_HTTP_TOTAL_TIMEOUT_S"
            raise ToolFailure(
                f"{_where(request.url)} did not finish answering within {seconds:g} s ({limit}); "
                "try again later, or allow more time."
            ) from None

    def _cache_mode(self, method: str, cache: bool | None) -> CacheMode:
        if self.settings.cache_mode != "off" and not replay_allowed(method):
            if self.settings.cache_mode == "replay":
                tool = current_call().tool
                raise ToolFailure(
                    f"{tool} is not marked idempotent (or sends {method} while changing something), so its "
                    "requests are never recorded or replayed, and GAIA_HTTP_CACHE_MODE=replay lets no request "
                    "reach the network; run it with GAIA_HTTP_CACHE_MODE=read-write or off."
                )
            return "off"
        # Replay answers every call from the cache: nothing may reach the network in an offline rerun.
        if self.settings.cache_mode == "replay":
            return "replay"
        wanted = cache if cache is not None else method == "GET"
        return self.settings.cache_mode if wanted else "off"

    def _build(
        self,
        method: str,
        url: str,
        params: Mapping[str, Any] | None,
        headers: Mapping[str, str] | None,
        json: Any,
        data: Mapping[str, Any] | None,
        content: bytes | None,
    ) -> httpx.Request:
        try:
            target = httpx.URL(url)
        except (httpx.InvalidURL, TypeError) as exc:
            raise ToolFailure(
                f"The URL {url[:200]!r} is not valid ({exc}); pass a full http(s) URL."
            ) from None
        if target.scheme not in ("http", "https") or not target.host:
            raise ToolFailure(
                f"Only http and https URLs with a host can be fetched, not {url[:200]!r}; pass a full URL."
            )
        refuse_mirror(str(target))  # before the cache too: a recorded copy is no more a source
        base = {"User-Agent": self.user_agent, "Accept": "*/*", "Accept-Encoding": "gzip, deflate"}
        merged = httpx.Headers(base)
        merged.update(headers or {})
        return httpx.Request(
            method, target, params=params, headers=merged, json=json, data=data, content=content
        )

    async def _follow(
        self, request: httpx.Request, max_bytes: int, sink: AsyncFile | None = None
    ) -> HttpResponse:
        """Follow redirects here, so that the guard sees every hop."""
        method, url, headers, body = request.method, request.url, request.headers.copy(), request.content
        del headers["host"]  # each hop's request sets its own
        for _ in range(self.settings.max_redirects + 1):
            if url != request.url:
                refuse_mirror(str(url))  # a redirect into a benchmark copy is refused too
            answer = await self._with_retries(method, url, headers, body, max_bytes, sink)
            location = answer.headers.get("location")
            if answer.status not in REDIRECTS or not location:
                kept = {k: v for k, v in answer.headers.items() if k not in DROPPED_HEADERS}
                return HttpResponse(answer.status, kept, answer.content, masked_url(url))
            target = url.join(location)
            if target.scheme not in ("http", "https"):
                raise ToolFailure(
                    f"{_where(url)} redirected to a {target.scheme}: URL, which is not fetched."
                )
            if (target.scheme, target.host, target.port) != (url.scheme, url.host, url.port):
                # Credentials were meant for the first host only.
                for name in [name for name in headers if is_secret_header(name)]:
                    del headers[name]
            if answer.status == 303 or (answer.status in (301, 302) and method == "POST"):
                method, body = "GET", b""
                for name in ("content-type", "content-length"):
                    headers.pop(name, None)
            url = target
        raise ToolFailure(
            f"{_where(request.url)} redirected more than {self.settings.max_redirects} times "
            f"(GAIA_HTTP_MAX_REDIRECTS), probably a redirect loop; check the URL."
        )

    async def _with_retries(
        self, method: str, url: httpx.URL, headers: httpx.Headers, body: bytes, max_bytes: int,
        sink: AsyncFile | None = None,
    ) -> _Answer:  # fmt: skip
        attempts = self.settings.retries + 1
        for attempt in range(1, attempts + 1):
            try:
                answer = await self._send(method, url, headers, body, max_bytes, sink)
            except (
                httpx.ConnectError,
                httpx.ConnectTimeout,
                httpx.ReadError,
                httpx.RemoteProtocolError,
            ) as exc:
                # A request that may have reached the server is repeated only if repeating is harmless.
                sent = not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
                if attempt == attempts or (sent and method not in IDEMPOTENT):
                    raise self._transport_failure(url, exc) from None
                await self._pause(url, attempt, None, type(exc).__name__)
                continue
            except httpx.TimeoutException as exc:
                raise self._transport_failure(url, exc) from None
            if (answer.status == 429 or answer.status >= 500) and attempt < attempts:
                await self._pause(url, attempt, answer.headers, f"HTTP {answer.status}")
                continue
            return answer
        raise AssertionError("unreachable")

    async def _pause(self, url: httpx.URL, attempt: int, headers: httpx.Headers | None, reason: str) -> None:
        """Wait before the next attempt: Retry-After when given, else exponential backoff with jitter."""
        wait = retry_wait(attempt, headers, self.settings.backoff_base_s)
        if wait.asked and wait.seconds > self.settings.max_retry_after_s:
            raise ToolFailure(
                f"{_where(url)} is busy ({reason}) and asked to wait {wait.seconds:.0f} s before retrying, longer "
                f"than GAIA_HTTP_MAX_RETRY_AFTER_S ({self.settings.max_retry_after_s:g} s); try again later."
            )
        logger.warning("%s: %s, retrying in %.2f s (attempt %d)", _where(url), reason, wait.seconds, attempt)
        await anyio.sleep(wait.seconds)

    async def _send(
        self, method: str, url: httpx.URL, headers: httpx.Headers, body: bytes, max_bytes: int,
        sink: AsyncFile | None = None,
    ) -> _Answer:  # fmt: skip
        # Built by hand and sent as is: the client's cookie jar never adds to it. The guard runs when
        # the transport opens a connection; the literal check here refuses before any queueing.
        check_literal(url.host, self.allow)
        request = httpx.Request(method, url, headers=headers, content=body)
        async with self._slot(url.host):
            response = await self._client.send(request, stream=True)
            try:
                # Only a success goes to the file: error, retry and redirect bodies stay in memory.
                into = sink if sink is not None and 200 <= response.status_code < 300 else None
                content = await _read_capped(response, max_bytes, url, into)
            finally:
                await response.aclose()
        return _Answer(response.status_code, response.headers, content)

    @asynccontextmanager
    async def _slot(self, host: str) -> AsyncIterator[None]:
        """Hold one of the host's concurrency slots, after the pause the host asks between requests."""
        key = self._host_key(host)
        limiter = self._limiters.get(key)
        if limiter is None:
            limit = self._limits.get(key, self.settings.per_host_limit)
            limiter = self._limiters[key] = anyio.CapacityLimiter(max(1, int(limit)))
        async with limiter:
            interval = next((v for k, v in self._intervals.items() if host_matches(host, k)), 0.0)
            if interval:
                now = time.monotonic()
                start = max(now, self._next_start.get(key, 0.0))
                self._next_start[key] = start + interval
                await anyio.sleep(start - now)
            yield

    def _host_key(self, host: str) -> str:
        host = host.lower().rstrip(".")
        return next((pattern for pattern in self._limits if host_matches(host, pattern)), host)

    def _transport_failure(self, url: httpx.URL, exc: Exception) -> ToolFailure:
        where = _where(url)
        if isinstance(exc, httpx.ConnectTimeout):
            return ToolFailure(
                f"Could not connect to {where} within {self.settings.connect_timeout_s:g} s "
                f"(GAIA_HTTP_CONNECT_TIMEOUT_S); the site may be down, try again later."
            )
        if isinstance(exc, httpx.TimeoutException):
            return ToolFailure(
                f"{where} stopped answering for more than {self.settings.read_timeout_s:g} s "
                f"(GAIA_HTTP_READ_TIMEOUT_S); try again later or raise that limit."
            )
        if isinstance(exc, httpx.ConnectError):
            return ToolFailure(
                f"Could not connect to {where} ({exc or 'refused'}); check the URL or try later."
            )
        return ToolFailure(f"The connection to {where} failed ({type(exc).__name__}); try again later.")

    def _checked(self, response: HttpResponse, check: bool) -> HttpResponse:
        if not check or response.status < 400:
            return response
        url = httpx.URL(response.url)
        status = response.status
        try:
            phrase = HTTPStatus(status).phrase
        except ValueError:
            phrase = "error"
        where = f"{_where(url)}{url.path}"
        if status in (401, 403):
            hint = "access was refused; check the API key or credentials this tool uses"
        elif status in (404, 410):
            hint = "there is nothing at that address; check the URL"
        elif status == 429:
            hint = f"the site is rate-limiting after {self.settings.retries + 1} attempts; try again later"
        elif status >= 500:
            hint = f"the site failed on all {self.settings.retries + 1} attempts; try again later"
        else:
            hint = "the site refused the request; check the URL and parameters"
        raise HttpFailure(f"{where} answered HTTP {status} ({phrase}): {hint}.", status)


def _storable(status: int) -> bool:
    """Answers worth replaying: not a server failure, rate limit or a refusal that depends on keys."""
    return status < 400 or (status < 500 and status not in (401, 403, 407, 408, 429))


def _cache_key(request: httpx.Request, json: Any) -> str:
    body, secrets = request.content, []
    if isinstance(json, dict):  # some APIs take their key in the JSON body: it enters the key as a digest
        kept = {k: v for k, v in json.items() if k.lower() not in SECRET_PARAMS}
        secrets = [(k, jsonlib.dumps(v)) for k, v in json.items() if k.lower() in SECRET_PARAMS]
        body = jsonlib.dumps(kept, sort_keys=True).encode()
    return request_key(request.method, request.url, request.headers, body, secrets)


def _from_cache(entry: CachedResponse) -> HttpResponse:
    return HttpResponse(entry.status, entry.headers, entry.content, entry.final_url, from_cache=True)


async def _read_capped(
    response: httpx.Response, max_bytes: int, url: httpx.URL, sink: AsyncFile | None = None
) -> bytes:
    """The decoded body, aborted as soon as it passes the cap (a gzip bomb stops there too).

    With a sink the body is written there instead (from its start: a retried attempt overwrites).
    """

    def too_large() -> TooLarge:
        return TooLarge(url, max_bytes)

    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes and response.status_code not in REDIRECTS:
        raise too_large()
    chunks, size = [], 0
    if sink is not None:
        await sink.seek(0)
        await sink.truncate()
    # A download reports its progress in bytes (every MiB or 1 %, whichever is larger).
    total = int(declared) if declared.isdigit() else None
    step, reported = max(PROGRESS_STEP_BYTES, (total or 0) // 100), 0
    call = current_call()
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > max_bytes:
            raise too_large()
        if sink is not None:
            await sink.write(chunk)
            if size - reported >= step:
                reported = size
                call.progress(size, total, "bytes downloaded")
        else:
            chunks.append(chunk)
    return b"".join(chunks)


_shared: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, HttpClient] = weakref.WeakKeyDictionary()


def forget_shared_http() -> None:
    """Drop the per-loop clients, so the next shared_http() reads GAIA_HTTP_* again (tests switch modes)."""
    _shared.clear()


def shared_http() -> HttpClient:
    """This process's client for the running event loop (connections and per-host limits are shared)."""
    loop = asyncio.get_running_loop()
    client = _shared.get(loop)
    if client is None:
        client = _shared[loop] = HttpClient()
    return client
