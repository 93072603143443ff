"""Token-faithful bookkeeping for RL: the tokens trained on are the tokens sampled.

The prompt is rendered by the chat template once. After that the tape only grows: the ids
the rollout server sampled go in unchanged with mask 1 (and their log-probs), and everything
the model did not write (the end of its turn, the tool responses, the next assistant header)
goes in with mask 0. No sampled text is ever decoded and tokenized again: re-templating the
whole conversation each turn, as the reference recipe did, trains on token sequences the
model never produced (a different split of the same text, a think block the template drops).

The tokenizer is any Hugging Face tokenizer: `apply_chat_template(..., tokenize=False)`,
`encode(text, add_special_tokens=False)` and `decode(ids, skip_special_tokens=...)`. Rendering,
encoding and decoding run off the event loop (`off_loop`): on the agent-loop worker's loop a prompt
with 126 tool schemas holds every other episode's generation and tool calls for about 100 ms a render
(benchmarks/episode_render.py). They share one worker thread per event loop: Jinja holds the GIL, so
more threads would only contend with the loop itself (measured: 16 episodes held the loop at most
3.8 s inline, 0.25 s on 40 threads, 8 ms on one).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio.lowlevel
import anyio.to_thread

from .loop import Generation
from .reasoning import in_reasoning, opens_reasoning, split_reasoning

_TAPE_THREAD: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar("gaia_tape_thread")


async def off_loop(function: Callable[..., Any], *args: Any) -> Any:
    """`function(*args)` in this event loop's one tokenizer thread."""
    try:
        limiter = _TAPE_THREAD.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(1)
        _TAPE_THREAD.set(limiter)
    return await anyio.to_thread.run_sync(function, *args, limiter=limiter)


# Stands in for the assistant turn when rendering what follows it; the template's text after
# it is exactly the scaffolding (end of turn, tool responses, next assistant header).
_TURN_MARK = "GAIA_TRAIN_ASSISTANT_TURN_MARK"


