#!/usr/bin/env bash
# GRPO on GAIA with VeRL 0.9.1: Qwen3-4B-Thinking-2507 rolls out through the gaia_agent loop,
# which calls tools on the gaia-env gateway at MCP_SERVER_URL, one MCP session per episode.
#
#   MCP_SERVER_URL=http://gateway:8080/mcp bash trainer/scripts/run.sh [extra Hydra overrides]
#   DRY_RUN=1 bash trainer/scripts/run.sh      # everything main_ppo builds before GPUs; no GPU, no Ray
#   DEVICE=cpu MODEL_PATH=<small HF folder> bash trainer/scripts/run.sh ...   # verl's trainer with no GPU
#
# Logs go to the console, and to wandb when WANDB_API_KEY is set. The dry run refuses a train set smaller
# than a batch, a step count total_epochs would cut, a loopback MCP_SERVER_URL on several nodes, and an
# actor that would not fit in GPU_MEMORY_GB (its estimate per GPU is printed).
#
# Every value is an environment variable with a default; extra arguments are appended as Hydra
# overrides and win over everything here.
set -euo pipefail

PYTHON=${PYTHON:-python3}
DRY_RUN=${DRY_RUN:-0}

MODEL_PATH=${MODEL_PATH:-Qwen/Qwen3-4B-Thinking-2507}
DATA_DIR=${DATA_DIR:-$HOME/data/gaia}
TRAIN_FILES=${TRAIN_FILES:-$DATA_DIR/train.parquet}
VAL_FILES=${VAL_FILES:-$DATA_DIR/test.parquet}

