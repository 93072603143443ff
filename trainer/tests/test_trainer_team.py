"""Teams: the config file, and a team episode through the VeRL adapter built with verl 0.9.1's own types.

The loopback MCP server stands in for the gateway (its `selection` tool answers the MCP-Servers header a
call came with); a scripted rollout server samples every role's turns. Checked: every role's sampled
ids are mask 1 on the one tape, exactly as sampled and in order; the hand-off (the role's own prompt and
tools) and the delegate result are mask 0; the rollout server always continues from the tape; every
role's request carries the team's one X-Session-Id with its own MCP-Servers; the session is ended once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from gaia_kit_testing.verl_loop import ScriptedServer, call, make_loop, runs
from gaia_train.episode.loop import EpisodeLimits, Generation
from gaia_train.episode.session import McpSettings
from gaia_train.teams.delegation import SHARED_SESSION_MODE, run_team_episode
from gaia_train.teams.team import TEAMS_DIR, TeamConfigError, load_team, parse_team, teams_for_rows

pytestmark = pytest.mark.anyio

TEAM_TOML = """
name = "pair"
coordinator = "lead"
max_delegations = 2

[roles.lead]
description = "reads and answers"
prompt = "You lead."
servers = ["fake-lead"]
tools = ["read_file", "selection"]
delegates_to = ["helper"]

