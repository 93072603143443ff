"""The GAIA reward: the official `question_scorer` applied to the agent's own final answer.

What is scored is the answer the agent wrote last, never text it only read or thought: the episode
loop hands its final answer over as `extra_info["gaia_answer"]` (VeRL's naive reward manager merges
the loop's `extra_fields` into `extra_info`). Without it (another loop, another reward manager, an old
trajectory), `final_answer` reads the decoded response: the last `<answer>` of the last assistant
turn, outside `<think>`, `<tool_call>` and `<tool_response>` blocks. The episode loop stops on the
same rule, so training, eval and the stop decision agree.

The scorer follows the GAIA leaderboard's scorer.py branch for branch, quirks included, so a
reward of 1.0 here is a point on the leaderboard. The one deliberate difference: an answer
that cannot be read as a number is never equal to a number (the original maps it to +inf,
which would equal a ground truth of "inf").

The functions VeRL is given (`gaia_reward_func`, `dense_reward_func`, `routed_reward_func`) answer in
VeRL's dict form: `score` (the reward), `acc` (1.0 for a right answer) and what happened in the
episode as numbers (`episode_extras`), which VeRL logs per data_source in validation and keeps in its
dumps. `gaia_score` and `routed_score` are the plain 0/1 scores for everything else (eval, TRL).
"""

from __future__ import annotations

import functools
import importlib
import math
import re
import string
from collections.abc import Mapping
from typing import Any

ANSWER_RE = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
TOOL_CALL_RE = re.compile(r"<tool_call>.*?</tool_call>", re.DOTALL)
ANSWER_KEY = "gaia_answer"
"""The `extra_info` key holding the loop's final answer (None: the episode ended without one)."""
# A block left open runs to the end of the text: a turn cut at its token limit.
_TOOL_RESPONSE_RE = re.compile(r"<tool_response>.*?(?:</tool_response>|$)", re.DOTALL)
_THINK_RE = re.compile(r"<think>.*?(?:</think>|$)", re.DOTALL)
_OPEN_TOOL_CALL_RE = re.compile(r"<tool_call>.*?(?:</tool_call>|$)", re.DOTALL)
_LIST_SEPARATORS = re.compile(r"[,;]")
_PUNCT_TABLE = str.maketrans("", "", string.punctuation)


def _last_assistant_turn(text: str) -> str:
    # Tool responses separate the assistant's turns; the role words a decode with
    # skip_special_tokens leaves between them ("user", "assistant") never hold an answer.
    turns = [turn for turn in _TOOL_RESPONSE_RE.split(text) if turn.strip()]
    return turns[-1] if turns else ""


def _without_reasoning(turn: str) -> str:
    turn = _THINK_RE.sub("", turn)
    # Thinking templates open `<think>` in the prompt, so a turn may hold only the closing tag.
    _, closing, after = turn.rpartition("</think>")
    return after if closing else turn


def final_answer(text: str) -> str | None:
    """The agent's final answer in a response: the last `<answer>` of its last turn, outside reasoning and tools.

    `text` is one assistant turn or a whole decoded multi-turn response (tool responses included,
    as VeRL's reward manager decodes it). None when the last turn gives no answer.
    """
    if not isinstance(text, str):
        raise TypeError(f"solution_str must be a str, got {type(text).__name__}")
    turn = _OPEN_TOOL_CALL_RE.sub("", _without_reasoning(_last_assistant_turn(text)))
    answers = ANSWER_RE.findall(turn)
    return answers[-1] if answers else None


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def normalize_number_str(number_str: str) -> float:
    # Units and thousands separators are dropped so "$1,000" reads as 1000.
    for char in ("$", "%", ","):
        number_str = number_str.replace(char, "")
    try:
        return float(number_str)
    except ValueError:
        return math.nan  # NaN equals nothing: an unreadable answer never scores


def normalize_str(input_str: str, remove_punct: bool = True) -> str:
    # All whitespace goes ("sea gull" == "seagull"); case never matters.
    no_spaces = re.sub(r"\s", "", input_str).lower()
    return no_spaces.translate(_PUNCT_TABLE) if remove_punct else no_spaces


def question_scorer(model_answer: str, ground_truth: str) -> bool:
    """Official GAIA comparison of one answer with one ground truth."""
    if _is_float(ground_truth):
        return normalize_number_str(model_answer) == float(ground_truth)
    if "," in ground_truth or ";" in ground_truth:
        gt_elems = _LIST_SEPARATORS.split(ground_truth)
        ma_elems = _LIST_SEPARATORS.split(model_answer)
        if len(gt_elems) != len(ma_elems):
            return False
        for ma_elem, gt_elem in zip(ma_elems, gt_elems, strict=True):
            if _is_float(gt_elem):
                if normalize_number_str(ma_elem) != float(gt_elem):
                    return False
            # Punctuation is kept inside list elements: it can be the answer ("a.b", "c++").
            elif normalize_str(ma_elem, remove_punct=False) != normalize_str(gt_elem, remove_punct=False):
                return False
        return True
    return normalize_str(model_answer) == normalize_str(ground_truth)


