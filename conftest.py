"""Fixtures shared by every package's tests: gaia_kit_testing.fixtures (anyio_backend, kit_env)."""

from collections.abc import Iterator

import pytest
from gaia_kit.core.settings import forget_settings

pytest_plugins = ["gaia_kit_testing.fixtures"]


@pytest.fixture(autouse=True)
def settings_read_per_test() -> Iterator[None]:
    """Settings are read once per process; each test reads them from its own environment instead."""
    forget_settings()
    yield
    forget_settings()
