"""One model on one's own machine (llmcourse.planner.own_machine): figures derived by hand."""

from __future__ import annotations

import pytest

import llmcourse as lc
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.planner.own_machine import gguf_type, longest_context, own_machine
from llmcourse.replica.model import replica
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
    """M3 Max: 64 GiB, of which macOS lets the GPU use 0.75 = 48 GiB (Metal's recommendedMaxWorkingSetSize, 49,152
    MiB) = 48 x 2^30 = 51.54e9 B; llama.cpp keeps 0.25 GiB for its compute buffers and 1 GiB of --fit margin (Metal:
    no CUDA context): 46.75 GiB = 50.20e9 B left."""
    m = own_machine("Llama-3.1-70B", "M3 Max", "q4_k_m")
    assert m.gpu_memory.to("B").m == pytest.approx(48 * 2**30)
    assert m.usable.to("B").m == pytest.approx(46.75 * 2**30)
    with pytest.raises(InputError, match="memory_share"):
        lc.gpus["M3 Max"].with_(memory_share=0)


def test_llama_3_1_70b_q4_k_m_fits_a_64_gb_m3_max():
    """Weights: 70.554e9 parameters x 4.89 / 8 = 43.126e9 B. KV: 2 x 80 layers x
    8 KV heads x 128 x 2 B = 327,680 B a token. Usable: 46.75 x 2^30 = 50.197e9 B. Left for KV: 50.197e9 - 43.126e9 =
    7.071e9 B = 21,580 tokens of 327,680 B (an 8,192-token conversation takes 2.68e9 B: it fits)."""
    m = own_machine("Llama-3.1-70B", "M3 Max", "q4_k_m", context=8_192)
    assert m.fits, m.reason
    assert m.weight_bytes.to("B").m == pytest.approx(43.126e9, rel=1e-3)
    assert m.longest_context == pytest.approx(21_580, abs=30)


def test_qwen3_32b_q4_k_m_fits_a_24_gb_rtx_4090():
    """Usable: 24 GiB - 0.5 (CUDA context) - 1 (--fit margin) - the compute buffers: the logits of one ubatch, 512
    x 151,936 (Qwen3's vocabulary) x 4 B = 311.16e6 B, more than the 0.25 GiB allowance, so 24 x 2^30 - 1.5 x 2^30 -
    311.16e6 = 23.848e9 B. Weights: 32.76e9 x 4.89 / 8 = 20.025e9 B. KV: 2 x 64 layers x 8 KV heads x 128 x 2 B =
    262,144 B a token. Left: 3.823e9 B = 14,585 tokens (8,192 take 2.15e9 B: it fits)."""
    m = own_machine("Qwen3-32B", "RTX 4090", "q4_k_m", context=8_192)
    assert m.fits, m.reason
    assert m.usable.to("B").m == pytest.approx(22.5 * 2**30 - 512 * 151_936 * 4)
    assert m.longest_context == pytest.approx(14_585, abs=30)


def test_gemma_3_27b_q8_0_fits_an_rtx_5090_with_tens_of_thousands_of_tokens():
    """Usable: 32 GiB - 0.5 (CUDA context) - 1 (--fit margin) - the compute buffers, the logits of one ubatch over
    Gemma 3's 262,208-token vocabulary, 512 x 262,208 x 4 B = 536.8e6 B (more than the 0.25 GiB allowance) =
    32.212e9 B. Weights: 27.01e9 x 8.5 / 8 = 28.698e9 B: 3.514e9 B left, 428,979 cell-layers of 8,192 B.
    Gemma 3 27B keeps 2 x 16 KV heads x 128 x 2 B = 8,192 B a token a layer; 10 of its 62 layers are global (every
    token), 52 slide a 1,024-token window, which llama.cpp's cache holds for each sequence sharing it, with one
    ubatch more: GGML_PAD(n_swa x n_seq + n_ubatch, 256) (llama_kv_cache_iswa, src/llama-kv-cache-iswa.cpp).
    llama-server's default runs 4 slots sharing one cache (its "auto" --parallel, tools/server/server.cpp):
    GGML_PAD(4 x 1,024 + 512, 256) = 4,608 cells; llama-cli and llama-bench run one sequence: 1,536 cells.
    At T tokens: 8,192 x (10 T + 52 x cells) B, so the longest T is (428,979 - 52 x cells) / 10: 18,936 tokens under
    llama-server, 34,911 with one sequence. Out of bounds: the course's figure before the CUDA context and compute
    buffers were counted (50,680), the one with a 0.9 GiB CUDA context (35,605), the one with a window of 1,024
    cells (40,851) and the one with the 0.25 GiB allowance for Gemma's compute buffers (22,212 and 38,187)."""
    m = own_machine("Gemma-3-27B", "RTX 5090", "q8_0", context=8_192)
    assert m.fits, m.reason
    assert m.slots == 4
    assert m.kv_bytes.to("B").m == pytest.approx(8_192 * (10 * 8_192 + 52 * 4_608))
    assert m.longest_context == pytest.approx(18_936, abs=30)
    one = own_machine("Gemma-3-27B", "RTX 5090", "q8_0", context=8_192, slots=1)
    assert one.kv_bytes.to("B").m == pytest.approx(8_192 * (10 * 8_192 + 52 * 1_536))
    assert one.longest_context == pytest.approx(34_911, abs=30)
    assert 33_000 < one.longest_context < 36_500
    # a datacenter engine's sliding window holds the window alone: 8,192 x (10 x 8,192 + 52 x 1,024) B
    vllm = replica("Gemma-3-27B", "RTX 5090", batch=1, prompt_tokens=8_191, answer_tokens=1, weight_bytes="q8_0")
    assert vllm.kv_per_sequence.to("B").m == pytest.approx(8_192 * (10 * 8_192 + 52 * 1_024))


