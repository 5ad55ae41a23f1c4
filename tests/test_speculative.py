"""Speculative decoding (llmcourse.replica.speculative and .acceptance, llmcourse.catalog.drafts,
llmcourse.planner.speculation, llmcourse.simulator.speculative, llmcourse.formulas.speculative).

Expected values are hand arithmetic written out here, never output of the code under test. The course's method
on an H100: 3.35 TB/s x 0.7 = 2.345 TB/s, 989 TFLOP/s x 0.5 = 494.5 TFLOP/s (BF16), 1,979 x 0.5 = 989.5 (FP8).
Llama 3.1 8B: 8.03e9 parameters, 131,072 B of KV per token (2 x 32 x 8 x 128 x 2 B). Llama 3.1 70B: 70.554e9,
327,680 B per token. The EAGLE-3 head of Llama 3.1 8B: 0.425e9 parameters, one layer: 2 x 1 x 8 x 128 x 2 = 4,096 B
of KV per token. Every decode step, the verification included, pays the course's fixed 1 ms (launches, scheduling);
a draft step runs inside the verification's engine step (rule speculative_overhead "per_cycle") and pays 0.03 ms
for an EAGLE head or an MTP block, 0.1 ms for a separate draft model; on one GPU there are no collectives.
"""

from __future__ import annotations

import math

import pytest
import sympy as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import llmcourse as lc
from llmcourse import Q_
from llmcourse.catalog.drafts import drafts
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.formulas import FORMULAS, dimension_of
from llmcourse.formulas.speculative import EXPECTED_TOKENS_SUM, best_draft_tokens_expression
from llmcourse.planner.speculation import best_draft_tokens, crossover_batch, crossover_estimate
from llmcourse.replica import Replica
from llmcourse.replica.acceptance import published
from llmcourse.replica.model import speculative_replica
from llmcourse.replica.speculative import (
    Speculation,
    acceptance_from_length,
    expected_tokens,
    speculative_memory,
    speculative_step,
)
from llmcourse.simulator.speculative import simulate

BW, BF16 = 3.35e12 * 0.7, 989e12 * 0.5  # the course's share of an H100's bandwidth and BF16 FLOP/s
FLOOR, STEP_OVER = 23e-6, 1e-3  # the course's floor of one layer's kernels, its fixed time per decode step (s)
OVER = STEP_OVER + 32 * FLOOR  # the fixed time of a decode step of Llama-3.1-8B: 1 ms and its 32 layers' floor (s)
# the course's fixed time per draft step of a head (and its one layer's floor) / a draft model (its own layers' floors
# besides) (s); a head step that pays the full per-step overhead (rule "per_step"): 1 ms and its layer's floor
HEAD_OVER, MODEL_OVER, HEAD_PER_STEP = 0.03e-3 + FLOOR, 0.1e-3, STEP_OVER + FLOOR
PER_STEP = lc.resolve().replace(speculative_overhead="per_step")  # each draft step pays the full 1 ms
EAGLE8 = Speculation("eagle head", 4, 0.7)
OURS = [n for n, f in FORMULAS.items() if f.chapter == "08b_speculative"]


def _tau(alpha: float, k: int) -> float:
    """1 + alpha + ... + alpha^k, added up term by term."""
    return sum(alpha**i for i in range(k + 1))


# --- the closed form and its twin -------------------------------------------------------------------------------
def test_expected_tokens_closed_form():
    """1 + 0.8 + 0.64 + 0.512 + 0.4096 = 3.3616; with nothing accepted, the target's own token only."""
    assert expected_tokens(0.8, 4) == 3.3616
    assert expected_tokens(0, 4) == 1


def test_the_sum_is_derived_by_sympy():
    """SymPy's geometric sum has the alpha = 1 branch (k + 1 tokens) and the general one the formula uses."""
    a, k = sp.Symbol(r"\alpha", positive=True), sp.Symbol("k_{d}", positive=True, integer=True)
    assert EXPECTED_TOKENS_SUM.subs({a: 1}).subs(k, 4) == 5
    general = FORMULAS["speculative_expected_tokens"].expr
    assert sp.simplify(general - (1 - a ** (k + 1)) / (1 - a)) == 0


def test_monte_carlo_twin_agrees_within_one_percent():
    """100,000 seeded verification steps at alpha = 0.7, k = 4: mean within 1% of 2.7731 (1 + .7 + .49 + .343 +
    .2401); the share of steps that accept nothing is 1 - 0.7 = 0.3 and of those that accept all four 0.7^4."""
    r = simulate(0.7, 4, trials=100_000, seed=3)
    assert abs(r.mean_tokens / 2.7731 - 1) < 0.01
    assert abs(r.mean_tokens - 2.7731) < 4 * r.std_error
    assert abs(r.counts[0] / r.trials - 0.3) < 0.01 and abs(r.counts[4] / r.trials - 0.7**4) < 0.01
    assert sum(r.counts) == r.trials


