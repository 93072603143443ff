"""The dataset row: one task as VeRL's parquet holds it, whichever suite it comes from.

Columns VeRL reads: `prompt` (chat messages), `data_source`, `ability`, `reward_model`
({"style", "ground_truth"}), `extra_info`, `agent_name`. Every writer (a GAIA snapshot, a task file)
makes its rows with `build_row`, so a mixed parquet has one `extra_info` shape, and every reader
(the episode's server selection, the reward, the adapters) finds the keys named here.
"""

from __future__ import annotations

from typing import Any

COLUMNS = ("prompt", "data_source", "ability", "reward_model", "extra_info", "agent_name")
AGENT_NAME = "gaia_agent"
"""The VeRL agent loop of a row that names no other (agent.yaml registers it)."""

# extra_info keys. `index` is the row's place in its parquet, set when the file is written.
INDEX = "index"
SCORER = "scorer"
"""How the reward scores the row (`reward.routed_reward_func`, which reads the same key)."""
TOLERANCE = "tolerance"
MCP_SERVERS = "mcp_servers"
"""Comma-separated server ids the row's episode sees ("" for the run's own selection)."""
MCP_TOOLS = "mcp_tools"
"""Comma-separated tool names the row's episode sees ("" for all of its servers' tools)."""
EXTRA_INFO_KEYS = (
    INDEX, "task_id", "level", "split", "file_name", "attachment_path", "question",
    SCORER, TOLERANCE, MCP_SERVERS, MCP_TOOLS,
)  # fmt: skip

SYSTEM_PROMPT = """You are a general AI assistant that solves tasks with the tools you are given.
Work step by step: look at any attached file, call tools to read, compute or search, and check what they return before you rely on it.
When you are done, write your final answer inside <answer></answer>, for example <answer>42</answer>.
The final answer is a number, as few words as possible, or a comma separated list of numbers and/or strings.
A number has no thousands separators and no units such as $ or % unless asked. A string has no articles and no abbreviations, and digits are written as digits unless asked otherwise.
A list follows the same rules for each of its elements."""


def user_prompt(question: str, attachment_path: str) -> str:
    """The task as the agent reads it; an attachment is named at its path inside the environment."""
    text = question.strip()
    if attachment_path:
        # The reference recipe never told the agent its file existed; here it is named.
        text += f"\n\nAttached file: {attachment_path}\nUse the tools to open it."
    return text


def build_row(
    *,
    question: str,
    answer: str,
    data_source: str,
    ability: str,
    reward_style: str,
    task_id: str,
    level: int,
    split: str,
    file_name: str,
    attachment_path: str,
    scorer: str,
    tolerance: float,
    mcp_servers: str = "",
    mcp_tools: str = "",
    agent_name: str = AGENT_NAME,
    index: int | None = None,
) -> dict[str, Any]:
    """One row in VeRL's columns; `index` is left for the writer when not given."""
    extra_info: dict[str, Any] = {} if index is None else {INDEX: index}
    extra_info |= {
        "task_id": task_id,
        "level": level,
        "split": split,
        "file_name": file_name,
        "attachment_path": attachment_path,
        "question": question,
        SCORER: scorer,
        TOLERANCE: tolerance,
        MCP_SERVERS: mcp_servers,
        MCP_TOOLS: mcp_tools,
    }
    return {
        "prompt": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user_prompt(question, attachment_path)},
        ],
        "data_source": data_source,
        "ability": ability,
        "reward_model": {"style": reward_style, "ground_truth": answer},
        "extra_info": extra_info,
        "agent_name": agent_name,
    }
