"""What a tool call spends on paid backends, and the session budget that can refuse them.

Every paid request (a search API, a hosted reader, E2B, a model) is counted where it is sent:

    check_budget("jina")                                  # refuses at once when the session's budget is spent
    ...send it...
    charge("jina", input_tokens=usage)                    # one call, plus what the backend reported

The counts travel back to the gateway in the result's `_meta` (USAGE_KEY); the gateway prices them,
keeps the session's ledger and tells the next calls which backends are spent (BUDGET_SPENT_KEY), so a
budget holds across every replica and server. Answers replayed from the HTTP cache cost nothing and
are never counted nor refused.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from gaia_contract import budget_spent_message

from gaia_kit.core.calls import current_call
from gaia_kit.core.errors import ToolFailure

COUNTS = ("calls", "input_tokens", "output_tokens", "bytes", "refused")


class BudgetSpent(ToolFailure):
    """The session's budget for a paid backend is spent: the call is refused before anything is sent."""


def check_budget(backend: str) -> None:
    """Raise BudgetSpent when the calling session may not use `backend` any more."""
    for pattern in current_call().spent:
        if pattern == "*":
            why = "its money budget, GAIA_SESSION_BUDGET_USD"
        elif fnmatchcase(backend, pattern):
            why = f"its call budget for {pattern}, GAIA_SESSION_BUDGET_CALLS"
        else:
            continue
        charge(backend, calls=0, refused=1)  # counted, so the operator sees the budget biting
        raise BudgetSpent(budget_spent_message(backend, why))


def charge(backend: str, *, calls: int = 1, **counts: int | None) -> None:
    """Count one paid request (or `calls`) to `backend` on the running call, with the token or byte
    counts the backend reported (input_tokens, output_tokens, bytes; `refused` for a call the budget
    stopped); missing counts are left out."""
    unknown = set(counts) - set(COUNTS)
    if unknown:
        raise ValueError(f"unknown usage counts {sorted(unknown)}; use {', '.join(COUNTS[1:])}")
    call = current_call()
    with call._lock:
        entry = call.usage.setdefault(backend, {})
        if calls or "calls" not in entry:
            entry["calls"] = entry.get("calls", 0) + calls
        for name, value in counts.items():
            if value:
                entry[name] = entry.get(name, 0) + int(value)
