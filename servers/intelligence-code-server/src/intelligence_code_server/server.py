"""intelligence-code-server: Python written by a model, run in the sandbox, and repaired until it runs.

The model is CODE_LLM_BASE_URL / CODE_LLM_MODEL_NAME / CODE_LLM_API_KEY, each falling back to
MCP_LLM_*. The code runs in the kit's sandbox (gaia_kit.execution.sandbox) in the session workspace; when it
fails, the error goes back to the model for at most `max_repairs` corrected versions.
"""

import re
import time
from typing import Annotated, Literal

from gaia_kit import KitServer, ToolFailure, atomic_write, serve, session_of
from gaia_kit.core.hints import hints
from gaia_kit.execution.sandbox import run_sandboxed, sandbox_status
from gaia_kit.models.adviser import Adviser
from mcp.server.mcpserver import Context
from pydantic import Field

DEADLINE_S = 540  # the whole call, every model answer and run included; the registry allows 600

server = KitServer(
    "intelligence-code-server",
    instructions="Writes Python for a task, runs it in a sandbox, repairs it on failure, returns code and output.",
)

CODER = Adviser(
    "CODE",
    system=(
        "You write complete, executable Python 3.11 programs. Reply with exactly one ```python code block "
        "containing the whole program, which prints its results to stdout. Use only the standard library "
        "and common data libraries. The program runs without network access and without input on stdin; "
        "files it is told about are in its working directory or at the paths given."
    ),
    styles={
        "minimal": "Write concise code with no comments beyond what is essential.",
        "documented": "Write clear code with short comments and docstrings where they help.",
        "verbose": "Write detailed code with thorough comments explaining each part.",
    },
    max_tokens=4096,
)
CODE_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


@server.tool(
    annotations=hints(
        "Generate Python code", read_only=False, destructive=True, idempotent=False, open_world=True
    )
)
async def generate_python_code(
    task_description: Annotated[
        str, Field(description="Description of the programming task or problem to solve")
    ],
    ctx: Context,
    requirements: Annotated[
        str, Field(description="Specific requirements, constraints, or specifications for the code")
    ] = "",
    context: Annotated[str, Field(description="Additional context or background information")] = "",
    temperature: Annotated[
        float,
        Field(
            ge=0.0,
            le=1.0,
            description="Model temperature for code generation (0.0-1.0, lower = more deterministic)",
        ),
    ] = 0.1,
    code_style: Annotated[
        Literal["minimal", "documented", "verbose"],
        Field(
            description="Style of generated code: minimal (concise), documented (with comments), verbose (detailed)"
        ),
    ] = "documented",
    save_to_file_path: Annotated[
        str | None,
        Field(
            description="Optional. Path to save the generated Python snippet. e.g., 'output/generated_script.py'"
        ),
    ] = None,
    execute: Annotated[
        bool, Field(description="Run the code in the sandbox and repair it on failure (default true)")
    ] = True,
    max_repairs: Annotated[
        int, Field(ge=0, le=5, description="How many times a failing program goes back to the model to fix")
    ] = 2,
) -> str:
    """Generate executable Python code snippets based on task description.

    This tool provides comprehensive code generation capabilities for:
    - Solve simple math tasks and validations
    - Data processing and analysis tasks
    - Algorithm implementations and optimizations
    - Utility functions and helper scripts
    - Problem-solving code snippets

    The code is run in a sandbox (no network; the session's files are in its working directory) and
    returned with its output; when it fails, the error goes back to the model for a corrected version.
    """
    if not task_description.strip():
        raise ToolFailure("task_description is empty; describe what the code should do.")
    session = session_of(ctx)
    target = session.paths.resolve(save_to_file_path, write=True) if save_to_file_path else None
    started = time.monotonic()
    messages = CODER.opening(_prompt(task_description, requirements, context), code_style)
    attempts = max_repairs + 1 if execute else 1
    for attempt in range(1, attempts + 1):
        left = DEADLINE_S - (time.monotonic() - started)
        answer = await CODER.answer(messages, temperature=temperature, timeout=left)
        code = _extract_code(answer)
        report = ""
        if execute:
            result = await run_sandboxed(["python3", "-"], workspace=session.workspace, stdin=code)
            report = result.describe()
            if result.exit_code != 0 and attempt < attempts:
                messages += [
                    {"role": "assistant", "content": answer},
                    {
                        "role": "user",
                        "content": f"Running the program failed:\n{report[-4000:]}\n\nReply with the whole corrected program in one python code block.",
                    },
                ]
                continue
            if result.exit_code != 0:
                report += f"\n[The code still fails after {max_repairs} repair(s); fix it by hand or rephrase the task.]"
        break
    saved = ""
    if target is not None:
        atomic_write(target, code + "\n")  # makes missing folders beneath the workspace
        saved = f"\n\nSaved to {session.paths.display(target)}."
    repaired = f" (repaired {attempt - 1} time(s))" if attempt > 1 else ""
    output = f"\n\n## Output{repaired}\n\n{report}" if execute else ""
    return f"```python\n{code}\n```{output}{saved}"


@server.tool(annotations=hints("Code generation capabilities", read_only=True, open_world=False))
def get_reasoning_capabilities() -> str:
    """Get information about the reasoning service capabilities."""
    return CODER.capabilities(
        "Python code generation (generate_python_code)",
        "Writes a complete Python 3.11 program for a task, runs it in a sandbox (no network, the session's "
        "files in its working directory), and on failure sends the error back for up to max_repairs fixes.",
        styles_note="Returns the code and its output; save_to_file_path keeps the code.",
    )


def _prompt(task: str, requirements: str, context: str) -> str:
    parts = [f"Task:\n{task.strip()}"]
    if requirements.strip():
        parts.append(f"Requirements:\n{requirements.strip()}")
    if context.strip():
        parts.append(f"Context:\n{context.strip()}")
    return "\n\n".join(parts)


def _extract_code(answer: str) -> str:
    """The longest fenced block (models sometimes add a usage example), else the whole answer."""
    blocks = CODE_BLOCK.findall(answer)
    return (max(blocks, key=len) if blocks else answer).strip()


def main() -> None:
    serve(server, check=lambda: {**CODER.status(), "sandbox": sandbox_status()})