def test_monte_carlo_twin_times_a_cycle_with_the_overhead_once():
    """The twin's speed-up is the step's cycle time over its simulated tokens, against the plain step: Llama 3.1 8B +
    EAGLE-3 head, k = 3, alpha = 0.75, batch 1, 2,150 tokens: the cycle is 7.9688 + 3 x 0.39623 = 9.1575 ms (the
    1 ms once); S = mean x 7.9688 / 9.1575, within 1% of 2.379 (tau = 2.734375). A step of another speculation is
    refused."""
    spec = Speculation("eagle head", 3, 0.75)
    step = speculative_step("Llama-3.1-8B", "H100 SXM", spec, context_tokens=2_150)
    r = simulate(0.75, 3, trials=100_000, seed=11)
    plain = (16.06e9 + 131_072 * 2_150) / BW + OVER
    cycle = plain + 3 * ((0.85e9 + 4_096 * 2_150) / BW + HEAD_OVER)
    assert r.time_per_token(step).to("s").m == pytest.approx(cycle / r.mean_tokens, rel=1e-6)
    assert r.speedup(step) == pytest.approx(r.mean_tokens * plain / cycle, rel=1e-6)
    assert abs(r.speedup(step) / (2.734375 * plain / cycle) - 1) < 0.01
    with pytest.raises(InputError, match="same speculation"):
        simulate(0.7, 3, trials=100, seed=1).speedup(step)


def test_monte_carlo_is_seeded():
    """Same seed, same run; another seed, another run."""
    assert simulate(0.6, 3, trials=500, seed=7) == simulate(0.6, 3, trials=500, seed=7)
    assert simulate(0.6, 3, trials=500, seed=7).counts != simulate(0.6, 3, trials=500, seed=8).counts


def test_acceptance_from_length_inverts():
    """A length of 3.3616 at k = 4 is alpha = 0.8 (see above); the rate for 2.70 at k = 3 (EAGLE-3 on MT-Bench)
    satisfies 1 + a + a^2 + a^3 = 2.70, checked by adding the terms; a length of k + 1 or more is impossible."""
    assert acceptance_from_length(3.3616, 4) == pytest.approx(0.8, abs=1e-9)
    a = acceptance_from_length(2.70, 3)
    assert _tau(a, 3) == pytest.approx(2.70, abs=1e-9)
    with pytest.raises(InputError, match="below 4"):
        acceptance_from_length(4.1, 3)


# --- bad input ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "words"),
    [
        ((1.0, 4), "below 1"),
        ((-0.1, 4), "zero or more"),
        ((70, 4), "0.7 for 70%"),
        ((0.7, 0), "1 or more"),
        ((0.7, 2.5), "Round it: draft_tokens=2"),
        ((0.7, "four"), "whole number"),
    ],
)
def test_bad_acceptance_or_draft_length_says_what_to_change(args, words):
    """alpha outside [0, 1), k below 1 or not whole: an InputError that names the fix."""
    with pytest.raises(InputError, match=words):
        expected_tokens(*args)
    with pytest.raises(InputError, match=words):
        Speculation("ngram", args[1], args[0])


def test_bad_kind_and_draft_are_refused():
    """A misspelt kind gets a suggestion; n-gram takes no model; a draft model needs one; an unknown name is named."""
    with pytest.raises(InputError, match="Did you mean 'draft model'"):
        Speculation("draft", 4, 0.7, "Llama-3.1-8B")
    with pytest.raises(InputError, match="leave draft_model=None"):
        Speculation("ngram", 4, 0.7, "Llama-3.1-8B")
    with pytest.raises(InputError, match="needs draft_model"):
        Speculation("draft model", 4, 0.7)
    with pytest.raises(UnknownNameError, match="Did you mean"):
        Speculation("draft model", 4, 0.7, "Llama-3.1-8").draft_for("Llama-3.1-70B")
    with pytest.raises(InputError, match=r"no eagle head for Qwen2.5-7B"):
        Speculation("eagle head", 4, 0.7).draft_for("Qwen2.5-7B")
    with pytest.raises(InputError, match=r"a draft for Llama-3.1-8B, not for Llama-3.1-70B"):
        Speculation("eagle head", 4, 0.7, "EAGLE-3 Llama-3.1-8B").draft_for("Llama-3.1-70B")


def test_a_draft_larger_than_the_target_is_refused():
    """A 70B 'draft' for an 8B target: the error says to pick a smaller draft."""
    with pytest.raises(InputError, match=r"not smaller than the target Llama-3.1-8B.*smaller draft"):
        speculative_step(
            "Llama-3.1-8B", "H100 SXM", Speculation("draft model", 4, 0.7, "Llama-3.1-70B"), context_tokens=1_000
        )


def test_a_batch_that_does_not_fit_with_the_draft_is_refused():
    """Llama 3.1 70B FP8 on 2 x H100 with an FP8 8B draft, 2,300 tokens (+ 4 drafted held): usable 144 GB; weights
    70.554 + 8.03 GB leave 65.416 GB; per sequence 2,304 x (327,680 + 131,072) B = 1.056965 GB: 61 fit (61.9).
    Without the draft (144 - 70.554) / (2,300 x 327,680 B) = 97.45: 97."""
    spec = Speculation("draft model", 4, 0.7, "Llama-3.1-8B")
    kw = dict(context_tokens=2_300, tensor_parallel=2, weight_bytes="fp8")
    m = speculative_memory("Llama-3.1-70B", "H100 SXM", spec, **kw)
    assert (m.max_batch, m.plain_max_batch) == (61, 97)
    assert m.draft_memory(61).to("GB").m == pytest.approx(8.03 + 61 * 2_304 * 131_072 / 1e9)
    speculative_step("Llama-3.1-70B", "H100 SXM", spec, batch=61, **kw)
    with pytest.raises(InputError, match=r"at most 61 sequences fit.*Lower the batch to 61"):
        speculative_step("Llama-3.1-70B", "H100 SXM", spec, batch=62, **kw)


