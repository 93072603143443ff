"""complex_problem_reasoning and get_reasoning_capabilities against a loopback OpenAI-compatible fake."""

import pytest
from gaia_kit_testing import failed, ok
from gaia_kit_testing.compat import REFERENCE, compatibility_problems
from intelligence_think_server.server import server

pytestmark = pytest.mark.anyio


async def test_reference_tools_are_served_compatibly():
    ours = {tool.name: tool.input_schema for tool in await server.list_tools()}
    reference = REFERENCE["intelligence-think-server"]
    assert {t["name"] for t in reference} == set(ours)
    assert not {
        t["name"]: p for t in reference if (p := compatibility_problems(t["inputSchema"], ours[t["name"]]))
    }


async def test_question_goes_to_the_configured_model(fake, call):
    fake.answer("<think>2 apples plus 3</think>Five apples.\nFinal answer: 5")
    out = ok(
        await call(
            "complex_problem_reasoning",
            question="Alice has 2 apples and buys 3 more. How many?",
            original_task="A GAIA arithmetic question",
            reasoning_style="step-by-step",
        )
    )
    assert out == "Five apples.\nFinal answer: 5"
    sent = fake.requests[0]
    assert sent["model"] == "fake-thinker" and sent["temperature"] == 0.3
    assert fake.headers[0]["authorization"] == "Bearer sk-think-secret"
    system, user = sent["messages"]
    assert system["role"] == "system" and "numbered steps" in system["content"]
    assert "A GAIA arithmetic question" in user["content"] and "buys 3 more" in user["content"]


async def test_the_shared_variables_serve_when_think_ones_are_unset(no_llm, call):
    from gaia_kit_testing.fake_openai import FakeOpenAI

    with FakeOpenAI(model="shared", api_key="sk-shared") as shared:
        for name, value in shared.env("MCP").items():
            no_llm.setenv(name, value)
        shared.answer("Final answer: yes")
        assert ok(await call("complex_problem_reasoning", question="Is 7 prime?")) == "Final answer: yes"
        assert shared.requests[0]["model"] == "shared"


async def test_without_a_model_the_error_names_the_variables(no_llm, call):
    message = failed(await call("complex_problem_reasoning", question="Is 7 prime?"))
    assert "THINK_LLM_BASE_URL (or MCP_LLM_BASE_URL)" in message and "THINK_LLM_MODEL_NAME" in message
    assert "No model configured" in ok(await call("get_reasoning_capabilities"))


async def test_bad_inputs_and_endpoint_errors(fake, call):
    assert "empty" in failed(await call("complex_problem_reasoning", question="   "))
    assert failed(await call("complex_problem_reasoning", question="x", temperature=1.5))
    assert failed(await call("complex_problem_reasoning", question="x", reasoning_style="poetic"))
    fake.fail(400, "This model's maximum context length is 8192 tokens")
    message = failed(await call("complex_problem_reasoning", question="x"))
    assert "HTTP 400" in message and "maximum context length" in message and "sk-think-secret" not in message


async def test_capabilities_name_the_model(fake, call):
    out = ok(await call("get_reasoning_capabilities"))
    assert "Model: fake-thinker." in out and "detailed, concise, step-by-step" in out
