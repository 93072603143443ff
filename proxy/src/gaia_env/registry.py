"""The server registry: proxy/servers.toml, one entry per server id."""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

DEFAULT_REGISTRY = Path(__file__).resolve().parents[2] / "servers.toml"
REPO_ROOT = Path(__file__).resolve().parents[3]
"""The checkout the gateway runs from: `{root}` in a command (servers with their own environment)."""


class RegistryError(ValueError):
    pass


@dataclass(frozen=True)
class ServerSpec:
    id: str
    command: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    replicas: int = 1
    timeout: float = 120.0
    enabled: bool = True
    stateful: bool = False
    max_in_flight: int = 32
    max_queue: int = 256
    startup_timeout: float = 60.0

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
        if specs[server_id].replicas < 1:
            raise RegistryError(f"Registry entry {server_id!r}: replicas must be at least 1.")
    return specs


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
        chosen = {sid: replace(spec, replicas=replicas) for sid, spec in chosen.items()}
    return chosen


_FIELDS = {
    "command",
    "env",
    "replicas",
    "timeout",
    "enabled",
    "stateful",
    "max_in_flight",
    "max_queue",
    "startup_timeout",
}