def _ground_truth_str(ground_truth: Any) -> str:
    if isinstance(ground_truth, str):
        return ground_truth
    if isinstance(ground_truth, (int, float)) and not isinstance(ground_truth, bool):
        return str(ground_truth)
    raise TypeError(
        f"ground_truth must be a str (or a number), got {type(ground_truth).__name__}: {ground_truth!r}; "
        "check the reward_model.ground_truth column of the dataset"
    )


def agent_answer(solution_str: str, extra_info: Mapping[str, Any] | None) -> str | None:
    """The answer to score: the loop's own when it reported one, else the one read from the text."""
    if extra_info is not None and ANSWER_KEY in extra_info:
        answer = extra_info[ANSWER_KEY]
        if answer is None or isinstance(answer, str):
            return answer
        raise TypeError(f"extra_info[{ANSWER_KEY!r}] must be a str or None, got {type(answer).__name__}")
    return final_answer(solution_str)


def gaia_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None = None
) -> float:
    """1.0 when the agent's final answer matches the ground truth, else 0.0.

    The answer is `extra_info["gaia_answer"]` when the loop sent it, else `final_answer(solution_str)`.
    The test split's ground truth is "?" upstream; scoring against it is refused rather than
    silently returning 0.
    """
    truth = _ground_truth_str(ground_truth)
    if truth.strip() == "?":
        raise ValueError(
            "ground truth is '?': this row comes from GAIA's test split, whose answers are hidden; "
            "train and score on the validation split only"
        )
    answer = agent_answer(solution_str, extra_info)
    if answer is None:
        return 0.0
    return 1.0 if question_scorer(answer, truth) else 0.0


# The episode's stop reason (gaia_train.episode.loop.Stop) as a number, for VeRL's metrics, which
# average numbers only. Codes are stable: a new stop reason gets the next free one (a test checks
# that every Stop has one). -1: the row's loop reported none (another agent loop).
STOP_CODES = {
    "answer": 0,
    "no_tool_call": 1,
    "max_turns": 2,
    "response_budget": 3,
    "turn_length": 4,
    "deadline": 5,
    "model_error": 6,
    "environment_fault": 7,
}
UNKNOWN_STOP = -1
# The numbers the agent loop reports in extra_info, logged as they are (0 when a loop reports none).
EPISODE_COUNTS = ("gaia_tool_calls", "gaia_tool_errors", "gaia_turns", "gaia_delegations", "gaia_env_fault")


def stop_code(stop: Any) -> int:
    """The number logged for a stop reason; refuses one this table does not know."""
    if stop is None or stop == "":
        return UNKNOWN_STOP
    if str(stop) not in STOP_CODES:
        raise ValueError(
            f"stop reason {stop!r} has no code in gaia_train.reward.STOP_CODES: add it there (the next free "
            "number) so VeRL can log it"
        )
    return STOP_CODES[str(stop)]


def episode_extras(extra_info: Mapping[str, Any] | None) -> dict[str, float]:
    """What happened in the episode, as numbers: the same keys for every row (VeRL stacks them)."""
    info = extra_info or {}
    extras: dict[str, float] = {"gaia_stop": float(stop_code(info.get("gaia_stop")))}
    for key in EPISODE_COUNTS:
        value = info.get(key)
        extras[key] = float(value) if isinstance(value, (int, float)) else 0.0
    return extras


def reward_dict(score: float, acc: float, extra_info: Mapping[str, Any] | None) -> dict[str, float]:
    """VeRL's dict form: `score` is the reward, `acc` whether the answer is right (validation's core
    metric, per data_source), the rest what happened in the episode."""
    return {"score": float(score), "acc": float(acc), **episode_extras(extra_info)}


def gaia_reward_func(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None = None
) -> dict[str, float]:
    """The reward VeRL calls (reward.custom_reward_function.name=gaia_reward_func): `score` and `acc`
    are `gaia_score` (1.0 for a right final answer, else 0.0); the other keys are `episode_extras`."""
    score = gaia_score(data_source, solution_str, ground_truth, extra_info)
    return reward_dict(score, score, extra_info)


def _successful_calls(extra_info: Mapping[str, Any] | None) -> int:
    # Only the loop knows which calls succeeded; a response from elsewhere earns nothing for its calls.
    info = extra_info or {}
    calls, errors = info.get("gaia_tool_calls"), info.get("gaia_tool_errors")
    if not isinstance(calls, (int, float)) or not isinstance(errors, (int, float)):
        return 0
    return max(0, int(calls) - int(errors))


def _count_tool_calls(solution_str: str, extra_info: Mapping[str, Any] | None) -> int:
    # The VeRL adapter reports the count it executed; counting tags is the fallback for
    # solutions produced elsewhere.
    if extra_info is not None and isinstance(extra_info.get("gaia_tool_calls"), (int, float)):
        return int(extra_info["gaia_tool_calls"])
    return len(TOOL_CALL_RE.findall(solution_str))


