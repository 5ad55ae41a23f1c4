"""Roofline helpers: intensity, ridge point, attainable FLOP/s, the crossover batch."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcourse.assumptions import resolve
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS
from llmcourse.planner.roofline import (
    arithmetic_intensity,
    attainable_flops,
    crossover_batch,
    decode_flops_per_token,
    decode_point,
    first_compute_bound_batch,
    prefill_point,
    ridge_intensity,
    weight_read_ceiling,
)
from llmcourse.replica.step import decode_step
from llmcourse.units import Q_


def test_ridge_point_of_h100():
    """0.5 x 989 TFLOP/s over 0.7 x 3.35 TB/s = 210.9 FLOP/B (hand arithmetic)."""
    assert ridge_intensity("H100 SXM").m == pytest.approx(494.5e12 / 2.345e12, rel=1e-9)


def test_attainable_below_and_above_the_ridge():
    """Below the ridge the memory roof (I x 2.345 TB/s), above it the compute roof (494.5 TFLOP/s)."""
    assert attainable_flops("H100 SXM", Q_(10, "FLOP/B")).to("TFLOP/s").m == pytest.approx(23.45)
    assert attainable_flops("H100 SXM", Q_(1e4, "FLOP/B")).to("TFLOP/s").m == pytest.approx(494.5)


def test_intensity_units_and_bad_input():
    """FLOPs over bytes is FLOP/B; bytes in place of FLOPs is refused."""
    assert arithmetic_intensity(Q_(2, "GFLOP"), Q_(1, "GB")).m == pytest.approx(2)
    with pytest.raises(InputError):
        arithmetic_intensity(Q_(2, "GB"), Q_(1, "GB"))


def test_efficiency_must_be_a_fraction():
    """An efficiency above 1 or at 0 is an input error (of the assumptions a what-if builds); the roofline takes no
    loose efficiency."""
    with pytest.raises(InputError, match="bandwidth_efficiency"):
        ridge_intensity("H100 SXM", assumptions=resolve().replace(bandwidth_efficiency=1.5))
    with pytest.raises(InputError, match="compute_efficiency"):
        ridge_intensity("H100 SXM", assumptions=resolve().replace(compute_efficiency=0))
    with pytest.raises(InputError, match=r"takes no bandwidth_efficiency= now: .*replace\(bandwidth_efficiency="):
        ridge_intensity("H100 SXM", bandwidth_efficiency=0.5)


def test_decode_batch_one_is_about_one_flop_per_byte():
    """2 FLOPs per 2-byte weight: batch-1 decode sits near 1 FLOP/B, far below the ridge."""
    p = decode_point("Llama-3.1-8B", "H100 SXM", context_tokens=2_304)
    assert 0.9 < p.intensity.m < 1.0
    assert p.intensity < ridge_intensity("H100 SXM")


def test_prefill_intensity_is_about_the_prompt_length():
    """A 2,048-token prefill does about 2,048 FLOPs (plus attention) per weight byte: above the ridge."""
    p = prefill_point("Llama-3.1-8B", "H100 SXM", 2_048)
    assert 2_048 < p.intensity.m < 2_048 * 1.05
    assert p.intensity > ridge_intensity("H100 SXM")


def test_crossover_formula_solves_memory_equals_compute():
    """At the solved batch the registered memory and compute times are equal."""
    args = dict(
        bytes_read=Q_(16.06, "GB"),
        kv_per_sequence=Q_(131_072 * 288, "B"),
        bandwidth=Q_(3.35, "TB/s"),
        bandwidth_efficiency=0.7,
        flops_per_token=Q_(16.06, "GFLOP"),
        peak_flops=Q_(989, "TFLOP/s"),
        compute_efficiency=0.5,
    )
    b = FORMULAS["crossover_batch"](**args).m
    mem = FORMULAS["decode_memory_time"](
        batch=b,
        n_gpus=1,
        bytes_read=args["bytes_read"],
        kv_per_sequence=args["kv_per_sequence"],
        bandwidth=args["bandwidth"],
        bandwidth_efficiency=0.7,
    )
    comp = FORMULAS["decode_compute_time"](
        batch=b,
        n_gpus=1,
        flops_per_token=args["flops_per_token"],
        peak_flops=args["peak_flops"],
        compute_efficiency=0.5,
    )
    assert mem.to("ms").m == pytest.approx(comp.to("ms").m, rel=1e-9)


def test_crossover_without_attention_flops():
    """W / (F_tok x 2.345e12 / 494.5e12 - K): 16.06e9 / (16.06e9 x 2.345/494.5 - 131,072 x 288) = 418.1."""
    hand = 16.06e9 / (16.06e9 * 2.345 / 494.5 - 131_072 * 288)
    assert crossover_batch("Llama-3.1-8B", "H100 SXM", context_tokens=288) == pytest.approx(hand, rel=1e-6)


def test_crossover_does_not_depend_on_gpu_count():
    """Tensor parallelism divides both times, so the crossover batch is unchanged."""
    one = crossover_batch("Llama-3.1-8B", "H100 SXM", context_tokens=288)
    assert crossover_batch("Llama-3.1-8B", "H100 SXM", context_tokens=288, n_gpus=4) == pytest.approx(one)


def test_no_crossover_at_long_context():
    """At 2,304 tokens each sequence's KV read outlasts its compute: no crossover, with or without attention."""
    assert crossover_batch("Llama-3.1-8B", "H100 SXM", context_tokens=2_304) is None
    assert first_compute_bound_batch("Llama-3.1-8B", "H100 SXM", context_tokens=2_304, attention_flops=True) is None


