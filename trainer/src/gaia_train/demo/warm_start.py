"""GRPO on a CPU, end to end: demo tasks, a tiny model warm-started from scripted episodes, TRL.

The task set is three GAIA-format demo tasks whose servers answer fast (two CSV questions and a
docx memo). The warm-start runs scripted episodes through the real gateway with the same loop
and token tape as training: for each task the right tool call on its attachment, the real
server's output, then one of the set's answers (the right one and the others' answers, equally
often), and trains on the sampled (mask 1) tokens only. After it the model calls the right tool
and answers right about one time in three; GRPO, from the reward alone, has to raise that.

What the tiny model learns is honest but small: it picks, for each question, among answers it
has memorized. It does not read the tool output or compute anything.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import torch

from ..data import gaia as ds
from ..episode.loop import EpisodeLimits, Stop
from ..episode.session import McpSettings, McpToolSession
from ..row import AGENT_NAME
from ..teams.team import Team
from ..trl_adapter.rollout import Episode, run_tape_episode
from .snapshot import DEMO_TASKS
from .tiny_model import build_tokenizer

SERVERS = "documents-csv-server,documents-docx-server"
TASK_KEYS = ("csv-revenue", "csv-regions", "docx-codename")
TOOL_FOR_EXTENSION = {
    "csv": "extract_csv_content",
    "docx": "extract_docx_content",
    "txt": "extract_text_content",
}
LIMITS = EpisodeLimits(max_turns=3, episode_timeout_s=300)
MAX_TOOL_OUTPUT = 500
"""Characters of each tool output kept (the real server's text, capped with its note)."""


@dataclass(frozen=True)
class DemoTaskRow:
    row: dict[str, Any]
    """A VeRL-style row (`dataset.to_row`)."""
    tool: str

    @property
    def attachment(self) -> str:
        return self.row["extra_info"]["attachment_path"]

    @property
    def answer(self) -> str:
        return str(self.row["reward_model"]["ground_truth"])

    def tool_turn(self) -> str:
        call = {"name": self.tool, "arguments": {"file_path": self.attachment}}
        return f"<tool_call>\n{json.dumps(call)}\n</tool_call><|im_end|>"


def answer_turn(answer: str) -> str:
    return f"<answer>{answer}</answer><|im_end|>"


def demo_rows(
    snapshot: Path, keys: Sequence[str] = TASK_KEYS, agent_name: str = AGENT_NAME
) -> list[DemoTaskRow]:
    """The demo snapshot's rows for `keys` (written by `snapshot.write_demo_snapshot`), played by `agent_name`."""
    wanted = {t.task_id: t for t in DEMO_TASKS if t.key in keys}
    missing = set(keys) - {t.key for t in wanted.values()}
    if missing:
        raise ValueError(f"unknown demo task keys {sorted(missing)}; see gaia_train.demo.snapshot.DEMO_TASKS")
    tasks = [t for t in ds.load_split(snapshot, "validation") if t.task_id in wanted]
    rows = []
    for index, task in enumerate(sorted(tasks, key=lambda t: keys.index(wanted[t.task_id].key))):
        extension = wanted[task.task_id].extension
        if extension not in TOOL_FOR_EXTENSION:
            raise ValueError(
                f"demo task {wanted[task.task_id].key} needs a {extension} reader; use csv, docx or txt"
            )
        rows.append(
            DemoTaskRow(ds.to_row(task, index, ds.DEFAULT_MOUNT, agent_name), TOOL_FOR_EXTENSION[extension])
        )
    if len(rows) != len(keys):
        raise ValueError(f"the snapshot at {snapshot} lacks some of the demo tasks {list(keys)}")
    return rows


def demo_mcp(url: str, auth_token: str | None = None) -> McpSettings:
    return McpSettings(url=url, servers=SERVERS, max_output_chars=MAX_TOOL_OUTPUT, auth_token=auth_token)


async def corpus(rows: Sequence[DemoTaskRow], mcp: McpSettings) -> list[str]:
    """The texts the model writes or is prompted with: each prompt with the gateway's tools, and the
    scripted turns. Tool outputs are left out on purpose: they tokenize with whatever merges these
    texts taught, as an unseen server answer would."""
    probe = build_tokenizer(["-"], vocab_size=300)  # only its chat template, to render the prompts
    async with McpToolSession(mcp) as session:
        tools = session.openai_tools()
    texts = []
    for task in rows:
        texts.append(probe.apply_chat_template(task.row["prompt"], tools=tools, tokenize=False))
        texts += [task.tool_turn()] + [answer_turn(other.answer) for other in rows]
    return texts


def scripted(turns: list[str], tokenizer: Any):
    """A generate_ids that writes `turns` one after the other (the text encoded, no log-probs)."""
    queue = list(turns)

    async def generate_ids(ids: list[int], max_tokens: int) -> tuple[list[int], list[float] | None]:
        if not queue:
            raise RuntimeError("the scripted episode asked for more turns than were written")
        return list(tokenizer.encode(queue.pop(0), add_special_tokens=False))[:max_tokens], None

    return generate_ids


async def play_scripted(starts: Sequence[Callable[[], Awaitable[Episode]]], servers: str) -> list[Episode]:
    """Play scripted episodes at once, returned in order; each must end with its answer and no tool
    error (a scripted episode that does not is the environment's set-up, named by `servers`)."""
    episodes: list[Episode | None] = [None] * len(starts)

    async def one(index: int) -> None:
        episodes[index] = await starts[index]()

    async with anyio.create_task_group() as group:
        for index in range(len(starts)):
            group.start_soon(one, index)
    done = [e for e in episodes if e is not None]
    for index, episode in enumerate(done):
        if episode.result.stop is not Stop.ANSWER or episode.result.metrics.tool_errors:
            raise RuntimeError(
                f"scripted episode {index} ended with {episode.result.stop} and "
                f"{episode.result.metrics.tool_errors} tool errors; is the gateway serving {servers}, "
                "with the files the episodes read (the demo data as its dataset dir, for the demo snapshot's tasks)?"
            )
    return done


async def scripted_episodes(
    rows: Sequence[DemoTaskRow], tokenizer: Any, mcp: McpSettings, response_length: int = 4096
) -> list[Episode]:
    """For each task and each of the set's answers, one scripted episode through the gateway."""

    def start(task: DemoTaskRow, answer: str) -> Callable[[], Awaitable[Episode]]:
        turns = [task.tool_turn(), answer_turn(answer)]
        return lambda: run_tape_episode(
            task.row["prompt"], tokenizer, scripted(turns, tokenizer), mcp, LIMITS, response_length
        )

    return await play_scripted([start(task, other.answer) for task in rows for other in rows], SERVERS)


def warm_start(
    model: torch.nn.Module, episodes: Sequence[Episode], steps: int = 80, learning_rate: float = 1e-2
) -> list[float]:
    """Supervised steps on the sampled (mask 1) tokens of `episodes`, full batch; the loss per step.

    Each episode goes through the model on its own, unpadded, and the gradients add up to the padded
    batch's: with no padding mask, attention on a CPU takes its fused causal path, about twice as fast
    (0.67 s against 1.21 s a step for the verl demo's nine episodes of ~1,240 tokens)."""
    rows = []
    for e in episodes:
        input_ids = torch.tensor([e.tape.prompt_ids + e.tape.response_ids])
        labels = input_ids.clone()
        labels[torch.tensor([[0] * len(e.tape.prompt_ids) + e.tape.response_mask]) == 0] = -100
        rows.append((input_ids, labels))
    # each episode's summed loss divided by the whole batch's taught tokens (after the model's
    # one-token shift): the gradients add up to the padded batch's mean
    taught = sum(int((labels[:, 1:] != -100).sum()) for _, labels in rows)
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)
    model.train()
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        total = 0.0
        for input_ids, labels in rows:
            loss = model(input_ids=input_ids, labels=labels, num_items_in_batch=taught).loss
            loss.backward()
            total += loss.item()
        optimizer.step()
        losses.append(total)
    return losses


