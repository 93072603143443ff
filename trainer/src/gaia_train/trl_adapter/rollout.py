"""The TRL adapter: GRPO with TRL's `GRPOTrainer`, its rollouts played by the shared episode loop.

TRL hands `rollout_func` the prompts of a step (each one already repeated `num_generations`
times by its sampler) and expects one completion back per prompt. Each completion here is one
episode of `run_episode` in its own MCP session, through a `TokenTape`: the prompt ids, the
response ids (sampled turns and tool responses, in order), their log-probs, and the tape's mask
as TRL's `env_mask`, so the loss counts only the tokens the model sampled. The episode's own
final answer travels to the reward as the `gaia_answer` column; an episode whose attachment was
generated for it (`attachments`) brings its own ground truth, `gaia_ground_truth`, which the reward
scores against instead of the row's. An episode the environment ended
(`Stop.ENVIRONMENT_FAULT`) is excluded from the loss: its whole `env_mask` is 0 (a masked end-of-turn
token when it never started), and `gaia_env_fault` says so per sample.

Generation runs on the trainer's own model (a plain sampling loop with the KV cache, one
episode at a time in a worker thread) while the episodes' tool calls run concurrently. This is
the CPU path: small models, no vLLM. `gaia_train.demo` builds a tiny model for it on the spot and
`warm_start` teaches it the tool-call format from scripted episodes through the same gateway.

Needs torch, transformers and TRL: scripts/trainer-extra.sh, then scripts/trl-extra.sh.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import torch
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from ..episode.loop import EpisodeLimits, EpisodeResult
from ..episode.session import McpSettings
from ..episode.tokens import GenerateIds, TokenPolicy, TokenTape
from ..play import play, teams_of_rows
from ..reward import ANSWER_KEY, SCORER_KEY, routed_score
from ..row import AGENT_NAME, MCP_SERVERS, MCP_TOOLS, TOLERANCE
from ..teams.delegation import TeamResult
from ..teams.team import Team
from .attachments import Attachment, AttachmentMaker, attached, episode_stream
from .sampler import sample


@dataclass
class Episode:
    """One finished rollout: the tape trained on and what the loop reported."""

    tape: TokenTape
    result: EpisodeResult
    """For a team, the whole team as one episode (`TeamResult.episode_result`)."""
    team: TeamResult | None = None
    ground_truth: str | None = None
    """The episode's own answer when its attachment was generated for it (`attachments`)."""


def grpo_dataset(rows: Sequence[dict[str, Any]]) -> Dataset:
    """VeRL-style rows (`gaia_train.row.build_row`) as the columns TRL and the reward read."""
    return Dataset.from_list(
        [
            {
                "prompt": row["prompt"],
                "ground_truth": str(row["reward_model"]["ground_truth"]),
                "data_source": row["data_source"],
                "task_id": row["extra_info"]["task_id"],
                # The row's scorer (a mixed dataset's suites: reward.routed_score).
                "scorer": str(row["extra_info"].get(SCORER_KEY) or ""),
                "tolerance": float(row["extra_info"].get(TOLERANCE) or 0.0),
            }
            for row in rows
        ]
    )


async def run_tape_episode(
    messages: list[dict[str, Any]],
    tokenizer: Any,
    generate_ids: GenerateIds,
    mcp: McpSettings,
    limits: EpisodeLimits,
    response_length: int,
    team: Team | None = None,
    extra_info: dict[str, Any] | None = None,
    attachment: Attachment | None = None,
) -> Episode:
    """One row's episode through the gateway (`delegation.play`), its tokens kept on a fresh tape;
    with `attachment`, written into the episode's workspace before its first turn."""
    tape = TokenTape(tokenizer, response_length)
    connect = attached(attachment) if attachment else None
    result, played = await play(
        messages, lambda: TokenPolicy(tape, generate_ids), mcp, limits, team, extra_info, connect
    )
    return Episode(tape, result, played, attachment.ground_truth if attachment else None)


@dataclass(frozen=True)
class RowPlay:
    """How a row's episode is played: its team (None: the single agent), its extra_info, and the maker
    of its per-episode attachment (None: the row's file, if any, is the dataset's)."""

    team: Team | None = None
    extra_info: dict[str, Any] | None = None
    attachment: AttachmentMaker | None = None


