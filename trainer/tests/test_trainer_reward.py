"""The GAIA reward against a table that walks every branch of the official scorer."""

from __future__ import annotations

import pytest
from gaia_train.reward import dense_reward_func, extract_answer, gaia_reward_func, question_scorer

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


def test_first_answer_tag_counts() -> None:
    assert gaia_reward_func("gaia", "<answer>41</answer> no wait <answer>42</answer>", "42") == 0.0
    assert gaia_reward_func("gaia", "<answer>42</answer> and <answer>41</answer>", "42") == 1.0


def test_answer_may_span_lines() -> None:
    assert extract_answer("<answer>\nBlue\nHeron\n</answer>") == "\nBlue\nHeron\n"
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
