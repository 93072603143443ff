"""e2b-code-server: run code statefully, one sandbox per session.

With E2B_API_KEY the sandbox is an E2B cloud sandbox (a Jupyter kernel: everything persists);
without it, the local bubblewrap sandbox (gaia_kit.execution.sandbox), where Python variables, functions and
imports persist between calls and bash/js run afresh each call in the same directory.
E2B_IDLE_TIMEOUT (seconds, default 600) kills a session's sandbox after that long unused.
"""

import functools
from pathlib import PurePosixPath
from typing import Annotated, Literal

from gaia_kit import KitServer, ToolFailure, run_blocking, serve, session_of
from gaia_kit.core.hints import hints
from gaia_kit.core.settings import settings
from mcp.server.mcpserver import Context
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from .backends import E2BBackend, LocalBackend

server = KitServer(
    "e2b-code-server",
    instructions=(
        "Runs code in a sandbox kept per session: upload a file with e2b_upload_file, then read it "
        "from e2b_run_code. Variables persist between calls of one session."
    ),
)


class E2BSettings(BaseSettings):
    """E2B_API_KEY, E2B_IDLE_TIMEOUT and GAIA_SANDBOX_WALL_S; see docs/configuration.md."""

    model_config = SettingsConfigDict(env_prefix="E2B_", extra="ignore", env_ignore_empty=True)

    api_key: str = ""
    """The E2B key: with it, each session gets an E2B cloud sandbox; without it, the local sandbox."""
    idle_timeout: float = Field(600, gt=0)
    """Seconds a session's E2B sandbox may sit unused before it is killed."""
    wall_s: float = Field(30, gt=0, validation_alias="GAIA_SANDBOX_WALL_S")
    """Seconds one run of code may take in an E2B sandbox, as in the local one."""


@functools.cache
def backend() -> E2BBackend | LocalBackend:
    """The process's one backend (it holds every session's sandbox), chosen on first use."""
    config = settings(E2BSettings)
    key = config.api_key.strip()
    if not key:
        return LocalBackend()
    return E2BBackend(key, idle_s=config.idle_timeout, wall_s=config.wall_s)


@server.tool(
    annotations=hints(
        "Upload file to E2B", read_only=False, destructive=False, idempotent=True, open_world=True
    )
)
async def e2b_upload_file(
    path: Annotated[str, Field(description="The local file path to upload.")], ctx: Context
) -> str:
    """Upload local file to e2b sandbox.

    The file (from the workspace or the dataset) is copied into this session's sandbox; the result
    gives the path to open it by in e2b_run_code, and the sandbox_id.
    """
    session = session_of(ctx)
    name = PurePosixPath(session.paths.shown(path)).name
    with await run_blocking(session.paths.open_file, path) as source:
        target = await backend().upload(session, source, name)
    return f"Uploaded {path} to {target} (sandbox_id: {backend().sandbox_id(session)}). Open it there in e2b_run_code."


@server.tool(
    annotations=hints("Run code in E2B", read_only=False, destructive=True, idempotent=False, open_world=True)
)
async def e2b_run_code(
    ctx: Context,
    sandbox_id: Annotated[
        str | None,
        Field(
            description="The sandbox id to run code in, if you have uploaded a file, you should use the "
            "sandbox_id returned by the e2b_upload_file function."
        ),
    ] = None,
    code_block: Annotated[str | None, Field(description="The code block to run in e2b sandbox.")] = None,
    language: Annotated[
        Literal["python", "bash", "js"],
        Field(description="Language of code_block: python (default, state kept between calls), bash or js"),
    ] = "python",
) -> str:
    """Run code in a specified e2b sandbox.

    Each session has one sandbox, reused across calls: Python variables, functions and imports persist.
    Returns stdout, stderr, the value of a final expression, the error if any, and files written.
    """
    if not code_block or not code_block.strip():
        raise ToolFailure("code_block is empty; pass the code to run.")
    session = session_of(ctx)
    current = backend().sandbox_id(session)
    if sandbox_id and current and sandbox_id != current:
        raise ToolFailure(
            f"Unknown sandbox_id {sandbox_id}: this session's sandbox is {current}. "
            "Pass that id, or omit sandbox_id."
        )
    output = await backend().run(session, code_block, language)
    return output.render(backend().sandbox_id(session))


@server.on_session_end
async def release_sandbox(session_id: str) -> None:
    await backend().release(session_id)


def main() -> None:
    serve(server, check=lambda: backend().status())
