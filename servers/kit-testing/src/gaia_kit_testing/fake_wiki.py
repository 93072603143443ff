"""A loopback MediaWiki action API (formatversion=2 JSON, as Wikipedia answers): wiki-server's tests
and benchmarks/tool_cost.py."""

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route

from .loopback import LoopbackServer, RateLimited

PYTHON = "Python (programming language)"
ARTICLES = {
    PYTHON: {
        "pageid": 23862,
        "extract": (
            "Python is a high-level, general-purpose programming language. Its design philosophy "
            "emphasizes code readability. Guido van Rossum began working on Python in the late 1980s. "
            "It was first released in 1991. Python consistently ranks as one of the most popular "
            "programming languages. It is named after Monty Python.\n\n"
            "== History ==\nPython was conceived in the late 1980s.\n\n"
            "== Syntax and semantics ==\nPython uses whitespace indentation."
        ),
        "links": ["ABC (programming language)", "Guido van Rossum", "Monty Python", "CPython", "PyPy"],
        "categories": ["Programming languages", "Dutch inventions"],
        "hidden_categories": ["Articles with short description"],
        "revisions": [
            {
                "revid": 1001,
                "timestamp": "2005-03-01T10:00:00Z",
                "content": "'''Python''' is a [[programming language]].{{Infobox language|name=Python}}",
            },
            {
                "revid": 2002,
                "timestamp": "2010-06-15T08:30:00Z",
                "content": (
                    "{{Infobox programming language|name=Python|designer=[[Guido van Rossum]]}}\n"
                    "'''Python''' is a [[high-level programming language|high-level]] language created by "
                    "[[Guido van Rossum]].<ref>{{cite web|url=http://python.org|title=About}}</ref>\n\n"
                    "== History ==\nPython 2.0 was released in '''2000'''.\n"
                    "[[File:Guido.jpg|thumb|Guido]]\n[[Category:Programming languages]]"
                ),
            },
            {
                "revid": 3003,
                "timestamp": "2020-01-01T00:00:00Z",
                "content": "'''Python''' is a popular language.\n\n== Python 3 ==\nPython 2 reached end of life.",
            },
        ],
    },
    "Monty Python": {
        "pageid": 18942,
        "extract": "Monty Python were a British comedy troupe. They formed in 1969.",
        "links": ["Flying Circus"],
        "categories": ["British comedy troupes"],
        "hidden_categories": [],
        "revisions": [{"revid": 500, "timestamp": "2004-01-01T00:00:00Z", "content": "'''Monty Python'''"}],
    },
}
REDIRECTS = {"Python language": PYTHON}
LINKS_PER_ANSWER = 2  # small, so that link lists come with a `continue` as long ones do on Wikipedia


class FakeWiki(RateLimited):
    """Serves /{lang}/w/api.php on 127.0.0.1; `throttle(n)` answers the next n requests with 429."""

    def __init__(self):
        self.requests: list[dict[str, str]] = []
        app = Starlette(routes=[Route("/{lang}/w/api.php", self._api)])
        self._loopback = LoopbackServer(app)
        self.port = self._loopback.port
        self.api_url = f"http://127.0.0.1:{self.port}/{{lang}}/w/api.php"

    def start(self) -> None:
        self._loopback.start()

    def stop(self) -> None:
        self._loopback.stop()

    async def _api(self, request: Request) -> JSONResponse | PlainTextResponse:
        q = dict(request.query_params)
        self.requests.append(q)
        if refused := self.refusal():
            return refused
        if q.get("action") != "query" or q.get("format") != "json" or q.get("formatversion") != "2":
            return JSONResponse({"error": {"code": "badvalue", "info": "Unrecognized parameters."}})
        if q.get("list") == "search":
            return JSONResponse(_search(q))
        return JSONResponse(_pages(q))


def _search(q: dict[str, str]) -> dict:
    words = q["srsearch"].lower().split()
    hits = [
        {
            "ns": 0,
            "title": title,
            "pageid": article["pageid"],
            "snippet": f'<span class="searchmatch">{title}</span> &quot;snippet&quot;',
        }
        for title, article in ARTICLES.items()
        if any(word in (title + article["extract"]).lower() for word in words)
    ]
    # Titles that contain the words first, as Wikipedia's ranking would put them.
    hits.sort(key=lambda hit: -sum(word in hit["title"].lower() for word in words))
    hits = hits[: int(q.get("srlimit", 10))]
    return {"batchcomplete": True, "query": {"searchinfo": {"totalhits": len(hits)}, "search": hits}}


def _pages(q: dict[str, str]) -> dict:
    title = q["titles"]
    query: dict = {}
    if "redirects" in q and title in REDIRECTS:
        query["redirects"] = [{"from": title, "to": REDIRECTS[title]}]
        title = REDIRECTS[title]
    article = ARTICLES.get(title)
    if article is None:
        query["pages"] = [{"ns": 0, "title": title, "missing": True}]
        return {"batchcomplete": True, "query": query}
    record: dict = {"pageid": article["pageid"], "ns": 0, "title": title}
    answer: dict = {"batchcomplete": True, "query": query}
    props = q.get("prop", "").split("|")
    if "extracts" in props:
        extract = article["extract"]
        record["extract"] = extract.split("\n\n==")[0] if "exintro" in q else extract
    if "info" in props and q.get("inprop") == "url":
        record["fullurl"] = f"https://en.wikipedia.org/wiki/{title.replace(' ', '_')}"
    if "categories" in props:
        names = article["categories"] + ([] if q.get("clshow") == "!hidden" else article["hidden_categories"])
        record["categories"] = [{"ns": 14, "title": f"Category:{name}"} for name in names]
    if "links" in props:
        start = int(q.get("plcontinue", "0"))
        chunk = article["links"][start : start + LINKS_PER_ANSWER]
        record["links"] = [{"ns": 0, "title": link} for link in chunk]
        if start + LINKS_PER_ANSWER < len(article["links"]):
            answer = {
                "continue": {"plcontinue": str(start + LINKS_PER_ANSWER), "continue": "||"},
                "query": query,
            }
    if "revisions" in props:
        assert q["rvdir"] == "older" and q["rvprop"] == "ids|timestamp|content", q
        older = [r for r in article["revisions"] if r["timestamp"] <= q["rvstart"]]
        record["revisions"] = [
            {
                "revid": r["revid"],
                "parentid": 0,
                "timestamp": r["timestamp"],
                "slots": {
                    "main": {
                        "contentmodel": "wikitext",
                        "contentformat": "text/x-wiki",
                        "content": r["content"],
                    }
                },
            }
            for r in sorted(older, key=lambda r: r["timestamp"], reverse=True)[: int(q.get("rvlimit", 1))]
        ]
    query["pages"] = [record]
    return answer