def test_weights_and_draft_that_do_not_fit_say_so():
    """Llama 3.1 70B in BF16 (141.1 GB) on one H100 (72 GB usable): add GPUs."""
    with pytest.raises(InputError, match=r"don't fit.*add GPUs"):
        speculative_step("Llama-3.1-70B", "H100 SXM", EAGLE8, context_tokens=1_000)


# --- the step, by hand -----------------------------------------------------------------------------------------------
def test_speedup_at_batch_one_by_hand():
    """Llama 3.1 8B + its EAGLE-3 head, batch 1, KV read at 2,150 tokens. Plain step (16.06e9 + 131,072 x 2,150) B /
    2.345 TB/s = 6.9688 ms + 1 ms + 32 layers x 23 us = 8.7048 ms; the verification over 5 positions is still
    memory-bound (5 x 16.06 GFLOP / 494.5 TFLOP/s = 0.162 ms), so it costs the same, its 1 ms the cycle's only one;
    a head step (0.85e9 + 4,096 x 2,150) B / 2.345 TB/s = 0.36623 ms + 0.03 ms + its one layer's 0.023 ms =
    0.41923 ms. S = 2.7731 x 8.7048 / (8.7048 + 4 x 0.41923) = 2.3252 (were each head step to pay the 1 ms,
    1.6926)."""
    plain = (16.06e9 + 131_072 * 2_150) / BW + OVER
    head = (0.85e9 + 4_096 * 2_150) / BW + HEAD_OVER
    s = speculative_step("Llama-3.1-8B", "H100 SXM", EAGLE8, context_tokens=2_150)
    assert s.plain.step_time.to("s").m == pytest.approx(plain, rel=1e-6)
    assert s.verify.step_time.to("s").m == pytest.approx(plain, rel=1e-6) and s.verify.bound == "memory"
    assert s.draft_step_time.to("s").m == pytest.approx(head, rel=1e-6)
    assert s.speedup == pytest.approx(2.7731 * plain / (plain + 4 * head), rel=1e-6)
    assert s.time_per_token.to("s").m == pytest.approx((plain + 4 * head) / 2.7731, rel=1e-6)
    assert s.tokens_per_s_per_user.to("1/s").m == pytest.approx(s.throughput.to("1/s").m)  # batch 1
    assert s.speedup == pytest.approx(2.3252, abs=1e-4) and s.draft.overhead_time.to("ms").m == pytest.approx(0.03)


def test_overhead_once_per_cycle_the_issue_figure():
    """Llama 3.1 8B + EAGLE-3 head on one H100, k = 3, alpha = 0.75, batch 1, KV read at 2,150 tokens:
    tau = 1 + 0.75 + 0.5625 + 0.421875 = (1 - 0.75^4) / 0.25 = 2.734375. The cycle pays the 1 ms once, with the
    verification (8.7048 ms, as a plain step: 1 ms and 32 layers x 23 us), and three head steps of 0.36623 + 0.03 +
    0.023 = 0.41923 ms: S = 2.734375 x 8.7048 / (8.7048 + 3 x 0.41923) = 23.802 / 9.9625 = 2.389. Were each head step
    a decode step of its own with the 1 ms (rule "per_step"): 2.734375 x 8.7048 / (8.7048 + 3 x 1.38923) = 1.849."""
    tau = (1 - 0.75**4) / (1 - 0.75)
    plain = (16.06e9 + 131_072 * 2_150) / BW + OVER
    bytes_head = (0.85e9 + 4_096 * 2_150) / BW
    spec = Speculation("eagle head", 3, 0.75)
    s = speculative_step("Llama-3.1-8B", "H100 SXM", spec, context_tokens=2_150)
    old = speculative_step("Llama-3.1-8B", "H100 SXM", spec, context_tokens=2_150, assumptions=PER_STEP)
    assert s.expected_tokens == pytest.approx(2.734375)
    assert s.speedup == pytest.approx(tau * plain / (plain + 3 * (bytes_head + HEAD_OVER)), rel=1e-6)
    assert old.speedup == pytest.approx(tau * plain / (plain + 3 * (bytes_head + HEAD_PER_STEP)), rel=1e-6)
    assert round(s.speedup, 2) == 2.39 and round(old.speedup, 2) == 1.85
    assert s.cycle_time.to("s").m == pytest.approx(plain + 3 * (bytes_head + HEAD_OVER), rel=1e-6)


def test_a_separate_draft_model_pays_more_per_draft_step():
    """Llama 3.1 70B (FP8, two H100s) with a Llama 3.1 8B draft model and with its EAGLE-3 head, batch 1: every part
    of a draft step but its fixed cost is the same under both rules, so moving from "per_step" (1 ms a draft step) to
    "per_cycle" takes 1 - 0.1 = 0.9 ms off each draft-model step and 1 - 0.03 = 0.97 ms off each head step; the
    verification and the plain step keep their 1 ms."""
    kw = dict(context_tokens=2_150, tensor_parallel=2, weight_bytes="fp8")
    for spec, saved in (
        (Speculation("draft model", 4, 0.7, "Llama-3.1-8B"), STEP_OVER - MODEL_OVER),
        (Speculation("eagle head", 4, 0.7), HEAD_PER_STEP - HEAD_OVER),
    ):
        new = speculative_step("Llama-3.1-70B", "H100 SXM", spec, **kw)
        old = speculative_step("Llama-3.1-70B", "H100 SXM", spec, assumptions=PER_STEP, **kw)
        assert (old.draft_step_time - new.draft_step_time).to("s").m == pytest.approx(saved, rel=1e-6)
        assert new.verify.step_time == old.verify.step_time and new.plain.step_time == old.plain.step_time
        assert new.verify.overhead_time.to("ms").m == 1.0
        assert (old.cycle_time - new.cycle_time).to("s").m == pytest.approx(4 * saved, rel=1e-6)


