"""Render the live catalog as a terminal table or as docs/tools.md."""

from __future__ import annotations

from typing import Any

from . import answer_sizes
from .gateway import Gateway


def _params(schema: dict[str, Any]) -> list[tuple[str, str, bool, str, str]]:
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    rows = []
    for name, prop in props.items():
        rows.append(
            (
                name,
                _type_of(prop),
                name in required,
                _default_of(prop),
                (prop.get("description") or "").strip(),
            )
        )
    return rows


def _type_of(prop: dict[str, Any]) -> str:
    if "type" in prop:
        kind = prop["type"]
        kind = " or ".join(kind) if isinstance(kind, list) else kind
        if kind == "array" and isinstance(prop.get("items"), dict):
            return f"array of {_type_of(prop['items'])}"
        return kind
    if "anyOf" in prop:
        return " or ".join(_type_of(p) for p in prop["anyOf"])
    if "enum" in prop:
        return "enum"
    if "const" in prop:
        return f"const {prop['const']!r}"
    return "any"


def _default_of(prop: dict[str, Any]) -> str:
    return f"`{prop['default']!r}`" if "default" in prop else ""


def render_table(tools: list[dict[str, Any]]) -> str:
    width = max((len(t["name"]) for t in tools), default=4)
    lines = [f"{'TOOL'.ljust(width)}  PARAMETERS"]
    for tool in tools:
        params = ", ".join(
            f"{n}{'' if req else '?'}" for n, _, req, _, _ in _params(tool.get("inputSchema", {}))
        )
        lines.append(f"{tool['name'].ljust(width)}  {params}")
    lines.append(f"\n{len(tools)} tools")
    return "\n".join(lines) + "\n"


def render_markdown(gateway: Gateway, tools: list[dict[str, Any]]) -> str:
    by_server: dict[str, list[dict[str, Any]]] = {}
    names = {(r.server, r.tool): n for n, r in _routes(gateway).items()}
    for sid, pool in gateway.pools.items():
        by_server[sid] = [dict(t, exposed=names.get((sid, t["name"]), t["name"])) for t in pool.tools]
    out = [
        "# Tools reference",
        "",
        "Generated from the live catalog by `gaia-env tools --format markdown --output docs/tools.md`",
        "(`make docs`); a test fails when this file is stale.",
        "",
        f"{len(tools)} tools from {len(by_server)} servers. A name offered by more than one selected server is",
        "exposed as `<server-id>__<tool>`; the qualified form is always accepted.",
        "",
        *answer_sizes.render(answer_sizes.load()),
    ]
    for sid, server_tools in by_server.items():
        out += [f"## {sid}", "", f"{len(server_tools)} tools.", ""]
        for tool in server_tools:
            exposed = tool["exposed"]
            alias = (
                f" (exposed as `{exposed}` when servers share the name)" if exposed != tool["name"] else ""
            )
            out += [f"### `{tool['name']}`{alias}", ""]
            description = " ".join((tool.get("description") or "").split())
            if description:
                out += [description, ""]
            if behaviour := _behaviour(tool):
                out += [behaviour, ""]
            rows = _params(tool.get("inputSchema", {}))
            if rows:
                out += ["| parameter | type | required | default | description |", "|---|---|---|---|---|"]
                for name, kind, req, default, desc in rows:
                    desc = " ".join(desc.split()).replace("|", "\\|")
                    out.append(f"| `{name}` | {kind} | {'yes' if req else 'no'} | {default} | {desc} |")
                out.append("")
            else:
                out += ["No parameters.", ""]
    return "\n".join(out)


def _behaviour(tool: dict[str, Any]) -> str:
    """One line from the tool's annotations and output schema: what it does to its world."""
    hints = tool.get("annotations") or {}
    if not hints:
        return ""
    if hints.get("readOnlyHint"):
        words = ["read-only"]
    else:
        words = ["changes things"]
        words.append("destructive" if hints.get("destructiveHint") else "not destructive")
        words.append("idempotent" if hints.get("idempotentHint") else "not idempotent")
    words.append("reaches outside (open world)" if hints.get("openWorldHint") else "local")
    if tool.get("outputSchema"):
        words.append("structured result")
    return f"*{hints.get('title') or tool['name']}*: {', '.join(words)}."


def _routes(gateway: Gateway) -> dict[str, Any]:
    from . import catalog

    return catalog.exposed_names({sid: [t["name"] for t in p.tools] for sid, p in gateway.pools.items()})
