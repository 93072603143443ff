"""The gateway-server wire contract lives in one dependency-free module, and its readers agree on it."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from gaia_kit.core import contract
from gaia_train.episode.session import RETRY_AFTER

TRAINER_BUSY_TEST = Path(__file__).resolve().parents[1] / "trainer" / "tests" / "test_trainer_busy.py"


def test_the_contract_module_imports_nothing() -> None:
    tree = ast.parse(inspect.getsource(contract))
    assert not [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


def test_the_trainer_reads_busy_answers_as_the_gateway_writes_them() -> None:
    assert RETRY_AFTER == contract.RETRY_AFTER
    assert f"BUSY = {contract.BUSY}" in TRAINER_BUSY_TEST.read_text()  # the code its fake server answers with


def test_kit_and_gateway_share_the_session_keys() -> None:
    from gaia_env import gateway, pool
    from gaia_kit.core import session

    assert gateway.SESSION_ID_KEY is contract.SESSION_ID_KEY is session.SESSION_ID_KEY
    assert pool.SESSION_ENDED is contract.SESSION_ENDED
