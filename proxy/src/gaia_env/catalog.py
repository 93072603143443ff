"""Tool names across servers: bare when unique in the selection, `<server-id>__<tool>` when shared."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import mcp.types as types

SEPARATOR = "__"
VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class ToolRoute:
    server: str
    tool: str


def exposed_names(tools_by_server: Mapping[str, Iterable[str]]) -> dict[str, ToolRoute]:
    """The names agents see for one selection of servers."""
    counts = Counter(name for tools in tools_by_server.values() for name in set(tools))
    names: dict[str, ToolRoute] = {}
    for server, tools in tools_by_server.items():
        for tool in tools:
            name = tool if counts[tool] == 1 else qualified(server, tool)
            names[name] = ToolRoute(server, tool)
    return names


def qualified(server: str, tool: str) -> str:
    name = f"{server}{SEPARATOR}{tool}"
    if VALID_NAME.match(name):
        return name
    # Over 64 characters: keep it unique and legal with a short stable suffix.
    digest = hashlib.sha1(name.encode()).hexdigest()[:8]
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:55] + "_" + digest


def resolve(name: str, tools_by_server: Mapping[str, Iterable[str]]) -> ToolRoute | None:
    """Find the server for a name: its exposed form, or the qualified form, which always works."""
    route = exposed_names(tools_by_server).get(name)
    if route is not None:
        return route
    server, sep, tool = name.partition(SEPARATOR)
    if sep and server in tools_by_server and tool in set(tools_by_server[server]):
        return ToolRoute(server, tool)
    for server, tools in tools_by_server.items():
        for tool in tools:
            if qualified(server, tool) == name:
                return ToolRoute(server, tool)
    return None


def listing(tools_by_server: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """tools/list entries for a selection, renamed where names collide."""
    names = exposed_names({server: [t["name"] for t in tools] for server, tools in tools_by_server.items()})
    by_route = {(route.server, route.tool): name for name, route in names.items()}
    entries = []
    for server, tools in tools_by_server.items():
        for tool in tools:
            entry = dict(tool)
            entry["name"] = by_route[(server, tool["name"])]
            entries.append(entry)
    return entries


@dataclass
class Listing:
    """One selection's tools/list answer at one catalog version, in every form a front sends it."""

    version: tuple[int, ...]
    tools: list[dict[str, Any]]
    routes: dict[str, ToolRoute]
    json: bytes = field(repr=False)
    """`{"tools": [...]}` as compact JSON: the bare path's reply body, encoded once."""

    @classmethod
    def build(cls, version: tuple[int, ...], tools_by_server: Mapping[str, list[dict[str, Any]]]) -> Listing:
        routes = exposed_names(
            {server: [t["name"] for t in tools] for server, tools in tools_by_server.items()}
        )
        tools = listing(tools_by_server)
        return cls(version, tools, routes, json.dumps({"tools": tools}, separators=(",", ":")).encode())

    @cached_property
    def result(self) -> types.ListToolsResult:
        """The SDK's model of the same answer, validated on first use by an SDK client."""
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in self.tools])