# The environment. The prompt carries every selected tool's schema, so the selection must fit
# in PROMPT_LENGTH tokens together with the question (the loop refuses a prompt that does not).
export MCP_SERVER_URL=${MCP_SERVER_URL:-http://127.0.0.1:8080/mcp}
export MCP_SERVERS=${MCP_SERVERS:-googlesearch-server,readweb-server,documents-csv-server,documents-pdf-server}
export GAIA_TOOL_TIMEOUT_S=${GAIA_TOOL_TIMEOUT_S:-120}
export GAIA_EPISODE_TIMEOUT_S=${GAIA_EPISODE_TIMEOUT_S:-1800}
# A protected gateway: MCP_AUTH_TOKEN, or MCP_AUTH_TOKEN_FILE naming a file readable on every node.
MCP_AUTH_TOKEN=${MCP_AUTH_TOKEN:-}
MCP_AUTH_TOKEN_FILE=${MCP_AUTH_TOKEN_FILE:-}

# Where verl runs. DEVICE=cpu runs verl's own trainer, workers and FSDP engine on the host CPU (the
# platform plugin gaia_train.verl_adapter.cpu_platform, gloo), generating with the transformers
# rollout (gaia_train.verl_adapter.cpu_rollout): for a small model and a check that the recipe runs,
# not for training a real model. ROLLOUT_NAME picks the rollout engine either way.
DEVICE=${DEVICE:-cuda}
if [ "$DEVICE" = "cpu" ]; then ROLLOUT_NAME=${ROLLOUT_NAME:-transformers}; else ROLLOUT_NAME=${ROLLOUT_NAME:-vllm}; fi
# Packing sequences without padding needs flash-attn's variable-length kernels (GPU only).
REMOVE_PADDING=${REMOVE_PADDING:-$([ "$DEVICE" = "cpu" ] && echo False || echo True)}

ADV_ESTIMATOR=${ADV_ESTIMATOR:-grpo}
CLIP_RATIO_LOW=${CLIP_RATIO_LOW:-0.2}
CLIP_RATIO_HIGH=${CLIP_RATIO_HIGH:-0.28}
ACTOR_LR=${ACTOR_LR:-1e-6}
USE_KL_LOSS=${USE_KL_LOSS:-False}
ENTROPY_COEFF=${ENTROPY_COEFF:-0}

# The episode budget. In VeRL the whole multi-turn response (every turn and every tool response)
# shares RESPONSE_LENGTH; each generation samples at most TURN_TOKENS, a thought cut there goes on
# (same tape) until it closes or reaches REASONING_TOKENS, and the tool responses after a turn take at
# most TOOL_TOKENS_PER_TURN (longer outputs are cut, and the model is told), so MAX_TURNS *
# (REASONING_TOKENS + TURN_TOKENS) + (MAX_TURNS - 1) * TOOL_TOKENS_PER_TURN must fit in RESPONSE_LENGTH, and
# PROMPT_LENGTH + RESPONSE_LENGTH in the model's 131k context. The dry run prints the arithmetic.
MAX_MODEL_LEN=${MAX_MODEL_LEN:-131072}
PROMPT_LENGTH=${PROMPT_LENGTH:-4096}
RESPONSE_LENGTH=${RESPONSE_LENGTH:-$(( MAX_MODEL_LEN - PROMPT_LENGTH ))}
# A thinking model's thoughts run to thousands of tokens: fewer, longer turns.
MAX_TURNS=${MAX_TURNS:-12}
export GAIA_TURN_TOKENS=${TURN_TOKENS:-${GAIA_TURN_TOKENS:-1792}}
export GAIA_REASONING_TOKENS=${REASONING_TOKENS:-${GAIA_REASONING_TOKENS:-6144}}
export GAIA_TOOL_TOKENS_PER_TURN=${TOOL_TOKENS_PER_TURN:-${GAIA_TOOL_TOKENS_PER_TURN:-2048}}
MAX_PARALLEL_CALLS=${MAX_PARALLEL_CALLS:-4}
# Characters of one tool output (the calls of a turn share TOOL_TOKENS_PER_TURN).
MAX_TOOL_RESPONSE_LENGTH=${MAX_TOOL_RESPONSE_LENGTH:-8192}

# Validation samples as Qwen advises for its thinking models (temperature 0.6, top_p 0.95, top_k 20; greedy
# decoding makes them repeat themselves), VAL_N answers per task: verl reports mean@N and best@N of each
# data_source, one per GAIA level (val-core/gaia/level1/acc/mean@4, ...).
VAL_TEMPERATURE=${VAL_TEMPERATURE:-0.6}
VAL_TOP_P=${VAL_TOP_P:-0.95}
VAL_TOP_K=${VAL_TOP_K:-20}
VAL_N=${VAL_N:-4}

TRAIN_BATCH_SIZE=${TRAIN_BATCH_SIZE:-32}
PPO_MINI_BATCH_SIZE=${PPO_MINI_BATCH_SIZE:-8}
ROLLOUT_N=${ROLLOUT_N:-16}
TEMPERATURE=${TEMPERATURE:-1.0}
ROLLOUT_TP=${ROLLOUT_TP:-1}
GPU_MEMORY_UTILIZATION=${GPU_MEMORY_UTILIZATION:-0.6}
AGENT_WORKERS=${AGENT_WORKERS:-8}
# The actor's memory (the dry run estimates it per GPU against GPU_MEMORY_GB and refuses what does not
# fit). Dynamic batching packs MAX_TOKEN_LEN_PER_GPU tokens per GPU into a micro-batch of
# MAX_TOKEN_LEN_PER_GPU x SP_SIZE tokens, which must hold the longest prompt+response: Ulysses sequence
# parallelism over SP_SIZE GPUs splits it. Fused kernels compute log-probs and entropy in 512-token chunks
# instead of materialising the logits (tokens x 151,936 vocabulary: 40 GB in bf16 at 131k tokens).
GPU_MEMORY_GB=${GPU_MEMORY_GB:-80}
SP_SIZE=${SP_SIZE:-4}
MAX_TOKEN_LEN_PER_GPU=${MAX_TOKEN_LEN_PER_GPU:-$(( (PROMPT_LENGTH + RESPONSE_LENGTH + SP_SIZE - 1) / SP_SIZE ))}
USE_FUSED_KERNELS=${USE_FUSED_KERNELS:-True}
PARAM_OFFLOAD=${PARAM_OFFLOAD:-False}
OPTIMIZER_OFFLOAD=${OPTIMIZER_OFFLOAD:-False}
# verl's FSDP actor asks for flash_attention_2 unless told otherwise; flash-attn comes with verl's fsdp
# extra (pip install -e './trainer[verl-fsdp]'). Without it the recipe uses PyTorch's sdpa.
if [ -z "${ATTN_IMPLEMENTATION:-}" ]; then
  if "$PYTHON" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("flash_attn") is None)' 2>/dev/null; then
    ATTN_IMPLEMENTATION=flash_attention_2
  else
    ATTN_IMPLEMENTATION=sdpa
  fi
