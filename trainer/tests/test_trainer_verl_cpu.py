"""The settings of the CPU main_ppo run (`gaia_train.demo.verl_cpu.run_env`): a turn holds the model's
whole tool call, and the episode's budget adds up. A cap shorter than the call cut every call of the
policy mid-path, the loop answered the cut JSON itself, and no call reached the gateway."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("trl", reason="gaia_train.demo needs scripts/trl-extra.sh (make test runs it)")

from gaia_train.demo import verl_cpu, warm_start  # noqa: E402
from gaia_train.episode.budget import Budget  # noqa: E402


def inputs(longest_turn: int) -> verl_cpu.VerlCpuInputs:
    folder = Path("/nonexistent")
    return verl_cpu.VerlCpuInputs(
        folder / "model", folder / "train.parquet", folder / "val.parquet", 3, (7.0, 0.01), longest_turn
    )


def test_a_turn_is_the_longest_run_of_sampled_tokens() -> None:
    # prompt scaffolding (0), a sampled call (1), the tool response (0), a sampled answer (1)
    assert verl_cpu.longest_sampled_run([0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1]) == 4
    assert verl_cpu.longest_sampled_run([0, 0]) == 0


@pytest.mark.parametrize("longest_turn", [9, 89, 300])
def test_the_turn_cap_holds_the_longest_taught_turn_and_the_budget_fits(longest_turn: int) -> None:
    env = verl_cpu.run_env(inputs(longest_turn), "http://127.0.0.1:8080/mcp", 3, Path("/tmp/m.jsonl"))
    # 89: the warm start's tool call as verl's Qwen2Tokenizer encodes it; the old cap was 48
    assert int(env["TURN_TOKENS"]) >= longest_turn + verl_cpu.TURN_SLACK
    budget = Budget(
        model_len=int(env["MAX_MODEL_LEN"]),
        prompt_length=int(env["PROMPT_LENGTH"]),
        response_length=int(env["RESPONSE_LENGTH"]),
        max_turns=int(env["MAX_TURNS"]),
        turn_tokens=int(env["TURN_TOKENS"]),
        tool_tokens=int(env["TOOL_TOKENS_PER_TURN"]),
        reasoning_tokens=int(env["REASONING_TOKENS"]),
    )
    assert budget.problems() == []
    assert budget.turns_that_fit == warm_start.LIMITS.max_turns


def test_the_run_dumps_its_episodes_and_validates_after_its_last_step() -> None:
    env = verl_cpu.run_env(inputs(89), "http://127.0.0.1:8080/mcp", 3, Path("/tmp/run/m.jsonl"))
    assert (env["ROLLOUT_DATA_DIR"], env["VALIDATION_DATA_DIR"]) == (
        "/tmp/run/rollouts",
        "/tmp/run/validation",
    )
    assert env["TEST_FREQ"] == "3" and env["VAL_N"] == "1"


def test_the_warm_starts_loss_is_the_padded_batchs() -> None:
    """Episodes go through the model one by one, unpadded; the loss (and so each step) is still the
    full batch's mean over the sampled tokens, as one padded batch computes it."""
    import copy
    from types import SimpleNamespace

    import torch
    from gaia_train.demo.tiny_model import TinyModelConfig, build_model, build_tokenizer

    tokenizer = build_tokenizer(["a call, a file, an answer"] * 20)
    model = build_model(tokenizer, TinyModelConfig())
    generator = torch.Generator().manual_seed(0)
    episodes, rows = [], []
    for length, prompt in ((30, 10), (25, 7), (40, 12)):
        ids = torch.randint(1, len(tokenizer), (length,), generator=generator).tolist()
        sampled = [1 if i % 3 else 0 for i in range(length - prompt)]  # tool output between turns is 0
        tape = SimpleNamespace(prompt_ids=ids[:prompt], response_ids=ids[prompt:], response_mask=sampled)
        episodes.append(SimpleNamespace(tape=tape))
        rows.append((ids, [0] * prompt + sampled))
    width, pad = max(len(ids) for ids, _ in rows), model.config.pad_token_id
    input_ids = torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in rows])
    attention = torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in rows])
    labels = input_ids.clone()
    labels[torch.tensor([mask + [0] * (width - len(mask)) for _, mask in rows]) == 0] = -100
    model.eval()
    padded = model(input_ids=input_ids, attention_mask=attention, labels=labels).loss.item()
    [unpadded] = warm_start.warm_start(copy.deepcopy(model), episodes, steps=1, learning_rate=0.0)
    assert unpadded == pytest.approx(padded, rel=1e-5)
