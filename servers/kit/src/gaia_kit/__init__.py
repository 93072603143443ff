"""gaia_kit: what every gaia-env server needs, once."""

from .blocking import run_blocking, stdout_to_stderr
from .errors import ToolFailure
from .output import page, truncate
from .paths import PathGuard, atomic_write, regular_file
from .runner import run
from .server import KitServer
from .session import Session, session_of
from .settings import KitSettings, get_settings

__all__ = [
    "KitServer",
    "KitSettings",
    "PathGuard",
    "Session",
    "ToolFailure",
    "atomic_write",
    "get_settings",
    "page",
    "regular_file",
    "run",
    "run_blocking",
    "session_of",
    "stdout_to_stderr",
    "truncate",
]