def test_source_presets_keep_a_draft_step_overhead_of_zero():
    """The sources' presets pay no per-step overhead, under either rule: a head step is its reads alone.
    Llama 3.1 8B's head at 2,150 tokens under "lab" (70% of the bandwidth): 0.36623 ms."""
    s = speculative_step("Llama-3.1-8B", "H100 SXM", EAGLE8, context_tokens=2_150, assumptions="lab")
    assert s.draft_step_time.to("s").m == pytest.approx((0.85e9 + 4_096 * 2_150) / BW, rel=1e-6)
    for name in ("envelope", "lab", "capacity", "planner"):
        assert lc.resolve(name).speculative_overhead == "per_step" and lc.resolve(name).step_overhead_ms == 0


def test_draft_overhead_fields_refuse_bad_values():
    """A negative draft step overhead or an unknown rule is refused, the field named."""
    with pytest.raises(InputError, match="draft_step_overhead_ms"):
        lc.resolve().replace(draft_step_overhead_ms=-0.01)
    with pytest.raises(InputError, match="draft_model_step_overhead_ms"):
        lc.resolve().replace(draft_model_step_overhead_ms=float("nan"))
    with pytest.raises(InputError, match=r"speculative_overhead.*Did you mean 'per_cycle'"):
        lc.resolve().replace(speculative_overhead="per cycle")


def test_verification_reads_the_cache_once_and_does_the_flops_of_every_position():
    """Batch 256 at 288 tokens: the verification reads 16.06 GB + 256 x 131,072 x 288 B = 25.72 GB, as the plain step,
    and does 256 x 5 x 16.06 GFLOP = 20,556.8 GFLOP: compute-bound, 20.5568e12 / 494.5e12 = 41.571 ms, + 1 ms."""
    s = speculative_step("Llama-3.1-8B", "H100 SXM", EAGLE8, batch=256, context_tokens=288)
    assert s.verify.kv_read == s.plain.kv_read
    assert (s.verify.weights_read + s.verify.kv_read).to("GB").m == pytest.approx(16.06 + 256 * 131_072 * 288 / 1e9)
    assert s.verify.flops.to("GFLOP").m == pytest.approx(256 * 5 * 16.06)
    assert s.verify.bound == "compute" and s.verify.step_time.to("ms").m == pytest.approx(
        (256 * 5 * 16.06e9 / BF16 + OVER) * 1e3
    )


def test_ngram_costs_no_draft_time_and_needs_no_memory():
    """An n-gram lookup: no draft step, no draft weights, no draft cache; at batch 1 the speed-up is tau."""
    s = speculative_step("Llama-3.1-8B", "H100 SXM", Speculation("ngram", 3, 0.5), context_tokens=1_000)
    assert s.draft is None and s.draft_step_time.m == 0
    assert s.memory.draft_weights.m == 0 and s.memory.draft_kv_per_sequence.m == 0
    assert s.speedup == pytest.approx(1 + 0.5 + 0.25 + 0.125)


# --- the crossover and the best draft length -------------------------------------------------------------------------
def _crossover_by_hand(overhead: float = OVER, draft_overhead: float = HEAD_OVER) -> float:
    """tau ((W + B K) / D + o) = (k + 1) B F_tok / C + o + k ((W_d + B K_d) / D + o_d) for Llama 3.1 8B + EAGLE head
    at 288 tokens: W = 16.06e9 B, K = 131,072 x 288 B, W_d = 0.85e9 B, K_d = 4,096 x 288 B, F_tok = 16.06e9 FLOP,
    k = 4, tau = 2.7731, D = 2.345e12 B/s, C = 494.5e12 FLOP/s, o = 1 ms a step and 32 layers x 23 us = 1.736 ms,
    o_d = 0.03 ms + one layer's 0.023 ms a head step, solved for B:
    B = ((tau W - k W_d) / D + (tau - 1) o - k o_d) / ((k + 1) F_tok / C + (k K_d - tau K) / D)
      = (17.542 ms + 3.0781 ms - 0.212 ms) / 0.11975 ms = 170.4; with o_d = 1.023 ms (each head step paying the
      1 ms): (17.542 + 3.0781 - 4.092) / 0.11975 = 138.0; with no fixed cost at all, 146.5."""
    tau, k = 2.7731, 4
    w, kv, wd, kvd, f = 16.06e9, 131_072 * 288, 0.85e9, 4_096 * 288, 16.06e9
    return ((tau * w - k * wd) / BW + (tau - 1) * overhead - k * draft_overhead) / (
        (k + 1) * f / BF16 + (k * kvd - tau * kv) / BW
    )


