"""verl's own trainer on a CPU: what `trainer/scripts/run.sh` needs for a run on the demo tasks.

`prepare` writes a run's inputs into a folder: the demo tasks as verl parquet (train and validation),
and a tiny model built on the spot, warm-started on scripted episodes through the gateway (so that it
calls the right tool and answers one of the set's answers; see `warm_start`), saved as a Hugging Face
folder that verl loads like any other model. `run_env` is the environment that sizes run.sh's recipe
for it (DEVICE=cpu, small batches and budgets, console and file loggers); `read_metrics` reads back what
verl logged for each step.
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


@dataclass(frozen=True)
class VerlCpuInputs:
    model: Path
    train: Path
    val: Path
    tasks: int
    warm_start_loss: tuple[float, float]


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
    losses = warm_start.warm_start(model, episodes, steps=WARM_STEPS)
    model.to(torch.float32).save_pretrained(model_dir)
    frame = pd.DataFrame([task.row for task in rows])
    frame.to_parquet(work / "train.parquet")
    frame.to_parquet(work / "val.parquet")
    return VerlCpuInputs(
        model_dir, work / "train.parquet", work / "val.parquet", len(rows), (losses[0], losses[-1])
    )


def run_env(inputs: VerlCpuInputs, gateway_url: str, steps: int, metrics_file: Path) -> dict[str, str]:
    """run.sh's settings for a CPU run of `steps` GRPO steps on `inputs`: one batch is every task."""
    return {
        "DEVICE": "cpu",
        "MODEL_PATH": str(inputs.model),
        "TRAIN_FILES": str(inputs.train),
        "VAL_FILES": str(inputs.val),
        "MCP_SERVER_URL": gateway_url,
        "MCP_SERVERS": warm_start.SERVERS,
        "MAX_MODEL_LEN": "4096",
        "PROMPT_LENGTH": "1024",
        "RESPONSE_LENGTH": "1536",
        "MAX_TURNS": str(warm_start.LIMITS.max_turns),
        "TURN_TOKENS": "48",
        "TOOL_TOKENS_PER_TURN": "512",
        # The tiny model does not think; the smallest continuation the budget takes beside 3 turns of 48.
        "REASONING_TOKENS": "64",
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
        "TEST_FREQ": "-1",
        "VAL_BEFORE_TRAIN": "False",
        "ACTOR_LR": "1e-3",
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
