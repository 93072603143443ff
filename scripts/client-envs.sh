#!/usr/bin/env bash
# The MCP client matrix's environments (tests/test_clients.py): each folder of tests/clients with a
# pyproject.toml is its own locked uv project (the clients' `mcp` pins conflict), synced into its .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-uv}
for project in tests/clients/*/pyproject.toml; do
  dir=$(dirname "$project")
  (cd "$dir" && $UV sync --locked --quiet) || { echo "client-envs: $dir/uv.lock is stale or did not \
install: run 'cd $dir && uv lock' and commit the lock" >&2; exit 1; }
done
