"""gaia_kit.models.adviser against the loopback OpenAI-compatible fake: the prompt in its style, the
server's settings, and the capabilities and status it reports."""

from __future__ import annotations

import pytest
from gaia_kit.models.adviser import Adviser
from gaia_kit_testing.fake_openai import LLM_SUFFIXES, FakeOpenAI

pytestmark = pytest.mark.anyio

SAGE = Adviser(
    "THINK",
    system="You solve problems.",
    styles={"detailed": "Explain every step.", "concise": "Be brief."},
    max_tokens=321,
)


@pytest.fixture
def fake(monkeypatch):
    for prefix in ("MCP", "THINK"):
        for suffix in LLM_SUFFIXES:
            monkeypatch.delenv(f"{prefix}_LLM_{suffix}", raising=False)
    with FakeOpenAI(model="fake-sage", api_key="sk-sage") as server:
        for name, value in server.env("THINK").items():
            monkeypatch.setenv(name, value)
        yield server


async def test_ask_sends_the_system_prompt_in_the_chosen_style(fake):
    fake.answer("42")
    assert await SAGE.ask("What is 6*7?", style="concise", temperature=0.2) == "42"
    sent = fake.requests[0]
    assert sent["messages"] == [
        {"role": "system", "content": "You solve problems. Be brief."},
        {"role": "user", "content": "What is 6*7?"},
    ]
    assert (sent["model"], sent["max_tokens"], sent["temperature"]) == ("fake-sage", 321, 0.2)


async def test_a_conversation_goes_on_from_its_opening(fake):
    fake.answer("Fixed.")
    messages = [*SAGE.opening("Fix it.", "detailed"), {"role": "assistant", "content": "Broken."}]
    messages.append({"role": "user", "content": "Again."})
    assert await SAGE.answer(messages, temperature=0.0, timeout=30) == "Fixed."
    assert fake.requests[0]["messages"][0]["content"] == "You solve problems. Explain every step."
    assert len(fake.requests[0]["messages"]) == 4


def test_capabilities_and_status_name_the_model_and_the_styles(fake):
    text = SAGE.capabilities("Solving (solve)", "Good at sums.", styles_note="Temperature 0-1.")
    assert text.splitlines() == [
        "Solving (solve)",
        "Model: fake-sage.",
        "Good at sums.",
        "Styles: detailed, concise. Temperature 0-1.",
    ]
    assert SAGE.status()["backend"] == "openai-compatible"
