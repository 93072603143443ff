"""The cost ledger: what each session spent on paid backends, priced, and the budget that stops it.

Servers count what a call sent to a paid backend (gaia_kit.core.usage) and return the counts in the
result's `_meta` (USAGE_KEY). Here they are priced with the price table, added to the session's
ledger and to /metrics, and the next calls of the session carry the list of backends whose budget is
spent (BUDGET_SPENT_KEY), which the servers refuse while free tools go on serving.

Configuration (docs/configuration.md, "Cost ledger and budgets"):
- GAIA_PRICES: a TOML file of `[prices."<backend>"]` tables (`call`, `input_tokens_per_million`,
  `output_tokens_per_million`, `per_mb`, in USD) laid over DEFAULT_PRICES; `*` patterns allowed.
- GAIA_SESSION_BUDGET_USD: the most one session may spend on every paid backend together (unset: no limit).
- GAIA_SESSION_BUDGET_CALLS: `backend=calls,...` (patterns allowed: `model:*=50`), per session.
"""

from __future__ import annotations

import math
import os
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

PRICE_FIELDS = ("call", "input_tokens_per_million", "output_tokens_per_million", "per_mb")

DEFAULT_PRICES: dict[str, dict[str, float]] = {
    # Google Programmable Search: $5 per 1,000 queries past the free ones.
    "google-search": {"call": 0.005},
    # Jina Reader: billed by the tokens it returns.
    "jina": {"input_tokens_per_million": 0.02},
    # Tavily extract: one credit per basic extract.
    "tavily": {"call": 0.008},
    # E2B: a sandbox run of a few seconds.
    "e2b": {"call": 0.0005},
    # Speech to text by an endpoint: priced by the audio sent (16 kHz 16-bit WAV, about 1.9 MB a minute).
    "model:audio": {"per_mb": 0.003},
    # browser-use reports steps, not tokens: one step is one model call with a page in it.
    "model:browseruse": {"call": 0.002},
    # Every other model-backed tool (think, guard, code, image, video): a small hosted model's tokens.
    "model:*": {"input_tokens_per_million": 0.15, "output_tokens_per_million": 0.60},
}


class CostConfigError(ValueError):
    """A price table or budget setting that cannot be read; the message says which and how to fix it."""


@dataclass(frozen=True)
class Prices:
    table: dict[str, dict[str, float]]

    def of(self, backend: str) -> dict[str, float]:
        """The prices of `backend`: its own entry, else the most specific pattern that matches it, else free."""
        if backend in self.table:
            return self.table[backend]
        matches = [p for p in self.table if fnmatchcase(backend, p)]
        return self.table[max(matches, key=len)] if matches else {}

    def usd(self, backend: str, use: dict[str, int]) -> float:
        price = self.of(backend)
        return (
            use.get("calls", 0) * price.get("call", 0.0)
            + use.get("input_tokens", 0) * price.get("input_tokens_per_million", 0.0) / 1e6
            + use.get("output_tokens", 0) * price.get("output_tokens_per_million", 0.0) / 1e6
            + use.get("bytes", 0) * price.get("per_mb", 0.0) / 2**20
        )


@dataclass(frozen=True)
class Budget:
    usd: float | None = None
    calls: dict[str, int] = field(default_factory=dict)
    """Most calls per backend (or `*`-pattern, counted over every backend it matches) in one session."""


@dataclass(frozen=True)
class CostPolicy:
    prices: Prices = field(default_factory=lambda: Prices(dict(DEFAULT_PRICES)))
    budget: Budget = field(default_factory=Budget)

    @classmethod
    def from_env(cls) -> CostPolicy:
        table = dict(DEFAULT_PRICES)
        path = os.environ.get("GAIA_PRICES", "").strip()
        if path:
            table.update(_read_prices(Path(path)))
        return cls(Prices(table), Budget(_budget_usd(), _budget_calls()))