def test_crossover_closed_form_and_search():
    """The closed form's root (170.4) and the full model's first losing batch (171) agree; with each head step paying
    the 1 ms (rule "per_step") the root is 138.0 and the search finds 139; with no fixed cost at all, 146.5 and 147."""
    x = _crossover_by_hand()
    assert crossover_estimate("Llama-3.1-8B", "H100 SXM", EAGLE8, context_tokens=288) == pytest.approx(x, rel=1e-6)
    assert crossover_batch("Llama-3.1-8B", "H100 SXM", EAGLE8, context_tokens=288) == math.ceil(x)
    below = speculative_step("Llama-3.1-8B", "H100 SXM", EAGLE8, batch=math.floor(x), context_tokens=288)
    above = speculative_step("Llama-3.1-8B", "H100 SXM", EAGLE8, batch=math.ceil(x), context_tokens=288)
    assert below.speedup >= 1 > above.speedup
    assert below.plain.bound == "memory" and below.verify.bound == "compute"  # the regime the closed form assumes
    assert (
        170 < x < 171 and 146 < _crossover_by_hand(0, 0) < 147 and 138 < _crossover_by_hand(OVER, HEAD_PER_STEP) < 139
    )
    bare = lc.resolve().replace(step_overhead_ms=0, draft_step_overhead_ms=0, layer_floor_us=0)
    assert crossover_estimate("Llama-3.1-8B", "H100 SXM", EAGLE8, context_tokens=288, assumptions=bare) == (
        pytest.approx(_crossover_by_hand(0, 0), rel=1e-6)
    )
    assert crossover_batch("Llama-3.1-8B", "H100 SXM", EAGLE8, context_tokens=288, assumptions=bare) == 147
    assert crossover_estimate("Llama-3.1-8B", "H100 SXM", EAGLE8, context_tokens=288, assumptions=PER_STEP) == (
        pytest.approx(_crossover_by_hand(OVER, HEAD_PER_STEP), rel=1e-6)
    )
    assert crossover_batch("Llama-3.1-8B", "H100 SXM", EAGLE8, context_tokens=288, assumptions=PER_STEP) == 139


def test_ngram_crossover_pays_no_draft_overhead():
    """An n-gram lookup runs no step on the GPU, so its cycle pays the 1 ms once (the verification), for tau tokens
    that plain decode pays tau times: tau (W + B K) / D + tau o = (k + 1) B F_tok / C + o. With k = 3, alpha = 0.6
    (tau = 2.176) at 288 tokens, o = 1 ms and 32 layers x 23 us: B = (tau W / D + (tau - 1) o) / ((k + 1) F_tok / C -
    tau K / D) = 178.6."""
    tau, k = 1 + 0.6 + 0.36 + 0.216, 3
    w, kv, f = 16.06e9, 131_072 * 288, 16.06e9
    x = (tau * w / BW + (tau - 1) * OVER) / ((k + 1) * f / BF16 - tau * kv / BW)
    ngram = Speculation("ngram", 3, 0.6)
    assert crossover_estimate("Llama-3.1-8B", "H100 SXM", ngram, context_tokens=288) == pytest.approx(x, rel=1e-6)
    assert crossover_batch("Llama-3.1-8B", "H100 SXM", ngram, context_tokens=288) == math.ceil(x) == 179


def test_crossover_none_when_it_pays_everywhere_and_moe_refused():
    """At batch 1 an n-gram lookup can only help; a long context keeps the EAGLE head paying at every batch that
    fits; the closed form refuses a mixture of experts (its weight reads grow with the batch)."""
    assert crossover_batch("Llama-3.1-8B", "H100 SXM", Speculation("ngram", 2, 0.6), context_tokens=500, top=1) is None
    assert crossover_batch("Llama-3.1-8B", "H100 SXM", EAGLE8, context_tokens=8_000) is None
    with pytest.raises(InputError, match="mixture of experts"):
        crossover_estimate(
            "DeepSeek-V3",
            "H200 SXM",
            Speculation("mtp", 1, 0.85),
            context_tokens=2_000,
            tensor_parallel=8,
            weight_bytes="fp8",
        )


def test_best_draft_tokens_by_hand():
    """At batch 1 the verification stays memory-bound, so S(k) = tau(0.7, k) / (1 + k r) with
    r = 0.41923 / 8.7048 ms = 0.04816, a head step with its 0.03 ms and its layer's 0.023 ms (see the batch-1 test);
    its largest value over k = 1..16, by hand: k = 6, 2.3731 (k = 5: 2.3704, k = 7: 2.3492). Were each head step to
    pay the 1 ms, r = 1.38923 / 8.7048 = 0.1596 and the best k 3 (1.7129; k = 2: 1.6601, k = 4: 1.6926)."""
    plain = (16.06e9 + 131_072 * 2_150) / BW + OVER
    for a, over, best in ((None, HEAD_OVER, 6), (PER_STEP, HEAD_PER_STEP, 3)):
        r = ((0.85e9 + 4_096 * 2_150) / BW + over) / plain
        by_hand = max(range(1, 17), key=lambda k: _tau(0.7, k) / (1 + k * r))
        b = best_draft_tokens("Llama-3.1-8B", "H100 SXM", EAGLE8, context_tokens=2_150, assumptions=a)
        assert by_hand == best and b.draft_tokens == by_hand
        assert b.speedup == pytest.approx(_tau(0.7, by_hand) / (1 + by_hand * r), rel=1e-6)


