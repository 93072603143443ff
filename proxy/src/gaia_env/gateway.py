"""The gateway's core: pools for every server, the catalog, sessions, metrics.

Transport-free: the MCP front and the CLI both drive it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gaia_contract import (
    AUTH_TOKEN_ENV,
    BUDGET_SPENT_KEY,
    BUSY,
    COST_KEY,
    SESSION_ID_KEY,
    TASK_KEY,
    USAGE_KEY,
    WITHHELD_KEY,
    WORKSPACE_KEY,
)
from gaia_kit.core.callbacks import SessionEndHandler, call_each
from jsonschema import validators
from jsonschema.exceptions import SchemaError, ValidationError

from . import catalog
from .capacity import ReplicaPlan, available_cores, format_plan, replica_plan
from .confine import CONFINE_ENV, Confinement
from .costs import CostPolicy
from .errors import GatewayError, SelectionError, UnknownTool
from .metrics import Metrics
from .ownership import Replica, SessionGone, SessionOwners
from .pool import PoolError, ServerPool
from .process import Progress
from .registry import ServerSpec
from .replica import PoolState
from .sessions import EPHEMERAL_PREFIX, SessionLimits, SessionRefused, SessionState, SessionStore
from .supervisor import start_slots

logger = logging.getLogger("gaia_env.gateway")

__all__ = ["Gateway", "GatewayConfig", "SelectionError", "UnknownTool"]

USAGE_COUNTS = frozenset({"calls", "input_tokens", "output_tokens", "bytes", "refused"})
MAX_TASK_CHARS = 20_000
"""A task question longer than this is cut: the guard compares phrases, a book adds nothing."""

# Variables a server must not inherit from the gateway.
PRIVATE_ENV = {AUTH_TOKEN_ENV}


@dataclass(frozen=True)
class GatewayConfig:
    workspace_root: Path
    dataset_dir: Path
    session_ttl: float = 1800.0
    startup_timeout: float = 90.0
    session_limits: SessionLimits = SessionLimits()
    replica: Replica = field(default_factory=Replica.from_env)
    owners_url: str = ""
    """The Redis where replicas record which one owns each session (ownership.py); empty: one gateway."""
    own_root: bool = False
    """Serving: hold the workspace root alone and remove what an earlier run left in it."""
    costs: CostPolicy = field(default_factory=CostPolicy.from_env)
    """Prices of the paid backends and the per-session budget (costs.py)."""


class Gateway:
    def __init__(self, specs: dict[str, ServerSpec], config: GatewayConfig, all_ids: list[str] | None = None):
        self.config = config
        self.metrics = Metrics()
        self.known_ids = sorted(set(all_ids or specs) | set(specs))
        self.cores = available_cores()
        env = _server_env(config)
        self.confinement = Confinement.from_env(env)
        """None when GAIA_SERVER_CONFINE=0; else how every server process is confined (confine.py)."""
        env[CONFINE_ENV] = "1" if self.confinement else "0"  # what each ServerProcess obeys
        self.plans: dict[str, ReplicaPlan] = {
            sid: replica_plan(spec, self.cores) for sid, spec in specs.items()
        }
        starts = start_slots(self.cores)
        self.pools = {
            sid: ServerPool(
                spec, {**env, **spec.env}, on_restart=self._count_restart, plan=self.plans[sid], starts=starts
            )
            for sid, spec in specs.items()
        }
        self.sessions = SessionStore(
            config.workspace_root,
            config.session_ttl,
            on_end=self._end_everywhere,
            limits=config.session_limits,
            on_refuse=lambda reason: self.metrics.sessions_refused.labels(reason).inc(),
            own_root=config.own_root,
            hand_over=self.confinement.hand_over if self.confinement else None,
        )
        if self.confinement:
            self.confinement.prepare_host(env, own_root=config.own_root)
        self.server_uid = self.confinement.check(env) if self.confinement else os.geteuid()
        """The uid servers run as (checked by starting one confined Python)."""
        self.owners = SessionOwners(config.replica, config.owners_url, config.session_ttl)
        self._closing = False
        limits = config.session_limits
        self.metrics.watch_sessions(
            self.sessions.__len__, self.sessions.free_disk_bytes, limits.max_sessions, limits.min_free_disk_mb
        )
        self.session_end_listeners: list[SessionEndHandler] = []
        """Called with each ended session's key (the front ends the MCP transport of its own)."""
        self.started_at = time.time()
        self._listings: dict[tuple[str, ...], catalog.Listing] = {}
        self._validators: dict[tuple[str, str, int], Any] = {}
        self._reaper: asyncio.Task[None] | None = None

    def plan_text(self) -> str:
        return format_plan(self.plans, self.cores)

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        for pool in self.pools.values():
            pool.start()
        self._reaper = asyncio.create_task(self.sessions.reap_forever(), name="session-reaper")
        self.owners.keep_alive(self.sessions.keys)
        await asyncio.gather(*(p.wait_started(self.config.startup_timeout) for p in self.pools.values()))

    async def close(self) -> None:
        if self._reaper:
            self._reaper.cancel()
        await asyncio.gather(*(p.close() for p in self.pools.values()), return_exceptions=True)
        if self.confinement:
            self.confinement.forget_private_base()
        # The owner records stay: a session of this run that comes back must hear it is gone.
        self._closing = True
        await self.sessions.close()
        await self.owners.close()

    @property
    def ready(self) -> bool:
        return all(p.state is PoolState.READY for p in self.pools.values())

    def status(self) -> dict[str, Any]:
        return {
            "ready": self.ready,
            "replica": str(self.config.replica),
            "uptime_s": round(time.time() - self.started_at, 1),
            "sessions": len(self.sessions),
            "session_limits": self.sessions.describe(),
            "servers": {sid: pool.describe() for sid, pool in self.pools.items()},
        }

    # -- selection and catalog -----------------------------------------------------------------

    def select(self, requested: list[str] | None) -> tuple[str, ...]:
        if not requested:
            return tuple(self.pools)
        unknown = [sid for sid in requested if sid not in self.known_ids]
        if unknown:
            raise SelectionError(
                f"Unknown server id(s): {', '.join(unknown)}. Valid ids: {', '.join(self.known_ids)}."
            )
        off = [sid for sid in requested if sid not in self.pools]
        if off:
            raise SelectionError(
                f"Server(s) {', '.join(off)} are not running in this gateway. Running: {', '.join(self.pools)}."
            )
        return tuple(dict.fromkeys(requested))

    def listing(self, selection: tuple[str, ...]) -> catalog.Listing:
        """The tools of a selection, built once per catalog version and shared by every front."""
        version = tuple(self.pools[sid].tools_version for sid in selection)
        cached = self._listings.get(selection)
        if cached is None or cached.version != version:
            cached = catalog.Listing.build(version, {sid: self.pools[sid].tools for sid in selection})
            self._listings[selection] = cached
        return cached

    def list_tools(self, selection: tuple[str, ...]) -> list[dict[str, Any]]:
        return self.listing(selection).tools

    def route(self, name: str, selection: tuple[str, ...]) -> catalog.ToolRoute:
        names = self.listing(selection).routes
        route = names.get(name) or catalog.resolve(
            name, {sid: [t["name"] for t in self.pools[sid].tools] for sid in selection}
        )
        if route is not None:
            return route
        offering = [sid for sid in selection if any(t["name"] == name for t in self.pools[sid].tools)]
        if len(offering) > 1:
            choices = " or ".join(catalog.qualified(sid, name) for sid in offering)
            raise UnknownTool(
                f"{name} is offered by several servers ({', '.join(offering)}): call {choices}, "
                "or select one server with the MCP_SERVERS header."
            )
        server, sep, _ = name.partition(catalog.SEPARATOR)
        if sep and server in selection and self.pools[server].state is not PoolState.READY:
            raise UnknownTool(f"Server {server} is unavailable ({self.pools[server].state}); retry shortly.")
        down = [sid for sid in selection if not self.pools[sid].tools]
        hint = f" Server(s) {', '.join(down)} are not up yet, so their tools are not listed." if down else ""
        raise UnknownTool(f"Unknown tool: {name}. Call tools/list for the available tools.{hint}")

    def input_schema(self, route: catalog.ToolRoute) -> dict[str, Any] | None:
        for tool in self.pools[route.server].tools:
            if tool["name"] == route.tool:
                return tool.get("inputSchema")
        return None

    def invalid_arguments(self, route: catalog.ToolRoute, arguments: dict[str, Any]) -> str | None:
        """One sentence on what is wrong with a call's arguments (wrong type, missing, unknown), or None."""
        key = (route.server, route.tool, self.pools[route.server].tools_version)
        validator = self._validators.get(key)
        if validator is None:
            schema = _closed(self.input_schema(route) or {"type": "object"})
            cls = validators.validator_for(schema)
            try:
                cls.check_schema(schema)
            except SchemaError:
                return None  # the server's own validation stays in charge
            validator = self._validators[key] = cls(schema)
        error = next(iter(sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))), None)
        return None if error is None else _describe_invalid(route.tool, error, validator.schema)

    # -- calls ---------------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        selection: tuple[str, ...],
        session_key: str | None,
        on_progress: Progress | None = None,
        client: str = "",
        meta: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Run one tool call; invalid arguments, tool and pool failures come back as an isError result
        (the model can correct those); an unknown tool or server is a GatewayError.

        `on_progress` receives the server's progress notifications; cancelling the awaiting task
        cancels the call in the server (notifications/cancelled). `client` (selection.client_of) is
        who asks: a new session counts against its per-client limit. `meta` is the client's `_meta`: a task
        in it (TASK_KEY) is kept on the session and forwarded with its calls, for the benchmark-copy guard."""
        route = self.route(name, selection)
        arguments = arguments or {}
        if problem := self.invalid_arguments(route, arguments):
            self.metrics.calls.labels(route.server, route.tool, "invalid_arguments").inc()
            return {"content": [{"type": "text", "text": problem}], "isError": True}
        pool = self.pools[route.server]
        started = time.perf_counter()
        outcome = "ok"
        self.metrics.in_flight.labels(route.server).inc()
        try:
            if session_key is not None and not self.sessions.holds(session_key):
                await self.owners.claim(session_key)
            async with self.sessions.use(session_key, route.server, client) as session:
                forwarded = self._forwarded_meta(session, meta)
                params = {"name": route.tool, "arguments": arguments, "_meta": forwarded}
                result = await pool.call("tools/call", params, session.key, on_progress)
                self._account(route, session, result)
            if result.get("isError"):
                outcome = "tool_error"
            return result
        except (PoolError, SessionRefused) as exc:
            outcome = "gateway_error"
            return {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        except SessionGone:
            outcome = "session_gone"
            raise
        except GatewayError as exc:  # refused: busy (the gateway's or the server's own), or a server's error
            outcome = "busy" if exc.code == BUSY else "gateway_error"
            raise
        except asyncio.CancelledError:  # the client cancelled or went away; the server was told
            outcome = "cancelled"
            raise
        finally:
            elapsed = time.perf_counter() - started
            self.metrics.in_flight.labels(route.server).dec()
            self.metrics.calls.labels(route.server, route.tool, outcome).inc()
            self.metrics.latency.labels(route.server, route.tool).observe(elapsed)
            logger.info(
                "tool call",
                extra={
                    "server": route.server,
                    "tool": route.tool,
                    "session": session_key,
                    "outcome": outcome,
                    "duration_ms": round(elapsed * 1000, 1),
                },
            )

    def _forwarded_meta(self, session: SessionState, client_meta: dict[str, Any] | None) -> dict[str, Any]:
        """The `_meta` a server gets: the session and its workspace, the task it serves, spent budgets."""
        task = (client_meta or {}).get(TASK_KEY)
        if isinstance(task, dict) and isinstance(task.get("question"), str):
            session.task = {"question": task["question"][:MAX_TASK_CHARS]}
        forwarded: dict[str, Any] = {SESSION_ID_KEY: session.key, WORKSPACE_KEY: str(session.workspace)}
        if session.task is not None:
            forwarded[TASK_KEY] = session.task
        if spent := session.ledger.spent(self.config.costs.budget):
            forwarded[BUDGET_SPENT_KEY] = spent
        return forwarded

    def _account(self, route: catalog.ToolRoute, session: SessionState, result: dict[str, Any]) -> None:
        """Price what the call spent into the session's ledger and /metrics, count what was withheld,
        and tell the client both in the result's `_meta` (COST_KEY)."""
        meta = result.get("_meta")
        if not isinstance(meta, dict):
            meta = {}
        usage = _usage(meta.pop(USAGE_KEY, None))
        withheld = meta.get(WITHHELD_KEY)
        for item in withheld if isinstance(withheld, list) else []:
            reason = str(item.get("reason", "unknown")) if isinstance(item, dict) else "unknown"
            session.ledger.withheld[reason] += 1
            self.metrics.withheld.labels(route.server, route.tool, reason).inc()
            logger.warning(
                "withheld",
                extra={"server": route.server, "tool": route.tool, "session": session.key, "withheld": item},
            )
        if not usage and not session.ledger:
            return
        call = session.ledger.add(route.tool, usage, self.config.costs.prices)
        for backend, counts in usage.items():
            self._count_usage(backend, counts, call[backend]["usd"])
        meta[COST_KEY] = {
            "usd": round(sum(c["usd"] for c in call.values()), 6),
            "backends": call,
            "session": session.ledger.report(),
        }
        result["_meta"] = meta

    def _count_usage(self, backend: str, counts: dict[str, int], usd: float) -> None:
        self.metrics.paid_calls.labels(backend).inc(counts.get("calls", 0))
        self.metrics.paid_tokens.labels(backend, "input").inc(counts.get("input_tokens", 0))
        self.metrics.paid_tokens.labels(backend, "output").inc(counts.get("output_tokens", 0))
        self.metrics.paid_bytes.labels(backend).inc(counts.get("bytes", 0))
        self.metrics.budget_refusals.labels(backend).inc(counts.get("refused", 0))
        self.metrics.cost.labels(backend).inc(usd)

    def session_report(self, key: str) -> dict[str, Any] | None:
        """What `GET /sessions/<id>` and the session's end log say: its calls, spending and withheld results."""
        state = self.sessions.get(key)
        if state is None:
            return None
        return {"session_id": key, "calls": state.calls, "servers": sorted(state.servers), **_costs(state)}

    async def end_session(self, key: str) -> bool:
        return await self.sessions.end(key)

    async def _end_everywhere(self, session: SessionState) -> None:
        """Tell the servers the session used, then the listeners; one failing does not stop the rest."""
        if session.ledger:
            logger.info(
                "session ended", extra={"session": session.key, "calls": session.calls, **_costs(session)}
            )
        for sid in session.servers:
            if sid in self.pools:
                self.pools[sid].end_session(session.key)
        if not self._closing and not session.key.startswith(EPHEMERAL_PREFIX):
            await self.owners.release(session.key)
        await call_each(self.session_end_listeners, session.key, logger)

    def _count_restart(self, server: str) -> None:
        self.metrics.restarts.labels(server).inc()


