"""Tool annotations: what a tool does to its world, said once beside the tool.

    @server.tool(annotations=hints("Read text file", read_only=True, open_world=False))
    @server.tool(annotations=hints("Write file", read_only=False, destructive=True, idempotent=True,
                                   open_world=False))

Every tool gets all five (title, readOnlyHint, destructiveHint, idempotentHint, openWorldHint), so
a client never falls back to the spec's pessimistic defaults. They are hints to clients, and the
record/replay HTTP cache reads them (gaia_kit.core.calls.replay_allowed).
"""

from __future__ import annotations

from mcp_types import ToolAnnotations


def hints(
    title: str,
    *,
    read_only: bool,
    open_world: bool,
    destructive: bool | None = None,
    idempotent: bool | None = None,
) -> ToolAnnotations:
    """The five annotations of one tool.

    A read-only tool changes nothing, so it is neither destructive nor anything but idempotent; a
    tool that changes something must say whether it may destroy what exists and whether repeating
    the same call changes anything further.
    """
    if read_only:
        if destructive or idempotent is False:
            raise ValueError(f"{title}: a read-only tool is neither destructive nor non-idempotent.")
        destructive, idempotent = False, True
    elif destructive is None or idempotent is None:
        raise ValueError(f"{title}: a tool that changes something must say destructive= and idempotent=.")
    return ToolAnnotations(
        title=title,
        read_only_hint=read_only,
        destructive_hint=destructive,
        idempotent_hint=idempotent,
        open_world_hint=open_world,
    )
