"""The wire contract has one home, gaia_contract: it imports nothing, its readers take it from there, and
no package keeps a copy of its values."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import gaia_contract as contract
import pytest
from gaia_env.errors import Busy
from gaia_env.ownership import Replica, SessionGone
from gaia_train.episode import session as episode_session
from mcp.shared.exceptions import MCPError

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "proxy" / "src", ROOT / "trainer" / "src", *sorted((ROOT / "servers").glob("*/src"))]
# Values only the contract may spell: a copy elsewhere is a second owner that can drift.
OWNED = {
    contract.SESSION_ID_KEY,
    contract.WORKSPACE_KEY,
    contract.SESSION_ENDED,
    contract.RETRY_AFTER,
    contract.BUSY,
    contract.SESSION_GONE,
    contract.GONE_RESTARTED,
    contract.GONE_ELSEWHERE,
    contract.GONE_UNREACHABLE,
    contract.SERVERS_HEADER,
    contract.SERVERS_HEADER.lower(),
    contract.CLIENT_SESSION_HEADER,
    contract.CLIENT_SESSION_HEADER.lower(),
    contract.MCP_SESSION_HEADER.lower(),
}


def test_the_contract_module_imports_nothing() -> None:
    tree = ast.parse(inspect.getsource(contract))
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


def literal_copies(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    negated = {
        -node.operand.value
        for node in ast.walk(tree)
        if isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
    }
    constants = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)}
    return sorted(repr(v) for v in OWNED if v in (negated if isinstance(v, int) else constants))


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.parent.name)
def test_no_package_keeps_a_copy_of_the_contract(source: Path) -> None:
    copies = {str(p.relative_to(ROOT)): found for p in source.rglob("*.py") if (found := literal_copies(p))}
    assert not copies, f"import these from gaia_contract instead of spelling them: {copies}"


def test_the_trainer_reads_the_gateways_busy_answer() -> None:
    error = Busy("Server crowded is busy", 7, "crowded").as_jsonrpc()
    assert error["code"] == contract.BUSY and error["data"][contract.BUSY_SERVER] == "crowded"
    assert episode_session._retry_after(MCPError(error["code"], error["message"], error["data"])) == 7.0


def test_the_trainer_counts_a_gone_session_as_an_environment_fault() -> None:
    gone = SessionGone(contract.GONE_RESTARTED, "gw-a/1", Replica("gw-a"))
    assert gone.code == contract.SESSION_GONE and gone.data[contract.GONE_REASON] == contract.GONE_RESTARTED
    assert gone.code in episode_session._FAULT_CODES


def test_kit_and_gateway_read_and_write_the_same_meta_keys() -> None:
    from gaia_env import gateway, pool
    from gaia_kit.core import session

    assert gateway.SESSION_ID_KEY is contract.SESSION_ID_KEY is session.SESSION_ID_KEY
    assert gateway.WORKSPACE_KEY is contract.WORKSPACE_KEY is session.WORKSPACE_KEY
    assert pool.SESSION_ENDED is contract.SESSION_ENDED
