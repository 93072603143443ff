"""Multi-agent episodes: a team's roles take turns on one transcript, in one session workspace.

The coordinator runs the shared episode loop with its own MCP servers and a `delegate(role, task)`
tool. A delegate call runs a sub-episode of that role, with the same loop: its own system prompt and
tool schemas (handed to it after what came before, so it reads the conversation so far), its own
`MCP-Servers` selection, and the same `X-Session-Id`, so files one role writes the other reads. The
role's answer comes back as the delegate call's result and the coordinator goes on.

Every role draws its turns from one policy (`new_policy` makes the policy of each (sub-)episode; for
training they share one token tape), so what the tape holds is one sequence in the order it was
sampled: each role's sampled turns conditioned on exactly what precedes them. That is what lets a
trainer that takes one sequence per row (VeRL 0.9.1's agent loop, TRL's rollout_func) train every
role token-faithfully.

The session is ended once, by the coordinator's MCP session when the whole episode is over. Every
role's session uses the episode's session URL on the coordinator's gateway (pinned: with several
gateways a role never lands on another one, whose workspace would be empty), with the 2026-07-28
protocol (an initialize handshake would also open an MCP session per role; the URL keeps them in one
workspace either way). A role's sub-episode that the environment ended ends the team's episode the
same way.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from mcp_types.version import LATEST_MODERN_VERSION

from ..episode.gateways import Gateway
from ..episode.loop import EpisodeLimits, EpisodeMetrics, EpisodeResult, Policy, Stop, run_episode
from ..episode.session import McpSettings, McpToolSession, ToolOutcome, cap_text, neutralize_tags
from ..episode.tokens import NoRoom
from ..episode.toolcalls import ToolCall, strip_tool_calls
from .team import DELEGATE, Role, Team

SHARED_SESSION_MODE = LATEST_MODERN_VERSION
"""Sessionless requests keyed by X-Session-Id: every role's MCP session lands in the one workspace."""


@dataclass
class RoleEpisode:
    """One delegation: who was asked, by which call, and how its sub-episode went."""

    role: str
    call_id: str
    parent: int
    """The number of the (sub-)episode that made the call: 0 for the coordinator's."""
    number: int
    servers: str
    result: EpisodeResult


@dataclass
class TeamResult:
    team: str
    session_id: str
    lead_role: str
    lead: EpisodeResult
    """The coordinator's episode: its answer is the team's."""
    delegations: list[RoleEpisode] = field(default_factory=list)
    """In the order they ran (nested ones before the delegation that contains them ends)."""

    def episode_result(self) -> EpisodeResult:
        """The whole team as one episode: the coordinator's stop and answer, every role's work."""
        return EpisodeResult(
            messages=self.transcript(),
            stop=self.lead.stop,
            answer=self.lead.answer,
            metrics=self.metrics(),
            final_text=self.lead.final_text,
            error=self.lead.error,
            session_id=self.session_id,
        )

    def metrics(self) -> EpisodeMetrics:
        episodes = [self.lead, *(d.result for d in self.delegations)]
        tool_calls: Counter[str] = Counter()
        cost_by_tool: Counter[str] = Counter()
        paid_calls: Counter[str] = Counter()
        for episode in episodes:
            tool_calls.update(episode.metrics.tool_calls)
            cost_by_tool.update(episode.metrics.cost_by_tool)
            paid_calls.update(episode.metrics.paid_calls)
        # A delegate call's seconds are its sub-episode's; count them once, as model and tool time.
        nested = sum(d.result.metrics.wall_seconds for d in self.delegations)
        return EpisodeMetrics(
            turns=sum(e.metrics.turns for e in episodes),
            tool_turns=sum(e.metrics.tool_turns for e in episodes),
            tool_calls=tool_calls,
            tool_errors=sum(e.metrics.tool_errors for e in episodes),
            model_seconds=sum(e.metrics.model_seconds for e in episodes),
            tool_seconds=max(0.0, sum(e.metrics.tool_seconds for e in episodes) - nested),
            wall_seconds=self.lead.metrics.wall_seconds,
            cost_usd=sum(e.metrics.cost_usd for e in episodes),
            cost_by_tool=cost_by_tool,
            paid_calls=paid_calls,
            withheld=sum(e.metrics.withheld for e in episodes),
        )

    def transcript(self) -> list[dict[str, Any]]:
        """Every role's messages in the order the tape holds them, each tagged with its role."""
        # Call ids are unique within an episode only: each delegation is found by its caller's number.
        by_call = {(d.parent, d.call_id): d for d in self.delegations}
        return _interleave(self.lead.messages, self.lead_role, 0, by_call)


