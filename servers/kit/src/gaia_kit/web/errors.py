"""What a failed request says: one sentence naming the host, the cause and the setting to change."""

from __future__ import annotations

from http import HTTPStatus

import httpx

from gaia_kit.core.errors import ToolFailure
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.response import HttpResponse


def where(url: httpx.URL) -> str:
    return f"{url.host}:{url.port}" if url.port else url.host


class HttpFailure(ToolFailure):
    """An HTTP error answer (4xx, or 5xx after the retries), with its status for callers that care."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class TooLarge(ToolFailure):
    """An answer past the byte cap; callers with their own cap setting catch it to name that setting."""

    def __init__(self, url: httpx.URL, max_bytes: int):
        super().__init__(
            f"The answer from {where(url)} is larger than {max_bytes:,} bytes, the cap "
            f"(GAIA_HTTP_MAX_BYTES); fetch a smaller resource or raise the cap."
        )
        self.max_bytes = max_bytes


def connection_failure(url: httpx.URL, exc: Exception, settings: HttpSettings) -> ToolFailure:
    """A transport error (no answer at all) explained."""
    host = where(url)
    if isinstance(exc, httpx.ConnectTimeout):
        return ToolFailure(
            f"Could not connect to {host} within {settings.connect_timeout_s:g} s "
            f"(GAIA_HTTP_CONNECT_TIMEOUT_S); the site may be down, try again later."
        )
    if isinstance(exc, httpx.TimeoutException):
        return ToolFailure(
            f"{host} stopped answering for more than {settings.read_timeout_s:g} s "
            f"(GAIA_HTTP_READ_TIMEOUT_S); try again later or raise that limit."
        )
    if isinstance(exc, httpx.ConnectError):
        return ToolFailure(f"Could not connect to {host} ({exc or 'refused'}); check the URL or try later.")
    return ToolFailure(f"The connection to {host} failed ({type(exc).__name__}); try again later.")


def checked(response: HttpResponse, attempts: int) -> HttpResponse:
    """`response` if it is not an HTTP error, else HttpFailure with a hint for its status."""
    if response.status < 400:
        return response
    url = httpx.URL(response.url)
    status = response.status
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "error"
    if status in (401, 403):
        hint = "access was refused; check the API key or credentials this tool uses"
    elif status in (404, 410):
        hint = "there is nothing at that address; check the URL"
    elif status == 429:
        hint = f"the site is rate-limiting after {attempts} attempts; try again later"
    elif status >= 500:
        hint = f"the site failed on all {attempts} attempts; try again later"
    else:
        hint = "the site refused the request; check the URL and parameters"
    raise HttpFailure(f"{where(url)}{url.path} answered HTTP {status} ({phrase}): {hint}.", status)