# -- the demo team (gaia_train/config/teams/demo_team.toml) on the csv-revenue task -----------------

TEAM = "demo_team"
TEAM_SERVERS = "filesystem-server,documents-csv-server,terminal-server"
"""Every server the demo team's roles use: the researcher's two, the coder's terminal."""
TEAM_TASK = "csv-revenue"
TEAM_ANSWERS = ("3070", "2595")
"""The North region's revenue (the right answer), and the South's: a warm-started model picks either,
so a GRPO group of a few episodes almost always has rewards to compare."""
TEAM_LIMITS = EpisodeLimits(max_turns=3, episode_timeout_s=300)
NOTE = "notes.txt"


def _turn(name: str, arguments: dict[str, Any]) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"


def team_turns(task: DemoTaskRow, answer: str) -> list[str]:
    """The demo team's turns in tape order: the researcher leaves a note in the workspace and
    delegates, the coder reads the note and computes in the terminal sandbox, both answer `answer`."""
    code = (
        "import csv; print(sum(int(r['units']) * int(r['unit_price']) "
        f"for r in csv.DictReader(open('{task.attachment}')) if r['region'] == 'North'))"
    )
    return [
        _turn(
            "write_file",
            {"path": NOTE, "content": f"Revenue = units * unit_price, North rows of {task.attachment}"},
        ),
        _turn("delegate", {"role": "coder", "task": f"Compute what {NOTE} says; answer with the number."}),
        _turn(
            "execute_command", {"command": f'cat {NOTE}; echo; python3 -c "{code}"', "output_format": "text"}
        ),
        answer_turn(answer),
        answer_turn(answer),
    ]


async def team_corpus(task: DemoTaskRow, team: Team, mcp: McpSettings) -> list[str]:
    """As `corpus`, for the team: the coordinator's prompt, the coder's hand-off prompt, the turns."""
    from ..teams.delegation import lead_messages, role_messages

    probe = build_tokenizer(["-"], vocab_size=300)
    texts = []
    lead, coder = team.lead, team.roles["coder"]
    for role, messages in (
        (lead, lead_messages(team, task.row["prompt"])),
        (coder, role_messages(coder, lead, "-")),
    ):
        async with McpToolSession(replace(mcp, servers=role.servers_header, tools=role.tools)) as session:
            tools = session.openai_tools() + ([team.delegate_tool(role)] if role.delegates_to else [])
        texts.append(probe.apply_chat_template(messages, tools=tools, tokenize=False))
    for answer in TEAM_ANSWERS:
        texts += team_turns(task, answer)
    return texts


async def scripted_team_episodes(
    task: DemoTaskRow,
    tokenizer: Any,
    team: Team,
    mcp: McpSettings,
    response_length: int = 4096,
    repeats: int = 1,
) -> list[Episode]:
    """Scripted demo-team episodes through the gateway: `repeats` for each of `TEAM_ANSWERS`, in that order.

    The terminal's output differs from run to run (its timing): with several episodes per answer the
    warm-start cannot tie an answer to one output, and the model keeps choosing among them."""

    def start(answer: str) -> Callable[[], Awaitable[Episode]]:
        turns = team_turns(task, answer)
        return lambda: run_tape_episode(
            task.row["prompt"], tokenizer, scripted(turns, tokenizer), mcp, TEAM_LIMITS, response_length, team
        )

    return await play_scripted(
        [start(answer) for answer in TEAM_ANSWERS for _ in range(repeats)], TEAM_SERVERS
    )
