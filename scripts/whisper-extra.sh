#!/usr/bin/env bash
# Installs openai-whisper, media-audio-server's optional PyTorch transcription backend
# (AUDIO_TRANSCRIPTION_BACKEND=openai-whisper), into the workspace venv next to the CPU torch that
# scripts/trainer-extra.sh put there. pip, not uv, for the same reason as torch: uv would fetch a
# CUDA build. --no-deps keeps pip from adding triton (GPU kernels only); the rest it needs is listed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
WHISPER_VERSION=${WHISPER_VERSION:-20250625}
"$PY" -c "import torch" 2>/dev/null || { echo "No torch in .venv: run scripts/trainer-extra.sh first." >&2; exit 1; }
if "$PY" -c "import whisper, numba, tiktoken" 2>/dev/null; then exit 0; fi
echo "Installing openai-whisper==$WHISPER_VERSION into .venv (pip)"
"$PY" -m pip install --quiet numba tiktoken more-itertools tqdm
"$PY" -m pip install --quiet --no-deps "openai-whisper==$WHISPER_VERSION"
"$PY" -c "import whisper" || { echo "openai-whisper installed but does not import; see above." >&2; exit 1; }
