"""TRL GRPO steps on this CPU through the real gateway: the mechanics, checked from the outside.

A real `gaia-env serve` (documents-txt-server, filesystem-server) plays the tool-only demo set
(`gaia_train.demo.tool_only`): every episode's workspace gets its own visitor pass with a code drawn
for that episode. A tiny model built on the spot is warm-started on scripted episodes through it,
then TRL's GRPOTrainer runs two steps whose completions are gateway-driven episodes. Checked: the
weights change; during TRL's own loss the gradient reaches the logits of sampled tokens only (tool
output rows get exactly zero) and TRL's tool mask is the tape's; every episode had its own MCP
session and its own pass, seen and ended by the gateway; the tool output in the tapes is the real
server's reading of that episode's pass; the ground truth differs from episode to episode and each
reward is the episode's own answer scored against its own pass's code; the ablation's pass hides it.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import torch
from gaia_kit_testing.gateway import RunningGateway, launch
from gaia_train.demo import tool_only, warm_start
from gaia_train.demo.tiny_model import build_model
from gaia_train.episode.loop import Stop
from gaia_train.trl_adapter.rollout import (
    Episode,
    GaiaRollout,
    gaia_grpo_reward,
    grpo_config,
    grpo_dataset,
    grpo_trainer,
    row_plays,
    run_tape_episode,
)

GENERATIONS = 4
STEPS = 2


@pytest.fixture(scope="module")
def gateway(tmp_path_factory) -> Iterator[RunningGateway]:
    data = tmp_path_factory.mktemp("data")
    gateway = launch(tmp_path_factory.mktemp("gw"), "--servers", tool_only.GATEWAY_SERVERS, dataset_dir=data)
    yield gateway
    gateway.stop()


def code_shown(episode: Episode) -> str | None:
    """The code of the pass the episode's tool call read, from the tool output in its messages."""
    for message in episode.result.messages:
        found = message["role"] == "tool" and re.search(r"^[a-z ]+: ([A-Z?]{3})$", message["content"], re.M)
        if found:
            return found.group(1)
    return None


def scripted_reward(episodes: list[Episode], truths: list[str]) -> list[float]:
    """The TRL reward of scripted episodes, each scored against `truths` instead of the row's column."""
    return gaia_grpo_reward(
        prompts=[None] * len(episodes),
        completions=[None] * len(episodes),
        ground_truth=["(drawn per episode)"] * len(episodes),
        gaia_answer=[e.result.answer for e in episodes],
        gaia_solution=[""] * len(episodes),
        gaia_ground_truth=truths,
        scorer=["exact"] * len(episodes),
    )


