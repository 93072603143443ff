"""Every wiki-server tool against the loopback MediaWiki API, through MCP."""

import json

import pytest
from gaia_kit_testing import failed, ok
from gaia_kit_testing.compat import REFERENCE, compatibility_problems
from wiki_server.server import server
from wiki_server.wikitext import render_wikitext

pytestmark = pytest.mark.anyio

PYTHON = "Python (programming language)"  # an article the fake wiki (conftest) serves


async def test_reference_tools_are_served_compatibly():
    ours = {tool.name: tool.input_schema for tool in await server.list_tools()}
    reference = REFERENCE["wiki-server"]
    assert {t["name"] for t in reference} == set(ours)
    assert not {
        t["name"]: p for t in reference if (p := compatibility_problems(t["inputSchema"], ours[t["name"]]))
    }


async def test_search_lists_titles_snippets_and_urls(wiki, call):
    shown = ok(await call("search_wikipedia", query="monty", limit=5))
    assert "**Monty Python**" in shown and '"snippet"' in shown and "<span" not in shown
    found = json.loads(ok(await call("search_wikipedia", query="python", output_format="json")))
    assert {hit["title"] for hit in found["results"]} == {PYTHON, "Monty Python"}
    assert wiki.requests[-1]["srlimit"] == "10"


async def test_content_follows_redirects_and_pages_long_articles(wiki, call):
    shown = ok(await call("get_article_content", title="Python language"))
    assert shown.startswith(f"# {PYTHON}") and "## History" in shown and "whitespace indentation" in shown
    first = ok(await call("get_article_content", title=PYTHON, max_length=100))
    assert "Call again with start_index=100" in first
    rest = ok(await call("get_article_content", title=PYTHON, start_index=100))
    assert "whitespace indentation" in rest
    intro = ok(await call("get_article_content", title=PYTHON, include_full_content=False))
    assert "History" not in intro


async def test_summary_has_the_asked_number_of_sentences(wiki, call):
    found = json.loads(ok(await call("get_article_summary", title=PYTHON, sentences=2, output_format="json")))
    assert found["summary"] == (
        "Python is a high-level, general-purpose programming language. "
        "Its design philosophy emphasizes code readability."
    )


async def test_categories_leave_out_hidden_ones(wiki, call):
    found = json.loads(ok(await call("get_article_categories", title=PYTHON, output_format="json")))
    assert found["categories"] == ["Programming languages", "Dutch inventions"]


async def test_links_are_gathered_across_continuations(wiki, call):
    shown = ok(await call("get_article_links", title=PYTHON, output_format="text"))
    assert "Links of Python (programming language) (5)" in shown and "PyPy" in shown
    assert sum("links" in r.get("prop", "") for r in wiki.requests) == 3


async def test_history_gives_the_revision_in_force_rendered_readable(wiki, call):
    shown = ok(await call("get_article_history", title=PYTHON, date="2015/01/31"))
    assert "Revision: 2002 (2010-06-15T08:30:00Z)" in shown
    assert "Permanent link: " in shown and "index.php?oldid=2002" in shown
    assert "Python is a high-level language created by Guido van Rossum." in shown
    assert "## History" in shown and "Python 2.0 was released in 2000." in shown
    assert "{{" not in shown and "[[" not in shown and "'''" not in shown and "cite web" not in shown
    # A month alone means its last day; the end of that day counts.
    found = json.loads(
        ok(await call("get_article_history", title=PYTHON, date="2010/06", output_format="json"))
    )
    assert found["revision_id"] == 2002 and found["requested_date"] == "2010-06-30"
    assert wiki.requests[-1]["rvstart"] == "2010-06-30T23:59:59Z"


async def test_history_before_the_article_existed_says_so(wiki, call):
    assert "did not exist yet on 2001-01-31; try a later date" in failed(
        await call("get_article_history", title=PYTHON, date="2001/01")
    )
    assert "write it like 2023/06/15" in failed(
        await call("get_article_history", title=PYTHON, date="June 2020")
    )


async def test_a_missing_article_suggests_what_search_finds(wiki, call):
    message = failed(await call("get_article_content", title="Monty Pythons"))
    assert "No Wikipedia (en) article is titled 'Monty Pythons'" in message and "Monty Python" in message
    assert "Call again with one of these titles" in message
    # auto_suggest takes the best search result instead of failing.
    assert ok(await call("get_article_summary", title="Monty Pythons", auto_suggest=True)).startswith(
        "# Monty Python"
    )


async def test_capabilities_name_the_backend(wiki, call):
    found = json.loads(ok(await call("get_wikipedia_capabilities")))
    assert "live MediaWiki action API" in found["backend"] and len(found["tools"]) == 7


def test_wikitext_renders_to_plain_text():
    text = render_wikitext("== A ==\n'''Bold''' and [[Target|shown]] {{tmpl|x}}<ref>note</ref>.")
    assert text == "## A\n\nBold and shown."