def test_a_display_takes_its_gib_from_the_conversation_by_hand():
    """The same card driving a display that takes 1.5 GiB: 1.5 x 2^30 / 8,192 = 196,608 cell-layers fewer, 232,371
    left. With one sequence (1,536 cells) the longest T is (232,371 - 52 x 1,536) / 10 = 15,250 tokens. Under
    llama-server's 4 slots, (232,371 - 52 x 4,608) / 10 would be below zero, and the context bounds the window
    cache (llama.cpp's min(n_ctx, ...)): all 62 layers hold T, 232,371 / 62 = 3,748."""
    server = own_machine("Gemma-3-27B", "RTX 5090", "q8_0", display_gib=1.5)
    one = own_machine("Gemma-3-27B", "RTX 5090", "q8_0", display_gib=1.5, slots=1)
    assert server.longest_context == pytest.approx(3_748, abs=30)
    assert one.longest_context == pytest.approx(15_250, abs=30)
    headless = own_machine("Gemma-3-27B", "RTX 5090", "q8_0")
    assert (headless.usable - server.usable).to("GiB").m == pytest.approx(1.5)


@pytest.mark.parametrize("bad", [-0.5, float("nan"), float("inf"), "1", True])
def test_display_gib_out_of_range_is_refused_by_name(bad):
    with pytest.raises(InputError, match="display_gib"):
        own_machine("Gemma-3-27B", "RTX 5090", "q8_0", display_gib=bad)


def test_display_gib_on_unified_memory_is_refused():
    with pytest.raises(InputError, match="shares its memory"):
        own_machine("Llama-3.1-8B", "M3 Max", "q4_k_m", display_gib=1.0)


@pytest.mark.parametrize("slots", [0, -1, 2.5, True, "4"])
def test_slots_out_of_range_are_refused_by_name(slots):
    with pytest.raises(InputError, match="slots"):
        own_machine("Gemma-3-27B", "RTX 5090", "q8_0", slots=slots)


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
    assert (
        rows["fits"] == "yes, with llama.cpp's --fit margin"
        and rows["memory the GPU may use"] == "48.0 GiB = 51.5 GB (75% of 64 GiB unified memory)"
    )
    assert rows["left for weights and KV cache"] == "50.2 GB"  # 46.75 GiB: llama.cpp keeps 0.25 + 1 GiB
    assert dict(c.set(gpu="RTX 5090").rows)["memory the GPU may use"] == "32.0 GiB = 34.4 GB"
    c.set(context=10**7)
    assert c.rows == [] or all("context" not in k for k, _ in c.rows)


def test_three_verdicts_by_hand():
    """M1 8GB: Metal lets the GPU use 0.667 x 8 GiB = 5.336 GiB. Llama-3.1-8B Q4_K_M: 8.03e9 x 4.89 / 8 = 4.908e9 B =
    4.571 GiB, plus 511 x 131,072 B = 0.0624 GiB of KV: 4.633 GiB. With the margin: 5.336 - 0.25 - 1 = 4.086 GiB (no);
    without it: 5.086 GiB (yes): inside the margin, where the longest context is (5.086 - 4.571) x 2^30 / 131,072 =
    4,219 tokens. Llama-3.1-70B Q4_K_M (43.1e9 B = 40.2 GiB) on the same Mac does not fit at all."""
    m = own_machine("Llama-3.1-8B", "M1 8GB", "q4_k_m", context=512)
    assert (m.verdict, m.fits) == ("inside margin", False)
    assert m.longest_context_no_margin == pytest.approx(4_219, abs=5)
    assert "--fit off -ngl 99" in dict(m.rows())["fits"]
    assert own_machine("Llama-3.1-8B", "RTX 5090", "q4_k_m").verdict == "fits"
    assert own_machine("Llama-3.1-70B", "M1 8GB", "q4_k_m", context=512).verdict == "does not fit"
