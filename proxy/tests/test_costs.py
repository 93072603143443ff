"""The cost ledger's pricing and budgets, and the sentences that refuse bad settings."""

from __future__ import annotations

import pytest
from gaia_env.costs import Budget, CostConfigError, CostPolicy, Ledger


def test_prices_take_the_exact_entry_then_the_most_specific_pattern(monkeypatch, tmp_path):
    (tmp_path / "p.toml").write_text('[prices."model:think"]\ncall = 0.01\n[prices."jina"]\ncall = 0.001\n')
    monkeypatch.setenv("GAIA_PRICES", str(tmp_path / "p.toml"))
    prices = CostPolicy.from_env().prices
    assert prices.usd("model:think", {"calls": 2, "output_tokens": 10**6}) == pytest.approx(0.02)
    # Other models keep the default token prices; an unknown backend is free.
    assert prices.usd("model:image", {"input_tokens": 10**6, "output_tokens": 10**6}) == pytest.approx(0.75)
    assert prices.usd("jina", {"calls": 1, "input_tokens": 10**6}) == pytest.approx(0.001)
    assert prices.usd("something-new", {"calls": 5}) == 0.0


def test_a_ledger_spends_per_backend_and_tool_and_knows_when_a_budget_is_spent():
    policy = CostPolicy()
    ledger = Ledger()
    call = ledger.add("search_google", {"google-search": {"calls": 1}}, policy.prices)
    assert call == {"google-search": {"calls": 1, "usd": 0.005}}
    ledger.add(
        "complex_problem_reasoning", {"model:think": {"calls": 1, "output_tokens": 1000}}, policy.prices
    )
    report = ledger.report()
    assert report["paid_calls"] == 2 and report["usd"] == pytest.approx(0.005 + 0.0006)
    assert report["tools"]["complex_problem_reasoning"] == {"calls": 1, "output_tokens": 1000, "usd": 0.0006}
    assert ledger.spent(Budget(calls={"model:*": 1, "google-search": 5})) == ["model:*"]
    assert ledger.spent(Budget(usd=0.005)) == ["*"]
    assert ledger.spent(Budget(usd=1.0)) == []


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("GAIA_SESSION_BUDGET_USD", "-3", "GAIA_SESSION_BUDGET_USD='-3' is not a positive number of USD"),
        ("GAIA_SESSION_BUDGET_CALLS", "google-search:5", "write backend=calls pairs"),
        ("GAIA_PRICES", "/nonexistent/prices.toml", "GAIA_PRICES=/nonexistent/prices.toml cannot be read"),
    ],
)
def test_bad_settings_are_refused_in_one_sentence(monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    with pytest.raises(CostConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        CostPolicy.from_env()


def test_a_price_table_with_an_unknown_field_is_refused(monkeypatch, tmp_path):
    (tmp_path / "p.toml").write_text('[prices."jina"]\nper_token = 1\n')
    monkeypatch.setenv("GAIA_PRICES", str(tmp_path / "p.toml"))
    with pytest.raises(CostConfigError, match="prices.jina may only set call, input_tokens_per_million"):
        CostPolicy.from_env()
