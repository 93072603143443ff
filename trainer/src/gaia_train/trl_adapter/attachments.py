"""Attachments written per episode: each episode's file is new, so only reading it gives the answer.

A row can name an attachment maker instead of a fixed file: before the model's first turn the
episode's workspace gets the file the maker drew for that episode (written through the gateway's
filesystem-server, in the episode's own MCP session), and the episode's ground truth is the one
drawn with it. The maker draws from a stream seeded by the episode (run seed, step, place in the
step), so a run can be replayed, and the reward scores each episode against its own file.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..episode.session import EnvironmentUnavailable, McpSettings, McpToolSession, ToolSelectionError
from ..episode.toolcalls import ToolCall

WRITER_SERVER = "filesystem-server"
WRITE_TOOL = "write_file"


@dataclass(frozen=True)
class Attachment:
    path: str
    """Relative to the episode's workspace (tools resolve relative paths there)."""
    content: str
    ground_truth: str
    """The answer this file holds (or, for an ablation's blanked file, would have held)."""


AttachmentMaker = Callable[[random.Random], Attachment]
"""Draws one episode's attachment from that episode's own random stream."""


def episode_stream(seed: int, call: int, index: int) -> random.Random:
    """The random stream of the episode at `index` of rollout call `call`: a string seed, which
    Python hashes the same in every process (a tuple with a str would not)."""
    return random.Random(f"attachment:{seed}:{call}:{index}")


class AttachedSession(McpToolSession):
    """An episode's MCP session whose workspace holds `attachment` before the episode starts.

    The file is written by a second MCP session on the same session id (so the same workspace),
    restricted to the writer tool and left open for the episode's own session to end. A write the
    gateway fails is the environment's failure: the episode ends as an environment fault."""

    def __init__(self, settings: McpSettings, attachment: Attachment, **kwargs: Any):
        super().__init__(settings, **kwargs)
        self.attachment = attachment

    async def __aenter__(self) -> AttachedSession:
        writer = replace(self.settings, servers=WRITER_SERVER, tools=(WRITE_TOOL,))
        try:
            async with McpToolSession(writer, self.session_id, end_session=False) as session:
                call = ToolCall(
                    "attach", WRITE_TOOL, {"path": self.attachment.path, "content": self.attachment.content}
                )
                outcome = await session.call(call)
        except ToolSelectionError as exc:  # a configuration error: every episode would fail the same way
            raise ToolSelectionError(
                f"a generated attachment is written with {WRITER_SERVER}'s {WRITE_TOOL}: serve it on the "
                f"gateway ({exc})"
            ) from exc
        if outcome.is_error:
            raise EnvironmentUnavailable(
                f"writing the episode's attachment {self.attachment.path} failed: {outcome.text}"
            )
        await super().__aenter__()
        return self


def attached(attachment: Attachment) -> Callable[[McpSettings], AttachedSession]:
    """A session factory for `delegation.play`'s `connect`: sessions that hold `attachment`."""
    return lambda settings: AttachedSession(settings, attachment)