def test_best_draft_tokens_lambert_w():
    """The solved optimum k* = (1 + W_-1(-alpha^(1/r - 1)/e)) / ln(alpha) - 1/r is where dS/dk = 0 and the
    integer optimum is one of its neighbours (alpha = 0.8, r = 0.05)."""
    expr = best_draft_tokens_expression()
    a, r = (next(s for s in expr.free_symbols if s.name == n) for n in (r"\alpha", "r_{d}"))
    k_star = float(expr.subs({a: 0.8, r: 0.05}))
    slope = lambda k: (1 - 0.8 ** (k + 1)) / 0.2 / (1 + 0.05 * k)  # noqa: E731
    assert slope(k_star) > slope(k_star - 0.01) and slope(k_star) > slope(k_star + 0.01)
    best = max(range(1, 30), key=slope)
    assert best in (math.floor(k_star), math.ceil(k_star))


# --- the replica model --------------------------------------------------------------------------------------------------
def test_speculative_replica_is_a_replica_the_fleet_takes():
    """The replica's time per token is the cycle per output token; throughput charges prefill as for any replica;
    the draft's weights count in the memory used; fleet() sizes it."""
    kw = dict(tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300, weight_bytes="fp8")
    r = speculative_replica("Llama-3.1-70B", "H100 SXM", EAGLE8, **kw)
    assert isinstance(r, Replica) and r.fits
    assert r.step.step_time == r.speculative.time_per_token
    assert r.max_batch == r.batch and r.memory_used <= r.usable_memory
    assert r.weights.to("GB").m == pytest.approx(70.554 + 1.4)
    x = lc.FORMULAS["cycle_throughput"](
        batch=r.batch, answer_tokens=300, prefill_time=r.batch_prefill.time, step_time=r.speculative.time_per_token
    )
    assert r.throughput.to("1/s").m == pytest.approx(x.to("1/s").m)
    f = lc.fleet(Q_(10_000, "1/s"), r)
    assert f.replicas == math.ceil(10_000 * lc.resolve().headroom / r.throughput.to("1/s").m)


def test_speculative_replica_that_does_not_fit():
    """A batch beyond what fits with the draft makes a replica that does not fit, with the reason."""
    r = speculative_replica(
        "Llama-3.1-70B",
        "H100 SXM",
        EAGLE8,
        tensor_parallel=2,
        batch=500,
        prompt_tokens=2_000,
        answer_tokens=300,
        weight_bytes="fp8",
    )
    assert not r.fits and "Lower the batch" in r.reason


# --- the data ---------------------------------------------------------------------------------------------------------
def test_published_rows_have_sources_and_possible_values():
    """Every figure cites a source; rates are in [0, 1); lengths at least 1 and at most k + 1 where k is given."""
    rows = published()
    assert len(rows) >= 30 and all(r.source for r in rows)
    assert {r.kind for r in rows} == {"draft model", "eagle head", "mtp", "ngram"}
    for r in rows:
        if r.figure == "acceptance_rate":
            assert 0 <= r.value < 1
        if r.figure == "acceptance_length":
            assert r.value >= 1 and (r.draft_tokens is None or r.value <= r.draft_tokens + 1)
        if r.implied_acceptance is not None:
            assert 0 <= r.implied_acceptance < 1


def test_chat_and_code_figures_are_there():
    """EAGLE-3 on gpt-oss-20b at k = 3: MT-Bench (chat) 2.70, HumanEval (code) 2.65 (the vLLM post's figures)."""
    rows = {
        (r.domain, r.draft_tokens): r.value
        for r in published("eagle head")
        if r.target == "gpt-oss-20b" and r.method.startswith("EAGLE-3")
    }
    assert rows[("chat", 3)] == 2.70 and rows[("code", 3)] == 2.65


def test_draft_heads_match_their_counts():
    """DeepSeek-V3's MTP block by hand from its config: MLA attention 7168 x 1536 + 1536 + 1536 x 128 x 192 +
    7168 x 576 + 512 + 512 x 128 x 256 + 128 x 128 x 7168 = 187,107,328; an expert 3 x 7168 x 2048 = 44,040,192;
    router 7168 x 256; eh_proj 14336 x 7168; norms 5 x 7168. Total with 257 experts 11.61 B, per token (9 experts)
    0.688 B. Its cache: one MLA layer, (512 + 64) x 2 B = 1,152 B per token."""
    attention = 7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256 + 128 * 128 * 7168
    expert, fixed = 3 * 7168 * 2048, attention + 7168 * 256 + 14336 * 7168 + 5 * 7168
    d = drafts()["DeepSeek-V3 MTP"]
    assert d.params == pytest.approx(fixed + 257 * expert, rel=1e-3)
    assert d.active_params == pytest.approx(fixed + 9 * expert, rel=1e-3)
    assert lc.kv_bytes_per_token(d).to("B").m == (512 + 64) * 2
    assert lc.kv_bytes_per_token(drafts()["EAGLE-3 Llama-3.1-8B"]).to("B").m == 2 * 8 * 128 * 2


# --- the formulas ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", OURS)
def test_formulas_are_dimensionally_consistent(name):
    """Each of the chapter's formulas has its target's dimension."""
    f = FORMULAS[name]
    assert dimension_of(f.expr) == Q_(1, f.unit).dimensionality


