"""Offline check of a VeRL training configuration: `python -m gaia_train.verl_adapter.config_check OVERRIDE...`.

Composes VeRL's own Hydra config (`verl/trainer/config/ppo_trainer.yaml`) with the overrides,
as `python -m verl.trainer.main_ppo` would, then runs `verl.utils.config.validate_config`
(batch and micro-batch arithmetic) and the checks VeRL does not do itself. Then it goes as far as
main_ppo goes before it asks Ray for GPUs (`reach`): the task runner's imports, the tokenizer, the
datasets built by VeRL's own `create_rl_dataset`, every prompt rendered with the tool schemas the
gateway serves for MCP_SERVERS, the reward function called on a right answer, the reward manager
and the episode's token budget. What it could not reach (no gateway, no rollout engine on a CPU
machine) it says, one line each. No GPU, no Ray.
Hydra already rejects a misspelled key; a `+key` can add one that VeRL then ignores, so added
keys are refused outside the few free-form places. Known traps:
  - `trainer.num_steps` is not a VeRL key; the step budget is `trainer.total_training_steps`.
  - VeRL 0.9.1 reads the reward function from `reward.custom_reward_function.path/name`; the
    top-level `custom_reward_function.*` keys compose but are ignored by main_ppo.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gaia_contract import SERVER_URL_ENV

from ..episode.budget import DEFAULT_REASONING_TOKENS, Budget
from .memory import GIB, ActorSetup, MemoryEstimate, estimate, read_architecture

DEFAULT_GPU_MEMORY_GB = 80.0

# `+key=value` may add keys only under these: VeRL passes them through as free-form mappings.
FREE_FORM_PREFIXES = (
    "ray_kwargs.ray_init.",
    "actor_rollout_ref.model.override_config.",
    "critic.model.override_config.",
    "data.apply_chat_template_kwargs.",
    "actor_rollout_ref.rollout.engine_kwargs.",
    "actor_rollout_ref.rollout.custom.",
    "trainer.wandb_",
    # The reward function's keyword arguments (verl.trainer.ppo.reward.get_custom_reward_fn), and the
    # reward manager's (DAPO's overlong buffer); the reward's are checked against its signature.
    "reward.custom_reward_function.reward_kwargs.",
    "reward.reward_kwargs.",
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
            "verl is not installed: run scripts/trainer-extra.sh, or pip install -e './trainer[verl]'"
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
    function = getattr(module, reward_fn.name, None)
    if not callable(function):
        raise ConfigError(f"reward.custom_reward_function.name={reward_fn.name} is not a function in {path}")
    _check_reward_kwargs(function, reward_fn.name, dict(reward_fn.get("reward_kwargs") or {}))


def _check_reward_kwargs(function: Any, name: str, kwargs: dict[str, Any]) -> None:
    import inspect

    parameters = inspect.signature(function).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    accepted = [p.name for p in parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    unknown = sorted(set(kwargs) - set(parameters))
    if unknown:
        raise ConfigError(
            f"reward.custom_reward_function.reward_kwargs: {name} takes no {', '.join(unknown)} "
            f"(it takes: {', '.join(accepted) or 'no keyword arguments'})"
        )


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
            if entry.get("team"):
                from ..teams.team import TeamConfigError, load_team

                try:
                    load_team(str(entry.team))
                except TeamConfigError as exc:
                    raise ConfigError(f"{path}: agent loop {entry.name}: {exc}") from None
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


@dataclass
class Reach:
    """What the dry run built before GPU placement, what it could not, and the episode's budget."""

    done: list[str] = field(default_factory=list)
    not_reached: list[str] = field(default_factory=list)
    budget: Budget | None = None
    train_rows: int | None = None
    """Rows of VeRL's train dataset after its own filtering (None: not built; the parquet is counted)."""
    steps: Steps | None = None
    memory: MemoryEstimate | None = None


# Reward managers that merge the agent loop's extra_fields into the reward's extra_info.
MERGING_REWARD_MANAGERS = ("naive", "limited", "remote")


