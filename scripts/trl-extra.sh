#!/usr/bin/env bash
# Installs TRL (the CPU GRPO adapter, gaia_train.trl_adapter) into the workspace venv with pip, next
# to the CPU torch that scripts/trainer-extra.sh put there. torch is named again, pinned, so pip
# keeps that build instead of fetching another one for TRL's requirements.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
TRL_VERSION=${TRL_VERSION:-1.16.0}
[ -x "$PY" ] || { echo "No workspace venv at .venv: run 'uv sync --inexact' first." >&2; exit 1; }

# Quick path: nothing to do when the pinned versions already import together.
if "$PY" - "$TORCH_VERSION" "$TRL_VERSION" <<'PYEOF' 2>/dev/null; then exit 0; fi
import sys
from importlib.metadata import version
torch_want, trl_want = sys.argv[1], sys.argv[2]
assert version("torch").split("+")[0] == torch_want
assert version("trl") == trl_want
from trl import GRPOConfig, GRPOTrainer  # noqa: F401
PYEOF

"$PY" -m pip --version >/dev/null 2>&1 || "$PY" -m ensurepip --upgrade >/dev/null
echo "Installing trl==$TRL_VERSION into .venv (pip, torch==$TORCH_VERSION kept)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$PY" -m pip install --quiet "torch==$TORCH_VERSION" "trl==$TRL_VERSION" >"$log" 2>&1 \
  || { cat "$log" >&2; echo "pip install trl==$TRL_VERSION failed" >&2; exit 1; }
"$PY" -c "from trl import GRPOConfig, GRPOTrainer" \
  || { echo "trl installed but GRPOTrainer does not import; see the error above." >&2; exit 1; }
echo "trl $TRL_VERSION ready"
