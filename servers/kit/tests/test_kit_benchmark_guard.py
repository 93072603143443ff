"""The benchmark-copy guard's rules: what counts as quoting the task, which URLs are mirrors, what a
web-facing result becomes, and how bad settings are refused."""

from __future__ import annotations

import json

import pytest
from gaia_kit.core import benchmark_guard as guard
from gaia_kit.core import calls
from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.settings import forget_settings, settings
from mcp_types import CallToolResult, TextContent

QUESTION = (
    "In the paper titled 'Sparse Attention Patterns for Long Documents in Legal Retrieval', submitted in "
    "March 2021, which dataset did the authors use for their ablation on clause length, and how many "
    "clauses did it contain?"
)
TITLE_PAGE = (
    "Sparse Attention Patterns for Long Documents in Legal Retrieval. Abstract: we study attention "
    "patterns on long legal documents. Section 5 reports an ablation on clause length using the "
    "CUAD dataset of 13,000 clauses."
)


@pytest.fixture(autouse=True)
def fresh_settings(monkeypatch):
    for name in ("GAIA_GUARD_MIRRORS", "GAIA_GUARD_EXTRA_MIRRORS", "GAIA_GUARD_MIN_CONTAINMENT"):
        monkeypatch.delenv(name, raising=False)
    forget_settings()
    guard.question.cache_clear()
    yield
    forget_settings()
    guard.question.cache_clear()


@pytest.fixture
def task():
    call = calls.Call("read_url", task_question=QUESTION)
    token = calls.enter(call)
    yield call
    calls.leave(token)


def test_a_copy_quotes_the_question_in_any_markup_and_the_source_that_answers_it_does_not():
    assert guard.containment(QUESTION, f"<p>Task 12</p><td>{QUESTION}</td><td>CUAD</td>") == 1.0
    as_json = json.dumps({"Question": QUESTION.replace("'", "\u2019") + "\n", "Final answer": "CUAD"})
    assert guard.containment(QUESTION, as_json) > 0.8
    # The paper the question names shares its title, not the question: it must be served.
    assert guard.containment(QUESTION, TITLE_PAGE) < 0.3


def test_quotes_task_needs_the_sessions_task(task):
    assert guard.quotes_task(f"Q: {QUESTION} A: CUAD") == 1.0
    assert guard.quotes_task(TITLE_PAGE) is None
    task.task_question = ""
    assert guard.quotes_task(f"Q: {QUESTION}") is None


def test_a_question_too_short_to_screen_is_never_quoted(task):
    task.task_question = "What is the capital of France?"
    assert guard.quotes_task("Quiz: what is the capital of France? Paris.") is None


def test_a_withheld_page_is_recorded_with_its_source(task):
    with pytest.raises(guard.Withheld, match=r"Withheld: this page \(https://dump.example/t\) quotes"):
        guard.screen_text(QUESTION, "https://dump.example/t")
    assert task.withheld == [{"reason": "quotes_task", "source": "https://dump.example/t", "overlap": 1.0}]
    guard.screen_text(TITLE_PAGE, "https://arxiv.example/abs/1")


@pytest.mark.parametrize(
    "url",
    [
        "https://huggingface.co/datasets/gaia-benchmark/GAIA/viewer/2023_all/validation",
        "https://www.huggingface.co/spaces/gaia-benchmark/leaderboard",
        "https://huggingface.co/datasets/someone/GAIA-copy/resolve/main/data.jsonl",
        "https://datasets-server.huggingface.co/rows?dataset=gaia-benchmark%2FGAIA&split=validation",
        "https://web.archive.org/web/2024id_/https://huggingface.co/datasets/gaia-benchmark/GAIA",
        "https://r.jina.ai/https://huggingface.co/datasets/gaia-benchmark/GAIA",
    ],
)
def test_the_gaia_dataset_and_its_copies_are_mirrors(url):
    assert guard.mirror_pattern(url) is not None


@pytest.mark.parametrize(
    "url",
    [
        "https://huggingface.co/papers/2311.12983",
        "https://huggingface.co/datasets/esa/stars",
        "https://en.wikipedia.org/wiki/Gaia",
    ],
)
def test_pages_about_gaia_are_not_mirrors(url):
    assert guard.mirror_pattern(url) is None


def test_mirrors_are_configurable(monkeypatch):
    monkeypatch.setenv("GAIA_GUARD_MIRRORS", "none")
    monkeypatch.setenv("GAIA_GUARD_EXTRA_MIRRORS", "dumps.example, *.mirror.test/gaia")
    forget_settings()
    assert guard.mirror_pattern("https://huggingface.co/datasets/gaia-benchmark/GAIA") is None
    assert guard.mirror_pattern("https://cdn.dumps.example/x") == "dumps.example"
    assert guard.mirror_pattern("https://a.mirror.test/gaia/val.csv") == "*.mirror.test/gaia"
    assert guard.mirror_pattern("https://a.mirror.test/other") is None
    with pytest.raises(guard.Withheld, match="GAIA_GUARD_MIRRORS lists dumps.example"):
        guard.refuse_mirror("https://dumps.example/t/12")


def test_a_bad_threshold_is_refused_in_one_sentence(monkeypatch):
    monkeypatch.setenv("GAIA_GUARD_MIN_CONTAINMENT", "lots")
    with pytest.raises(ToolFailure, match=r"GAIA_GUARD_MIN_CONTAINMENT='lots' is not a float from 0.05 to 1"):
        settings(guard.GuardSettings)


def test_search_items_that_quote_or_mirror_are_dropped(task):
    items = [("https://dump.example/12", QUESTION), ("https://arxiv.example/1", TITLE_PAGE),
             ("https://huggingface.co/datasets/gaia-benchmark/GAIA", "viewer")]  # fmt: skip
    kept = guard.keep_unquoted(items, lambda i: i[1], lambda i: i[0])
    assert kept == [items[1]]
    assert [w["reason"] for w in task.withheld] == ["quotes_task", "mirror"]


def test_a_result_that_echoes_the_agents_own_query_is_not_withheld(task):
    echoed = CallToolResult(
        content=[TextContent(type="text", text=f"Results for '{QUESTION}':\n{TITLE_PAGE}")]
    )
    assert guard.screen_result(echoed, {"query": QUESTION}) is echoed
    quoted = CallToolResult(
        content=[TextContent(type="text", text=f"Page URL: https://x.example/\n{QUESTION}")]
    )
    replaced = guard.screen_result(quoted, {"url": "https://x.example/"})
    assert replaced.is_error and replaced.content[0].text.startswith(
        "Withheld: this result (https://x.example/)"
    )
