"""The assumptions object: presets, variants, refusals, and one answer per question across the planner."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llmcourse as lc
from llmcourse import Q_
from llmcourse.assumptions import DEFAULT, PRESETS, Assumptions, presets_table, resolve
from llmcourse.errors import InputError, UnknownNameError


def test_the_course_method_is_the_default():
    """resolve() with nothing is the course's preset, and the course's preset charges prefill."""
    assert resolve() is DEFAULT is PRESETS["course"]
    assert DEFAULT.count_prefill and DEFAULT.matmul_precision == "weights"


def test_presets_name_the_sources_methods():
    """The sources' constants, as their texts state them."""
    env, lab, cap, pla = (PRESETS[k] for k in ("envelope", "lab", "capacity", "planner"))
    assert (env.bandwidth_efficiency, env.memory_fraction, env.count_prefill) == (1.0, 0.9, False)
    assert (lab.bandwidth_efficiency, lab.compute_efficiency, lab.prefill_attention) == (0.7, 0.5, True)
    assert cap.headroom_fraction == pytest.approx(0.3) and not cap.count_prefill
    assert (pla.bandwidth_efficiency, pla.compute_efficiency, pla.memory_fraction, pla.headroom) == (1.0, 1.0, 0.9, 1.3)


def test_unknown_preset_says_did_you_mean():
    with pytest.raises(UnknownNameError, match="Did you mean 'course'"):
        resolve("corse")
    with pytest.raises(UnknownNameError, match="Did you mean 'envelope'"):
        lc.serving_plan("Qwen2.5-7B", "H100 SXM", 1, 2_300, assumptions="envelop")


def test_resolve_refuses_other_types():
    with pytest.raises(InputError, match="preset name"):
        resolve(0.7)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (dict(bandwidth_efficiency=0), "bandwidth_efficiency"),
        (dict(bandwidth_efficiency=1.01), "bandwidth_efficiency"),
        (dict(compute_efficiency=-0.5), "compute_efficiency"),
        (dict(compute_efficiency=math.nan), "compute_efficiency"),
        (dict(memory_fraction=2), "memory_fraction"),
        (dict(step_overhead_ms=-1), "step_overhead_ms"),
        (dict(headroom=0.9), "headroom"),
        (dict(step_rule="min"), "step_rule"),
        (dict(count_prefill="yes"), "count_prefill"),
        (dict(bandwidth_efficiency="0.7"), "bandwidth_efficiency"),
    ],
)
def test_bad_assumptions_are_refused_with_the_field_named(change, field):
    with pytest.raises(InputError, match=field):
        DEFAULT.replace(**change)


def test_unknown_field_says_did_you_mean():
    with pytest.raises(InputError, match="bandwidth_efficiency"):
        DEFAULT.replace(bandwith_efficiency=0.8)


def test_a_variant_is_named_and_leaves_the_preset_alone():
    v = DEFAULT.replace(bandwidth_efficiency=0.8, headroom=1.5)
    assert v.name == "course (bandwidth_efficiency=0.8, headroom=1.5)"
    assert DEFAULT.bandwidth_efficiency == 0.7 and DEFAULT.replace() is DEFAULT
    with pytest.raises(AttributeError):
        v.headroom = 2  # frozen


def test_presets_table_has_every_field_and_every_preset():
    rows = presets_table()
    assert rows[0][2:] == tuple(PRESETS)
    assert {r[0] for r in rows[1:]} == {f for f in Assumptions.__dataclass_fields__} - {"name", "summary"}


# --- one question, one answer ---------------------------------------------------------------------
CH1 = dict(model="Qwen2.5-72B", gpu="H100 SXM", weight_bytes="fp8")


