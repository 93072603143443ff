"""The server registry: servers.toml, one entry per server id, shipped inside this package."""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

DEFAULT_REGISTRY = Path(str(resources.files(__package__) / "servers.toml"))
"""The shipped registry, package data: found wherever gaia_env is installed, not only in a checkout."""
REPO_ROOT = Path(__file__).resolve().parents[3]
"""The checkout the gateway runs from: `{root}` in a command (servers with their own environment)."""


class RegistryError(ValueError):
    pass


AUTO = "auto"


@dataclass(frozen=True)
class ServerSpec:
    id: str
    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    replicas: int | str = AUTO
    """Processes to start with; "auto" starts `min_replicas` and scales on queue depth."""
    min_replicas: int | None = None
    max_replicas: int | str | None = None
    """The most processes scaling may run; "auto" is one per core."""
    timeout: float = 120.0
    enabled: bool = True
    stateful: bool = False
    state: str = "per-session state"
    """What a stateful server keeps per session, named when a restart loses it."""
    max_in_flight: int = 32
    max_queue_s: float = 10.0
    """Seconds of queued work a server accepts beyond its free slots before it answers busy."""
    hung_after_s: float = 30.0
    """A replica that answers nothing, not even a ping, for this long is hung and is restarted."""
    startup_timeout: float = 60.0
    nice: int = 10
    """CPU priority below the gateway's: on a saturated machine the front still answers busy at once
    and pings on time, so a slow server is not mistaken for a hung one."""

    def argv(self) -> list[str]:
        return [
            part.replace("{python}", sys.executable).replace("{root}", str(REPO_ROOT))
            for part in self.command
        ]

    def missing_program(self) -> str | None:
        """A sentence when the command's program is a path that does not exist (an uninstalled env)."""
        program = Path(self.argv()[0])
        if not program.is_absolute() or program.exists():
            return None
        return (
            f"{program} does not exist: run `make sync` in {REPO_ROOT} to create the environment "
            f"{self.id} runs from."
        )


def load_registry(path: Path = DEFAULT_REGISTRY) -> dict[str, ServerSpec]:
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise RegistryError(
            f"Registry {path} not found; pass --config with the path to servers.toml."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"Registry {path} is not valid TOML: {exc}") from None
    defaults = data.get("defaults", {})
    specs: dict[str, ServerSpec] = {}
    for server_id, entry in data.get("servers", {}).items():
        merged = {**defaults, **entry}
        unknown = set(merged) - _FIELDS
        if unknown:
            raise RegistryError(
                f"Registry entry {server_id!r} has unknown keys: {', '.join(sorted(unknown))}."
            )
        if not merged.get("command"):
            raise RegistryError(f"Registry entry {server_id!r} needs a command.")
        specs[server_id] = ServerSpec(
            id=server_id,
            command=tuple(merged.pop("command")),
            env={k: str(v) for k, v in merged.pop("env", {}).items()},
            **merged,
        )
        _check_replicas(specs[server_id])
        _check_nice(specs[server_id])
    return specs


def _check_nice(spec: ServerSpec) -> None:
    if isinstance(spec.nice, bool) or not isinstance(spec.nice, int) or not 0 <= spec.nice <= 19:
        raise RegistryError(f"Registry entry {spec.id!r}: nice must be a number from 0 to 19.")


def _check_replicas(spec: ServerSpec) -> None:
    def valid(value: object, *, auto: bool) -> bool:
        return (auto and value == AUTO) or (
            isinstance(value, int) and not isinstance(value, bool) and value >= 1
        )

    if not valid(spec.replicas, auto=True):
        raise RegistryError(f'Registry entry {spec.id!r}: replicas must be "auto" or a number of at least 1.')
    if spec.min_replicas is not None and not valid(spec.min_replicas, auto=False):
        raise RegistryError(f"Registry entry {spec.id!r}: min_replicas must be a number of at least 1.")
    if spec.max_replicas is not None and not valid(spec.max_replicas, auto=True):
        raise RegistryError(
            f'Registry entry {spec.id!r}: max_replicas must be "auto" or a number of at least 1.'
        )
    if isinstance(spec.max_replicas, int) and spec.max_replicas < (spec.min_replicas or 1):
        raise RegistryError(f"Registry entry {spec.id!r}: max_replicas is below min_replicas.")


def select_enabled(
    specs: dict[str, ServerSpec], only: list[str] | None = None, replicas: int | None = None
) -> dict[str, ServerSpec]:
    """The servers to run: `only` (ids, validated) or every enabled one, optionally re-replicated."""
    if only:
        unknown = [sid for sid in only if sid not in specs]
        if unknown:
            raise RegistryError(
                f"Unknown server id(s): {', '.join(unknown)}. Valid ids: {', '.join(sorted(specs))}."
            )
        chosen = {sid: replace(specs[sid], enabled=True) for sid in only}
    else:
        chosen = {sid: spec for sid, spec in specs.items() if spec.enabled}
    if replicas:
        fixed = {"replicas": replicas, "min_replicas": replicas, "max_replicas": replicas}
        chosen = {sid: replace(spec, **fixed) for sid, spec in chosen.items()}
    return chosen


_FIELDS = {
    "command",
    "env",
    "replicas",
    "min_replicas",
    "max_replicas",
    "timeout",
    "enabled",
    "stateful",
    "state",
    "max_in_flight",
    "max_queue_s",
    "hung_after_s",
    "startup_timeout",
    "nice",
}
