"""Guards against the bug public KV-cache calculators most often have: 2 x layers x hidden x bytes.

That formula ignores the KV heads (right only without GQA) and derives the head size from
hidden / heads (wrong when the config gives head_dim). Expected values are hand arithmetic
from the published configs.
"""

from __future__ import annotations

import pytest

import llmcourse as lc
from llmcourse import Model

# GQA models whose KV width differs from the hidden size (in Qwen3-0.6B, 8 KV heads x 128 happen to equal its hidden
# 1,024, so the wrong formula would give the right number there and could not be caught)
GQA_MODELS = [n for n, m in lc.models.items() if m.attention in ("GQA", "MQA") and m.kv_heads * m.head_dim != m.hidden]


def test_catalog_has_gqa_models():
    """The guard below is not vacuous: the catalog holds many GQA models."""
    assert len(GQA_MODELS) >= 8


@pytest.mark.parametrize("name", GQA_MODELS)
def test_kv_is_not_from_hidden_size(name):
    """For every GQA model: KV/token = 2 L H_kv d_head b, and not 2 L hidden b."""
    m = lc.models[name]
    got = lc.kv_bytes_per_token(m).to("B").m
    kept = m.layers - (m.linear_layers or 0)  # a linear-attention layer keeps a fixed state, not each token
    assert got == 2 * kept * m.kv_heads * m.head_dim * 2
    assert got != 2 * kept * m.hidden * 2


@pytest.mark.parametrize(
    ("name", "right", "wrong"),
    [
        ("Llama-3.1-8B", 2 * 32 * 8 * 128 * 2, 2 * 32 * 4096 * 2),  # 128 KiB, not 512 KiB
        ("Qwen2.5-72B", 2 * 80 * 8 * 128 * 2, 2 * 80 * 8192 * 2),  # 320 KiB, not 2.5 MiB
        ("Mistral-7B-v0.1", 2 * 32 * 8 * 128 * 2, 2 * 32 * 4096 * 2),  # head_dim 128 in config
        ("Qwen3-30B-A3B", 2 * 48 * 4 * 128 * 2, 2 * 48 * 2048 * 2),  # head_dim 128, hidden/heads = 64
        ("Qwen3-235B-A22B", 2 * 94 * 4 * 128 * 2, 2 * 94 * 4096 * 2),  # head_dim 128, hidden/heads = 64
        ("gpt-oss-120b", 2 * 36 * 8 * 64 * 2, 2 * 36 * 2880 * 2),  # head_dim 64, hidden/heads = 45
    ],
)
def test_hand_values(name, right, wrong):
    """KV per token equals the hand value from the config and differs from the hidden-size value."""
    got = lc.kv_bytes_per_token(name).to("B").m
    assert got == right != wrong


@pytest.mark.parametrize("name", ["Mistral-7B-v0.1", "Qwen3-30B-A3B", "Qwen3-235B-A22B"])
def test_head_dim_from_config(name):
    """head_dim is the config's value (128), not hidden / heads."""
    m = lc.models[name]
    assert m.head_dim == 128
    if name.startswith("Qwen3"):
        assert m.hidden // m.heads == 64


def test_head_dim_read_from_hf_config():
    """A Qwen3-30B-A3B-shaped config.json: head_dim 128 is read, so KV = 2 x 48 x 4 x 128 x 2 = 98,304 B."""
    cfg = {
        "num_hidden_layers": 48,
        "hidden_size": 2048,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "head_dim": 128,
        "intermediate_size": 6144,
        "vocab_size": 151936,
    }
    m = Model.from_hf_config(cfg, name="qwen3-like")
    assert lc.kv_bytes_per_token(m).to("B").m == 98_304


def test_mha_model_equals_hidden_formula():
    """Without GQA (Llama 2 7B) the two formulas agree: 2 x 32 x 4,096 x 2 = 524,288 B = 512 KiB."""
    assert lc.kv_bytes_per_token("Llama-2-7B").to("B").m == 2 * 32 * 4096 * 2 == 524_288


def test_mla_is_the_latent():
    """DeepSeek-V3 (MLA) caches 61 x (512 + 64) x 2 = 70,272 B, not 2 x 61 x 128 x 128 x 2."""
    got = lc.kv_bytes_per_token("DeepSeek-V3").to("B").m
    assert got == 70_272 != 2 * 61 * 128 * 128 * 2


def test_demonstration_of_the_bug_function():
    """The chapter's deliberately wrong formula gives 2 x 32 x 4,096 x 2 = 512 KiB for Llama 3.1 8B."""
    from llmcourse.planner.memory import hidden_size_kv_bytes_per_token

    assert hidden_size_kv_bytes_per_token("Llama-3.1-8B").to("B").m == 524_288
