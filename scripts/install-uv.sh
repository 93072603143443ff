#!/usr/bin/env bash
# uv comes from PyPI, so any machine that reaches PyPI can bootstrap it.
set -euo pipefail
python3 -m pip install --user --quiet uv 2>/dev/null || python3 -m pip install --quiet uv
command -v uv >/dev/null 2>&1 || [ -x "$HOME/.local/bin/uv" ] || { echo "uv did not install; run: python3 -m pip install uv" >&2; exit 1; }