fi

NNODES=${NNODES:-1}
N_GPUS_PER_NODE=${N_GPUS_PER_NODE:-8}
TOTAL_TRAINING_STEPS=${TOTAL_TRAINING_STEPS:-300}
# verl stops at total_epochs (default 30) even before total_training_steps: every epoch has at least one
# step, so as many epochs as steps lets the stated steps run (the dry run prints the effective count).
TOTAL_EPOCHS=${TOTAL_EPOCHS:-$TOTAL_TRAINING_STEPS}
SAVE_FREQ=${SAVE_FREQ:-5}
# Checkpoints kept on disk (the oldest go): a 4B actor's checkpoint with its optimizer is ~50 GB.
MAX_CKPT_TO_KEEP=${MAX_CKPT_TO_KEEP:-3}
TEST_FREQ=${TEST_FREQ:-5}
VAL_BEFORE_TRAIN=${VAL_BEFORE_TRAIN:-True}
PROJECT_NAME=${PROJECT_NAME:-gaia-env}
EXPERIMENT_NAME=${EXPERIMENT_NAME:-qwen3-4b-thinking-gaia-grpo}
# wandb only with a key: without one verl's wandb logger stops the run when fit() starts.
if [ -n "${WANDB_API_KEY:-}" ]; then
  LOGGERS=${LOGGERS:-'["console","wandb"]'}
else
  LOGGERS=${LOGGERS:-'["console"]'}
fi
REWARD_FUNCTION=${REWARD_FUNCTION:-gaia_reward_func}

# The package's own files, wherever it is installed.
AGENT_LOOP_CONFIG=${AGENT_LOOP_CONFIG:-$("$PYTHON" -c 'import gaia_train, pathlib; print(pathlib.Path(gaia_train.__file__).parent / "config" / "agent.yaml")')}
REWARD_PATH=${REWARD_PATH:-$("$PYTHON" -c 'import gaia_train.reward as r; print(r.__file__)')}

