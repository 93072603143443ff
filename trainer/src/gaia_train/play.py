"""One dataset row's episode, as every trainer and eval plays it: the single agent, or the team the
row's `agent_name` selects. Above both the episode loop and the teams, so neither imports the other's
caller."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from .episode.loop import EpisodeLimits, EpisodeResult, Policy, ToolSession, run_episode
from .episode.session import McpSettings, McpToolSession, for_row, with_task
from .row import AGENT_NAME
from .teams.delegation import TeamResult, run_team_episode
from .teams.team import Team, teams_for_rows


async def play(
    messages: list[dict[str, Any]],
    new_policy: Callable[[], Policy],
    mcp: McpSettings,
    limits: EpisodeLimits,
    team: Team | None = None,
    extra_info: Any = None,
    connect: Callable[[McpSettings], AbstractAsyncContextManager[ToolSession]] | None = None,
) -> tuple[EpisodeResult, TeamResult | None]:
    """One dataset row's episode, as every trainer and eval plays it: the single agent with the row's
    own server selection (`extra_info`), or `team`, whose roles bring their own servers. `connect`
    opens the single agent's session (default `McpToolSession`; the TRL adapter's `AttachedSession`
    writes the episode's own attachment first)."""
    if team is None:
        settings = with_task(for_row(mcp, extra_info), extra_info)
        open_session = connect or McpToolSession
        result = await run_episode(messages, new_policy(), lambda: open_session(settings), limits)
        return result, None
    if connect is not None:
        raise ValueError(f"the team {team.name} opens its roles' sessions itself; play it without connect")
    refuse_row_selection(team, extra_info)
    played = await run_team_episode(messages, team, new_policy, with_task(mcp, extra_info), limits)
    return played.episode_result(), played


def teams_of_rows(
    rows: Iterable[Mapping[str, Any]], team_files: Sequence[str | Path] = ()
) -> dict[str, Team]:
    """The teams the rows select by `agent_name` (`team.teams_for_rows`), checked before any episode
    starts: a team row that also selects servers is refused here, not mid-run."""
    rows = list(rows)
    teams = teams_for_rows(rows, team_files, AGENT_NAME)
    for row in rows:
        team = teams.get(str(row.get("agent_name") or AGENT_NAME))
        if team is not None:
            refuse_row_selection(team, row.get("extra_info"))
    return teams


def refuse_row_selection(team: Team, extra_info: Any) -> None:
    """A team's roles bring their own servers; a row's own selection would be silently ignored."""
    if isinstance(extra_info, dict) and for_row(McpSettings(), extra_info) != McpSettings():
        raise ValueError(
            f"the row selects servers or tools (extra_info mcp_servers/mcp_tools) but its agent_name is the "
            f"team {team.name}, whose roles each bring their own: clear them in the row or edit the team file"
        )