def _import_task_runner(config: Any, reach: Reach) -> None:
    try:
        import transfer_queue  # noqa: F401
        from verl.trainer.main_ppo import TaskRunnerV1  # noqa: F401
        from verl.trainer.ppo.v1 import get_trainer_cls
    except ImportError as exc:
        raise ConfigError(
            f"verl's default trainer does not import ({exc}): run scripts/trainer-extra.sh, or "
            "pip install -e './trainer[verl]'"
        ) from exc
    if config.trainer.use_v1:
        mode = config.trainer.v1.trainer_mode
        try:
            trainer_cls = get_trainer_cls(mode)
        except Exception as exc:  # an unknown mode is a KeyError or ValueError, depending on the registry
            raise ConfigError(f"trainer.v1.trainer_mode={mode}: {exc}") from exc
        reach.done.append(f"imported the v1 task runner and its trainer {trainer_cls.__name__} ({mode})")
    else:
        from verl.trainer.main_ppo_v0 import TaskRunner  # noqa: F401

        reach.done.append("imported the legacy (v0) task runner")
    engine = config.actor_rollout_ref.rollout.name
    if importlib.util.find_spec(engine) is None:
        reach.not_reached.append(
            f"the rollout engine: {engine} is not installed here (GPU only; pip install -e './trainer[verl]')"
        )
    else:
        reach.done.append(f"found the rollout engine {engine}")


def _check_attention(config: Any, reach: Reach) -> None:
    """verl's FSDP actor loads the model with flash_attention_2 unless override_config says otherwise."""
    override = config.actor_rollout_ref.model.get("override_config") or {}
    attention = str(override.get("attn_implementation", "flash_attention_2"))
    if attention == "flash_attention_2" and importlib.util.find_spec("flash_attn") is None:
        raise ConfigError(
            "the actor loads the model with attn_implementation=flash_attention_2 (verl's default), but "
            "flash_attn is not installed here: install it (pip install flash-attn==2.8.3 --no-build-isolation) "
            "or set +actor_rollout_ref.model.override_config.attn_implementation=sdpa (run.sh: "
            "ATTN_IMPLEMENTATION=sdpa, its default without flash_attn)"
        )
    reach.done.append(f"the actor's attention: {attention}")


def _load_tokenizer(config: Any, reach: Reach) -> Any | None:
    from verl.utils.config import omega_conf_to_dataclass

    try:
        model = omega_conf_to_dataclass(config.actor_rollout_ref.model)
    except Exception as exc:  # no local copy and no hub: offline machines meet this
        reach.not_reached.append(
            f"the tokenizer of {config.actor_rollout_ref.model.path} ({type(exc).__name__}: {exc}); "
            "prompt tokens were not counted"
        )
        return None
    reach.done.append(f"loaded the tokenizer of {config.actor_rollout_ref.model.path}")
    return model.tokenizer


def _build_datasets(config: Any, tokenizer: Any, reach: Reach) -> None:
    """VeRL's own datasets, filtered as VeRL filters them; the train set's size goes to `reach`."""
    from verl.trainer.ppo.utils import create_rl_dataset

    environ = os.environ
    for key, is_train in (("train_files", True), ("val_files", False)):
        try:
            dataset = create_rl_dataset(config.data[key], config.data, tokenizer, None, is_train=is_train)
        except Exception as exc:
            raise ConfigError(f"VeRL cannot build its dataset from data.{key}: {exc}") from exc
        finally:
            # datasets' map with num_proc (VeRL's filter) rebinds os.environ to a copy, which would
            # keep what the process sets afterwards from its children (and a caller's own cleanup)
            os.environ = environ  # noqa: B003 (the same object back, not a new environment)
        if len(dataset) == 0:
            raise ConfigError(f"data.{key}: VeRL's dataset is empty after its own filtering")
        reach.done.append(f"built VeRL's dataset from data.{key}: {len(dataset)} rows")
        if is_train:
            reach.train_rows = len(dataset)


def _rows(config: Any) -> list[dict[str, Any]]:
    from ..data.gaia import read_rows

    rows = []
    for key in ("train_files", "val_files"):
        files = config.data[key]
        for name in [files] if isinstance(files, str) else list(files):
            rows.extend(read_rows(Path(str(name)).expanduser()))
    return rows