def _interleave(
    messages: list[dict[str, Any]], role: str, number: int, by_call: dict[tuple[int, str], RoleEpisode]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    waiting: list[RoleEpisode] = []
    for message in messages:
        if message["role"] == "tool" and waiting:
            # The sub-episodes ran before the turn's tool results came back.
            for sub in waiting:
                out += _interleave(sub.result.messages, sub.role, sub.number, by_call)
            waiting = []
        out.append({**message, "gaia_role": role})
        for call in message.get("tool_calls") or []:
            if (number, call.get("id")) in by_call:
                waiting.append(by_call[(number, call["id"])])
    return out


def role_messages(role: Role, by: Role, task: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": role.prompt},
        {"role": "user", "content": f"Task from the {by.name}:\n{task}"},
    ]


def lead_messages(team: Team, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The row's messages with the coordinator's prompt before the row's own system prompt."""
    prompt = team.lead.prompt
    if not prompt:
        return [dict(m) for m in messages]
    if messages and messages[0]["role"] == "system":
        return [{"role": "system", "content": f"{prompt}\n\n{messages[0]['content']}"}, *messages[1:]]
    return [{"role": "system", "content": prompt}, *messages]


def answer_of(role: str, result: EpisodeResult) -> tuple[str, bool]:
    """The delegate call's result text, and whether it is an error."""
    if result.answer is not None:
        return f"The {role} answered: {result.answer}", False
    text = strip_tool_calls(result.final_text).strip()
    if result.stop is Stop.NO_TOOL_CALL and text:
        return f"The {role} answered: {text}", False
    reason = f"{result.stop}" + (f": {result.error}" if result.error else "")
    return f"Error: the {role} stopped without an answer ({reason}); try again or do it yourself.", True


class _TeamRun:
    def __init__(self, team: Team, new_policy: Callable[[], Policy], mcp: McpSettings, limits: EpisodeLimits):
        self.team = team
        self.new_policy = new_policy
        self.mcp = mcp
        self.limits = limits
        self.session_id = f"gaia-train-team-{uuid.uuid4().hex}"
        self.gateway: Gateway | None = None
        """The gateway the coordinator's session opened on: every role's session is pinned to it."""
        self.delegations: list[RoleEpisode] = []
        self.active: list[str] = [team.coordinator]
        self.episodes = 1
        """(Sub-)episodes started, the coordinator's included: each one's number is its start order."""

    def settings(self, role: Role) -> McpSettings:
        return replace(self.mcp, servers=role.servers_header, tools=role.tools, mode=SHARED_SESSION_MODE)

    def limits_of(self, role: Role) -> EpisodeLimits:
        return replace(self.limits, max_turns=role.max_turns or self.limits.max_turns)

    async def run(self, messages: list[dict[str, Any]]) -> TeamResult:
        lead = self.team.lead
        result = await run_episode(
            lead_messages(self.team, messages),
            self.new_policy(),
            lambda: RoleTools(self, lead, 0, owner=True),
            self.limits_of(lead),
        )
        return TeamResult(self.team.name, self.session_id, lead.name, result, self.delegations)

    def refusal(self, by: Role, call: ToolCall) -> str | None:
        """Why this delegate call cannot run, or None."""
        if call.error:
            return call.error
        name, task = call.arguments.get("role"), call.arguments.get("task")
        if name not in by.delegates_to:
            return f"the {by.name} can delegate to {', '.join(by.delegates_to)}, not {name!r}"
        if not isinstance(task, str) or not task.strip():
            return "task must say, in words, what the role should do"
        if name in self.active:
            return f"the {name} is already working on this task (it delegated to you); answer it instead"
        if self.episodes - 1 >= self.team.max_delegations:  # started ones: nested ones are still running
            return f"the team's {self.team.max_delegations} delegations are used up; finish the task yourself"
        return None

    async def delegate(self, by: RoleTools, call: ToolCall) -> ToolOutcome:
        started = time.perf_counter()
        problem = self.refusal(by.role, call)
        if problem is not None:
            return ToolOutcome(f"Error: {problem}.", True, time.perf_counter() - started)
        role = self.team.roles[call.arguments["role"]]
        number, self.episodes = self.episodes, self.episodes + 1
        self.active.append(role.name)
        try:
            result = await run_episode(
                role_messages(role, by.role, call.arguments["task"].strip()),
                self.new_policy(),
                lambda: RoleTools(self, role, number, owner=False),
                self.limits_of(role),
            )
        except NoRoom as exc:
            return ToolOutcome(
                f"Error: cannot hand the task to the {role.name}: {exc}.", True, time.perf_counter() - started
            )
        finally:
            self.active.pop()
        self.delegations.append(
            RoleEpisode(role.name, call.id, by.number, number, role.servers_header, result)
        )
        if result.environment_fault:
            fault = f"the {role.name}'s episode was ended by the environment: {result.error}"
            return ToolOutcome(f"Error: {fault}", True, time.perf_counter() - started, fault=fault)
        text, is_error = answer_of(role.name, result)
        return ToolOutcome(
            cap_text(neutralize_tags(text), self.mcp.max_output_chars),
            is_error,
            time.perf_counter() - started,
        )


class RoleTools:
    """One role's tools in the team's session: its MCP servers, and `delegate` when it may hand work on."""

    def __init__(self, run: _TeamRun, role: Role, number: int, *, owner: bool):
        self.run = run
        self.role = role
        self.number = number
        # The coordinator's session is opened first and closed last: it ends the shared session.
        self.session = McpToolSession(run.settings(role), run.session_id, end_session=owner)
        self.owner = owner
        self._delegating = False

    @property
    def session_id(self) -> str:
        return self.session.session_id

    async def __aenter__(self) -> RoleTools:
        if not self.owner:
            self.session.gateway = self.run.gateway
        await self.session.__aenter__()
        if self.owner:
            self.run.gateway = self.session.gateway
        if self.role.delegates_to and DELEGATE in self.session.tools:
            await self.session.__aexit__(None, None, None)
            raise ValueError(
                f"the servers of the {self.role.name} ({self.role.servers_header}) offer a tool named "
                f"{DELEGATE!r}, the name of the team's hand-off tool: select its tools with `tools`"
            )
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.session.__aexit__(*exc_info)

    def openai_tools(self) -> list[dict[str, Any]]:
        tools = self.session.openai_tools()
        if self.role.delegates_to:
            tools.append(self.run.team.delegate_tool(self.role))
        return tools

    async def call(self, call: ToolCall) -> ToolOutcome:
        if call.name != DELEGATE or not self.role.delegates_to:
            return await self.session.call(call)
        if self._delegating:
            # One transcript: the roles take turns, so a turn's second delegate call must wait its turn.
            return ToolOutcome(
                "Error: one delegate call at a time; call it again after this one returns.", True, 0.0
            )
        self._delegating = True
        try:
            return await self.run.delegate(self, call)
        finally:
            self._delegating = False


async def run_team_episode(
    messages: list[dict[str, Any]],
    team: Team,
    new_policy: Callable[[], Policy],
    mcp: McpSettings,
    limits: EpisodeLimits,
) -> TeamResult:
    """One episode of `team` on the row's `messages`; see the module docstring."""
    return await _TeamRun(team, new_policy, mcp, limits).run(messages)
