"""A team: roles that work on one task together, declared in a small TOML file.

    name = "demo_team"              # the agent_name that dataset rows select the team by
    coordinator = "researcher"      # the role that gets the task and gives the final answer
    max_delegations = 4             # delegate calls per episode, all roles together

    [roles.researcher]
    description = "finds and reads the sources"          # shown to roles that may delegate to it
    prompt = "You are the researcher of a small team..."  # the role's system prompt
    servers = ["filesystem-server", "documents-csv-server"]  # sent as its MCP-Servers header
    tools = ["read_text_file"]      # optional: only these of its servers' tools
    delegates_to = ["coder"]        # roles it may hand work to with the delegate tool
    max_turns = 8                   # optional: its assistant turns per (sub-)episode

A role that may delegate sees a `delegate(role, task)` tool next to its MCP tools; the call runs a
sub-episode of that role in the same session workspace and returns the role's answer as the tool
result (see `gaia_train.teams.delegation`). The coordinator's prompt goes before the dataset row's own
system prompt, so the task's instructions (the answer format) stay.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TEAMS_DIR = Path(__file__).parents[1] / "config" / "teams"
DELEGATE = "delegate"
"""The tool a role hands work to another with; no MCP tool may carry the name in a team."""

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_TEAM_KEYS = {"name", "coordinator", "max_delegations", "roles"}
_ROLE_KEYS = {"description", "prompt", "servers", "tools", "delegates_to", "max_turns"}


class TeamConfigError(ValueError):
    """A team file that cannot make a team; the message names the file and what to fix."""


@dataclass(frozen=True)
class Role:
    name: str
    prompt: str
    servers: tuple[str, ...]
    description: str = ""
    tools: tuple[str, ...] | None = None
    delegates_to: tuple[str, ...] = ()
    max_turns: int | None = None

    @property
    def servers_header(self) -> str:
        return ",".join(self.servers)


@dataclass(frozen=True)
class Team:
    name: str
    coordinator: str
    roles: Mapping[str, Role]
    max_delegations: int = 4

    @property
    def lead(self) -> Role:
        return self.roles[self.coordinator]

    def max_turns(self, default: int) -> int:
        """The most assistant turns of one episode, every role's together (roles without max_turns: `default`)."""
        delegated = [self.roles[n].max_turns or default for r in self.roles.values() for n in r.delegates_to]
        return (self.lead.max_turns or default) + self.max_delegations * max(delegated, default=0)

    def delegate_tool(self, role: Role) -> dict[str, Any]:
        """The `delegate` function schema `role` sees, naming the roles it may hand work to."""
        who = "; ".join(
            f"{name}: {self.roles[name].description}" if self.roles[name].description else name
            for name in role.delegates_to
        )
        return {
            "type": "function",
            "function": {
                "name": DELEGATE,
                "description": (
                    "Hand a task to another role of your team and get its answer back as this call's result. "
                    "The role reads this conversation so far and works in the same workspace: files written "
                    f"here are there. Roles: {who}."
                ),
                "parameters": {
                    "type": "object",
                    "properties": {
                        "role": {
                            "type": "string",
                            "enum": list(role.delegates_to),
                            "description": "who does it",
                        },
                        "task": {"type": "string", "description": "what to do, and what to answer with"},
                    },
                    "required": ["role", "task"],
                },
            },
        }


def load_team(spec: str | Path) -> Team:
    """A team from a TOML file, or by the name of one shipped in gaia_train/config/teams."""
    path = Path(spec)
    if not path.suffix and not path.exists():
        path = TEAMS_DIR / f"{spec}.toml"
    if not path.is_file():
        shipped = ", ".join(sorted(p.stem for p in TEAMS_DIR.glob("*.toml")))
        raise TeamConfigError(f"team file {spec} does not exist (shipped teams: {shipped})")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise TeamConfigError(f"{path}: not valid TOML ({exc})") from None
    return parse_team(data, str(path))


