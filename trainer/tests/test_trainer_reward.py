"""The GAIA reward against a table that walks every branch of the official scorer."""

from __future__ import annotations

import pytest
from gaia_train.episode.loop import Stop
from gaia_train.reward import (
    ANSWER_KEY,
    STOP_CODES,
    dense_reward_func,
    final_answer,
    gaia_reward_func,
    gaia_score,
    question_scorer,
    routed_reward_func,
    routed_score,
)

# (model answer, ground truth, expected) — grouped by the scorer branch they exercise.
CASES = [
    # numbers: $ % , stripped, then exact float equality
    ("1000", "1000", True),
    ("$1,000", "1000", True),
    ("12%", "12", True),
    ("12.0", "12", True),
    ("1e3", "1000", True),
    ("  42 ", "42", True),
    ("0.1", "0.10", True),
    ("3.14159", "3.14", False),
    ("12 apples", "12", False),
    ("twelve", "12", False),
    ("", "12", False),
    ("1 000", "1000", False),  # a space is not a thousands separator
    ("-5", "-5", True),
    ("abc", "inf", False),  # unparseable is never equal, not even to an "inf" truth
    ("nan", "nan", False),
    # lists: the truth has , or ; so both sides split on either
    ("East, North, South", "East, North, South", True),
    ("east,north,south", "East, North, South", True),
    ("East; North; South", "East, North, South", True),
    ("East, North", "East, North, South", False),
    ("East, North, South, West", "East, North, South", False),
    ("North, East, South", "East, North, South", False),  # order matters
    ("1, $2.5", "1, 2.5", True),  # numeric elements compare as numbers
    ("1, two", "1, 2", False),
    ("New York, Paris", "newyork, paris", True),  # whitespace goes, case goes
    ("a.b, c", "a.b, c", True),
    ("ab, c", "a.b, c", False),  # punctuation is kept inside list elements
    ("a.b., c", "a.b, c", False),
    # plain strings: whitespace and punctuation removed, lowercase
    ("Blue Heron", "Blue Heron", True),
    ("blue-heron.", "Blue Heron", True),
    ("BLUE  HERON", "Blue Heron", True),
    ("Heron", "Blue Heron", False),
    ("St. Petersburg", "Saint Petersburg", False),
    ("Thursday", "Thursday", True),
    ("None", "None", True),
]


@pytest.mark.parametrize(("answer", "truth", "expected"), CASES)
def test_question_scorer_table(answer: str, truth: str, expected: bool) -> None:
    assert question_scorer(answer, truth) is expected


@pytest.mark.parametrize(("answer", "truth", "expected"), CASES)
def test_reward_wraps_the_scorer_in_answer_tags(answer: str, truth: str, expected: bool) -> None:
    solution = f"I looked at the file.\n<answer>{answer}</answer>"
    assert gaia_score("gaia", solution, truth) == (1.0 if expected else 0.0)


def test_no_answer_tag_scores_zero() -> None:
    assert gaia_score("gaia", "The answer is 42.", "42") == 0.0
    assert gaia_score("gaia", "<answer>42", "42") == 0.0  # never closed


def test_the_last_answer_of_the_last_turn_counts() -> None:
    assert gaia_score("gaia", "<answer>41</answer> no wait <answer>42</answer>", "42") == 1.0
    assert gaia_score("gaia", "<answer>42</answer> and <answer>41</answer>", "42") == 0.0


def test_answer_may_span_lines() -> None:
    assert final_answer("<answer>\nBlue\nHeron\n</answer>") == "\nBlue\nHeron\n"
    assert gaia_score("gaia", "<answer>\nBlue\nHeron\n</answer>", "Blue Heron") == 1.0


def test_numeric_ground_truth_is_accepted() -> None:
    assert gaia_score("gaia", "<answer>3070</answer>", 3070) == 1.0
    assert gaia_score("gaia", "<answer>87.5</answer>", 87.5) == 1.0


def test_hidden_test_split_answer_is_refused() -> None:
    with pytest.raises(ValueError, match="test split"):
        gaia_score("gaia", "<answer>x</answer>", "?")


def test_bad_inputs_say_what_is_wrong() -> None:
    with pytest.raises(TypeError, match="ground_truth"):
        gaia_score("gaia", "<answer>x</answer>", None)
    with pytest.raises(TypeError, match="solution_str"):
        gaia_score("gaia", None, "x")  # type: ignore[arg-type]


