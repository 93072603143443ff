"""The episode loop, shared by VeRL training and `gaia-train eval`.

messages -> policy -> tool calls -> MCP -> tool messages -> policy ... until the model gives an
`<answer>` (read by `reward.final_answer`, the rule the reward scores by: never inside its reasoning
or a tool call), makes no tool call, or a limit (turns, response tokens, episode deadline) ends it.
Answers and tool calls are read from the part of a turn outside its reasoning only (`reasoning`):
what a thought drafts is never executed nor scored.

The environment can end an episode too: a session that cannot be opened (after its retries) or a call
the environment failed (transport, busy past the deadline, the session's replica gone) ends it with
`Stop.ENVIRONMENT_FAULT`. Such an episode says nothing about the agent: trainers give it no gradient
and eval counts it apart from the agent's failures.
A policy is anything that turns the conversation into the next assistant turn: the VeRL
adapter samples token ids from the rollout server, eval calls an OpenAI-compatible endpoint.
How tokens are kept is the policy's business; this loop only sees messages.
"""

from __future__ import annotations

import enum
import time
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from ..reward import final_answer
from .reasoning import split_reasoning
from .session import EnvironmentFault, EnvironmentUnavailable, ToolOutcome
from .toolcalls import ToolCall, parse_tool_calls, strip_tool_calls


class ModelError(RuntimeError):
    """The model endpoint failed for good (after its retries); the episode ends with it."""


@dataclass
class Generation:
    text: str
    """What the model wrote in this turn (content; reasoning kept apart when the server splits it)."""
    tool_calls: list[ToolCall] | None = None
    """Calls the server already parsed; None means: parse `<tool_call>` blocks out of `text`."""
    truncated: bool = False
    """The turn stopped at its token limit rather than by itself."""
    reasoning: str | None = None


class ToolSession(Protocol):
    """What an episode calls its tools through: an MCP session (`McpToolSession`), or a team role's."""

    session_id: str

    def openai_tools(self) -> list[dict[str, Any]]: ...

    async def call(self, call: ToolCall) -> ToolOutcome: ...


