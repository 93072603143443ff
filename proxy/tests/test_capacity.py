"""The replica plan from the registry and the cores, and the cores a process may use."""

from __future__ import annotations

import pytest
from gaia_env.capacity import ReplicaPlan, available_cores, format_plan, replica_plan
from gaia_env.registry import AUTO, ServerSpec


def spec(**fields: object) -> ServerSpec:
    return ServerSpec(id="x", command=("true",), **fields)


@pytest.mark.parametrize(
    ("fields", "cores", "plan"),
    [
        ({"replicas": 3}, 8, ReplicaPlan(3, 3, 3)),
        ({"replicas": AUTO}, 4, ReplicaPlan(1, 1, 4)),
        ({"replicas": AUTO, "min_replicas": 2}, 1, ReplicaPlan(2, 2, 2)),
        ({"replicas": AUTO, "max_replicas": 3}, 16, ReplicaPlan(1, 1, 3)),
        ({"replicas": 2, "max_replicas": AUTO}, 4, ReplicaPlan(2, 2, 4)),
        ({"replicas": 5, "max_replicas": 2}, 8, ReplicaPlan(2, 2, 2)),
    ],
    ids=["fixed", "auto", "auto-min-above-cores", "auto-capped", "fixed-start-auto-max", "max-below-start"],
)
def test_replica_plan(fields: dict, cores: int, plan: ReplicaPlan) -> None:
    assert replica_plan(spec(**fields), cores) == plan


def test_a_plan_says_whether_it_scales() -> None:
    assert ReplicaPlan(2, 2, 2).fixed and ReplicaPlan(2, 2, 2).describe() == "2 (fixed)"
    assert ReplicaPlan(1, 1, 4).describe() == "1 (scales 1-4 on queue depth)"
    text = format_plan({"excel": ReplicaPlan(1, 1, 4), "wiki-server": ReplicaPlan(2, 2, 2)}, 4)
    assert text.splitlines() == [
        "replica plan on 4 core(s):",
        "  excel        1 (scales 1-4 on queue depth)",
        "  wiki-server  2 (fixed)",
    ]


def test_available_cores_is_at_least_one_and_at_most_the_affinity() -> None:
    import os

    assert 1 <= available_cores() <= len(os.sched_getaffinity(0))
