"""A loopback Wayback Machine: the availability API, the CDX API (JSON) and raw `id_` captures."""

from __future__ import annotations

import hashlib
import re

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from .fake_web import PDF
from .loopback import LoopbackServer, RateLimited


def page(year: str, body: str) -> bytes:
    return (
        f"<html><head><title>Example {year}</title></head><body><nav>Menu</nav>"
        f"<article><h1>Example Domain in {year}</h1><p>{body}</p></article></body></html>"
    ).encode()


SAME = page("2005", "This domain is for use in illustrative examples in documents.")
# url key -> captures, oldest first: (timestamp, original, mimetype, status, body)
CAPTURES: dict[str, list[tuple[str, str, str, str, bytes]]] = {
    "example.com": [
        ("20050101120000", "http://example.com/", "text/html", "200", SAME),
        ("20050601120000", "http://example.com/", "text/html", "200", SAME),  # same digest: collapsed
        (
            "20130919044612",
            "http://www.example.com/",
            "text/html",
            "200",
            page("2013", "Twenty thirteen edition."),
        ),
        (
            "20200315000000",
            "https://example.com/",
            "text/html",
            "200",
            page("2020", "The pandemic-era version."),
        ),
    ],
    "example.com/report.pdf": [
        ("20160101000000", "http://example.com/report.pdf", "application/pdf", "200", PDF)
    ],
    "example.com/logo.png": [
        ("20160101000000", "http://example.com/logo.png", "image/png", "200", bytes(300))
    ],
}


def key(url: str) -> str:
    return re.sub(r"^(https?://)?(www\.)?", "", url).rstrip("/")


def digest(body: bytes) -> str:
    return hashlib.sha1(body).hexdigest().upper()


def nearest(url: str, stamp: str) -> tuple[str, str, str, str, bytes] | None:
    captures = CAPTURES.get(key(url))
    if not captures:
        return None
    wanted = int(stamp.ljust(14, "0"))
    return min(captures, key=lambda capture: abs(int(capture[0]) - wanted))


class FakeWayback(LoopbackServer, RateLimited):
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.forgetful = False  # the real availability API sometimes answers "nothing" for archived URLs
        self.available_down = False  # ... or fails
        app = Starlette(
            routes=[
                Route("/wayback/available", self._available),
                Route("/cdx/search/cdx", self._cdx),
                Route("/web/{stamp:str}/{target:path}", self._capture),
            ]
        )
        super().__init__(app)

    def _busy(self, request: Request) -> Response | None:
        self.requests.append((request.url.path, dict(request.query_params)))
        return self.refusal()

    async def _available(self, request: Request) -> Response:
        if busy := self._busy(request):
            return busy
        if self.available_down:
            return PlainTextResponse("Service Unavailable", 503)
        q = request.query_params
        found = None if self.forgetful else nearest(q["url"], q.get("timestamp", "99991231"))
        snapshots = {}
        if found:
            snapshots["closest"] = {
                "status": found[3], "available": True, "timestamp": found[0],
                "url": f"http://web.archive.org/web/{found[0]}/{found[1]}",
            }  # fmt: skip
        return JSONResponse(
            {"url": q["url"], "archived_snapshots": snapshots, "timestamp": q.get("timestamp")}
        )

    async def _cdx(self, request: Request) -> Response:
        if busy := self._busy(request):
            return busy
        q = request.query_params
        assert q["output"] == "json"
        rows, last = [], None
        for stamp, original, mime, status, body in CAPTURES.get(key(q["url"]), []):
            if stamp < q.get("from", "0").ljust(14, "0") or stamp > q.get("to", "9").ljust(14, "9"):
                continue
            if q.get("collapse") == "digest" and digest(body) == last:
                continue
            last = digest(body)
            row = {"urlkey": "com,example)/", "timestamp": stamp, "original": original, "mimetype": mime,
                   "statuscode": status, "digest": digest(body), "length": str(len(body) // 3)}  # fmt: skip
            rows.append(row)
        rows = rows[: int(q["limit"])] if "limit" in q else rows
        if not rows:
            return Response(b"", media_type="application/json")
        fields = q.get("fl", "urlkey,timestamp,original,mimetype,statuscode,digest,length").split(",")
        return JSONResponse([fields] + [[row[f] for f in fields] for row in rows])

    async def _capture(self, request: Request) -> Response:
        if busy := self._busy(request):
            return busy
        stamp, target = request.path_params["stamp"], request.path_params["target"]
        if request.url.query:
            target += "?" + request.url.query
        if not stamp.endswith("id_"):
            return PlainTextResponse("toolbar replay is not served by this fake", 400)
        found = nearest(target, stamp[:-3])
        if found is None:
            return PlainTextResponse("Wayback Machine has not archived that URL.", 404)
        if found[0] != stamp[:-3] or found[1] != target:  # Wayback redirects to the capture it has
            return RedirectResponse(f"/web/{found[0]}id_/{found[1]}", 302)
        return Response(found[4], media_type=found[2], headers={"Memento-Datetime": found[0]})
