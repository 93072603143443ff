"""Fixtures shared by every package's tests: gaia_kit.testing (anyio_backend, kit_env)."""

pytest_plugins = ["gaia_kit.testing"]
