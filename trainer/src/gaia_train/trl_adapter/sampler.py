"""Generation on the trainer's own model for TRL rollouts: plain sampling with the KV cache.

The CPU path's sampler (no vLLM): one sequence at a time, returning the log-probs GRPO compares with.
"""

from __future__ import annotations

import torch


@torch.no_grad()
def sample(
    model: torch.nn.Module,
    prompt_ids: list[int],
    max_new_tokens: int,
    eos_token_id: int,
    temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> tuple[list[int], list[float]]:
    """Sample up to `max_new_tokens` ids after `prompt_ids` (KV cache); the ids and their log-probs.

    The log-probs are those of the distribution sampled from (logits / temperature), the ones
    GRPO's ratio compares with.
    """
    ids: list[int] = []
    logprobs: list[float] = []
    inputs = torch.tensor([prompt_ids])
    past = None
    for _ in range(max_new_tokens):
        out = model(input_ids=inputs, past_key_values=past, use_cache=True)
        past = out.past_key_values
        logp = torch.log_softmax(out.logits[0, -1].float() / temperature, dim=-1)
        token = int(torch.multinomial(logp.exp(), 1, generator=generator))
        ids.append(token)
        logprobs.append(float(logp[token]))
        if token == eos_token_id:
            break
        inputs = torch.tensor([[token]])
    return ids, logprobs