def _allreduces(layers, tokens, hidden=8_192):
    """Seconds of two all-reduces per layer of ``tokens`` tokens' BF16 activations on 2 GPUs over NVLink 4, by the
    engines' one-shot (the course's 3.5 us kernel cost, one flag latency of 0.8 us from links.csv, the peer's message
    at 450 GB/s x the course's 80%), plus the layers' floor of 23 us each (the course's layer_floor_us): both are
    what a forward pass of ``layers`` layers pays besides its reads, FLOPs and the 1 ms per step."""
    return 2 * layers * (3.5e-6 + 0.8e-6 + tokens * hidden * 2 / (0.8 * 450e9)) + layers * 23e-6


def _ch1_step(batch, chunk):
    """Seconds of one of chapter 1's engine steps (Qwen2.5-72B FP8 on 2 x H100 SXM, 2,000 in / 300 out, vLLM):
    ``batch`` decode tokens and a ``chunk`` of prompt tokens (0 or one whole 2,000-token prompt: the 8,192-token
    budget leaves 8,092 beside 100 decode tokens, so a prompt fits in one step), the weight matmuls of all of them
    (72.7 GB read at 0.7 x 6.7 TB/s, or 2 x 72.7e9 FLOPs a token at 2 x 1,979 TFLOP/s x 0.5), then attention (the
    decodes' KV at 2,150 tokens x 327,680 B, or the chunk's attention 2 x 80 x 64 x 128 x 2,000 FLOPs a prompt
    token), plus 1 ms and 160 all-reduces of all its tokens."""
    bw, flops = 0.7 * 2 * 3.35e12, 2 * 1_979e12 * 0.5
    matmuls = max(72.7e9 / bw, (batch + chunk) * 2 * 72.7e9 / flops)
    attention = max(batch * 2_150 * 327_680 / bw, chunk * 2 * 80 * 64 * 128 * 2_000 / flops)
    return matmuls + attention + 1e-3 + _allreduces(80, batch + chunk)


def _ch1_mean_step(batch, prompts):
    """Seconds of chapter 1's mean engine step when ``prompts`` whole prompts come in over an answer's 300 steps
    (formulas prompt_step_share and chunked_mean_step): vLLM puts each into one step of its own (one chunk), so a
    share phi = min(1, prompts / 300) of the steps carry a 2,000-token prompt beside the ``batch`` decode tokens and
    the rest decode alone. At 100: the step with a prompt is 154.3 ms of matmuls (2,100 tokens' FLOPs, no longer
    hidden behind the 15.5 ms weight read) + 15.0 ms of KV reads + 1 ms + 17.8 ms of all-reduces and layer floors =
    188.1 ms; the step alone 34.8 ms."""
    phi = min(1, prompts / 300)
    return phi * _ch1_step(batch, 2_000) + (1 - phi) * _ch1_step(batch, 0)


def test_chapter_one_replica_under_both_methods():
    """Envelope: 4,387 tok/s, $0.32/M (the source's table). Course, by hand: vLLM admits on the KV blocks in use,
    staggered conversations holding 2,150 tokens x 327,680 B = 704.5 MB on average plus 2 spreads of their answer's
    300 x 327,680 B x sqrt(B / 12), in 0.9 x 160 GB - 72.7 GB = 71.3 GB: 100 (101 would hold 71.73 GB). Its decode
    step alone reads 72.7 GB + 100 x 704.5 MB = 143.2 GB at 0.7 x 6.7 TB/s = 30.5 ms, plus 1 ms, 80 layers x 23 us
    (1.84 ms) and 160 one-shot all-reduces of 100 x 8,192 x 2 B (1.42 ms): 34.8 ms. But over an answer's 300 steps
    each of the 100 requests finishes once and lets in a new 2,000-token prompt, which vLLM puts whole into one step
    (:func:`_ch1_mean_step`): a third of the steps take 188.1 ms, the rest 34.8 ms, a mean of 85.9 ms for 100 tokens,
    1,164 tok/s and 2 x $2.50 / (1,164 x 3,600) x 1e6 = $1.19/M (prefill added to decode at the static 94 gave
    1,123 tok/s and $1.24)."""
    env = lc.serving_plan(
        CH1["model"], CH1["gpu"], 2, 2_300, weight_bytes="fp8", prompt_tokens=2_000, assumptions="envelope"
    )
    assert round(env.output_tokens_per_s.m) == 4_387 and round(env.cost_per_million_output_tokens.m, 2) == 0.32
    course = lc.serving_plan(CH1["model"], CH1["gpu"], 2, 2_300, weight_bytes="fp8", prompt_tokens=2_000)
    kv, room = 327_680, 0.9 * 2 * 80e9 - 72.7e9
    held = lambda b: b * 2_150 * kv + 2 * 300 * kv * math.sqrt(b / 12)  # noqa: E731
    assert held(100) <= room < held(101)
    step = (72.7e9 + 100 * 2_150 * kv) / (0.7 * 2 * 3.35e12) + 1e-3 + _allreduces(80, 100)
    x = 100 / _ch1_mean_step(100, 100)
    assert (round(x), round(2 * 2.5 / (x * 3_600) * 1e6, 2)) == (1_164, 1.19)
    assert course.batch == 100 and course.prefill_counted
    assert course.step_time.to("s").m == pytest.approx(step, rel=2e-3)
    assert course.output_tokens_per_s.m == pytest.approx(x, rel=3e-3)
    assert course.cost_per_million_output_tokens.m == pytest.approx(2 * 2.5 / (x * 3_600) * 1e6, rel=3e-3)


