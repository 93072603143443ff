"""The actor's memory estimate per GPU: the terms, the recipes' models, and what fits in 80 GB."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gaia_train.verl_adapter.memory import (
    GIB,
    KNOWN_ARCHITECTURES,
    ActorSetup,
    Architecture,
    estimate,
    read_architecture,
)

QWEN3_4B = KNOWN_ARCHITECTURES["Qwen/Qwen3-4B-Thinking-2507"]
QWEN3_30B_A3B = KNOWN_ARCHITECTURES["Qwen/Qwen3-30B-A3B-Thinking-2507"]


def setup(gpus: int, tokens: int, *, sp: int = 1, fused: bool = False) -> ActorSetup:
    return ActorSetup(
        gpus=gpus,
        tokens_per_gpu=tokens,
        sequence_parallel=sp,
        fused_kernels=fused,
        gradient_checkpointing=True,
    )


def test_parameter_counts_match_the_published_models() -> None:
    assert QWEN3_4B.parameters / 1e9 == pytest.approx(4.02, abs=0.01)
    assert QWEN3_30B_A3B.parameters / 1e9 == pytest.approx(30.5, abs=0.1)


def test_architecture_reads_a_config_json(tmp_path: Path) -> None:
    moe = {
        "hidden_size": 2048, "num_hidden_layers": 48, "vocab_size": 151936, "intermediate_size": 6144,
        "moe_intermediate_size": 768, "num_experts": 128, "num_experts_per_tok": 8,
        "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128, "tie_word_embeddings": False,
    }  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(moe))
    architecture, source = read_architecture(str(tmp_path))
    assert architecture == QWEN3_30B_A3B and source == str(tmp_path / "config.json")
    assert read_architecture(str(tmp_path / "nowhere")) is None


def test_unfused_logits_of_a_whole_131k_sequence_do_not_fit_80_gb() -> None:
    # The point 4: 131,072 tokens x 151,936 entries, bf16 logits + fp32 log-softmax + softmax.
    old = estimate(QWEN3_4B, setup(8, 131072))
    logits = next(v for k, v in old.terms.items() if k.startswith("logits"))
    assert logits == 131072 * 151936 * 10
    assert logits / GIB == pytest.approx(185.5, abs=0.1) and old.total > 80 * GIB


@pytest.mark.parametrize(
    ("model", "gpus", "expected_gib"), [(QWEN3_4B, 8, 23.8), (QWEN3_30B_A3B, 16, 46.0)], ids=["4b", "30b-a3b"]
)
def test_the_recipes_defaults_fit_80_gb(model: Architecture, gpus: int, expected_gib: float) -> None:
    # run.sh and the 30B script: 4-way sequence parallelism, 32,768 tokens per GPU, fused kernels.
    fitted = estimate(model, setup(gpus, 131072 // 4, sp=4, fused=True))
    assert fitted.total / GIB == pytest.approx(expected_gib, abs=0.1) and fitted.total < 80 * GIB
    assert "total per GPU" in fitted.table()


def test_each_lever_lowers_the_estimate() -> None:
    base = estimate(QWEN3_4B, setup(8, 32768)).total
    assert estimate(QWEN3_4B, setup(8, 32768, fused=True)).total < base
    assert estimate(QWEN3_4B, setup(8, 16384)).total < base
    assert estimate(QWEN3_4B, setup(16, 32768)).total < base
    unchecked = ActorSetup(gpus=8, tokens_per_gpu=32768, sequence_parallel=1, fused_kernels=False,
                           gradient_checkpointing=False)  # fmt: skip
    assert estimate(QWEN3_4B, unchecked).total > base
