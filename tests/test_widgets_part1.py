"""The calculators of chapters 1-4 (tokens, weights, KV cache, GQA), driven as a reader would.

Expected values are hand arithmetic from the source texts (written out in each docstring),
never outputs of the code under test.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET

import pytest

from llmcourse.widgets.gqa import gqa_calculator, kv_head_options
from llmcourse.widgets.kv_cache import kv_calculator, paged_context, without_gqa
from llmcourse.widgets.tokens import answer_time_calculator, traffic_calculator
from llmcourse.widgets.weights import memory_bar_svg, weight_fit, weights_calculator


def row(calc, label):
    return dict(calc.rows)[label]


# --- tokens ---------------------------------------------------------------------------------
def test_traffic_support_assistant():
    """200,000/day x 3 / 86,400 s = 6.94 req/s; x 2,000 = 13,889 in; x 300 = 2,083 out (seed 000)."""
    c = traffic_calculator()
    assert row(c, "peak requests/s") == "6.94"
    assert row(c, "input tokens/s at peak") == "13,889"
    assert row(c, "output tokens/s at peak") == "2,083"


def test_traffic_follows_the_controls():
    """2,000,000/day x 2 / 86,400 = 46.3 req/s; x 500 answer tokens = 23,148 out; 500 / 25 tok/s = 20 s."""
    c = traffic_calculator().set(requests_per_day=2_000_000, peak_factor=2.0, answer_tokens=500, tpot_tokens_per_s=25)
    assert row(c, "peak requests/s") == "46.3"
    assert row(c, "output tokens/s at peak") == "23,148"
    assert row(c, "time to stream one answer") == "20.0 s"


def test_traffic_rejects_zero_requests():
    """A zero request rate is an input error, shown as a message instead of a result."""
    c = traffic_calculator().set(requests_per_day=0)
    assert c.error and c.rows == []
    assert traffic_calculator().set(requests_per_day=-5).error


def test_kv_rejects_zero_context():
    """A zero-token context is refused with a message naming the control the reader set (context)."""
    c = kv_calculator().set(context=0)
    assert c.error.startswith("context ") and "zero" in c.error and c.rows == []


def test_answer_time_seed_004():
    """5,000 chars / 4 = 1,250 tokens; / 50 tok/s = 25 s; / 20 tok/s = 62.5 s (seed 004)."""
    c = answer_time_calculator()
    assert row(c, "tokens in the answer") == "1,250"
    assert row(c, "time to stream it") == "25.0 s"
    assert row(c.set(tokens_per_s=20), "time to stream it") == "62.5 s"


# --- weights --------------------------------------------------------------------------------
def test_weights_qwen72b_bf16_two_h100():
    """72.7e9 x 2 B = 145.4 GB > 2 x 80 x 0.9 = 144 GB: does not fit, short by 1.4 GB (seed 000)."""
    c = weights_calculator(plot=False)
    assert row(c, "weights") == "145 GB"
    assert row(c, "weights fit") == "no"
    assert row(c, "short by") == "1.40 GB"


def test_weights_qwen72b_fp8_fits():
    """72.7e9 x 1 B = 72.7 GB fits in 144 GB, leaving 71.3 GB (seed 000)."""
    c = weights_calculator(plot=False).set(precision="fp8")
    assert row(c, "weights") == "72.7 GB"
    assert row(c, "weights fit") == "yes"
    assert row(c, "left for the KV cache") == "71.3 GB"


def test_weights_gpu_counts_for_qwen72b_bf16():
    """ceil(145.4 / 72) = 3 GPUs of memory, but tensor parallelism takes a power of two: 4 (seed 000 says four)."""
    f = weight_fit("Qwen2.5-72B", "bf16", "H100 SXM", 2)
    assert (f.gpus_needed, f.tensor_parallel) == (3, 4)


def test_weights_qwen72b_bf16_fits_when_memory_is_read_as_gib():
    """vLLM's 0.9 of the HBM as PyTorch sees it: 2 x 80 x 2^30 B x 0.9 = 154.62 GB, less 145.40 GB of weights
    leaves 9.22 GB; the datasheet's 2 x 80e9 x 0.9 = 144 GB does not hold them."""
    c = weights_calculator(plot=False).set(memory_unit="GiB")
    assert row(c, "weights fit") == "yes"
    assert row(c, "left for the KV cache") == "9.22 GB"
    assert any(label.startswith("usable memory (2 x 80") and "GiB x 90%" in label for label, _ in c.rows)
    assert row(c.set(memory_unit="GB"), "weights fit") == "no"


def test_weights_calculator_starts_at_the_course_memory_share():
    """The usable-share slider starts at the course's assumption, not a number typed in the widget."""
    import llmcourse as lc

    c = weights_calculator(plot=False)
    assert c.controls["usable_fraction"].value == lc.resolve().memory_fraction
    assert c.controls["memory_unit"].value == lc.resolve().memory_unit == "GB"


