"""The calculators of the decode, prefill, MoE and batching chapters, driven as a reader would."""

import pytest

from llmcourse.widgets.batching import batching_calculator
from llmcourse.widgets.decode import decode_calculator
from llmcourse.widgets.moe import MOE_MODELS, moe_calculator
from llmcourse.widgets.prefill import prefill_calculator


def _ms(text):
    return float(text.split()[0].replace(",", ""))


def test_decode_calculator_llama_8b_h100_and_l4():
    """Batch 1, 2,304-token context, the course's method: (16.06 GB + 2,304 x 131,072 B) / (0.7 x 3.35 TB/s) =
    6.98 ms (seed 001's ~7 ms) plus the 1 ms every step costs and the 32 layers' floor (32 x 23 us = 0.736 ms) =
    8.71 ms, 115 tok/s; on an L4 (300 GB/s) 16.362 GB / 210 GB/s = 77.9 ms + 1.736 ms = 79.7 ms."""
    c = decode_calculator()
    assert _ms(dict(c.rows)["step time (time per output token)"]) == pytest.approx(8.71, abs=0.05)
    assert dict(c.rows)["tok/s per user"] == "115"
    assert _ms(dict(c.set(gpu="L4").rows)["step time (time per output token)"]) == pytest.approx(79.7, abs=0.5)


def test_decode_calculator_int4_and_memory_check():
    """INT4 weights cut the step from 8.71 ms to 4.015 GB / (0.6 x 0.7 x 3.35 TB/s) + 0.302 GB / (0.7 x 3.35 TB/s)
    + 1 ms + 0.736 ms (32 layers x 23 us) = 2.854 + 0.129 + 1.736 = 4.72 ms (a 4-bit kernel reads the weights at 0.6 of the course's bandwidth share;
    attention reads the KV cache at the full share). Qwen2.5-72B in FP8 (72.7 GB) fits an H100's 80 GB but not the
    72 GB a server may use: the step is shown with "no"; a 70B model in BF16 (141 GB) exceeds the whole 80 GB and is
    refused with a message that says what to change."""
    c = decode_calculator()
    assert _ms(dict(c.set(precision="int4").rows)["step time (time per output token)"]) == pytest.approx(4.72, abs=0.01)
    c.set(model="Qwen2.5-72B", precision="fp8")
    assert dict(c.rows)["fits in memory"].startswith("no")
    c.set(model="Llama-3.1-70B", precision="bf16")
    assert c.rows == [] and "do not fit" in c.error and "n_gpus=2" in c.error


def test_decode_calculator_goes_compute_bound_at_large_batch_short_context():
    """1,024 sequences of 288 tokens: compute-bound (the crossover is near 418)."""
    c = decode_calculator().set(batch=1024, context=288)
    assert "compute-bound" in dict(c.rows)["step time (time per output token)"]


def test_decode_calculator_per_op_sum():
    """Batch 256 at 288 tokens, 0.7 x 3.35 TB/s and 0.5 x 989.4 TFLOP/s: weights 16.06 GB -> 6.85 ms, matmuls
    256 x 16.06 GFLOP -> 8.31 ms, KV 256 x 288 x 131,072 B = 9.66 GB -> 4.12 ms, and 1 ms + 32 x 23 us = 1.736 ms
    per step. Max rule: (16.06 + 9.66) GB -> 10.97 ms + 1.736 = 12.71 ms; per-op sum: 8.31 + 4.12 + 1.736 = 14.17
    ms."""
    c = decode_calculator().set(batch=256, context=288)
    assert _ms(dict(c.rows)["step time (time per output token)"]) == pytest.approx(12.71, abs=0.05)
    c.set(step_rule="sum")
    assert _ms(dict(c.rows)["step time (time per output token)"]) == pytest.approx(14.17, abs=0.05)
    assert "matmuls compute-bound" in dict(c.rows)["step time (time per output token)"]


def test_decode_calculator_method_dropdown():
    """The back-of-the-envelope method reads at the datasheet bandwidth: 6.977 ms x 0.7 = 4.88 ms at batch 1."""
    c = decode_calculator()
    assert c.controls["method"].value == "course"
    assert _ms(dict(c.set(method="envelope").rows)["step time (time per output token)"]) == pytest.approx(
        4.88, abs=0.01
    )
    assert dict(c.rows)["method"].startswith("100% of bandwidth")


def test_decode_calculator_fp8_runs_fp8_matmuls():
    """The course's method runs FP8 weights at the H100's FP8 peak; the lab's at BF16."""
    c = decode_calculator().set(precision="fp8")
    assert "FP8 peak" in dict(c.rows)["method"]
    assert "BF16 peak" in dict(c.set(method="lab").rows)["method"]