def _read_prices(path: Path) -> dict[str, dict[str, float]]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CostConfigError(
            f"GAIA_PRICES={path} cannot be read ({exc}); point it at a TOML price table."
        ) from None
    prices = data.get("prices")
    if not isinstance(prices, dict):
        raise CostConfigError(
            f'GAIA_PRICES={path} has no [prices."<backend>"] tables; see docs/configuration.md.'
        )
    table: dict[str, dict[str, float]] = {}
    for backend, entry in prices.items():
        if not isinstance(entry, dict) or set(entry) - set(PRICE_FIELDS):
            raise CostConfigError(
                f"GAIA_PRICES={path}: prices.{backend} may only set {', '.join(PRICE_FIELDS)} (USD)."
            )
        if not all(isinstance(v, int | float) and v >= 0 for v in entry.values()):
            raise CostConfigError(f"GAIA_PRICES={path}: prices.{backend} must be numbers of USD, 0 or more.")
        table[backend] = {k: float(v) for k, v in entry.items()}
    return table


def _budget_usd() -> float | None:
    raw = os.environ.get("GAIA_SESSION_BUDGET_USD", "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value <= 0:
        raise CostConfigError(
            f"GAIA_SESSION_BUDGET_USD={raw!r} is not a positive number of USD; fix or unset it."
        )
    return value


def _budget_calls() -> dict[str, int]:
    raw = os.environ.get("GAIA_SESSION_BUDGET_CALLS", "").strip()
    calls: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        backend, _, count = item.partition("=")
        if not backend.strip() or not count.strip().isdigit():
            raise CostConfigError(
                f"GAIA_SESSION_BUDGET_CALLS has {item!r}; write backend=calls pairs, e.g. google-search=20,model:*=50."
            )
        calls[backend.strip()] = int(count)
    return calls


@dataclass
class Use:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    bytes: int = 0
    refused: int = 0
    """Calls refused because the budget was spent (nothing was sent)."""
    usd: float = 0.0

    def add(self, counts: dict[str, int], usd: float) -> None:
        for name in ("calls", "input_tokens", "output_tokens", "bytes", "refused"):
            setattr(self, name, getattr(self, name) + int(counts.get(name, 0)))
        self.usd += usd

    def as_dict(self) -> dict[str, Any]:
        found = {k: v for k, v in vars(self).items() if v and k != "usd"}
        return {**found, "usd": round(self.usd, 6)}


@dataclass
class Ledger:
    """One session's spending: per backend, per tool, and what the benchmark-copy guard withheld."""

    backends: dict[str, Use] = field(default_factory=dict)
    tools: dict[str, Use] = field(default_factory=dict)
    withheld: Counter[str] = field(default_factory=Counter)

    @property
    def usd(self) -> float:
        return sum(use.usd for use in self.backends.values())

    def add(self, tool: str, usage: dict[str, dict[str, int]], prices: Prices) -> dict[str, Any]:
        """Price one call's usage into the ledger; what this call cost, by backend."""
        call: dict[str, Any] = {}
        for backend, counts in usage.items():
            usd = prices.usd(backend, counts)
            self.backends.setdefault(backend, Use()).add(counts, usd)
            self.tools.setdefault(tool, Use()).add(counts, usd)
            priced = Use()
            priced.add(counts, usd)
            call[backend] = priced.as_dict()
        return call

    def spent(self, budget: Budget) -> list[str]:
        """The backends (names or patterns) this session may not call any more; `*` for all of them."""
        if budget.usd is not None and self.usd >= budget.usd:
            return ["*"]
        return [
            pattern
            for pattern, most in budget.calls.items()
            if sum(use.calls for name, use in self.backends.items() if fnmatchcase(name, pattern)) >= most
        ]

    def report(self) -> dict[str, Any]:
        return {
            "usd": round(self.usd, 6),
            "paid_calls": sum(use.calls for use in self.backends.values()),
            "backends": {name: use.as_dict() for name, use in sorted(self.backends.items())},
            "tools": {name: use.as_dict() for name, use in sorted(self.tools.items())},
            "withheld": dict(self.withheld),
        }

    def __bool__(self) -> bool:
        return bool(self.backends or self.withheld)