LOOSE = dict(ttft_target=Q_(1, "hour"), tpot_target=Q_(1, "hour"))


VARIANTS = {
    "per-op step": DEFAULT.replace(step_rule="sum", decode_attention_flops=True),
    "overhead and a slow link": DEFAULT.replace(step_overhead_ms=1.5, link_efficiency=0.3),
    "engine memory rule": DEFAULT.replace(memory_rule="free", memory_unit="GiB"),
    "no interference": DEFAULT.replace(prefill_interference=False),
}


@pytest.mark.parametrize("preset", ["course", "planner", "lab", "envelope", "capacity", *VARIANTS])
@pytest.mark.parametrize(
    ("model", "gpu", "tp", "wb", "prompt", "answer"),
    [("Qwen2.5-72B", "H100 SXM", 2, "fp8", 2_000, 300), ("Llama-3.1-8B", "H100 SXM", 1, 2, 1_000, 500)],
)
def test_serving_plan_plan_and_replica_agree(preset, model, gpu, tp, wb, prompt, answer):
    """The whole-table method, the design planner (headroom 1, loose targets) and the replica model give
    one throughput and one batch for the same replica and workload."""
    preset = VARIANTS.get(preset, preset)
    r = lc.replica(
        model, gpu, tensor_parallel=tp, prompt_tokens=prompt, answer_tokens=answer, weight_bytes=wb, assumptions=preset
    )
    s = lc.serving_plan(model, gpu, tp, prompt + answer, prompt_tokens=prompt, weight_bytes=wb, assumptions=preset)
    brief = lc.Brief(1, prompt, answer, **LOOSE)
    p = lc.plan(
        model, gpu, brief, tensor_parallel=tp, weight_bytes=wb, assumptions=lc.resolve(preset).replace(headroom=1)
    )
    assert s.batch == p.batch == r.batch
    assert s.output_tokens_per_s.m == pytest.approx(r.throughput.m, rel=1e-12)
    assert p.throughput.m == pytest.approx(r.throughput.m, rel=1e-12)
    assert (p.requests_per_second_per_gpu * tp * answer).m == pytest.approx(r.throughput.m, rel=1e-12)
    assert s.tokens_per_s_per_user.m == pytest.approx((1 / p.tpot).to("1/s").m, rel=1e-12)