# String values are single-quoted for Hydra, so commas, colons and slashes stay literal.
overrides=(
  algorithm.adv_estimator="$ADV_ESTIMATOR"
  algorithm.use_kl_in_reward=False
  data.train_files="'$TRAIN_FILES'"
  data.val_files="'$VAL_FILES'"
  data.train_batch_size="$TRAIN_BATCH_SIZE"
  data.max_prompt_length="$PROMPT_LENGTH"
  data.max_response_length="$RESPONSE_LENGTH"
  data.return_raw_chat=True
  data.filter_overlong_prompts=True
  data.truncation=error
  actor_rollout_ref.model.path="'$MODEL_PATH'"
  actor_rollout_ref.model.use_remove_padding="$REMOVE_PADDING"
  actor_rollout_ref.model.enable_gradient_checkpointing=True
  actor_rollout_ref.model.use_fused_kernels="$USE_FUSED_KERNELS"
  +actor_rollout_ref.model.override_config.attn_implementation="$ATTN_IMPLEMENTATION"
  actor_rollout_ref.actor.optim.lr="$ACTOR_LR"
  actor_rollout_ref.actor.clip_ratio_low="$CLIP_RATIO_LOW"
  actor_rollout_ref.actor.clip_ratio_high="$CLIP_RATIO_HIGH"
  actor_rollout_ref.actor.ppo_mini_batch_size="$PPO_MINI_BATCH_SIZE"
  actor_rollout_ref.actor.use_dynamic_bsz=True
  actor_rollout_ref.actor.ppo_max_token_len_per_gpu="$MAX_TOKEN_LEN_PER_GPU"
  actor_rollout_ref.actor.ulysses_sequence_parallel_size="$SP_SIZE"
  actor_rollout_ref.ref.ulysses_sequence_parallel_size="$SP_SIZE"
  actor_rollout_ref.actor.use_kl_loss="$USE_KL_LOSS"
  actor_rollout_ref.actor.entropy_coeff="$ENTROPY_COEFF"
  actor_rollout_ref.actor.loss_agg_mode=token-mean
  actor_rollout_ref.actor.fsdp_config.param_offload="$PARAM_OFFLOAD"
  actor_rollout_ref.actor.fsdp_config.optimizer_offload="$OPTIMIZER_OFFLOAD"
  actor_rollout_ref.ref.fsdp_config.param_offload=True
  actor_rollout_ref.rollout.name="$ROLLOUT_NAME"
  actor_rollout_ref.rollout.mode=async
  actor_rollout_ref.rollout.n="$ROLLOUT_N"
  actor_rollout_ref.rollout.temperature="$TEMPERATURE"
  actor_rollout_ref.rollout.val_kwargs.do_sample=True
  actor_rollout_ref.rollout.val_kwargs.temperature="$VAL_TEMPERATURE"
  actor_rollout_ref.rollout.val_kwargs.top_p="$VAL_TOP_P"
  actor_rollout_ref.rollout.val_kwargs.top_k="$VAL_TOP_K"
  actor_rollout_ref.rollout.val_kwargs.n="$VAL_N"
  actor_rollout_ref.rollout.tensor_model_parallel_size="$ROLLOUT_TP"
  actor_rollout_ref.rollout.gpu_memory_utilization="$GPU_MEMORY_UTILIZATION"
  actor_rollout_ref.rollout.max_model_len="$MAX_MODEL_LEN"
  actor_rollout_ref.rollout.max_num_batched_tokens="$MAX_TOKEN_LEN_PER_GPU"
  actor_rollout_ref.rollout.calculate_log_probs=True
  actor_rollout_ref.rollout.multi_turn.enable=True
  actor_rollout_ref.rollout.multi_turn.max_assistant_turns="$MAX_TURNS"
  actor_rollout_ref.rollout.multi_turn.max_parallel_calls="$MAX_PARALLEL_CALLS"
  actor_rollout_ref.rollout.multi_turn.max_tool_response_length="$MAX_TOOL_RESPONSE_LENGTH"
  actor_rollout_ref.rollout.multi_turn.format=hermes
  actor_rollout_ref.rollout.agent.num_workers="$AGENT_WORKERS"
  actor_rollout_ref.rollout.agent.default_agent_loop=gaia_agent
  actor_rollout_ref.rollout.agent.agent_loop_config_path="'$AGENT_LOOP_CONFIG'"
  reward.custom_reward_function.path="'$REWARD_PATH'"
  reward.custom_reward_function.name="$REWARD_FUNCTION"
  trainer.logger="$LOGGERS"
  trainer.project_name="'$PROJECT_NAME'"
  trainer.experiment_name="'$EXPERIMENT_NAME'"
  trainer.nnodes="$NNODES"
  trainer.n_gpus_per_node="$N_GPUS_PER_NODE"
  trainer.total_training_steps="$TOTAL_TRAINING_STEPS"
  trainer.total_epochs="$TOTAL_EPOCHS"
  trainer.save_freq="$SAVE_FREQ"
  trainer.max_actor_ckpt_to_keep="$MAX_CKPT_TO_KEEP"
  trainer.max_critic_ckpt_to_keep="$MAX_CKPT_TO_KEEP"
  trainer.test_freq="$TEST_FREQ"
  trainer.val_before_train="$VAL_BEFORE_TRAIN"
  # Ray actors on other nodes do not inherit this shell: hand them the environment settings.
  +ray_kwargs.ray_init.runtime_env.env_vars.MCP_SERVER_URL="'$MCP_SERVER_URL'"
  +ray_kwargs.ray_init.runtime_env.env_vars.MCP_SERVERS="'$MCP_SERVERS'"
  +ray_kwargs.ray_init.runtime_env.env_vars.GAIA_TOOL_TIMEOUT_S="'$GAIA_TOOL_TIMEOUT_S'"
  +ray_kwargs.ray_init.runtime_env.env_vars.GAIA_EPISODE_TIMEOUT_S="'$GAIA_EPISODE_TIMEOUT_S'"
  +ray_kwargs.ray_init.runtime_env.env_vars.GAIA_TURN_TOKENS="'$GAIA_TURN_TOKENS'"
  +ray_kwargs.ray_init.runtime_env.env_vars.GAIA_TOOL_TOKENS_PER_TURN="'$GAIA_TOOL_TOKENS_PER_TURN'"
  +ray_kwargs.ray_init.runtime_env.env_vars.GAIA_REASONING_TOKENS="'$GAIA_REASONING_TOKENS'"
)
# The gateway's token travels like the other settings. The file form keeps the secret itself out of
# the config that verl prints at start and that loggers such as wandb record.
if [ -n "$MCP_AUTH_TOKEN_FILE" ]; then
  export MCP_AUTH_TOKEN_FILE
  overrides+=(+ray_kwargs.ray_init.runtime_env.env_vars.MCP_AUTH_TOKEN_FILE="'$MCP_AUTH_TOKEN_FILE'")
