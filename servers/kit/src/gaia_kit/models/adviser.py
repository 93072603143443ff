"""A model asked for advice in a style the caller picks: what the intelligence servers (code, guard,
think) share. Each server keeps only what differs: its prompt, its tool names and their schemas.

    THINK = Adviser("THINK", system="You are an expert problem solver...", styles={...}, max_tokens=8192)
    answer = await THINK.ask(prompt, style="concise", temperature=0.3)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from gaia_kit.models.llm import Message, chat, conversation, llm_status, model_line

Temperature = Annotated[
    float, Field(ge=0.0, le=1.0, description="Model temperature for response variability (0.0-1.0)")
]
Depth = Literal["detailed", "concise", "step-by-step"]
"""The answer styles of the reasoning servers (think, guard); each describes them in its own words."""


@dataclass(frozen=True)
class Adviser:
    prefix: str
    """The X of X_LLM_BASE_URL / _MODEL_NAME / _API_KEY (CODE, GUARD, THINK)."""
    system: str
    styles: dict[str, str]
    """Style name -> the sentence added to the system prompt for it."""
    max_tokens: int

    def opening(self, prompt: str, style: str) -> list[Message]:
        """The system prompt in `style`, then the prompt: a conversation to send, or to extend."""
        return conversation(f"{self.system} {self.styles[style]}", prompt)

    async def answer(
        self, messages: list[Message], *, temperature: float, timeout: float | None = None
    ) -> str:
        """The model's answer to the conversation so far; ToolFailure in one sentence when it fails."""
        return await chat(
            messages, prefix=self.prefix, max_tokens=self.max_tokens, temperature=temperature, timeout=timeout
        )

    async def ask(self, prompt: str, *, style: str, temperature: float) -> str:
        return await self.answer(self.opening(prompt, style), temperature=temperature)

    def capabilities(self, title: str, *lines: str, styles_note: str) -> str:
        """A capabilities tool's answer: what it is, the model in use, what it does, its styles."""
        styles = f"Styles: {', '.join(self.styles)}. {styles_note}"
        return "\n".join([title, model_line(self.prefix), *lines, styles])

    def status(self) -> dict[str, Any]:
        """What `--check` reports about the model."""
        return llm_status(self.prefix)