def teams_for_rows(
    rows: Iterable[Mapping[str, Any]], files: Sequence[str | Path] = (), single: str = "gaia_agent"
) -> dict[str, Team]:
    """The team each row's `agent_name` selects, by the team's `name`: one of `files`, else a shipped one.

    Rows of the single agent (`single`, the default agent loop) select none. This is the rule outside
    VeRL (eval, TRL); under VeRL agent.yaml maps agent names to team files, and its shipped entries
    follow the same rule.
    """
    given = {team.name: team for team in map(load_team, files)}
    teams: dict[str, Team] = {}
    for name in sorted({str(row.get("agent_name") or single) for row in rows} - {single}):
        if name in given:
            teams[name] = given[name]
        elif (TEAMS_DIR / f"{name}.toml").is_file():
            teams[name] = load_team(name)
        else:
            known = sorted({*given, *(p.stem for p in TEAMS_DIR.glob("*.toml"))})
            raise TeamConfigError(
                f"rows select agent_name {name!r}, which is neither {single} nor a team "
                f"(teams: {', '.join(known)}); pass its team file, whose name is {name!r}"
            )
    return teams


def parse_team(data: dict[str, Any], where: str = "team") -> Team:
    _known(data, _TEAM_KEYS, where)
    name = _name(data.get("name"), f"{where}: name")
    roles_data = data.get("roles")
    if not isinstance(roles_data, dict) or not roles_data:
        raise TeamConfigError(f"{where}: a team needs [roles.NAME] tables, at least one")
    roles = {key: _role(key, value, f"{where}: roles.{key}") for key, value in roles_data.items()}
    coordinator = data.get("coordinator")
    if coordinator not in roles:
        raise TeamConfigError(
            f"{where}: coordinator must name one of the roles ({', '.join(roles)}), got {coordinator!r}"
        )
    for role in roles.values():
        for other in role.delegates_to:
            if other not in roles:
                raise TeamConfigError(
                    f"{where}: roles.{role.name}.delegates_to names {other!r}, which is no role"
                )
            if other == role.name:
                raise TeamConfigError(f"{where}: roles.{role.name} cannot delegate to itself")
            if not roles[other].prompt:
                raise TeamConfigError(f"{where}: roles.{other} is delegated to, so it needs a prompt")
    max_delegations = data.get("max_delegations", 4)
    if not isinstance(max_delegations, int) or isinstance(max_delegations, bool) or max_delegations < 0:
        raise TeamConfigError(f"{where}: max_delegations must be a whole number, 0 or more")
    return Team(name, coordinator, roles, max_delegations)


def _role(key: str, data: Any, where: str) -> Role:
    _name(key, where)
    if not isinstance(data, dict):
        raise TeamConfigError(f"{where}: a role is a table of {', '.join(sorted(_ROLE_KEYS))}")
    _known(data, _ROLE_KEYS, where)
    servers = _names(data.get("servers"), f"{where}.servers")
    if not servers:
        raise TeamConfigError(f"{where}: servers must list at least one server id")
    tools = _names(data.get("tools"), f"{where}.tools") if "tools" in data else None
    max_turns = data.get("max_turns")
    if max_turns is not None and (
        not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1
    ):
        raise TeamConfigError(f"{where}: max_turns must be a whole number, at least 1")
    for text_key in ("prompt", "description"):
        if not isinstance(data.get(text_key, ""), str):
            raise TeamConfigError(f"{where}: {text_key} must be a string")
    return Role(
        name=key,
        prompt=data.get("prompt", "").strip(),
        servers=servers,
        description=data.get("description", "").strip(),
        tools=tools or None,
        delegates_to=_names(data.get("delegates_to"), f"{where}.delegates_to"),
        max_turns=max_turns,
    )


def _known(data: dict[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise TeamConfigError(
            f"{where}: unknown keys {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})"
        )


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise TeamConfigError(f"{where} must be 1 to 64 letters, digits, _ or -, got {value!r}")
    return value


def _names(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) and item.strip() for item in value):
        raise TeamConfigError(f"{where} must be a list of names, got {value!r}")
    return tuple(item.strip() for item in value)
