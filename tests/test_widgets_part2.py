"""The calculators of the decode, prefill, MoE and batching chapters, driven as a reader would."""

import pytest

from llmcourse.widgets.batching import batching_calculator
from llmcourse.widgets.decode import decode_calculator
from llmcourse.widgets.moe import MOE_MODELS, moe_calculator
from llmcourse.widgets.prefill import prefill_calculator


def _ms(text):
    return float(text.split()[0].replace(",", ""))


def test_decode_calculator_llama_8b_h100_and_l4():
    """Batch 1, 2,304-token context: ~7 ms on an H100 (seed 001), ~78 ms on an L4."""
    c = decode_calculator()
    assert _ms(dict(c.rows)["step time (time per output token)"]) == pytest.approx(7.0, abs=0.05)
    assert dict(c.rows)["tok/s per user"] == "143"
    assert _ms(dict(c.set(gpu="L4").rows)["step time (time per output token)"]) == pytest.approx(78, abs=0.5)


def test_decode_calculator_int4_and_memory_check():
    """INT4 weights cut the step to ~1.8 ms; a 70B model in BF16 does not fit one H100."""
    c = decode_calculator()
    assert _ms(dict(c.set(precision="int4").rows)["step time (time per output token)"]) == pytest.approx(1.84, abs=0.01)
    c.set(model="Llama-3.1-70B", precision="bf16")
    assert dict(c.rows)["fits in memory"].startswith("no")


def test_decode_calculator_goes_compute_bound_at_large_batch_short_context():
    """1,024 sequences of 288 tokens: compute-bound (the crossover is near 418)."""
    c = decode_calculator().set(batch=1024, context=288)
    assert "compute-bound" in dict(c.rows)["step time (time per output token)"]


def test_decode_calculator_shows_bad_input_as_a_message():
    """A zero context is reported, not raised."""
    c = decode_calculator().set(context=0)
    assert c.error is not None and c.rows == []


def test_prefill_calculator():
    """2,048 tokens: ~69 ms with attention, 66.5 ms without; 64 prompts ~4.4 s (seed 001)."""
    c = prefill_calculator()
    assert _ms(dict(c.rows)["time to first token (last prompt)"]) == pytest.approx(69, abs=0.5)
    assert _ms(dict(c.set(attention=False).rows)["time to first token (last prompt)"]) == pytest.approx(66.5, abs=0.1)
    assert dict(c.rows)["of which causal attention"] == "not counted"
    c.set(attention=True, prompts=64)
    assert _ms(dict(c.rows)["time to first token (last prompt)"]) / 1000 == pytest.approx(4.4, abs=0.05)


def test_moe_calculator_qwen3_batch_1_and_32():
    """Qwen3-30B-A3B: 1/16 of the experts at batch 1, 0.873 and ~26 ms at batch 32 (seed 001)."""
    c = moe_calculator()
    assert dict(c.rows)["fraction of experts touched"].startswith("0.062")
    c.set(batch=32)
    assert dict(c.rows)["fraction of experts touched"].startswith("0.873")
    assert _ms(dict(c.rows)["step time"]) == pytest.approx(26, abs=0.5)


def test_moe_calculator_only_offers_moe_models():
    """The dropdown lists the catalog's MoE models; Mixtral touches 2 of 8 at batch 1."""
    assert "Mixtral-8x7B" in MOE_MODELS and "Llama-3.1-8B" not in MOE_MODELS
    c = moe_calculator(model="Mixtral-8x7B")
    assert dict(c.rows)["fraction of experts touched"].startswith("0.250")


def test_batching_calculator_batch_1_and_64():
    """256/64 tokens at $3/GPU-hour: $5.83 -> $0.21 per million; ~145 -> ~8,100 tok/s (seed 001)."""
    c = batching_calculator()
    assert dict(c.rows)["$ per million output tokens"].startswith("5.83")
    assert dict(c.rows)["tok/s per user"] == "146"
    c.set(batch=64)
    assert dict(c.rows)["$ per million output tokens"].startswith("0.21")
    assert float(dict(c.rows)["tok/s in all, decode steps only"].replace(",", "")) == pytest.approx(8_100, rel=0.01)
    assert dict(c.rows)["crossover batch"].endswith("(compute-bound from 411)")


def test_batching_calculator_long_prompts_have_no_crossover():
    """2,048-token prompts: ~15 ms per step at 64 requests and no crossover (seed 001)."""
    c = batching_calculator().set(prompt_tokens=2_048, answer_tokens=512, batch=64)
    assert _ms(dict(c.rows)["step time (time per output token)"]) == pytest.approx(15, abs=0.2)
    assert dict(c.rows)["crossover batch"].startswith("none")