def test_trl_grpo_steps_through_the_real_gateway(gateway: RunningGateway, tmp_path: Path) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)  # on a shared 2-core machine a second intra-op thread only waits
    mcp = tool_only.demo_mcp(gateway.url)
    tokenizer = tool_only.tokenizer(anyio.run(tool_only.corpus, mcp))
    model = build_model(tokenizer)
    scripted = anyio.run(tool_only.scripted_episodes, tokenizer, mcp, 4)
    losses = warm_start.warm_start(model, scripted)
    assert losses[-1] < losses[0] / 4, losses

    # Each scripted episode read a pass of its own; its reward is its answer against that pass's code.
    shown = [code_shown(e) for e in scripted]
    assert shown == [e.ground_truth for e in scripted] and len(set(shown)) > 1
    teacher = [e for e in scripted if tool_only.TEACHER_LABEL in e.result.messages[1]["content"]]
    assert scripted_reward(teacher, [e.ground_truth for e in teacher]) == [1.0] * len(teacher)
    others = [e.ground_truth for e in teacher[1:] + teacher[:1]]  # another episode's pass
    assert scripted_reward(teacher, others) == [
        float(e.ground_truth == other) for e, other in zip(teacher, others, strict=True)
    ]

    dataset_rows = tool_only.rows(tool_only.TRAIN_LABELS)
    plays = row_plays(dataset_rows, attachments=tool_only.attachments(tool_only.TRAIN_LABELS))
    rollout = GaiaRollout(tokenizer, mcp, tool_only.LIMITS, response_length=256, plays=plays)
    rows = dataset_rows
    scored: list[dict[str, Any]] = []

    def reward(**kwargs: Any) -> list[float]:
        values = gaia_grpo_reward(**kwargs)
        scored.extend(
            {"answer": a, "truth": t, "session": s, "reward": r}
            for a, t, s, r in zip(
                kwargs["gaia_answer"],
                kwargs["gaia_ground_truth"],
                kwargs["gaia_session_id"],
                values,
                strict=True,
            )
        )
        return values

    config = grpo_config(
        str(tmp_path / "out"),
        steps=STEPS,
        prompts_per_step=len(rows),
        num_generations=GENERATIONS,
        learning_rate=2e-3,
        temperature=1.0,
    )
    trainer = grpo_trainer(model, tokenizer, grpo_dataset(dataset_rows), rollout, config, reward)

    # TRL's loss inputs, and the gradient that reaches the last hidden states during its backward
    # pass. TRL asks for a fused lm head (no logits tensor to hook); the final norm's output feeds
    # only the lm head, so its row t has gradient exactly when the logits predicting token t+1 do.
    losses_seen: list[dict[str, torch.Tensor]] = []
    hidden_grads: list[torch.Tensor] = []
    compute_loss = trainer.compute_loss
    keys = ("prompt_ids", "completion_ids", "completion_mask", "tool_mask")

    def recording_compute_loss(model, inputs, *args, **kwargs):
        losses_seen.append({k: inputs[k].detach().clone() for k in keys})
        return compute_loss(model, inputs, *args, **kwargs)

    def on_hidden(module, args, output):
        if output.requires_grad:
            output.register_hook(lambda grad: hidden_grads.append(grad.detach().clone()))

    trainer.compute_loss = recording_compute_loss
    hook = model.model.norm.register_forward_hook(on_hidden)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    try:
        trainer.train()
    finally:
        hook.remove()

    episodes = rollout.episodes
    assert len(episodes) == STEPS * len(rows) * GENERATIONS, "one completion per prompt TRL handed over"

    # The policy's weights changed.
    assert any(not torch.equal(before[name], p.detach()) for name, p in model.named_parameters())

    # Only sampled tokens carry gradient, and TRL's tool mask is the tape's mask.
    assert len(losses_seen) == len(hidden_grads) == STEPS
    saw_tool_tokens = saw_sampled_gradient = False
    for inputs, grad in zip(losses_seen, hidden_grads, strict=True):
        mask = inputs["completion_mask"] * inputs["tool_mask"]
        prompt_width, completion_width = inputs["prompt_ids"].shape[1], mask.shape[1]
        per_row = grad.abs().sum(-1)
        assert torch.all(per_row[:, : prompt_width - 1] == 0), "a prompt token got gradient"
        # Row prompt_width - 1 + j predicts completion token j.
        rows_grad = per_row[:, prompt_width - 1 : prompt_width - 1 + completion_width]
        assert rows_grad.shape == mask.shape
        assert torch.all(rows_grad[mask == 0] == 0), "a tool or padding token got gradient"
        saw_sampled_gradient |= bool((rows_grad[mask == 1] > 0).any())
        for i in range(mask.shape[0]):
            n = int(inputs["completion_mask"][i].sum())
            ids = inputs["completion_ids"][i, :n].tolist()
            [tape_mask] = {tuple(e.tape.response_mask) for e in episodes if e.tape.response_ids == ids}
            assert inputs["tool_mask"][i, :n].tolist() == list(tape_mask)
            saw_tool_tokens |= 0 in tape_mask
    assert saw_tool_tokens and saw_sampled_gradient

    # Every episode had its own MCP session, which the gateway saw and ended (workspace removed).
    sessions = [e.result.session_id for e in episodes]
    assert len(set(sessions)) == len(episodes)
    # Every session got a workspace when its pass was written: the corpus's readings (one per question),
    # the scripted episodes and every GRPO episode, each its own, each ended (the gateway keys
    # workspaces by the session URL's id, so the names are not the X-Session-Id's hash).
    ended = re.findall(r"session ended, workspace removed: (s-[0-9a-f]+)", gateway.log())
    assert len(set(ended)) == len(ended) == len(tool_only.ALL_LABELS) + len(scripted) + len(episodes)
    assert gateway.status()["sessions"] == 0
    assert gateway.session_workspaces() == []

    # The tool output in the tapes is the real server's reading of the episode's own pass.
    served = [e for e in episodes if e.result.metrics.total_tool_calls and not e.result.metrics.tool_errors]
    assert len(served) >= len(episodes) // 4, "the warm-started model should often open the pass"
    readings: dict[tuple[str, str], str] = {}
    for episode in served:
        label = next(
            label for label in tool_only.TRAIN_LABELS if label in episode.result.messages[1]["content"]
        )
        key = (label, episode.ground_truth)
        if key not in readings:
            readings[key] = anyio.run(tool_only.read_pass, mcp, *key)
        [tool_message] = [m for m in episode.result.messages if m["role"] == "tool"]
        assert tool_message["content"] == readings[key]
        context = [
            t for t, m in zip(episode.tape.response_ids, episode.tape.response_mask, strict=True) if not m
        ]
        assert readings[key] in tokenizer.decode(context)
    # The ground truth is drawn per episode: the codes of one step's episodes differ.
    assert all(e.ground_truth in tool_only.CODES for e in episodes)
    assert len({e.ground_truth for e in episodes[: len(rows) * GENERATIONS]}) > 1

    # The rewards are the episodes' own answers, scored against their own pass's code (the row's
    # ground_truth column says only "drawn per episode").
    assert len(scored) == len(episodes)
    by_session = {e.result.session_id: e for e in episodes}
    for row in scored:
        episode = by_session[row["session"]]
        assert row["answer"] == episode.result.answer and row["truth"] == episode.ground_truth
        assert row["reward"] == float((row["answer"] or "").strip() == episode.ground_truth)
        if row["reward"] == 1.0 and episode in served:
            assert code_shown(episode) == episode.ground_truth
    logged = [entry["reward"] for entry in trainer.state.log_history if "reward" in entry]
    assert len(logged) == STEPS


