#!/usr/bin/env bash
# uv comes from PyPI, so any machine that reaches PyPI can bootstrap it.
set -euo pipefail
echo "Installing uv from PyPI"
python3 -m pip install --quiet uv
python3 -m uv --version >/dev/null || { echo "uv did not install; run: python3 -m pip install uv" >&2; exit 1; }
