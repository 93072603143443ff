"""gaia_kit.models.llm against the loopback OpenAI-compatible fake: settings, retries, errors, secrecy."""

from __future__ import annotations

import logging

import pytest
from gaia_kit import ToolFailure
from gaia_kit.core.settings import forget_settings
from gaia_kit.models.llm import chat, conversation, llm_config, llm_status, model_line
from gaia_kit_testing.fake_openai import LLM_SUFFIXES, FakeOpenAI

pytestmark = pytest.mark.anyio

KEY = "sk-very-secret-0123456789"
PREFIXES = ("MCP", "CODE", "THINK", "GUARD")


@pytest.fixture
def clean_env(monkeypatch):
    for prefix in PREFIXES:
        for suffix in LLM_SUFFIXES:
            monkeypatch.delenv(f"{prefix}_LLM_{suffix}", raising=False)
    return monkeypatch


@pytest.fixture
def fake(clean_env):
    clean_env.setattr("gaia_kit.models.llm.BACKOFF_BASE_S", 0.01)
    with FakeOpenAI(model="fake-coder", api_key=KEY) as server:
        yield server


def use(monkeypatch, values: dict[str, str]) -> None:
    """Set `values` as a restarted server sees them: settings are read once per process."""
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    forget_settings()


async def test_request_carries_model_key_and_messages(fake, clean_env):
    use(clean_env, fake.env("MCP"))
    fake.answer("Paris")
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Capital of France?"}]
    assert await chat(messages, prefix="THINK", max_tokens=100, temperature=0.2) == "Paris"
    sent = fake.requests[0]
    assert sent["model"] == "fake-coder" and sent["messages"] == messages
    assert sent["max_tokens"] == 100 and sent["temperature"] == 0.2
    assert fake.headers[0]["authorization"] == f"Bearer {KEY}"


async def test_the_fake_can_answer_from_the_request(fake, clean_env):
    use(clean_env, fake.env("MCP"))
    fake.reply_with(lambda body: body["messages"][-1]["content"].upper())
    assert await chat(conversation("Echo.", "shout this"), prefix="THINK") == "SHOUT THIS"
    assert fake.pending == 0


async def test_server_prefix_overrides_the_shared_settings(fake, clean_env):
    use(clean_env, {"MCP_LLM_BASE_URL": "http://127.0.0.1:9/v1", "MCP_LLM_MODEL_NAME": "other"})
    use(clean_env, {"MCP_LLM_API_KEY": KEY, **fake.env("CODE")})
    fake.answer("from the code model")
    assert await chat([{"role": "user", "content": "hi"}], prefix="CODE") == "from the code model"
    config = llm_config("code")
    assert config.sources == {
        "BASE_URL": "CODE_LLM_BASE_URL",
        "MODEL_NAME": "CODE_LLM_MODEL_NAME",
        "API_KEY": "CODE_LLM_API_KEY",
    }
    assert llm_config("THINK").model == "other"  # no THINK_* set: the shared values


async def test_nothing_configured_names_the_variables(clean_env):
    with pytest.raises(ToolFailure) as caught:
        await chat([{"role": "user", "content": "hi"}], prefix="GUARD")
    message = str(caught.value)
    assert "GUARD_LLM_BASE_URL (or MCP_LLM_BASE_URL)" in message
    assert "GUARD_LLM_MODEL_NAME (or MCP_LLM_MODEL_NAME)" in message
    status = llm_status("GUARD")
    assert status["backend"] == "none" and len(status["missing"]) == 2


async def test_retries_on_429_and_5xx_honouring_retry_after(fake, clean_env):
    use(clean_env, fake.env("MCP"))
    fake.fail(429, "slow down", retry_after="0")
    fake.fail(503, "overloaded", retry_after="0")
    fake.answer("third time lucky")
    assert await chat([{"role": "user", "content": "hi"}], prefix="CODE") == "third time lucky"
    assert len(fake.requests) == 3


async def test_retry_after_beyond_the_deadline_fails_at_once(fake, clean_env):
    use(clean_env, {**fake.env("MCP"), "MCP_LLM_TIMEOUT": "5"})
    fake.fail(429, "come back in an hour", retry_after="3600")
    with pytest.raises(ToolFailure, match="busy .*HTTP 429.* asked to wait 3600 s"):
        await chat([{"role": "user", "content": "hi"}], prefix="CODE")
    assert len(fake.requests) == 1