def test_weights_llama_models():
    """Llama 3.1 8B: 8.03e9 x 2 = 16.06 GB fits one H100; 70B: 70.554e9 x 2 = 141.1 GB does not (seed 001)."""
    c = weights_calculator("Llama-3.1-8B", n_gpus=1, plot=False)
    assert row(c, "weights") == "16.1 GB" and row(c, "weights fit") == "yes"
    c.set(model="Llama-3.1-70B")
    assert row(c, "weights") == "141 GB" and row(c, "weights fit") == "no"
    assert row(c.set(precision="int4"), "weights fit") == "yes"  # 35.3 GB
    assert row(c.set(precision="bf16", n_gpus=2), "weights fit") == "yes"


def _bar_parts(svg: str) -> dict[str, float]:
    """The x extent (start, end) of each named part of a memory bar, and its plot width."""
    root = ET.fromstring(svg)
    parts = {}
    for el in root.iter():
        name = el.get("data-part")
        if name and el.tag.endswith("rect"):
            parts[name] = (float(el.get("x")), float(el.get("x")) + float(el.get("width")))
        elif name == "usable":
            parts[name] = (float(el.get("x1")), float(el.get("x1")))
    return parts


def test_weights_calculator_with_plot_updates():
    """The calculator redraws its memory bar (SVG, drawn without matplotlib so it works live) on a change."""
    c = weights_calculator()
    bar = c.widget.children[-1]
    before = bar.value
    assert "reserved" in _bar_parts(before) and "kv" not in _bar_parts(before)  # 145.4 GB do not fit
    c.set(precision="int4")
    assert c.error is None and row(c, "weights") == "36.4 GB"  # 72.7e9 x 0.5 B
    assert bar.value.startswith("<svg") and bar.value != before and "kv" in _bar_parts(bar.value)


def test_memory_bar_is_drawn_to_scale():
    """FP8 Qwen2.5-72B on 2 H100s: weights end at 72.7 GB, the usable line at 144 GB, the bar at 160 GB
    (hand arithmetic: 72.7e9 x 1 B; 2 x 80 GB x 0.9); the KV part runs from the weights to the line."""
    p = _bar_parts(memory_bar_svg(weight_fit("Qwen2.5-72B", "fp8", "H100 SXM", 2)))
    x0 = p["weights"][0]
    gb = (p["reserved"][1] - x0) / 160  # px per GB, from the whole bar
    assert p["weights"][1] - x0 == pytest.approx(72.7 * gb, rel=1e-3)
    assert p["usable"][0] - x0 == pytest.approx(144 * gb, rel=1e-3)
    assert p["kv"] == pytest.approx((p["weights"][1], p["usable"][0]))


def test_memory_bar_of_a_model_far_too_big():
    """DeepSeek-V3 in BF16 (about 1,342 GB) on 2 H100s: the axis stretches to the weights, which run past
    the usable line; there is no KV part."""
    p = _bar_parts(memory_bar_svg(weight_fit("DeepSeek-V3", "bf16", "H100 SXM", 2)))
    x0 = p["weights"][0]
    assert "kv" not in p and (p["weights"][1] - x0) / (p["usable"][0] - x0) == pytest.approx(1342 / 144, rel=0.01)


def test_weight_fit_tensor_parallel_is_the_planner_rule():
    """405B (405.9e9 params): FP8 406 GB / 72 GB = 5.6 -> 6 GPUs -> 8-way; BF16 812 GB / 72 GB = 11.3 -> 12 -> 16."""
    fp8 = weight_fit("Llama-3.1-405B", "fp8", "H100 SXM")
    bf16 = weight_fit("Llama-3.1-405B", "bf16", "H100 SXM")
    assert (fp8.gpus_needed, fp8.tensor_parallel) == (6, 8)
    assert (bf16.gpus_needed, bf16.tensor_parallel) == (12, 16)


# --- KV cache ---------------------------------------------------------------------------------
def test_kv_llama8b_default():
    """2 x 32 x 8 x 128 x 2 = 131,072 B = 128 KiB; (72 - 16.06) GB / (2,560 x 131,072 B) = 166.7 -> 166 (seed 001)."""
    c = kv_calculator()
    assert row(c, "KV per token") == "128 KiB (131,072 B)"
    assert row(c, "sequences that fit") == "166"


def test_kv_llama8b_32k_is_4_gib():
    """32,768 x 131,072 B = 2^32 B = 4 GiB (seed 001)."""
    c = kv_calculator().set(context=32_768)
    assert row(c, "KV per sequence") == "4.29 GB (4.00 GiB)"


def test_kv_qwen_models():
    """Qwen2.5-72B: 2x80x8x128x2 = 327,680 B = 320 KiB, x 2,300 = 0.754 GB; 7B: 2x28x4x128x2 = 56 KiB (seed 000)."""
    c = kv_calculator().set(model="Qwen2.5-72B", n_gpus=2, context=2_300, weight_precision="fp8")
    assert row(c, "KV per token") == "320 KiB (327,680 B)"
    assert row(c, "KV per sequence").startswith("0.754 GB")
    # (144 - 72.7) GB / 0.753664 GB = 94.6 -> 94 (seed 000's FP8 plan)
    assert row(c, "sequences that fit") == "94"
    assert row(c.set(model="Qwen2.5-7B", n_gpus=1), "KV per token") == "56.0 KiB (57,344 B)"


