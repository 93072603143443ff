"""guarding_reasoning_process and get_guarding_capabilities against a loopback OpenAI-compatible fake."""

import pytest
from gaia_kit_testing import failed, ok
from gaia_kit_testing.compat import REFERENCE, compatibility_problems
from intelligence_guard_server.server import server

pytestmark = pytest.mark.anyio


async def test_reference_tools_are_served_compatibly():
    ours = {tool.name: tool.input_schema for tool in await server.list_tools()}
    reference = REFERENCE["intelligence-guard-server"]
    assert {t["name"] for t in reference} == set(ours)
    assert not {
        t["name"]: p for t in reference if (p := compatibility_problems(t["inputSchema"], ours[t["name"]]))
    }


async def test_reasoning_and_task_go_to_the_configured_model(fake, call):
    fake.answer("Step 2 converts miles to km twice. Next: recompute with one conversion.")
    out = ok(
        await call(
            "guarding_reasoning_process",
            question="1. The trip is 10 miles. 2. 10 miles = 16 km = 25.7 km. Is this right?",
            original_task="How many km is the trip? Answer in km.",
            guarding_style="concise",
        )
    )
    assert out.startswith("Step 2 converts miles to km twice")
    sent = fake.requests[0]
    assert sent["model"] == "fake-guarder" and sent["temperature"] == 0.1
    assert fake.headers[0]["authorization"] == "Bearer sk-guard-secret"
    system, user = sent["messages"]
    assert "Do not solve the task from scratch" in system["content"] and "briefly" in system["content"]
    assert "Answer in km." in user["content"] and "16 km = 25.7 km" in user["content"]


async def test_missing_task_is_said_to_the_model(fake, call):
    fake.answer("Sound.")
    assert ok(await call("guarding_reasoning_process", question="2+2=4, so the answer is 4?")) == "Sound."
    assert "not given" in fake.requests[0]["messages"][1]["content"]


async def test_without_a_model_the_error_names_the_variables(no_llm, call):
    message = failed(await call("guarding_reasoning_process", question="Is step 2 right?"))
    assert "GUARD_LLM_BASE_URL (or MCP_LLM_BASE_URL)" in message and "GUARD_LLM_MODEL_NAME" in message


async def test_retries_then_answers(fake, call):
    fake.fail(503, "overloaded", retry_after="0")
    fake.answer("Looks sound.")
    assert ok(await call("guarding_reasoning_process", question="Check this.")) == "Looks sound."
    assert len(fake.requests) == 2


async def test_capabilities_and_bad_inputs(fake, call):
    assert "Model: fake-guarder." in ok(await call("get_guarding_capabilities"))
    assert "empty" in failed(await call("guarding_reasoning_process", question=""))
    assert failed(await call("guarding_reasoning_process", question="x", temperature=-0.1))
