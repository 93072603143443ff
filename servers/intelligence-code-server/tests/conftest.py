import pytest
from gaia_kit.fake_openai import FakeOpenAI
from gaia_kit.testing import session_call
from intelligence_code_server.server import server

LLM_VARIABLES = [
    f"{p}_LLM_{s}"
    for p in ("MCP", "CODE")
    for s in ("BASE_URL", "MODEL_NAME", "API_KEY", "TIMEOUT", "MAX_TOKENS")
]


@pytest.fixture
def no_llm(monkeypatch):
    for name in LLM_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def fake(no_llm):
    """A loopback OpenAI-compatible endpoint, configured through the CODE_LLM_* variables."""
    with FakeOpenAI(model="fake-coder", api_key="sk-code-secret") as server:
        for name, value in server.env("CODE").items():
            no_llm.setenv(name, value)
        yield server


@pytest.fixture
async def call(kit_env):
    async with session_call(server, kit_env.workspace) as invoke:
        yield invoke
