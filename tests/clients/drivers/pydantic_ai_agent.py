"""A pydantic-ai `Agent` with the gateway as its MCP toolset and a scripted model (`FunctionModel`)
in place of an LLM: the model calls the tools in turn and records what it is shown of each result."""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, RetryPromptPart, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from scenario import READ, WRITE, WRONG_TYPE, read_args, record, tool_named, write_args

STEPS = [(WRITE, write_args()), (READ, read_args()), (READ, WRONG_TYPE)]


def shown(part: Any) -> tuple[str, str]:
    """The text a model reads for a tool's answer, and what kind of part carried it."""
    if isinstance(part, RetryPromptPart):
        return part.model_response(), "retry prompt"
    content = part.content
    return (content if isinstance(content, str) else str(content)), "tool return"


def answers(messages: list[ModelMessage]) -> list[tuple[str, str]]:
    return [
        shown(part)
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if part.part_kind in ("tool-return", "retry-prompt")
    ]


async def drive_with(toolset_for: Any, server_url: str, catalog_url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        names = [tool.name for tool in info.function_tools]
        seen.setdefault("tools", len(names))
        step = len(answers(messages))
        if step < len(STEPS):
            short, args = STEPS[step]
            return ModelResponse(parts=[ToolCallPart(tool_named(names, short), args, f"call-{step}")])
        seen["answers"] = answers(messages)
        return ModelResponse(parts=[TextPart("done")])

    listing = Agent(FunctionModel(lambda messages, info: model_listing(info, seen)), toolsets=[toolset_for(catalog_url)])
    await listing.run("list")
    await Agent(FunctionModel(model), toolsets=[toolset_for(server_url)]).run("write, read, then a wrong call")
    (_, _), (read_back, _), (error, error_as) = seen["answers"]
    return record(tools=seen["catalog"], read_back=read_back, error=error, error_as=error_as)


def model_listing(info: AgentInfo, seen: dict[str, Any]) -> ModelResponse:
    seen["catalog"] = len(info.function_tools)
    return ModelResponse(parts=[TextPart("listed")])
