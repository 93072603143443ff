#!/usr/bin/env bash
# The reference projects for benchmarks/side_by_side.py, into .tools/reference (nothing else uses them):
#   excel-mcp-server (PyPI) in its own venv, and @modelcontextprotocol/server-filesystem and
#   @playwright/mcp (npm). @playwright/mcp drives Debian's chromium (apt-get install chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
EXCEL_MCP_VERSION=${EXCEL_MCP_VERSION:-2.2.2}
mkdir -p .tools/reference
if ! .tools/reference/excel-mcp/bin/excel-mcp-server --version 2>/dev/null | grep -q "$EXCEL_MCP_VERSION"; then
  python3 -m venv .tools/reference/excel-mcp
  .tools/reference/excel-mcp/bin/pip install --quiet "excel-mcp-server==$EXCEL_MCP_VERSION"
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is missing. Install it with:  sudo apt-get install -y nodejs npm" >&2; exit 1
fi
if ! cmp -s .tools/reference/node/.installed scripts/reference-tools.json 2>/dev/null; then
  mkdir -p .tools/reference/node
  cp scripts/reference-tools.json .tools/reference/node/package.json
  (cd .tools/reference/node && npm install --no-audit --no-fund --loglevel=error >/dev/null)
  cp scripts/reference-tools.json .tools/reference/node/.installed
fi
command -v chromium >/dev/null 2>&1 || echo "note: chromium is missing (apt-get install chromium); the browsing rows need it" >&2
echo "reference tools in .tools/reference: run  uv run python -m benchmarks.side_by_side"