def test_the_ablation_pass_hides_the_episode_code(gateway: RunningGateway) -> None:
    """The ablation's episode reads a pass with its code blanked; its ground truth is drawn as before."""
    mcp = tool_only.demo_mcp(gateway.url)
    tokenizer = tool_only.tokenizer(["x"])
    label = tool_only.TRAIN_LABELS[0]
    blank = tool_only.maker(label, blank=True)(random.Random(0))
    answer = warm_start.answer_turn(blank.ground_truth)
    episode = anyio.run(
        lambda: run_tape_episode(
            tool_only.row(label)["prompt"], tokenizer, warm_start.scripted([tool_only.tool_turn(), answer], tokenizer),
            mcp, tool_only.LIMITS, 1024, attachment=blank,
        )
    )  # fmt: skip
    assert episode.result.stop is Stop.ANSWER and episode.ground_truth in tool_only.CODES
    [tool_message] = [m for m in episode.result.messages if m["role"] == "tool"]
    assert f"{label}: {tool_only.BLANK}" in tool_message["content"]
    assert not any(code in tool_message["content"] for code in tool_only.CODES)


def test_the_trl_reward_scores_each_row_by_its_own_scorer() -> None:
    rows = [
        {"prompt": [], "data_source": "gaia", "reward_model": {"ground_truth": "7731"},
         "extra_info": {"task_id": "g", "scorer": "gaia"}},
        {"prompt": [], "data_source": "suite", "reward_model": {"ground_truth": "7,731"},
         "extra_info": {"task_id": "e", "scorer": "exact"}},
        {"prompt": [], "data_source": "suite", "reward_model": {"ground_truth": "7731.4"},
         "extra_info": {"task_id": "n", "scorer": "numeric", "tolerance": 0.001}},
    ]  # fmt: skip
    columns = grpo_dataset(rows).to_dict()
    rewards = gaia_grpo_reward(
        prompts=columns["prompt"], completions=[[]] * 3, gaia_answer=["7731"] * 3,
        gaia_solution=["<answer>7731</answer>"] * 3, **{k: columns[k] for k in ("ground_truth", "data_source",
        "scorer", "tolerance")},
    )  # fmt: skip
    # 7731 is not "7,731" to exact match, and is within 0.1% of 7731.4, as GAIA's scorer would not say.
    assert rewards == [1.0, 0.0, 1.0]