def _list_tools(settings: Any) -> list[dict[str, Any]]:
    """The OpenAI tool schemas the gateway serves for these settings (their server and tool selection)."""
    import anyio

    from ..episode.session import McpToolSession

    async def listing() -> list[dict[str, Any]]:
        with anyio.fail_after(30):
            async with McpToolSession(settings) as session:
                return session.openai_tools()

    return anyio.run(listing)


def _tool_schemas(reach: Reach) -> list[dict[str, Any]] | None:
    from ..episode.session import McpSettings

    settings = McpSettings.from_env()
    try:
        tools = _list_tools(settings)
    except Exception as exc:
        reach.not_reached.append(
            f"the gateway at {settings.url} ({type(exc).__name__}: {exc}); prompts were counted without "
            "their tool schemas: start the gateway (gaia-env serve) and run the dry run again"
        )
        return None
    reach.done.append(
        f"listed {len(tools)} tools from {settings.url} for servers {settings.servers or 'all'}"
    )
    return tools


def _row_prompts(
    rows: list[dict[str, Any]], tools: list[dict[str, Any]] | None, teams: dict[str, Any], reach: Reach
) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Each row's first prompt as its loop sends it: a team row's coordinator prompt with the coordinator's
    tools, a row's own server or tool selection, else MCP_SERVERS' tools."""
    from dataclasses import replace

    from ..episode.session import McpSettings, for_row
    from ..teams.delegation import lead_messages

    default = McpSettings.from_env()
    listed: dict[tuple[Any, Any], list[dict[str, Any]]] = {(default.servers, default.tools): tools or []}

    def tools_of(settings: McpSettings) -> list[dict[str, Any]]:
        key = (settings.servers, settings.tools)
        if key not in listed:
            listed[key] = []
            if tools is not None:  # the gateway answered: list this selection too
                try:
                    listed[key] = _list_tools(settings)
                except Exception as exc:
                    reach.not_reached.append(
                        f"the tools of the selection servers={settings.servers} tools={settings.tools} "
                        f"({type(exc).__name__}: {exc}); its rows were counted without their schemas"
                    )
        return listed[key]

    prompts = []
    for row in rows:
        team = teams.get(str(row.get("agent_name")))
        if team is None:
            prompts.append((list(row["prompt"]), tools_of(for_row(default, row.get("extra_info")))))
            continue
        lead = team.lead
        lead_tools = tools_of(replace(default, servers=lead.servers_header, tools=lead.tools))
        delegate = [team.delegate_tool(lead)] if lead.delegates_to else []
        prompts.append((lead_messages(team, list(row["prompt"])), lead_tools + delegate))
    if len(listed) > 1:
        reach.done.append(
            f"counted each row's prompt with its own tools ({len(listed) - 1} selection(s) besides MCP_SERVERS'"
            " listed: rows' mcp_servers/mcp_tools, teams' coordinators)"
        )
    return prompts


def _longest_prompt(
    config: Any, tokenizer: Any, prompts: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]
) -> int:
    from omegaconf import OmegaConf

    from ..episode.tokens import TokenTape

    kwargs = config.data.get("apply_chat_template_kwargs")
    kwargs = OmegaConf.to_container(kwargs) if OmegaConf.is_config(kwargs) else dict(kwargs or {})
    tape = TokenTape(tokenizer, response_length=1, chat_template_kwargs=kwargs)
    return max(len(tape.begin(messages, tools)) for messages, tools in prompts)


def _tool_output_tokens(
    config: Any, tokenizer: Any, tools: list[dict[str, Any]] | None, rows: list[dict[str, Any]]
) -> int:
    """Tokens of one tool output at the character cap, at this tokenizer's rate on real tool text."""
    import json

    sample = json.dumps(tools, ensure_ascii=False) if tools else " ".join(str(r["prompt"]) for r in rows)
    chars_per_token = len(sample) / max(1, len(tokenizer.encode(sample, add_special_tokens=False)))
    return math.ceil(
        int(config.actor_rollout_ref.rollout.multi_turn.max_tool_response_length) / chars_per_token
    )


