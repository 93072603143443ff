"""The episode budget's arithmetic and the sentences that say what to change."""

from __future__ import annotations

from gaia_train.episode.budget import Budget


def recipe(**changes: int | None) -> Budget:
    values = dict(
        model_len=131072,
        prompt_length=4096,
        response_length=126976,
        max_turns=32,
        turn_tokens=1792,
        tool_tokens=2048,
        longest_prompt=1500,
        tool_output_tokens=2000,
    )
    values.update(changes)
    return Budget(**values)


def test_the_defaults_fit_their_turns() -> None:
    budget = recipe()
    # n turns cost n * 1792 + (n - 1) * 2048: 33 fit in 126976, 34 would need 128512
    assert budget.turns_that_fit == 33
    assert budget.problems() == [] and budget.warnings() == []
    assert "turns that fit" in budget.table() and "33" in budget.table()


def test_each_contradiction_is_named_with_its_numbers() -> None:
    assert recipe(response_length=131072).problems() == [
        "data.max_prompt_length (4096) + data.max_response_length (131072) = 135168 is more than "
        "actor_rollout_ref.rollout.max_model_len (131072): lower PROMPT_LENGTH or RESPONSE_LENGTH, "
        "or raise MAX_MODEL_LEN"
    ]
    [long_prompt] = recipe(longest_prompt=5000).problems()
    assert "5000 tokens" in long_prompt and "raise PROMPT_LENGTH to at least 5000" in long_prompt
    [few_turns] = recipe(max_turns=40).problems()
    assert "only 33 of max_assistant_turns=40" in few_turns and "raise RESPONSE_LENGTH to 151552" in few_turns
    assert any("whole response budget" in p for p in recipe(turn_tokens=200000).problems())


def test_what_cannot_be_promised_is_a_warning() -> None:
    assert recipe(turn_tokens=None).turns_that_fit is None
    assert "no number of turns is guaranteed" in recipe(turn_tokens=None).warnings()[0]
    assert "will be cut to fit the turn" in recipe(tool_output_tokens=3000).warnings()[0]
    assert "not counted" in recipe(longest_prompt=None).table()


def test_a_team_pays_for_its_hand_offs() -> None:
    from gaia_train.teams.team import load_team

    team = load_team("research_team")
    turns = team.max_turns(32)  # the researcher's 16, and 4 delegations of the coder's 8
    assert turns == 16 + 4 * 8
    budget = recipe(max_turns=turns, delegations=team.max_delegations, handoff_tokens=3000)
    # (126976 - 4 * 3000 + 2048) // (1792 + 2048) = 30 turns of every role together
    assert budget.turns_that_fit == 30
    [few] = budget.problems()
    assert "only 30 of max_assistant_turns=48" in few and "4 hand-offs of 3000 tokens" in few
    assert "raise RESPONSE_LENGTH to 194272" in few  # 48 * 1792 + 47 * 2048 + 4 * 3000
    assert "longest hand-off to a role" in budget.table()
    assert recipe(max_turns=24, delegations=4, handoff_tokens=3000).problems() == []


def test_a_continued_thought_is_counted_in_every_turn() -> None:
    # the recipe's defaults: 12 turns of up to 6144 + 1792 sampled tokens, 2048 tool tokens between
    budget = recipe(max_turns=12, reasoning_tokens=6144)
    assert budget.sampled_per_turn == 7936 and budget.turns_that_fit == 12 and budget.problems() == []
    [problem] = recipe(reasoning_tokens=6144).problems()  # 32 turns no longer fit
    assert "only 12 of max_assistant_turns=32 turns fit" in problem and "(thoughts up to 6144)" in problem
    assert "REASONING_TOKENS" in problem and "raise RESPONSE_LENGTH to 317440" in problem