@dataclass
class TokenTape:
    """prompt_ids, then response_ids with one mask bit and one log-prob per response token."""

    tokenizer: Any
    response_length: int
    max_prompt_length: int | None = None
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    prompt_ids: list[int] = field(default_factory=list)
    response_ids: list[int] = field(default_factory=list)
    response_mask: list[int] = field(default_factory=list)
    response_logprobs: list[float] | None = field(default_factory=list)
    tools: list[dict[str, Any]] | None = None
    last_sampled: list[int] = field(default_factory=list)
    """The ids of the latest sampled turn, whichever role sampled it: what the next context follows."""

    def __post_init__(self) -> None:
        if self.response_length < 1:
            raise ValueError(f"response_length must be at least 1, got {self.response_length}")

    def _render(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        generation_prompt: bool = True,
    ) -> str:
        return self.tokenizer.apply_chat_template(
            messages,
            tools=(self.tools if tools is None else tools) or None,
            add_generation_prompt=generation_prompt,
            tokenize=False,
            **self.chat_template_kwargs,
        )

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def begin(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[int]:
        self.tools = tools
        self.prompt_ids = self._encode(self._render(messages))
        if self.max_prompt_length is not None and len(self.prompt_ids) > self.max_prompt_length:
            # Cutting the prompt would cut the tool schemas or the question: refuse instead.
            raise ValueError(
                f"the prompt with its {len(tools)} tool schemas is {len(self.prompt_ids)} tokens, more than "
                f"the prompt length {self.max_prompt_length}: select fewer servers (MCP_SERVERS) "
                "or raise the prompt length (PROMPT_LENGTH in run.sh)"
            )
        return self.prompt_ids

    @property
    def remaining(self) -> int:
        return self.response_length - len(self.response_ids)

    def add_sampled(self, ids: list[int], logprobs: list[float] | None) -> None:
        """Ids exactly as sampled: mask 1. Log-probs are kept only while every turn has them."""
        ids = list(ids)[: self.remaining]
        self.last_sampled = ids
        self.response_ids += ids
        self.response_mask += [1] * len(ids)
        if self.response_logprobs is not None and logprobs is not None and len(logprobs) >= len(ids):
            self.response_logprobs += [float(x) for x in logprobs[: len(ids)]]
        else:
            self.response_logprobs = None

    def add_context(self, ids: list[int]) -> None:
        """Ids the model did not sample: mask 0, log-prob 0."""
        self.response_ids += ids
        self.response_mask += [0] * len(ids)
        if self.response_logprobs is not None:
            self.response_logprobs += [0.0] * len(ids)

    def scaffold(self, last_sampled: list[int], tool_messages: list[dict[str, Any]]) -> list[int]:
        """The ids to append after a sampled turn so the next turn sees `tool_messages`.

        The template is asked what follows an assistant turn when these tool messages come
        next; the part of that the model already sampled (its end-of-turn token, normally)
        is not added twice.
        """
        return self._after_turn(last_sampled, tool_messages, generation_prompt=True)

    def hand_off(
        self, last_sampled: list[int], messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> list[int]:
        """The ids that end the last sampled turn and open another role's own prompt on this tape.

        The role's prompt (`messages`: its system prompt and task, with its `tools`) is rendered as
        the chat template renders any episode's prompt, so the role sees its tools in the form the
        model knows; what came before stays in its context.
        """
        closing = self._after_turn(last_sampled, [], generation_prompt=False)
        return closing + self._encode(self._render(messages, tools))

    def _after_turn(
        self, last_sampled: list[int], following: list[dict[str, Any]], generation_prompt: bool
    ) -> list[int]:
        context = [
            {"role": "user", "content": "-"},
            {"role": "assistant", "content": _TURN_MARK},
            *following,
        ]
        text = self._render(context, generation_prompt=generation_prompt)
        at = text.find(_TURN_MARK)
        if at < 0:
            raise ValueError(
                "the chat template dropped the assistant turn; it cannot be used for tool episodes"
            )
        tail = self._encode(text[at + len(_TURN_MARK) :])
        for overlap in range(min(len(tail), len(last_sampled)), 0, -1):
            if last_sampled[-overlap:] == tail[:overlap]:
                return tail[overlap:]
        return tail

    def decode(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def opens_reasoning(self) -> bool:
        """Whether the tape so far ends with an open `<think>` (a thinking template's generation prompt)."""
        tail = (self.prompt_ids + self.response_ids)[-16:]
        return opens_reasoning(self.tokenizer.decode(tail, skip_special_tokens=False))


GenerateIds = Callable[[list[int], int], Awaitable[tuple[list[int], list[float] | None]]]
"""(prompt ids so far, max new tokens) -> (sampled ids, their log-probs or None)."""


def _shares(lengths: list[int], total: int) -> list[int]:
    """Split `total` characters fairly: each message gets an equal part, short ones give back what they leave."""
    shares = [0] * len(lengths)
    left = total
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    for rank, index in enumerate(order):
        shares[index] = min(lengths[index], left // (len(order) - rank))
        left -= shares[index]
    return shares


def _cut(message: dict[str, Any], keep: int) -> dict[str, Any]:
    content = str(message.get("content") or "")
    if keep >= len(content):
        return message
    note = (
        f"\n[cut to fit this turn's tool budget: {keep} of {len(content)} characters shown; "
        "ask the tool for a smaller part (offset, page or start_index arguments) to read the rest]"
    )
    return {**message, "content": content[:keep] + note}


class NoRoom(RuntimeError):
    """A role cannot be handed the tape: its prompt does not fit in what is left of the response budget."""


class TokenPolicy:
    """A `Policy` over a `TokenTape`: generation sees the tape's ids, never re-rendered text.

    Two per-turn caps keep a long episode inside its response budget, so that a recipe can promise
    its turns: `turn_tokens` bounds what one generation may sample, `tool_tokens` what the
    environment may add after a turn (tool responses with their template scaffolding; longer outputs
    are cut, each call keeping a fair share, and say so). `reasoning_tokens` lets a thinking model
    finish a thought: a generation that stops at its cap inside the turn's reasoning (no `</think>`
    yet) is continued on the same tape (its ids follow the last ones, mask 1, nothing added between)
    while the turn is shorter than `reasoning_tokens`. A turn then samples at most
    `reasoning_tokens + turn_tokens` (`budget.Budget` counts it so).
    """

    def __init__(
        self,
        tape: TokenTape,
        generate_ids: GenerateIds,
        *,
        turn_tokens: int | None = None,
        tool_tokens: int | None = None,
        reasoning_tokens: int | None = None,
    ):
        for name, value in (
            ("turn_tokens", turn_tokens),
            ("tool_tokens", tool_tokens),
            ("reasoning_tokens", reasoning_tokens),
        ):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        self.tape = tape
        self.generate_ids = generate_ids
        self.turn_tokens = turn_tokens
        self.tool_tokens = tool_tokens
        self.reasoning_tokens = reasoning_tokens

    async def start(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        """A fresh tape gets the prompt; a tape in use (a team's) is handed to this role, mask 0."""
        if not self.tape.prompt_ids:
            await off_loop(self.tape.begin, messages, tools)
            return
        ids = await off_loop(self.tape.hand_off, self.tape.last_sampled, messages, tools)
        # The role needs room for its prompt and at least one token of its own.
        if len(ids) >= self.tape.remaining:
            raise NoRoom(
                f"the role's prompt with its {len(tools)} tool schemas is {len(ids)} tokens and only "
                f"{self.tape.remaining} of the response budget are left"
            )
        self.tape.add_context(ids)

    async def generate(self, messages: list[dict[str, Any]]) -> Generation:
        opened = await off_loop(self.tape.opens_reasoning)
        turn: list[int] = []
        while True:
            budget = min(self.tape.remaining, self.turn_tokens or self.tape.remaining)
            ids, logprobs = await self.generate_ids(self.tape.prompt_ids + self.tape.response_ids, budget)
            ids = list(ids)[:budget]
            self.tape.add_sampled(ids, logprobs)
            turn += ids
            cut = len(ids) >= budget
            text = await off_loop(self.tape.decode, turn)
            if not (cut and self._may_think_on(turn, text, opened)):
                break
        self.tape.last_sampled = turn
        reasoning, visible = split_reasoning(text, opened)
        return Generation(text=visible, truncated=cut, reasoning=reasoning or None)

    def _may_think_on(self, turn: list[int], text: str, opened: bool) -> bool:
        """A generation cut inside the turn's reasoning goes on while the thought has room left."""
        return (
            self.reasoning_tokens is not None
            and len(turn) < self.reasoning_tokens
            and self.tape.remaining > 0
            and in_reasoning(text, opened)
        )

    async def observe(self, tool_messages: list[dict[str, Any]]) -> bool:
        ids = await off_loop(self._fit, tool_messages)
        # The next turn needs at least one token of room after the tool responses.
        if ids is None or len(ids) >= self.tape.remaining:
            return False
        self.tape.add_context(ids)
        return True

    def _fit(self, tool_messages: list[dict[str, Any]]) -> list[int] | None:
        """The scaffold ids for `tool_messages`, cut to `tool_tokens`; None when even empty ones do not fit."""
        ids = self.tape.scaffold(self.tape.last_sampled, tool_messages)
        limit = self.tool_tokens
        if limit is None or len(ids) <= limit:
            return ids
        lengths = [len(str(m.get("content") or "")) for m in tool_messages]
        empty = [{**m, "content": ""} for m in tool_messages]
        overhead = len(self.tape.scaffold(self.tape.last_sampled, empty)) + 40 * len(
            tool_messages
        )  # the notes
        if overhead >= limit:
            return None
        chars_per_token = sum(lengths) / max(1, len(ids) - overhead)
        budget_chars = int((limit - overhead) * chars_per_token)
        for _ in range(8):  # tokens per character vary along a text: shrink until it fits
            cut = [
                _cut(m, keep) for m, keep in zip(tool_messages, _shares(lengths, budget_chars), strict=True)
            ]
            ids = self.tape.scaffold(self.tape.last_sampled, cut)
            if len(ids) <= limit:
                tool_messages[:] = cut  # what the model sees is what the trajectory records
                return ids
            budget_chars = int(budget_chars * 0.8)
        return None

    def budget_left(self) -> bool:
        return self.tape.remaining > 0
