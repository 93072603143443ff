"""gaia_kit.web.http against a loopback fake: retries, timeouts, size cap, SSRF guard, per-host limit, cache."""

from __future__ import annotations

import datetime
import email.utils
import ipaddress
import logging
import socket
import threading
import time
from collections import defaultdict, deque
from pathlib import Path

import anyio
import gaia_kit.web.ssrf
import httpx
import pytest
import uvicorn
from gaia_kit import ToolFailure
from gaia_kit.core.calls import Call, enter, leave
from gaia_kit.core.hints import hints
from gaia_kit.core.retry import retry_after_s, retry_wait
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.errors import HttpFailure
from gaia_kit.web.http import HttpClient, shared_http
from gaia_kit.web.ssrf import AllowList, check_literal, literal_ip, resolve_checked
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

pytestmark = pytest.mark.anyio

SECRET = "sk-live-very-secret-42"


class FakeSite:
    """A scripted site on 127.0.0.1: each path answers from its script (the last answer repeats)."""

    def __init__(self, tls: tuple[Path, Path] | None = None) -> None:
        self.scripts: dict[str, deque[tuple[int, dict[str, str], bytes, float]]] = {}
        self.hits: defaultdict[str, int] = defaultdict(int)
        self.headers: list[dict[str, str]] = []
        self.active = self.peak = 0
        self._lock = threading.Lock()
        app = Starlette(
            routes=[
                Route("/huge", self._huge),
                Route("/echo", self._echo, methods=["GET", "POST"]),
                Route("/{path:path}", self._scripted, methods=["GET", "POST"]),
            ]
        )
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.base = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        cert, key = tls or (None, None)
        config = uvicorn.Config(app, log_level="warning", lifespan="off", ssl_certfile=cert, ssl_keyfile=key)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    def script(self, path: str, *answers: tuple) -> None:
        """answers: (status, headers, body, delay_s), trailing items optional."""
        full = [(a + (200, {}, b"", 0.0)[len(a) :]) if len(a) < 4 else a for a in answers]
        self.scripts["/" + path.lstrip("/")] = deque(full)

    async def _scripted(self, request: Request) -> Response:
        path = request.url.path
        with self._lock:
            self.hits[path] += 1
            self.active += 1
            self.peak = max(self.peak, self.active)
            script = self.scripts.get(path, deque([(404, {}, b"not here", 0.0)]))
            status, headers, body, delay = script.popleft() if len(script) > 1 else script[0]
        try:
            await anyio.sleep(delay)
            return Response(body, status_code=status, headers=headers)
        finally:
            with self._lock:
                self.active -= 1

    async def _echo(self, request: Request) -> Response:
        self.headers.append(dict(request.headers))
        return JSONResponse({"headers": dict(request.headers), "query": str(request.url.query)})

    async def _huge(self, request: Request) -> Response:
        async def chunks():
            for _ in range(1000):
                yield b"x" * 65536

        return StreamingResponse(chunks())

    def __enter__(self) -> FakeSite:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline, "the fake site did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.should_exit = True
        self._thread.join(5)


@pytest.fixture
def site():
    with FakeSite() as fake:
        yield fake


def settings(tmp_path: Path, **overrides) -> HttpSettings:
    values = {
        "allow": "127.0.0.1",
        "backoff_base_s": 0.01,
        "cache_mode": "off",
        "cache_path": tmp_path / "http.sqlite",
        **overrides,
    }
    return HttpSettings(**values)


async def test_get_returns_status_headers_body_and_sends_a_user_agent(site, tmp_path):
    site.script("hello", (200, {"content-type": "text/plain; charset=utf-8"}, "héllo".encode()))
    async with HttpClient(settings(tmp_path, contact="https://example.org/contact")) as http:
        response = await http.get(f"{site.base}/hello")
        echoed = (await http.get(f"{site.base}/echo", params={"b": "2", "a": "1"})).json()
    assert (response.status, response.text(), response.from_cache) == (200, "héllo", False)
    assert response.url == f"{site.base}/hello"
    assert echoed["headers"]["user-agent"].startswith("gaia-env/")
    assert "+https://example.org/contact" in echoed["headers"]["user-agent"]
    assert echoed["headers"]["host"] == f"127.0.0.1:{site.port}"