[roles.helper]
description = "adds numbers"
prompt = "You add. Answer in <answer></answer>."
servers = ["fake-helper"]
tools = ["add", "selection"]
max_turns = 3
"""

PROMPT = [
    {"role": "system", "content": "Answer in <answer></answer>."},
    {"role": "user", "content": "What is 2 + 3?"},
]


@pytest.fixture
def team_file(tmp_path: Path) -> Path:
    path = tmp_path / "pair.toml"
    path.write_text(TEAM_TOML)
    return path


# -- the config file ------------------------------------------------------------------------------


def test_the_shipped_teams_load() -> None:
    for path in TEAMS_DIR.glob("*.toml"):
        team = load_team(path.stem)
        assert team.name == path.stem and team.lead.delegates_to
    research = load_team("research_team")
    assert research.lead.servers == ("googlesearch-server", "wiki-server")
    assert research.roles["coder"].servers == ("e2b-code-server", "terminal-server")


def test_a_team_file_reads_into_roles(team_file: Path) -> None:
    team = load_team(team_file)
    assert team.coordinator == "lead" and team.max_delegations == 2
    assert team.roles["helper"].servers_header == "fake-helper" and team.roles["helper"].max_turns == 3
    schema = team.delegate_tool(team.lead)["function"]
    assert schema["name"] == "delegate" and schema["parameters"]["required"] == ["role", "task"]
    assert schema["parameters"]["properties"]["role"]["enum"] == ["helper"]
    assert "helper: adds numbers" in schema["description"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"coordinator": "boss"}, "coordinator must name one of the roles"),
        ({"colour": "red"}, "unknown keys colour"),
        ({"roles": {}}, "at least one"),
        ({"roles": {"lead": {"prompt": "x", "servers": []}}}, "at least one server"),
        (
            {"roles": {"lead": {"prompt": "x", "servers": ["a"], "delegates_to": ["ghost"]}}},
            "which is no role",
        ),
        ({"roles": {"lead": {"prompt": "x", "servers": ["a"], "delegates_to": ["lead"]}}}, "itself"),
        (
            {"roles": {"lead": {"servers": ["a"], "delegates_to": ["b"]}, "b": {"servers": ["c"]}}},
            "needs a prompt",
        ),
        ({"roles": {"lead": {"servers": ["a"], "max_turns": 0}}}, "max_turns"),
        ({"max_delegations": -1}, "max_delegations"),
        ({"name": "has space"}, "letters, digits"),
    ],
)
def test_a_bad_team_file_says_what_to_fix(change: dict[str, Any], message: str) -> None:
    import tomllib

    data = {**tomllib.loads(TEAM_TOML), **change}
    with pytest.raises(TeamConfigError, match=message):
        parse_team(data, "pair.toml")


def test_a_missing_team_names_the_shipped_ones(tmp_path: Path) -> None:
    with pytest.raises(TeamConfigError, match="shipped teams: .*demo_team"):
        load_team("no_such_team")
    bad = tmp_path / "bad.toml"
    bad.write_text("name = ")
    with pytest.raises(TeamConfigError, match="not valid TOML"):
        load_team(bad)


def test_rows_select_teams_by_name_given_files_first(team_file: Path) -> None:
    rows = [{"agent_name": "gaia_agent"}, {}, {"agent_name": "pair"}, {"agent_name": "demo_team"}]
    teams = teams_for_rows(rows, [team_file])
    assert {name: team.name for name, team in teams.items()} == {"pair": "pair", "demo_team": "demo_team"}
    assert teams["pair"].coordinator == "lead"  # the given file, not a shipped team
    with pytest.raises(TeamConfigError, match=r"'solo'.*neither gaia_agent nor a team \(teams: demo_team"):
        teams_for_rows([{"agent_name": "solo"}])


# -- a team episode on the message level ------------------------------------------------------------


class Scripted:
    """A policy that writes the given turns one after the other, whichever role asks."""

    def __init__(self, turns: list[str], starts: list[tuple[list[dict[str, Any]], list[str]]]):
        self.turns = turns
        self.starts = starts

    async def start(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
        self.starts.append(([dict(m) for m in messages], sorted(t["function"]["name"] for t in tools)))

    async def generate(self, messages: list[dict[str, Any]]) -> Generation:
        return Generation(text=self.turns.pop(0))

    async def observe(self, tool_messages: list[dict[str, Any]]) -> bool:
        return True

    def budget_left(self) -> bool:
        return True


async def play(team_file: Path, fake_mcp, turns: list[str]):
    starts: list[tuple[list[dict[str, Any]], list[str]]] = []
    team = load_team(team_file)
    result = await run_team_episode(
        PROMPT,
        team,
        lambda: Scripted(turns, starts),
        McpSettings(url=fake_mcp.url),
        EpisodeLimits(max_turns=8),
    )
    return result, starts


async def test_each_role_sees_its_own_tools_and_calls_through_its_own_selection(
    team_file: Path, fake_mcp
) -> None:
    turns = [
        call("selection"),
        call("delegate", role="helper", task="Add 2 and 3."),
        call("selection") + call("read_file", path="/data/notes.txt"),
        call("add", a=2, b=3),
        "<answer>5</answer>",
        "<answer>5</answer>",
    ]
    result, starts = await play(team_file, fake_mcp, turns)
    (lead_prompt, lead_tools), (helper_prompt, helper_tools) = starts
    assert lead_tools == ["delegate", "read_file", "selection"]
    assert helper_tools == ["add", "selection"]  # no delegate: the helper hands nothing on
    assert lead_prompt[0]["content"] == "You lead.\n\nAnswer in <answer></answer>."
    assert helper_prompt == [
        {"role": "system", "content": "You add. Answer in <answer></answer>."},
        {"role": "user", "content": "Task from the lead:\nAdd 2 and 3."},
    ]

    assert result.lead.answer == "5" and len(result.delegations) == 1
    transcript = result.transcript()
    tool_texts = [(m["gaia_role"], m["content"]) for m in transcript if m["role"] == "tool"]
    assert tool_texts[0] == ("lead", "fake-lead")
    assert tool_texts[1] == ("helper", "fake-helper")
    # the lead's tool (read_file) is not the helper's: refused by its own selection, never sent
    assert tool_texts[2][0] == "helper" and "Unknown tool 'read_file'" in tool_texts[2][1]
    assert tool_texts[3] == ("helper", "5")
    assert tool_texts[4] == ("lead", "The helper answered: 5")
    assert [m["gaia_role"] for m in transcript if m["role"] == "assistant"] == [
        "lead",
        "lead",
        "helper",
        "helper",
        "helper",
        "lead",
    ]

    # one X-Session-Id for every request of both roles, each role with its own MCP-Servers
    sessions = {sid for _, sid, _ in fake_mcp.selections}
    assert sessions == {result.session_id}
    assert {servers for method, _, servers in fake_mcp.selections if method == "POST"} == {
        "fake-lead",
        "fake-helper",
    }
    # ended once, by the coordinator, after every call of both roles
    methods = [method for method, _, _ in fake_mcp.selections]
    assert methods.count("DELETE") == 1 and methods[-1] == "DELETE"

    metrics = result.episode_result().metrics
    assert metrics.turns == 6 and metrics.tool_calls["delegate"] == 1 and metrics.tool_calls["add"] == 1
    assert metrics.tool_errors == 1  # the helper's read_file


async def test_delegation_refusals_are_answers(team_file: Path, fake_mcp) -> None:
    turns = [
        call("delegate", role="lead", task="x"),  # not one it may delegate to
        call("delegate", role="helper", task="  "),  # no task
        call("delegate", role="helper", task="a") + call("delegate", role="helper", task="b"),
        "I give up.",  # the helper stops with no call and no answer tag: its text is the answer
        call("delegate", role="helper", task="c"),
        call("add", a=1, b=1),  # the helper runs out of turns (max_turns 3)
        call("add", a=1, b=1),
        call("add", a=1, b=1),
        call("delegate", role="helper", task="d"),  # the team's two delegations are used up
        "<answer>?</answer>",
    ]
    result, _ = await play(team_file, fake_mcp, turns)
    tool_texts = [
        m["content"] for m in result.transcript() if m["role"] == "tool" and m["gaia_role"] == "lead"
    ]
    assert "can delegate to helper, not 'lead'" in tool_texts[0]
    assert "task must say" in tool_texts[1]
    assert tool_texts[2] == "The helper answered: I give up."
    assert "one delegate call at a time" in tool_texts[3]
    assert "the helper stopped without an answer (max_turns)" in tool_texts[4]
    assert "2 delegations are used up" in tool_texts[5]
    assert [d.result.stop for d in result.delegations] == ["no_tool_call", "max_turns"]
    assert result.lead.answer == "?"


def test_team_sessions_use_the_sessionless_protocol() -> None:
    # An initialize handshake would give each role its own MCP session id, and the gateway its own workspace.
    assert SHARED_SESSION_MODE not in ("legacy", "auto")


# -- through VeRL's types ----------------------------------------------------------------------------

verl_agent_loop = pytest.importorskip(
    "verl.experimental.agent_loop.agent_loop",
    reason="verl is not installed: run scripts/trainer-extra.sh (torch CPU + verl 0.9.1) to test the VeRL adapter",
)


def make_team_loop(tokenizer, server, mcp_url: str, team: str, response_length: int = 4096):
    """The loop as VeRL builds it from an agent.yaml entry that names a team."""
    return make_loop(tokenizer, server, mcp_url, response_length=response_length, team=team)


async def test_a_team_is_one_token_faithful_trajectory_for_verl(tokenizer, fake_mcp, team_file: Path) -> None:

    turns = [
        call("delegate", role="helper", task="Add 2 and 3."),
        call("add", a=2, b=3),
        "<answer>5</answer>",
        "The helper says 5. <answer>5</answer>",
    ]
    server = ScriptedServer(tokenizer, turns)
    loop = make_team_loop(tokenizer, server, fake_mcp.url, str(team_file))
    output = await loop.run({"temperature": 1.0}, raw_prompt=PROMPT, extra_info={"mcp_servers": ""}, index=0)

    # Every role's sampled ids are mask 1, exactly as sampled, in the order they were sampled.
    mask_runs = runs(output.response_mask)
    sampled = [output.response_ids[s:e] for v, s, e in mask_runs if v == 1]
    assert sampled == server.sampled
    # The rollout server always continued from the tape, whichever role was sampling.
    for request in server.calls:
        prefix = request["prompt_ids"]
        assert prefix == output.prompt_ids + output.response_ids[: len(prefix) - len(output.prompt_ids)]

    context = [tokenizer.decode(output.response_ids[s:e]) for v, s, e in mask_runs if v == 0]
    # 1. the hand-off: the lead's turn ends, the helper's own prompt with its own tools opens
    assert context[0].startswith(
        "\n<|im_start|>system\nYou add. Answer in <answer></answer>.\n\n# Tools\n<tools>\n"
    )
    assert (
        '"name": "add"' in context[0]
        and '"name": "read_file"' not in context[0]
        and '"delegate"' not in context[0]
    )
    assert context[0].endswith(
        "<|im_start|>user\nTask from the lead:\nAdd 2 and 3.<|im_end|>\n<|im_start|>assistant\n"
    )
    # 2. the helper's tool response; 3. the helper's answer handed back as the delegate call's result
    assert (
        context[1]
        == "\n<|im_start|>user\n<tool_response>\n5\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )
    assert context[2] == (
        "\n<|im_start|>user\n<tool_response>\nThe helper answered: 5\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )
    prompt = tokenizer.decode(output.prompt_ids)
    assert (
        prompt.startswith("<|im_start|>system\nYou lead.\n\nAnswer in <answer></answer>.")
        and '"delegate"' in prompt
    )

    assert output.extra_fields["gaia_answer"] == "5" and output.extra_fields["gaia_stop"] == "answer"
    assert output.extra_fields["gaia_team"] == "pair" and output.extra_fields["gaia_delegations"] == 1
    assert output.extra_fields["gaia_turns"] == 4 and output.extra_fields["gaia_tool_calls"] == 2
    assert output.num_turns == 1 + 4 + 2 + 1
    tensors = output.as_dict()
    assert int(tensors["response_mask"].sum()) == sum(len(s) for s in server.sampled)
    methods = [m for m, sid, _ in fake_mcp.selections if sid is not None]
    assert methods.count("DELETE") == 1 and methods[-1] == "DELETE"


async def test_the_response_budget_holds_every_role(tokenizer, fake_mcp, team_file: Path) -> None:

    # Room for the lead's turn, not for the helper's prompt: the delegate call is refused, saying why.
    server = ScriptedServer(
        tokenizer, [call("delegate", role="helper", task="Add 2 and 3."), "<answer>?</answer>"]
    )
    loop = make_team_loop(tokenizer, server, fake_mcp.url, str(team_file), response_length=400)
    output = await loop.run({}, raw_prompt=PROMPT)
    assert len(output.response_ids) <= 400
    assert output.extra_fields["gaia_delegations"] == 0
    assert "cannot hand the task to the helper" in tokenizer.decode(output.response_ids)


async def test_a_team_row_that_selects_servers_is_refused(tokenizer, fake_mcp, team_file: Path) -> None:

    loop = make_team_loop(tokenizer, ScriptedServer(tokenizer, []), fake_mcp.url, str(team_file))
    with pytest.raises(ValueError, match="whose roles each bring their own"):
        await loop.run({}, raw_prompt=PROMPT, extra_info={"mcp_servers": "excel"})


def test_agent_yaml_registers_the_shipped_teams() -> None:
    import gaia_train
    from omegaconf import OmegaConf

    entries = OmegaConf.load(Path(gaia_train.__file__).parent / "config" / "agent.yaml")
    teams = {e.name: e.team for e in entries if e.get("team")}
    assert teams == {"demo_team": "demo_team", "research_team": "research_team"}
    for name in teams.values():
        load_team(name)
