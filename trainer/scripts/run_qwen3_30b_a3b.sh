#!/usr/bin/env bash
# The GAIA GRPO recipe for Qwen3-30B-A3B (MoE, 3B active): same loop and reward as run.sh,
# sized for 2 nodes x 8 GPUs (80 GB). Rollout shards the model over 4 GPUs; FSDP offloads
# parameters and optimizer state between phases so the 30B weights fit next to the rollout engine
# (the update loads them back: the dry run's estimate counts them). Sequence parallelism over 4 GPUs
# (a divisor of the model's 4 KV heads) and fused kernels keep the actor's micro-batch at 32k tokens
# per GPU. Two nodes need a gateway both reach: MCP_SERVER_URL (slurm_gaia_grpo.sbatch sets it).
#   NNODES=2 bash trainer/scripts/run_qwen3_30b_a3b.sh      (DRY_RUN=1 to check the config)
set -euo pipefail
export MODEL_PATH=${MODEL_PATH:-Qwen/Qwen3-30B-A3B-Thinking-2507}
export EXPERIMENT_NAME=${EXPERIMENT_NAME:-qwen3-30b-a3b-thinking-gaia-grpo}
export NNODES=${NNODES:-2}
export ROLLOUT_TP=${ROLLOUT_TP:-4}
export GPU_MEMORY_UTILIZATION=${GPU_MEMORY_UTILIZATION:-0.5}
export PARAM_OFFLOAD=${PARAM_OFFLOAD:-True}
export OPTIMIZER_OFFLOAD=${OPTIMIZER_OFFLOAD:-True}
export AGENT_WORKERS=${AGENT_WORKERS:-16}
export SP_SIZE=${SP_SIZE:-4}
exec bash "$(dirname "$0")/run.sh" "$@"
