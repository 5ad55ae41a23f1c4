"""One model on one's own machine (llmcourse.planner.own_machine): figures derived by hand."""

from __future__ import annotations

import pytest

import llmcourse as lc
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.planner.own_machine import gguf_type, longest_context, own_machine
from llmcourse.widgets.own_machine import own_machine_calculator


def test_llama_8b_q4_k_m_bytes_and_bound_by_hand():
    """Q4_K_M: 4.89 bits a weight; 8.03e9 x 4.89 / 8 = 4.908 GB; RTX 5090 1,792 GB/s / 4.908 GB = 365 tokens/s."""
    m = own_machine("Llama-3.1-8B", "RTX 5090", "Q4_K_M")
    assert m.weight_bytes.to("GB").m == pytest.approx(8.03e9 * 4.89 / 8 / 1e9)
    assert m.bound_tokens_per_s == pytest.approx(1792 / 4.9083375)
    assert m.fits and m.tokens_per_s < m.bound_tokens_per_s


def test_q8_0_is_8_5_bits():
    """Q8_0: 32 bytes of weights + a 2-byte scale per 32 weights = 8.5 bits; 8.03e9 x 8.5 / 8 = 8.532 GB."""
    assert own_machine("Llama-3.1-8B", "M3 Max", "q8_0").weight_bytes.to("GB").m == pytest.approx(8.531875)


def test_unified_memory_share_sets_what_the_gpu_may_use():
    """M3 Max: 64 GB, of which the GPU may use 0.75 = 48 GB; Llama-3.1-70B in Q4_K_M is 70.6e9 x 4.89 / 8 = 43.1 GB
    of weights, leaving too little of the 48 GB x the assumptions' share for a conversation."""
    m = own_machine("Llama-3.1-70B", "M3 Max", "q4_k_m")
    assert m.gpu_memory.to("GB").m == pytest.approx(48)
    assert not m.fits and "GB" in m.reason
    with pytest.raises(InputError, match="memory_share"):
        lc.gpus["M3 Max"].with_(memory_share=0)


def test_kv_at_a_context_by_hand_and_longest_context():
    """Llama-3.1-8B: 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 bytes = 131,072 B a token; 8,191 tokens held."""
    m = own_machine("Llama-3.1-8B", "RTX 5090", "q4_k_m", context=8_192)
    assert m.kv_bytes.to("B").m == pytest.approx(131_072 * 8_191, rel=1e-3)
    # weights 4.9 GB + 131,072 positions x 131 kB = 17.2 GB: all of the model's positions fit in 32 GB
    assert m.longest_context == 131_072
    # a longest context is one that fits, and one token more does not
    n = longest_context("Gemma-3-27B", "RTX 5090", "q8_0")
    assert 0 < n < 131_072


def test_sliding_windows_keep_gemma_3_kv_small():
    """Gemma 3 27B: 62 layers, 1 in 6 global; at 131,072 tokens its cache is far below 62 global layers' worth."""
    g = lc.models["Gemma-3-27B"]
    full = 2 * g.layers * g.kv_heads * g.head_dim * 2 * 131_071  # every layer global
    m = own_machine("Gemma-3-27B", "M3 Max", "q4_k_m", context=131_072)
    assert m.kv_bytes.to("B").m < full / 4


def test_bad_names_say_did_you_mean():
    with pytest.raises(UnknownNameError, match=r"did you mean 'q4_k_m'"):
        gguf_type("q4_km")
    with pytest.raises(UnknownNameError, match=r"(?i)did you mean"):
        own_machine("Llama-3.1-8B", "RTX 5900", "q4_k_m")
    with pytest.raises(UnknownNameError, match=r"(?i)did you mean"):
        own_machine("Lama-3.1-8B", "RTX 5090", "q4_k_m")
    with pytest.raises(InputError, match="context"):
        own_machine("Llama-3.1-8B", "RTX 5090", "q4_k_m", context=10**7)


def test_calculator_answers_and_shows_errors():
    c = own_machine_calculator()
    rows = dict(c.rows)
    assert rows["fits"] == "yes" and "75% of 64 GB" in rows["memory the GPU may use"]
    assert dict(c.set(gpu="RTX 5090").rows)["memory the GPU may use"] == "32.0 GB"
    c.set(context=10**7)
    assert c.rows == [] or all("context" not in k for k, _ in c.rows)