async def test_429_with_retry_after_is_retried_and_the_log_keeps_no_secret(site, tmp_path, caplog):
    site.script("busy", (429, {"Retry-After": "0"}, b"slow down"), (200, {}, b"done"))
    caplog.set_level(logging.DEBUG)
    async with HttpClient(settings(tmp_path)) as http:
        assert (await http.get(f"{site.base}/busy", params={"key": SECRET})).content == b"done"
    assert site.hits["/busy"] == 2
    assert "HTTP 429, retrying" in caplog.text and SECRET not in caplog.text


async def test_a_retry_after_beyond_the_bound_fails_at_once(site, tmp_path):
    site.script("later", (429, {"Retry-After": "3600"}, b""))
    async with HttpClient(settings(tmp_path)) as http:
        with pytest.raises(ToolFailure, match="asked to wait 3600 s.*GAIA_HTTP_MAX_RETRY_AFTER_S"):
            await http.get(f"{site.base}/later")
    assert site.hits["/later"] == 1


def test_retry_after_reads_seconds_and_http_dates():
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    past = email.utils.formatdate(time.time() - 30, usegmt=True)
    assert retry_after_s(httpx.Headers({"Retry-After": "7"})) == 7
    assert 25 < retry_after_s(httpx.Headers({"Retry-After": soon})) <= 30
    assert retry_after_s(httpx.Headers({"Retry-After": past})) == 0
    assert retry_after_s(httpx.Headers({"Retry-After": "soon"})) is None
    assert retry_after_s(httpx.Headers()) is None


def test_a_wait_is_the_servers_retry_after_else_capped_backoff_with_jitter():
    assert retry_wait(3, httpx.Headers({"Retry-After": "7"}), base_s=0.5) == retry_wait(
        1, {"retry-after": "7"}, 9
    )
    assert retry_wait(1, {"retry-after": "7"}, base_s=0.5).asked
    waits = [retry_wait(attempt, None, base_s=1.0, cap_s=3.0) for attempt in (1, 2, 3, 4)]
    assert not any(wait.asked for wait in waits)
    assert 0.5 <= waits[0].seconds <= 1.0 and 1.0 <= waits[1].seconds <= 2.0
    assert all(1.5 <= wait.seconds <= 3.0 for wait in waits[2:])  # 4 and 8 s capped at 3, then jitter


async def test_503_then_200_succeeds_and_persistent_5xx_fails_with_the_status(site, tmp_path):
    site.script("flaky", (503,), (200, {}, b"ok"))
    site.script("down", (502,))
    async with HttpClient(settings(tmp_path, retries=2)) as http:
        assert (await http.get(f"{site.base}/flaky")).content == b"ok"
        with pytest.raises(HttpFailure, match=r"answered HTTP 502 \(Bad Gateway\).*3 attempts") as info:
            await http.get(f"{site.base}/down")
    assert info.value.status == 502 and site.hits["/down"] == 3


async def test_4xx_names_the_status_and_no_secret(site, tmp_path):
    site.script("private", (401, {}, f"bad key {SECRET}".encode()))
    async with HttpClient(settings(tmp_path)) as http:
        with pytest.raises(HttpFailure) as info:
            await http.get(f"{site.base}/private", params={"key": SECRET}, headers={"X-Api-Key": SECRET})
        unchecked = await http.get(f"{site.base}/nothing", check=False)
    assert "HTTP 401" in str(info.value) and "API key" in str(info.value)
    assert SECRET not in str(info.value)
    assert site.hits["/private"] == 1  # a 4xx is not retried
    assert unchecked.status == 404


async def test_a_slow_answer_times_out_naming_host_and_limit(site, tmp_path):
    site.script("slow", (200, {}, b"late", 0.8))
    async with HttpClient(settings(tmp_path, read_timeout_s=0.2)) as http:
        with pytest.raises(
            ToolFailure, match=rf"127\.0\.0\.1:{site.port} .*0\.2 s.*GAIA_HTTP_READ_TIMEOUT_S"
        ):
            await http.get(f"{site.base}/slow")