def test_the_course_charges_prefill_and_the_envelope_does_not():
    """Same replica: charging prefill can only lower the throughput and raise the cost."""
    kw = dict(tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300, weight_bytes="fp8")
    course = lc.replica("Qwen2.5-72B", "H100 SXM", **kw)
    # under the engine's picture the prompts ride in the steps whatever count_prefill says: only a replica whose
    # requests arrive prefilled (a disaggregated decode pool: neither charged nor interleaved) decodes alone
    alone = DEFAULT.replace(count_prefill=False, prefill_interference=False)
    decode_only = lc.replica("Qwen2.5-72B", "H100 SXM", assumptions=alone, **kw)
    assert course.throughput < decode_only.throughput == decode_only.decode_throughput
    assert 0 < course.prefill_share < 1 and decode_only.prefill_share is None


def test_per_operation_step_is_never_faster_than_the_slower_total():
    """max(a + b, c + d) <= max(a, c) + max(b, d): the kernel-by-kernel sum bounds the totals' max from above (the
    fixed 1 ms per step, the layers' floor, and the collectives, which one GPU does not have, add to both rules
    alike)."""
    kw = dict(context_tokens=8_000, weight_bytes="fp8")
    for batch in (1, 64, 512):
        tot = lc.decode_step("Llama-3.1-8B", "H100 SXM", batch=batch, attention_flops=True, **kw)
        per_op = lc.decode_step(
            "Llama-3.1-8B",
            "H100 SXM",
            batch=batch,
            attention_flops=True,
            assumptions=DEFAULT.replace(step_rule="sum"),
            **kw,
        )
        assert per_op.step_time >= tot.step_time * (1 - 1e-12)
        fixed = tot.overhead_time + tot.floor_time + tot.comm_time
        assert per_op.step_time <= tot.memory_time + tot.compute_time + fixed


def test_step_overhead_adds_to_every_step():
    """The overhead adds to the step as it is: 2 ms more than none, and the course's own 1 ms more than none."""
    kw = dict(batch=8, context_tokens=2_000)
    base = lc.decode_step("Llama-3.1-8B", "H100 SXM", assumptions=DEFAULT.replace(step_overhead_ms=0.0), **kw)
    slow = lc.decode_step("Llama-3.1-8B", "H100 SXM", assumptions=DEFAULT.replace(step_overhead_ms=2.0), **kw)
    course = lc.decode_step("Llama-3.1-8B", "H100 SXM", **kw)
    assert (slow.step_time - base.step_time).to("ms").m == pytest.approx(2.0)
    assert (course.step_time - base.step_time).to("ms").m == pytest.approx(1.0)


def test_memory_rules():
    """'total': 0.9 x 160 GB = 144 GB. 'free': 70.6 GB + 0.9 x (160 - 70.6) GB = 151.1 GB. 'GiB': 0.9 x 2 x 85.9 GB."""
    w = lc.weight_bytes("Llama-3.1-70B", "fp8")
    assert lc.usable_memory("H100 SXM", 2).to("GB").m == pytest.approx(144)
    free = lc.usable_memory("H100 SXM", 2, weights=w, assumptions=DEFAULT.replace(memory_rule="free"))
    assert free.to("GB").m == pytest.approx(70.6 + 0.9 * (160 - 70.6), abs=0.05)
    gib = lc.usable_memory("H100 SXM", 2, assumptions=DEFAULT.replace(memory_unit="GiB"))
    assert gib.to("GB").m == pytest.approx(0.9 * 2 * 80 * 1.073741824)


def test_the_72b_bf16_verdict_depends_on_what_memory_means():
    """145.4 GB of BF16 weights: 144 GB usable of datasheet GB misses; 154.6 GB of the HBM's GiB fits."""
    kw = dict(tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300)
    assert not lc.replica("Qwen2.5-72B", "H100 SXM", **kw).fits
    assert lc.replica("Qwen2.5-72B", "H100 SXM", assumptions=DEFAULT.replace(memory_unit="GiB"), **kw).fits


