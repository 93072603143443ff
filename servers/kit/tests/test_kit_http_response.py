"""gaia_kit.web.response: decoding the body, and the headers a caller sees."""

from __future__ import annotations

import httpx
import pytest
from gaia_kit import ToolFailure
from gaia_kit.web.response import Answer, HttpResponse


def response(content: bytes, content_type: str = "") -> HttpResponse:
    headers = {"content-type": content_type} if content_type else {}
    return HttpResponse(200, headers, content, "https://example.org/page")


def test_text_uses_the_declared_charset():
    assert response("café".encode("latin-1"), "text/plain; charset=ISO-8859-1").text() == "café"


def test_text_detects_the_encoding_when_the_charset_is_unknown_or_absent():
    assert response("naïve résumé".encode(), 'text/html; charset="no-such"').text() == "naïve résumé"
    assert response(b"plain ascii").text() == "plain ascii"


def test_json_parses_and_a_non_json_body_names_the_host():
    assert response(b'{"a": [1]}').json() == {"a": [1]}
    with pytest.raises(ToolFailure, match="example.org answered with something other than JSON"):
        response(b"<html>").json()


def test_an_answer_hides_encoding_length_and_cookies():
    headers = httpx.Headers(
        {"Content-Type": "text/plain", "Content-Encoding": "gzip", "Content-Length": "9", "Set-Cookie": "s=1"}
    )
    assert Answer(200, headers, b"").visible_headers() == {"content-type": "text/plain"}