def test_decode_calculator_shows_bad_input_as_a_message():
    """A zero context is reported, not raised."""
    c = decode_calculator().set(context=0)
    assert c.error is not None and c.rows == []


def test_prefill_calculator():
    """2,048 tokens under the lab's method: ~69 ms with attention; 64 prompts ~4.4 s (seed 001). The
    back-of-the-envelope method leaves attention out: 2 x 8.03e9 x 2,048 / (0.5 x 989.4e12) = 66.5 ms."""
    c = prefill_calculator(method="lab")
    assert _ms(dict(c.rows)["time to first token (last prompt)"]) == pytest.approx(69, abs=0.5)
    assert _ms(dict(c.set(method="envelope").rows)["time to first token (last prompt)"]) == pytest.approx(66.5, abs=0.1)
    assert dict(c.rows)["of which causal attention"] == "not counted"
    c.set(method="lab", prompts=64)
    assert _ms(dict(c.rows)["time to first token (last prompt)"]) / 1000 == pytest.approx(4.4, abs=0.05)


def test_prefill_calculator_fp8_weights_halve_the_course_prefill():
    """FP8 weights on an H100: the course's method computes at the FP8 peak (1,979 TFLOP/s, twice the BF16
    989), so the compute-bound prefill takes half as long as under the lab's BF16 method."""
    course = _ms(dict(prefill_calculator(precision="fp8").rows)["time to first token (last prompt)"])
    lab = _ms(dict(prefill_calculator(precision="fp8", method="lab").rows)["time to first token (last prompt)"])
    assert course == pytest.approx(lab * 989 / 1979, rel=5e-3)  # both printed to 3 figures


def test_moe_calculator_qwen3_batch_1_and_32():
    """Qwen3-30B-A3B: 1/16 of the experts at batch 1, 0.873 and ~26 ms at batch 32 (seed 001)."""
    c = moe_calculator(method="lab")
    assert dict(c.rows)["fraction of experts touched"].startswith("0.062")
    c.set(batch=32)
    assert dict(c.rows)["fraction of experts touched"].startswith("0.873")
    assert _ms(dict(c.rows)["step time"]) == pytest.approx(26, abs=0.5)


def test_moe_calculator_only_offers_moe_models():
    """The dropdown lists the catalog's MoE models (the new Kimi K2.5, GLM-5 and MiniMax M2.5 among them, no dense
    model); Mixtral (93.4 GB in BF16, so on two H100s) touches 2 of 8 at batch 1."""
    assert {"Mixtral-8x7B", "Kimi-K2.5", "GLM-5", "MiniMax-M2.5"} <= set(MOE_MODELS)
    assert not {"Llama-3.1-8B", "Qwen3-32B"} & set(MOE_MODELS)
    c = moe_calculator(model="Mixtral-8x7B", n_gpus=2)
    assert dict(c.rows)["fraction of experts touched"].startswith("0.250")


def test_batching_calculator_batch_1_and_64():
    """256/64 tokens at $3/GPU-hour: $5.83 -> $0.21 per million; ~145 -> ~8,100 tok/s (seed 001)."""
    c = batching_calculator(method="lab")
    assert dict(c.rows)["$ per million output tokens"].startswith("5.83")
    assert dict(c.rows)["tok/s per user"] == "146"
    c.set(batch=64)
    assert dict(c.rows)["$ per million output tokens"].startswith("0.21")
    assert float(dict(c.rows)["tok/s in all, decode steps only"].replace(",", "")) == pytest.approx(8_100, rel=0.01)
    assert dict(c.rows)["crossover batch"].endswith("(compute-bound from 411)")


def test_batching_calculator_long_prompts_have_no_crossover():
    """2,048-token prompts: ~15 ms per step at 64 requests and no crossover (seed 001)."""
    c = batching_calculator(method="lab").set(prompt_tokens=2_048, answer_tokens=512, batch=64)
    assert _ms(dict(c.rows)["step time (time per output token)"]) == pytest.approx(15, abs=0.2)
    assert dict(c.rows)["crossover batch"].startswith("none")


def test_batching_calculator_envelope_reads_kv_at_the_final_context():
    """The back-of-the-envelope method reads each KV cache at 256 + 64 = 320 tokens (the lab at 288) and at the
    datasheet bandwidth: batch 1 steps (16.06 GB + 320 x 131,072 B) / 3.35 TB/s = 4.81 ms."""
    c = batching_calculator(method="envelope")
    assert dict(c.rows)["KV read at (tokens per sequence)"] == "320"
    assert _ms(dict(c.rows)["step time (time per output token)"]) == pytest.approx(4.81, abs=0.01)