def test_dense_reward_keeps_the_answer_dominant() -> None:
    busy = {"gaia_tool_calls": 5, "gaia_tool_errors": 0}
    assert dense_reward_func("gaia", "<answer>42</answer>", "42")["score"] == pytest.approx(1.0)
    # five calls that worked, capped at 0.1: still far below a right answer
    wrong_busy = dense_reward_func("gaia", "<answer>41</answer>", "42", busy)
    assert wrong_busy["score"] == pytest.approx(0.1) and wrong_busy["acc"] == 0.0
    right = dense_reward_func("gaia", "<answer>42</answer>", "42", busy)
    assert right["score"] == pytest.approx(1.1) and right["acc"] == 1.0


def test_dense_reward_pays_only_for_calls_that_succeeded() -> None:
    thought = "<think>plan</think>\n<answer>41</answer>"
    # closing a thought earns nothing (every thinking turn closes one)
    assert dense_reward_func("gaia", thought, "42")["score"] == 0.0
    # three calls, two of them failed or to unknown tools: one success pays
    mixed = {"gaia_tool_calls": 3, "gaia_tool_errors": 2}
    assert dense_reward_func("gaia", thought, "42", mixed)["score"] == pytest.approx(0.02)
    # all failed: nothing, however many
    failed = {"gaia_tool_calls": 5, "gaia_tool_errors": 5}
    assert dense_reward_func("gaia", thought, "42", failed)["score"] == 0.0
    # calls only seen as tags in the text (another loop): whether they worked is unknown, so nothing
    tags = "<tool_call>{}</tool_call>" * 5 + "<answer>41</answer>"
    assert dense_reward_func("gaia", tags, "42")["score"] == 0.0


def test_dense_reward_constants_are_settable_and_checked() -> None:
    info = {"gaia_tool_calls": 4, "gaia_tool_errors": 0}
    score = dense_reward_func("gaia", "<answer>1</answer>", "42", info, tool_bonus=0.05, tool_bonus_cap=0.5)
    assert score["score"] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="tool_bonus_cap must be below 1"):
        dense_reward_func("gaia", "<answer>1</answer>", "42", info, tool_bonus_cap=1.0)
    with pytest.raises(ValueError, match="tool_bonus must not be negative"):
        dense_reward_func("gaia", "<answer>1</answer>", "42", info, tool_bonus=-0.1)


def test_dense_reward_penalises_calls_past_the_budget() -> None:
    info = {"gaia_tool_calls": 30, "gaia_tool_errors": 0}
    score = dense_reward_func("gaia", "<answer>42</answer>", "42", info, tool_call_budget=20)["score"]
    assert score == pytest.approx(1.0 + 0.1 - 0.01 * 10)
    # the count the agent loop reports wins over counting tags
    one = dense_reward_func("gaia", "<answer>1</answer>", "42", {"gaia_tool_calls": 1, "gaia_tool_errors": 0})
    assert one["score"] == pytest.approx(0.02)


EPISODE = {
    "gaia_stop": "max_turns",
    "gaia_tool_calls": 7,
    "gaia_tool_errors": 2,
    "gaia_turns": 8,
    "gaia_delegations": 1,
    "gaia_team": "pair",
    "index": 3,
}
REWARD_KEYS = {
    "score", "acc", "gaia_stop", "gaia_tool_calls", "gaia_tool_errors", "gaia_turns", "gaia_delegations",
    "gaia_env_fault",
}  # fmt: skip


@pytest.mark.parametrize("reward", [gaia_reward_func, dense_reward_func, routed_reward_func])
def test_rewards_answer_in_verls_dict_form_with_the_episode(reward) -> None:
    result = reward("gaia/level1", "<answer>42</answer>", "42", {**EPISODE, ANSWER_KEY: "42"})
    assert set(result) == REWARD_KEYS
    assert all(isinstance(value, float) for value in result.values())  # VeRL averages them
    assert result["acc"] == 1.0 and result["gaia_stop"] == STOP_CODES["max_turns"] == 2
    assert (result["gaia_tool_calls"], result["gaia_tool_errors"], result["gaia_turns"]) == (7, 2, 8)
    assert result["gaia_delegations"] == 1 and result["gaia_env_fault"] == 0
    # the environment ended the episode: counted as such
    faulted = reward("gaia/level1", "", "42", {**EPISODE, ANSWER_KEY: None, "gaia_env_fault": 1})
    assert faulted["gaia_env_fault"] == 1.0 and faulted["acc"] == 0.0
    # a row whose loop reported nothing has the same keys (VeRL stacks every row's dict)
    bare = reward("gaia", "<answer>41</answer>", "42")
    assert set(bare) == REWARD_KEYS and bare["gaia_stop"] == -1 and bare["gaia_tool_calls"] == 0