async def test_the_total_deadline_bounds_retries(site, tmp_path):
    site.script("stuck", (503, {"Retry-After": "1"}, b""))
    async with HttpClient(settings(tmp_path, total_timeout_s=0.3, retries=5)) as http:
        with pytest.raises(ToolFailure, match="within 0.3 s.*GAIA_HTTP_TOTAL_TIMEOUT_S"):
            await http.get(f"{site.base}/stuck")


async def test_bodies_past_the_cap_are_aborted(site, tmp_path):
    site.script("declared", (200, {}, b"y" * 5000))
    async with HttpClient(settings(tmp_path, max_bytes=1000)) as http:
        with pytest.raises(ToolFailure, match="larger than 1,000 bytes.*GAIA_HTTP_MAX_BYTES"):
            await http.get(f"{site.base}/huge")  # streamed, no length: stopped while reading
        with pytest.raises(ToolFailure, match="larger than 1,000 bytes"):
            await http.get(f"{site.base}/declared")
        assert len((await http.get(f"{site.base}/declared", max_bytes=10_000)).content) == 5000


async def test_redirects_are_followed_and_each_hop_is_guarded(site, tmp_path):
    site.script("moved", (302, {"Location": "/target"}))
    site.script("target", (200, {}, b"arrived"))
    site.script("to-private", (302, {"Location": "http://10.0.0.7/admin"}))
    site.script("to-metadata", (301, {"Location": "http://169.254.169.254/latest/meta-data/"}))
    site.script(
        "to-metadata-name", (307, {"Location": "http://metadata.google.internal/computeMetadata/v1/"})
    )
    site.script("loop", (302, {"Location": "/loop"}))
    site.script("to-file", (302, {"Location": "file:///etc/passwd"}))
    async with HttpClient(settings(tmp_path, max_redirects=3)) as http:
        moved = await http.get(f"{site.base}/moved")
        assert (moved.content, moved.url) == (b"arrived", f"{site.base}/target")
        with pytest.raises(ToolFailure, match=r"10\.0\.0\.7.*private address.*GAIA_HTTP_ALLOW"):
            await http.get(f"{site.base}/to-private")
        with pytest.raises(ToolFailure, match="cloud metadata address"):
            await http.get(f"{site.base}/to-metadata")
        with pytest.raises(ToolFailure, match="cloud metadata host"):
            await http.get(f"{site.base}/to-metadata-name")
        with pytest.raises(ToolFailure, match="redirected more than 3 times"):
            await http.get(f"{site.base}/loop")
        with pytest.raises(ToolFailure, match="file: URL"):
            await http.get(f"{site.base}/to-file")
    assert site.hits["/loop"] == 4


async def test_credentials_do_not_follow_a_redirect_to_another_host(site, tmp_path):
    site.script("away", (302, {"Location": f"http://localhost:{site.port}/echo"}))
    async with HttpClient(settings(tmp_path, allow="127.0.0.1,localhost")) as http:
        await http.get(
            f"{site.base}/away", headers={"Authorization": f"Bearer {SECRET}", "X-Api-Key": SECRET}
        )
    seen = site.headers[-1]
    assert "authorization" not in seen and "x-api-key" not in seen
    assert seen["host"] == f"localhost:{site.port}"


async def test_the_fake_itself_is_refused_without_the_allow_list(site, tmp_path):
    async with HttpClient(settings(tmp_path, allow="")) as http:
        with pytest.raises(ToolFailure, match="loopback address.*GAIA_HTTP_ALLOW"):
            await http.get(f"{site.base}/hello")
        with pytest.raises(ToolFailure, match="loopback"):
            await http.get(f"http://localhost:{site.port}/hello")
        for url in ("ftp://example.org/x", "file:///etc/passwd", "http:///nohost", "not a url"):
            with pytest.raises(ToolFailure, match="http"):
                await http.get(url)
    assert not site.hits


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1", "2130706433", "0177.0.0.1", "0x7f.1", "127.1", "::ffff:127.0.0.1", "[::1]", "::1",
     "0.0.0.0", "::", "10.1.2.3", "192.168.0.1", "172.16.5.4", "169.254.169.254", "fd00:ec2::254",
     "fe80::1", "224.0.0.1", "ff02::1", "240.0.0.1", "100.64.0.1", "64:ff9b::a00:1", "2002:7f00:1::",
     "metadata.google.internal", "METADATA.google.internal."],
)  # fmt: skip
def test_the_guard_refuses_literal_non_public_hosts(host):
    with pytest.raises(ToolFailure, match="GAIA_HTTP_ALLOW"):
        check_literal(host, AllowList(""))


