"""mcp-use: `MCPClient.from_dict({"mcpServers": ...})` and the LangChain tools `MCPAgent` gives its model
(`LangChainAdapter.create_tools`), run by the LangGraph `ToolNode` that MCPAgent's `create_agent` uses:
its ToolMessage is what the model reads."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from mcp_use import MCPClient
from mcp_use.agents.adapters import LangChainAdapter
from scenario import READ, WRITE, WRONG_TYPE, read_args, record, tool_named, write_args


async def tools_of(url: str) -> tuple[MCPClient, list[Any]]:
    client = MCPClient.from_dict({"mcpServers": {"gaia": {"url": url}}})
    return client, await LangChainAdapter().create_tools(client)


def tool_graph(tools: list[Any]) -> Any:
    """The tools step of an agent graph alone: a model's tool call in, ToolMessages out."""
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "tools")
    return graph.compile()


async def run_call(graph: Any, name: str, arguments: dict[str, Any]) -> Any:
    call = {"type": "tool_call", "name": name, "args": arguments, "id": "call-1"}
    return (await graph.ainvoke({"messages": [AIMessage(content="", tool_calls=[call])]}))["messages"][-1]


async def drive(server_url: str, catalog_url: str) -> dict[str, Any]:
    client, catalog = await tools_of(catalog_url)
    await client.close_all_sessions()
    client, tools = await tools_of(server_url)
    try:
        graph, names = tool_graph(tools), [tool.name for tool in tools]
        await run_call(graph, tool_named(names, WRITE), write_args())
        read_back = (await run_call(graph, tool_named(names, READ), read_args())).content
        wrong = await run_call(graph, tool_named(names, READ), WRONG_TYPE)
    finally:
        await client.close_all_sessions()
    return record(
        tools=len(catalog),
        read_back=str(read_back),
        error=str(wrong.content),
        error_as=f"ToolMessage status={wrong.status}",
    )
