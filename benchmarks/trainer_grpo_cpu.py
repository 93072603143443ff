"""GRPO on this CPU through the real gateway: TRL's GRPOTrainer, the episode loop, a tiny model.

The default run is the tool-only task set (`gaia_train.demo.tool_only`): questions about a visitor
pass whose code is drawn anew for every episode and written into that episode's workspace, so the
answer is only in the tool output. A real `gaia-env serve` (documents-txt-server reads the pass,
filesystem-server writes it); a tiny Qwen2 model and tokenizer built on the spot (no download),
warm-started on scripted episodes through the same gateway (the teacher reads the pass for the door
code and guesses on the two training questions); then, from the same warm-started weights:

- GRPO on the two training questions, every completion one gateway-driven episode in its own MCP
  session; the held-out question (never in the warm start nor in training) is played every
  `--eval-every` steps with the current weights;
- the ablation: the same GRPO run with the pass's code blanked out, which can only stay at chance.

Prints the rewards per step and writes the curves (PNG) and the numbers (JSON). `--team` trains the
demo team instead (gaia_train/config/teams/demo_team.toml: the researcher delegates to the coder, who
computes in the terminal sandbox), on the memorized-answer csv task.

    uv run --no-sync python -m benchmarks.trainer_grpo_cpu    # 60 steps, groups of 8, AdamW 1e-3
    uv run --no-sync python -m benchmarks.trainer_grpo_cpu --plot docs/trainer_grpo_cpu.png \
        --json docs/trainer_grpo_cpu.json
    uv run --no-sync python -m benchmarks.trainer_grpo_cpu --team   # the demo team: 60 steps, AdamW 5e-4

Needs the trainer's extras: scripts/trainer-extra.sh and scripts/trl-extra.sh (make test runs both).
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import torch
from gaia_train.demo import tool_only, warm_start
from gaia_train.demo.snapshot import write_demo_snapshot
from gaia_train.demo.tiny_model import TinyModelConfig, build_model, build_tokenizer
from gaia_train.episode.session import McpSettings
from gaia_train.teams.team import load_team
from gaia_train.trl_adapter.rollout import GaiaRollout, grpo_config, grpo_dataset, grpo_trainer, row_plays
from transformers import TrainerCallback

from benchmarks.loadgen import start_gateway


class PrintRewards(TrainerCallback):
    def __init__(self, name: str) -> None:
        self.name = name
        self.started = time.perf_counter()
        self.rows: list[dict[str, float]] = []

    def on_log(self, args, state, control, logs=None, **kwargs) -> None:
        if not logs or "reward" not in logs:
            return
        row = {
            "step": state.global_step,
            "reward_mean": round(logs["reward"], 4),
            "reward_std": round(logs.get("reward_std", 0.0), 4),
            "seconds": round(time.perf_counter() - self.started, 1),
        }
        self.rows.append(row)
        print(
            f"{self.name} step {row['step']:3d}  reward/mean {row['reward_mean']:.3f}  "
            f"std {row['reward_std']:.3f}  {row['seconds']:7.1f} s",
            flush=True,
        )


class HeldOut(TrainerCallback):
    """Plays the held-out question with the current weights before training and every `every` steps."""

    def __init__(self, rollout: GaiaRollout, episodes: int, every: int) -> None:
        self.rollout, self.every = rollout, every
        self.prompts = [r["prompt"] for r in tool_only.rows(tool_only.HELDOUT_LABELS)] * episodes
        self.rows: list[dict[str, float]] = []

    def evaluate(self, step: int, model: torch.nn.Module) -> None:
        # Each evaluation draws its own passes and samples: its step picks the random streams.
        episodes = self.rollout.play_prompts(self.prompts, model, step)
        reward = sum(map(tool_only.reward, episodes)) / len(episodes)
        self.rows.append({"step": step, "reward_mean": round(reward, 4), "episodes": len(episodes)})
        print(f"held-out step {step:3d}  reward/mean {reward:.3f}  ({len(episodes)} episodes)", flush=True)

    def on_train_begin(self, args, state, control, model=None, **kwargs) -> None:
        self.evaluate(0, model)

    def on_step_end(self, args, state, control, model=None, **kwargs) -> None:
        if state.global_step % self.every == 0:
            self.evaluate(state.global_step, model)


def thirds(values: list[float]) -> list[float]:
    """The mean of each third of the run (the last takes what does not divide evenly)."""
    k = max(1, len(values) // 3)
    parts = [values[:k], values[k : 2 * k], values[2 * k :]]
    return [round(sum(part) / len(part), 3) for part in parts if part]


def smooth(values: list[float], window: int = 5) -> list[float]:
    return [
        sum(values[max(0, i - window + 1) : i + 1]) / len(values[max(0, i - window + 1) : i + 1])
        for i in range(len(values))
    ]


def _axes(title: str):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 3.8), dpi=110)
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("reward (0/1)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"TRL GRPO on CPU through the gaia-env gateway ({title})", fontsize=10)
    ax.grid(alpha=0.3)
    return fig, ax


def plot_tool_only(result: dict[str, Any], path: Path) -> None:
    fig, ax = _axes("tiny model, tool-only questions")
    train, ablation = result["per_step"], result["ablation_per_step"]
    steps = [r["step"] for r in train]
    means = [r["reward_mean"] for r in train]
    ax.plot(steps, means, "o", color="C0", alpha=0.3, markersize=3)
    ax.plot(
        steps, smooth(means), "-", color="C0", linewidth=2.2, label="training questions (mean of 5 steps)"
    )
    ax.plot(
        [r["step"] for r in ablation],
        smooth([r["reward_mean"] for r in ablation]),
        "-",
        color="C3",
        linewidth=2,
        label="ablation: code blanked (mean of 5 steps)",
    )
    held = result["heldout_per_eval"]
    ax.plot(
        [r["step"] for r in held],
        [r["reward_mean"] for r in held],
        "s--",
        color="C2",
        label="held-out question",
    )
    ax.axhline(
        result["chance"], color="grey", linestyle="--", linewidth=1, label=f"chance ({result['chance']:.2f})"
    )
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


def plot_team(rows: list[dict[str, float]], baseline: float, path: Path) -> None:
    fig, ax = _axes("tiny model, the demo team")
    steps = [r["step"] for r in rows]
    means = [r["reward_mean"] for r in rows]
    ax.plot(steps, means, "o-", alpha=0.45, label="reward/mean per step")
    ax.plot(steps, smooth(means), "-", linewidth=2.2, label="mean of the last 5 steps")
    ax.axhline(
        baseline, color="grey", linestyle="--", linewidth=1, label=f"chance after warm-start ({baseline:.2f})"
    )
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)


def grpo_run(
    name: str,
    model: torch.nn.Module,
    tokenizer: Any,
    rows: list[dict[str, Any]],
    rollout: GaiaRollout,
    args: argparse.Namespace,
    out: Path,
    *callbacks: TrainerCallback,
) -> PrintRewards:
    config = grpo_config(
        str(out),
        steps=args.steps,
        prompts_per_step=len(rows),
        num_generations=args.generations,
        learning_rate=args.learning_rate,
        temperature=1.0,
        seed=args.seed,
        optim=args.optim,
        lr_scheduler_type="constant",
    )
    trainer = grpo_trainer(model, tokenizer, grpo_dataset(rows), rollout, config)
    printer = PrintRewards(name)
    for callback in (printer, *callbacks):
        trainer.add_callback(callback)
    trainer.train()
    return printer


def served_share(rollout: GaiaRollout) -> float:
    served = [
        e for e in rollout.episodes if e.result.metrics.total_tool_calls and not e.result.metrics.tool_errors
    ]
    return round(len(served) / len(rollout.episodes), 3)


def tool_only_run(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Warm start, then GRPO with the held-out question played along, then the ablation from the same weights."""
    (work / "data").mkdir()
    gateway = start_gateway(work, work / "data", "--servers", tool_only.GATEWAY_SERVERS)
    try:
        t0 = time.perf_counter()
        mcp = tool_only.demo_mcp(gateway.url)
        tokenizer = tool_only.tokenizer(anyio.run(tool_only.corpus, mcp))
        model = build_model(tokenizer, TinyModelConfig(seed=args.seed))
        scripted = anyio.run(tool_only.scripted_episodes, tokenizer, mcp, args.warm_episodes)
        losses = warm_start.warm_start(model, scripted, steps=args.warm_steps)
        warm_weights = copy.deepcopy(model.state_dict())
        print(
            f"tiny model: {sum(p.numel() for p in model.parameters()):,} parameters, vocabulary {len(tokenizer)}; "
            f"warm-start on {len(scripted)} scripted episodes: loss {losses[0]:.2f} -> {losses[-1]:.3f} in "
            f"{time.perf_counter() - t0:.0f} s",
            flush=True,
        )

        def rollout(labels: tuple[str, ...], blank: bool, seed: int) -> GaiaRollout:
            plays = row_plays(tool_only.rows(labels), attachments=tool_only.attachments(labels, blank))
            # A right episode samples about 20 tokens; the cap bounds what a derailed one costs a step.
            return GaiaRollout(tokenizer, mcp, tool_only.LIMITS, response_length=256, seed=seed, plays=plays)

        # What the warm start taught, before any GRPO step: the teacher's question is read, the others guessed.
        teacher = HeldOut(rollout((tool_only.TEACHER_LABEL,), False, args.seed + 2000), args.eval_episodes, 1)
        teacher.prompts = [
            r["prompt"] for r in tool_only.rows((tool_only.TEACHER_LABEL,))
        ] * args.eval_episodes
        teacher.evaluate(0, model)

        rows = tool_only.rows(tool_only.TRAIN_LABELS)
        trained = rollout(tool_only.TRAIN_LABELS, False, args.seed)
        heldout = HeldOut(
            rollout(tool_only.HELDOUT_LABELS, False, args.seed + 1000), args.eval_episodes, args.eval_every
        )
        train = grpo_run("train", model, tokenizer, rows, trained, args, work / "train", heldout)

        ablation_model = build_model(tokenizer, TinyModelConfig(seed=args.seed))
        ablation_model.load_state_dict(warm_weights)
        blanked = rollout(tool_only.TRAIN_LABELS, True, args.seed)
        ablation = grpo_run("ablation", ablation_model, tokenizer, rows, blanked, args, work / "ablation")
    finally:
        gateway.stop()

    truths = [e.ground_truth for e in trained.episodes]
    train_means = [r["reward_mean"] for r in train.rows]
    ablation_means = [r["reward_mean"] for r in ablation.rows]
    held = heldout.rows
    return {
        "task_set": "tool_only",
        "codes": list(tool_only.CODES),
        "chance": tool_only.CHANCE,
        "teacher_question": tool_only.TEACHER_LABEL,
        "training_questions": list(tool_only.TRAIN_LABELS),
        "heldout_questions": list(tool_only.HELDOUT_LABELS),
        "steps": len(train.rows),
        "episodes_per_step": len(rows) * args.generations,
        "episodes": len(trained.episodes) + len(blanked.episodes),
        "distinct_mcp_sessions": len({e.result.session_id for e in trained.episodes + blanked.episodes}),
        # Each episode's pass holds its own code: how often the code changed from one episode to the next.
        "code_changed_between_consecutive_episodes": round(
            sum(a != b for a, b in zip(truths, truths[1:], strict=False)) / max(1, len(truths) - 1), 3
        ),
        "parameters": sum(p.numel() for p in model.parameters()),
        "warm_start_episodes": len(scripted),
        "warm_start_steps": args.warm_steps,
        "warm_start_loss": [round(losses[0], 3), round(losses[-1], 4)],
        "learning_rate": args.learning_rate,
        "optimizer": args.optim,
        "teacher_question_reward_after_warm_start": teacher.rows[0]["reward_mean"],
        "train_reward_by_third": thirds(train_means),
        "train_reward_first_10_last_10_steps": [
            round(sum(train_means[:10]) / len(train_means[:10]), 3),
            round(sum(train_means[-10:]) / len(train_means[-10:]), 3),
        ],
        "ablation_reward_by_third": thirds(ablation_means),
        "heldout_reward_before_after": [held[0]["reward_mean"], held[-1]["reward_mean"]],
        "heldout_reward_by_third": thirds([r["reward_mean"] for r in held[1:]]),
        "tool_served_share": {"train": served_share(trained), "ablation": served_share(blanked)},
        "seconds_per_step": round(train.rows[-1]["seconds"] / len(train.rows), 2),
        "cpus": os.cpu_count(),
        "per_step": train.rows,
        "ablation_per_step": ablation.rows,
        "heldout_per_eval": held,
    }


