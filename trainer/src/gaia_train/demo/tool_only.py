"""The tool-only demo task set: the answer is only in the attachment, and the attachment is new every episode.

Questions about a visitor pass ("What is the parking bay on the attached visitor pass?"). Every
episode's workspace gets its own `pass.txt` (`trl_adapter.attachments`: written through the gateway's
filesystem-server before the first turn) holding one code drawn at random for that episode from
`CODES`, so a memorized answer is right one time in `len(CODES)` at best: the model has to call
`extract_text_content` on the file and copy the code into `<answer>`. Each code is one token of the
tiny tokenizer (`build_tokenizer(words=...)`), so reading the pass is copying one token.

Questions, by what the model sees of them:
- `TEACHER_LABEL` (door code): the warm start's scripted teacher reads the pass and answers its code.
- `TRAIN_LABELS` (parking bay, locker): the teacher opens the pass but guesses a code at random, so
  the warm start is meant to leave a model that can copy a code from a tool output but, on these
  questions, guesses (right one time in four). GRPO trains on them and has to learn, from the reward alone, to read.
- `HELDOUT_LABELS` (gate): never in the warm start nor in training; its reward is measured during
  training, to see whether what GRPO taught is "read the pass" or something about two questions.
The ablation plays the training questions with the pass's code blanked out: the episode's answer is
drawn as before but is nowhere the model can read it, so the reward stays at chance.

No split holds codes of its own: a code the model never saw keeps an untrained embedding, and
copying even the four trained codes is more than the tiny model learned in the benchmark (see
docs/trainer.md for what it reached). Held out is the question.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from functools import partial
from typing import Any

from ..episode.loop import EpisodeLimits
from ..episode.session import McpSettings, McpToolSession
from ..episode.toolcalls import ToolCall
from ..reward import ANSWER_KEY, SCORER_KEY, routed_score
from ..row import build_row
from ..trl_adapter.attachments import AttachedSession, Attachment, AttachmentMaker
from ..trl_adapter.rollout import Episode, run_tape_episode
from .tiny_model import build_tokenizer
from .warm_start import answer_turn, play_scripted, scripted

SERVERS = "documents-txt-server"
"""What the model's episodes see; the gateway also serves filesystem-server, which writes the pass."""
GATEWAY_SERVERS = "documents-txt-server,filesystem-server"
TOOL = "extract_text_content"
FILE = "pass.txt"
TEACHER_LABEL = "door code"
TRAIN_LABELS = ("parking bay", "locker")
HELDOUT_LABELS = ("gate",)
DATA_SOURCE = "gaia_demo_tool_only"
BLANK = "???"
LIMITS = EpisodeLimits(max_turns=3, episode_timeout_s=300)
MAX_TOOL_OUTPUT = 500

_CONSONANTS = "BCDFGHJKLMNPQRSTVWXZ"
CODES = tuple(
    random.Random(21).sample([a + b + c for a in _CONSONANTS for b in _CONSONANTS for c in _CONSONANTS], 4)
)
CHANCE = 1 / len(CODES)
"""The reward of a model that does not read the pass: one code in four."""


def pass_text(label: str, code: str) -> str:
    return f"VISITOR PASS\n{label}: {code}\n"


def attachment(label: str, code: str, blank: bool = False) -> Attachment:
    return Attachment(FILE, pass_text(label, BLANK if blank else code), code)


def maker(label: str, blank: bool = False) -> AttachmentMaker:
    """The per-episode attachment of the question about `label`; `blank`: the ablation's pass."""
    return lambda rng: attachment(label, rng.choice(CODES), blank)


def task_id(label: str) -> str:
    return f"tool-only-{label.replace(' ', '-')}"


def row(label: str, index: int = 0) -> dict[str, Any]:
    """The question about `label`; its answer is drawn per episode, so the row's ground_truth says so."""
    return build_row(
        question=f"What is the {label} on the attached visitor pass?",
        answer="(drawn per episode)",
        data_source=DATA_SOURCE,
        ability="tool_use",
        reward_style="rule",
        task_id=task_id(label),
        level=1,
        split="demo",
        file_name=FILE,
        attachment_path=FILE,
        scorer="exact",
        tolerance=0.0,
        index=index,
    )


