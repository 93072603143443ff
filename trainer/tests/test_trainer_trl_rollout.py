"""TRL rollouts sample the same tokens whatever order the episodes' tool calls return in."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: run scripts/trainer-extra.sh")
trl_grpo = pytest.importorskip("gaia_train.trl_grpo", reason="TRL is not installed: run scripts/trl-extra.sh")

VOCAB = 50


class Uniform(torch.nn.Module):
    """Every token equally likely: what is sampled depends only on the random stream."""

    def forward(self, input_ids: Any, past_key_values: Any = None, use_cache: bool = True) -> Any:
        return SimpleNamespace(logits=torch.zeros(1, input_ids.shape[1], VOCAB), past_key_values=None)


def play(monkeypatch: pytest.MonkeyPatch, delays: list[float], calls: int = 1) -> list[list[list[int]]]:
    """The ids each prompt's episode sampled (two turns, a tool call's delay between), per call."""

    async def episode(messages, tokenizer, generate_ids, *_: Any) -> list[int]:
        index = messages[0]["index"]
        first, _ = await generate_ids([1], 6)
        await anyio.sleep(delays[index])
        second, _ = await generate_ids([1], 6)
        return first + second

    monkeypatch.setattr(trl_grpo, "run_tape_episode", episode)
    rollout = trl_grpo.GaiaRollout(SimpleNamespace(eos_token_id=-1), mcp=None)
    prompts = [[{"index": i}] for i in range(len(delays))]
    runs = []
    for call in range(calls):
        runs.append(anyio.run(rollout._run_all, prompts, Uniform(), call))
    return runs


def test_samples_do_not_depend_on_which_tool_call_returns_first(monkeypatch: pytest.MonkeyPatch) -> None:
    [in_order] = play(monkeypatch, [0.0, 0.01, 0.02, 0.03])
    [reversed_order] = play(monkeypatch, [0.03, 0.02, 0.01, 0.0])
    assert in_order == reversed_order
    assert len({tuple(ids) for ids in in_order}) == 4, "each episode has its own stream"


def test_each_step_draws_new_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = play(monkeypatch, [0.0, 0.0], calls=2)
    assert first != second
