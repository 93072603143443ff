"""TRL rollouts sample the same tokens whatever order the episodes' tool calls return in."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed: run scripts/trainer-extra.sh")
trl_rollout = pytest.importorskip(
    "gaia_train.trl_adapter.rollout", reason="TRL is not installed: run scripts/trl-extra.sh"
)

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

    monkeypatch.setattr(trl_rollout, "run_tape_episode", episode)
    rollout = trl_rollout.GaiaRollout(SimpleNamespace(eos_token_id=-1), mcp=None)
    prompts = [[{"index": i}] for i in range(len(delays))]
    runs = []
    for call in range(calls):
        runs.append(anyio.run(rollout._run_all, prompts, Uniform(), call, 0))
    return runs


def test_samples_do_not_depend_on_which_tool_call_returns_first(monkeypatch: pytest.MonkeyPatch) -> None:
    [in_order] = play(monkeypatch, [0.0, 0.01, 0.02, 0.03])
    [reversed_order] = play(monkeypatch, [0.03, 0.02, 0.01, 0.0])
    assert in_order == reversed_order
    assert len({tuple(ids) for ids in in_order}) == 4, "each episode has its own stream"


def test_each_step_draws_new_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = play(monkeypatch, [0.0, 0.0], calls=2)
    assert first != second


def row(task_id: str, question: str, **fields: Any) -> dict[str, Any]:
    info = {"task_id": task_id, **fields.pop("extra_info", {})}
    return {
        "prompt": [{"role": "user", "content": question}],
        "extra_info": info,
        "data_source": "gaia",
        "reward_model": {"ground_truth": "1"},
        **fields,
    }


def test_each_prompt_is_played_as_its_row_says(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [
        row("a", "plain?"),
        row(
            "b",
            "a sheet?",
            extra_info={"mcp_servers": ["excel-server"], "mcp_tools": ["read_data_from_excel"]},
        ),
        row("c", "as a team?", agent_name="demo_team"),
    ]
    seen: dict[str, tuple[Any, Any]] = {}

    async def episode(
        messages, tokenizer, generate_ids, mcp, limits, length, team, extra_info, attachment
    ) -> None:
        seen[messages[0]["content"]] = (team.name if team else None, extra_info)

    monkeypatch.setattr(trl_rollout, "run_tape_episode", episode)
    rollout = trl_rollout.GaiaRollout(
        SimpleNamespace(eos_token_id=-1), mcp=None, plays=trl_rollout.row_plays(rows)
    )
    # TRL repeats each prompt num_generations times and hands over copies.
    anyio.run(rollout._run_all, [r["prompt"] for r in rows[::-1]] * 2, Uniform(), 0, 0)
    assert seen == {
        "plain?": (None, {}),
        "a sheet?": (None, {"mcp_servers": ["excel-server"], "mcp_tools": ["read_data_from_excel"]}),
        "as a team?": ("demo_team", {}),
    }
    with pytest.raises(ValueError, match="a prompt of no row"):
        anyio.run(rollout._run_all, [[{"role": "user", "content": "unknown?"}]], Uniform(), 0, 0)


def test_prompts_are_found_after_the_datasets_round_trip() -> None:
    named = row("a", "named?", agent_name="demo_team")
    named["prompt"] = [{"role": "system", "content": "Be brief.", "name": "policy"}, *named["prompt"]]
    rows = [named, row("b", "plain?")]
    plays = trl_rollout.row_plays(rows)
    # What TRL hands over: the dataset's rows, each message with every key of the column.
    for prompt in trl_rollout.grpo_dataset(rows)["prompt"]:
        assert trl_rollout._prompt_key(prompt) in plays
    assert plays[trl_rollout._prompt_key(named["prompt"])].team.name == "demo_team"


def test_rows_that_trl_cannot_tell_apart_are_refused() -> None:
    with pytest.raises(ValueError, match="same prompt but a different agent_name"):
        trl_rollout.row_plays([row("a", "same?"), row("b", "same?", agent_name="demo_team")])
    assert len(trl_rollout.row_plays([row("a", "same?"), row("b", "same?")])) == 1


def test_a_team_row_that_selects_servers_is_refused_before_training() -> None:
    selecting = row("a", "team?", agent_name="demo_team", extra_info={"mcp_servers": ["excel-server"]})
    with pytest.raises(ValueError, match="whose roles each bring their own"):
        trl_rollout.row_plays([selecting])


def test_an_episode_the_environment_ended_is_excluded_from_the_loss(tokenizer, fake_mcp) -> None:
    from gaia_train.episode.loop import EpisodeLimits
    from gaia_train.episode.session import McpSettings

    class UniformOverTokenizer(torch.nn.Module):
        def forward(self, input_ids: Any, past_key_values: Any = None, use_cache: bool = True) -> Any:
            return SimpleNamespace(
                logits=torch.zeros(1, input_ids.shape[1], len(tokenizer)), past_key_values=None
            )

    trainer = SimpleNamespace(
        accelerator=SimpleNamespace(unwrap_model=lambda model: model),
        model=UniformOverTokenizer(),
        args=SimpleNamespace(seed=0),
    )
    prompt = [{"role": "user", "content": "What is the meeting code?"}]
    limits = EpisodeLimits(max_turns=1, episode_timeout_s=60)
    down = trl_rollout.GaiaRollout(
        tokenizer, McpSettings(url="http://127.0.0.1:9/mcp", open_backoff_s=0.05), limits, response_length=16
    )
    faulted = down([prompt, prompt], trainer)
    assert faulted["gaia_env_fault"] == [1, 1] and faulted["gaia_stop"] == ["environment_fault"] * 2
    assert all(set(mask) == {0} for mask in faulted["env_mask"])  # no token of theirs reaches the loss
    assert all(len(ids) == 1 for ids in faulted["completion_ids"]) and all(faulted["prompt_ids"])
    up = trl_rollout.GaiaRollout(tokenizer, McpSettings(url=fake_mcp.url), limits, response_length=16)
    served = up([prompt], trainer)
    assert served["gaia_env_fault"] == [0] and 1 in served["env_mask"][0]


def test_each_episode_draws_its_own_attachment_from_its_own_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    from gaia_train.trl_adapter.attachments import Attachment, episode_stream

    def draw(rng) -> Attachment:
        code = str(rng.randrange(10**6))
        return Attachment("pass.txt", f"code: {code}\n", code)

    handed: list[Attachment] = []

    async def episode(messages, tokenizer, generate_ids, mcp, limits, length, team, extra_info, attachment):
        handed.append(attachment)
        return attachment

    monkeypatch.setattr(trl_rollout, "run_tape_episode", episode)
    rows = [row("a", "which code?")]
    rollout = trl_rollout.GaiaRollout(
        SimpleNamespace(eos_token_id=-1),
        mcp=None,
        seed=7,
        plays=trl_rollout.row_plays(rows, attachments={"a": draw}),
    )
    prompts = [rows[0]["prompt"]] * 3
    first = rollout.play_prompts(prompts, Uniform(), 0)
    second = rollout.play_prompts(prompts, Uniform(), 1)
    assert first == [draw(episode_stream(7, 0, i)) for i in range(3)], "drawn from the episode's own stream"
    assert len({a.ground_truth for a in first + second}) == 6, "every episode of every step its own file"
    assert rollout.play_prompts(prompts, Uniform(), 0) == first, "a replay draws the same files"


def test_attachments_a_row_cannot_use_are_refused() -> None:
    def maker(rng):
        raise AssertionError("never drawn")

    with pytest.raises(ValueError, match="attachments are given for task ids \\['b'\\], which no row has"):
        trl_rollout.row_plays([row("a", "a?")], attachments={"b": maker})
    with pytest.raises(ValueError, match="a per-episode attachment is for the single agent"):
        trl_rollout.row_plays([row("a", "team?", agent_name="demo_team")], attachments={"a": maker})


def test_the_reward_scores_an_episode_against_its_own_ground_truth() -> None:
    columns = trl_rollout.grpo_dataset([row("a", "code?"), row("b", "code?"), row("c", "code?")]).to_dict()
    rewards = trl_rollout.gaia_grpo_reward(
        prompts=columns["prompt"], completions=[[]] * 3, ground_truth=["(drawn per episode)"] * 2 + ["KLM"],
        gaia_answer=["KLM", "KLM", "KLM"], gaia_solution=[""] * 3, gaia_ground_truth=["KLM", "QRS", None],
    )  # fmt: skip
    # Its own file's code, not the row's column; a row without a drawn file keeps the column.
    assert rewards == [1.0, 0.0, 1.0]
