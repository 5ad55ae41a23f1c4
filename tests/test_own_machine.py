"""One model on one's own machine (llmcourse.planner.own_machine): figures derived by hand."""

from __future__ import annotations

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import llmcourse as lc
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.planner.own_machine import gguf_type, longest_context, own_machine
from llmcourse.replica.memory import WindowPool
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
    7.071e9 B = 21,580 tokens of 327,680 B (an 8,192-token conversation takes 2.68e9 B: it fits). llama.cpp pads the
    context it allocates to a multiple of 256 (src/llama-context.cpp), so the longest -c that fits is 84 x 256 = 21,504."""
    m = own_machine("Llama-3.1-70B", "M3 Max", "q4_k_m", context=8_192)
    assert m.fits, m.reason
    assert m.weight_bytes.to("B").m == pytest.approx(43.126e9, rel=1e-3)
    assert m.longest_context == 21_504  # 21,580 rounded down to a multiple of 256


def test_qwen3_32b_q4_k_m_fits_a_24_gb_rtx_4090():
    """Usable: 24 GiB - 0.5 (CUDA context) - 1 (--fit margin) - the compute buffers: the logits of one ubatch, 512
    x 151,936 (Qwen3's vocabulary) x 4 B = 311.16e6 B, more than the 0.25 GiB allowance, so 24 x 2^30 - 1.5 x 2^30 -
    311.16e6 = 23.848e9 B. Weights: 32.76e9 x 4.89 / 8 = 20.025e9 B. KV: 2 x 64 layers x 8 KV heads x 128 x 2 B =
    262,144 B a token. Left: 3.823e9 B = 14,585 tokens (8,192 take 2.15e9 B: it fits): 56 x 256 = 14,336 as padded."""
    m = own_machine("Qwen3-32B", "RTX 4090", "q4_k_m", context=8_192)
    assert m.fits, m.reason
    assert m.usable.to("B").m == pytest.approx(22.5 * 2**30 - 512 * 151_936 * 4)
    assert m.longest_context == 14_336


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
    llama-server, 34,911 with one sequence; as -c, which llama.cpp pads to a multiple of 256, 18,688 and 34,816. Out of bounds: the course's figure before the CUDA context and compute
    buffers were counted (50,680), the one with a 0.9 GiB CUDA context (35,605), the one with a window of 1,024
    cells (40,851) and the one with the 0.25 GiB allowance for Gemma's compute buffers (22,212 and 38,187)."""
    m = own_machine("Gemma-3-27B", "RTX 5090", "q8_0", context=8_192)
    assert m.fits, m.reason
    assert m.slots == 4
    assert m.kv_bytes.to("B").m == pytest.approx(8_192 * (10 * 8_192 + 52 * 4_608))
    assert m.longest_context == 18_688
    one = own_machine("Gemma-3-27B", "RTX 5090", "q8_0", context=8_192, slots=1)
    assert one.kv_bytes.to("B").m == pytest.approx(8_192 * (10 * 8_192 + 52 * 1_536))
    assert one.longest_context == 34_816
    assert 33_000 < one.longest_context < 36_500
    # a datacenter engine's sliding window holds the window alone: 8,192 x (10 x 8,192 + 52 x 1,024) B
    vllm = replica("Gemma-3-27B", "RTX 5090", batch=1, prompt_tokens=8_191, answer_tokens=1, weight_bytes="q8_0")
    assert vllm.kv_per_sequence.to("B").m == pytest.approx(8_192 * (10 * 8_192 + 52 * 1_024))


def test_a_batch_under_llama_server_shares_one_window_cache_by_hand():
    """Requests of 3,000 + 500 tokens of Gemma 3 27B Q8_0 on an RTX 5090 under llama-server (4 slots): its
    sliding-window layers keep one cache the slots share, allocated at start-up, of GGML_PAD(4 x 1,024 + 512, 256) =
    4,608 cells, at most the context the server starts with (n_ctx: 3,500 for one request, 14,000 for four);
    52 x 8,192 = 425,984 B a cell. Each request adds its 10 global layers' 10 x 8,192 x 3,500 = 286.72e6 B.
    Usable (as above) 32.212e9 B, weights 28.698e9 B, 3.514e9 B left: four requests hold 4 x 286.72e6 + 4,608 x
    425,984 = 3.110e9 B (it fits; a fifth, 3.397e9 B, would too, but llama-server runs four). Charging each request
    the whole cache, as one conversation alone holds it, fitted one: 286.72e6 + 1.963e9 = 2.250e9 B a request."""
    r = replica(
        "Gemma-3-27B", "RTX 5090", prompt_tokens=3_000, answer_tokens=500, weight_bytes="q8_0", engine="llama.cpp"
    )
    assert r.kv_per_sequence.to("B").m == pytest.approx(10 * 8_192 * 3_500)
    assert r.usable_memory.to("B").m == pytest.approx(32.212e9, rel=1e-4)
    assert r.max_batch == 4 and r.fits
    assert r.kv_in_use.to("B").m == pytest.approx(4 * 10 * 8_192 * 3_500 + 4_608 * 425_984)
    assert r.memory_used.to("B").m == pytest.approx(28.698e9 + 3.110e9, rel=1e-3)
    one = replica(
        "Gemma-3-27B", "RTX 5090", batch=1, prompt_tokens=3_000, answer_tokens=500, weight_bytes="q8_0",
        engine="llama.cpp",
    )  # fmt: skip
    assert one.kv_in_use.to("B").m == pytest.approx(3_500 * (10 + 52) * 8_192)  # the context bounds the cache
    # a card with 2.5 GB left after the weights: four requests need 3.110e9 B, the cache bounded by the context
    # leaves room for (2.5e9) / (286.72e6 + 3,500 x 425,984) = 1; the whole cache, (2.5e9 - 1.963e9) / 286.72e6 = 1
    pool = WindowPool(4_608, 425_984.0, 4)
    assert pool.max_batch(28.698e9 + 2.5e9, 28.698e9, 286.72e6, 3_500) == 1
    assert pool.max_batch(28.698e9 + 3.2e9, 28.698e9, 286.72e6, 3_500) == 4  # (3.2e9 - 1.963e9) / 286.72e6


def test_a_context_is_allocated_padded_to_256_by_hand():
    """llama.cpp pads the context it allocates up to a multiple of 256 (cparams.n_ctx = GGML_PAD(n_ctx, 256)): Gemma 3
    27B at -c 3500 holds 3,584 cells in each of its 62 layers (below the 4,608 of the window cache, which the context
    bounds): 3,584 x 62 x 8,192 B = 1.8203e9 B, not 3,500 x 62 x 8,192 = 1.7777e9 B. The longest context is a
    multiple of 256: it fits as -c, and 256 tokens more do not."""
    m = own_machine("Gemma-3-27B", "RTX 5090", "q8_0", context=3_500)
    assert m.kv_bytes.to("B").m == pytest.approx(3_584 * 62 * 8_192)
    assert "as allocated: 3,584 tokens" in dict(m.rows())["KV cache at 3,500 tokens"]
    n = m.longest_context
    at, past = (own_machine("Gemma-3-27B", "RTX 5090", "q8_0", context=c) for c in (n, n + 1))  # n + 1: n + 256 cells
    assert n % 256 == 0 and at.fits and at.verdict == "fits" and not past.fits and past.verdict != "fits"
    assert dict(past.rows())["fits"] != "yes, with llama.cpp's --fit margin"
    # inside the margin, the same: the longest -c without it runs there, one token more does not
    bare = m.longest_context_no_margin
    assert bare % 256 == 0 and bare > n
    edge, over = (own_machine("Gemma-3-27B", "RTX 5090", "q8_0", context=c) for c in (bare, bare + 1))
    assert (edge.verdict, over.verdict) == ("inside margin", "does not fit")


def test_a_display_takes_its_gib_from_the_conversation_by_hand():
    """The same card driving a display that takes 1.5 GiB: 1.5 x 2^30 / 8,192 = 196,608 cell-layers fewer, 232,371
    left. With one sequence (1,536 cells) the longest T is (232,371 - 52 x 1,536) / 10 = 15,250 tokens. Under
    llama-server's 4 slots, (232,371 - 52 x 4,608) / 10 would be below zero, and the context bounds the window
    cache (llama.cpp's min(n_ctx, ...)): all 62 layers hold T, 232,371 / 62 = 3,748. Padded to 256: 15,104 and 3,584."""
    server = own_machine("Gemma-3-27B", "RTX 5090", "q8_0", display_gib=1.5)
    one = own_machine("Gemma-3-27B", "RTX 5090", "q8_0", display_gib=1.5, slots=1)
    assert server.longest_context == 3_584
    assert one.longest_context == 15_104
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
    4,219 tokens, 4,096 as a -c llama.cpp pads to 256. Llama-3.1-70B Q4_K_M (43.1e9 B = 40.2 GiB) on the same Mac does not fit at all."""
    m = own_machine("Llama-3.1-8B", "M1 8GB", "q4_k_m", context=512)
    assert (m.verdict, m.fits) == ("inside margin", False)
    assert m.longest_context_no_margin == 4_096
    assert "--fit off -ngl 99" in dict(m.rows())["fits"]
    assert own_machine("Llama-3.1-8B", "RTX 5090", "q4_k_m").verdict == "fits"
    assert own_machine("Llama-3.1-70B", "M1 8GB", "q4_k_m", context=512).verdict == "does not fit"


def _llama_cpp_need(model: str, final: int, batch: int, slots: int) -> float:
    """Bytes llama-server started for ``batch`` requests of ``final`` tokens (-c batch x final, the cache unified
    over ``slots`` slots) allocates for its KV, from the model's dimensions and llama.cpp's formula (unpadded context):
    every full layer ``batch x final`` cells, every window layer GGML_PAD(min(n_ctx, n_swa x slots + 512), 256)."""
    m = lc.models[model]
    per_layer = 2 * m.kv_heads * m.head_dim * 2  # K and V, 2 bytes each (f16)
    t = m.layer_types
    if t["full"] == 0:  # every layer slides: llama.cpp's LLAMA architecture keeps them all in full
        return m.layers * per_layer * batch * final
    n_swa = m.sliding_window or m.attention_chunk or 0
    window_layers = t["sliding"] + t["chunked"]
    cells = min(batch * final, -(-(n_swa * slots + 512) // 256) * 256) if window_layers else 0
    return t["full"] * per_layer * batch * final + window_layers * per_layer * cells


@settings(max_examples=40, deadline=None)
@example(model="Gemma-3-27B", gpu="RTX 4090", prompt=20_000, slots=6)  # the memory binds below the slots
@example(model="Gemma-3-27B", gpu="RTX 5090", prompt=30_000, slots=6)
@example(model="Gemma-3-27B", gpu="RTX 4090", prompt=60_000, slots=4)  # not one fits
@example(model="Mistral-7B-v0.1", gpu="RTX 3080", prompt=16_000, slots=4)
@given(
    model=st.sampled_from(["Gemma-3-27B", "gpt-oss-20b", "Mistral-7B-v0.1", "Llama-3.1-8B", "Llama-4-Scout-17B-16E"]),
    gpu=st.sampled_from(["RTX 5090", "RTX 4090", "RTX 3080", "M3 Max"]),
    prompt=st.integers(100, 60_000),
    slots=st.integers(1, 6),
)
def test_the_largest_batch_is_the_largest_llama_cpp_holds(model, gpu, prompt, slots):
    """Under llama.cpp (--parallel N --kv-unified for N slots), the replica's largest batch is the largest b, at most
    the slots, whose KV as llama.cpp allocates it (:func:`_llama_cpp_need`, from the model's dimensions) fits in what
    is left after the weights; 0 where not one fits."""
    assume(prompt + 200 <= lc.models[model].max_position)  # a longer request is refused by its positions
    kw = dict(prompt_tokens=prompt, answer_tokens=200, weight_bytes="q4_k_m", engine="llama.cpp", max_running=slots)
    r = replica(model, gpu, **kw)
    free = (r.usable_memory - r.weights).to("B").m
    final = prompt + 200
    fits = [b for b in range(1, slots + 1) if _llama_cpp_need(model, final, b, slots) <= free * (1 + 1e-12)]
    assert r.max_batch == (max(fits) if fits else 0), (r.max_batch, fits)
    if r.fits:
        assert r.memory_used.to("B").m == pytest.approx(
            r.weights.to("B").m + _llama_cpp_need(model, final, r.max_batch, slots)
        )


def test_a_model_whose_every_layer_slides_runs_full_attention_under_llama_cpp():
    """Mistral-7B-v0.1 slides a 4,096-token window on all 32 layers; llama.cpp converts it as the LLAMA architecture,
    which reads no window, so it holds every token: 32 layers x 8 KV heads x 128 x 2 x 2 B = 131,072 B a token. A
    datacenter engine holds the window: 4,096 tokens at most."""
    llama_cpp = replica("Mistral-7B-v0.1", "RTX 4090", batch=1, prompt_tokens=30_000, answer_tokens=500,
                        weight_bytes="q4_k_m", engine="llama.cpp")  # fmt: skip
    assert llama_cpp.kv_per_sequence.to("B").m == pytest.approx(131_072 * 30_500)
    assert llama_cpp.kv_in_use is None  # no window cache: all of it the sequence's own
    vllm = replica("Mistral-7B-v0.1", "RTX 4090", batch=1, prompt_tokens=30_000, answer_tokens=500)
    assert vllm.kv_per_sequence.to("B").m == pytest.approx(131_072 * 4_096)


def test_llama_4_chunks_share_the_window_cache_by_hand():
    """Llama 4 Scout keeps 36 of its 48 layers in 8,192-token chunks, which llama.cpp holds in the same cache as a
    sliding window: GGML_PAD(4 x 8,192 + 512, 256) = 33,280 cells under llama-server's four slots. One request of
    65,536 tokens: 12 full layers x 4,096 B x 65,536 + 36 x 4,096 x 33,280 = 8.13e9 B (8 KV heads x 128 x 2 x 2 B =
    4,096 B a token a layer)."""
    r = replica("Llama-4-Scout-17B-16E", "M3 Ultra", batch=1, prompt_tokens=65_535, answer_tokens=1,
                weight_bytes="q4_k_m", engine="llama.cpp")  # fmt: skip
    assert r.kv_in_use.to("B").m == pytest.approx(12 * 4_096 * 65_536 + 36 * 4_096 * 33_280)


def test_llama_cpp_is_sized_at_the_final_length_and_its_slots_bound_it_under_every_preset():
    """llama.cpp allocates its context when it starts: a batch is sized at the final length (no staggering), and its
    slots bound the batch under every preset, the refusal naming them."""
    r = replica("Llama-3.1-8B", "RTX 4090", prompt_tokens=3_000, answer_tokens=500, weight_bytes="q4_k_m",
                engine="llama.cpp", batch=2)  # fmt: skip
    assert r.kv_in_use is None and r.memory_used == r.weights + 2 * r.kv_per_sequence
    for model in ("Gemma-3-27B", "Llama-3.1-8B"):  # with a window cache and without
        lab = replica(model, "H100 SXM", batch=5, prompt_tokens=3_000, answer_tokens=500, weight_bytes="q8_0",
                      engine="llama.cpp", assumptions="lab")  # fmt: skip
        assert lab.max_batch == 4 and "more than the 4 requests llama.cpp runs at once" in lab.reason, lab.reason
    with pytest.raises(InputError, match="data_parallel=1"):
        replica("Gemma-3-27B", "H100 SXM", data_parallel=2, prompt_tokens=3_000, answer_tokens=500, engine="llama.cpp")


def test_window_pool_regimes_by_hand():
    """The slots bind (100 GB free: 4, not 300); the cache bounded by the context binds with more than one sequence
    (500-token conversations of Gemma 3 27B: each 500 x (10 x 8,192 + 52 x 8,192) = 253.95e6 B while b x 500 is
    under the 4,608 cells, so 1.0e9 B free holds 3; the whole cache alone, 1.963e9 B, would hold none)."""
    pool = WindowPool(4_608, 425_984.0, 4)
    assert pool.max_batch(100e9 + 28.698e9, 28.698e9, 286.72e6, 3_500) == 4
    assert pool.max_batch(28.698e9 + 1.0e9, 28.698e9, 10 * 8_192 * 500, 500) == 3


def test_speculation_under_llama_cpp_is_refused():
    from llmcourse.replica.speculative import Speculation

    with pytest.raises(InputError, match=r"speculation under llama\.cpp"):
        replica("Gemma-3-27B", "RTX 5090", prompt_tokens=3_000, answer_tokens=500, weight_bytes="q8_0",
                engine="llama.cpp", speculation=Speculation("ngram", 4, 0.5))  # fmt: skip


def test_the_kv_shown_holds_the_window_cache_whatever_the_verdict():
    """One conversation's cache is its own and the window cache, fitting or not: 8,192 x (10 x T + 52 x min(T,
    4,608)) B at a context of T (as allocated: padded to a multiple of 256, 60,000 -> 60,160), and the figure the
    refusal gives when it does not fit."""
    shown = own_machine("Gemma-3-27B", "RTX 5090", "q8_0", display_gib=1.5)  # 8,192 tokens: inside the margin
    assert shown.verdict != "fits"
    assert shown.kv_bytes.to("B").m == pytest.approx(8_192 * (10 * 8_192 + 52 * 4_608))
    long = own_machine("Gemma-3-27B", "RTX 5090", "q8_0", context=60_000)
    assert long.verdict == "does not fit"
    assert long.kv_bytes.to("B").m == pytest.approx(8_192 * (10 * 60_160 + 52 * 4_608))
    assert f"{long.kv_bytes.to('GB').m:.2f} GB" in long.reason, long.reason