def _usage(raw: Any) -> dict[str, dict[str, int]]:
    """A server's USAGE_KEY, kept to what it may say: backend names with non-negative whole counts."""
    if not isinstance(raw, dict):
        return {}
    usage: dict[str, dict[str, int]] = {}
    for backend, counts in list(raw.items())[:32]:
        if isinstance(backend, str) and isinstance(counts, dict):
            usage[backend[:64]] = {
                k: v for k, v in counts.items() if k in USAGE_COUNTS and isinstance(v, int) and v >= 0
            }
    return usage


def _costs(session: SessionState) -> dict[str, Any]:
    report = session.ledger.report()
    return {"cost": {k: v for k, v in report.items() if k != "withheld"}, "withheld": report["withheld"]}


def _server_env(config: GatewayConfig) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in PRIVATE_ENV}
    env["GAIA_WORKSPACE_ROOT"] = str(config.workspace_root.resolve())
    env["GAIA_DATASET_DIR"] = str(config.dataset_dir.resolve())
    env.setdefault("PYTHONUNBUFFERED", "1")
    env["GAIA_GATEWAY_SESSIONS"] = "1"  # the gateway ends sessions: servers keep no idle timers of their own
    return env


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with unknown argument names refused, unless it says what extra names may be.

    The servers' pydantic models ignore names they do not know, so a misspelt optional argument
    would silently do nothing; the model is told instead."""
    if schema.get("type") != "object" or "additionalProperties" in schema or "patternProperties" in schema:
        return schema
    return {**schema, "additionalProperties": False}


def _describe_invalid(tool: str, error: ValidationError, schema: dict[str, Any]) -> str:
    where = ".".join(str(p) for p in error.absolute_path)[:200]
    # jsonschema quotes the offending value whole: a megabyte string must not come back whole.
    message = error.message if len(error.message) <= 500 else error.message[:500] + "…"
    if error.validator == "additionalProperties" and not error.absolute_path:
        names = ", ".join(schema.get("properties", {})) or "none"
        return f"Invalid arguments for {tool}: {message}; its arguments are: {names}."
    if error.validator == "required":
        return f"Invalid arguments for {tool}: {message}."
    return f"Invalid arguments for {tool}: '{where or 'arguments'}': {message}."
