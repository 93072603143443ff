"""verl's own trainer on this CPU: GRPO steps of `verl.trainer.main_ppo` through the real gateway.

The run of tests/test_verl_main_ppo.py, measured: a real `gaia-env serve` (csv and docx servers) with
the demo data; a tiny model built on the spot and warm-started on scripted episodes through it; then
`trainer/scripts/run.sh` with DEVICE=cpu: verl 0.9.1's default (v1) trainer with its FSDP actor on
gloo, the agent loop `gaia_agent`, the transformers rollout engine and the reward `gaia_train.reward`.
Prints, per step, the reward verl logged, the step time and where it went, the episodes' turns and
how many of them read a tool's response (verl's rollout dump); the gateway's tool calls served during
main_ppo (after the warm start's); and validation's gaia metrics per data_source. `--json` writes the
numbers and every metric verl logged.

    uv run --no-sync python -m benchmarks.verl_cpu              # 3 steps
    uv run --no-sync python -m benchmarks.verl_cpu --steps 6 --json /tmp/verl_cpu.json

Needs the trainer's extras: scripts/trainer-extra.sh and scripts/trl-extra.sh (make test runs both).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx
from gaia_train.demo import verl_cpu, warm_start
from gaia_train.demo.snapshot import write_demo_snapshot

from benchmarks.loadgen import start_gateway

RUN_SH = Path(__file__).resolve().parents[1] / "trainer" / "scripts" / "run.sh"
PHASES = ("gen", "reward", "old_log_prob", "adv", "update_actor", "update_weights")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the numbers and verl's metrics here")
    parser.add_argument("--keep", type=Path, help="keep the run's folder (model, data, verl's log) here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    with tempfile.TemporaryDirectory(prefix="gaia-verl-cpu-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        work.chmod(0o755)
        write_demo_snapshot(work / "demo", skip_audio=True)
        gateway = start_gateway(work, work / "demo", "--servers", warm_start.SERVERS)
        ray_dir = verl_cpu.ray_tmpdir()
        try:
            t0 = time.perf_counter()
            inputs = verl_cpu.prepare(work, work / "demo", gateway.url, seed=args.seed)
            print(
                f"tiny model and {inputs.tasks} demo tasks ready in {time.perf_counter() - t0:.0f} s "
                f"(warm-start loss {inputs.warm_start_loss[0]:.2f} -> {inputs.warm_start_loss[1]:.3f})",
                flush=True,
            )
            before = verl_cpu.served_tool_calls(httpx.get(gateway.base + "/metrics", timeout=10).text)
            metrics_file = work / "verl-metrics.jsonl"
            python = verl_cpu.python_without(work / "python")
            env = verl_cpu.main_ppo_env(inputs, gateway.url, args.steps, metrics_file, python, ray_dir)
            log_path = work / "main_ppo.log"
            started = time.perf_counter()
            proc = verl_cpu.run_main_ppo(RUN_SH, env, log_path, timeout=3600)
            wall = time.perf_counter() - started
            calls = verl_cpu.served_tool_calls(httpx.get(gateway.base + "/metrics", timeout=10).text) - before
        finally:
            gateway.stop()
            shutil.rmtree(ray_dir, ignore_errors=True)
        if proc.returncode != 0:
            print(log_path.read_text(errors="replace")[-6000:], file=sys.stderr)
            print(f"main_ppo exited with {proc.returncode}; its log is above", file=sys.stderr)
            return 1
        steps = verl_cpu.read_metrics(metrics_file)
        rollouts = verl_cpu.read_dump(verl_cpu.dump_dirs(metrics_file)[0])

    print(f"main_ppo: {len(steps)} GRPO steps in {wall:.0f} s (Ray, workers and model start included)")
    print(f"gateway: {calls:.0f} tool calls served during the run (the warm start's not counted)")
    print(f"turn cap: {inputs.turn_tokens} tokens (the warm start's longest turn: {inputs.longest_turn})")
    header = "step  reward/mean  min  max  step s  " + "  ".join(f"{p} s" for p in PHASES)
    header += "  turns  read a tool  reward>0"
    print(header)
    rows = []
    for step in steps:
        data = step["data"]
        phases = {p: data.get(f"timing_s/{p}", float("nan")) for p in PHASES}
        row = {
            "step": step["step"],
            "reward_mean": data["critic/score/mean"],
            "reward_min": data["critic/score/min"],
            "reward_max": data["critic/score/max"],
            "step_s": data["timing_s/step"],
            **{f"{p}_s": v for p, v in phases.items()},
        }
        episodes = rollouts.get(step["step"], [])
        row["turns_mean"] = data["num_turns/mean"]
        row["episodes"] = len(episodes)
        row["read_a_tool"] = sum("<tool_response>" in e["output"] for e in episodes)
        row["rewarded"] = sum(e["score"] > 0 for e in episodes)
        rows.append(row)
        print(
            f"{row['step']:4d}  {row['reward_mean']:11.3f}  {row['reward_min']:3.1f}  {row['reward_max']:3.1f}  "
            f"{row['step_s']:6.1f}  "
            + "  ".join(f"{phases[p]:{len(p) + 2}.1f}" for p in PHASES)
            + f"  {row['turns_mean']:5.1f}  {row['read_a_tool']:4d} of {row['episodes']:<3d}  {row['rewarded']:8d}"
        )
    validation = {k: v for k, v in steps[-1]["data"].items() if k.startswith(("val-core/", "val-aux/gaia"))}
    for key in sorted(validation):
        print(f"{key}: {validation[key]:.3f}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "wall_s": wall,
                    "tool_calls": calls,
                    "turn_tokens": inputs.turn_tokens,
                    "steps": rows,
                    "validation": validation,
                    "verl_metrics": steps,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