def _check_reward_on_a_right_answer(config: Any, rows: list[dict[str, Any]], reach: Reach) -> None:
    from verl.trainer.ppo.reward import get_custom_reward_fn, resolve_reward_manager_cls

    reward_fn = get_custom_reward_fn(config)
    scored = [r for r in rows if str(r["reward_model"]["ground_truth"]).strip() != "?"]
    if reward_fn is not None and scored:
        row = scored[0]
        truth = row["reward_model"]["ground_truth"]
        try:
            result = reward_fn(
                data_source=row.get("data_source", "gaia"),
                solution_str=f"<answer>{truth}</answer>",
                ground_truth=truth,
                extra_info=dict(row["extra_info"]),
            )
        except Exception as exc:
            raise ConfigError(
                f"the reward function fails on the first row: {type(exc).__name__}: {exc}"
            ) from exc
        score = result["score"] if isinstance(result, dict) else result
        if score != 1.0:
            raise ConfigError(
                f"the reward function gives {score} to the right answer of the first row, not 1.0"
            )
        reach.done.append("called the reward function: 1.0 for the first row's right answer")
    manager = resolve_reward_manager_cls(config).__name__
    name = config.reward.reward_manager.name
    if name in MERGING_REWARD_MANAGERS:
        reach.done.append(f"reward manager {name} ({manager}) hands the loop's own answer to the reward")
    else:
        reach.done.append(
            f"reward manager {name} ({manager}) does not pass the loop's extra_fields: the reward reads the "
            "agent's final answer from the decoded text (the same rule)"
        )


