"""gaia_kit.web.hosts: concurrency slots per host, shared by a pattern's subdomains, and start intervals."""

from __future__ import annotations

import time

import anyio
import pytest
from gaia_kit import ToolFailure
from gaia_kit.web.config import HttpSettings
from gaia_kit.web.hosts import HostSlots

pytestmark = pytest.mark.anyio


def slots(**overrides) -> HostSlots:
    return HostSlots(HttpSettings(**{"host_limits": "", "host_intervals": "", **overrides}))


def test_subdomains_of_a_pattern_share_its_key_and_other_hosts_keep_their_own():
    hosts = slots(host_limits="*.wikipedia.org=1")
    assert hosts.key("EN.Wikipedia.org.") == hosts.key("de.wikipedia.org") == "*.wikipedia.org"
    assert hosts.key("Example.org") == "example.org"


def test_malformed_settings_name_their_variable():
    with pytest.raises(ToolFailure, match="GAIA_HTTP_HOST_INTERVALS"):
        slots(host_intervals="export.arxiv.org=soon")


async def peak(hosts: HostSlots, names: list[str]) -> int:
    active = highest = 0

    async def use(host: str) -> None:
        nonlocal active, highest
        async with hosts.hold(host):
            active += 1
            highest = max(highest, active)
            await anyio.sleep(0.01)
            active -= 1

    async with anyio.create_task_group() as group:
        for name in names:
            group.start_soon(use, name)
    return highest


async def test_a_listed_pattern_limits_its_hosts_together():
    hosts = slots(host_limits="*.wikipedia.org=1")
    assert await peak(hosts, ["en.wikipedia.org", "de.wikipedia.org", "fr.wikipedia.org"]) == 1


async def test_unlisted_hosts_get_the_per_host_limit():
    assert await peak(slots(per_host_limit=2), ["example.org"] * 5) == 2


async def test_an_interval_spaces_the_starts_of_requests_to_a_host():
    hosts, starts = slots(host_intervals="export.arxiv.org=0.2"), []
    for _ in range(2):
        async with hosts.hold("export.arxiv.org"):
            starts.append(time.monotonic())
    assert starts[1] - starts[0] >= 0.19
