"""gaia_kit: what every gaia-env server needs, once, in subpackages by concern.

    core        the server and its rules: KitServer, sessions, paths, limits, errors, settings, serve
    web         outbound HTTP: the client, SSRF guard, record/replay cache, Chromium launch options
    pages       what pages say: HTML/PDF extraction, the page reader, web search, the local corpus
    execution   running code: the sandbox, the command policy, the shell, process groups, confined decoders
    models      asking an OpenAI-compatible model
    documents   office files, LibreOffice conversion, Markdown tables, text encodings
    media       media files and the ffmpeg-family tools, images for vision models

This module is the front door for the core names every server uses; the other subpackages need the
gaia-kit extra of the same name (`gaia-kit[web]`, ...), which a server declares when it imports them.
"""

from gaia_kit.core.blocking import run_blocking, stdout_to_stderr
from gaia_kit.core.errors import ToolFailure
from gaia_kit.core.output import page, truncate
from gaia_kit.core.paths import PathGuard, atomic_write, regular_file
from gaia_kit.core.serve import serve
from gaia_kit.core.server import KitServer
from gaia_kit.core.session import Session, session_of
from gaia_kit.core.settings import KitSettings, get_settings

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
    "run_blocking",
    "serve",
    "session_of",
    "stdout_to_stderr",
    "truncate",
]
