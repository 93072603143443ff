#!/usr/bin/env bash
# Installs the trainer's heavy extra (torch, verl and what verl's agent loop imports) into the
# workspace venv with pip. uv is kept out of it on purpose: uv does not see a local CPU torch
# wheel and would fetch a multi-GB CUDA build. pip finds the pinned torch wherever its own
# configuration points (a local wheel directory here, PyPI elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
VERL_VERSION=${VERL_VERSION:-0.9.1}
[ -x "$PY" ] || { echo "No workspace venv at .venv: run 'uv sync --inexact' first." >&2; exit 1; }

# Quick path: nothing to do when the pinned versions already import together.
if "$PY" - "$TORCH_VERSION" "$VERL_VERSION" <<'PYEOF' 2>/dev/null; then exit 0; fi
import sys
from importlib.metadata import version
torch_want, verl_want = sys.argv[1], sys.argv[2]
assert version("torch").split("+")[0] == torch_want
assert version("verl") == verl_want
import verl  # noqa: F401
from verl.experimental.agent_loop.agent_loop import AgentLoopBase  # noqa: F401
PYEOF

"$PY" -m pip --version >/dev/null 2>&1 || "$PY" -m ensurepip --upgrade >/dev/null
echo "Installing torch==$TORCH_VERSION and verl==$VERL_VERSION into .venv (pip)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
pip_install() {
  "$PY" -m pip install --quiet "$@" >"$log" 2>&1 || { cat "$log" >&2; echo "pip install $* failed" >&2; exit 1; }
}
# torch first and alone, so verl's own torch requirement is already met and pip never
# swaps it for another build.
pip_install "torch==$TORCH_VERSION"
pip_install "torch==$TORCH_VERSION" "verl==$VERL_VERSION" cachetools uvicorn fastapi
"$PY" -c "import verl; from verl.experimental.agent_loop.agent_loop import AgentLoopBase" \
  || { echo "verl installed but its agent loop does not import; see the error above." >&2; exit 1; }
echo "verl $VERL_VERSION ready"
