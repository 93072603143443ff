"""A loopback web for tests: pages, files, redirects and failures, plus Jina Reader and Tavily extract.

    with FakeWeb() as web:
        monkeypatch.setenv("GAIA_HTTP_ALLOW", "127.0.0.1")
        web.url("/article.html")          # an article page; /long.html, /doc.pdf, /blob.bin, ...
        web.throttle(2)                   # the next 2 requests get 429 with Retry-After: 0
        monkeypatch.setenv("JINA_API_URL", web.url("/jina/"))
        monkeypatch.setenv("TAVILY_API_URL", web.url("/tavily/extract"))

Paths: /article.html (title, paragraphs, two images), /long.html (about 100,000 characters),
/empty.html (no text), /doc.pdf (2 pages), /blob.bin (binary), /png-as-text.txt (PNG bytes labelled
text/plain), /bytes/<n> (n bytes, with Content-Length), /redirect?to=<url> (302), /slow (dribbles
for `slow_s` seconds), anything else 404. Jina (`GET /jina/<url>`) and Tavily (`POST /tavily/extract`)
answer in their real JSON shapes for URLs whose path names an article here, and check the Bearer key.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pymupdf
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from .loopback import LoopbackServer, RateLimited

JINA_KEY = "jina_test_key"
TAVILY_KEY = "tvly-test-key"
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(64)

ARTICLES: dict[str, tuple[str, list[str]]] = {
    "article.html": (
        "Moon landing facts",
        [
            "Apollo 11 landed on the Moon on 20 July 1969, in the Sea of Tranquility.",
            "Neil Armstrong and Buzz Aldrin walked on the surface for about two and a half hours.",
            "Michael Collins stayed in lunar orbit aboard the command module Columbia.",
        ],
    ),
    "long.html": (
        "A very long page",
        [f"Paragraph {n}: " + "the quick brown fox jumps over the lazy dog. " * 20 for n in range(110)],
    ),
}


def article_html(name: str) -> str:
    title, paragraphs = ARTICLES[name]
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return f"""<!doctype html><html><head><title>{title}</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>{title}</h1>{body}
<img src="/images/lander.png" alt="The lander"><img src="https://cdn.example.org/crew.jpg" alt="Crew">
</article><footer>Copyright 2024 Fake Web</footer></body></html>"""


def article_markdown(name: str) -> str:
    title, paragraphs = ARTICLES[name]
    return f"# {title}\n\n" + "\n\n".join(paragraphs)


def make_pdf(pages: list[str]) -> bytes:
    document = pymupdf.open()
    for line in pages:
        document.new_page().insert_text((72, 72), line)
    data = document.tobytes()
    document.close()
    return data


PDF = make_pdf(["Quarterly report page one", "Revenue grew 12 percent"])


class FakeWeb(LoopbackServer, RateLimited):
    def __init__(self, slow_s: float = 3.0) -> None:
        self.slow_s = slow_s
        self.requests: list[dict[str, Any]] = []
        app = Starlette(
            routes=[
                Route("/jina/{target:path}", self._jina),
                Route("/tavily/extract", self._tavily, methods=["POST"]),
                Route("/redirect", self._redirect),
                Route("/slow", self._slow),
                Route("/bytes/{size:int}", self._bytes),
                Route("/{path:path}", self._file),
            ]
        )
        super().__init__(app)

    async def _seen(self, request: Request) -> Response | None:
        """Log the request; a 429 while throttled."""
        self.requests.append(
            {"method": request.method, "path": request.url.path, "query": dict(request.query_params),
             "headers": dict(request.headers), "body": await request.body()}
        )  # fmt: skip
        return self.refusal()

    async def _file(self, request: Request) -> Response:
        if busy := await self._seen(request):
            return busy
        path = request.path_params["path"]
        if path in ARTICLES:
            return Response(article_html(path), media_type="text/html; charset=utf-8")
        if path == "empty.html":
            return Response("<html><head><title>Blank</title></head><body><script>x()</script></body></html>",
                            media_type="text/html")  # fmt: skip
        if path == "doc.pdf":
            return Response(PDF, media_type="application/pdf")
        if path == "blob.bin":
            return Response(bytes(range(256)) * 8, media_type="application/octet-stream")
        if path == "png-as-text.txt":
            return Response(PNG, media_type="text/plain")
        if path == "images/lander.png":
            return Response(PNG, media_type="image/png")
        return PlainTextResponse("Not Found", 404)

    async def _bytes(self, request: Request) -> Response:
        if busy := await self._seen(request):
            return busy
        return Response(b"x" * request.path_params["size"], media_type="application/octet-stream")

    async def _redirect(self, request: Request) -> Response:
        if busy := await self._seen(request):
            return busy
        return RedirectResponse(request.query_params["to"], 302)

    async def _slow(self, request: Request) -> Response:
        if busy := await self._seen(request):
            return busy

        async def dribble() -> AsyncIterator[bytes]:
            for _ in range(int(self.slow_s * 10)):
                yield b"."
                await asyncio.sleep(0.1)

        return StreamingResponse(dribble(), media_type="text/plain")

    def _article_for(self, url: str) -> str | None:
        name = url.split("?")[0].rstrip("/").rsplit("/", 1)[-1]
        return name if name in ARTICLES else None

    async def _jina(self, request: Request) -> Response:
        if busy := await self._seen(request):
            return busy
        if request.headers.get("authorization") != f"Bearer {JINA_KEY}":
            return JSONResponse({"data": None, "code": 401, "name": "AuthenticationRequiredError", "status": 40103,
                                 "message": "Invalid API key"}, 401)  # fmt: skip
        target = request.path_params["target"]
        name = self._article_for(target)
        if name is None:
            return JSONResponse({"data": None, "code": 422, "name": "AssertionFailureError", "status": 42206,
                                 "message": f"Failed to goto {target}: 404"}, 422)  # fmt: skip
        data: dict[str, Any] = {
            "title": ARTICLES[name][0], "description": "", "url": target,
            "content": article_markdown(name), "usage": {"tokens": 120},
        }  # fmt: skip
        if request.headers.get("x-with-images-summary") == "true":
            data["images"] = {"Image 1: The lander": "https://example.org/images/lander.png"}
        return JSONResponse({"code": 200, "status": 20000, "data": data, "meta": {"usage": {"tokens": 120}}})

    async def _tavily(self, request: Request) -> Response:
        if busy := await self._seen(request):
            return busy
        if request.headers.get("authorization") != f"Bearer {TAVILY_KEY}":
            return JSONResponse({"detail": {"error": "Unauthorized: missing or invalid API key."}}, 401)
        body = await request.json()
        results, failed = [], []
        for url in body.get("urls", []):
            name = self._article_for(url)
            if name is None:
                failed.append({"url": url, "error": "Failed to fetch url"})
                continue
            found: dict[str, Any] = {"url": url, "raw_content": article_markdown(name)}
            found["images"] = ["https://example.org/images/lander.png"] if body.get("include_images") else []
            results.append(found)
        return JSONResponse({"results": results, "failed_results": failed, "response_time": 0.02})


# Addresses the SSRF guard must refuse even while tests allow-list 127.0.0.1 for their fakes.
REFUSED_HOSTS = ["10.0.0.1", "169.254.169.254", "[::1]", "192.168.1.1", "metadata.google.internal"]
