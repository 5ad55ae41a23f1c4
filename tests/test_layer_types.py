"""The KV cache and attention FLOPs by layer type, against hand arithmetic from the published configs.

Full attention keeps every token; a sliding-window layer the last w; a chunked layer (Llama 4) at most a chunk; a
linear-attention layer a fixed state; a sparse-attention layer (GLM-5) keeps every latent and reads the selected
ones. The expected values are worked out in the comments, never by the code under test.
"""

from __future__ import annotations

import math

import pytest

import llmcourse as lc
from llmcourse import Model
from llmcourse.formulas import FORMULAS
from llmcourse.replica.attention import decode_attention_flops_si, kv_read_si, prefill_attention_flops_si
from tests.test_hf_config import GEMMA_3_27B, LLAMA, LLAMA_4_SCOUT


def _bytes(q) -> float:
    return q.to("B").m


def test_gpt_oss_alternates_windows_of_128_with_full_layers():
    # gpt-oss-120b: 36 layers, 18 sliding (window 128) + 18 full; 8 KV heads x 64 dims; BF16.
    # One layer, one token: 2 (K and V) x 8 x 64 x 2 B = 2,048 B; per token (every layer holds it): 36 x 2,048 = 73,728.
    m = lc.models["gpt-oss-120b"]
    assert _bytes(lc.kv_bytes_per_token(m)) == 73_728
    # 8,192 tokens: 18 x 2,048 x 8,192 = 301,989,888 (full) + 18 x 2,048 x 128 = 4,718,592 (windows) = 306,708,480 B
    assert _bytes(lc.kv_bytes_per_sequence(m, 8_192)) == 306_708_480
    # 100 tokens, inside the window: every layer holds all of them: 73,728 x 100 = 7,372,800 B
    assert _bytes(lc.kv_bytes_per_sequence(m, 100)) == 7_372_800


def test_gemma_3_five_local_to_one_global():
    # Gemma 3 27B: 62 layers, sliding_window_pattern 6 -> 62 // 6 = 10 global, 52 local of 1,024 tokens;
    # 16 KV heads x 128: 2 x 16 x 128 x 2 B = 8,192 B per layer per token.
    # 32,768 tokens: 10 x 8,192 x 32,768 = 2,684,354,560 + 52 x 8,192 x 1,024 = 436,207,616 -> 3,120,562,176 B
    m = Model.from_hf_config(GEMMA_3_27B)
    assert m.layer_types["sliding"] == 52 and m.layer_types["full"] == 10
    assert _bytes(lc.kv_bytes_per_sequence(m, 32_768)) == 3_120_562_176


def test_qwen35_linear_attention_keeps_a_fixed_state():
    # Qwen3.5-397B-A17B: 15 full layers of 2 KV heads x 256: 15 x 2 x 2 x 256 x 2 B = 30,720 B per token.
    # 45 Gated DeltaNet layers: conv 3 tokens x (2 x 16 x 128 + 64 x 128) = 36,864 values x 2 B = 73,728 B, and a
    # 64 x 128 x 128 FP32 state = 4,194,304 B; per layer 4,268,032 B, x 45 = 192,061,440 B (reference/models-more.md).
    m = lc.models["Qwen3.5-397B-A17B"]
    assert _bytes(lc.kv_bytes_per_token(m)) == 30_720
    state = 192_061_440
    # 8,192 tokens: 30,720 x 8,192 = 251,658,240 + 192,061,440 = 443,719,680 B; 1 token: 30,720 + 192,061,440.
    assert _bytes(lc.kv_bytes_per_sequence(m, 8_192)) == 443_719_680
    assert _bytes(lc.kv_bytes_per_sequence(m, 1)) == 30_720 + state
    # the state does not grow: the difference between two lengths is the full layers' tokens only
    diff = _bytes(lc.kv_bytes_per_sequence(m, 16_384)) - _bytes(lc.kv_bytes_per_sequence(m, 8_192))
    assert diff == 30_720 * 8_192


def test_lightning_attention_state_from_a_minimax_style_config():
    # attn_type_list 0 = lightning (linear) attention: Llama-3.1-8B's shape with 28 of 32 layers linear.
    # Each linear layer keeps 32 heads x 128 x 128 values (no convolution): 524,288 values x 2 B = 1,048,576 B;
    # x 28 = 29,360,128 B. The 4 softmax layers: 2 x 8 x 128 x 2 B = 4,096 B per layer per token -> 16,384 B.
    m = Model.from_hf_config(LLAMA | {"attn_type_list": ([0] * 7 + [1]) * 4})
    assert m.layer_types["linear"] == 28 and m.linear_conv == 0
    assert _bytes(lc.kv_bytes_per_sequence(m, 1_000)) == 16_384 * 1_000 + 29_360_128


