"""verl's own trainer on a CPU: what `trainer/scripts/run.sh` needs for a run on the demo tasks.

`prepare` writes a run's inputs into a folder: the demo tasks as verl parquet (train and validation),
and a tiny model built on the spot, warm-started on scripted episodes through the gateway (so that it
calls the right tool and answers one of the set's answers; see `warm_start`), saved as a Hugging Face
folder that verl loads like any other model. `run_env` is the environment that sizes run.sh's recipe
for it (DEVICE=cpu, small batches, a turn cap that holds the model's whole tool call, console and file
loggers, verl's episode dumps); `read_metrics` and `read_dump` read back what verl logged and dumped.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pandas as pd
import torch

from . import warm_start
from .tiny_model import TinyModelConfig, build_model, build_tokenizer

GROUP = 4
"""Episodes per prompt (GRPO's group)."""
WARM_STEPS = 200
WARM_LR = 3e-3
"""The warm start's learning rate. At `warm_start`'s 1e-2 the full-batch loss on verl's tokens spiked
up to tenfold between steps (0.15 to 1.27 within 25 steps), so where step 200 landed was float rounding's
luck: 0.012 on one machine (its calls read files), 0.17 on another, where no taught call came out whole
(every uuid digit is a token of its own) and the policy garbled every path. At 3e-3 it falls steadily
(0.019 at step 200 there, each task's whole call sampled about half the time)."""
TURN_SLACK = 16
"""Tokens a turn may sample beyond the longest scripted turn: a sampled call can run a little longer."""
REASONING_TOKENS = 64
"""The tiny model does not think; the smallest continuation worth allowing a turn that opens `<think>`."""
TOOL_TOKENS = 512
PROMPT_LENGTH = 1024


@dataclass(frozen=True)
class VerlCpuInputs:
    model: Path
    train: Path
    val: Path
    tasks: int
    warm_start_loss: tuple[float, float]
    longest_turn: int
    """Tokens of the longest turn the warm start taught (a whole `<tool_call>` with its file path), as
    verl's tokenizer encodes it: the turn cap must hold it, or every call is cut and never sent."""

    @property
    def turn_tokens(self) -> int:
        return self.longest_turn + TURN_SLACK

    @property
    def response_length(self) -> int:
        """Room for every turn at its cap and the tool responses between them (what `budget` checks)."""
        turns = warm_start.LIMITS.max_turns
        return turns * (self.turn_tokens + REASONING_TOKENS) + (turns - 1) * TOOL_TOKENS


def prepare(work: Path, snapshot: Path, gateway_url: str, seed: int = 0) -> VerlCpuInputs:
    """The demo tasks of `snapshot` as parquet and a warm-started tiny model, under `work`."""
    from transformers import AutoTokenizer

    mcp = warm_start.demo_mcp(gateway_url)
    rows = warm_start.demo_rows(snapshot)
    model_dir = work / "model"
    built = build_tokenizer(anyio.run(warm_start.corpus, rows, mcp) * 4)
    model = build_model(built, TinyModelConfig(seed=seed))
    model.save_pretrained(model_dir)
    built.save_pretrained(model_dir)
    # The tokenizer as verl loads it, from the folder with the model's config: transformers 5 loads the
    # tokenizer of any qwen2 model as Qwen2Tokenizer, which splits words with Qwen's pattern before the
    # BPE, so its ids differ from the built tokenizer's. The warm start must see the ids verl will.
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if len(tokenizer) != len(built):
        raise RuntimeError(f"the saved tokenizer has {len(tokenizer)} tokens, the built one {len(built)}")
    episodes = anyio.run(warm_start.scripted_episodes, rows, tokenizer, mcp)
    # Qwen's word split makes the sequences longer than the built tokenizer's: more steps to fit them.
    # One thread: on a shared machine torch's threads (one per core) spin-wait on each other; measured
    # here at load 20 on 2 cores, a step of this warm start took 11.4 s on 2 threads and 1.3 s on one.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        losses = warm_start.warm_start(model, episodes, steps=WARM_STEPS, learning_rate=WARM_LR)
    finally:
        torch.set_num_threads(threads)
    model.to(torch.float32).save_pretrained(model_dir)
    frame = pd.DataFrame([task.row for task in rows])
    frame.to_parquet(work / "train.parquet")
    frame.to_parquet(work / "val.parquet")
    return VerlCpuInputs(
        model_dir,
        work / "train.parquet",
        work / "val.parquet",
        len(rows),
        (losses[0], losses[-1]),
        max(longest_sampled_run(e.tape.response_mask) for e in episodes),
    )


def longest_sampled_run(mask: list[int]) -> int:
    """The most consecutive sampled (mask 1) tokens on a tape: its longest turn."""
    longest = run = 0
    for bit in mask:
        run = run + 1 if bit else 0
        longest = max(longest, run)
    return longest


def run_env(inputs: VerlCpuInputs, gateway_url: str, steps: int, metrics_file: Path) -> dict[str, str]:
    """run.sh's settings for a CPU run of `steps` GRPO steps on `inputs`: one batch is every task, one
    validation after the last step; verl dumps every episode beside `metrics_file` (`dump_dirs`)."""
    rollouts, validation = dump_dirs(metrics_file)
    return {
        "DEVICE": "cpu",
        "MODEL_PATH": str(inputs.model),
        "TRAIN_FILES": str(inputs.train),
        "VAL_FILES": str(inputs.val),
        "MCP_SERVER_URL": gateway_url,
        "MCP_SERVERS": warm_start.SERVERS,
        "MAX_MODEL_LEN": str(PROMPT_LENGTH + inputs.response_length),
        "PROMPT_LENGTH": str(PROMPT_LENGTH),
        "RESPONSE_LENGTH": str(inputs.response_length),
        "MAX_TURNS": str(warm_start.LIMITS.max_turns),
        # A turn cut mid-call sends nothing: the loop answers the cut JSON with an error itself.
        "TURN_TOKENS": str(inputs.turn_tokens),
        "TOOL_TOKENS_PER_TURN": str(TOOL_TOKENS),
        "REASONING_TOKENS": str(REASONING_TOKENS),
        # One CPU process: no sequence parallelism, fused kernels or sampled validation to size.
        "SP_SIZE": "1",
        "USE_FUSED_KERNELS": "False",
        "VAL_N": "1",
        "MAX_TOOL_RESPONSE_LENGTH": str(warm_start.MAX_TOOL_OUTPUT),
        "TRAIN_BATCH_SIZE": str(inputs.tasks),
        "PPO_MINI_BATCH_SIZE": str(inputs.tasks),
        "ROLLOUT_N": str(GROUP),
        "AGENT_WORKERS": "1",
        "N_GPUS_PER_NODE": "1",
        "TOTAL_TRAINING_STEPS": str(steps),
        "SAVE_FREQ": "-1",
        # One validation, after the last step: the gaia metrics per data_source (val-aux/...).
        "TEST_FREQ": str(steps),
        "VAL_BEFORE_TRAIN": "False",
        "ROLLOUT_DATA_DIR": str(rollouts),
        "VALIDATION_DATA_DIR": str(validation),
        # At 1e-3 the warm-started call format came apart after two updates (reward 0.33, 0.58, then 0 with
        # garbled and unclosed calls); at 1e-4 the calls held in all three steps (0.25, 0.17, 0.17).
        "ACTOR_LR": "1e-4",
        "LOGGERS": '["console","file"]',
        "VERL_FILE_LOGGER_PATH": str(metrics_file),
        # Every process (Ray's workers, the gateway's servers) shares a few cores: one thread each.
        "OMP_NUM_THREADS": "1",
        # Ray gives its agents 30 s to start; a busy 2-core machine can take longer.
        "RAY_agent_register_timeout_ms": "120000",
        "RAY_USAGE_STATS_ENABLED": "0",
    }


def main_ppo_env(
    inputs: VerlCpuInputs, gateway_url: str, steps: int, metrics_file: Path, python: Path, ray_dir: str
) -> dict[str, str]:
    """The whole environment of a CPU run.sh: this process's, `run_env`'s settings, verl's Python
    (`python_without`) first on PATH, and Ray's short session folder (`ray_tmpdir`)."""
    return {
        **os.environ,
        **run_env(inputs, gateway_url, steps, metrics_file),
        "PYTHON": str(python),
        "PATH": f"{python.parent}:{os.environ['PATH']}",
        "RAY_TMPDIR": ray_dir,
    }


def dump_dirs(metrics_file: Path) -> tuple[Path, Path]:
    """Where verl dumps the training episodes and the validation episodes, one JSONL a step."""
    return metrics_file.parent / "rollouts", metrics_file.parent / "validation"


def read_dump(folder: Path) -> dict[int, list[dict[str, Any]]]:
    """A verl dump folder (`trainer.rollout_data_dir` or `validation_data_dir`): step -> its episodes,
    each with `input` and `output` (decoded), `gts`, `score`, and for validation the reward's extra keys."""
    if not folder.is_dir():
        return {}
    return {
        int(path.stem): [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        for path in sorted(folder.glob("*.jsonl"))
    }


def served_tool_calls(metrics: str) -> float:
    """Tool calls a gateway answered, from its /metrics text (every server and outcome)."""
    return sum(float(v) for v in re.findall(r"^gaia_env_tool_calls_total\{[^}]*\} (\S+)$", metrics, re.M))


def python_without(dest: Path, hidden: tuple[str, ...] = ("trl",)) -> Path:
    """A Python that sees this environment's packages less `hidden`; its interpreter's path.

    verl 0.9.1's FSDP engine imports TRL's value-head model whenever TRL is importable
    (`verl/models/transformers/monkey_patch.py:352`), and TRL 1.16, which the TRL adapter needs, no
    longer has it: the two cannot share an environment. This is a venv whose site-packages links every
    entry of this one but the hidden packages' (a second install would cost minutes and gigabytes).
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    source = Path(sysconfig.get_paths()["purelib"])
    target = Path(subprocess.check_output([dest / "bin" / "python", "-c", SITE_PACKAGES], text=True).strip())
    for entry in source.iterdir():
        package = entry.name.split("-")[0].split(".")[0].lower()
        if package not in hidden and not (target / entry.name).exists():
            (target / entry.name).symlink_to(entry)
    return dest / "bin" / "python"


SITE_PACKAGES = "import sysconfig; print(sysconfig.get_paths()['purelib'])"


RAY_START_TIMEOUT = "The current node timed out during startup"
"""Ray gives a local cluster's first node 30 s to register (a constant in ray/_private/node.py); a
busy 2-core machine can take longer. Nothing of the run has happened yet when it says so."""


def run_main_ppo(
    run_sh: Path, env: dict[str, str], log_path: Path, timeout: float, attempts: int = 3
) -> subprocess.CompletedProcess[bytes]:
    """`bash run.sh` with `env`, its output in `log_path`; started again when Ray's node did not come up."""
    for _ in range(attempts):
        with log_path.open("wb") as log:
            proc = subprocess.run(
                ["bash", str(run_sh)], env=env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout
            )
        if proc.returncode == 0 or RAY_START_TIMEOUT not in log_path.read_text(errors="replace"):
            return proc
    return proc


def ray_tmpdir() -> str:
    """A fresh folder for Ray's session files, short enough for its sockets: a Unix socket path holds
    at most 107 bytes, and Ray adds about 70 (`/ray/session_<date>_<pid>/sockets/plasma_store`)."""
    return tempfile.mkdtemp(prefix="ray-", dir="/tmp")


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """verl's file logger, one JSON object a step: `{"step": n, "data": {metric: value}}`."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
