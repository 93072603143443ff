"""Every parxiv-server tool against the loopback arXiv, through MCP; retries, replay and the guard."""

import json

import pymupdf
import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit.web import http as kit_http
from gaia_kit_testing import failed, ok
from gaia_kit_testing.compat import REFERENCE, compatibility_problems
from parxiv_server.server import server

pytestmark = pytest.mark.anyio


async def test_reference_tools_are_served_compatibly():
    ours = {tool.name: tool.input_schema for tool in await server.list_tools()}
    reference = REFERENCE["parxiv-server"]
    assert {t["name"] for t in reference} == set(ours)
    assert not {
        t["name"]: p for t in reference if (p := compatibility_problems(t["inputSchema"], ours[t["name"]]))
    }


async def test_search_sends_the_query_and_reads_the_atom_feed(arxiv, call):
    shown = ok(await call("search_papers", query="encryption agents"))
    assert "## Verifiable Fully Homomorphic Encryption for Agents" in shown
    assert "**Authors:** Alice Smith, Bob Jones" in shown and "Strings" not in shown
    sent = arxiv.requests[-1]
    assert sent["search_query"] == "all:encryption AND all:agents"
    assert (sent["sortBy"], sent["sortOrder"], sent["max_results"]) == ("relevance", "descending", "10")
    found = json.loads(
        ok(await call("search_papers", query="encryption", category="hep-th", output_format="json"))
    )
    assert [p["id"] for p in found["papers"]] == ["hep-th/9901001v1"]
    assert arxiv.requests[-1]["search_query"] == "(all:encryption) AND cat:hep-th"


async def test_max_results_is_capped_and_the_next_page_named(arxiv, call, monkeypatch):
    monkeypatch.setenv("ARXIV_MAX_RESULTS", "2")
    shown = ok(await call("search_papers", query="tools", max_results=300000, sort_by="submittedDate"))
    assert arxiv.requests[-1]["max_results"] == "2" and arxiv.requests[-1]["sortBy"] == "submittedDate"
    assert "max_results 300000 is above this server's cap; 2 were asked for" in shown
    assert "Papers 1-2 of 3; call again with start=2 for more." in shown
    last = ok(await call("search_papers", query="tools", start=2))
    assert "part 2" in last and "call again" not in last


async def test_details_of_one_paper_with_every_field(arxiv, call):
    found = json.loads(ok(await call("get_paper_details", paper_id="arxiv:2301.07041", output_format="json")))
    assert arxiv.requests[-1]["id_list"] == "2301.07041"
    assert found["id"] == "2301.07041v2" and found["primary_category"] == "cs.CR"
    assert found["categories"] == ["cs.CR", "cs.AI"] and found["doi"] == "10.1000/xyz123"
    assert (
        found["summary"] == "We study encryption schemes for language agents. Our construction is efficient."
    )
    assert found["pdf_url"] == f"{arxiv.base}/pdf/2301.07041v2"
    shown = ok(await call("get_paper_details", paper_id="https://arxiv.org/abs/hep-th/9901001"))
    assert shown.startswith("# Strings on Curved Backgrounds")


async def test_unknown_and_malformed_ids_say_what_to_do(arxiv, call):
    assert "no paper with id 2999.99999; check the id, or find the paper with search_papers" in failed(
        await call("get_paper_details", paper_id="2999.99999")
    )
    assert "is not an arXiv id" in failed(await call("get_paper_details", paper_id="not an id"))
    assert "not an arXiv category; get_categories lists them" in failed(
        await call("search_papers", query="x", category="cs.XX")
    )


async def test_download_saves_the_pdf_and_returns_its_text(arxiv, call, kit_env, monkeypatch):
    monkeypatch.setenv("ARXIV_TEXT_PAGES", "2")
    shown = ok(await call("download_paper", paper_id="2301.07041v2"))
    saved = kit_env.workspace / "arxiv" / "2301.07041v2.pdf"
    assert "Saved to: arxiv/2301.07041v2.pdf (" in shown  # workspace-relative, never the host's path
    with pymupdf.open(saved) as document:
        assert document.page_count == 3
    assert "Verifiable page 1 of 3" in shown and "Verifiable page 2 of 3" in shown
    assert "page 3 of 3" not in shown and "first 2 of 3 pages (ARXIV_TEXT_PAGES)" in shown
    assert not [p for p in saved.parent.iterdir() if p.name.endswith(".tmp")]
    quiet = json.loads(
        ok(await call("download_paper", paper_id="hep-th/9901001", extract_text=False, output_format="json"))
    )
    assert quiet["saved_to"].endswith("arxiv/hep-th_9901001v1.pdf") and "text" not in quiet


async def test_a_pdf_over_the_size_cap_is_refused(arxiv, call, monkeypatch):
    monkeypatch.setenv("ARXIV_MAX_PDF_BYTES", "100")
    assert "larger than 100 bytes" in failed(await call("download_paper", paper_id="2301.07041"))


async def test_a_rate_limit_is_waited_out(arxiv, call):
    arxiv.throttle(2)
    assert ok(await call("get_paper_details", paper_id="2301.07041")).startswith("# Verifiable")
    assert len(arxiv.requests) == 3


async def test_a_rate_limit_that_outlasts_the_retries_says_try_later(arxiv, call, monkeypatch):
    monkeypatch.setenv("GAIA_HTTP_RETRIES", "1")
    arxiv.throttle(5)
    message = failed(await call("search_papers", query="agents"))
    assert "HTTP 429" in message and "try again later" in message


async def test_a_wrong_endpoint_names_the_setting(arxiv, call, monkeypatch):
    monkeypatch.setenv("ARXIV_API_URL", f"{arxiv.base}/api/nothing")
    assert "answered 404; check ARXIV_API_URL" in failed(await call("search_papers", query="agents"))


async def test_recorded_answers_replay_identically_with_the_site_gone(arxiv, call, monkeypatch):
    calls = [
        ("search_papers", {"query": "agents"}),
        ("get_paper_details", {"paper_id": "2301.07041"}),
        ("download_paper", {"paper_id": "2301.07041"}),
    ]
    recorded = [ok(await call(name, **args)) for name, args in calls]
    arxiv.stop()
    monkeypatch.setenv("GAIA_HTTP_CACHE_MODE", "replay")
    forget_settings()
    kit_http.forget_shared_http()  # the next call builds a client with replay settings
    assert [ok(await call(name, **args)) for name, args in calls] == recorded
    assert "No recorded answer" in failed(await call("get_paper_details", paper_id="hep-th/9901001"))


@pytest.mark.parametrize("address", ["10.0.0.1", "169.254.169.254"])
async def test_a_pdf_link_to_a_private_address_is_refused(arxiv, call, kit_env, address):
    arxiv.pdf_hosts["2301.07041v2"] = f"http://{address}"
    message = failed(await call("download_paper", paper_id="2301.07041"))
    assert address in message and "GAIA_HTTP_ALLOW" in message
    assert not (kit_env.workspace / "arxiv").exists()


async def test_categories_and_capabilities(call):
    listed = ok(await call("get_categories"))
    assert "## Computer Science" in listed and "- cs.AI: Artificial Intelligence" in listed
    assert "math.CO" in json.loads(ok(await call("get_categories", output_format="json")))["Mathematics"]
    capabilities = json.loads(ok(await call("get_arxiv_capabilities")))
    assert capabilities["max_results_cap"] == 50 and "export API" in capabilities["backend"]
