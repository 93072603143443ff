"""generate_python_code against a loopback OpenAI-compatible fake, with the code run in the sandbox."""

import pytest
from gaia_kit.core.settings import forget_settings
from gaia_kit_testing import failed, ok
from gaia_kit_testing.compat import REFERENCE, compatibility_problems
from intelligence_code_server.server import server

pytestmark = pytest.mark.anyio


async def test_reference_tools_are_served_compatibly():
    ours = {tool.name: tool.input_schema for tool in await server.list_tools()}
    reference = REFERENCE["intelligence-code-server"]
    assert {t["name"] for t in reference} == set(ours)
    assert not {
        t["name"]: p for t in reference if (p := compatibility_problems(t["inputSchema"], ours[t["name"]]))
    }


async def test_code_is_generated_run_and_saved(fake, call, kit_env):
    (kit_env.workspace / "data.txt").write_text("3 4 5\n")
    fake.answer("Here it is:\n```python\nprint(sum(map(int, open('data.txt').read().split())))\n```")
    out = ok(
        await call(
            "generate_python_code",
            task_description="Sum the numbers in data.txt",
            requirements="Print only the sum",
            save_to_file_path="out/sum.py",
        )
    )
    assert out.startswith("```python\nprint(sum(") and "## Output\n\n12" in out
    assert (kit_env.workspace / "out" / "sum.py").read_text().startswith("print(sum(")
    sent = fake.requests[0]
    assert sent["model"] == "fake-coder" and fake.headers[0]["authorization"] == "Bearer sk-code-secret"
    assert (
        "Sum the numbers in data.txt" in sent["messages"][1]["content"]
        and "Print only the sum" in sent["messages"][1]["content"]
    )


async def test_broken_code_is_repaired_with_the_error(fake, call):
    fake.answer("```python\nprint(undefined_total)\n```")
    fake.answer("```python\nprint(6 * 7)\n```")
    out = ok(await call("generate_python_code", task_description="Print 6 times 7"))
    assert "print(6 * 7)" in out and "repaired 1 time(s)" in out and "42" in out
    repair = fake.requests[1]["messages"]
    assert repair[2]["role"] == "assistant" and "undefined_total" in repair[2]["content"]
    assert "NameError" in repair[3]["content"]


async def test_repairs_are_bounded(fake, call):
    for _ in range(2):
        fake.answer("```python\nraise SystemExit(3)\n```")
    out = ok(await call("generate_python_code", task_description="Fail", max_repairs=1))
    assert "still fails after 1 repair(s)" in out and len(fake.requests) == 2


async def test_without_execution_and_without_a_model(fake, call, no_llm):
    fake.answer("```python\nimport os\nos.remove('x')\n```")
    out = ok(await call("generate_python_code", task_description="Remove x", execute=False))
    assert "os.remove('x')" in out and "## Output" not in out
    no_llm.delenv("CODE_LLM_BASE_URL")
    forget_settings()  # settings are read once per process: read them again
    assert "CODE_LLM_BASE_URL (or MCP_LLM_BASE_URL)" in failed(
        await call("generate_python_code", task_description="x")
    )
    assert "empty" in failed(await call("generate_python_code", task_description=" "))
    assert "outside the allowed" in failed(
        await call("generate_python_code", task_description="x", save_to_file_path="/etc/x.py")
    )