def test_kv_fp8_cache_halves_the_token():
    """An FP8 cache stores 1 byte per value: Llama 3.1 8B 2x32x8x128x1 = 64 KiB."""
    c = kv_calculator().set(kv_precision="fp8")
    assert row(c, "KV per token") == "64.0 KiB (65,536 B)"


def test_kv_calculator_has_a_method_dropdown():
    """The batch follows the method chosen; every preset keeps 90% of the datasheet memory, so 166 in each."""
    c = kv_calculator()
    assert c.controls["method"].value == "course"
    assert row(c.set(method="lab"), "sequences that fit") == "166"
    assert row(c.set(method="envelope"), "sequences that fit") == "166"


def test_kv_weights_that_do_not_fit():
    """Llama 3.1 70B in BF16 (141 GB) on one H100 (72 GB usable): nothing fits."""
    c = kv_calculator().set(model="Llama-3.1-70B")
    assert row(c, "sequences that fit").startswith("0")


def test_kv_mla_deepseek():
    """DeepSeek-V3 caches 61 x (512 + 64) x 2 B = 70,272 B per token."""
    c = kv_calculator().set(model="DeepSeek-V3", gpu="H200 SXM", n_gpus=8, weight_precision="fp8")
    assert row(c, "KV per token") == "68.6 KiB (70,272 B)"


def test_without_gqa_is_the_mha_table_model():
    """Llama 3.1 70B with 64 KV heads: 2 x 80 x 64 x 128 x 2 = 2,621,440 B, as 2 x 80 x 8,192 x 2 (seed 004)."""
    import llmcourse as lc

    assert lc.kv_bytes_per_token(without_gqa("Llama-3.1-70B")).to("B").m == 2_621_440


def test_paged_context():
    """2,048 + 512 / 2 = 2,304 = 144 blocks of 16; 100 + 10 / 2 = 105 -> 7 blocks = 112."""
    assert paged_context(2_048, 512) == 2_304
    assert paged_context(100, 10) == 112


# --- GQA --------------------------------------------------------------------------------------
def test_gqa_llama8b_at_32k_prompt():
    """At 32,768 + 512 = 33,280 tokens: (72 - 16.06) GB / (33,280 x 128 KiB) = 12.8 -> 12; MHA 512 KiB: 3 (seed 001)."""
    c = gqa_calculator()
    assert row(c, "sequences that fit") == "12 (MHA: 3)"
    assert row(c, "smaller than MHA by") == "4x"


def test_gqa_slider_down_to_mqa():
    """One KV head: 2 x 32 x 1 x 128 x 2 = 16 KiB, 32x smaller; 55.94 GB / (33,280 x 16 KiB) = 102.6 -> 102."""
    c = gqa_calculator().set(kv_heads=1)
    assert row(c, "KV per token") == "16.0 KiB (MHA: 512 KiB)"
    assert row(c, "smaller than MHA by") == "32x"
    assert row(c, "sequences that fit") == "102 (MHA: 3)"


def test_gqa_slider_to_mha_and_bad_value():
    """32 KV heads is MHA (512 KiB); 5 KV heads do not divide 32 query heads: an error message."""
    c = gqa_calculator().set(kv_heads=32)
    assert row(c, "attention").startswith("MHA")
    assert row(c, "KV per token") == "512 KiB (MHA: 512 KiB)"
    assert "multiple of kv_heads" in c.set(kv_heads=5).error


def test_gqa_model_change_resets_slider():
    """Choosing Qwen2.5-7B (28 heads, 4 KV) resets the slider to 4 with maximum 28."""
    c = gqa_calculator()
    c.controls["model"].value = "Qwen2.5-7B"
    assert (c.controls["kv_heads"].value, c.controls["kv_heads"].max) == (4, 28)
    assert c.error is None and row(c, "smaller than MHA by") == "7x"


def test_kv_head_options():
    """The divisors of 28: 1, 2, 4, 7, 14, 28."""
    assert kv_head_options("Qwen2.5-7B") == [1, 2, 4, 7, 14, 28]


@pytest.mark.parametrize("make", [kv_calculator, gqa_calculator, traffic_calculator])
def test_updates_are_fast(make):
    """A recompute takes well under a quarter of a second (no SymPy work per update)."""
    c = make()
    name = {"kv_calculator": "context", "gqa_calculator": "context", "traffic_calculator": "prompt_tokens"}[
        make.__name__
    ]
    start = time.perf_counter()
    for v in range(1_000, 1_020):
        c.set(**{name: v})
    assert (time.perf_counter() - start) / 20 < 0.25
