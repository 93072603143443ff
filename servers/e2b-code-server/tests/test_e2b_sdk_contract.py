"""The E2B backend against the SDK's interface: E2B cannot be faked faithfully, so check what we call exists."""

import inspect

import e2b_code_interpreter as sdk
import pytest
from e2b.connection_config import ApiParams
from e2b.sandbox_sync.filesystem.filesystem import Filesystem
from e2b_code_server import server
from e2b_code_server.backends import E2BBackend
from gaia_kit import Session, ToolFailure

pytestmark = pytest.mark.anyio


def parameters(function) -> set[str]:
    return set(inspect.signature(function).parameters)


def test_the_sdk_methods_we_call_take_the_arguments_we_pass():
    assert {"timeout"} <= parameters(sdk.Sandbox.create) and "api_key" in ApiParams.__annotations__
    assert {"code", "language", "timeout"} <= parameters(sdk.Sandbox.run_code)
    assert {"timeout"} <= parameters(sdk.Sandbox.set_timeout)
    assert inspect.isfunction(sdk.Sandbox.kill)
    assert isinstance(inspect.getattr_static(sdk.Sandbox, "files"), property)
    assert {"path", "data"} <= parameters(Filesystem.write)
    assert "sandbox_id" in dir(sdk.Sandbox)
    assert {"results", "logs", "error"} <= parameters(sdk.Execution.__init__)
    assert {"stdout", "stderr"} <= parameters(sdk.Logs.__init__)
    assert {"name", "value", "traceback"} <= parameters(sdk.ExecutionError.__init__)
    assert "text" in dir(sdk.Result)


class RecordingSandbox:
    """Stands in for sdk.Sandbox and answers with the SDK's own result objects."""

    sandbox_id = "e2b-box-1"

    def __init__(self):
        self.calls = []

    def run_code(self, code, language=None, timeout=None):
        self.calls.append(("run_code", code, language, timeout))
        return sdk.Execution(
            logs=sdk.Logs(stdout=["6\n"], stderr=[]),
            error=sdk.ExecutionError(
                name="ValueError", value="bad", traceback="Traceback ...\nValueError: bad"
            ),
        )

    def set_timeout(self, timeout):
        self.calls.append(("set_timeout", timeout))

    def kill(self):
        self.calls.append(("kill",))
        return True


async def test_backend_reads_sdk_results_and_kills_at_session_end(tmp_path, monkeypatch):
    box = RecordingSandbox()
    monkeypatch.setattr(sdk.Sandbox, "create", classmethod(lambda cls, **opts: box))
    backend = E2BBackend("e2b_test_key", idle_s=300, wall_s=20)
    session = Session(id="s1", workspace=tmp_path)
    output = await backend.run(session, "print(6)", "python")
    assert backend.sandbox_id(session) == "e2b-box-1"
    assert output.stdout == "6\n" and output.error == "ValueError: bad" and "Traceback" in output.stderr
    assert box.calls[:2] == [("run_code", "print(6)", "python", 20), ("set_timeout", 300)]
    await backend.release("s1")
    assert box.calls[-1] == ("kill",) and backend.sandbox_id(session) == ""


async def test_the_key_and_limits_come_from_the_environment(tmp_path, monkeypatch):
    box = RecordingSandbox()
    created = []
    monkeypatch.setattr(sdk.Sandbox, "create", classmethod(lambda cls, **opts: created.append(opts) or box))
    monkeypatch.setenv("E2B_API_KEY", "e2b_env_key")
    monkeypatch.setenv("E2B_IDLE_TIMEOUT", "120")
    monkeypatch.setenv("GAIA_SANDBOX_WALL_S", "7")
    backend = server.backend.__wrapped__()  # a fresh one: the process's own stays the local sandbox
    await backend.run(Session(id="s1", workspace=tmp_path), "print(6)", "python")
    assert created == [{"timeout": 120, "api_key": "e2b_env_key"}]
    assert box.calls[:2] == [("run_code", "print(6)", "python", 7), ("set_timeout", 120)]


def test_a_bad_idle_timeout_is_one_sentence(monkeypatch):
    monkeypatch.setenv("E2B_API_KEY", "e2b_env_key")
    monkeypatch.setenv("E2B_IDLE_TIMEOUT", "-5")
    with pytest.raises(ToolFailure, match=r"E2B_IDLE_TIMEOUT is set to -5; set it to a positive number\."):
        server.backend.__wrapped__()
