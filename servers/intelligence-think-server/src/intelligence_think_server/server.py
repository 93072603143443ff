"""intelligence-think-server: hard problems handed to a reasoning model on an OpenAI-compatible endpoint.

The model is THINK_LLM_BASE_URL / THINK_LLM_MODEL_NAME / THINK_LLM_API_KEY, each falling back to
MCP_LLM_*; THINK_LLM_TIMEOUT bounds one call (retries included), THINK_LLM_MAX_TOKENS the answer.
"""

from typing import Annotated

from gaia_kit import KitServer, ToolFailure, serve
from gaia_kit.core.hints import hints
from gaia_kit.models.adviser import Adviser, Depth, Temperature
from pydantic import Field

server = KitServer(
    "intelligence-think-server",
    instructions=(
        "Hands a self-contained problem (math, logic, algorithms, puzzles) to a strong reasoning model. "
        "Put every fact and constraint the problem needs into the question: the model sees nothing else."
    ),
)

THINKER = Adviser(
    "THINK",
    system=(
        "You are an expert problem solver in mathematics, programming, logic and STEM competitions. "
        "Work from the facts given; when the problem is ambiguous, say which reading you take and why. "
        "Check your result before answering, and end with a line 'Final answer: ...'."
    ),
    styles={
        "detailed": "Analyse the problem thoroughly, justify each step, then state the final answer clearly.",
        "concise": "Reason carefully but reply briefly: the key steps in a few lines, then the final answer.",
        "step-by-step": "Break the solution into numbered steps, one idea per step, then state the final answer.",
    },
    max_tokens=8192,
)


@server.tool(annotations=hints("Complex problem reasoning", read_only=True, open_world=True))
async def complex_problem_reasoning(
    question: Annotated[
        str,
        Field(
            description="The input question for complex problem reasoning, such as math and code contest problems"
        ),
    ],
    original_task: Annotated[str, Field(description="The original task description.")] = "",
    temperature: Temperature = 0.3,
    reasoning_style: Annotated[
        Depth,
        Field(
            description="Style of reasoning output: detailed(analysis), concise(summary), or step-by-step(breakdown)"
        ),
    ] = "detailed",
) -> str:
    """This tool provides comprehensive reasoning capabilities for:
    - Mathematical problems and proofs
    - Programming and algorithm challenges
    - Logic puzzles, brain teasers, and fun riddles
    - Competition-level STEM problems
    - Multi-step analytical reasoning tasks

    Weakness:
    - Inability to process media types: image, audio, or video
    - Require precise description of problem context and settings
    """
    if not question.strip():
        raise ToolFailure("The question is empty; state the problem with all its facts and constraints.")
    prompt = f"Question:\n{question.strip()}"
    if original_task.strip():
        prompt = f"Original task (for context):\n{original_task.strip()}\n\n{prompt}"
    return await THINKER.ask(prompt, style=reasoning_style, temperature=temperature)


@server.tool(annotations=hints("Reasoning capabilities", read_only=True, open_world=False))
def get_reasoning_capabilities() -> str:
    """Get information about the reasoning service capabilities."""
    return THINKER.capabilities(
        "Complex problem reasoning (complex_problem_reasoning)",
        "Good at: mathematical problems and proofs, programming and algorithm challenges, logic puzzles "
        "and riddles, competition-level STEM problems, multi-step analytical reasoning.",
        "Cannot: read images, audio or video, browse the web, or see files; the question must carry "
        "every fact and constraint.",
        styles_note="Temperature 0.0-1.0 (default 0.3).",
    )


def main() -> None:
    serve(server, check=THINKER.status)
