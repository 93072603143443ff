"""A loopback arXiv: the export API's Atom feed at /api/query and PDFs at /pdf/<id>: parxiv-server's
tests and benchmarks/tool_cost.py."""

import re
from xml.sax.saxutils import escape

import pymupdf
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from .loopback import LoopbackServer, RateLimited

PAPERS = [
    {
        "id": "2301.07041v2",
        "title": "Verifiable Fully Homomorphic Encryption\n  for Agents",
        "summary": "  We study encryption schemes for language agents. Our construction\nis efficient.\n",
        "authors": ["Alice Smith", "Bob Jones"],
        "published": "2023-01-17T18:00:00Z",
        "updated": "2023-03-02T09:00:00Z",
        "primary": "cs.CR",
        "categories": ["cs.CR", "cs.AI"],
        "doi": "10.1000/xyz123",
        "journal_ref": "J. Crypto. 12 (2023) 1-20",
        "comment": "20 pages, 3 figures",
        "pages": 3,
    },
    {
        "id": "hep-th/9901001v1",
        "title": "Strings on Curved Backgrounds",
        "summary": "Encryption is not discussed; we study strings.",
        "authors": ["Carol White"],
        "published": "1999-01-01T00:00:00Z",
        "updated": "1999-01-01T00:00:00Z",
        "primary": "hep-th",
        "categories": ["hep-th"],
        "pages": 1,
    },
]
for n in range(3):  # enough papers about agents that a small max_results leaves a next page
    PAPERS.append(
        {
            "id": f"2402.0000{n}v1",
            "title": f"Tool-using agents, part {n}",
            "summary": "Agents that call tools.",
            "authors": ["Dana Lee"],
            "published": f"2024-02-0{n + 1}T00:00:00Z",
            "updated": f"2024-02-0{n + 1}T00:00:00Z",
            "primary": "cs.AI",
            "categories": ["cs.AI"],
            "pages": 1,
        }
    )
ARXIV = "http://arxiv.org/schemas/atom"
OPENSEARCH = "http://a9.com/-/spec/opensearch/1.1/"


def make_pdf(paper: dict) -> bytes:
    document = pymupdf.open()
    for number in range(1, paper["pages"] + 1):
        document.new_page().insert_text(
            (72, 72), f"{paper['title'].split()[0]} page {number} of {paper['pages']}"
        )
    data = document.tobytes()
    document.close()
    return data


class FakeArxiv(RateLimited):
    """Serves /api/query and /pdf/{id} on 127.0.0.1; `throttle(n)` answers the next n with 429."""

    def __init__(self):
        self.requests: list[dict[str, str]] = []
        self.pdf_hosts: dict[str, str] = {}  # paper id -> the base URL its feed entry names for the PDF
        app = Starlette(routes=[Route("/api/query", self._query), Route("/pdf/{paper_id:path}", self._pdf)])
        self._loopback = LoopbackServer(app)
        self.port = self._loopback.port
        self.base = f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self._loopback.start()

    def stop(self) -> None:
        self._loopback.stop()

    async def _query(self, request: Request) -> Response:
        q = dict(request.query_params)
        self.requests.append(q)
        if refused := self.refusal():
            return refused
        start, limit = int(q.get("start", 0)), int(q.get("max_results", 10))
        if "id_list" in q:
            wanted = q["id_list"]
            if not re.fullmatch(r"\d{4}\.\d{4,5}(v\d+)?|[a-z-]+/\d{7}(v\d+)?", wanted):
                return _atom(q, [], 1, error=f"incorrect id format for {wanted}")
            hits = [p for p in PAPERS if p["id"] == wanted or p["id"].rsplit("v", 1)[0] == wanted]
        else:
            terms = re.findall(r"all:([^\s()]+)", q["search_query"])
            category = re.search(r"cat:([^\s()]+)", q["search_query"])
            hits = [
                p
                for p in PAPERS
                if all(t.lower() in (p["title"] + p["summary"]).lower() for t in terms)
                and (not category or category[1] in p["categories"])
            ]
        return _atom(q, [self._entry(p) for p in hits[start : start + limit]], len(hits))

    def _entry(self, p: dict) -> str:
        pdf_base = self.pdf_hosts.get(p["id"], self.base)
        extra = "".join(
            f"<arxiv:{key} xmlns:arxiv='{ARXIV}'>{escape(p[key])}</arxiv:{key}>"
            for key in ("doi", "journal_ref", "comment")
            if key in p
        )
        return f"""
  <entry>
    <id>http://arxiv.org/abs/{p["id"]}</id>
    <updated>{p["updated"]}</updated>
    <published>{p["published"]}</published>
    <title>{escape(p["title"])}</title>
    <summary>{escape(p["summary"])}</summary>
    {"".join(f"<author><name>{escape(a)}</name></author>" for a in p["authors"])}
    {extra}
    <link href="http://arxiv.org/abs/{p["id"]}" rel="alternate" type="text/html"/>
    <link title="pdf" href="{pdf_base}/pdf/{p["id"]}" rel="related" type="application/pdf"/>
    <arxiv:primary_category xmlns:arxiv="{ARXIV}" term="{p["primary"]}" scheme="{ARXIV}"/>
    {"".join(f'<category term="{c}" scheme="{ARXIV}"/>' for c in p["categories"])}
  </entry>"""

    async def _pdf(self, request: Request) -> Response:
        paper_id = request.path_params["paper_id"]
        paper = next((p for p in PAPERS if p["id"] == paper_id), None)
        if paper is None:
            return PlainTextResponse("Not found", status_code=404)
        return Response(make_pdf(paper), media_type="application/pdf")


def _atom(q: dict, entries: list[str], total: int, error: str = "") -> Response:
    if error:
        entries = [
            f"""<entry><id>http://arxiv.org/api/errors#{escape(error.replace(" ", "_"))}</id><title>Error</title>
  <summary>{escape(error)}</summary><updated>2024-01-01T00:00:00-05:00</updated>
  <link href="http://arxiv.org/api/errors#x" rel="alternate" type="text/html"/><author><name>arXiv api core</name></author></entry>"""
        ]
    body = f"""<?xml version="1.0" encoding="UTF-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
  <link href="http://arxiv.org/api/query" rel="self" type="application/atom+xml"/>
  <title type="html">ArXiv Query: {escape(str(q))}</title>
  <id>http://arxiv.org/api/fake</id>
  <updated>2024-06-01T00:00:00-04:00</updated>
  <opensearch:totalResults xmlns:opensearch="{OPENSEARCH}">{total}</opensearch:totalResults>
  <opensearch:startIndex xmlns:opensearch="{OPENSEARCH}">{q.get("start", 0)}</opensearch:startIndex>
  <opensearch:itemsPerPage xmlns:opensearch="{OPENSEARCH}">{q.get("max_results", 10)}</opensearch:itemsPerPage>
{"".join(entries)}
</feed>"""
    return Response(body, media_type="application/atom+xml; charset=utf-8")
