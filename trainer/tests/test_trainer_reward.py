"""The GAIA reward against a table that walks every branch of the official scorer."""

from __future__ import annotations

import pytest
from gaia_train.reward import ANSWER_KEY, dense_reward_func, final_answer, gaia_reward_func, question_scorer

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
    assert gaia_reward_func("gaia", solution, truth) == (1.0 if expected else 0.0)


def test_no_answer_tag_scores_zero() -> None:
    assert gaia_reward_func("gaia", "The answer is 42.", "42") == 0.0
    assert gaia_reward_func("gaia", "<answer>42", "42") == 0.0  # never closed


def test_the_last_answer_of_the_last_turn_counts() -> None:
    assert gaia_reward_func("gaia", "<answer>41</answer> no wait <answer>42</answer>", "42") == 1.0
    assert gaia_reward_func("gaia", "<answer>42</answer> and <answer>41</answer>", "42") == 0.0


def test_answer_may_span_lines() -> None:
    assert final_answer("<answer>\nBlue\nHeron\n</answer>") == "\nBlue\nHeron\n"
    assert gaia_reward_func("gaia", "<answer>\nBlue\nHeron\n</answer>", "Blue Heron") == 1.0


def test_numeric_ground_truth_is_accepted() -> None:
    assert gaia_reward_func("gaia", "<answer>3070</answer>", 3070) == 1.0
    assert gaia_reward_func("gaia", "<answer>87.5</answer>", 87.5) == 1.0


def test_hidden_test_split_answer_is_refused() -> None:
    with pytest.raises(ValueError, match="test split"):
        gaia_reward_func("gaia", "<answer>x</answer>", "?")


def test_bad_inputs_say_what_is_wrong() -> None:
    with pytest.raises(TypeError, match="ground_truth"):
        gaia_reward_func("gaia", "<answer>x</answer>", None)
    with pytest.raises(TypeError, match="solution_str"):
        gaia_reward_func("gaia", None, "x")  # type: ignore[arg-type]


def test_dense_reward_keeps_the_answer_dominant() -> None:
    right = "<think>plan</think><answer>42</answer>"
    wrong_busy = "</think>" + "<tool_call>{}</tool_call>" * 5 + "<answer>41</answer>"
    assert dense_reward_func("gaia", "<answer>42</answer>", "42") == pytest.approx(1.0)
    assert dense_reward_func("gaia", right, "42") == pytest.approx(1.05)
    # five calls, capped at 0.1, plus the think bonus: still far below a right answer
    assert dense_reward_func("gaia", wrong_busy, "42") == pytest.approx(0.15)
    assert dense_reward_func("gaia", wrong_busy, "42") < dense_reward_func(
        "gaia", "<answer>42</answer>", "42"
    )


def test_dense_reward_penalises_calls_past_the_budget() -> None:
    info = {"gaia_tool_calls": 30}
    score = dense_reward_func("gaia", "<answer>42</answer>", "42", info, tool_call_budget=20)
    assert score == pytest.approx(1.0 + 0.1 - 0.01 * 10)
    # the count the agent loop reports wins over counting tags
    assert dense_reward_func("gaia", "<answer>1</answer>", "42", {"gaia_tool_calls": 1}) == pytest.approx(
        0.02
    )


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
    assert gaia_reward_func("gaia", text, "42") == 1.0


@pytest.mark.parametrize("text", NO_ANSWER.values(), ids=NO_ANSWER.keys())
def test_an_answer_the_agent_did_not_write_scores_nothing(text: str) -> None:
    assert final_answer(text) is None
    assert gaia_reward_func("gaia", text, "42") == 0.0


def test_the_loops_answer_wins_over_the_text() -> None:
    text = qwen3_decoded(CALL, "<answer>42</answer>")
    assert gaia_reward_func("gaia", text, "42", {ANSWER_KEY: None}) == 0.0
    assert gaia_reward_func("gaia", "<answer>41</answer>", "42", {ANSWER_KEY: "42", "index": 3}) == 1.0
    # without the key (another loop, an old trajectory) the text is read
    assert gaia_reward_func("gaia", "<answer>42</answer>", "42", {"index": 3}) == 1.0
    with pytest.raises(TypeError, match=ANSWER_KEY):
        gaia_reward_func("gaia", "", "42", {ANSWER_KEY: 42})
