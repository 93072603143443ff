"""verl on a CPU: the platform plugin that lets verl's own trainer, workers and FSDP engine run with no GPU.

verl 0.9.1 ships platforms for CUDA, ROCm and Ascend NPU only; new hardware is added by registering a
`PlatformBase` subclass in `verl.plugin.platform.PlatformRegistry` and naming it in `VERL_PLATFORM`.
This module registers `cpu` when it is imported, and verl imports it in every process, Ray actors
included, when `VERL_USE_EXTERNAL_MODULES` names it (`cpu_runtime_env` sets both for Ray).

What a CPU lacks, and how verl is met:

- `torch.cpu` has no memory or RNG functions; verl calls `get_torch_device().empty_cache()`,
  `mem_get_info()`, `get_rng_state()` and friends throughout, so the device module is `torch.cpu`
  plus those, answered for host memory.
- verl reserves one Ray "GPU" per training process and checks that the cluster has them
  (`single_controller/ray/base.py`, `_check_resource_available` counts only GPU or NPU): on a CPU
  machine Ray is started with that many logical GPUs (`ray_kwargs.ray_init.num_gpus`), which are
  slots, not devices.
- verl joins each worker's process group with the backend `f"cpu:gloo,{device}:{backend}"`
  (`verl/utils/distributed.py:89`, from `TrainingWorker.__init__`, `verl/workers/engine_workers.py:89`);
  for the device `cpu` that string names `cpu` twice, which torch refuses ("Duplicate device type
  cpu"). `join_process_group`, Ray's `worker_process_setup_hook`, joins the same group over gloo,
  from the same RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT verl gives the worker, before verl
  looks; verl then finds the group initialised and goes on.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import torch
from verl.plugin.platform import PlatformBase, PlatformRegistry

PLATFORM = "cpu"
MODULES_ENV = "VERL_USE_EXTERNAL_MODULES"


def _host_memory() -> tuple[int, int]:
    """(available, total) bytes of host memory: what `mem_get_info` reports for a GPU."""
    page = os.sysconf("SC_PAGE_SIZE")
    return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _zero(*args: Any, **kwargs: Any) -> int:
    return 0


# `torch.cpu` and the calls verl makes on a device module that it lacks; host memory is not cached.
CPU_DEVICE = SimpleNamespace(
    **{name: getattr(torch.cpu, name) for name in dir(torch.cpu) if not name.startswith("_")},
    empty_cache=_nothing,
    ipc_collect=_nothing,
    reset_peak_memory_stats=_nothing,
    set_per_process_memory_fraction=_nothing,
    memory_allocated=_zero,
    memory_reserved=_zero,
    max_memory_allocated=_zero,
    max_memory_reserved=_zero,
    mem_get_info=lambda *args: _host_memory(),
    get_rng_state=lambda *args: torch.get_rng_state(),
    set_rng_state=lambda state, *args: torch.set_rng_state(state),
    manual_seed=torch.manual_seed,
    manual_seed_all=torch.manual_seed,
    get_device_name=lambda *args: "cpu",
)


@PlatformRegistry.register(platform=PLATFORM)
class PlatformCPU(PlatformBase):
    """The host CPU as verl's device: gloo for collectives, Ray's logical GPUs as training slots."""

    @property
    def device_name(self) -> str:
        return "cpu"

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> Any:
        return CPU_DEVICE

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        # Chosen by VERL_PLATFORM=cpu only: auto-detection must still find a GPU where there is one.
        return False

    def current_device(self) -> str:
        return "cpu"

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: int | None = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[int | None, int | None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"

    @contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None


def join_process_group() -> None:
    """Ray's worker_process_setup_hook: in a verl worker (RANK and MASTER_ADDR set by verl's worker
    group), join the default process group over gloo, as verl would for CPU tensors. Other Ray
    processes (the task runner, agent-loop and reward workers) have no RANK and are left alone."""
    env = os.environ
    if not all(env.get(key) for key in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")):
        return
    import torch.distributed as dist

    if dist.is_initialized():
        return
    dist.init_process_group(
        backend="gloo",
        rank=int(env["RANK"]),
        world_size=int(env["WORLD_SIZE"]),
        timeout=timedelta(minutes=30),
    )


def cpu_runtime_env(modules: list[str]) -> dict[str, Any]:
    """What Ray's runtime_env must carry so every verl process runs on this platform with `modules`
    (this one and any other plugin, such as the transformers rollout) imported."""
    return {
        "env_vars": {"VERL_PLATFORM": PLATFORM, MODULES_ENV: ",".join(modules)},
        "worker_process_setup_hook": f"{__name__}.join_process_group",
    }
