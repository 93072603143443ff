"""Paid requests are counted on the call that sends them, refused once the session's budget is spent,
and free when the record/replay cache answers them."""

from __future__ import annotations

from pathlib import Path

import pytest
from gaia_kit.core.calls import Call, enter, leave
from gaia_kit.core.hints import hints
from gaia_kit.core.usage import BudgetSpent, charge, check_budget
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.http import HttpClient
from gaia_kit_testing.loopback import LoopbackServer
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

pytestmark = pytest.mark.anyio
SEARCH = hints("Search", read_only=True, open_world=True)


@pytest.fixture
def api():
    sent: list[str] = []

    def answer(request):
        sent.append(str(request.url))
        return JSONResponse({"items": []})

    with LoopbackServer(Starlette(routes=[Route("/search", answer)])) as server:
        server.sent = sent
        yield server


def in_call(**fields) -> tuple[Call, object]:
    call = Call("search_google", SEARCH, **fields)
    return call, enter(call)


async def test_a_sent_request_is_counted_and_a_replayed_one_is_free(api, tmp_path: Path):
    settings = HttpSettings(allow="127.0.0.1", cache_mode="read-write", cache_path=tmp_path / "c.sqlite")
    async with HttpClient(settings) as http:
        call, token = in_call()
        try:
            await http.get(api.url("/search?q=a"), paid="google-search")
            await http.get(api.url("/search?q=a"), paid="google-search")  # answered by the cache
        finally:
            leave(token)
    assert call.usage == {"google-search": {"calls": 1}}
    assert len(api.sent) == 1


async def test_a_spent_budget_refuses_before_sending_and_counts_the_refusal(api, tmp_path: Path):
    settings = HttpSettings(allow="127.0.0.1", cache_mode="off", cache_path=tmp_path / "c.sqlite")
    async with HttpClient(settings) as http:
        call, token = in_call(spent=("google-*",))
        try:
            with pytest.raises(
                BudgetSpent, match="budget for google-search is spent .*GAIA_SESSION_BUDGET_CALLS"
            ):
                await http.get(api.url("/search?q=b"), paid="google-search")
            await http.get(api.url("/search?q=b"), paid="jina")  # another backend is not spent
        finally:
            leave(token)
    assert call.usage == {"google-search": {"calls": 0, "refused": 1}, "jina": {"calls": 1}}
    assert len(api.sent) == 1


def test_the_money_budget_refuses_every_paid_backend_and_counts_add_up():
    call, token = in_call(spent=("*",))
    try:
        with pytest.raises(BudgetSpent, match="its money budget, GAIA_SESSION_BUDGET_USD"):
            check_budget("model:think")
        call.spent = ()
        charge("model:think", input_tokens=120, output_tokens=30)
        charge("model:think", input_tokens=80, output_tokens=None)
        with pytest.raises(ValueError, match="unknown usage counts"):
            charge("model:think", tokens=5)
    finally:
        leave(token)
    assert call.usage["model:think"] == {"calls": 2, "input_tokens": 200, "output_tokens": 30, "refused": 1}