@pytest.mark.parametrize(
    "host", ["8.8.8.8", "2001:4860:4860::8888", "::ffff:8.8.8.8", "example.org", "1e100.net"]
)
def test_the_guard_lets_public_literals_through(host):
    check_literal(host, AllowList(""))


def test_legacy_ipv4_forms_are_read_as_the_resolver_reads_them():
    assert {str(literal_ip(h)) for h in ("2130706433", "0177.0.0.1", "0x7f.1", "127.1")} == {"127.0.0.1"}
    assert literal_ip("example.org") is None


def test_the_allow_list_takes_hosts_addresses_and_networks():
    allow = AllowList("127.0.0.1, 10.0.0.0/8, *.corp.example, [::1]")
    check_literal("127.0.0.1", allow)
    check_literal("10.9.8.7", allow)
    check_literal("::ffff:10.0.0.1", allow)  # the IPv4 it reaches is allowed
    check_literal("::1", allow)
    check_literal("wiki.corp.example", allow)
    for host in ("127.0.0.2", "192.168.1.1", "169.254.169.254"):
        with pytest.raises(ToolFailure):
            check_literal(host, allow)


async def test_an_unknown_name_is_explained(monkeypatch):
    async def nxdomain(host: str, port: int):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(gaia_kit.web.ssrf, "_resolve", nxdomain)  # no query leaves the machine
    with pytest.raises(ToolFailure, match="Cannot resolve the host no-such-host.example"):
        await resolve_checked("no-such-host.example", 80, AllowList(""))


async def test_names_are_checked_after_resolution():
    with pytest.raises(ToolFailure, match="resolving to 127.0.0.1, a loopback address"):
        await resolve_checked("localhost", 80, AllowList(""))
    assert {str(ip) for ip in await resolve_checked("localhost", 80, AllowList("localhost"))} <= {
        "127.0.0.1",
        "::1",
    }
    assert await resolve_checked("localhost", 80, AllowList("127.0.0.0/8,::1"))


async def test_the_name_is_resolved_once_and_the_checked_address_is_connected(site, tmp_path, monkeypatch):
    answers = [["127.0.0.1"], ["10.0.0.1"]]  # a rebinding resolver: harmless first, private next
    calls = []

    async def rebinding(host: str, port: int):
        calls.append(host)
        return [ipaddress.ip_address(a) for a in answers[min(len(calls), 2) - 1]]

    monkeypatch.setattr(gaia_kit.web.ssrf, "_resolve", rebinding)
    url = f"http://rebind.test:{site.port}/echo"  # .test never resolves: only our resolver answers
    async with HttpClient(settings(tmp_path)) as http:
        assert (await http.get(url)).json()["headers"]["host"] == f"rebind.test:{site.port}"
    assert calls == ["rebind.test"]
    async with HttpClient(settings(tmp_path)) as http:
        with pytest.raises(ToolFailure, match=r"rebind\.test.*resolving to 10\.0\.0\.1, a private address"):
            await http.get(url)
    answers[1] = ["93.184.215.14", "127.0.0.2"]  # one bad address among good ones is enough to refuse
    async with HttpClient(settings(tmp_path)) as http:
        with pytest.raises(ToolFailure, match="127.0.0.2, a loopback address"):
            await http.get(url)


