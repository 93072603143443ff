"""A TRL GRPO run is its seed's: the random state earlier code left behind changes nothing of it."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: run scripts/trainer-extra.sh")
trl_rollout = pytest.importorskip(
    "gaia_train.trl_adapter.rollout", reason="TRL is not installed: run scripts/trl-extra.sh"
)

STEPS = 2
GENERATIONS = 4


def odd_length(gaia_solution: list[str], **_: Any) -> list[float]:
    """A reward that splits a group of random samples, so every step updates the weights."""
    return [float(len(text) % 2) for text in gaia_solution]


def grpo_run(tokenizer, mcp_url: str, out: Path, seed: int) -> tuple[list[list[int]], list[torch.Tensor]]:
    """The completions of a short GRPO run with `seed` on a tiny random model, and its trained weights."""
    from gaia_train.demo.tiny_model import TinyModelConfig, build_model
    from gaia_train.episode.loop import EpisodeLimits
    from gaia_train.episode.session import McpSettings

    model = build_model(tokenizer, TinyModelConfig(layers=1))
    rows = [
        {
            "prompt": [{"role": "user", "content": "What is the meeting code?"}],
            "data_source": "gaia",
            "reward_model": {"ground_truth": "7731"},
            "extra_info": {"task_id": "meeting"},
        }
    ]
    limits = EpisodeLimits(max_turns=1, episode_timeout_s=60)
    rollout = trl_rollout.GaiaRollout(tokenizer, McpSettings(url=mcp_url), limits, response_length=12)
    config = trl_rollout.grpo_config(
        str(out),
        steps=STEPS,
        prompts_per_step=1,
        num_generations=GENERATIONS,
        learning_rate=1e-2,
        temperature=1.0,
        seed=seed,
    )
    trainer = trl_rollout.grpo_trainer(
        model, tokenizer, trl_rollout.grpo_dataset(rows), rollout, config, odd_length
    )
    trainer.train()
    return [e.tape.response_ids for e in rollout.episodes], [p.detach().clone() for p in model.parameters()]


def disturb_global_random_state() -> None:
    """What earlier tests in the same process may leave behind: every global generator moved on."""
    import numpy

    random.seed(12345)
    random.random()
    numpy.random.seed(678)
    numpy.random.rand(5)
    torch.manual_seed(91011)
    torch.rand(7)


def test_a_run_samples_and_trains_the_same_whatever_random_state_it_starts_in(
    tokenizer, fake_mcp, tmp_path: Path
) -> None:
    completions, weights = grpo_run(tokenizer, fake_mcp.url, tmp_path / "first", seed=3)
    disturb_global_random_state()
    again, again_weights = grpo_run(tokenizer, fake_mcp.url, tmp_path / "second", seed=3)

    assert len(completions) == STEPS * GENERATIONS
    assert again == completions
    assert all(torch.equal(a, b) for a, b in zip(weights, again_weights, strict=True))
    # The weights moved: the comparison is of two runs that trained, not of two that did nothing.
    from gaia_train.demo.tiny_model import TinyModelConfig, build_model

    untrained = build_model(tokenizer, TinyModelConfig(layers=1)).parameters()
    assert any(not torch.equal(a, b.detach()) for a, b in zip(weights, untrained, strict=True))


def test_the_run_seed_picks_the_samples(tokenizer, fake_mcp, tmp_path: Path) -> None:
    # The rollout names no seed of its own: GRPOConfig.seed is the one knob.
    completions, _ = grpo_run(tokenizer, fake_mcp.url, tmp_path / "first", seed=3)
    other, _ = grpo_run(tokenizer, fake_mcp.url, tmp_path / "second", seed=4)
    assert other != completions


def test_an_evaluation_outside_a_run_names_its_own_seed() -> None:
    rollout = trl_rollout.GaiaRollout(SimpleNamespace(eos_token_id=-1), mcp=None)
    with pytest.raises(ValueError, match=r"GaiaRollout\(seed=\.\.\.\)"):
        rollout.play_prompts([[{"role": "user", "content": "which code?"}]], torch.nn.Identity(), 0)
