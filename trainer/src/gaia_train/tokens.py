"""Token-faithful bookkeeping for RL: the tokens trained on are the tokens sampled.

The prompt is rendered by the chat template once. After that the tape only grows: the ids
the rollout server sampled go in unchanged with mask 1 (and their log-probs), and everything
the model did not write (the end of its turn, the tool responses, the next assistant header)
goes in with mask 0. No sampled text is ever decoded and tokenized again: re-templating the
whole conversation each turn, as the reference recipe did, trains on token sequences the
model never produced (a different split of the same text, a think block the template drops).

The tokenizer is any Hugging Face tokenizer: `apply_chat_template(..., tokenize=False)`,
`encode(text, add_special_tokens=False)` and `decode(ids, skip_special_tokens=...)`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .episode import Generation

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

    def __post_init__(self) -> None:
        if self.response_length < 1:
            raise ValueError(f"response_length must be at least 1, got {self.response_length}")

    def _render(self, messages: list[dict[str, Any]]) -> str:
        return self.tokenizer.apply_chat_template(
            messages,
            tools=self.tools or None,
            add_generation_prompt=True,
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
        context = [
            {"role": "user", "content": "-"},
            {"role": "assistant", "content": _TURN_MARK},
            *tool_messages,
        ]
        text = self._render(context)
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


GenerateIds = Callable[[list[int], int], Awaitable[tuple[list[int], list[float] | None]]]
"""(prompt ids so far, max new tokens) -> (sampled ids, their log-probs or None)."""


class TokenPolicy:
    """A `Policy` over a `TokenTape`: generation sees the tape's ids, never re-rendered text."""

    def __init__(self, tape: TokenTape, generate_ids: GenerateIds):
        self.tape = tape
        self.generate_ids = generate_ids
        self._last_sampled: list[int] = []

    async def start(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        self.tape.begin(messages, tools)

    async def generate(self, messages: list[dict[str, Any]]) -> Generation:
        budget = self.tape.remaining
        ids, logprobs = await self.generate_ids(self.tape.prompt_ids + self.tape.response_ids, budget)
        self.tape.add_sampled(ids, logprobs)
        self._last_sampled = list(ids)[:budget]
        return Generation(text=self.tape.decode(self._last_sampled), truncated=len(ids) >= budget)

    async def observe(self, tool_messages: list[dict[str, Any]]) -> bool:
        ids = self.tape.scaffold(self._last_sampled, tool_messages)
        # The next turn needs at least one token of room after the tool responses.
        if len(ids) >= self.tape.remaining:
            return False
        self.tape.add_context(ids)
        return True

    def budget_left(self) -> bool:
        return self.tape.remaining > 0