def test_fp8_weights_run_fp8_matmuls_under_the_course_only():
    assert lc.matmul_precision("fp8", "H100 SXM") == "fp8"
    assert lc.matmul_precision("fp8", "H100 SXM", "lab") == "bf16"
    fast = lc.prefill("Llama-3.1-70B", "H100 SXM", 2_000, weight_bytes="fp8")
    slow = lc.prefill("Llama-3.1-70B", "H100 SXM", 2_000, weight_bytes="fp8", assumptions="lab")
    assert slow.compute_time / fast.compute_time == pytest.approx(1_979 / 989)


def test_tensor_parallel_rule():
    """70B: 141 GB in BF16 needs 2 H100s (72 GB usable each), 70.6 GB in FP8 one; 405B BF16 (810 GB) needs 16 -> 16."""
    assert lc.gpus_for_weights("Llama-3.1-70B", "H100 SXM") == 2
    assert lc.gpus_for_weights("Llama-3.1-70B", "H100 SXM", "fp8") == 1
    assert lc.gpus_for_weights("Llama-3.1-405B", "H100 SXM") == 16


@settings(max_examples=40, deadline=None)
@given(st.floats(0.05, 1.0), st.floats(0.05, 1.0))
def test_higher_efficiency_never_lowers_throughput(eta_b, eta_f):
    kw = dict(tensor_parallel=1, prompt_tokens=1_000, answer_tokens=200)
    lo = lc.replica(
        "Llama-3.1-8B",
        "H100 SXM",
        assumptions=DEFAULT.replace(bandwidth_efficiency=eta_b * 0.9, compute_efficiency=eta_f * 0.9),
        **kw,
    )
    hi = lc.replica(
        "Llama-3.1-8B",
        "H100 SXM",
        assumptions=DEFAULT.replace(bandwidth_efficiency=eta_b, compute_efficiency=eta_f),
        **kw,
    )
    assert hi.throughput >= lo.throughput * (1 - 1e-12)


def test_prefill_interference_stretches_the_time_per_token():
    """On under the course's method: a user of chapter 1's batch of 100 waits, between its tokens, for the steps the
    engine runs, some of which carry a whole prompt of a request that replaces a finished one. Over its 300 steps
    the other 99 requests each let in one 2,000-token prompt, each in a step of its own (:func:`_ch1_mean_step`):
    0.33 x 188.1 ms + 0.67 x 34.8 ms = 85.4 ms per token against the 34.8 ms decode step alone, 11.7 tok/s (12).
    Alone (batch 1) no other request's prompt comes in while it decodes (its own prompt is its first token): its
    time per token is the decode step of one token, 19.2 ms. The sources' methods leave prompts out of the step."""
    kw = dict(tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300, weight_bytes="fp8")
    r = lc.replica("Qwen2.5-72B", "H100 SXM", **kw)
    step = (72.7e9 + 100 * 2_150 * 327_680) / (0.7 * 2 * 3.35e12) + 1e-3 + _allreduces(80, 100)
    assert r.batch == 100 and r.step.step_time.to("s").m == pytest.approx(step, rel=2e-3)
    assert r.tpot.to("s").m == pytest.approx(_ch1_mean_step(100, 99), rel=2e-3)
    assert round(r.tokens_per_s_per_user.m) == 12
    alone = lc.replica("Qwen2.5-72B", "H100 SXM", batch=1, **kw)
    assert alone.tpot.to("s").m == pytest.approx(_ch1_step(1, 0), rel=1e-3)
    assert alone.tpot == alone.step.step_time
    for preset in ("envelope", "lab", "capacity", "planner"):
        src = lc.replica("Qwen2.5-72B", "H100 SXM", assumptions=preset, **kw)
        assert src.tpot == src.step.step_time


def test_integer_weights_multiply_at_bf16():
    """INT4 and INT8 are weight-only formats (W4A16, W8A16): even on a B200, which has an FP4 peak."""
    assert lc.matmul_precision("int4", "B200") == "bf16" and lc.matmul_precision("int8", "H100 SXM") == "bf16"
    assert lc.matmul_precision("fp4", "B200") == "fp4" and lc.matmul_precision(1, "H100 SXM") == "fp8"
    with pytest.raises(InputError, match="unknown precision"):
        lc.matmul_precision("fp7", "H100 SXM")


