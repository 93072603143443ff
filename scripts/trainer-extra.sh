#!/usr/bin/env bash
# Installs the trainer's heavy extra into the workspace venv with pip: torch (CPU), and verl with
# everything its default trainer path imports (`verl[verl-core]`: TransferQueue for the v1 task
# runner, ray, the reward and agent loops), at the transformers version verl's own vllm extra tests.
# That is the import set of `pip install -e './trainer[verl]'` on a GPU node less the GPU engine
# (vllm) and its CUDA torch. uv is kept out of it on purpose: uv does not see a local CPU torch
# wheel and would fetch a multi-GB CUDA build. pip finds the pinned torch wherever its own
# configuration points (a local wheel directory here, PyPI elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
VERL_VERSION=${VERL_VERSION:-0.9.1}
# verl 0.9.1's vllm extra pins transformers==5.9.0 (its tested set with vllm 0.24 and torch 2.11).
TRANSFORMERS_VERSION=${TRANSFORMERS_VERSION:-5.9.0}
[ -x "$PY" ] || { echo "No workspace venv at .venv: run 'uv sync --inexact' first." >&2; exit 1; }

# Quick path: nothing to do when the pinned versions already import together.
# The imports are those of main_ppo's default (v1) path up to GPU placement.
imports_ok() {
  "$PY" - "$TORCH_VERSION" "$VERL_VERSION" "$TRANSFORMERS_VERSION" <<'PYEOF'
import sys
from importlib.metadata import version
torch_want, verl_want, transformers_want = sys.argv[1:4]
assert version("torch").split("+")[0] == torch_want
assert version("verl") == verl_want
assert version("transformers") == transformers_want
import transfer_queue  # noqa: F401
import verl.trainer.main_ppo  # noqa: F401
import verl.trainer.ppo.v1  # noqa: F401
from verl.experimental.agent_loop.agent_loop import AgentLoopBase  # noqa: F401
from verl.experimental.reward_loop.reward_manager.naive import NaiveRewardManager  # noqa: F401
PYEOF
}
if imports_ok >/dev/null 2>&1; then exit 0; fi

"$PY" -m pip --version >/dev/null 2>&1 || "$PY" -m ensurepip --upgrade >/dev/null
echo "Installing torch==$TORCH_VERSION, verl[verl-core]==$VERL_VERSION and transformers==$TRANSFORMERS_VERSION into .venv (pip)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
pip_install() {
  "$PY" -m pip install --quiet "$@" >"$log" 2>&1 || { cat "$log" >&2; echo "pip install $* failed" >&2; exit 1; }
}
# torch first and alone, so verl's own torch requirement is already met and pip never
# swaps it for another build.
pip_install "torch==$TORCH_VERSION"
pip_install "torch==$TORCH_VERSION" "verl[verl-core]==$VERL_VERSION" "transformers==$TRANSFORMERS_VERSION"
imports_ok || { echo "verl installed but its trainer path does not import; see the error above." >&2; exit 1; }
echo "verl $VERL_VERSION ready"
