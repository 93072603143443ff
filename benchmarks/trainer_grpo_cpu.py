"""GRPO on this CPU through the real gateway: TRL's GRPOTrainer, the episode loop, a tiny model.

A real `gaia-env serve` (documents-csv-server and documents-docx-server) serves the demo data;
three GAIA-format demo tasks; a tiny Qwen2 model and tokenizer built on the spot (no download),
warm-started on scripted episodes through the same gateway so that it calls the right tool and
then answers one of the set's answers at random; then GRPO steps in which every completion is
one gateway-driven episode in its own MCP session. Prints the reward per step and writes the
curve (PNG) and the numbers (JSON). `--team` trains the demo team instead (gaia_train/config/
teams/demo_team.toml: the researcher delegates to the coder, who computes in the terminal sandbox).

    uv run --no-sync python benchmarks/trainer_grpo_cpu.py    # 60 steps, groups of 8, AdamW 5e-4
    uv run --no-sync python benchmarks/trainer_grpo_cpu.py --plot docs/trainer_grpo_cpu.png \
        --json docs/trainer_grpo_cpu.json
    uv run --no-sync python benchmarks/trainer_grpo_cpu.py --team   # the demo team: researcher + coder

Needs the trainer's extras: scripts/trainer-extra.sh and scripts/trl-extra.sh (make test runs both).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import torch
from gaia_train.demo import warm_start
from gaia_train.demo.snapshot import write_demo_snapshot
from gaia_train.demo.tiny_model import TinyModelConfig, build_model, build_tokenizer
from gaia_train.episode.session import McpSettings
from gaia_train.teams.team import load_team
from gaia_train.trl_adapter.rollout import GaiaRollout, grpo_config, grpo_dataset, grpo_trainer, row_plays
from loadgen import start_gateway
from transformers import TrainerCallback


class PrintRewards(TrainerCallback):
    def __init__(self) -> None:
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
            f"step {row['step']:3d}  reward/mean {row['reward_mean']:.3f}  std {row['reward_std']:.3f}  "
            f"{row['seconds']:7.1f} s",
            flush=True,
        )


def thirds(values: list[float]) -> list[float]:
    """The mean of each third of the run (the last takes what does not divide evenly)."""
    k = max(1, len(values) // 3)
    parts = [values[:k], values[k : 2 * k], values[2 * k :]]
    return [round(sum(part) / len(part), 3) for part in parts if part]


def plot(rows: list[dict[str, float]], baseline: float, title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["step"] for r in rows]
    means = [r["reward_mean"] for r in rows]
    window = 5
    smooth = [
        sum(means[max(0, i - window + 1) : i + 1]) / len(means[max(0, i - window + 1) : i + 1])
        for i in range(len(means))
    ]
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=110)
    ax.plot(steps, means, "o-", alpha=0.45, label="reward/mean per step")
    ax.plot(steps, smooth, "-", linewidth=2.2, label=f"mean of the last {window} steps")
    ax.axhline(
        baseline, color="grey", linestyle="--", linewidth=1, label=f"chance after warm-start ({baseline:.2f})"
    )
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("GAIA reward (0/1)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(f"TRL GRPO on CPU through the gaia-env gateway ({title})")
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)


@dataclass
class Setup:
    """What a run trains: its rows, the warm-started model and tokenizer, the rollout."""

    rows: list[warm_start.DemoTaskRow]
    tokenizer: Any
    model: torch.nn.Module
    losses: list[float]
    scripted: int
    rollout: GaiaRollout
    chance: float
    """The reward of a warm-started model that picks among its memorized answers at random."""


def single_agent(work: Path, url: str, args: argparse.Namespace) -> Setup:
    """Three demo tasks (csv, csv, docx), one agent; chance is one answer in three."""
    mcp = warm_start.demo_mcp(url)
    rows = warm_start.demo_rows(work / "demo")
    tokenizer = build_tokenizer(anyio.run(warm_start.corpus, rows, mcp) * 4)
    model = build_model(tokenizer, TinyModelConfig(seed=args.seed))
    scripted = anyio.run(warm_start.scripted_episodes, rows, tokenizer, mcp)
    losses = warm_start.warm_start(model, scripted, steps=args.warm_steps)
    plays = row_plays([r.row for r in rows])
    rollout = GaiaRollout(
        tokenizer, mcp, warm_start.LIMITS, response_length=1024, seed=args.seed, plays=plays
    )
    return Setup(rows, tokenizer, model, losses, len(scripted), rollout, 1 / len(rows))


def team(work: Path, url: str, args: argparse.Namespace) -> Setup:
    """The demo team on csv-revenue: the researcher writes a note and delegates, the coder computes in
    the terminal sandbox; the warm-start answers either of two numbers, so chance is one in two."""
    demo_team = load_team(warm_start.TEAM)
    [task] = warm_start.demo_rows(work / "demo", (warm_start.TEAM_TASK,), warm_start.TEAM)
    mcp = McpSettings(url=url, max_output_chars=warm_start.MAX_TOOL_OUTPUT)
    tokenizer = build_tokenizer(anyio.run(warm_start.team_corpus, task, demo_team, mcp) * 4)
    model = build_model(tokenizer, TinyModelConfig(seed=args.seed))
    scripted = anyio.run(warm_start.scripted_team_episodes, task, tokenizer, demo_team, mcp, 4096, 3)
    losses = warm_start.warm_start(model, scripted, steps=args.warm_steps)
    rollout = GaiaRollout(
        tokenizer,
        mcp,
        warm_start.TEAM_LIMITS,
        response_length=2048,
        seed=args.seed,
        plays=row_plays([task.row]),
    )
    return Setup([task], tokenizer, model, losses, len(scripted), rollout, 1 / len(warm_start.TEAM_ANSWERS))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60, help="GRPO steps")
    parser.add_argument("--generations", type=int, default=8, help="episodes per prompt (GRPO group size)")
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument(
        "--optim", default="adamw_torch", help="a transformers optimizer name (sgd, adamw_torch, ...)"
    )
    parser.add_argument(
        "--warm-steps",
        type=int,
        default=None,
        help="supervised warm-start steps (default 80; 150 with --team)",
    )
    parser.add_argument(
        "--team", action="store_true", help="train the demo team (researcher and coder) instead of one agent"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch intra-op threads (1 suits a shared 2-core box)"
    )
    parser.add_argument("--plot", type=Path, help="write the reward curve here (PNG)")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    args = parser.parse_args()
    if args.warm_steps is None:
        args.warm_steps = 150 if args.team else 80
    # The MCP SDK and the trainer log every request at INFO; only the curve belongs on the screen.
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    servers = warm_start.TEAM_SERVERS if args.team else warm_start.SERVERS

    with tempfile.TemporaryDirectory(prefix="gaia-grpo-cpu-") as tmp:
        work = Path(tmp)
        # The terminal sandbox runs commands as an unprivileged uid, which must read the dataset.
        work.chmod(0o755)
        write_demo_snapshot(work / "demo", skip_audio=True)
        gateway = start_gateway(work, work / "demo", "--servers", servers)
        try:
            t0 = time.perf_counter()
            setup = (team if args.team else single_agent)(work, gateway.url, args)
            model, rows, rollout, losses = setup.model, setup.rows, setup.rollout, setup.losses
            print(
                f"tiny model: {sum(p.numel() for p in model.parameters()):,} parameters, vocabulary "
                f"{len(setup.tokenizer)}; warm-start on {setup.scripted} scripted episodes: loss "
                f"{losses[0]:.2f} -> {losses[-1]:.3f} in {time.perf_counter() - t0:.0f} s",
                flush=True,
            )
            config = grpo_config(
                str(work / "out"),
                steps=args.steps,
                prompts_per_step=len(rows),
                num_generations=args.generations,
                learning_rate=args.learning_rate,
                temperature=1.0,
                seed=args.seed,
                optim=args.optim,
                lr_scheduler_type="constant",
            )
            trainer = grpo_trainer(
                model, setup.tokenizer, grpo_dataset([r.row for r in rows]), rollout, config
            )
            printer = PrintRewards()
            trainer.add_callback(printer)
            trainer.train()
        finally:
            gateway.stop()

    sessions = {e.result.session_id for e in rollout.episodes}
    first, last = printer.rows[:5], printer.rows[-5:]
    per_step = len(rows) * args.generations
    steps = [rollout.episodes[i : i + per_step] for i in range(0, len(rollout.episodes), per_step)]

    def share_by_third(happened) -> list[float]:
        """The share of each step's episodes in which `happened`, averaged by third of the run."""
        return thirds([sum(map(happened, step)) / len(step) for step in steps])

    result = {
        "steps": len(printer.rows),
        "episodes": len(rollout.episodes),
        "distinct_mcp_sessions": len(sessions),
        "episodes_per_step": per_step,
        "agent": warm_start.TEAM if args.team else "gaia_agent",
        "tasks": [warm_start.TEAM_TASK] if args.team else list(warm_start.TASK_KEYS),
        "servers": servers,
        "parameters": sum(p.numel() for p in model.parameters()),
        "warm_start_steps": args.warm_steps,
        "warm_start_loss": [round(losses[0], 3), round(losses[-1], 4)],
        "learning_rate": args.learning_rate,
        "optimizer": args.optim,
        "reward_mean_first_5_steps": round(sum(r["reward_mean"] for r in first) / len(first), 3),
        "reward_mean_last_5_steps": round(sum(r["reward_mean"] for r in last) / len(last), 3),
        "reward_mean_by_third": thirds([r["reward_mean"] for r in printer.rows]),
        # Whether the policy still does the work: calls a tool that answers (and, a team, delegates).
        "tool_call_share_by_third": share_by_third(
            lambda e: bool(e.result.metrics.total_tool_calls and not e.result.metrics.tool_errors)
        ),
        **(
            {"delegated_share_by_third": share_by_third(lambda e: bool(e.team.delegations))}
            if args.team
            else {}
        ),
        "seconds_per_step": round(printer.rows[-1]["seconds"] / len(printer.rows), 2),
        "cpus": os.cpu_count(),
        "per_step": printer.rows,
    }
    summary = {k: v for k, v in result.items() if k != "per_step"}
    width = max(map(len, summary))
    print("\n".join(f"{k.ljust(width)}  {v}" for k, v in summary.items()))
    if args.plot:
        title = "tiny model, the demo team" if args.team else "tiny model, 3 demo tasks"
        plot(printer.rows, setup.chance, title, args.plot)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