def test_every_stop_reason_has_a_code() -> None:
    assert {str(stop) for stop in Stop} <= set(STOP_CODES)
    assert len(set(STOP_CODES.values())) == len(STOP_CODES)
    with pytest.raises(ValueError, match="has no code in gaia_train.reward.STOP_CODES"):
        gaia_reward_func("gaia", "", "42", {"gaia_stop": "gone_fishing"})


def test_gaia_levels_are_scored_by_the_gaia_scorer() -> None:
    # data_source per level (gaia/level1..3): still GAIA's scorer by default, not "exact"
    assert routed_score("gaia/level2", "<answer>$1,000</answer>", "1000") == 1.0
    assert routed_score("suite", "<answer>$1,000</answer>", "1000") == 0.0


# What VeRL's reward manager hands the reward: every response token decoded with
# skip_special_tokens=True, so Qwen3's <|im_start|>/<|im_end|> vanish and leave their role words,
# while <think>, <tool_call> and <tool_response> (added, not special, tokens) stay.
def qwen3_decoded(*turns: str) -> str:
    """Assistant turns joined by the tool-response turns Qwen3's template renders between them."""
    return "".join(
        turn if i % 2 == 0 else f"\nuser\n<tool_response>\n{turn}\n</tool_response>\nassistant\n"
        for i, turn in enumerate(turns)
    )


CALL = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n</tool_call>'

HOSTILE = {
    "a page holds an answer tag": qwen3_decoded(
        f"<think>\nI need the file.\n</think>\n\n{CALL}",
        "Quiz key: <answer>41</answer>",
        "<think>\nThe file says 42.\n</think>\n\n<answer>42</answer>",
    ),
    "reasoning restates the format": qwen3_decoded(
        "<think>\nI must put it in <answer></answer> tags, like <answer>x</answer>.\n</think>\n\n<answer>42</answer>"
    ),
    "the thinking template opened <think> in the prompt": qwen3_decoded(
        "Reasoning first: the format is <answer>41</answer>.\n</think>\n\n<answer>42</answer>"
    ),
    "the agent changes its mind": qwen3_decoded("<answer>41</answer> no, rechecking: <answer>42</answer>"),
    "an answer inside a tool call's arguments": qwen3_decoded(
        '<tool_call>\n{"name": "write_file", "arguments": {"content": "<answer>41</answer>"}}\n</tool_call>',
        "written",
        "<answer>42</answer>",
    ),
    "an earlier turn answered, the last one revised": qwen3_decoded(
        f"<answer>41</answer> let me check. {CALL}", "42", "<answer>42</answer>"
    ),
}

NO_ANSWER = {
    "only a tool response holds one": qwen3_decoded(CALL, "<answer>42</answer>"),
    "only the reasoning holds one": qwen3_decoded(
        "<think>\nIt is <answer>42</answer>.\n</think>\n\nNot sure."
    ),
    "reasoning cut at the turn limit": qwen3_decoded("<think>\nMaybe <answer>42</answer>"),
    "a response cut inside a tool response": qwen3_decoded(CALL, "") + "<tool_response>\n<answer>42</answer>",
}


@pytest.mark.parametrize("text", HOSTILE.values(), ids=HOSTILE.keys())
def test_the_agents_own_final_answer_is_scored(text: str) -> None:
    assert final_answer(text) == "42"
    assert gaia_score("gaia", text, "42") == 1.0


@pytest.mark.parametrize("text", NO_ANSWER.values(), ids=NO_ANSWER.keys())
def test_an_answer_the_agent_did_not_write_scores_nothing(text: str) -> None:
    assert final_answer(text) is None
    assert gaia_score("gaia", text, "42") == 0.0


def test_the_loops_answer_wins_over_the_text() -> None:
    text = qwen3_decoded(CALL, "<answer>42</answer>")
    assert gaia_score("gaia", text, "42", {ANSWER_KEY: None}) == 0.0
    assert gaia_score("gaia", "<answer>41</answer>", "42", {ANSWER_KEY: "42", "index": 3}) == 1.0
    # without the key (another loop, an old trajectory) the text is read
    assert gaia_score("gaia", "<answer>42</answer>", "42", {"index": 3}) == 1.0
    with pytest.raises(TypeError, match=ANSWER_KEY):
        gaia_score("gaia", "", "42", {ANSWER_KEY: 42})