def test_llama_4_chunked_attention_keeps_at_most_a_chunk():
    # Llama 4 Scout: 48 layers, every 4th global (12), 36 attend within 8,192-token chunks; 8 KV heads x 128:
    # 4,096 B per layer per token (reference/models-more.md). 32,768 tokens:
    # 12 x 4,096 x 32,768 = 1,610,612,736 + 36 x 4,096 x 8,192 = 1,207,959,552 -> 2,818,572,288 B
    m = Model.from_hf_config(LLAMA_4_SCOUT)
    assert _bytes(lc.kv_bytes_per_sequence(m, 32_768)) == 2_818_572_288


def test_glm5_sparse_attention_holds_every_latent_and_reads_the_selected():
    # GLM-5: 78 sparse MLA layers; latent (512 + 64) x 2 B = 1,152 B per layer per token; the indexer's key
    # 128 FP8 values + one FP32 scale = 132 B (vLLM's indexer cache). Per token: 78 x (1,152 + 132) = 100,152 B.
    m = lc.models["GLM-5"]
    assert _bytes(lc.kv_bytes_per_token(m)) == 100_152
    # held at 32,768 tokens: 100,152 x 32,768 = 3,281,780,736 B
    assert _bytes(lc.kv_bytes_per_sequence(m, 32_768)) == 3_281_780_736
    # read by a decode step: every indexer key, 78 x 132 x 32,768 = 337,379,328, and 2,048 latents,
    # 78 x 1,152 x 2,048 = 184,025,088 -> 521,404,416 B
    assert kv_read_si(m, 32_768, 2.0) == 521_404_416
    # up to 2,048 tokens it reads all it holds
    assert kv_read_si(m, 2_000, 2.0) == _bytes(lc.kv_bytes_per_sequence(m, 2_000)) == 100_152 * 2_000


def test_the_printed_formula_is_the_sum_by_layer_type():
    """kv_bytes_per_sequence's number is the formula shown beside it: the per-layer-type sum, not kappa x T."""
    f = FORMULAS["kv_bytes_by_layer_type"]
    assert r"\min\left(T_{ctx}, w\right)" in f.latex() and "S_{lin}" in f.latex()
    m = lc.models["gpt-oss-120b"]
    # the formula by hand: kappa_full = 18 x 2,048 = 36,864 B; kappa_win the same; w = 128
    by_hand = f.value(kv_full_per_token=36_864, kv_window_per_token=36_864, kv_chunk_per_token=0,
                      kv_selected_per_token=0, linear_state=0, context=8_192, window=128, chunk=1, top_k_tokens=1)  # fmt: skip
    assert by_hand == _bytes(lc.kv_bytes_per_sequence(m, 8_192)) == 306_708_480
    # and the batch that fits follows it: (usable - weights) / 306,708,480 B
    usable, w = lc.usable_memory("H100 SXM").to("B").m, lc.weight_bytes(m, "mxfp4").to("B").m
    assert lc.max_batch(m, "H100 SXM", 8_192, weight_bytes="mxfp4") == math.floor((usable - w) / 306_708_480)


def test_mla_without_the_latent_is_192_wide_keys_and_128_wide_values():
    # DeepSeek-V3 with 128 full KV heads: 61 x 128 x (192 + 128) x 2 B = 4,997,120 B = 4.77 MiB per token,
    # 71x the latent's 61 x (512 + 64) x 2 = 70,272 B.
    ds = lc.models["DeepSeek-V3"]
    full = FORMULAS["kv_bytes_per_token_widths"].value(
        layers=ds.layers, kv_heads=ds.heads, qk_dim=ds.qk_head_dim, v_dim=ds.head_dim, kv_bytes=2.0
    )
    assert full == 4_997_120 and round(full / 2**20, 2) == 4.77
    assert round(full / _bytes(lc.kv_bytes_per_token(ds))) == 71


def test_mla_prefill_attention_uses_192_wide_scores():
    # Causal prefill of T tokens: QK and AV over T^2 / 2 pairs per layer, 2 FLOPs per multiply-add:
    # 2 x 128 heads x (192 + 128) x 61 layers x T^2 / 2. T = 1,000: 2,498,560,000,000 FLOPs,
    # 1.25x the 2 x 61 x 128 x 128 x T^2 = 1,998,848,000,000 of 128-wide keys.
    ds = lc.models["DeepSeek-V3"]
    got = prefill_attention_flops_si(ds, 1_000, 2.0)
    assert got == 2 * 128 * 320 * 61 * 1_000**2 / 2 == 2_498_560_000_000
    assert got / (2 * 61 * 128 * 128 * 1_000**2) == pytest.approx(1.25)


def test_decode_attention_flops_follow_the_layer_types():
    # gpt-oss-120b at 8,192 tokens: 64 query heads x (64 + 64) x 2 FLOPs x (18 x 8,192 + 18 x 128) tokens
    # = 16,384 x 149,760 = 2,453,667,840 FLOPs per token
    assert decode_attention_flops_si(lc.models["gpt-oss-120b"], 8_192, 2.0) == 2_453_667_840
    # MLA decode works on the latent (absorbed): 128 heads x (576 + 512) x 2 x 61 x 1,000 = 16,990,208,000
    assert decode_attention_flops_si(lc.models["DeepSeek-V3"], 1_000, 2.0) == 16_990_208_000
