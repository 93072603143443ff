"""What a request answers: the caller's HttpResponse, and the raw answer of one attempt."""

from __future__ import annotations

import json as jsonlib
from dataclasses import dataclass
from typing import Any

import charset_normalizer
import httpx

from gaia_kit.core.errors import ToolFailure

# Headers dropped from what callers see and what is stored: the body is already decoded, and
# cookies are per-client state that must not travel through a shared cache.
DROPPED_HEADERS = {"content-encoding", "content-length", "transfer-encoding", "set-cookie", "connection"}


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


@dataclass
class Answer:
    """One attempt's answer as the server sent it, before redirects are followed."""

    status: int
    headers: httpx.Headers
    content: bytes

    def visible_headers(self) -> dict[str, str]:
        return {name: value for name, value in self.headers.items() if name not in DROPPED_HEADERS}
