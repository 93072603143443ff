# Fresh machine: `make serve` or `make test` installs what is missing first.
SHELL := /bin/bash
# uv from PATH, else the copy pip installs (python3 -m uv works wherever pip put it).
UV ?= $(shell command -v uv 2>/dev/null || echo python3 -m uv)
HOST ?= 127.0.0.1
PORT ?= 8080
PYTEST_ARGS ?=
# Bytecode is compiled when packages install: where Python runs with PYTHONDONTWRITEBYTECODE (CI's
# machines do) nothing compiled at import is kept, and each of the gateway's server processes would
# compile its imports again at every start (65 s to /ready on two cores instead of 30).
export UV_COMPILE_BYTECODE := 1

.PHONY: serve test lint bench docs system-deps test-system-deps whisper-extra uv sync node-tools client-envs trainer-extra trl-extra reference-tools clean

serve: sync
	$(UV) run --no-sync gaia-env serve --host $(HOST) --port $(PORT)

test: sync node-tools client-envs trainer-extra trl-extra whisper-extra test-system-deps
	$(UV) run --no-sync python -m pytest $(PYTEST_ARGS)

lint: sync
	$(UV) run --no-sync ruff check .
	$(UV) run --no-sync ruff format --check .

bench: sync
	$(UV) run --no-sync python -m benchmarks.gateway_throughput

docs: sync
	$(UV) run --no-sync gaia-env tools --format markdown --output docs/tools.md

# System packages the servers use; apt-get as root on Debian/Ubuntu, else the exact command.
system-deps:
	@scripts/system-deps.sh

# What only the tests use: a Docker engine and debootstrap for the image's end-to-end test.
test-system-deps:
	@scripts/system-deps.sh scripts/apt-packages.txt scripts/apt-packages-test.txt

uv: system-deps
	@$(UV) --version >/dev/null 2>&1 || scripts/install-uv.sh

# The root workspace, then servers with their own locked environment (browser-server: browser-use
# pins exact versions of many packages), each in its own .venv.
sync: uv
	$(UV) sync --locked --inexact
	$(UV) run --no-sync python -m compileall -q proxy/src trainer/src contract/src servers/*/src
	cd servers/browser-server && $(UV) sync --locked || { echo "make: servers/browser-server/uv.lock \
	is stale (did the kit's dependencies change?): run 'cd servers/browser-server && uv lock'" >&2; exit 1; }

# Node 22, the MCP conformance suite and the MCP Inspector CLI, from the npm registry, for the
# conformance and client tests.
node-tools: system-deps
	@scripts/node-tools.sh

# The MCP clients of tests/test_clients.py, in two locked uv projects (their `mcp` pins conflict).
client-envs: uv
	@UV="$(UV)" scripts/client-envs.sh

# The reference projects benchmarks/side_by_side.py compares with (excel-mcp-server, server-filesystem,
# @playwright/mcp), into .tools/reference; nothing else needs them.
reference-tools: system-deps
	@scripts/reference-tools.sh

# media-audio-server's optional openai-whisper backend, next to the trainer's CPU torch (pip).
whisper-extra: trainer-extra
	@scripts/whisper-extra.sh

# torch (CPU), verl and what its agent loop imports, with pip: uv would fetch a CUDA torch build.
trainer-extra: sync
	@scripts/trainer-extra.sh

# TRL for the CPU GRPO loop (gaia_train.trl_adapter), with pip next to the trainer's CPU torch.
trl-extra: trainer-extra
	@scripts/trl-extra.sh

clean:
	rm -rf .venv .tools