async def test_the_per_host_limit_bounds_concurrency(site, tmp_path):
    site.script("work", (200, {}, b"done", 0.1))
    async with HttpClient(settings(tmp_path, host_limits="127.0.0.1=2")) as http:
        async with anyio.create_task_group() as group:
            for _ in range(6):
                group.start_soon(http.get, f"{site.base}/work")
    assert site.hits["/work"] == 6 and site.peak == 2
    site.peak = 0
    async with HttpClient(settings(tmp_path, per_host_limit=5, host_limits="")) as http:
        async with anyio.create_task_group() as group:
            for _ in range(5):
                group.start_soon(http.get, f"{site.base}/work")
    assert site.peak == 5


def test_malformed_host_settings_name_the_variable(tmp_path):
    with pytest.raises(ToolFailure, match="GAIA_HTTP_HOST_LIMITS has a malformed entry 'example.org'"):
        HttpClient(settings(tmp_path, host_limits="example.org"))


async def test_a_host_interval_spaces_request_starts(site, tmp_path):
    site.script("paced", (200, {}, b"ok"))
    async with HttpClient(settings(tmp_path, host_intervals="127.0.0.1=0.15")) as http:
        started = time.monotonic()
        for _ in range(3):
            await http.get(f"{site.base}/paced")
    assert time.monotonic() - started >= 0.3


async def test_connection_errors_are_retried_then_explained(tmp_path):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        async with HttpClient(settings(tmp_path, retries=1)) as http:
            with pytest.raises(ToolFailure, match=rf"Could not connect to 127\.0\.0\.1:{port}"):
                await http.get(f"http://127.0.0.1:{port}/")