def _teams(config: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The teams the rows select, by agent_name (the agent.yaml entries with a team key)."""
    from omegaconf import OmegaConf

    from ..teams.team import load_team

    path = config.actor_rollout_ref.rollout.agent.agent_loop_config_path
    if not path:
        return {}
    entries = {str(e.name): str(e.team) for e in OmegaConf.load(Path(path).expanduser()) if e.get("team")}
    selected = {str(row.get("agent_name")) for row in rows}
    return {name: load_team(entries[name]) for name in sorted(selected & set(entries))}


def _longest_handoff(config: Any, tokenizer: Any, teams: list[Any], reach: Reach) -> int | None:
    """Tokens of the longest hand-off of these teams: a delegated role's prompt with its tool schemas."""
    from omegaconf import OmegaConf

    from ..episode.session import McpSettings
    from ..episode.tokens import TokenTape
    from ..teams.delegation import role_messages

    def schemas(team: Any, role: Any) -> list[dict[str, Any]]:
        tools = _list_tools(McpSettings.from_env(servers=role.servers_header, tools=role.tools))
        return tools + ([team.delegate_tool(role)] if role.delegates_to else [])

    kwargs = config.data.get("apply_chat_template_kwargs")
    kwargs = OmegaConf.to_container(kwargs) if OmegaConf.is_config(kwargs) else dict(kwargs or {})
    tape = TokenTape(tokenizer, response_length=1, chat_template_kwargs=kwargs)
    longest = 0
    for team in teams:
        for name in {n for role in team.roles.values() for n in role.delegates_to}:
            role = team.roles[name]
            try:
                tools = schemas(team, role)
            except Exception as exc:
                reach.not_reached.append(
                    f"the tools of team {team.name}'s {name} ({type(exc).__name__}: {exc}); its hand-offs "
                    "were not counted"
                )
                return None
            # The task itself is the delegating turn's text again: at most one turn's tokens more.
            longest = max(longest, len(tape.hand_off([], role_messages(role, team.lead, ""), tools)))
        reach.done.append(
            f"counted the hand-offs of team {team.name}: at most {longest} tokens plus the task"
        )
    return longest


@dataclass(frozen=True)
class Steps:
    """How many steps VeRL will really train: total_training_steps, unless total_epochs ends it first."""

    rows: int
    batch: int
    stated: int
    epochs: int

    @property
    def per_epoch(self) -> int:
        # VeRL's train dataloader drops the last partial batch (verl.trainer.ppo.v1.trainer_base).
        return self.rows // self.batch

    @property
    def effective(self) -> int:
        return min(self.stated, self.per_epoch * self.epochs)

    def line(self) -> str:
        return (
            f"{self.effective} steps: trainer.total_training_steps={self.stated}, {self.per_epoch} an epoch "
            f"({self.rows} rows // data.train_batch_size {self.batch}) x trainer.total_epochs={self.epochs}"
        )


def _parquet_rows(config: Any, key: str) -> int:
    import pyarrow.parquet as pq

    files = config.data[key]
    names = [files] if isinstance(files, str) else list(files)
    return sum(pq.ParquetFile(Path(str(name)).expanduser()).metadata.num_rows for name in names)


def _check_steps(config: Any, reach: Reach) -> Steps:
    """A train set smaller than a batch, and a step count total_epochs would cut, are refused."""
    rows = reach.train_rows if reach.train_rows is not None else _parquet_rows(config, "train_files")
    counted = "after VeRL's filtering" if reach.train_rows is not None else "in the parquet"
    steps = Steps(
        rows=rows,
        batch=int(config.data.train_batch_size),
        stated=int(config.trainer.total_training_steps),
        epochs=int(config.trainer.total_epochs),
    )
    if steps.per_epoch == 0:
        raise ConfigError(
            f"data.train_files has {rows} rows {counted}, fewer than data.train_batch_size "
            f"({steps.batch}): VeRL would make 0 steps an epoch and divide by zero in fit(); lower "
            f"TRAIN_BATCH_SIZE to at most {rows} (and PPO_MINI_BATCH_SIZE with it) or train on more rows"
        )
    if steps.effective < steps.stated:
        needed = math.ceil(steps.stated / steps.per_epoch)
        raise ConfigError(
            f"trainer.total_training_steps={steps.stated}, but trainer.total_epochs={steps.epochs} ends the run "
            f"after {steps.effective} steps ({steps.per_epoch} an epoch: {rows} rows {counted} // "
            f"data.train_batch_size {steps.batch}); set trainer.total_epochs to at least {needed} "
            "(run.sh: TOTAL_EPOCHS)"
        )
    return steps


LOOPBACK_HOSTS = ("localhost", "ip6-localhost", "0.0.0.0", "::", "::1")


def _is_loopback(url: str) -> bool:
    import ipaddress
    from urllib.parse import urlsplit

    host = (urlsplit(url).hostname or "").lower()
    if host in LOOPBACK_HOSTS or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_gateway_reach(config: Any) -> None:
    """On more than one node, every node's agent loop workers must reach the gateway: no loopback URL."""
    from omegaconf import OmegaConf

    from ..episode.session import DEFAULT_MCP_URL

    nodes = int(config.trainer.nnodes)
    if nodes <= 1:
        return
    # What Ray hands the workers wins; else they inherit the environment `ray start` had.
    env_vars = OmegaConf.select(config, "ray_kwargs.ray_init.runtime_env.env_vars", default=None) or {}
    url = str(env_vars.get(SERVER_URL_ENV) or os.environ.get(SERVER_URL_ENV) or DEFAULT_MCP_URL)
    loopback = [u for u in url.replace(",", " ").split() if _is_loopback(u)]
    if loopback:
        raise ConfigError(
            f"MCP_SERVER_URL={url} is a loopback address, but trainer.nnodes={nodes}: the agent loop workers "
            "on the other nodes would find no gateway there; set MCP_SERVER_URL to an address every node "
            "reaches (slurm_gaia_grpo.sbatch starts a gateway on the head node and sets it)"
        )


def actor_setup(config: Any) -> tuple[ActorSetup, int]:
    """The actor's largest micro-batch per GPU, and the longest sequence it must hold."""
    ref = config.actor_rollout_ref
    actor, rollout = ref.actor, ref.rollout
    sequence_parallel = int(actor.ulysses_sequence_parallel_size or 1)
    longest = int(config.data.max_prompt_length) + int(config.data.max_response_length)
    if actor.use_dynamic_bsz:
        tokens = max(int(actor.ppo_max_token_len_per_gpu), int(rollout.log_prob_max_token_len_per_gpu))
    else:
        micro = max(
            int(actor.ppo_micro_batch_size_per_gpu or 1), int(rollout.log_prob_micro_batch_size_per_gpu or 1)
        )
        tokens = math.ceil(micro * longest / sequence_parallel)
    setup = ActorSetup(
        gpus=int(config.trainer.nnodes) * int(config.trainer.n_gpus_per_node),
        tokens_per_gpu=tokens,
        sequence_parallel=sequence_parallel,
        fused_kernels=bool(ref.model.use_fused_kernels),
        gradient_checkpointing=bool(ref.model.enable_gradient_checkpointing),
    )
    return setup, longest


def _check_memory(config: Any, gpu_memory_gb: float, reach: Reach) -> MemoryEstimate | None:
    """The actor's largest micro-batch against the GPU's memory; refused, with the terms, when it does not fit."""
    setup, longest = actor_setup(config)
    actor = config.actor_rollout_ref.actor
    if setup.gpus % setup.sequence_parallel:
        raise ConfigError(
            f"ulysses_sequence_parallel_size={setup.sequence_parallel} does not divide the trainer's {setup.gpus} "
            "GPUs (trainer.nnodes x trainer.n_gpus_per_node); pick a divisor (SP_SIZE)"
        )
    if actor.use_dynamic_bsz and setup.tokens_per_gpu * setup.sequence_parallel < longest:
        raise ConfigError(
            f"actor.ppo_max_token_len_per_gpu ({setup.tokens_per_gpu}) x ulysses_sequence_parallel_size "
            f"({setup.sequence_parallel}) = {setup.tokens_per_gpu * setup.sequence_parallel} tokens cannot hold "
            f"the longest sequence (data.max_prompt_length + data.max_response_length = {longest}), which "
            "VeRL refuses mid-run; raise MAX_TOKEN_LEN_PER_GPU or SP_SIZE"
        )
    path = str(config.actor_rollout_ref.model.path)
    found = read_architecture(path)
    if found is None:
        reach.not_reached.append(
            f"the memory estimate: no config.json for {path} here and not one of the recipes' models"
        )
        return None
    model, source = found
    if model.attention_heads % setup.sequence_parallel:
        raise ConfigError(
            f"ulysses_sequence_parallel_size={setup.sequence_parallel} does not divide the model's "
            f"{model.attention_heads} attention heads; pick a divisor (SP_SIZE)"
        )
    result = estimate(model, setup)
    budget = gpu_memory_gb * GIB
    reach.done.append(
        f"estimated the actor's memory per GPU from {source}: {result.total / GIB:.1f} of {gpu_memory_gb:g} GiB"
    )
    if result.total > budget:
        raise ConfigError(
            f"the actor's largest micro-batch needs about {result.total / GIB:.1f} GiB per GPU, more than the "
            f"GPU's {gpu_memory_gb:g} GiB (--gpu-memory-gb, run.sh: GPU_MEMORY_GB):\n{result.table()}\n"
            "use fused kernels (actor_rollout_ref.model.use_fused_kernels=True), fewer tokens per GPU "
            "(MAX_TOKEN_LEN_PER_GPU) with more sequence parallelism (SP_SIZE), or more GPUs"
        )
    return result


def _budget(
    config: Any, tokenizer: Any, rows: list[dict[str, Any]], tools: list[dict[str, Any]] | None, reach: Reach
) -> Budget:
    from .agent_loop import env_tokens

    rollout = config.actor_rollout_ref.rollout
    max_turns = int(rollout.multi_turn.max_assistant_turns or 32)
    teams = _teams(config, rows)
    prompts = _row_prompts(rows, tools, teams, reach) if tokenizer is not None else []
    return Budget(
        model_len=int(
            rollout.max_model_len or config.data.max_prompt_length + config.data.max_response_length
        ),
        prompt_length=int(config.data.max_prompt_length),
        response_length=int(config.data.max_response_length),
        max_turns=max([max_turns] + [team.max_turns(max_turns) for team in teams.values()]),
        turn_tokens=env_tokens("GAIA_TURN_TOKENS"),
        tool_tokens=env_tokens("GAIA_TOOL_TOKENS_PER_TURN"),
        reasoning_tokens=env_tokens("GAIA_REASONING_TOKENS") or DEFAULT_REASONING_TOKENS,
        longest_prompt=None if tokenizer is None else _longest_prompt(config, tokenizer, prompts),
        tool_output_tokens=None if tokenizer is None else _tool_output_tokens(config, tokenizer, tools, rows),
        delegations=max([0] + [team.max_delegations for team in teams.values()]),
        handoff_tokens=_longest_handoff(config, tokenizer, list(teams.values()), reach)
        if teams and tokenizer
        else None,
    )


def reach(config: Any, gpu_memory_gb: float = DEFAULT_GPU_MEMORY_GB) -> Reach:
    """Build what main_ppo builds before GPU placement; raise ConfigError on the first contradiction."""
    result = Reach()
    _check_gateway_reach(config)
    _import_task_runner(config, result)
    _check_attention(config, result)
    tokenizer = _load_tokenizer(config, result)
    if tokenizer is not None:
        _build_datasets(config, tokenizer, result)
    result.steps = _check_steps(config, result)
    result.memory = _check_memory(config, gpu_memory_gb, result)
    rows = _rows(config)
    _check_reward_on_a_right_answer(config, rows, result)
    tools = _tool_schemas(result)
    result.budget = _budget(config, tokenizer, rows, tools, result)
    problems = result.budget.problems()
    if problems:
        raise ConfigError(
            "the episode budget does not add up:\n  - "
            + "\n  - ".join(problems)
            + "\n"
            + result.budget.table()
        )
    return result


def _gpu_memory_option(args: list[str]) -> tuple[float, list[str]]:
    """`--gpu-memory-gb N` (or `=N`): the memory of one GPU the estimate must fit in; the rest are overrides."""
    value, rest, index = DEFAULT_GPU_MEMORY_GB, [], 0
    while index < len(args):
        arg = args[index]
        if arg == "--gpu-memory-gb" or arg.startswith("--gpu-memory-gb="):
            text = arg.partition("=")[2] if "=" in arg else (args[index + 1] if index + 1 < len(args) else "")
            index += 1 if "=" in arg else 2
            try:
                value = float(text)
            except ValueError:
                raise ConfigError(f"--gpu-memory-gb takes a number of GiB (e.g. 80), got {text!r}") from None
            if value <= 0:
                raise ConfigError(f"--gpu-memory-gb must be positive, got {text}")
            continue
        rest.append(arg)
        index += 1
    return value, rest


def main(argv: list[str] | None = None) -> int:
    from omegaconf import OmegaConf

    args = list(sys.argv[1:] if argv is None else argv)
    show = "--print" in args
    try:
        gpu_memory_gb, args = _gpu_memory_option([a for a in args if a != "--print"])
        overrides = args
        # VeRL prints its own progress; keep stdout for the config and the verdict.
        with contextlib.redirect_stdout(sys.stderr):
            config = check(overrides)
            reached = reach(config, gpu_memory_gb)
    except ConfigError as exc:
        print(f"dry run failed: {exc}", file=sys.stderr)
        return 1
    if show:
        print(OmegaConf.to_yaml(config))
    rollout = config.actor_rollout_ref.rollout
    print("\n".join(f"reached: {line}" for line in reached.done))
    print("\n".join(f"NOT reached: {line}" for line in reached.not_reached) or "NOT reached: (nothing)")
    assert reached.budget is not None
    print("episode budget:\n" + reached.budget.table())
    if reached.memory is not None:
        print(f"actor memory per GPU (estimate, of {gpu_memory_gb:g} GiB):\n" + reached.memory.table())
    assert reached.steps is not None
    for warning in reached.budget.warnings():
        print(f"warning: {warning}")
    print(
        f"dry run ok: {len(overrides)} overrides; {config.algorithm.adv_estimator}, "
        f"{reached.steps.line()}; batch {config.data.train_batch_size} x n={rollout.n}, "
        f"agent {rollout.agent.default_agent_loop}, reward "
        f"{config.reward.custom_reward_function.name} from {config.reward.custom_reward_function.path}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