def row_plays(
    rows: Sequence[dict[str, Any]],
    team_files: Sequence[str | Path] = (),
    attachments: Mapping[str, AttachmentMaker] | None = None,
) -> dict[str, RowPlay]:
    """Each row's play keyed by its prompt: TRL hands `rollout_func` the prompts only. `attachments`
    maps a row's task_id to the maker of its per-episode attachment."""
    teams = teams_of_rows(rows, team_files)
    makers = dict(attachments or {})
    unknown = set(makers) - {str((row.get("extra_info") or {}).get("task_id")) for row in rows}
    if unknown:
        raise ValueError(f"attachments are given for task ids {sorted(unknown)}, which no row has")
    plays: dict[str, RowPlay] = {}
    for row in rows:
        info = dict(row.get("extra_info") or {})
        selection = {k: info.get(k) for k in (MCP_SERVERS, MCP_TOOLS)}
        team = teams.get(str(row.get("agent_name") or AGENT_NAME))
        maker = makers.get(str(info.get("task_id")))
        if team is not None and maker is not None:
            raise ValueError(
                f"task {info.get('task_id')} is played by the team {team.name}, whose roles open their own "
                "sessions: a per-episode attachment is for the single agent"
            )
        play_ = RowPlay(team, {k: v for k, v in selection.items() if v}, maker)
        key = _prompt_key(row["prompt"])
        if plays.setdefault(key, play_) != play_:
            raise ValueError(
                f"two rows (one is task {info.get('task_id')}) have the same prompt but a different agent_name "
                "or server selection; TRL hands rollout_func the prompts only, so it cannot tell them apart"
            )
    return plays


def _prompt_key(messages: Sequence[dict[str, Any]]) -> str:
    # Arrow gives every message of a dataset column the same keys, None where a message had none.
    present = [{k: v for k, v in m.items() if v is not None} for m in messages]
    return json.dumps(present, sort_keys=True, ensure_ascii=False, default=str)


@dataclass
class GaiaRollout:
    """TRL's `rollout_func`: every prompt is one gateway-driven episode sampled from the trainer's model."""

    tokenizer: Any
    mcp: McpSettings
    limits: EpisodeLimits = field(default_factory=lambda: EpisodeLimits(max_turns=4, episode_timeout_s=300))
    response_length: int = 1024
    temperature: float = 1.0
    max_concurrent: int = 16
    seed: int | None = None
    """Each episode's random stream derives from it (with the step and the episode's place in it); None:
    the run's seed, `GRPOConfig.seed`, so one knob seeds a whole run. `play_prompts` outside a run
    (a held-out evaluation) needs it set."""
    plays: dict[str, RowPlay] | None = None
    """Each prompt's team and server selection (`row_plays(rows)`); None: the single agent, `mcp`'s servers."""
    episodes: list[Episode] = field(default_factory=list)
    """Every episode of the run, in step order (for tests and reports)."""

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._calls = 0

    def __call__(self, prompts: list[list[dict[str, Any]]], trainer: GRPOTrainer) -> dict[str, list[Any]]:
        model = trainer.accelerator.unwrap_model(trainer.model)
        seed = trainer.args.seed if self.seed is None else self.seed
        episodes = anyio.run(self._run_all, prompts, model, self._calls, seed)
        self._calls += 1
        self.episodes.extend(episodes)
        for episode in episodes:
            if episode.result.environment_fault:
                _exclude(episode.tape, episode.result.messages)
        return {
            "prompt_ids": [e.tape.prompt_ids for e in episodes],
            "completion_ids": [e.tape.response_ids for e in episodes],
            "logprobs": [e.tape.response_logprobs or [0.0] * len(e.tape.response_ids) for e in episodes],
            "env_mask": [e.tape.response_mask for e in episodes],
            "gaia_env_fault": [int(e.result.environment_fault) for e in episodes],
            # Per-completion columns for the reward function (and TRL's completion logs).
            "gaia_answer": [e.result.answer for e in episodes],
            "gaia_ground_truth": [e.ground_truth for e in episodes],
            "gaia_solution": [_sampled_text(e.tape) for e in episodes],
            "gaia_session_id": [e.result.session_id for e in episodes],
            "gaia_stop": [str(e.result.stop) for e in episodes],
            "gaia_tool_calls": [e.result.metrics.total_tool_calls for e in episodes],
            "gaia_cost_usd": [e.result.metrics.cost_usd for e in episodes],
            "gaia_withheld": [e.result.metrics.withheld for e in episodes],
        }

    def play_prompts(
        self, prompts: list[list[dict[str, Any]]], model: torch.nn.Module, call: int
    ) -> list[Episode]:
        """One episode per prompt with `model`, not recorded in `episodes` (a held-out evaluation uses it
        too); `call` picks the episodes' random streams, so give each evaluation its own."""
        if self.seed is None:
            raise ValueError(
                "play_prompts outside a GRPO run needs the rollout's seed: GaiaRollout(seed=...)"
            )
        return anyio.run(self._run_all, prompts, model, call, self.seed)

    async def _run_all(
        self, prompts: list[list[dict[str, Any]]], model: torch.nn.Module, call: int, seed: int
    ) -> list[Episode]:
        hows = [self._play_of(prompt) for prompt in prompts]  # every prompt known before any episode starts
        episodes: list[Episode | None] = [None] * len(prompts)
        gate = anyio.Semaphore(self.max_concurrent)

        async def one(index: int) -> None:
            # Each episode draws from its own stream: episodes interleave in whatever order their
            # tool calls return, and a shared stream would make the samples depend on that order.
            generator = torch.Generator().manual_seed(hash((seed, call, index)))

            async def generate_ids(ids: list[int], max_tokens: int) -> tuple[list[int], list[float] | None]:
                return await anyio.to_thread.run_sync(self._sample, model, ids, max_tokens, generator)

            maker = hows[index].attachment
            attachment = maker(episode_stream(seed, call, index)) if maker else None
            async with gate:
                episodes[index] = await run_tape_episode(
                    prompts[index],
                    self.tokenizer,
                    generate_ids,
                    self.mcp,
                    self.limits,
                    self.response_length,
                    hows[index].team,
                    hows[index].extra_info,
                    attachment,
                )

        async with anyio.create_task_group() as group:
            for index in range(len(prompts)):
                group.start_soon(one, index)
        return [e for e in episodes if e is not None]

    def _play_of(self, prompt: list[dict[str, Any]]) -> RowPlay:
        if self.plays is None:
            return RowPlay()
        how = self.plays.get(_prompt_key(prompt))
        if how is None:
            raise ValueError(
                "TRL handed over a prompt of no row given to row_plays; build it from the same rows"
            )
        return how

    def _sample(
        self, model: torch.nn.Module, ids: list[int], max_tokens: int, generator: torch.Generator
    ) -> tuple[list[int], list[float]]:
        # One generation at a time: the model is shared, and a tiny model gains nothing from threads.
        with self._lock:
            return sample(model, ids, max_tokens, self.tokenizer.eos_token_id, self.temperature, generator)