@pytest.mark.parametrize("name", OURS)
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_formula_numeric_equals_expression(name, data):
    """lambdify's function equals SymPy's evaluation, with each input in its symbol's range (alpha below 1)."""
    f = FORMULAS[name]
    values = {}
    for s in f.inputs:
        if s.integer:
            values[s] = data.draw(st.integers(1, 64))
        else:
            values[s] = data.draw(st.floats(0.01, 0.99 if s.at_most == 1 else 1e4))
    exact = f.expr.subs({s.sym: sp.Float(v) if not s.integer else v for s, v in values.items()}).evalf()
    if not (exact.is_finite and exact.is_real):
        return  # a pole (a crossover that does not exist)
    assert f.numeric(*[values[s] for s in f.inputs]) == pytest.approx(float(exact), rel=1e-9, abs=1e-12)


# --- properties ------------------------------------------------------------------------------------------------------------
alphas = st.floats(0, 0.99)
ks = st.integers(1, 12)


@given(alphas, ks)
def test_expected_tokens_bounds(a, k):
    """1 <= tau <= k + 1, and tau < 1 / (1 - alpha): never more than the draft offers or the rate allows."""
    tau = expected_tokens(a, k)
    assert 1 <= tau <= k + 1 + 1e-9 and tau <= 1 / (1 - a) + 1e-9
    assert tau == pytest.approx(_tau(a, k), rel=1e-9)


@given(alphas, alphas, ks)
def test_expected_tokens_grows_with_acceptance_and_length(a, b, k):
    """A higher rate, or one more draft token, never gives fewer tokens per step."""
    lo, hi = sorted((a, b))
    assert expected_tokens(lo, k) <= expected_tokens(hi, k) + 1e-12
    assert expected_tokens(a, k) <= expected_tokens(a, k + 1) + 1e-12


@settings(max_examples=25, deadline=None)
@given(a=alphas, k=ks, batch=st.integers(1, 200), kind=st.sampled_from(["eagle head", "ngram"]))
def test_speedup_never_beats_tau_and_grows_with_acceptance(a, k, batch, kind):
    """The verification costs at least a plain step, so S <= tau; a better rate never slows it."""
    spec = Speculation(kind, k, a)
    s = speculative_step("Llama-3.1-8B", "H100 SXM", spec, batch=batch, context_tokens=1_000)
    assert s.speedup <= s.expected_tokens * (1 + 1e-9)
    better = speculative_step(
        "Llama-3.1-8B", "H100 SXM", spec.with_(acceptance=min(0.99, a + 0.05)), batch=batch, context_tokens=1_000
    )
    assert better.speedup >= s.speedup * (1 - 1e-9)
    assert s.throughput.to("1/s").m == pytest.approx(s.speedup * s.plain_throughput.to("1/s").m, rel=1e-9)


@settings(max_examples=15, deadline=None)
@given(ctx=st.integers(256, 16_000), k=ks)
def test_a_draft_never_lets_more_sequences_fit(ctx, k):
    """Its weights and cache take memory: the largest batch with a draft is never above the plain one."""
    for spec in (Speculation("draft model", k, 0.7, "Llama-3.1-8B"), Speculation("eagle head", k, 0.7)):
        m = speculative_memory(
            "Llama-3.1-70B", "H100 SXM", spec, context_tokens=ctx, tensor_parallel=2, weight_bytes="fp8"
        )
        assert m.max_batch <= m.plain_max_batch


# --- the calculators and the plot ------------------------------------------------------------------------------------
def test_calculator_rows_and_errors():
    """The calculator shows the step's speed-up, and a batch that does not fit with the draft as a message."""
    from llmcourse.widgets.speculative import speculative_calculator

    c = speculative_calculator(
        model="Llama-3.1-8B", tensor_parallel=1, precision="bf16", kind="eagle head", context_tokens=2_150
    )
    plain = (16.06e9 + 131_072 * 2_150) / BW + OVER
    head = (0.85e9 + 4_096 * 2_150) / BW + HEAD_OVER
    assert dict(c.rows)["speed-up"] == f"{2.7731 * plain / (plain + 4 * head):.2f}x"
    c.set(kind="draft model", draft_model="Llama-3.1-70B")
    assert c.error is not None and "not smaller than the target" in c.error


def test_twin_calculator_agrees():
    """The live twin's simulated mean is within 1% of the closed form 2.7731 at alpha = 0.7, k = 4."""
    from llmcourse.widgets.speculative import speculative_twin_calculator

    rows = dict(speculative_twin_calculator(trials=50_000, seed=5).rows)
    assert rows["closed form (1 - alpha^(k+1)) / (1 - alpha)"].startswith("2.7731")
    assert abs(float(rows["difference"].rstrip("%"))) < 1


def test_plot_marks_each_crossover():
    """One line per draft length, each crossover marked on the speed-up = 1 line; axes labelled."""
    import matplotlib

    matplotlib.use("Agg")
    from llmcourse.plots.speculative import speedup_against_batch

    ax = speedup_against_batch(
        "Llama-3.1-8B", "H100 SXM", EAGLE8, context_tokens=288, draft_lengths=(2, 4), max_batch=512
    )
    labels = [line.get_label() for line in ax.get_lines()]
    assert "k = 4: costs throughput from 171" in labels  # the crossover test's batch
    markers = [line for line in ax.get_lines() if line.get_marker() == "o"]
    assert len(markers) == 2 and all(list(m.get_ydata()) == [1] for m in markers)
    assert "batch" in ax.get_xlabel() and "speed-up" in ax.get_ylabel()


