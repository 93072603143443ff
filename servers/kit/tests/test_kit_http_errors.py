"""gaia_kit.web.errors: each failure in one sentence that names the host, the cause and the setting."""

from __future__ import annotations

import httpx
import pytest
from gaia_kit import ToolFailure
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.errors import HttpFailure, TooLarge, checked, connection_failure, where
from gaia_kit.web.response import HttpResponse

URL = httpx.URL("https://api.example.org:8443/v1/items")


def answered(status: int) -> HttpResponse:
    return HttpResponse(status, {}, b"", str(URL))


def test_where_names_the_host_and_a_port_when_there_is_one():
    assert (where(URL), where(httpx.URL("https://example.org/x"))) == ("api.example.org:8443", "example.org")


def test_a_success_or_redirect_passes_unchanged():
    ok, moved = answered(200), answered(304)
    assert checked(ok, 4) is ok and checked(moved, 4) is moved


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (401, "check the API key"),
        (404, "nothing at that address"),
        (429, "rate-limiting after 4 attempts"),
        (503, "failed on all 4 attempts"),
        (422, "check the URL and parameters"),
    ],
)
def test_an_error_status_is_an_http_failure_with_a_hint(status, hint):
    with pytest.raises(HttpFailure, match=hint) as raised:
        checked(answered(status), 4)
    assert raised.value.status == status
    assert f"api.example.org:8443/v1/items answered HTTP {status}" in str(raised.value)


def test_too_large_names_the_cap_and_its_variable():
    failure = TooLarge(URL, 1024)
    assert failure.max_bytes == 1024
    assert "larger than 1,024 bytes" in str(failure) and "GAIA_HTTP_MAX_BYTES" in str(failure)


@pytest.mark.parametrize(
    ("exc", "names"),
    [
        (httpx.ConnectTimeout("slow"), "within 2 s (GAIA_HTTP_CONNECT_TIMEOUT_S)"),
        (httpx.ReadTimeout("silent"), "more than 7 s (GAIA_HTTP_READ_TIMEOUT_S)"),
        (httpx.ConnectError("refused"), "Could not connect to api.example.org:8443 (refused)"),
        (httpx.RemoteProtocolError("cut"), "failed (RemoteProtocolError)"),
    ],
)
def test_a_connection_failure_says_what_happened(exc, names):
    failure = connection_failure(URL, exc, HttpSettings(connect_timeout_s=2, read_timeout_s=7))
    assert type(failure) is ToolFailure and names in str(failure)
