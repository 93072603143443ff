"""What rendering the chat template costs the VeRL agent-loop worker's event loop: inline vs in a thread.

Many episodes share one event loop in VeRL's AgentLoopWorker. The token tape renders the prompt once
(the row with every tool schema) and a scaffold after each tool turn (tool outputs up to 8,192
characters). Done inline, each render holds the loop: no other episode's generation request or tool
call moves meanwhile. The tape now renders in a worker thread (`anyio.to_thread`, as VeRL's own loops
use `run_in_executor`). This measures both, in one run: 16 concurrent episodes (the prompt with the 126
reference tool schemas, a Qwen3-style template that writes each schema as JSON, a byte-level BPE
trained on the schemas; then 4 tool turns of 8,000 characters each) next to a heartbeat task that
sleeps 1 ms; the heartbeat's longest gap is how long the loop was held.

    uv run --no-sync python -m benchmarks.episode_render
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import anyio.to_thread
from gaia_kit_testing.compat import REFERENCE
from gaia_train.demo.tiny_model import build_tokenizer
from gaia_train.episode.tokens import TokenTape

ROOT = Path(__file__).resolve().parents[1]
EPISODES = 16
TOOL_TURNS = 4
QWEN3_STYLE = (
    "{%- if tools %}<|im_start|>system\n{% if messages[0].role == 'system' %}{{ messages[0].content }}\n\n"
    "{% endif %}# Tools\n<tools>\n{% for tool in tools %}{{ tool | tojson }}\n{% endfor %}</tools><|im_end|>\n"
    "{% endif %}{%- for message in messages %}{%- if message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{ '<|im_start|>user' }}{% endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{ '<|im_end|>\\n' }}{% endif %}"
    "{%- elif message.role == 'assistant' %}<|im_start|>assistant\n{{ message.content }}<|im_end|>\n"
    "{% elif message.role != 'system' %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
    "{% endif %}{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tools() -> list[dict]:
    return [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t.get("description") or "",
                "parameters": t["inputSchema"],
            },
        }
        for server in REFERENCE.values()
        for t in server
    ]


async def run(tokenizer, schemas: list[dict], threaded: bool, threads: int = 40) -> dict[str, float]:
    messages = [
        {"role": "system", "content": "Answer in <answer></answer>."},
        {"role": "user", "content": "What is the meeting code in the attached file?"},
    ]
    output = [{"role": "tool", "tool_call_id": "c", "name": "read", "content": "lorem ipsum " * 666}]
    gaps: list[float] = []
    done = anyio.Event()

    async def heartbeat() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await anyio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async def call(function, *args):
        if not threaded:
            return function(*args)
        return await anyio.to_thread.run_sync(function, *args, limiter=limiter)

    limiter = anyio.CapacityLimiter(threads)

    async def episode() -> None:
        tape = TokenTape(tokenizer, 100_000)
        await call(tape.begin, messages, schemas)
        for _ in range(TOOL_TURNS):
            tape.add_sampled(tape._encode("<tool_call>{}</tool_call>") + [tokenizer.eos_token_id], None)
            tape.add_context(await call(tape.scaffold, tape.last_sampled, output))
            await anyio.sleep(0)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        group.start_soon(heartbeat)
        async with anyio.create_task_group() as episodes:
            for _ in range(EPISODES):
                episodes.start_soon(episode)
        done.set()
    return {
        "wall_s": round(time.perf_counter() - started, 3),
        "loop_held_max_ms": round(max(gaps) * 1000, 1),
        "loop_held_over_50ms": sum(gap > 0.05 for gap in gaps),
    }


def main() -> None:
    schemas = tools()
    tokenizer = build_tokenizer([json.dumps(schemas)], vocab_size=4096)
    tokenizer.chat_template = QWEN3_STYLE
    tape = TokenTape(tokenizer, 100_000)
    t0 = time.perf_counter()
    prompt = tape.begin([{"role": "user", "content": "q"}], schemas)
    one_prompt_ms = (time.perf_counter() - t0) * 1000
    inline = anyio.run(run, tokenizer, schemas, False)
    threaded = anyio.run(run, tokenizer, schemas, True)
    one_thread = anyio.run(run, tokenizer, schemas, True, 1)
    print(
        json.dumps(
            {
                "tools": len(schemas),
                "prompt_tokens": len(prompt),
                "one_prompt_render_ms": round(one_prompt_ms, 1),
                "episodes": EPISODES,
                "inline": inline,
                "threaded": threaded,
                "one_thread": one_thread,
                "loop_held_max_ratio_inline_over_threaded": round(
                    inline["loop_held_max_ms"] / max(threaded["loop_held_max_ms"], 0.1), 1
                ),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
