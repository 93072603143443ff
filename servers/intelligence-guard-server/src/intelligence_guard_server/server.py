"""intelligence-guard-server: a second model reviews a reasoning process for loopholes and oversights.

The model is GUARD_LLM_BASE_URL / GUARD_LLM_MODEL_NAME / GUARD_LLM_API_KEY, each falling back to
MCP_LLM_*; GUARD_LLM_TIMEOUT bounds one call (retries included), GUARD_LLM_MAX_TOKENS the answer.
"""

from typing import Annotated

from gaia_kit import KitServer, ToolFailure, serve
from gaia_kit.core.hints import hints
from gaia_kit.models.adviser import Adviser, Depth, Temperature
from pydantic import Field

server = KitServer(
    "intelligence-guard-server",
    instructions=(
        "Reviews a reasoning process for logical faults, loopholes and oversights, and suggests "
        "corrections. Include the task, the reasoning so far and the data it rests on."
    ),
)

REVIEWER = Adviser(
    "GUARD",
    system=(
        "You review another agent's reasoning on a complex task. Do not solve the task from scratch: find "
        "logical errors, unjustified assumptions, misread requirements (units, formats, exact wording of what "
        "is asked), calculation slips and overlooked cases, and say how to correct them. Do not judge whether "
        "facts retrieved from the internet are true; you cannot check them. If the reasoning is sound, say so "
        "plainly. End with a short list of concrete next steps."
    ),
    styles={
        "detailed": "Explain each problem you find, why it matters, and how to correct it.",
        "concise": "Reply briefly: the most important problems and corrections, a few lines in all.",
        "step-by-step": "Walk through the reasoning step by step, marking each step sound or faulty, with a fix.",
    },
    max_tokens=4096,
)


@server.tool(annotations=hints("Review reasoning", read_only=True, open_world=True))
async def guarding_reasoning_process(
    question: Annotated[
        str,
        Field(
            description=(
                "The input question for diagnosing the completeness/correctness of the reasoning process.\n"
                "For example: based on the staged/phased information/data concluded as 1.xxxx 2. xxxx "
                "3. xxxx...., is there any faults in the current reasoning process that should be corrected? "
                "Or is there any loopholes or oversights that should be emphasized in advance, towards "
                "solving the problem?\nRequirement: This input question should include a clear question with "
                "the necessary details/data/clues from the previous context (such as the key information/data "
                "retrieved from the internet). The more exact details/data contained in this input question, "
                "the better the diagnosing result will be."
            )
        ),
    ],
    original_task: Annotated[
        str,
        Field(
            description="The original task. This field is required and cannot be simplified, has to be true to the original task."
        ),
    ] = "",
    temperature: Temperature = 0.1,
    guarding_style: Annotated[
        Depth,
        Field(
            description="Style of guarding output: detailed(analysis), concise(summary), or step-by-step(breakdown)"
        ),
    ] = "detailed",
) -> str:
    """This tool provides advanced logic diagnosing and correcting ability, to improve the quality of the reasoning process that already exists in the current context, while solving the complex question:
    - Identify potential loopholes or oversights in the current reasoning process while solving the complex problem.
    - Providing the guidance, suggestions to the reasoning process, to correct the loopholes or oversights if identified in this shot.

    Invoke Timing: During Thinking Process Reviewing, while diagnosing the reasoning process in the context or give valuable suggestions in advance, this tool is a reliable selection.

    Strengths:
    - Be relatively sensitive to common logical traps in some mathematics or logic problems.

    Weakness:
    - Inability to process media types: image, audio, or video.
    - Inability to check the correctness of the retrieved information from the internet.
    - Require precise description of problem context and settings, including the reasoning process, retrieved data and the complex task itself.
    """
    if not question.strip():
        raise ToolFailure(
            "The question is empty; give the reasoning so far, the data it rests on and what to check."
        )
    task = original_task.strip() or "(not given: judge the reasoning against the question alone)"
    prompt = f"Original task:\n{task}\n\nReasoning to review, and the question about it:\n{question.strip()}"
    return await REVIEWER.ask(prompt, style=guarding_style, temperature=temperature)


@server.tool(annotations=hints("Review capabilities", read_only=True, open_world=False))
def get_guarding_capabilities() -> str:
    """Get information about the guarding reasoning process service capabilities."""
    return REVIEWER.capabilities(
        "Reasoning review (guarding_reasoning_process)",
        "Finds: logical errors, unjustified assumptions, misread requirements (units, formats, wording), "
        "calculation slips, overlooked cases; suggests corrections and next steps.",
        "Cannot: read images, audio or video, or check facts retrieved from the internet; the question "
        "must carry the reasoning and data to review, original_task the task word for word.",
        styles_note="Temperature 0.0-1.0 (default 0.1).",
    )


def main() -> None:
    serve(server, check=REVIEWER.status)