def dense_reward_func(
    data_source: str,
    solution_str: str,
    ground_truth: Any,
    extra_info: Mapping[str, Any] | None = None,
    *,
    tool_bonus: float = 0.02,
    tool_bonus_cap: float = 0.1,
    tool_call_budget: int = 20,
    over_budget_penalty: float = 0.01,
) -> dict[str, float]:
    """Optional shaped reward; the plain 0/1 `gaia_reward_func` is the default and the metric.

    score = answer (0 or 1) + min(successful_calls * tool_bonus, tool_bonus_cap)
            - over_budget_penalty * calls past tool_call_budget.
    A successful call is one the loop ran without an error (gaia_tool_calls - gaia_tool_errors);
    failed calls, calls to unknown tools and closing a thought earn nothing. Keep tool_bonus_cap
    well below 1 so a right answer always outranks any amount of tool use. The constants are set
    with +reward.custom_reward_function.reward_kwargs.NAME=VALUE.
    """
    for name, value in (("tool_bonus", tool_bonus), ("tool_bonus_cap", tool_bonus_cap)):
        if value < 0:
            raise ValueError(f"{name} must not be negative, got {value}")
    if tool_bonus_cap >= 1:
        raise ValueError(f"tool_bonus_cap must be below 1 (a right answer is 1), got {tool_bonus_cap}")
    answer_score = gaia_score(data_source, solution_str, ground_truth, extra_info)
    calls = _count_tool_calls(solution_str, extra_info)
    shaped = answer_score + min(_successful_calls(extra_info) * tool_bonus, tool_bonus_cap)
    shaped -= over_budget_penalty * max(0, calls - tool_call_budget)
    return reward_dict(shaped, answer_score, extra_info)


# Multi-task datasets: each row names its scorer in extra_info["scorer"] (gaia-train dataset
# writes it from the task file); routed_reward_func is the one function VeRL is given.
SCORER_KEY = "scorer"
BUILTIN_SCORERS = ("gaia", "exact", "numeric")


def _exact(answer: str, truth: str) -> bool:
    # Case and runs of whitespace never matter; everything else does.
    return " ".join(answer.split()).casefold() == " ".join(truth.split()).casefold()


def _numeric(answer: str, truth: str, tolerance: float) -> bool:
    got, want = normalize_number_str(answer.strip()), normalize_number_str(truth.strip())
    if math.isnan(want):
        raise ValueError(f"the numeric scorer needs a number as ground truth, got {truth!r}")
    return abs(got - want) <= tolerance * max(1.0, abs(want))


@functools.cache
def _user_scorer(spec: str) -> Any:
    module_name, _, function_name = spec.partition(":")
    try:
        function = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(
            f"scorer {spec!r} cannot be loaded ({exc}): name a function as 'package.module:function', "
            f"or one of {', '.join(BUILTIN_SCORERS)}"
        ) from None
    if not callable(function):
        raise ValueError(f"scorer {spec!r} is not a function")
    return function


def is_gaia_source(data_source: str) -> bool:
    """GAIA's rows: data_source "gaia", or "gaia/level1".. as `gaia-train dataset` writes them."""
    return data_source == "gaia" or data_source.startswith("gaia/")


def routed_score(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None = None
) -> float:
    """The score of a mixed dataset's row: each row scored by its own scorer, the agent's own answer first.

    extra_info["scorer"]: "gaia" (the official scorer; the default for GAIA's data sources),
    "exact" (case and whitespace ignored; the default otherwise), "numeric" (within
    extra_info["tolerance"], relative to the ground truth's size, default 1e-6) or
    "package.module:function", called as VeRL calls a reward function.
    """
    info = extra_info or {}
    scorer = str(info.get(SCORER_KEY) or ("gaia" if is_gaia_source(data_source) else "exact"))
    if scorer == "gaia":
        return gaia_score(data_source, solution_str, ground_truth, extra_info)
    if scorer not in BUILTIN_SCORERS:
        result = _user_scorer(scorer)(data_source, solution_str, ground_truth, extra_info)
        # A user scorer may answer in VeRL's dict form too.
        return float(result["score"] if isinstance(result, Mapping) else result)
    truth = _ground_truth_str(ground_truth)
    answer = agent_answer(solution_str, extra_info)
    if answer is None:
        return 0.0
    if scorer == "exact":
        return 1.0 if _exact(answer, truth) else 0.0
    tolerance = float(info.get("tolerance") or 1e-6)
    return 1.0 if _numeric(answer, truth, tolerance) else 0.0


def routed_reward_func(
    data_source: str, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None = None
) -> dict[str, float]:
    """The reward VeRL calls for a mixed dataset: `routed_score` in VeRL's dict form (see `reward_dict`)."""
    score = routed_score(data_source, solution_str, ground_truth, extra_info)
    return reward_dict(score, score, extra_info)
