"""gaia-env's benchmarks: each module a script run from the checkout's root as
`uv run python -m benchmarks.<name>`; `benchmarks.loadgen` holds what the gateway benchmarks share
(the raw HTTP client, the gateway they start, process trees' CPU and memory). Tests import the
benchmarks they check as modules (`from benchmarks import tool_cost`)."""