def test_moe_crossover_is_a_fixed_point():
    """For a MoE model the crossover uses the weights read at that batch; it exists and is positive."""
    b = crossover_batch("Qwen3-30B-A3B", "H100 SXM", context_tokens=288)
    assert b is not None and b > 1


@settings(max_examples=30, deadline=None)
@given(i=st.floats(0.01, 1e5, allow_nan=False, allow_infinity=False))
def test_attainable_never_exceeds_either_roof(i):
    """The roofline is at most the compute roof (494.5 TFLOP/s) and at most I x 2.345 TB/s."""
    a = attainable_flops("H100 SXM", Q_(i, "FLOP/B")).to("TFLOP/s").m
    assert a <= 494.5 * (1 + 1e-12) and a <= i * 2.345 * (1 + 1e-12)
    assert a == pytest.approx(min(494.5, i * 2.345))


@settings(max_examples=20, deadline=None)
@given(batch=st.integers(1, 2_000))
def test_crossover_splits_memory_and_compute_bound_batches(batch):
    """Batches below the crossover are memory-bound, batches above it compute-bound."""
    x = crossover_batch("Llama-3.1-8B", "H100 SXM", context_tokens=288, attention_flops=True)
    step = decode_step("Llama-3.1-8B", "H100 SXM", batch=batch, context_tokens=288, attention_flops=True)
    assert step.bound == ("compute" if batch > x else "memory")


def test_roofs_follow_the_assumptions():
    """The planner preset's 100% / 100%: 989 / 3.35 = 295.2 FLOP/B; FP8 weights under the course's method run
    FP8 matmuls: 0.5 x 1,979 / 2.345 = 422.0 FLOP/B; the lab keeps BF16: 210.9 FLOP/B."""
    assert ridge_intensity("H100 SXM", assumptions="planner").m == pytest.approx(989 / 3.35, rel=1e-9)
    assert ridge_intensity("H100 SXM", weight_bytes="fp8").m == pytest.approx(989.5 / 2.345, rel=1e-9)
    assert ridge_intensity("H100 SXM", weight_bytes="fp8", assumptions="lab").m == pytest.approx(494.5 / 2.345)
    assert attainable_flops("H100 SXM", Q_(1e4, "FLOP/B"), assumptions="planner").to("TFLOP/s").m == pytest.approx(989)


def test_crossover_under_the_envelope_method():
    """At the datasheet bandwidth (3.35 TB/s) and 50% of 989 TFLOP/s:
    16.06e9 / (16.06e9 x 3.35 / 494.5 - 131,072 x 288) = 16.06e9 / (108.80e6 - 37.75e6) = 226.0."""
    hand = 16.06e9 / (16.06e9 * 3.35 / 494.5 - 131_072 * 288)
    got = crossover_batch("Llama-3.1-8B", "H100 SXM", context_tokens=288, assumptions="envelope")
    assert got == pytest.approx(hand, rel=1e-6)


def test_flops_per_param_comes_from_the_assumptions():
    """FLOPs per token are the assumptions' FLOPs per parameter x active parameters: 3 x 8.03e9 = 24.09 GFLOP."""
    a = resolve().replace(flops_per_param=3.0)
    assert decode_flops_per_token("Llama-3.1-8B", 288, assumptions=a).to("GFLOP").m == pytest.approx(24.09)


def test_weight_ceiling_is_at_the_assumptions_bandwidth():
    """At the course's 70% (the default), 2.345 TB/s / 16.06 GB = 146.0 tok/s; the back-of-the-envelope method's
    datasheet 3.35 TB/s gives the hard ceiling, 208.6 tok/s."""
    course = weight_read_ceiling("Llama-3.1-8B", "H100 SXM")
    assert course.tokens_per_s_per_user.m == pytest.approx(2.345e12 / 16.06e9)
    peak = weight_read_ceiling("Llama-3.1-8B", "H100 SXM", assumptions="envelope")
    assert peak.tokens_per_s_per_user.m == pytest.approx(3.35e12 / 16.06e9)
