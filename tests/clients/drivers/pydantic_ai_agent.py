"""A pydantic-ai `Agent` with the gateway as its MCP toolset and a scripted model (`FunctionModel`)
in place of an LLM: the model calls the tools in turn and records what it is shown of each result."""

from __future__ import annotations

import copy
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer
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


def strict_refusals(info: AgentInfo) -> dict[str, str]:
    """Tools whose schema pydantic-ai's OpenAI transformer cannot make strict (it raises)."""
    refused = {}
    for tool in info.function_tools:
        try:
            OpenAIJsonSchemaTransformer(copy.deepcopy(tool.parameters_json_schema), strict=True).walk()
        except Exception as exc:
            refused[tool.name] = str(exc)
    return refused


def not_sent_strict(info: AgentInfo) -> list[str]:
    """Tools pydantic-ai would not send strict on its own (strict unset) although every parameter is
    required; a tool with optional parameters cannot be (strict makes every parameter required)."""
    names = []
    for tool in info.function_tools:
        schema = tool.parameters_json_schema
        transformer = OpenAIJsonSchemaTransformer(copy.deepcopy(schema), strict=None)
        transformer.walk()
        optional = set(schema.get("properties", {})) - set(schema.get("required", []))
        if not transformer.is_strict_compatible and not optional:
            names.append(tool.name)
    return names


async def drive_with(toolset_for: Any, server_url: str, catalog_url: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}

    def list_catalog(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen["catalog"], seen["refused"], seen["not_strict"] = (
            len(info.function_tools),
            strict_refusals(info),
            not_sent_strict(info),
        )
        return ModelResponse(parts=[TextPart("listed")])

    def work(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        step = len(answers(messages))
        if step < len(STEPS):
            short, args = STEPS[step]
            names = [tool.name for tool in info.function_tools]
            return ModelResponse(parts=[ToolCallPart(tool_named(names, short), args, f"call-{step}")])
        seen["answers"] = answers(messages)
        return ModelResponse(parts=[TextPart("done")])

    await Agent(FunctionModel(list_catalog), toolsets=[toolset_for(catalog_url)]).run("list the tools")
    await Agent(FunctionModel(work), toolsets=[toolset_for(server_url)]).run("write, read, then a wrong call")
    _, (read_back, _), (error, error_as) = seen["answers"]
    return {
        **record(tools=seen["catalog"], read_back=read_back, error=error, error_as=error_as),
        "strict_refused": seen["refused"],
        "not_sent_strict": seen["not_strict"],
    }