async def test_errors_are_clear_and_never_show_the_key(fake, clean_env, caplog):
    caplog.set_level(logging.DEBUG)
    use(clean_env, {**fake.env("MCP"), "MCP_LLM_API_KEY": KEY + "-wrong"})
    with pytest.raises(ToolFailure) as unauthorised:
        await chat([{"role": "user", "content": "hi"}], prefix="THINK")
    assert "HTTP 401" in str(unauthorised.value) and "MCP_LLM_API_KEY" in str(unauthorised.value)

    use(clean_env, {"MCP_LLM_API_KEY": KEY, "MCP_LLM_MODEL_NAME": "no-such-model"})
    with pytest.raises(ToolFailure) as unknown:
        await chat([{"role": "user", "content": "hi"}], prefix="THINK")
    assert "HTTP 404" in str(unknown.value) and "no-such-model" in str(unknown.value)

    use(clean_env, {"MCP_LLM_MODEL_NAME": "fake-coder"})
    fake.fail(400, f"context too long for key {KEY}")  # a server that echoes the key back
    with pytest.raises(ToolFailure) as refused:
        await chat([{"role": "user", "content": "hi"}], prefix="THINK")
    assert "HTTP 400" in str(refused.value) and KEY not in str(refused.value)

    use(clean_env, {"MCP_LLM_BASE_URL": "http://127.0.0.1:9/v1"})  # nothing listens on port 9
    with pytest.raises(ToolFailure, match="Cannot reach the model endpoint 127.0.0.1:9"):
        await chat([{"role": "user", "content": "hi"}], prefix="THINK")
    assert KEY not in caplog.text
    assert KEY not in repr(llm_config("THINK")) and KEY not in str(llm_status("THINK"))


async def test_answers_are_cleaned_and_limits_applied(fake, clean_env):
    use(clean_env, {**fake.env("MCP"), "THINK_LLM_MAX_TOKENS": "50"})
    fake.answer("<think>let me see</think>\n\nThe answer is 4.")
    assert (
        await chat([{"role": "user", "content": "2+2"}], prefix="THINK", max_tokens=1000)
        == "The answer is 4."
    )
    assert fake.requests[0]["max_tokens"] == 50
    fake.answer("A long story that", finish_reason="length")
    assert "cut off at the token limit" in await chat([{"role": "user", "content": "x"}], prefix="THINK")
    fake.answer("")
    with pytest.raises(ToolFailure, match="empty answer"):
        await chat([{"role": "user", "content": "x"}], prefix="THINK")


async def test_status_describes_the_endpoint_without_the_key(fake, clean_env):
    use(clean_env, fake.env("MCP"))
    status = llm_status("CODE")
    assert status["backend"] == "openai-compatible" and status["missing"] == []
    assert "fake-coder" in status["notes"][0] and "127.0.0.1" in status["notes"][0]
    use(clean_env, {"CODE_LLM_TIMEOUT": "soon"})
    assert llm_status("CODE")["notes"] == ["CODE_LLM_TIMEOUT is set to 'soon'; set it to a number."]
    use(clean_env, {"CODE_LLM_TIMEOUT": "30", "MCP_LLM_MAX_TOKENS": "-5"})
    with pytest.raises(
        ToolFailure, match=r"^MCP_LLM_MAX_TOKENS is set to -5; set it to a positive whole number\.$"
    ):
        llm_config("CODE")
    use(clean_env, {**fake.env("CODE"), "CODE_LLM_MAX_TOKENS": "200"})
    assert llm_config("CODE").max_tokens == 200  # its own values all set: the bad shared one is not read


def test_model_line_names_the_model_or_the_missing_variables(clean_env):
    assert model_line("THINK").startswith("No model configured: set THINK_LLM_BASE_URL (or MCP_LLM_BASE_URL)")
    use(clean_env, {"MCP_LLM_BASE_URL": "http://127.0.0.1:9/v1", "THINK_LLM_MODEL_NAME": "thinker"})
    assert model_line("THINK") == "Model: thinker."


def test_conversation_is_system_then_user():
    assert conversation("Be brief.", "Hi?") == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi?"},
    ]