elif [ -n "$MCP_AUTH_TOKEN" ]; then
  export MCP_AUTH_TOKEN
  overrides+=(+ray_kwargs.ray_init.runtime_env.env_vars.MCP_AUTH_TOKEN="'$MCP_AUTH_TOKEN'")
  echo "run.sh: MCP_AUTH_TOKEN is passed in Ray's runtime env, which verl prints at start; set" \
    "MCP_AUTH_TOKEN_FILE (a file readable on every node) to keep the token out of logs" >&2
fi

# verl's dumps of every episode, one JSONL a step: the decoded prompt and response with its score
# (ROLLOUT_DATA_DIR, training), and for validation also the reward's gaia keys (gaia_stop, gaia_tool_calls,
# gaia_tool_errors, gaia_turns, gaia_env_fault; VALIDATION_DATA_DIR).
if [ -n "${ROLLOUT_DATA_DIR:-}" ]; then overrides+=(trainer.rollout_data_dir="'$ROLLOUT_DATA_DIR'"); fi
if [ -n "${VALIDATION_DATA_DIR:-}" ]; then overrides+=(trainer.validation_data_dir="'$VALIDATION_DATA_DIR'"); fi

# Plugins verl imports in every process, Ray actors included (VERL_USE_EXTERNAL_MODULES).
plugins=()
if [ "$DEVICE" = "cpu" ]; then
  plugins+=(gaia_train.verl_adapter.cpu_platform)
  export VERL_PLATFORM=cpu
  # verl registers its FSDP engine for cuda and npu; the engine itself works on the platform's device.
  export VERL_ENGINE_DEVICE=cuda
  overrides+=(
    trainer.device=cpu
    # FSDP1 refuses CPU parameters with sync_module_states (which verl sets); FSDP2 shards on CPU over gloo.
    actor_rollout_ref.actor.strategy=fsdp2
    data.dataloader_num_workers=0
    # verl counts its training processes in Ray GPUs: on a CPU they are logical slots.
    +ray_kwargs.ray_init.num_gpus="$(( NNODES * N_GPUS_PER_NODE ))"
    # Logical CPUs: verl's placement groups ask for several per training process, whatever the cores.
    +ray_kwargs.ray_init.num_cpus="${RAY_NUM_CPUS:-8}"
    +ray_kwargs.ray_init.include_dashboard=False
    transfer_queue.backend.SimpleStorage.num_data_storage_units=1
    +ray_kwargs.ray_init.runtime_env.env_vars.VERL_PLATFORM=cpu
    +ray_kwargs.ray_init.runtime_env.env_vars.VERL_ENGINE_DEVICE=cuda
    +ray_kwargs.ray_init.runtime_env.worker_process_setup_hook=gaia_train.verl_adapter.cpu_platform.join_process_group
  )
fi
if [ "$ROLLOUT_NAME" = "transformers" ]; then plugins+=(gaia_train.verl_adapter.cpu_rollout); fi
if [ ${#plugins[@]} -gt 0 ]; then
  VERL_USE_EXTERNAL_MODULES=$(IFS=,; echo "${plugins[*]}")
  export VERL_USE_EXTERNAL_MODULES
  overrides+=(+ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES="'$VERL_USE_EXTERNAL_MODULES'")
fi

if [ "$DRY_RUN" = "1" ]; then
  exec "$PYTHON" -m gaia_train.verl_adapter.config_check --gpu-memory-gb "$GPU_MEMORY_GB" "${overrides[@]}" "$@"
fi
exec "$PYTHON" -m verl.trainer.main_ppo "${overrides[@]}" "$@"
