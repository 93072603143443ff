"""Which session a call belongs to, from the `_meta` the gateway sends with it."""

from __future__ import annotations

import atexit
import os
import shutil
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from gaia_contract import SESSION_ID_KEY, WORKSPACE_KEY
from mcp.server.mcpserver import Context

from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.paths import PathGuard
from gaia_kit.core.settings import get_settings


@dataclass(frozen=True)
class Session:
    id: str
    workspace: Path

    @cached_property
    def paths(self) -> PathGuard:
        settings = get_settings()
        return PathGuard(self.workspace, settings.dataset_dir, settings.dataset_alias)


def session_of(ctx: Context | None) -> Session:
    """The calling session: the gateway's, or this process's own when run standalone."""
    meta: dict[str, Any] = {}
    if ctx is not None:
        meta = dict(ctx.request_context.meta or {})
    workspace = meta.get(WORKSPACE_KEY)
    if workspace is None:
        return _standalone_session()
    return Session(
        id=str(meta.get(SESSION_ID_KEY) or "anonymous"), workspace=_checked_workspace(str(workspace))
    )


def _checked_workspace(raw: str) -> Path:
    root = Path(os.path.realpath(get_settings().workspace_root))
    path = Path(os.path.realpath(raw))
    if not path.is_relative_to(root) or path == root:
        raise ToolFailure(
            "The session workspace is not under GAIA_WORKSPACE_ROOT; the gateway and servers disagree."
        )
    path.mkdir(parents=True, exist_ok=True)
    return path


@lru_cache(maxsize=1)
def _standalone_session() -> Session:
    """A server run on its own (no gateway) keeps one workspace for its lifetime."""
    configured = get_settings().workspace
    if configured:
        path = Path(configured)
        path.mkdir(parents=True, exist_ok=True)
        return Session(id="standalone", workspace=path)
    path = get_settings().workspace_root / f"standalone-{os.getpid()}"
    path.mkdir(parents=True, exist_ok=True)
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return Session(id="standalone", workspace=path)