def rows(labels: Sequence[str]) -> list[dict[str, Any]]:
    return [row(label, index) for index, label in enumerate(labels)]


def attachments(labels: Sequence[str], blank: bool = False) -> dict[str, AttachmentMaker]:
    """`row_plays`' attachments for the rows of `labels`."""
    return {task_id(label): maker(label, blank) for label in labels}


def demo_mcp(url: str, auth_token: str | None = None) -> McpSettings:
    return McpSettings(
        url=url, servers=SERVERS, tools=(TOOL,), max_output_chars=MAX_TOOL_OUTPUT, auth_token=auth_token
    )


def tool_turn() -> str:
    return (
        f"<tool_call>\n{json.dumps({'name': TOOL, 'arguments': {'file_path': FILE}})}\n</tool_call><|im_end|>"
    )


async def read_pass(mcp: McpSettings, label: str, code: str) -> str:
    """The server's output for a pass, asked in a session of its own."""
    async with AttachedSession(mcp, attachment(label, code)) as session:
        outcome = await session.call(ToolCall("read", TOOL, {"file_path": FILE}))
    if outcome.is_error:
        raise RuntimeError(
            f"{TOOL} on {FILE} failed: {outcome.text}; does the gateway serve {GATEWAY_SERVERS}?"
        )
    return outcome.text


ALL_LABELS = (TEACHER_LABEL, *TRAIN_LABELS, *HELDOUT_LABELS)


async def corpus(mcp: McpSettings) -> list[str]:
    """The texts the tokenizer learns from: each prompt with the tools (the held-out one too: the
    tokenizer is no training), the scripted turns and one server output of a blanked pass."""
    probe = build_tokenizer(["-"], vocab_size=300)  # only its chat template, to render the prompts
    async with McpToolSession(mcp) as session:
        tools = session.openai_tools()
    texts = [probe.apply_chat_template(r["prompt"], tools=tools, tokenize=False) for r in rows(ALL_LABELS)]
    texts += [tool_turn(), answer_turn(BLANK)] + [await read_pass(mcp, label, BLANK) for label in ALL_LABELS]
    clashes = sorted({code for code in CODES for text in texts if code in text})
    if clashes:
        raise RuntimeError(f"the codes {clashes} occur in the prompts or the server's output: pick others")
    return texts


def tokenizer(texts: Sequence[str]) -> Any:
    return build_tokenizer(list(texts) * 4, words=CODES)


async def scripted_episodes(
    tokenizer: Any, mcp: McpSettings, per_question: int, response_length: int = 1024, seed: int = 0
) -> list[Episode]:
    """`per_question` scripted episodes for the teacher's question and each training question, each on
    a pass of its own: the teacher's answer is the pass's code; on the training questions a code drawn
    at random (right one time in four, by chance)."""
    starts = []
    for label in (TEACHER_LABEL, *TRAIN_LABELS):
        prompt = row(label)["prompt"]
        for k in range(per_question):
            rng = random.Random(f"warm:{seed}:{label}:{k}")
            code = rng.choice(CODES)
            answer = code if label == TEACHER_LABEL else rng.choice(CODES)
            turns = scripted([tool_turn(), answer_turn(answer)], tokenizer)
            starts.append(
                partial(
                    run_tape_episode,
                    prompt,
                    tokenizer,
                    turns,
                    mcp,
                    LIMITS,
                    response_length,
                    attachment=attachment(label, code),
                )
            )
    return await play_scripted(starts, GATEWAY_SERVERS)


def reward(episode: Episode) -> float:
    """The episode's reward as the TRL reward computes it: its answer against its own pass's code."""
    return routed_score(
        DATA_SOURCE, "", episode.ground_truth, {ANSWER_KEY: episode.result.answer, SCORER_KEY: "exact"}
    )
