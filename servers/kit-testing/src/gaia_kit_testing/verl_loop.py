"""The trainer's VeRL agent loop driven with verl 0.9.1's own types, and its token trajectories read.

`ScriptedServer` stands in for VeRL's LLMServerClient; `make_loop` builds the agent loop the way VeRL's
AgentLoopWorker builds each trajectory's loop, from gaia_train's agent.yaml entry. Both import verl (and
gaia_train) only when used, so importing this module needs neither (scripts/trainer-extra.sh installs
verl); `call` and `runs` need nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def call(name: str, **arguments: Any) -> str:
    """A tool call as the model writes it (Hermes style)."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


class ScriptedServer:
    """Stands in for VeRL's LLMServerClient: each generate samples the next scripted turn."""

    def __init__(self, tokenizer, turns: list[str], logprobs: bool = True):
        self.tokenizer = tokenizer
        self.turns = list(turns)
        self.logprobs = logprobs
        self.calls: list[dict[str, Any]] = []
        self.sampled: list[list[int]] = []

    async def generate(
        self, request_id: str, *, prompt_ids: list[int], sampling_params: dict[str, Any], **kwargs: Any
    ) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        self.calls.append(
            {"request_id": request_id, "prompt_ids": list(prompt_ids), "params": dict(sampling_params)}
        )
        text = self.turns.pop(0)
        ids = self.tokenizer.encode(text, add_special_tokens=False) + [self.tokenizer.eos_token_id]
        ids = ids[: sampling_params["max_tokens"]]  # vLLM stops at max_tokens, end-of-turn or not
        self.sampled.append(ids)
        return TokenOutput(
            token_ids=ids,
            log_probs=[-0.5 - 0.001 * i for i in range(len(ids))] if self.logprobs else None,
            stop_reason="completed",
            extra_fields={"min_global_steps": 3, "max_global_steps": 3 + len(self.calls)},
        )


def make_loop(
    tokenizer,
    server,
    mcp_url: str,
    *,
    prompt_length: int = 4096,
    response_length: int = 2048,
    max_turns: int = 8,
    max_tool_response_length: int = 4000,
    team: str | None = None,
):
    import gaia_train.verl_adapter.agent_loop  # noqa: F401  (registers gaia_agent)
    import hydra
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.utils.dataset.rl_dataset import RLHFDataset

    config = OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {
                    "prompt_length": prompt_length,
                    "response_length": response_length,
                    "multi_turn": {
                        "max_assistant_turns": max_turns,
                        "max_parallel_calls": 4,
                        "max_tool_response_length": max_tool_response_length,
                    },
                }
            },
            "data": {"apply_chat_template_kwargs": {}},
        }
    )
    entries = OmegaConf.load(Path(gaia_train.__file__).parent / "config" / "agent.yaml")
    [entry] = [e for e in entries if e.name == "gaia_agent"]
    entry = OmegaConf.merge(entry, {"mcp_server_url": mcp_url, **({"team": team} if team else {})})
    # Built the way VeRL's AgentLoopWorker builds each trajectory's loop.
    return hydra.utils.instantiate(
        config=entry,
        trainer_config=DictConfigWrap(config=config),
        server_manager=server,
        tokenizer=tokenizer,
        processor=None,
        hf_model_type=None,
        dataset_cls=RLHFDataset,
        data_config=DictConfigWrap(config.data),
        tools=ToolListWrap([]),
    )


def runs(mask: list[int]) -> list[tuple[int, int, int]]:
    """(value, start, end) for each run of equal mask values."""
    out, start = [], 0
    for i in range(1, len(mask) + 1):
        if i == len(mask) or mask[i] != mask[start]:
            out.append((mask[start], start, i))
            start = i
    return out