class Policy(Protocol):
    async def start(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        """Receive the opening conversation and the tool schemas, before the first turn."""

    async def generate(self, messages: list[dict[str, Any]]) -> Generation:
        """The next assistant turn for `messages`."""

    async def observe(self, tool_messages: list[dict[str, Any]]) -> bool:
        """Take in the tool results of the last turn; False when no token budget is left for another turn.

        A policy with a per-turn tool budget may cut the messages in place: the episode records them after.
        """

    def budget_left(self) -> bool:
        """Whether another turn can still be generated within the response budget."""


@dataclass(frozen=True)
class EpisodeLimits:
    max_turns: int = 32
    """Assistant turns per episode."""
    max_parallel_calls: int = 8
    """Tool calls of one turn that run at the same time; the rest wait, none is dropped."""
    episode_timeout_s: float = 1800.0

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {self.max_turns}")
        if self.max_parallel_calls < 1:
            raise ValueError(f"max_parallel_calls must be at least 1, got {self.max_parallel_calls}")
        if self.episode_timeout_s <= 0:
            raise ValueError(f"episode_timeout_s must be positive, got {self.episode_timeout_s}")


class Stop(enum.StrEnum):
    ANSWER = "answer"
    NO_TOOL_CALL = "no_tool_call"
    MAX_TURNS = "max_turns"
    RESPONSE_BUDGET = "response_budget"
    TURN_LENGTH = "turn_length"
    """A turn hit its own token cap before it made a call or gave an answer."""
    DEADLINE = "deadline"
    MODEL_ERROR = "model_error"
    ENVIRONMENT_FAULT = "environment_fault"
    """The environment ended the episode (gateway unreachable, transport failure, busy past the
    deadline, the session's replica gone): not the agent's doing, so never reward nor gradient."""


@dataclass
class EpisodeMetrics:
    turns: int = 0
    tool_turns: int = 0
    tool_calls: Counter[str] = field(default_factory=Counter)
    tool_errors: int = 0
    model_seconds: float = 0.0
    tool_seconds: float = 0.0
    wall_seconds: float = 0.0
    cost_usd: float = 0.0
    """What the episode's calls cost on paid backends, as the gateway priced them."""
    cost_by_tool: Counter[str] = field(default_factory=Counter)
    paid_calls: Counter[str] = field(default_factory=Counter)
    """Requests sent to each paid backend (search API, hosted reader, E2B, model:<tool>)."""
    withheld: int = 0
    """Results the benchmark-copy guard withheld (pages quoting the task, benchmark mirrors)."""

    def count(self, name: str, outcome: ToolOutcome) -> None:
        self.tool_calls[name] += 1
        self.tool_errors += outcome.is_error and outcome.fault is None
        self.cost_usd += outcome.cost_usd
        if outcome.cost_usd:
            self.cost_by_tool[name] += outcome.cost_usd
        self.paid_calls.update(outcome.paid_calls)
        self.withheld += outcome.withheld

    @property
    def total_tool_calls(self) -> int:
        return sum(self.tool_calls.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "tool_turns": self.tool_turns,
            "tool_calls": dict(self.tool_calls),
            "total_tool_calls": self.total_tool_calls,
            "tool_errors": self.tool_errors,
            "model_seconds": round(self.model_seconds, 4),
            "tool_seconds": round(self.tool_seconds, 4),
            "wall_seconds": round(self.wall_seconds, 4),
            "cost_usd": round(self.cost_usd, 6),
            "cost_usd_by_tool": {name: round(usd, 6) for name, usd in self.cost_by_tool.items()},
            "paid_calls": dict(self.paid_calls),
            "withheld": self.withheld,
        }


@dataclass
class EpisodeResult:
    messages: list[dict[str, Any]]
    stop: Stop
    answer: str | None
    metrics: EpisodeMetrics
    final_text: str = ""
    error: str | None = None
    session_id: str = ""

    @property
    def environment_fault(self) -> bool:
        return self.stop is Stop.ENVIRONMENT_FAULT


class _State(enum.Enum):
    GENERATE = "generate"
    CALL_TOOLS = "call_tools"
    DONE = "done"


def _assistant_message(
    generation: Generation, reasoning: str, visible: str, calls: list[ToolCall], parsed_here: bool
) -> dict[str, Any]:
    # Calls parsed out of the text travel as structured tool_calls, so the text loses its
    # blocks; otherwise a chat template would render every call twice.
    if parsed_here and calls:
        content = strip_tool_calls(visible)
    else:
        content = visible if reasoning else generation.text
    message: dict[str, Any] = {"role": "assistant", "content": content}
    thought = "\n".join(part for part in (generation.reasoning, reasoning) if part)
    if thought:
        message["reasoning_content"] = thought
    if calls:
        message["tool_calls"] = [call.to_message() for call in calls]
    return message


def _tool_message(call: ToolCall, outcome: ToolOutcome) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": outcome.text}


async def run_episode(
    messages: list[dict[str, Any]],
    policy: Policy,
    connect: Callable[[], AbstractAsyncContextManager[ToolSession]],
    limits: EpisodeLimits,
) -> EpisodeResult:
    """Run one episode in its own MCP session; the session is closed however the episode ends."""
    messages = [dict(m) for m in messages]
    metrics = EpisodeMetrics()
    started = time.perf_counter()
    state, stop, answer, error, final_text = _State.GENERATE, Stop.NO_TOOL_CALL, None, None, ""
    pending: list[ToolCall] = []
    session_id = ""

    session = connect()
    try:
        tools = await session.__aenter__()
    except EnvironmentUnavailable as exc:
        metrics.wall_seconds = time.perf_counter() - started
        return EpisodeResult(
            messages, Stop.ENVIRONMENT_FAULT, None, metrics, "", str(exc), getattr(session, "session_id", "")
        )
    try:
        session_id = tools.session_id
        with anyio.move_on_after(limits.episode_timeout_s) as deadline:
            await policy.start(messages, tools.openai_tools())
            while state is not _State.DONE:
                if state is _State.GENERATE:
                    if metrics.turns >= limits.max_turns:
                        state, stop = _State.DONE, Stop.MAX_TURNS
                        continue
                    t0 = time.perf_counter()
                    try:
                        generation = await policy.generate(messages)
                    except ModelError as exc:
                        state, stop, error = _State.DONE, Stop.MODEL_ERROR, str(exc)
                        continue
                    finally:
                        metrics.model_seconds += time.perf_counter() - t0
                    metrics.turns += 1
                    final_text = generation.text
                    # What a thought drafts is never acted on: calls and answers come from the rest.
                    reasoning, visible = split_reasoning(generation.text)
                    parsed_here = generation.tool_calls is None
                    pending = (
                        parse_tool_calls(visible, f"call_{metrics.turns}_")
                        if parsed_here
                        else generation.tool_calls
                    )
                    messages.append(_assistant_message(generation, reasoning, visible, pending, parsed_here))
                    answer = final_answer(visible)
                    if answer is not None:
                        state, stop = _State.DONE, Stop.ANSWER
                    elif not pending:
                        state, stop = _State.DONE, _no_call_stop(generation, policy)
                    elif not policy.budget_left():
                        state, stop = _State.DONE, Stop.RESPONSE_BUDGET
                    else:
                        state = _State.CALL_TOOLS
                elif state is _State.CALL_TOOLS:
                    t0 = time.perf_counter()
                    outcomes = await _call_all(tools, pending, limits.max_parallel_calls)
                    metrics.tool_seconds += time.perf_counter() - t0
                    metrics.tool_turns += 1
                    for call, outcome in zip(pending, outcomes, strict=True):
                        metrics.count(call.name, outcome)
                    tool_messages = [_tool_message(c, o) for c, o in zip(pending, outcomes, strict=True)]
                    fault = next((o.fault for o in outcomes if o.fault is not None), None)
                    if fault is not None:
                        # Kept in the transcript, never shown to the policy: the episode ends here.
                        messages.extend(tool_messages)
                        state, stop, error = _State.DONE, Stop.ENVIRONMENT_FAULT, fault
                        continue
                    room = await policy.observe(tool_messages)
                    messages.extend(tool_messages)
                    if room:
                        state = _State.GENERATE
                    else:
                        state, stop = _State.DONE, Stop.RESPONSE_BUDGET
        if deadline.cancelled_caught:
            stop = Stop.DEADLINE
    except BaseException as exc:
        try:
            await session.__aexit__(type(exc), exc, exc.__traceback__)
        except EnvironmentFault as fault:  # the connection broke under a call and cancelled the episode
            stop, error = Stop.ENVIRONMENT_FAULT, str(fault)
        else:
            raise
    else:
        await session.__aexit__(None, None, None)
    metrics.wall_seconds = time.perf_counter() - started
    return EpisodeResult(messages, stop, answer, metrics, final_text, error, session_id)


def _no_call_stop(generation: Generation, policy: Policy) -> Stop:
    if not generation.truncated:
        return Stop.NO_TOOL_CALL
    return Stop.TURN_LENGTH if policy.budget_left() else Stop.RESPONSE_BUDGET


async def _call_all(tools: ToolSession, calls: list[ToolCall], limit: int) -> list[ToolOutcome]:
    outcomes: list[ToolOutcome | None] = [None] * len(calls)
    gate = anyio.Semaphore(limit)

    async def one(index: int, call: ToolCall) -> None:
        async with gate:
            outcomes[index] = await tools.call(call)

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(one, index, call)
    return [o for o in outcomes if o is not None]
