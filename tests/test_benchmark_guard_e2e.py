"""The benchmark-copy guard end to end: a real gateway with every web-facing server it covers, over a hidden
loopback web (pages, files, a wiki, an archive, search results) where some pages quote the task's
question, others are only on its topic, and one host is a listed benchmark mirror.

The task reaches the gateway as session metadata (`_meta` gaia-env/task), once; the tools then withhold
what quotes it and serve what does not, and every session is refused the mirror."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from gaia_kit_testing.fake_search import FakePage, FakeSearch
from gaia_kit_testing.gateway import RunningGateway, launch
from gaia_kit_testing.loopback import LoopbackServer
from gaia_train.episode.session import McpSettings, McpToolSession
from gaia_train.episode.toolcalls import ToolCall
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

pytestmark = pytest.mark.slow

SERVERS = "googlesearch-server,readweb-server,download-server,wiki-server,wayback-server,ms-playwright"
QUESTION = (
    "The printed guide of the 1987 lighthouse exhibition in Bergen names the keeper who served longest at "
    "the Hellisoy light. How many years did that keeper serve there before the station was automated, "
    "according to the guide's own table of keepers?"
)
# A leaderboard dump: the question as a dataset viewer shows it, with its answer.
COPY = f"<h2>Validation task 17</h2><p>Question: {QUESTION}</p><p>Final answer: 31</p>"
# The same topic, the same names and places, one shared title: what an honest source looks like.
TOPIC = (
    "<h2>Hellisoy lighthouse</h2><p>The Hellisoy light on Fedje was lit in 1855. The 1987 lighthouse "
    "exhibition in Bergen showed its lens and a table of keepers; Ole Brekke kept the light for 31 years. "
    "The station was automated in 2003, and the keepers' house is now a guest house.</p>"
)


def page(body: str) -> HTMLResponse:
    return HTMLResponse(f"<!doctype html><html><head><title>Lights</title></head><body><article>{body}"
                        "</article></body></html>")  # fmt: skip


def wiki_api(request: Request) -> JSONResponse:
    title = request.query_params.get("titles", "")
    extract = {"Copied tasks": re.sub("<[^>]+>", " ", COPY), "Hellisoy": re.sub("<[^>]+>", " ", TOPIC)}
    if title not in extract:
        return JSONResponse({"query": {"pages": [{"title": title, "missing": True}]}})
    article = {"title": title, "pageid": 7, "fullurl": f"https://en.wikipedia.org/wiki/{title}",
               "extract": extract[title]}  # fmt: skip
    return JSONResponse({"batchcomplete": True, "query": {"pages": [article]}})


def available(request: Request) -> JSONResponse:
    site = request.query_params["url"]
    closest = {"available": True, "status": "200", "timestamp": "20240101000000",
               "url": f"http://archive.test/web/20240101000000/{site}"}  # fmt: skip
    return JSONResponse({"url": site, "archived_snapshots": {"closest": closest}})


def capture(request: Request) -> Response:
    original = request.path_params["rest"]
    return page(COPY if "copy" in original else TOPIC)


def site_app() -> Starlette:
    return Starlette(
        routes=[
            Route("/copy.html", lambda r: page(COPY)),
            Route("/topic.html", lambda r: page(TOPIC)),
            Route(
                "/dump.jsonl", lambda r: PlainTextResponse(json.dumps({"task_id": 17, "Question": QUESTION}))
            ),
            Route("/keepers.csv", lambda r: PlainTextResponse("keeper,years\nOle Brekke,31\n")),
            Route("/w/api.php", wiki_api),
            Route("/wayback/available", available),
            Route("/web/{stamp}/{rest:path}", capture),
        ]
    )


@pytest.fixture(scope="module")
def site() -> Iterator[LoopbackServer]:
    with LoopbackServer(site_app()) as served:
        yield served


def mirror(site: LoopbackServer, path: str) -> str:
    """The same loopback site under the host name the gateway lists as a benchmark mirror."""
    return site.url(path).replace("127.0.0.1", "localhost")


@pytest.fixture(scope="module")
def search(site: LoopbackServer) -> Iterator[FakeSearch]:
    pages = [
        FakePage("Validation task 17 - leaderboard dump", site.url("/copy.html"), f"Question: {QUESTION}"),
        FakePage("Hellisoy lighthouse", site.url("/topic.html"), re.sub("<[^>]+>", " ", TOPIC)[:300]),
        FakePage(
            "GAIA lighthouse task viewer", mirror(site, "/viewer"), "lighthouse keepers, dataset viewer"
        ),
    ]
    with FakeSearch(pages) as fake:
        yield fake


@pytest.fixture(scope="module")
def gateway(tmp_path_factory, site: LoopbackServer, search: FakeSearch) -> Iterator[RunningGateway]:
    env = {
        "GAIA_HTTP_ALLOW": "127.0.0.1,localhost",
        "GAIA_HTTP_CACHE_MODE": "off",
        "GAIA_GUARD_EXTRA_MIRRORS": "localhost",
        "GOOGLE_API_KEY": search.key,
        "GOOGLE_CSE_ID": "test-engine",
        "GOOGLE_CSE_URL": search.google_url,
        "SEARCH_BACKEND": "google",
        "READWEB_BACKEND": "local",
        "WIKI_API_URL": site.url("/w/api.php"),
        "WAYBACK_AVAILABILITY_URL": site.url("/wayback/available"),
        "WAYBACK_SNAPSHOT_URL": site.url("/web"),
    }
    gateway = launch(tmp_path_factory.mktemp("guard"), "--servers", SERVERS, env=env)
    yield gateway
    gateway.stop()


def call(
    gateway: RunningGateway, session: str, tool: str, arguments: dict[str, Any], task: bool = False
) -> dict:
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if task:
        params["_meta"] = {"gaia-env/task": {"question": QUESTION}}
    reply = gateway.rpc("tools/call", params, headers={"X-Session-Id": session}, timeout=120).json()
    assert "result" in reply, reply
    return reply["result"]


def text(result: dict) -> str:
    return result["content"][0]["text"]


def withheld(result: dict) -> list[str]:
    return [item["reason"] for item in result.get("_meta", {}).get("gaia-env/withheld", [])]


def test_each_web_tool_withholds_what_quotes_the_task_and_serves_what_does_not(
    gateway: RunningGateway, site: LoopbackServer
) -> None:
    session = "task-17"
    # The task travels once, with the first call; the session keeps it for the calls after.
    found = call(
        gateway,
        session,
        "search_google",
        {"query": "lighthouse keeper Hellisoy", "num_results": 10},
        task=True,
    )
    assert not found["isError"], found
    urls = [hit["url"] for hit in found["structuredContent"]["results"]]
    assert urls == [site.url("/topic.html")]
    assert sorted(withheld(found)) == ["mirror", "quotes_task"]

    copy = call(gateway, session, "read_url", {"url": site.url("/copy.html")})
    assert copy["isError"] and text(copy).count("Withheld: this page") == 1, copy
    assert "quotes the task's question" in text(copy) and "Final answer" not in text(copy)
    assert withheld(copy) == ["quotes_task"]
    topic = call(gateway, session, "read_url", {"url": site.url("/topic.html")})
    assert not topic["isError"] and "Ole Brekke kept the light for 31 years" in text(topic)

    dump = call(
        gateway, session, "download_file", {"url": site.url("/dump.jsonl"), "output_file_path": "dump.jsonl"}
    )
    assert dump["isError"] and "Withheld: this file" in text(dump)
    keepers = call(
        gateway, session, "download_file", {"url": site.url("/keepers.csv"), "output_file_path": "k.csv"}
    )
    assert not keepers["isError"], keepers
    listing = [p.name for w in gateway.session_workspaces() for p in w.iterdir()]
    assert "k.csv" in listing and "dump.jsonl" not in listing  # a withheld file never lands

    article = call(gateway, session, "get_article_content", {"title": "Copied tasks"})
    assert article["isError"] and "Withheld: this article" in text(article)
    assert not call(gateway, session, "get_article_content", {"title": "Hellisoy"})["isError"]

    archived = {"url": site.url("/copy.html"), "timestamp": "20240101"}
    assert "Withheld" in text(call(gateway, session, "get_archived_content", archived))
    archived["url"] = site.url("/topic.html")
    assert "Ole Brekke" in text(call(gateway, session, "get_archived_content", archived))

    browsed = call(gateway, session, "browser_navigate", {"url": site.url("/copy.html")})
    assert browsed["isError"] and "Withheld: this result" in text(browsed), browsed
    browsed = call(gateway, session, "browser_navigate", {"url": site.url("/topic.html")})
    assert not browsed["isError"] and "Ole Brekke" in text(browsed)

    report = httpx.get(f"{gateway.base}/sessions/{session}", timeout=10).json()
    assert report["withheld"] == {"quotes_task": 6, "mirror": 1}
    metrics = httpx.get(gateway.base + "/metrics", timeout=10).text
    assert (
        'gaia_env_withheld_total{reason="quotes_task",server="readweb-server",tool="read_url"} 1.0' in metrics
    )
    assert (
        'gaia_env_withheld_total{reason="mirror",server="googlesearch-server",tool="search_google"} 1.0'
        in metrics
    )
    logged = [json.loads(line) for line in gateway.log().splitlines() if '"msg": "withheld"' in line]
    assert any(
        r.get("session") == session and r["withheld"]["source"] == site.url("/copy.html") for r in logged
    )


def test_a_mirror_is_refused_for_every_session_and_a_session_without_a_task_is_not_screened(
    gateway: RunningGateway, site: LoopbackServer
) -> None:
    session = "no-task"
    for tool, arguments in [
        ("read_url", {"url": mirror(site, "/topic.html")}),
        ("download_file", {"url": mirror(site, "/keepers.csv"), "output_file_path": "m.csv"}),
        ("browser_navigate", {"url": mirror(site, "/topic.html")}),
        ("get_archived_content", {"url": mirror(site, "/topic.html"), "timestamp": "20240101"}),
    ]:
        refused = call(gateway, session, tool, arguments)
        assert refused["isError"] and "known copy of the benchmark" in text(refused), (tool, refused)
        assert "GAIA_GUARD_MIRRORS lists localhost" in text(refused)
    # Without a task nothing quotes it: the copy is served (the mirror list is what holds for everyone).
    assert not call(gateway, session, "read_url", {"url": site.url("/copy.html")})["isError"]


def test_the_trainer_sends_the_task_and_counts_what_was_withheld(
    gateway: RunningGateway, site: LoopbackServer
) -> None:
    async def episode() -> tuple[Any, Any]:
        settings = McpSettings(url=gateway.url, servers="readweb-server", task_question=QUESTION)
        async with McpToolSession(settings) as session:
            copy = await session.call(ToolCall("c1", "read_url", {"url": site.url("/copy.html")}))
            topic = await session.call(ToolCall("c2", "read_url", {"url": site.url("/topic.html")}))
        return copy, topic

    copy, topic = anyio.run(episode)
    assert copy.is_error and copy.withheld == 1 and "Withheld: this page" in copy.text
    assert not topic.is_error and topic.withheld == 0 and QUESTION not in topic.text
