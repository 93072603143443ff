"""`DRY_RUN=1 trainer/scripts/run.sh`: VeRL's Hydra config composes with every override, offline."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

pytest.importorskip(
    "verl.trainer.main_ppo",
    reason="verl is not installed: run scripts/trainer-extra.sh (torch CPU + verl 0.9.1) to check run.sh",
)

from gaia_train.data import gaia as ds  # noqa: E402
from gaia_train.demo.snapshot import write_demo_snapshot  # noqa: E402

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gaia")
    write_demo_snapshot(root / "snapshot", skip_audio=True)
    ds.build(root / "snapshot", root / "data", test_size=2)
    return root / "data"


# The tests' tiny model has 2 attention heads: no 4-way sequence parallelism.
TINY = {"SP_SIZE": "1"}
# The demo set has 4 train rows: a batch of the recipe's 32 would make no step (see the test that says so).
SMALL_BATCH = {"TRAIN_BATCH_SIZE": "4", "PPO_MINI_BATCH_SIZE": "4"}


def dry_run(script: str, data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {
        **{k: v for k, v in os.environ.items() if k not in ("WANDB_API_KEY", "MCP_SERVER_URL")},
        "PYTHON": sys.executable,
        "DATA_DIR": str(data_dir),
        "DRY_RUN": "1",
        "HF_HUB_OFFLINE": "1",  # the default model is not on this machine: fail at once, not after retries
        **SMALL_BATCH,
        **env,
    }
    return subprocess.run(
        ["bash", str(SCRIPTS / script), *args], env=environment, capture_output=True, text=True, timeout=240
    )


@pytest.fixture
def dry_run_here(tmp_path: Path, monkeypatch, capsys):
    """The recipe's dry run in this process (verl imported once, not per run): the script runs with a
    PYTHON that hands back the config check's arguments and the environment it exported, instead of
    starting the check, and the check runs here on them."""
    from gaia_train.verl_adapter import config_check
    from huggingface_hub import constants

    # as dry_run's subprocess has it: the default model is not on this machine, so the in-process check
    # must fail at once, not back off for minutes against a hub it cannot reach (the hub reads the
    # setting once, at import)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    wrapper = tmp_path / "python"
    wrapper.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-m" ] && [ "$2" = "gaia_train.verl_adapter.config_check" ]; then\n'
        f"  shift 2; exec {sys.executable} -c "
        '\'import json, os, sys; print(json.dumps({"argv": sys.argv[1:], "env": dict(os.environ)}))\' "$@"\n'
        "fi\n"
        f'exec {sys.executable} "$@"\n'
    )
    wrapper.chmod(0o755)

    def run(script: str, data_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
        recipe = dry_run(script, data_dir, *args, PYTHON=str(wrapper), **env)
        assert recipe.returncode == 0, recipe.stderr[-3000:]
        handed = json.loads(recipe.stdout)
        for name in ("MCP_SERVER_URL", "MCP_SERVERS", "GAIA_TURN_TOKENS", "GAIA_TOOL_TOKENS_PER_TURN"):
            monkeypatch.setenv(name, handed["env"][name])
        capsys.readouterr()
        environ = os.environ
        code = config_check.main(handed["argv"])
        # verl's dataset filter rebinds os.environ (config_check puts it back): the monkeypatched
        # values would otherwise outlive the test, in every later test's environment
        assert os.environ is environ
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(handed["argv"], code, out, err)

    return run


def test_run_sh_composes_the_recipe(data_dir: Path) -> None:
    result = dry_run("run.sh", data_dir, "--print")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "dry run ok" in result.stdout
    config = yaml.safe_load(result.stdout[: result.stdout.index("reached: ")])
    actor, rollout = config["actor_rollout_ref"]["actor"], config["actor_rollout_ref"]["rollout"]
    assert config["actor_rollout_ref"]["model"]["path"] == "Qwen/Qwen3-4B-Thinking-2507"
    assert config["algorithm"]["adv_estimator"] == "grpo"
    assert (actor["clip_ratio_low"], actor["clip_ratio_high"]) == (0.2, 0.28)
    assert actor["optim"]["lr"] == 1e-6 and actor["ppo_mini_batch_size"] == 4
    assert config["data"]["train_batch_size"] == 4 and rollout["n"] == 16
    assert (rollout["prompt_length"], rollout["response_length"]) == (4096, 131072 - 4096)
    assert rollout["name"] == "vllm" and rollout["mode"] == "async" and rollout["max_model_len"] == 131072
    assert rollout["multi_turn"]["max_assistant_turns"] == 12  # fewer, longer turns for a thinking model
    assert rollout["multi_turn"]["max_tool_response_length"] == 8192
    assert rollout["agent"]["default_agent_loop"] == "gaia_agent"
    assert rollout["agent"]["agent_loop_config_path"].endswith("gaia_train/config/agent.yaml")
    reward = config["reward"]["custom_reward_function"]
    assert reward["path"].endswith("gaia_train/reward.py") and reward["name"] == "gaia_reward_func"
    trainer = config["trainer"]
    assert trainer["total_training_steps"] == 300 and trainer["save_freq"] == 5 and trainer["test_freq"] == 5
    # the stated steps are the real ones: total_epochs would otherwise stop the run at 30 epochs
    assert trainer["total_epochs"] == 300
    assert (
        "dry run ok" in result.stdout
        and "300 steps: trainer.total_training_steps=300, 1 an epoch" in result.stdout
    )
    # no wandb key here: console only (verl's wandb logger would stop the run without one)
    assert trainer["logger"] == ["console"]
    assert trainer["max_actor_ckpt_to_keep"] == 3 and trainer["max_critic_ckpt_to_keep"] == 3
    # sampled validation as Qwen advises for thinking models, several answers per task
    val = rollout["val_kwargs"]
    assert (val["do_sample"], val["temperature"], val["top_p"], val["top_k"], val["n"]) == (
        True,
        0.6,
        0.95,
        20,
        4,
    )
    # what fits 80 GB: fused kernels, 4-way sequence parallelism, 32k tokens per GPU; sdpa without flash-attn
    model = config["actor_rollout_ref"]["model"]
    assert model["use_fused_kernels"] is True and model["override_config"]["attn_implementation"] == "sdpa"
    assert actor["ulysses_sequence_parallel_size"] == 4 and actor["ppo_max_token_len_per_gpu"] == 32768
    assert "reached: the actor's attention: sdpa" in result.stdout
    assert (
        "reached: estimated the actor's memory per GPU from gaia_train's table of the recipes' models: "
        "23.8 of 80 GiB" in result.stdout
    )
    env_vars = config["ray_kwargs"]["ray_init"]["runtime_env"]["env_vars"]
    assert (
        env_vars["MCP_SERVERS"]
        == "googlesearch-server,readweb-server,documents-csv-server,documents-pdf-server"
    )
    assert (env_vars["GAIA_TURN_TOKENS"], env_vars["GAIA_TOOL_TOKENS_PER_TURN"]) == ("1792", "2048")
    assert env_vars["GAIA_REASONING_TOKENS"] == "6144"
    assert "MCP_AUTH_TOKEN" not in env_vars and "MCP_AUTH_TOKEN_FILE" not in env_vars
    # what a CPU machine cannot reach is said, not hidden
    assert "NOT reached: the rollout engine: vllm is not installed" in result.stdout
    assert "NOT reached: the tokenizer of Qwen/Qwen3-4B-Thinking-2507" in result.stdout
    assert config["data"]["train_files"] == str(data_dir / "train.parquet")


def test_every_value_is_overridable_by_environment(data_dir: Path) -> None:
    result = dry_run(
        "run.sh",
        data_dir,
        "--print",
        "+reward.custom_reward_function.reward_kwargs.tool_bonus=0.05",
        TOTAL_TRAINING_STEPS="7",
        ROLLOUT_N="4",
        CLIP_RATIO_HIGH="0.3",
        MCP_SERVERS="filesystem-server",
        REWARD_FUNCTION="dense_reward_func",
        WANDB_API_KEY="k",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "dry run ok" in result.stdout and "7 steps: trainer.total_training_steps=7" in result.stdout
    assert "batch 4 x n=4" in result.stdout and "reward dense_reward_func" in result.stdout
    assert re.search(r"reward_kwargs:\n\s+tool_bonus: 0.05", result.stdout)  # VeRL reads them here
    assert "logger:\n  - console\n  - wandb" in result.stdout
    assert "clip_ratio_high: 0.3" in result.stdout and "MCP_SERVERS: filesystem-server" in result.stdout


def test_dry_run_fails_on_unknown_keys_and_known_traps(data_dir: Path) -> None:
    typo = dry_run("run.sh", data_dir, "actor_rollout_ref.rollout.multi_turn.max_turns=3")
    assert (
        typo.returncode == 1
        and "Could not override 'actor_rollout_ref.rollout.multi_turn.max_turns'" in typo.stderr
    )
    steps = dry_run("run.sh", data_dir, "+trainer.num_steps=300")
    assert steps.returncode == 1 and "trainer.total_training_steps" in steps.stderr
    old_reward = dry_run("run.sh", data_dir, "custom_reward_function.name=gaia_reward_func")
    assert old_reward.returncode == 1 and "set reward.custom_reward_function.name" in old_reward.stderr
    no_data = dry_run("run.sh", data_dir, TRAIN_FILES="/nonexistent/train.parquet")
    assert no_data.returncode == 1 and "/nonexistent/train.parquet does not exist" in no_data.stderr


def test_checks_verl_does_not_do_itself(tmp_path: Path) -> None:
    from gaia_train import reward
    from gaia_train.verl_adapter.config_check import ConfigError, _check_agent_loops, _check_reward
    from omegaconf import OmegaConf

    def config(**reward_fn: str):
        return OmegaConf.create({"reward": {"custom_reward_function": reward_fn}})

    _check_reward(config(path=reward.__file__, name="gaia_reward_func"))
    with pytest.raises(ConfigError, match="no_such_reward is not a function"):
        _check_reward(config(path=reward.__file__, name="no_such_reward"))
    with pytest.raises(ConfigError, match="does not exist"):
        _check_reward(config(path=str(tmp_path / "missing.py"), name="f"))

    agent_yaml = tmp_path / "agent.yaml"
    agent_yaml.write_text("- name: other\n  _target_: gaia_train.verl_adapter.agent_loop.NoSuchLoop\n")
    agents = OmegaConf.create(
        {
            "actor_rollout_ref": {
                "rollout": {
                    "agent": {"agent_loop_config_path": str(agent_yaml), "default_agent_loop": "other"}
                }
            }
        }
    )
    with pytest.raises(ConfigError, match="has no NoSuchLoop"):
        _check_agent_loops(agents)
    agent_yaml.write_text(
        "- name: gaia_agent\n  _target_: gaia_train.verl_adapter.agent_loop.GaiaAgentLoop\n"
    )
    with pytest.raises(ConfigError, match="default_agent_loop=other is not registered"):
        _check_agent_loops(agents)


def test_qwen3_30b_a3b_variant_composes(data_dir: Path, dry_run_here) -> None:
    # Two nodes: the loopback default would leave the second node's workers without a gateway.
    alone = dry_run_here("run_qwen3_30b_a3b.sh", data_dir)
    assert alone.returncode == 1
    assert (
        "MCP_SERVER_URL=http://127.0.0.1:8080/mcp is a loopback address, but trainer.nnodes=2" in alone.stderr
    )
    # A name every node resolves (nothing listens there: the dry run says so and goes on).
    url = f"http://{socket.gethostname()}:9/mcp"
    result = dry_run_here("run_qwen3_30b_a3b.sh", data_dir, "--print", MCP_SERVER_URL=url)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "path: Qwen/Qwen3-30B-A3B-Thinking-2507" in result.stdout
    assert "nnodes: 2" in result.stdout and "tensor_model_parallel_size: 4" in result.stdout
    assert "ulysses_sequence_parallel_size: 4" in result.stdout
    # 30.5B parameters over 16 GPUs, offloaded between phases but loaded for the update
    assert "memory per GPU from gaia_train's table of the recipes' models: 46.0 of 80 GiB" in result.stdout


def test_dry_run_refuses_a_run_that_would_not_make_its_steps(data_dir: Path, dry_run_here) -> None:
    # the recipe's batch of 32 on the demo set's 4 train rows: 0 steps an epoch, a ZeroDivisionError in fit()
    small = dry_run_here("run.sh", data_dir, TRAIN_BATCH_SIZE="32", PPO_MINI_BATCH_SIZE="8")
    assert small.returncode == 1
    assert "data.train_files has 4 rows in the parquet, fewer than data.train_batch_size (32)" in small.stderr
    # verl's default of 30 epochs ends a 1-step-an-epoch run at 30 of the 300 steps asked for
    capped = dry_run_here("run.sh", data_dir, TOTAL_EPOCHS="30")
    assert capped.returncode == 1
    assert "trainer.total_training_steps=300, but trainer.total_epochs=30 ends the run after 30 steps" in (
        capped.stderr
    )
    assert "set trainer.total_epochs to at least 300" in capped.stderr


def test_dry_run_refuses_an_actor_that_would_not_fit(data_dir: Path, dry_run_here) -> None:
    # the point 4: a whole 131k sequence per GPU, unfused: its logits alone are 185.5 GiB
    unfused = dry_run_here("run.sh", data_dir, SP_SIZE="1", USE_FUSED_KERNELS="False")
    assert unfused.returncode == 1
    assert "needs about 236.3 GiB per GPU, more than the GPU's 80 GiB" in unfused.stderr
    assert re.search(r"logits/log-softmax/entropy \(131072 x 151936\)\s+185\.5 GiB", unfused.stderr)
    # sequence parallelism over more GPUs than the trainer has
    two = dry_run_here("run.sh", data_dir, N_GPUS_PER_NODE="2")
    assert two.returncode == 1
    assert "ulysses_sequence_parallel_size=4 does not divide the trainer's 2 GPUs" in two.stderr
    # a micro-batch that cannot hold the longest sequence
    short = dry_run_here("run.sh", data_dir, MAX_TOKEN_LEN_PER_GPU="16384")
    assert short.returncode == 1
    assert "16384) x ulysses_sequence_parallel_size (4) = 65536 tokens cannot hold the longest sequence" in (
        short.stderr
    )
    # flash-attn is not installed here: asking for it is refused before main_ppo fails to load the model
    flash = dry_run_here("run.sh", data_dir, ATTN_IMPLEMENTATION="flash_attention_2")
    assert flash.returncode == 1 and "flash_attn is not installed here" in flash.stderr


def test_dry_run_checks_the_rewards_constants(data_dir: Path, dry_run_here) -> None:
    # the dense reward's constants: a name it does not take, and a value it refuses
    dense = {"REWARD_FUNCTION": "dense_reward_func"}
    unknown = dry_run_here(
        "run.sh", data_dir, "+reward.custom_reward_function.reward_kwargs.think_bonus=0.05", **dense
    )
    assert unknown.returncode == 1 and "dense_reward_func takes no think_bonus" in unknown.stderr
    cap = dry_run_here(
        "run.sh", data_dir, "+reward.custom_reward_function.reward_kwargs.tool_bonus_cap=1.0", **dense
    )
    assert cap.returncode == 1 and "tool_bonus_cap must be below 1" in cap.stderr


def test_loopback_gateways_are_refused_on_several_nodes_only(monkeypatch) -> None:
    from gaia_train.verl_adapter.config_check import ConfigError, _check_gateway_reach
    from omegaconf import OmegaConf

    def config(nodes: int, url: str | None = None):
        env_vars = {"MCP_SERVER_URL": url} if url else {}
        return OmegaConf.create(
            {
                "trainer": {"nnodes": nodes},
                "ray_kwargs": {"ray_init": {"runtime_env": {"env_vars": env_vars}}},
            }
        )

    monkeypatch.delenv("MCP_SERVER_URL", raising=False)
    _check_gateway_reach(config(1))  # one node: its own gateway on loopback is fine
    for url in ("http://localhost:8080/mcp", "http://127.0.0.2:8080/mcp", "http://[::1]:8080/mcp", None):
        with pytest.raises(ConfigError, match="is a loopback address, but trainer.nnodes=2"):
            _check_gateway_reach(config(2, url))
    _check_gateway_reach(config(2, "http://10.0.0.5:8080/mcp"))
    _check_gateway_reach(config(4, "http://gateway.cluster:8080/mcp"))
    monkeypatch.setenv("MCP_SERVER_URL", "http://head-node:8080/mcp")  # what `ray start` workers inherit
    _check_gateway_reach(config(2))


def test_effective_steps_follow_verls_loop() -> None:
    from gaia_train.verl_adapter.config_check import Steps

    # the point 5: 132 GAIA rows, batches of 32, verl's default 30 epochs: 300 steps are 120
    assert Steps(rows=132, batch=32, stated=300, epochs=30).effective == 120
    assert Steps(rows=132, batch=32, stated=300, epochs=75).effective == 300
    assert Steps(rows=31, batch=32, stated=300, epochs=300).per_epoch == 0


def test_dry_run_reaches_what_main_ppo_builds_before_gpus(
    data_dir: Path, tiny_model_dir: Path, fake_mcp, dry_run_here
) -> None:
    result = dry_run_here(
        "run.sh", data_dir, MODEL_PATH=str(tiny_model_dir), MCP_SERVER_URL=fake_mcp.url, **TINY
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    for reached in (
        "reached: imported the v1 task runner and its trainer PPOTrainerSync (sync)",
        f"reached: loaded the tokenizer of {tiny_model_dir}",
        "reached: built VeRL's dataset from data.train_files: 4 rows",
        "reached: built VeRL's dataset from data.val_files: 2 rows",
        "reached: called the reward function: 1.0 for the first row's right answer",
        "reached: reward manager naive (NaiveRewardManager) hands the loop's own answer to the reward",
        f"reached: listed 8 tools from {fake_mcp.url}",
        f"reached: estimated the actor's memory per GPU from {tiny_model_dir / 'config.json'}",
    ):
        assert reached in out
    assert "NOT reached: the rollout engine" in out and "NOT reached: the tokenizer" not in out
    table = out.split("episode budget:\n")[1].splitlines()
    budget = dict(re.split(r"\s{2,}", line.strip()) for line in table if line.startswith("  "))
    # 12 turns of a thought (6144) and a generation (1792), with 2048 tool tokens between: 117,760 of 126,976
    assert budget["turns that fit"] == "12" and budget["turns asked for (max_assistant_turns)"] == "12"
    longest = int(budget["longest prompt, tool schemas included"])
    assert 1000 < longest < 4096  # one token per byte here: the eight schemas are most of it


def test_dry_run_fails_with_the_numbers_when_the_episode_cannot_fit(
    data_dir: Path, tiny_model_dir: Path, fake_mcp, dry_run_here
) -> None:
    setting = {"MODEL_PATH": str(tiny_model_dir), "MCP_SERVER_URL": fake_mcp.url, **TINY}
    short = dry_run_here("run.sh", data_dir, PROMPT_LENGTH="1024", **setting)
    assert short.returncode == 1
    assert (
        "the longest prompt is" in short.stderr and "more than data.max_prompt_length (1024)" in short.stderr
    )
    turns = dry_run_here("run.sh", data_dir, MAX_TURNS="40", TOOL_TOKENS_PER_TURN="4096", **setting)
    assert turns.returncode == 1
    assert "only 10 of max_assistant_turns=40 turns fit in data.max_response_length (126976)" in turns.stderr
    assert "raise RESPONSE_LENGTH to 477184" in turns.stderr
    too_long = dry_run_here("run.sh", data_dir, RESPONSE_LENGTH="131072", **setting)
    assert (
        too_long.returncode == 1
        and "is more than actor_rollout_ref.rollout.max_model_len (131072)" in too_long.stderr
    )


def test_the_gateway_token_travels_to_ray_actors(data_dir: Path, tmp_path: Path) -> None:
    plain = dry_run("run.sh", data_dir, "--print", MCP_AUTH_TOKEN="s3cret")
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert "MCP_AUTH_TOKEN: s3cret" in plain.stdout and "MCP_AUTH_TOKEN_FILE" in plain.stderr
    token_file = tmp_path / "token"
    token_file.write_text("s3cret\n")
    filed = dry_run(
        "run.sh", data_dir, "--print", MCP_AUTH_TOKEN="s3cret", MCP_AUTH_TOKEN_FILE=str(token_file)
    )
    assert filed.returncode == 0, filed.stderr[-3000:]
    assert f"MCP_AUTH_TOKEN_FILE: {token_file}" in filed.stdout and "s3cret" not in filed.stdout


def test_verls_default_trainer_path_imports() -> None:
    """What main_ppo imports with trainer.use_v1=true (its default) before it asks Ray for GPUs."""
    import transfer_queue  # noqa: F401  (verl-core's TransferQueue: a bare verl install lacks it)
    from verl.experimental.agent_loop.agent_loop import AgentLoopManager  # noqa: F401
    from verl.experimental.reward_loop import RewardLoopManager  # noqa: F401
    from verl.trainer.main_ppo import TaskRunnerV1  # noqa: F401
    from verl.trainer.ppo.v1 import AgentLoopManagerTQ, get_trainer_cls  # noqa: F401
    from verl.workers.engine_workers import ActorRolloutRefWorker  # noqa: F401

    assert get_trainer_cls("sync").__name__ == "PPOTrainerSync"


def test_dry_run_counts_a_teams_hand_offs(
    tmp_path: Path, tiny_model_dir: Path, fake_mcp, dry_run_here
) -> None:
    team = tmp_path / "pair.toml"
    team.write_text(
        'name = "pair"\ncoordinator = "lead"\nmax_delegations = 2\n'
        '[roles.lead]\nprompt = "You lead."\nservers = ["fake"]\ntools = ["read_file"]\n'
        'delegates_to = ["helper"]\nmax_turns = 20\n'
        '[roles.helper]\nprompt = "You add."\nservers = ["fake"]\ntools = ["add"]\nmax_turns = 8\n'
    )
    agents = tmp_path / "agent.yaml"
    agents.write_text(
        "- name: gaia_agent\n  _target_: gaia_train.verl_adapter.agent_loop.GaiaAgentLoop\n"
        f"- name: pair\n  _target_: gaia_train.verl_adapter.agent_loop.GaiaAgentLoop\n  team: {team}\n"
    )
    write_demo_snapshot(tmp_path / "snapshot", skip_audio=True)
    ds.build(tmp_path / "snapshot", tmp_path / "data", test_size=2, agent_name="pair")
    setting = {
        "MODEL_PATH": str(tiny_model_dir),
        "MCP_SERVER_URL": fake_mcp.url,
        "AGENT_LOOP_CONFIG": str(agents),
        **TINY,
    }
    result = dry_run_here("run.sh", tmp_path / "data", **setting)
    # 20 turns of the lead and 2 delegations of 8: 36 turns, and two hand-offs, in the one response
    assert result.returncode == 1
    [counted] = re.findall(r"longest hand-off to a role, schemas included\s+(\d+)", result.stderr)
    assert 50 < int(counted) < 1000  # one token per byte: the helper's prompt and its one schema
    assert "only 12 of max_assistant_turns=36 turns fit" in result.stderr
    assert f"and 2 hand-offs of {counted} tokens" in result.stderr
    assert re.search(r"delegations \(a team's max_delegations\)\s+2", result.stderr)


def longest_prompt(output: str) -> int:
    [counted] = re.findall(r"longest prompt, tool schemas included\s+(\d+)", output)
    return int(counted)


def test_dry_run_counts_each_rows_prompt_with_its_own_tools(
    data_dir: Path, tmp_path: Path, tiny_model_dir: Path, fake_mcp, dry_run_here
) -> None:
    setting = {"MODEL_PATH": str(tiny_model_dir), "MCP_SERVER_URL": fake_mcp.url, **TINY}
    everything = longest_prompt(dry_run_here("run.sh", data_dir, **setting).stdout)

    # Rows that select one tool: their prompts list that one schema, not the eight of MCP_SERVERS.
    narrow = tmp_path / "narrow"
    narrow.mkdir()
    for name in ("train.parquet", "test.parquet"):
        rows = ds.read_rows(data_dir / name)
        for row in rows:
            row["extra_info"] = {**row["extra_info"], "mcp_tools": ["add"]}
        pd.DataFrame(rows).to_parquet(narrow / name, index=False)
    result = dry_run_here("run.sh", narrow, **setting)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "reached: counted each row's prompt with its own tools (1 selection(s)" in result.stdout
    assert longest_prompt(result.stdout) < everything - 500

    # A team row starts with its coordinator's prompt before the task's: a long one does not fit.
    team = tmp_path / "wordy.toml"
    team.write_text(
        'name = "wordy"\ncoordinator = "lead"\n[roles.lead]\n'
        f'prompt = "{"You lead the team. " * 300}"\nservers = ["fake"]\ntools = ["read_file"]\n'
    )
    agents = tmp_path / "agent.yaml"
    agents.write_text(
        "- name: gaia_agent\n  _target_: gaia_train.verl_adapter.agent_loop.GaiaAgentLoop\n"
        f"- name: wordy\n  _target_: gaia_train.verl_adapter.agent_loop.GaiaAgentLoop\n  team: {team}\n"
    )
    write_demo_snapshot(tmp_path / "snapshot", skip_audio=True)
    ds.build(tmp_path / "snapshot", tmp_path / "data", test_size=2, agent_name="wordy")
    wordy = dry_run_here("run.sh", tmp_path / "data", AGENT_LOOP_CONFIG=str(agents), **setting)
    assert wordy.returncode == 1
    assert longest_prompt(wordy.stderr) > 300 * len("You lead the team. ")
    assert "more than data.max_prompt_length (4096)" in wordy.stderr
