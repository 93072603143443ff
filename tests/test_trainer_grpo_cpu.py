"""TRL GRPO steps on this CPU through the real gateway: the mechanics, checked from the outside.

A real `gaia-env serve` with the csv and docx servers serves the demo data; a tiny model built
on the spot is warm-started on scripted episodes through it, then TRL's GRPOTrainer runs two
steps whose completions are gateway-driven episodes. Checked: the weights change; during TRL's
own loss the gradient reaches the logits of sampled tokens only (tool output rows get exactly
zero) and TRL's tool mask is the tape's; every episode had its own MCP session, seen and ended by
the gateway; the tool output in the tapes is the real server's, and the rewards are the episodes'
own answers scored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import torch
from gaia_train.demo import warm_start
from gaia_train.demo.snapshot import write_demo_snapshot
from gaia_train.demo.tiny_model import build_model, build_tokenizer
from gaia_train.episode.session import McpToolSession
from gaia_train.episode.toolcalls import parse_tool_calls
from gaia_train.reward import question_scorer
from gaia_train.trl_adapter.rollout import (
    GaiaRollout,
    gaia_grpo_reward,
    grpo_config,
    grpo_dataset,
    grpo_trainer,
    row_plays,
)
from gateway_harness import RunningGateway, launch

GENERATIONS = 4
STEPS = 2


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("demo")
    write_demo_snapshot(root, skip_audio=True)
    return root


@pytest.fixture(scope="module")
def gateway(demo: Path, tmp_path_factory) -> Iterator[RunningGateway]:
    gateway = launch(tmp_path_factory.mktemp("gw"), "--servers", warm_start.SERVERS, dataset_dir=demo)
    yield gateway
    gateway.stop()


async def server_outputs(rows: list[warm_start.DemoTaskRow], mcp) -> dict[str, str]:
    """Each attachment as the real server renders it, asked directly (not through an episode)."""
    outputs = {}
    async with McpToolSession(mcp) as session:
        for task in rows:
            [call] = parse_tool_calls(task.tool_turn(), "direct_")
            outcome = await session.call(call)
            assert not outcome.is_error, outcome.text
            outputs[task.attachment] = outcome.text
    return outputs


def test_trl_grpo_steps_through_the_real_gateway(demo: Path, gateway: RunningGateway, tmp_path: Path) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)  # on a shared 2-core machine a second intra-op thread only waits
    mcp = warm_start.demo_mcp(gateway.url)
    rows = warm_start.demo_rows(demo)
    tokenizer = build_tokenizer(anyio.run(warm_start.corpus, rows, mcp) * 4)
    model = build_model(tokenizer)
    losses = warm_start.warm_start(model, anyio.run(warm_start.scripted_episodes, rows, tokenizer, mcp))
    assert losses[-1] < losses[0] / 4, losses

    dataset_rows = [r.row for r in rows]
    rollout = GaiaRollout(
        tokenizer, mcp, warm_start.LIMITS, response_length=1024, plays=row_plays(dataset_rows)
    )
    scored: list[dict[str, Any]] = []

    def reward(**kwargs: Any) -> list[float]:
        values = gaia_grpo_reward(**kwargs)
        scored.extend(
            {"answer": a, "truth": t, "session": s, "reward": r}
            for a, t, s, r in zip(
                kwargs["gaia_answer"], kwargs["ground_truth"], kwargs["gaia_session_id"], values, strict=True
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
    # A session gets a workspace on its first tool call: the scripted episodes (9) and every GRPO
    # episode whose call reached the servers, each its own, each ended (the gateway keys workspaces
    # by the MCP session it negotiated, so the names are not the X-Session-Id's hash).
    ended = re.findall(r"session ended, workspace removed: (s-[0-9a-f]+)", gateway.log())
    served = [e for e in episodes if e.result.metrics.total_tool_calls and not e.result.metrics.tool_errors]
    assert len(set(ended)) == len(ended)
    assert len(rows) ** 2 + len(served) <= len(ended) <= len(rows) ** 2 + len(episodes)
    assert gateway.status()["sessions"] == 0
    assert gateway.session_workspaces() == []

    # The tool output in the tapes is the real server's output for the episode's attachment.
    expected = anyio.run(server_outputs, rows, mcp)
    # 15 of 24 here; sampling is seeded per episode, but another CPU's float rounding samples other tokens.
    assert len(served) >= len(episodes) // 4, "the warm-started model should often call the right tool"
    for episode in served:
        [tool_message] = [m for m in episode.result.messages if m["role"] == "tool"]
        attachment = parse_tool_calls(
            tokenizer.decode(episode.tape.response_ids[: episode.tape.response_mask.index(0)]), "x_"
        )[0].arguments["file_path"]
        assert tool_message["content"] == expected[attachment]
        context = [
            t for t, m in zip(episode.tape.response_ids, episode.tape.response_mask, strict=True) if not m
        ]
        assert expected[attachment] in tokenizer.decode(context)

    # The rewards are the episodes' own answers, scored against the task's ground truth.
    assert len(scored) == len(episodes)
    by_session = {e.result.session_id: e for e in episodes}
    for row in scored:
        episode = by_session[row["session"]]
        assert row["answer"] == episode.result.answer
        right = row["answer"] is not None and question_scorer(row["answer"], row["truth"])
        assert row["reward"] == (1.0 if right else 0.0)
    rewarded = [by_session[r["session"]] for r in scored if r["reward"] == 1.0]
    assert all(e.result.metrics.total_tool_calls >= 1 for e in rewarded)
    logged = [entry["reward"] for entry in trainer.state.log_history if "reward" in entry]
    assert len(logged) == STEPS


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
