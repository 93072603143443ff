"""Per-GPU memory of the FSDP actor's largest micro-batch, estimated before any GPU is asked for.

An estimate in bytes, by term (docs/trainer.md, "Memory estimate"):

- model states, FSDP-sharded over every GPU: fp32 parameters (4 B), fp32 gradients (4 B) and Adam's two
  moments (8 B) per parameter, divided by the number of GPUs. verl's `param_offload` and
  `optimizer_offload` move them to the CPU between phases only: the update step loads them back, so they
  count at the peak either way.
- the largest FSDP unit gathered in bf16 (one decoder layer), twice (the next one is prefetched).
- activations of `tokens` tokens per GPU: with gradient checkpointing each layer keeps its bf16 input
  (tokens x hidden x 2 B x layers) and one layer is recomputed at a time (tokens x (8 hidden + 4
  intermediate) x 2 B, the intermediate of the experts a token is routed to for MoE); without, every
  layer's working set is kept.
- the language-model head: without fused kernels the logits (tokens x vocab, bf16), their fp32 copy for
  the log-softmax and a softmax for the entropy (or the logits' fp32 gradient in the update): 10 B per
  token and vocabulary entry; with fused kernels only a 512-token chunk at a time is materialised.
- a fixed reserve for the CUDA context, NCCL buffers, allocator fragmentation and what a sleeping
  rollout engine keeps (verl frees the engine's cache while the actor trains).

`tokens` is what dynamic batching packs into one micro-batch per GPU: ppo_max_token_len_per_gpu (the
micro-batch holds ppo_max_token_len_per_gpu x ulysses_sequence_parallel_size tokens, split over the
sequence-parallel group). Without dynamic batching it is micro_batch_size_per_gpu sequences of the
full length, split the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GIB = 1024**3
RESERVE_BYTES = 6 * GIB
FUSED_CHUNK_TOKENS = 512
"""Tokens per chunk of verl's fused log-prob/entropy kernel (verl.utils.experimental.torch_functional)."""
BYTES_PER_LOGIT = 10
"""bf16 logits (2) + their fp32 copy for the log-softmax (4) + the entropy's softmax or the logits' gradient (4)."""


@dataclass(frozen=True)
class Architecture:
    """What the estimate needs from a model's config.json."""

    hidden_size: int
    layers: int
    vocab_size: int
    intermediate_size: int
    """The MLP's width a token passes through: the dense MLP's, or its routed experts' together (MoE)."""
    attention_heads: int
    kv_heads: int
    head_dim: int
    tied_embeddings: bool
    experts: int = 0
    expert_intermediate_size: int = 0

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Architecture:
        text = config.get("text_config") or config
        hidden, heads = int(text["hidden_size"]), int(text["num_attention_heads"])
        experts = int(text.get("num_experts") or text.get("n_routed_experts") or 0)
        expert_width = int(text.get("moe_intermediate_size") or 0)
        routed = int(text.get("num_experts_per_tok") or 0)
        return cls(
            hidden_size=hidden,
            layers=int(text["num_hidden_layers"]),
            vocab_size=int(text["vocab_size"]),
            intermediate_size=routed * expert_width if experts else int(text["intermediate_size"]),
            attention_heads=heads,
            kv_heads=int(text.get("num_key_value_heads") or heads),
            head_dim=int(text.get("head_dim") or hidden // heads),
            tied_embeddings=bool(config.get("tie_word_embeddings", text.get("tie_word_embeddings", False))),
            experts=experts,
            expert_intermediate_size=expert_width,
        )

    @property
    def layer_parameters(self) -> int:
        h, q, kv = self.hidden_size, self.attention_heads * self.head_dim, self.kv_heads * self.head_dim
        attention = h * q + 2 * h * kv + q * h
        if self.experts:
            mlp = self.experts * 3 * h * self.expert_intermediate_size + h * self.experts
        else:
            mlp = 3 * h * self.intermediate_size
        return attention + mlp + 2 * h

    @property
    def parameters(self) -> int:
        embeddings = self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2)
        return self.layers * self.layer_parameters + embeddings


# The recipes' models, from their published config.json, for a machine that cannot fetch it (the dry run
# says when it used these).
KNOWN_ARCHITECTURES = {
    "Qwen/Qwen3-4B-Thinking-2507": Architecture(
        hidden_size=2560, layers=36, vocab_size=151936, intermediate_size=9728,
        attention_heads=32, kv_heads=8, head_dim=128, tied_embeddings=True,
    ),
    "Qwen/Qwen3-30B-A3B-Thinking-2507": Architecture(
        hidden_size=2048, layers=48, vocab_size=151936, intermediate_size=8 * 768,
        attention_heads=32, kv_heads=4, head_dim=128, tied_embeddings=False,
        experts=128, expert_intermediate_size=768,
    ),
}  # fmt: skip


def read_architecture(model_path: str) -> tuple[Architecture, str] | None:
    """The model's architecture and where it was read from; None when neither its config.json nor the
    table of known models has it."""
    local = Path(model_path).expanduser() / "config.json"
    if local.is_file():
        return Architecture.from_config(json.loads(local.read_text())), str(local)
    try:
        from huggingface_hub import hf_hub_download

        # The cache only: the dry run loaded the model's tokenizer (and its config.json) just before.
        cached = hf_hub_download(model_path, "config.json", local_files_only=True)
        return Architecture.from_config(json.loads(Path(cached).read_text())), f"{model_path}'s config.json"
    except Exception:  # not in the cache, not a repo name, no hub client: fall back to the table
        pass
    if model_path in KNOWN_ARCHITECTURES:
        return KNOWN_ARCHITECTURES[model_path], "gaia_train's table of the recipes' models"
    return None


@dataclass(frozen=True)
class ActorSetup:
    """The actor settings the estimate reads from verl's config."""

    gpus: int
    tokens_per_gpu: int
    """Tokens one GPU holds in the largest micro-batch (see the module's docstring)."""
    sequence_parallel: int
    fused_kernels: bool
    gradient_checkpointing: bool


@dataclass(frozen=True)
class MemoryEstimate:
    terms: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.terms.values())

    def table(self) -> str:
        rows = [f"  {name:<62}{bytes_ / GIB:>8.1f} GiB" for name, bytes_ in self.terms.items()]
        rows.append(f"  {'total per GPU':<62}{self.total / GIB:>8.1f} GiB")
        return "\n".join(rows)


def estimate(model: Architecture, actor: ActorSetup) -> MemoryEstimate:
    tokens, h = actor.tokens_per_gpu, model.hidden_size
    states = 16 * model.parameters // actor.gpus
    gathered = 2 * 2 * model.layer_parameters
    layer_working_set = tokens * (8 * h + 4 * model.intermediate_size) * 2
    if actor.gradient_checkpointing:
        activations = model.layers * tokens * h * 2 + layer_working_set
    else:
        activations = model.layers * layer_working_set
    head_tokens = min(tokens, FUSED_CHUNK_TOKENS) if actor.fused_kernels else tokens
    head = head_tokens * model.vocab_size * BYTES_PER_LOGIT
    return MemoryEstimate(
        {
            f"model states (16 B x {model.parameters / 1e9:.2f}B params / {actor.gpus} GPUs)": states,
            "two gathered layers (bf16)": gathered,
            f"activations ({tokens} tokens, {model.layers} layers)": activations,
            f"logits/log-softmax/entropy ({head_tokens} x {model.vocab_size})": head,
            "reserve (CUDA context, NCCL, fragmentation, rollout engine)": RESERVE_BYTES,
        }
    )
