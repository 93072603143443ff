"""Offline check of a VeRL training configuration: `python -m gaia_train.verl_config OVERRIDE...`.

Composes VeRL's own Hydra config (`verl/trainer/config/ppo_trainer.yaml`) with the overrides,
as `python -m verl.trainer.main_ppo` would, then runs `verl.utils.config.validate_config`
(batch and micro-batch arithmetic) and the checks VeRL does not do itself. No GPU, no Ray.
Hydra already rejects a misspelled key; a `+key` can add one that VeRL then ignores, so added
keys are refused outside the few free-form places. Known traps:
  - `trainer.num_steps` is not a VeRL key; the step budget is `trainer.total_training_steps`.
  - VeRL 0.9.1 reads the reward function from `reward.custom_reward_function.path/name`; the
    top-level `custom_reward_function.*` keys compose but are ignored by main_ppo.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

# `+key=value` may add keys only under these: VeRL passes them through as free-form mappings.
FREE_FORM_PREFIXES = (
    "ray_kwargs.ray_init.",
    "actor_rollout_ref.model.override_config.",
    "critic.model.override_config.",
    "data.apply_chat_template_kwargs.",
    "actor_rollout_ref.rollout.engine_kwargs.",
    "actor_rollout_ref.rollout.custom.",
    "trainer.wandb_",
)


class ConfigError(ValueError):
    pass


def _override_key(override: str) -> tuple[str, str, str]:
    """(prefix "+" / "++" / "~" / "", dotted key, value)."""
    prefix = ""
    for marker in ("++", "+", "~"):
        if override.startswith(marker):
            prefix, override = marker, override[len(marker) :]
            break
    key, _, value = override.partition("=")
    return prefix, key.strip(), value


def check_overrides(overrides: list[str]) -> None:
    for override in overrides:
        prefix, key, _ = _override_key(override)
        if key.endswith("num_steps") and key.startswith("trainer."):
            raise ConfigError(f"{override!r}: VeRL has no {key}; set trainer.total_training_steps instead")
        if key.startswith("custom_reward_function."):
            raise ConfigError(
                f"{override!r}: VeRL 0.9.1 ignores the top-level custom_reward_function; "
                f"set reward.{key} instead"
            )
        if prefix in ("+", "++") and not key.startswith(FREE_FORM_PREFIXES):
            raise ConfigError(
                f"{override!r} adds a key VeRL's config does not have, which VeRL would silently ignore; "
                "check the spelling against verl/trainer/config/_generated_ppo_trainer.yaml"
            )


def compose(overrides: list[str]) -> Any:
    """VeRL's ppo_trainer config with `overrides`, as main_ppo composes it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    # Located, not imported: importing verl costs seconds and composing does not need it.
    spec = importlib.util.find_spec("verl")
    if spec is None or spec.origin is None:
        raise ConfigError(
            "verl is not installed: run scripts/trainer-extra.sh, or pip install 'gaia-train[verl]'"
        )
    config_dir = Path(spec.origin).parent / "trainer" / "config"
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=list(overrides))


def _check_reward(config: Any) -> None:
    reward_fn = config.reward.custom_reward_function
    if config.get("custom_reward_function") is not None and config.custom_reward_function.get("path"):
        raise ConfigError(
            "custom_reward_function.path is set at the top level, where VeRL 0.9.1 ignores it; "
            "use reward.custom_reward_function.path"
        )
    if not reward_fn.path:
        return
    path = Path(reward_fn.path).expanduser()
    if not path.is_file():
        raise ConfigError(f"reward.custom_reward_function.path={reward_fn.path} does not exist")
    spec = importlib.util.spec_from_file_location("_gaia_reward_check", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    if not callable(getattr(module, reward_fn.name, None)):
        raise ConfigError(f"reward.custom_reward_function.name={reward_fn.name} is not a function in {path}")


def _check_agent_loops(config: Any) -> None:
    from omegaconf import OmegaConf

    agent = config.actor_rollout_ref.rollout.agent
    names = {"single_turn_agent", "tool_agent"}
    if agent.agent_loop_config_path:
        path = Path(agent.agent_loop_config_path).expanduser()
        if not path.is_file():
            raise ConfigError(f"rollout.agent.agent_loop_config_path={path} does not exist")
        for entry in OmegaConf.load(path):
            target = entry.get("_target_")
            module_name, _, class_name = str(target).rpartition(".")
            try:
                module = importlib.import_module(module_name)
            except ImportError as exc:
                raise ConfigError(f"{path}: cannot import {target}: {exc}") from exc
            if not hasattr(module, class_name):
                raise ConfigError(f"{path}: {module_name} has no {class_name}")
            names.add(str(entry.name))
    if agent.default_agent_loop not in names:
        raise ConfigError(
            f"rollout.agent.default_agent_loop={agent.default_agent_loop} is not registered "
            f"(known: {', '.join(sorted(names))})"
        )


def _check_data(config: Any) -> None:
    for key in ("train_files", "val_files"):
        files = config.data[key]
        for name in [files] if isinstance(files, str) else list(files):
            if not Path(str(name)).expanduser().is_file():
                raise ConfigError(f"data.{key}: {name} does not exist (make it with gaia-train dataset)")


def check(overrides: list[str]) -> Any:
    """Compose and validate; returns the resolved config or raises with the reason."""
    import warnings

    from omegaconf import OmegaConf

    check_overrides(overrides)
    try:
        config = compose(overrides)
    except ConfigError:
        raise
    except Exception as exc:  # Hydra's override and key errors carry the reason in the message
        raise ConfigError(f"VeRL's config does not compose with these overrides: {exc}") from exc
    if config.trainer.total_training_steps is None:
        raise ConfigError("trainer.total_training_steps is not set; without it VeRL trains for total_epochs")
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    try:
        OmegaConf.resolve(config)
        with warnings.catch_warnings():
            # "Disabled critic as algorithm.adv_estimator != gae" is the intent for GRPO.
            warnings.filterwarnings("ignore", message="Disabled critic")
            validate_config(
                config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config)
            )
    except Exception as exc:  # validate_config raises assertions wrapped in Hydra instantiation errors
        raise ConfigError(f"VeRL rejects the configuration: {exc}") from exc
    _check_reward(config)
    _check_agent_loops(config)
    _check_data(config)
    return config


def main(argv: list[str] | None = None) -> int:
    from omegaconf import OmegaConf

    args = list(sys.argv[1:] if argv is None else argv)
    show = "--print" in args
    overrides = [a for a in args if a != "--print"]
    try:
        # VeRL prints its own progress; keep stdout for the config and the verdict.
        with contextlib.redirect_stdout(sys.stderr):
            config = check(overrides)
    except ConfigError as exc:
        print(f"dry run failed: {exc}", file=sys.stderr)
        return 1
    if show:
        print(OmegaConf.to_yaml(config))
    rollout = config.actor_rollout_ref.rollout
    print(
        f"dry run ok: {len(overrides)} overrides; {config.algorithm.adv_estimator}, "
        f"{config.trainer.total_training_steps} steps, batch {config.data.train_batch_size} x n={rollout.n}, "
        f"agent {rollout.agent.default_agent_loop}, reward "
        f"{config.reward.custom_reward_function.name} from {config.reward.custom_reward_function.path}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
