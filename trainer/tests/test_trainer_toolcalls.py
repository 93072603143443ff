"""Hermes / Qwen3 tool-call parsing: every block the model opened comes back, parsed or with its error."""

from __future__ import annotations

from gaia_train.episode.toolcalls import parse_arguments, parse_tool_calls, strip_tool_calls


def test_several_calls_in_one_turn_keep_their_order() -> None:
    text = (
        "<think>two files</think>\n"
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "/a"}}\n</tool_call>\n'
        '<tool_call>{"name": "add", "arguments": {"a": 1, "b": 2}}</tool_call>'
    )
    calls = parse_tool_calls(text, "call_1_")
    assert [(c.id, c.name, c.arguments, c.error) for c in calls] == [
        ("call_1_0", "read_file", {"path": "/a"}, None),
        ("call_1_1", "add", {"a": 1, "b": 2}, None),
    ]
    assert strip_tool_calls(text) == "<think>two files</think>"


def test_no_block_means_no_call() -> None:
    assert parse_tool_calls("<answer>4</answer>", "c") == []


def test_bad_json_is_an_error_call() -> None:
    [call] = parse_tool_calls('<tool_call>{"name": "add", "arguments": {"a": 1,}}</tool_call>', "c")
    assert call.error is not None and "not valid JSON" in call.error
    assert call.to_message()["function"]["arguments"].startswith('{"name": "add"')


def test_unclosed_block_is_an_error_call() -> None:
    [call] = parse_tool_calls('<tool_call>{"name": "add", "argu', "c")
    assert call.error is not None and "not closed" in call.error


def test_missing_name_and_non_object_are_errors() -> None:
    no_name, not_object = parse_tool_calls(
        '<tool_call>{"arguments": {}}</tool_call><tool_call>["add"]</tool_call>', "c"
    )
    assert no_name.error is not None and '"name"' in no_name.error
    assert not_object.error is not None and "JSON object" in not_object.error


def test_arguments_as_a_json_string_are_accepted() -> None:
    [call] = parse_tool_calls(
        '<tool_call>{"name": "add", "arguments": "{\\"a\\": 2, \\"b\\": 3}"}</tool_call>', "c"
    )
    assert call.error is None and call.arguments == {"a": 2, "b": 3}


def test_arguments_must_be_an_object() -> None:
    assert parse_arguments("c", "add", "[1, 2]").error is not None
    assert parse_arguments("c", "add", "{oops").error is not None
    assert parse_arguments("c", "add", "").arguments == {}
    assert parse_arguments("c", "add", None).arguments == {}