def test_per_operation_bound_names_the_compute_bound_kernel():
    """Llama-3.1-8B on an H100 at batch 256, 8,000-token context, FP8 KV: the weight matmuls need
    256 x 2 x 8.03e9 / (0.5 x 989e12) = 8.3 ms against 16.06 GB / (0.7 x 3.35 TB/s) = 6.8 ms of weight reads,
    so they are compute-bound, although the totals (KV reads of 256 x 8,000 x 65,536 B = 134 GB dominate) say memory."""
    kw = dict(batch=256, context_tokens=8_000, kv_bytes="fp8")
    tot = lc.decode_step("Llama-3.1-8B", "H100 SXM", **kw)
    per_op = lc.decode_step("Llama-3.1-8B", "H100 SXM", assumptions=DEFAULT.replace(step_rule="sum"), **kw)
    assert tot.bound == "memory" and per_op.bound == "compute" and per_op.kernel_bounds == ("compute", "memory")


def test_fleet_refuses_a_replica_that_does_not_fit_and_mixed_methods():
    kw = dict(tensor_parallel=2, prompt_tokens=2_000, answer_tokens=400, weight_bytes="fp8")
    too_big = lc.replica("Llama-3.1-70B", "H100 SXM", batch=500, **kw)
    with pytest.raises(InputError, match="do not fit"):
        lc.fleet(Q_(140_000, "1/s"), too_big)
    course = lc.replica("Llama-3.1-70B", "H100 SXM", batch=64, **kw)
    with pytest.raises(InputError, match="build it with assumptions='capacity'"):
        lc.fleet(Q_(140_000, "1/s"), course, assumptions="capacity")
    assert lc.fleet(Q_(140_000, "1/s"), course, assumptions=DEFAULT.replace(headroom=2)).headroom == 2


def test_all_reduce_latency_is_paid_only_across_gpus():
    """Llama-3.1-70B, batch 4, on 2 H100s over NVLink 4 (0.8 us a flag, 450 GB/s at 80%), the engines' one-shot
    (3.5 us a kernel): one all-reduce of 4 x 8,192 x 2 B takes 3.5 + 0.8 + 65,536 / 360e9 s = 4.482 us, two per
    layer: 160 x 4.482 us = 0.717 ms more per step than without communication; none on one GPU. Under the ring
    (4.5 us base, 2 x 0.8 us of steps, (2 x 1 / 2) of the bytes): 6.282 us, 1.005 ms."""
    quiet = DEFAULT.replace(communication=False)
    kw = dict(batch=4, context_tokens=2_000, weight_bytes="fp8")
    two = [lc.decode_step("Llama-3.1-70B", "H100 SXM", n_gpus=2, assumptions=x, **kw) for x in (quiet, DEFAULT)]
    assert (two[1].step_time - two[0].step_time).to("ms").m == pytest.approx(160 * (3.5 + 0.8 + 65_536 / 360e3) / 1e3)
    ring = [x.replace(allreduce_algorithm="ring") for x in (quiet, DEFAULT)]
    two = [lc.decode_step("Llama-3.1-70B", "H100 SXM", n_gpus=2, assumptions=x, **kw) for x in ring]
    assert (two[1].step_time - two[0].step_time).to("ms").m == pytest.approx(160 * (4.5 + 1.6 + 65_536 / 360e3) / 1e3)
    one = [lc.decode_step("Llama-3.1-70B", "H100 SXM", n_gpus=1, assumptions=x, **kw) for x in (quiet, DEFAULT)]
    assert one[1].step_time == one[0].step_time


