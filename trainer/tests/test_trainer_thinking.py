"""Thinking-aware turns on the token tape (VeRL adapter, verl 0.9.1), with a template that opens `<think>`
in the generation prompt as Qwen3-Thinking's does: the sampled text of a turn holds only `</think>`.

A generation cut inside the thought is continued from the tape (no scaffold, mask 1 throughout) until the
thought closes or reaches GAIA_REASONING_TOKENS; an `<answer>` or `<tool_call>` drafted in the thought is
never acted on.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip(
    "verl.experimental.agent_loop.agent_loop",
    reason="verl is not installed: run scripts/trainer-extra.sh (torch CPU + verl 0.9.1)",
)

from gaia_kit_testing.verl_loop import ScriptedServer, call, make_loop, runs  # noqa: E402

pytestmark = pytest.mark.anyio

PROMPT = [
    {"role": "system", "content": "Answer in <answer></answer>."},
    {"role": "user", "content": "What is the meeting code in /data/notes.txt?"},
]


@pytest.fixture(scope="module")
def thinking_tokenizer(tokenizer):
    thinking = copy.deepcopy(tokenizer)
    opening = "<|im_start|>assistant\n{% endif %}"
    assert tokenizer.chat_template.endswith(opening)
    thinking.chat_template = (
        tokenizer.chat_template[: -len(opening)] + "<|im_start|>assistant\n<think>\n{% endif %}"
    )
    return thinking


class ThinkingServer(ScriptedServer):
    """A model that goes on where it was cut: each turn's text is sampled across as many requests as it takes."""

    def __init__(self, tokenizer, turns: list[str]):
        super().__init__(tokenizer, turns)
        self.left: list[int] = []

    async def generate(self, request_id: str, *, prompt_ids, sampling_params, **kwargs: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        self.calls.append(
            {"request_id": request_id, "prompt_ids": list(prompt_ids), "params": dict(sampling_params)}
        )
        if not self.left:
            self.left = self.tokenizer.encode(self.turns.pop(0), add_special_tokens=False) + [
                self.tokenizer.eos_token_id
            ]
        ids, self.left = (
            self.left[: sampling_params["max_tokens"]],
            self.left[sampling_params["max_tokens"] :],
        )
        self.sampled.append(ids)
        return TokenOutput(
            token_ids=ids, log_probs=[-0.5] * len(ids), stop_reason="completed", extra_fields={}
        )


def padded(tokenizer, text: str, tokens: int) -> str:
    """`text` with dots added until it is exactly `tokens` tokens."""
    return text + "." * (tokens - len(tokenizer.encode(text, add_special_tokens=False)))


async def test_a_cut_thought_goes_on_and_its_drafts_are_never_acted_on(thinking_tokenizer, fake_mcp) -> None:
    tok = thinking_tokenizer
    draft = "I could answer <answer>42</answer> now, or run " + call("add", a=1, b=1) + " first"
    thought = padded(tok, draft, 200)  # two whole generations of 100 tokens, still thinking
    turns = [
        thought + "</think>\n" + call("read_file", path="/data/notes.txt"),
        "Found it.</think>\n<answer>7731</answer>",
    ]
    server = ThinkingServer(tok, turns)
    loop = make_loop(tok, server, fake_mcp.url)
    loop.turn_tokens, loop.reasoning_tokens = 100, 1000
    output = await loop.run({}, raw_prompt=PROMPT)

    assert tok.decode(output.prompt_ids).endswith("<|im_start|>assistant\n<think>\n")
    # the first turn took three generations, each continuing the tape exactly where the last one stopped
    first, second, third = server.calls[:3]
    assert second["prompt_ids"] == first["prompt_ids"] + server.sampled[0]
    assert third["prompt_ids"] == second["prompt_ids"] + server.sampled[1]
    mask_runs = runs(output.response_mask)
    assert mask_runs[0] == (1, 0, sum(len(ids) for ids in server.sampled[:3]))  # one sampled run, no scaffold
    # the drafts were not acted on: no 42, no add; the call after the thought ran
    assert output.extra_fields["gaia_tool_calls"] == 1 and output.extra_fields["gaia_tool_errors"] == 0
    [(_, start, end)] = [r for r in mask_runs if r[0] == 0]
    assert "The meeting code is 7731." in tok.decode(output.response_ids[start:end])
    assert output.extra_fields["gaia_answer"] == "7731" and output.extra_fields["gaia_stop"] == "answer"


async def test_a_thought_that_reaches_its_cap_ends_the_turn_with_nothing_acted_on(
    thinking_tokenizer, fake_mcp
) -> None:
    tok = thinking_tokenizer
    thought = padded(tok, "Maybe <answer>42</answer>, or " + call("add", a=1, b=1), 400)
    server = ThinkingServer(tok, [thought + "</think>\n<answer>42</answer>"])
    loop = make_loop(tok, server, fake_mcp.url)
    loop.turn_tokens, loop.reasoning_tokens = 100, 250
    output = await loop.run({}, raw_prompt=PROMPT)
    assert len(server.calls) == 3  # 100, 200, 300 tokens: the thought passed its 250, still open
    assert output.extra_fields["gaia_stop"] == "turn_length" and output.extra_fields["gaia_answer"] is None
    assert output.extra_fields["gaia_tool_calls"] == 0
    assert set(output.response_mask) == {1} and len(output.response_ids) == 300