def _certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a certificate it signs for the name `localhost` only: (ca, cert, key)."""
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    def issue(subject, issuer, public, signer, ca: bool, names=()):
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(public)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(list(names)), critical=False)
        return builder.sign(signer, hashes.SHA256())

    def name(text: str):
        return x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, text)])

    ca_key, leaf_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = issue(name("test CA"), name("test CA"), ca_key.public_key(), ca_key, ca=True)
    leaf = issue(
        name("localhost"), ca.subject, leaf_key.public_key(), ca_key, False, [x509.DNSName("localhost")]
    )
    paths = folder / "ca.pem", folder / "cert.pem", folder / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        leaf_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return paths


async def test_https_connects_to_the_checked_address_and_verifies_the_name(tmp_path):
    ca, cert, key = _certificates(tmp_path)
    with FakeSite(tls=(cert, key)) as tls_site:
        async with HttpClient(settings(tmp_path, allow="localhost,127.0.0.1", ca_bundle=ca)) as http:
            echoed = (await http.get(f"https://localhost:{tls_site.port}/echo")).json()
            assert echoed["headers"]["host"] == f"localhost:{tls_site.port}"
            # The certificate names localhost, not the address: verification is against the name.
            with pytest.raises(ToolFailure, match="Could not connect.*CERTIFICATE_VERIFY_FAILED"):
                await http.get(f"https://127.0.0.1:{tls_site.port}/echo")


# ---- the cache, through the client --------------------------------------------------------------


async def test_read_write_records_and_replay_answers_byte_identical_offline(site, tmp_path):
    body = bytes(range(256)) * 10
    site.script("search", (200, {"content-type": "application/octet-stream"}, body))
    url = f"{site.base}/search"
    async with HttpClient(settings(tmp_path, cache_mode="read-write")) as http:
        first = await http.get(url, params={"q": "gaia", "key": SECRET})
        again = await http.get(url, params={"key": SECRET, "q": "gaia"})  # the query's order does not count
    assert (first.from_cache, again.from_cache, site.hits["/search"]) == (False, True, 1)
    assert again.content == first.content == body
    site.__exit__()  # offline from here on
    async with HttpClient(settings(tmp_path, cache_mode="replay", cache_ttl_s=1e-9)) as http:
        replayed = await http.get(url, params={"q": "gaia", "key": SECRET})
        assert (replayed.content, replayed.status, replayed.from_cache) == (body, 200, True)
        assert replayed.headers == first.headers and replayed.url == first.url
        for other in ({"q": "other", "key": SECRET}, {"q": "gaia", "key": "another-key"}, {"q": "gaia"}):
            with pytest.raises(ToolFailure, match="GAIA_HTTP_CACHE_MODE=replay answers only from the cache"):
                await http.get(url, params=other)


@pytest.fixture
def in_search_tool():
    """Inside a read-only, idempotent tool's call, whose POSTs (a search API's) may be replayed."""
    token = enter(Call("search", hints("Search", read_only=True, open_world=True)))
    yield
    leave(token)


async def test_off_mode_and_posts_do_not_touch_the_cache(site, tmp_path, in_search_tool):
    site.script("q", (200, {}, b"answer"))
    async with HttpClient(settings(tmp_path, cache_mode="off")) as http:
        await http.get(f"{site.base}/q")
        await http.get(f"{site.base}/q")
    assert site.hits["/q"] == 2 and not (tmp_path / "http.sqlite").exists()
    async with HttpClient(settings(tmp_path, cache_mode="read-write")) as http:
        await http.post(f"{site.base}/q", json={"q": 1})
        await http.post(f"{site.base}/q", json={"q": 1})
        assert (await http.post(f"{site.base}/q", json={"q": 1}, cache=True)).from_cache is False
        assert (await http.post(f"{site.base}/q", json={"q": 1}, cache=True)).from_cache is True
        assert (await http.get(f"{site.base}/q", cache=False)).from_cache is False
    assert site.hits["/q"] == 6


async def test_an_unusable_cache_file_is_explained(site, tmp_path):
    site.script("q", (200, {}, b"answer"))
    (tmp_path / "not-a-folder").write_text("")
    broken = settings(tmp_path, cache_mode="read-write", cache_path=tmp_path / "not-a-folder" / "c.sqlite")
    async with HttpClient(broken) as http:
        with pytest.raises(ToolFailure, match="HTTP cache .* cannot be used.*GAIA_HTTP_CACHE_PATH"):
            await http.get(f"{site.base}/q")


async def test_ttl_expiry_fetches_again(site, tmp_path):
    site.script("news", (200, {}, b"old"), (200, {}, b"new"))
    async with HttpClient(settings(tmp_path, cache_mode="read-write", cache_ttl_s=60)) as http:
        assert (await http.get(f"{site.base}/news")).content == b"old"
        assert (await http.get(f"{site.base}/news")).from_cache
        _age_every_entry(tmp_path / "http.sqlite", seconds=120)
        fresh = await http.get(f"{site.base}/news")
    assert (fresh.content, fresh.from_cache, site.hits["/news"]) == (b"new", False, 2)


async def test_errors_replay_like_answers_but_failures_are_not_recorded(site, tmp_path):
    site.script("gone", (404, {}, b"no"))
    site.script("down", (503,))
    async with HttpClient(settings(tmp_path, cache_mode="read-write", retries=0)) as http:
        for _ in range(2):
            with pytest.raises(HttpFailure, match="HTTP 404"):
                await http.get(f"{site.base}/gone")
            with pytest.raises(HttpFailure, match="HTTP 503"):
                await http.get(f"{site.base}/down")
    assert (site.hits["/gone"], site.hits["/down"]) == (1, 2)


async def test_no_secret_reaches_the_cache_file(site, tmp_path):
    site.script("api", (200, {"set-cookie": f"session={SECRET}"}, b"result"))
    async with HttpClient(settings(tmp_path, cache_mode="read-write")) as http:
        await http.get(
            f"{site.base}/api",
            params={"q": "x", "api_key": SECRET},
            headers={"Authorization": f"Bearer {SECRET}", "X-Api-Key": SECRET, "Cookie": f"c={SECRET}"},
        )
        export = tmp_path / "export.jsonl"
        http.cache.export(export)
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("http.sqlite*"))
    assert b"result" in stored and SECRET.encode() not in stored
    assert SECRET not in export.read_text() and "api_key=%2A%2A%2A" in export.read_text()


async def test_a_key_in_a_json_body_keys_the_cache_by_its_digest(site, tmp_path, in_search_tool):
    site.script("search", (200, {}, b"hits"))
    async with HttpClient(settings(tmp_path, cache_mode="read-write")) as http:
        first = await http.post(f"{site.base}/search", json={"query": "x", "api_key": SECRET}, cache=True)
        again = await http.post(f"{site.base}/search", json={"api_key": SECRET, "query": "x"}, cache=True)
        other_key = await http.post(
            f"{site.base}/search", json={"api_key": "other", "query": "x"}, cache=True
        )
        other = await http.post(f"{site.base}/search", json={"query": "y", "api_key": SECRET}, cache=True)
    assert [r.from_cache for r in (first, again, other_key, other)] == [False, True, False, False]
    assert SECRET.encode() not in b"".join(p.read_bytes() for p in tmp_path.glob("http.sqlite*"))


CREDENTIALS = {
    "query token": lambda secret: {"params": {"q": "private", "token": secret}},
    "authorization": lambda secret: {"headers": {"Authorization": f"Bearer {secret}"}},
    "cookie": lambda secret: {"headers": {"Cookie": f"session={secret}"}},
}


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
async def test_a_page_fetched_with_one_credential_is_never_served_to_another(
    site, tmp_path, request, backend
):
    store = {"cache_url": request.getfixturevalue("redis_url")} if backend == "redis" else {}
    for way, carry in CREDENTIALS.items():
        url = f"{site.base}/echo?way={way.replace(' ', '-')}"
        async with HttpClient(settings(tmp_path, cache_mode="read-write", **store)) as http:
            first_a = await http.get(url, **carry("token-AAA"))
            first_b = await http.get(url, **carry("token-BBB"))
        async with HttpClient(settings(tmp_path, cache_mode="read-write", **store)) as http:  # a restart
            again_b = await http.get(url, **carry("token-BBB"))
            again_a = await http.get(url, **carry("token-AAA"))
        assert [r.from_cache for r in (first_a, first_b, again_b, again_a)] == [False, False, True, True], way
        assert b"token-AAA" in first_a.content and b"token-AAA" in again_a.content, way
        assert b"token-BBB" in first_b.content and b"token-BBB" in again_b.content, way
        assert b"token-AAA" not in first_b.content + again_b.content, way
    assert len(site.headers) == 2 * len(CREDENTIALS)  # each credential reached the site once


def _age_every_entry(path: Path, seconds: float) -> None:
    import sqlite3

    with sqlite3.connect(path) as db:
        db.execute("UPDATE responses SET created = created - ?", (seconds,))


async def test_shared_http_is_one_client_per_event_loop():
    assert shared_http() is shared_http()
    await shared_http().aclose()


async def test_a_redis_cache_records_and_replays_like_the_file(site, tmp_path, redis_url):
    site.script("search", (200, {"content-type": "application/json"}, b'{"hits": 3}'))
    shared = {"cache_url": redis_url, "cache_path": tmp_path / "never-used.sqlite"}
    async with HttpClient(settings(tmp_path, cache_mode="read-write", **shared)) as http:
        first = await http.get(f"{site.base}/search", params={"q": "x"})
    # Another client (another replica, another machine) replays it from Redis.
    async with HttpClient(settings(tmp_path, cache_mode="replay", **shared)) as http:
        replayed = await http.get(f"{site.base}/search", params={"q": "x"})
        with pytest.raises(ToolFailure, match=r"HTTP cache redis://127\.0\.0\.1:\d+/0, and .*replay"):
            await http.get(f"{site.base}/search", params={"q": "never recorded"})
    assert (first.from_cache, replayed.from_cache, replayed.content) == (False, True, b'{"hits": 3}')
    assert site.hits["/search"] == 1 and not (tmp_path / "never-used.sqlite").exists()


async def test_an_unreachable_redis_cache_is_explained(site, tmp_path):
    site.script("q", (200, {}, b"answer"))
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"redis://:s3cret@127.0.0.1:{probe.getsockname()[1]}/0"
    async with HttpClient(settings(tmp_path, cache_mode="read-write", cache_url=dead)) as http:
        with pytest.raises(ToolFailure, match="HTTP cache cannot be used.*GAIA_HTTP_CACHE_URL") as raised:
            await http.get(f"{site.base}/q")
    assert "s3cret" not in str(raised.value) and site.hits["/q"] == 0