def test_the_unchecked_step_takes_speculative_step_s_arguments_and_its_set_up():
    """speculative._speculative_step (speculative_step() for checked inputs) mirrors its signature, plus the
    decode steps a caller set up once: a parameter added to speculative_step() must be added there too, and to
    shared_speculative_step() (the same with its checks, for the calculator), whose signature is the unchecked one."""
    import inspect

    from llmcourse.replica.speculative import _speculative_step, shared_speculative_step, speculative_step

    mine = [p for p in inspect.signature(_speculative_step).parameters.values() if p.name != "steps"]
    assert mine == list(inspect.signature(speculative_step).parameters.values())
    assert inspect.signature(shared_speculative_step) == inspect.signature(_speculative_step)


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(["Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-72B", "Mixtral-8x7B", "Qwen3-30B-A3B"]),
    gpu=st.sampled_from(["H100 SXM", "A100 SXM 80GB", "L40S", "H200 SXM"]),
    tp=st.sampled_from([1, 2, 4]),
    weights=st.sampled_from([2, "fp8", "int4"]),
    kv=st.sampled_from([2, "fp8"]),
    method=st.sampled_from(["course", "envelope", "planner", "capacity", "lab"]),
    context=st.integers(256, 20_000),
    k=st.integers(1, 6),
)
def test_speculative_memory_is_the_planners_memory(model, gpu, tp, weights, kv, method, context, k):
    """speculative_memory sizes on the planner's plain floats: without a draft (n-gram), its figures are the public
    functions' (weights, usable memory, KV per sequence at the context plus the k drafted tokens, the largest batch),
    and ``plain_max_batch`` is max_batch() of the target alone. (Every model here splits over 1, 2 or 4 GPUs.)"""
    kw = dict(weight_bytes=weights, kv_bytes=kv, assumptions=method)
    mem = speculative_memory(model, gpu, Speculation("ngram", k, 0.6), context_tokens=context, tensor_parallel=tp, **kw)
    w = lc.weight_bytes(model, weights)
    assert math.isclose(mem.weights.to("B").m, w.to("B").m, rel_tol=1e-12)
    usable = lc.usable_memory(gpu, tp, weights=w, assumptions=method)
    assert math.isclose(mem.usable_memory.to("B").m, usable.to("B").m, rel_tol=1e-12)
    per_seq = lc.kv_bytes_per_sequence(model, context + k, kv) * lc.kv_copies(model, tp, method)
    assert math.isclose(mem.kv_per_sequence.to("B").m, per_seq.to("B").m, rel_tol=1e-12)
    assert mem.draft_weights.m == 0 and mem.draft_kv_per_sequence.m == 0
    assert mem.max_batch == lc.max_batch(model, gpu, context + k, n_gpus=tp, **kw)
    assert mem.plain_max_batch == lc.max_batch(model, gpu, context, n_gpus=tp, **kw)


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(["Llama-3.1-70B", "Qwen2.5-72B"]),
    gpu=st.sampled_from(["H100 SXM", "A100 SXM 80GB", "H200 SXM"]),
    tp=st.sampled_from([1, 2, 4]),
    weights=st.sampled_from([2, "fp8", "int4"]),
    draft_weights=st.sampled_from([None, 2, "int4"]),
    kv=st.sampled_from([2, "fp8"]),
    method=st.sampled_from(["course", "envelope", "planner", "capacity", "lab"]),
    context=st.integers(256, 20_000),
    k=st.integers(1, 6),
)
def test_speculative_memory_with_a_draft_model_is_the_public_functions(
    model, gpu, tp, weights, draft_weights, kv, method, context, k
):
    """With a draft model, the draft's weights and KV per sequence are the public functions' for the draft (its KV
    at the context plus the k drafted tokens, each copy a tensor-parallel replica keeps), the usable memory is the
    GPUs' with both sets of weights, and the largest batch is the sequences whose two caches fit beside them."""
    draft = "Llama-3.1-8B"
    spec = Speculation("draft model", k, 0.6, draft, draft_weight_bytes=draft_weights)
    kw = dict(weight_bytes=weights, kv_bytes=kv, assumptions=method)
    mem = speculative_memory(model, gpu, spec, context_tokens=context, tensor_parallel=tp, **kw)
    wd = lc.weight_bytes(draft, draft_weights or weights)
    assert math.isclose(mem.draft_weights.to("B").m, wd.to("B").m, rel_tol=1e-12)
    kd = lc.kv_bytes_per_sequence(draft, context + k, kv) * lc.kv_copies(draft, tp, method)
    assert math.isclose(mem.draft_kv_per_sequence.to("B").m, kd.to("B").m, rel_tol=1e-12)
    both = lc.weight_bytes(model, weights) + wd
    usable = lc.usable_memory(gpu, tp, weights=both, assumptions=method)
    assert math.isclose(mem.usable_memory.to("B").m, usable.to("B").m, rel_tol=1e-12)
    room = ((usable - both) / (mem.kv_per_sequence + kd)).to("dimensionless").m
    assume(abs(room - round(room)) > 1e-9 * max(1.0, abs(room)))  # at an edge, float rounding decides the side
    assert mem.max_batch == max(0, math.floor(room))