def _exclude(tape: TokenTape, messages: list[dict[str, Any]]) -> None:
    """An episode the environment ended carries no loss: every token masked, at least one token."""
    if not tape.prompt_ids:  # no session was opened: the row's prompt without tool schemas
        tape.prompt_ids = tape._encode(tape._render(messages, []))
    if not tape.response_ids:
        tape.response_ids = [tape.tokenizer.eos_token_id]
        tape.response_logprobs = [0.0]
    tape.response_mask = [0] * len(tape.response_ids)


def _sampled_text(tape: TokenTape) -> str:
    """What the model itself wrote, turns joined; tool responses and scaffolding left out."""
    return tape.decode([t for t, m in zip(tape.response_ids, tape.response_mask, strict=True) if m])


def gaia_grpo_reward(
    prompts: list[Any],
    completions: list[Any],
    ground_truth: list[str],
    gaia_answer: list[str | None],
    gaia_solution: list[str],
    gaia_ground_truth: list[str | None] | None = None,
    data_source: list[str] | None = None,
    scorer: list[str] | None = None,
    tolerance: list[float] | None = None,
    **_: Any,
) -> list[float]:
    """TRL reward function: each episode scored by its row's scorer (`routed_score`: GAIA's
    for GAIA rows), its own final answer first, against its own ground truth when its attachment
    was generated for it."""
    count = len(ground_truth)
    own = gaia_ground_truth or [None] * count
    ground_truth = [row if mine is None else mine for row, mine in zip(ground_truth, own, strict=True)]
    sources, scorers, tolerances = (
        data_source or ["gaia"] * count,
        scorer or [""] * count,
        tolerance or [0.0] * count,
    )
    return [
        routed_score(source, solution, truth, {ANSWER_KEY: answer, SCORER_KEY: how, TOLERANCE: within})
        for source, solution, truth, answer, how, within in zip(
            sources, gaia_solution, ground_truth, gaia_answer, scorers, tolerances, strict=True
        )
    ]


def grpo_config(
    output_dir: str,
    *,
    steps: int,
    prompts_per_step: int,
    num_generations: int,
    learning_rate: float,
    temperature: float,
    seed: int = 0,
    **overrides: Any,
) -> GRPOConfig:
    """A GRPOConfig for a CPU run: fp32, no checkpoints, no reporting, a log line per step.

    `seed` is the run's: TRL seeds Python's random, numpy and torch with it when the trainer is
    built, and a `GaiaRollout` without a seed of its own derives its episodes' streams from it."""
    return GRPOConfig(
        output_dir=output_dir,
        max_steps=steps,
        per_device_train_batch_size=prompts_per_step * num_generations,
        num_generations=num_generations,
        learning_rate=learning_rate,
        temperature=temperature,
        beta=0.0,
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        disable_tqdm=True,
        seed=seed,
        dataloader_num_workers=0,
        **overrides,
    )


def grpo_trainer(
    model: torch.nn.Module,
    tokenizer: Any,
    dataset: Dataset,
    rollout: GaiaRollout,
    config: GRPOConfig,
    reward: Callable[..., list[float]] = gaia_grpo_reward,
) -> GRPOTrainer:
    return GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=config,
        train_dataset=dataset,
        processing_class=tokenizer,
        rollout_func=rollout,
    )
