"""A multi-agent episode end to end: the demo team on the demo data through the real gateway.

The researcher (filesystem and csv servers) leaves a note in the workspace and delegates; the coder
(the terminal server) reads the note and computes in the sandbox; both answer. Then TRL's GRPOTrainer
runs two steps whose completions are demo-team episodes sampled from a tiny model warm-started on
those scripted episodes. Checked from the outside: every role's calls reached its own servers under
the episode's one session, which the gateway ended; the coder read what the researcher wrote; every
role's sampled tokens are mask 1 and nothing else is; TRL's tool mask is the tape's.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from gaia_kit_testing.gateway import RunningGateway, launch
from gaia_kit_testing.verl_loop import runs
from gaia_train.demo import warm_start
from gaia_train.demo.snapshot import write_demo_snapshot
from gaia_train.episode.session import McpSettings
from gaia_train.teams.team import load_team

STEPS = 2
GENERATIONS = 6
"""The warm-started model answers right about half the time: a group of six with one reward for all
(and so no gradient) has odds of about 1 in 30, in both steps about 1 in 1,000."""

pytest.importorskip("torch", reason="the tiny model needs torch: run scripts/trainer-extra.sh")
from gaia_train.demo.tiny_model import build_model, build_tokenizer  # noqa: E402


@pytest.fixture(scope="module")
def demo() -> Iterator[Path]:
    # Run as root, the sandbox drops each command to an unprivileged uid, which cannot enter pytest's
    # own temporary folders (mode 0700): the coder reads the dataset from a folder anyone may read.
    root = Path(tempfile.mkdtemp(prefix="gaia-team-demo-"))
    root.chmod(0o755)
    write_demo_snapshot(root, skip_audio=True)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def gateway(demo: Path, tmp_path_factory) -> Iterator[RunningGateway]:
    gateway = launch(tmp_path_factory.mktemp("gw"), "--servers", warm_start.TEAM_SERVERS, dataset_dir=demo)
    yield gateway
    gateway.stop()


@pytest.fixture(scope="module")
def setup(demo: Path, gateway: RunningGateway):
    team = load_team(warm_start.TEAM)
    [task] = warm_start.demo_rows(demo, (warm_start.TEAM_TASK,), warm_start.TEAM)
    mcp = McpSettings(url=gateway.url, max_output_chars=warm_start.MAX_TOOL_OUTPUT)
    tokenizer = build_tokenizer(anyio.run(warm_start.team_corpus, task, team, mcp) * 4)
    return team, task, mcp, tokenizer


def tool_calls(gateway: RunningGateway, session: str) -> list[tuple[str, str]]:
    """(server, tool) of every call the gateway logged for `session`, in order."""
    records = [json.loads(line) for line in gateway.log().splitlines() if line.startswith("{")]
    return [
        (r["server"], r["tool"])
        for r in records
        if r.get("msg") == "tool call" and r.get("session") == session
    ]


def test_the_demo_team_works_through_the_real_gateway(setup, gateway: RunningGateway) -> None:
    team, task, mcp, tokenizer = setup
    episodes = anyio.run(warm_start.scripted_team_episodes, task, tokenizer, team, mcp)
    assert [e.result.answer for e in episodes] == list(warm_start.TEAM_ANSWERS)

    for episode, answer in zip(episodes, warm_start.TEAM_ANSWERS, strict=True):
        session = episode.result.session_id
        # Each role's calls went to its own servers, all under the episode's one session.
        assert tool_calls(gateway, session) == [
            ("filesystem-server", "write_file"),
            ("terminal-server", "execute_command"),
        ]
        # Every role's turns are mask 1, exactly as written, in order; the rest (the coder's prompt,
        # the tool responses, the coder's answer handed back) is mask 0.
        tape = episode.tape
        sampled = [tape.response_ids[s:e] for v, s, e in runs(tape.response_mask) if v == 1]
        expected = [
            tokenizer.encode(t, add_special_tokens=False) for t in warm_start.team_turns(task, answer)
        ]
        assert sampled == expected
        context = [tokenizer.decode(tape.response_ids[s:e]) for v, s, e in runs(tape.response_mask) if v == 0]
        assert len(context) == 4
        assert team.roles["coder"].prompt in context[1] and "execute_command(" in context[1]
        assert "write_file(" not in context[1]  # the coder sees its own tools only
        assert f"The coder answered: {answer}" in context[3]

        # The coder read the note the researcher wrote: one workspace for both roles.
        [delegation] = episode.team.delegations
        [coder_output] = [m["content"] for m in delegation.result.messages if m["role"] == "tool"]
        assert f"North rows of {task.attachment}" in coder_output and "3070" in coder_output
        assert delegation.servers == "terminal-server"

    assert gateway.status()["sessions"] == 0
    assert gateway.session_workspaces() == []


def test_the_demo_team_trains_with_trl_grpo(setup, gateway: RunningGateway, tmp_path: Path) -> None:
    pytest.importorskip("trl", reason="TRL comes with scripts/trl-extra.sh")
    import torch
    from gaia_train.trl_adapter.rollout import GaiaRollout, grpo_config, grpo_dataset, grpo_trainer, row_plays

    team, task, mcp, tokenizer = setup
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = build_model(tokenizer)
    scripted = anyio.run(warm_start.scripted_team_episodes, task, tokenizer, team, mcp, 4096, 3)
    losses = warm_start.warm_start(model, scripted, steps=150)
    assert losses[-1] < losses[0] / 4, losses

    # The row selects the team by its agent_name (demo_team), as under VeRL.
    rollout = GaiaRollout(
        tokenizer, mcp, warm_start.TEAM_LIMITS, response_length=2048, plays=row_plays([task.row])
    )
    config = grpo_config(
        str(tmp_path / "out"),
        steps=STEPS,
        prompts_per_step=1,
        num_generations=GENERATIONS,
        learning_rate=2e-3,
        temperature=1.0,
    )
    trainer = grpo_trainer(model, tokenizer, grpo_dataset([task.row]), rollout, config)
    masks_seen: list[tuple[list[int], list[int]]] = []
    compute_loss = trainer.compute_loss

    def recording_compute_loss(model, inputs, *args, **kwargs):
        for i in range(inputs["completion_ids"].shape[0]):
            n = int(inputs["completion_mask"][i].sum())
            masks_seen.append((inputs["completion_ids"][i, :n].tolist(), inputs["tool_mask"][i, :n].tolist()))
        return compute_loss(model, inputs, *args, **kwargs)

    trainer.compute_loss = recording_compute_loss
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    trainer.train()

    episodes = rollout.episodes
    assert len(episodes) == STEPS * GENERATIONS
    assert any(not torch.equal(before[name], p.detach()) for name, p in model.named_parameters())
    # TRL's tool mask is each team episode's tape mask, row for row.
    assert len(masks_seen) == len(episodes)
    for ids, mask in masks_seen:
        [tape_mask] = {tuple(e.tape.response_mask) for e in episodes if e.tape.response_ids == ids}
        assert mask == list(tape_mask)
    # Episodes that delegated trained the coder's turns too: mask-1 ids after the hand-off.
    delegated = [e for e in episodes if e.team.delegations]
    assert delegated, "the warm-started model should mostly delegate"
    for episode in delegated:
        mask_runs = runs(episode.tape.response_mask)
        assert (
            sum(1 for v, _, _ in mask_runs if v == 1) >= 3
        )  # the researcher's, the coder's, the researcher's
    assert len({e.result.session_id for e in episodes}) == len(episodes)
    assert gateway.status()["sessions"] == 0
    assert gateway.session_workspaces() == []
