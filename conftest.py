"""Fixtures shared by every package's tests: gaia_kit_testing.fixtures (anyio_backend, kit_env)."""

pytest_plugins = ["gaia_kit_testing.fixtures"]