def test_cached_prefix_is_not_prefilled_again():
    """2,000-token prompt with 1,500 cached on Llama-3.1-8B: the linear FLOPs fall to 2 x 8.03e9 x 500 and the
    attention term to 2 x 32 x 32 x 128 x (2,000^2 - 1,500^2); the KV held (and so the batch) is unchanged."""
    kw = dict(prompt_tokens=2_000, answer_tokens=300)
    full = lc.replica("Llama-3.1-8B", "H100 SXM", **kw)
    hit = lc.replica("Llama-3.1-8B", "H100 SXM", cached_prompt_tokens=1_500, **kw)
    flops = 2 * 8.03e9 * 500 + 2 * 32 * 32 * 128 * (2_000**2 - 1_500**2)
    assert hit.first_prefill.flops.to("FLOP").m == pytest.approx(flops, rel=1e-3)
    assert hit.batch == full.batch and hit.throughput > full.throughput
    with pytest.raises(InputError, match="fewer than prompt_tokens"):
        lc.replica("Llama-3.1-8B", "H100 SXM", cached_prompt_tokens=2_000, **kw)


def test_kv_heads_are_replicated_past_the_kv_head_count():
    """Llama-3.1-70B has 8 KV heads: on 16 GPUs each keeps one, so the cache is stored twice.
    BF16 on 16 H100s, 4,096-token sequences: (16 x 72 GB - 141.1 GB) / (2 x 4,096 x 327,680 B) = 376 sequences,
    against 753 if the heads could be split 16 ways (the sources' methods, which leave replication out)."""
    w = 70.554e9 * 2
    per_seq = 4_096 * 327_680
    assert lc.max_batch("Llama-3.1-70B", "H100 SXM", 4_096, n_gpus=16) == int((16 * 72e9 - w) // (2 * per_seq))
    assert lc.max_batch("Llama-3.1-70B", "H100 SXM", 4_096, n_gpus=16, assumptions="envelope") == int(
        (16 * 72e9 - w) // per_seq
    )
    assert lc.max_batch("Llama-3.1-70B", "H100 SXM", 4_096, n_gpus=8) == int((8 * 72e9 - w) // per_seq)
    assert lc.kv_copies("DeepSeek-V3", 8) == 8 and lc.kv_copies("DeepSeek-V3", 8, "lab") == 1


def test_replicated_kv_is_read_by_every_copy():
    """Each GPU reads its own copy: the KV part of a 16-GPU step is twice what splitting 16 ways would read."""
    kw = dict(batch=32, context_tokens=4_096, n_gpus=16)
    on = lc.decode_step("Llama-3.1-70B", "H100 SXM", **kw)
    off = lc.decode_step("Llama-3.1-70B", "H100 SXM", assumptions=DEFAULT.replace(kv_replication=False), **kw)
    assert on.kv_read == 2 * off.kv_read and on.weights_read == off.weights_read


def test_speculation_is_an_option_of_the_replica_and_of_the_assumptions():
    """Off in every preset; given to replica() or set in the assumptions, the same speculative replica."""
    from llmcourse.replica.model import SpeculativeReplica
    from llmcourse.replica.speculative import Speculation

    assert all(p.speculation is None for p in PRESETS.values())
    spec = Speculation("eagle head", 4, 0.7)
    kw = dict(tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300, weight_bytes="fp8")
    by_arg = lc.replica("Llama-3.1-70B", "H100 SXM", speculation=spec, **kw)
    by_preset = lc.replica("Llama-3.1-70B", "H100 SXM", assumptions=DEFAULT.replace(speculation=spec), **kw)
    assert isinstance(by_arg, SpeculativeReplica) and by_arg.throughput == by_preset.throughput
    assert by_arg.tpot < lc.replica("Llama-3.1-70B", "H100 SXM", **kw).tpot
    brief = lc.Brief(5, 2_000, 300, Q_(1, "s"), Q_(50, "ms"))
    assert lc.plan(
        "Llama-3.1-70B", "H100 SXM", brief, speculation=spec, **{k: kw[k] for k in ("tensor_parallel", "weight_bytes")}
    ).fits
    with pytest.raises(InputError, match="speculation"):
        DEFAULT.replace(speculation="eagle")