def team_run(work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The demo team on csv-revenue: the researcher writes a note and delegates, the coder computes in
    the terminal sandbox; the warm-start answers either of two numbers, so chance is one in two."""
    # The terminal sandbox runs commands as an unprivileged uid, which must read the dataset.
    work.chmod(0o755)
    write_demo_snapshot(work / "demo", skip_audio=True)
    gateway = start_gateway(work, work / "demo", "--servers", warm_start.TEAM_SERVERS)
    try:
        t0 = time.perf_counter()
        demo_team = load_team(warm_start.TEAM)
        [task] = warm_start.demo_rows(work / "demo", (warm_start.TEAM_TASK,), warm_start.TEAM)
        mcp = McpSettings(url=gateway.url, max_output_chars=warm_start.MAX_TOOL_OUTPUT)
        tokenizer = build_tokenizer(anyio.run(warm_start.team_corpus, task, demo_team, mcp) * 4)
        model = build_model(tokenizer, TinyModelConfig(seed=args.seed))
        scripted = anyio.run(warm_start.scripted_team_episodes, task, tokenizer, demo_team, mcp, 4096, 3)
        losses = warm_start.warm_start(model, scripted, steps=args.warm_steps)
        print(
            f"tiny model: {sum(p.numel() for p in model.parameters()):,} parameters, vocabulary {len(tokenizer)}; "
            f"warm-start on {len(scripted)} scripted episodes: loss {losses[0]:.2f} -> {losses[-1]:.3f} in "
            f"{time.perf_counter() - t0:.0f} s",
            flush=True,
        )
        rollout = GaiaRollout(
            tokenizer,
            mcp,
            warm_start.TEAM_LIMITS,
            response_length=2048,
            seed=args.seed,
            plays=row_plays([task.row]),
        )
        printer = grpo_run("team", model, tokenizer, [task.row], rollout, args, work / "out")
    finally:
        gateway.stop()

    per_step = args.generations
    steps = [rollout.episodes[i : i + per_step] for i in range(0, len(rollout.episodes), per_step)]

    def share_by_third(happened) -> list[float]:
        """The share of each step's episodes in which `happened`, averaged by third of the run."""
        return thirds([sum(map(happened, step)) / len(step) for step in steps])

    return {
        "steps": len(printer.rows),
        "episodes": len(rollout.episodes),
        "distinct_mcp_sessions": len({e.result.session_id for e in rollout.episodes}),
        "episodes_per_step": per_step,
        "agent": warm_start.TEAM,
        "tasks": [warm_start.TEAM_TASK],
        "servers": warm_start.TEAM_SERVERS,
        "parameters": sum(p.numel() for p in model.parameters()),
        "warm_start_steps": args.warm_steps,
        "warm_start_loss": [round(losses[0], 3), round(losses[-1], 4)],
        "learning_rate": args.learning_rate,
        "optimizer": args.optim,
        "chance": 1 / len(warm_start.TEAM_ANSWERS),
        "reward_mean_by_third": thirds([r["reward_mean"] for r in printer.rows]),
        # Whether the policy still does the work: calls a tool that answers, and delegates.
        "tool_call_share_by_third": share_by_third(
            lambda e: bool(e.result.metrics.total_tool_calls and not e.result.metrics.tool_errors)
        ),
        "delegated_share_by_third": share_by_third(lambda e: bool(e.team.delegations)),
        "seconds_per_step": round(printer.rows[-1]["seconds"] / len(printer.rows), 2),
        "cpus": os.cpu_count(),
        "per_step": printer.rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=None, help="GRPO steps of each run (default 60)")
    parser.add_argument("--generations", type=int, default=8, help="episodes per prompt (GRPO group size)")
    parser.add_argument("--learning-rate", type=float, default=None, help="default 1e-3; 5e-4 with --team")
    parser.add_argument(
        "--optim", default="adamw_torch", help="a transformers optimizer name (sgd, adamw_torch, ...)"
    )
    parser.add_argument(
        "--warm-steps", type=int, default=None, help="supervised warm-start steps (default 150)"
    )
    parser.add_argument(
        "--warm-episodes", type=int, default=16, help="scripted warm-start episodes per question (tool-only)"
    )
    parser.add_argument("--eval-every", type=int, default=5, help="play the held-out question every N steps")
    parser.add_argument("--eval-episodes", type=int, default=16, help="held-out episodes per evaluation")
    parser.add_argument(
        "--team", action="store_true", help="train the demo team (researcher and coder) instead"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch intra-op threads (1 suits a shared 2-core box)"
    )
    parser.add_argument("--plot", type=Path, help="write the reward curves here (PNG)")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    args = parser.parse_args()
    args.warm_steps = args.warm_steps or 150
    args.steps = args.steps or 60
    args.learning_rate = args.learning_rate or (5e-4 if args.team else 1e-3)
    # The MCP SDK and the trainer log every request at INFO; only the curves belong on the screen.
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory(prefix="gaia-grpo-cpu-") as tmp:
        result = (team_run if args.team else tool_only_run)(Path(tmp), args)
    summary = {k: v for k, v in result.items() if not k.endswith(("per_step", "per_eval"))}
    width = max(map(len, summary))
    print("\n".join(f"{k.ljust(width)}  {v}" for k, v in summary.items()))
    if args.plot:
        if args.team:
            plot_team(result["per_step"], result["chance"], args.plot)
        else:
            plot_tool_only(result, args.plot)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
