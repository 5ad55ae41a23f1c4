"""Ranking the levers by re-running plan(): what each lever changes, and what it must not.

Expected values are hand arithmetic (in the docstrings), never outputs of the code under test.
"""

from __future__ import annotations

import pytest

import llmcourse as lc
from llmcourse import Q_
from llmcourse.errors import InputError
from llmcourse.planner.levers import LEVER_NAMES, prefix_cached_plan, rank_levers, verdict

BRIEF = lc.Brief(20, 3_600, 400, Q_(1, "s"), Q_(40, "ms"))  # within Llama 2 13B's 4,096 positions


def by_name(levers):
    return {x.name: x for x in levers}


def test_every_lever_is_reported_once():
    """Eight levers, each named once."""
    assert sorted(x.name for x in rank_levers("Llama-2-13B", "H100 SXM", BRIEF)) == sorted(LEVER_NAMES)


def test_ranked_by_kind_then_gpus_saved():
    """Engineering levers first, then the model change (GQA), then the product change (shorter contexts); within a
    kind, those that meet the targets first, each by GPUs saved (most first)."""
    levers = rank_levers("Llama-2-13B", "H100 SXM", BRIEF)
    kinds = [x.kind for x in levers]
    assert kinds == sorted(kinds, key=["engineering", "model", "product"].index)
    assert by_name(levers)["shorter contexts"].kind == "product" and by_name(levers)["GQA, 8 KV heads"].kind == "model"
    engineering = ("FP8 KV cache", "INT4 weights", "EAGLE head", "disaggregation", "small token budget")
    assert {by_name(levers)[n].kind for n in engineering} == {"engineering"}
    for kind in ("engineering", "model", "product"):
        mine = [(not x.meets_targets, -x.saved) for x in levers if x.kind == kind]
        assert mine == sorted(mine)
    assert by_name(levers)["shorter contexts"].row()[0] == "shorter contexts (product change)"


def test_the_eagle_head_lever():
    """Llama 3.1 70B has an EAGLE-3 head in the draft catalog: the lever plans with it, four draft tokens at an
    acceptance of 0.7, (1 - 0.7^5) / (1 - 0.7) = 2.7731 tokens a verification step. Llama 2 13B has none: the lever
    does not apply and saves nothing."""
    from llmcourse.replica.speculative import Speculation

    kw = dict(weight_bytes="fp8", tensor_parallel=2)
    eagle = by_name(rank_levers("Llama-3.1-70B", "H100 SXM", BRIEF, **kw))["EAGLE head"]
    spec = lc.plan("Llama-3.1-70B", "H100 SXM", BRIEF, speculation=Speculation("eagle head", 4, 0.7), **kw)
    assert eagle.applies and eagle.gpus == spec.gpus and "2.77 tokens" in eagle.note
    none = by_name(rank_levers("Llama-2-13B", "H100 SXM", BRIEF))["EAGLE head"]
    assert not none.applies and none.saved == 0 and "no EAGLE head" in none.note


def test_the_disaggregation_lever_is_the_pools_of_the_baseline_shape():
    """The split: a prefill pool and a decode pool of the baseline's two-GPU replicas, at its precisions; its GPUs
    are the two pools', its cost those GPUs at the baseline's price."""
    from llmcourse.planner.disagg import disaggregated

    kw = dict(weight_bytes="fp8", tensor_parallel=2)
    split = by_name(rank_levers("Llama-3.1-70B", "H100 SXM", BRIEF, **kw))["disaggregation"]
    d = disaggregated("Llama-3.1-70B", "H100 SXM", BRIEF, prefill_tensor_parallel=2, decode_tensor_parallel=2,
                      weight_bytes="fp8")  # fmt: skip
    assert split.gpus == d.prefill.gpus + d.decode.gpus and split.meets_targets == d.meets_targets
    assert split.cost_per_hour.to("USD/hour").m == pytest.approx(
        d.gpus * lc.gpus["H100 SXM"].price_per_hour.to("USD/hour").m
    )


def test_the_small_token_budget_lever():
    """The design review's brief (Llama 3.1 70B FP8 on two H100s, 20 requests/s, 4,000-token prompts, 400-token
    answers, targets 1 s and 40 ms). The lever's budget is B (1 + T_p / T_a) = 11 B for a whole B of at least the
    baseline's batch. At that budget a prompt takes its chunk steps t one after another and the pair's room holds
    about one prompt's chunk a step, so its prompts queue as M/D/1: rho = 20 t / n over n pairs, wait
    rho t / (2 (1 - rho)). The lever's first token is the plan's plus that wait, within the 1 s target, and at one
    pair fewer it is over the target: the lever's pairs are the fewest that meet it (at least the plan's own)."""
    brief = lc.Brief(20, 4_000, 400, Q_(1, "s"), Q_(40, "ms"))
    kw = dict(weight_bytes="fp8", tensor_parallel=2)
    base = lc.plan("Llama-3.1-70B", "H100 SXM", brief, **kw)
    lever = by_name(rank_levers("Llama-3.1-70B", "H100 SXM", brief, **kw))["small token budget"]
    budget = int(lever.note.split()[0].replace(",", ""))
    assert budget % 11 == 0 and budget // 11 >= base.batch and lever.applies and lever.meets_targets
    at = lc.plan("Llama-3.1-70B", "H100 SXM", brief, engine=lc.EngineSettings(max_batched_tokens=budget), **kw)
    t = at.replica.engine_step.first_token_prefill.to("s").m

    def first_token(pairs: int) -> float:
        rho = 20 * t / pairs
        return at.ttft.to("s").m + (rho * t / (2 * (1 - rho)) if rho < 1 else float("inf"))

    n = lever.gpus // 2
    assert lever.ttft.to("s").m == pytest.approx(first_token(n)) and first_token(n) <= 1.0
    assert n == at.gpus // 2 or first_token(n - 1) > 1.0
    assert lever.ttft > base.ttft and lever.saved == base.gpus - lever.gpus > 0


def test_the_small_token_budget_lever_does_not_apply_where_it_cannot():
    """llama.cpp runs prompts apart; an engine already at a budget smaller than any the lever would try is left."""
    from llmcourse.replica.scheduler import EngineSettings

    cpp = by_name(rank_levers("Llama-3.1-8B", "H100 SXM", BRIEF, engine="llama.cpp"))["small token budget"]
    assert not cpp.applies and cpp.saved == 0 and "llama.cpp" in cpp.note
    tiny = EngineSettings(max_batched_tokens=64, max_running=64)
    small = by_name(rank_levers("Llama-3.1-8B", "H100 SXM", BRIEF, engine=tiny))["small token budget"]
    assert not small.applies and "64 tokens" in small.note


def test_fp8_kv_does_not_apply_to_a_one_byte_cache():
    """A cache already at one byte per value has nothing for the FP8 KV lever to halve."""
    kw = dict(weight_bytes="fp8", tensor_parallel=2, kv_bytes="fp8")
    f = by_name(rank_levers("Llama-3.1-70B", "H100 SXM", BRIEF, **kw))["FP8 KV cache"]
    assert not f.applies and f.saved == 0


def test_gqa_helps_a_multi_head_model():
    """Llama-2-13B has 40 KV heads (800 KiB per token); 8 heads cut KV per request 5x, so it saves GPUs."""
    assert lc.kv_bytes_per_token("Llama-2-13B").to("KiB").m == 800
    g = by_name(rank_levers("Llama-2-13B", "H100 SXM", BRIEF))["GQA, 8 KV heads"]
    assert g.applies and g.saved > 0 and "/ 5" in g.note


def test_gqa_does_nothing_for_a_model_with_8_kv_heads():
    """Llama-3.1-8B already has 8 KV heads: the lever does not apply and saves nothing."""
    g = by_name(rank_levers("Llama-3.1-8B", "H100 SXM", BRIEF))["GQA, 8 KV heads"]
    assert not g.applies and g.saved == 0


def test_int4_makes_a_72b_model_fit_one_gpu():
    """Qwen2.5-72B in FP8 is 72.7 GB > 72 GB usable on one H100; in INT4, 36.4 GB fits."""
    base = lc.plan("Qwen2.5-72B", "H100 SXM", BRIEF, weight_bytes="fp8")
    assert not base.fits
    levers = by_name(rank_levers("Qwen2.5-72B", "H100 SXM", BRIEF, weight_bytes="fp8"))
    assert levers["INT4 weights"].fits and levers["INT4 weights"].saved is None
    assert not levers["FP8 KV cache"].fits and "don't fit" in levers["FP8 KV cache"].note


def test_levers_never_cost_gpus_for_a_kv_bound_model():
    """Less KV or less prefill can only let each GPU do more, and so do INT4 weights here: by the course's method a
    4-bit decode step reads its weights at 0.6 x 70% of the bandwidth and the KV cache at the usual 70% (attention
    does not care about the weights' format). At the plan's batch of 14, KV read at 3,600 + 400 / 2 = 3,800 tokens:
    BF16 (26e9 + 14 x 3,800 x 819,200) B / (0.7 x 3.35 TB/s) = 29.67 ms, INT4 6.5e9 B / (0.42 x 3.35 TB/s) + 43.58e9
    B / (0.7 x 3.35 TB/s) = 4.62 + 18.58 = 23.20 ms: faster, so it saves GPUs. Were the KV read at 0.42 too, INT4
    would take (6.5e9 + 43.58e9) B / (0.42 x 3.35 TB/s) = 35.59 ms and cost GPUs."""
    levers = by_name(rank_levers("Llama-2-13B", "H100 SXM", BRIEF))
    less = ("GQA, 8 KV heads", "FP8 KV cache", "shorter contexts", "prefix caching")  # less KV or less prefill
    assert all(levers[name].saved >= 0 for name in less)
    kv = 14 * 3_800 * 819_200
    bf16, int4 = (26e9 + kv) / (0.7 * 3.35e12), 6.5e9 / (0.6 * 0.7 * 3.35e12) + kv / (0.7 * 3.35e12)
    assert int4 < bf16 and levers["INT4 weights"].saved > 0


def test_prefix_caching_cuts_prefill_not_memory():
    """8B, 2,000-token prompt, hit rate 0.5, the course's method (50% of 989 TFLOP/s = 494.5 TFLOP/s, 70% of
    3.35 TB/s = 2.345 TB/s, prefill with its causal attention term 2 x layers x heads x head_dim x T^2 = 262,144 x T^2
    FLOP, 1 ms a step and 100 ms per request before its prefill). vLLM runs a new prompt as a chunk of one step
    beside the other B - 1 requests' decode tokens: the step's matmuls are those of its B - 1 + new tokens (2 x 8.03e9
    FLOPs each), or the 16.06 GB of weights read, whichever is slower; then attention: the B - 1 caches at 2,150 tokens
    (131,072 B a token) and the cached tokens' KV the chunk reads, or the chunk's attention FLOPs 262,144 x (T^2 -
    cached^2); then 1 ms and the 32 layers' floor of 23 us each. The 1,000 new tokens attend to the cached ones.
    The KV per request is the full prompt's, because the cached KV is still held; fewer prompt tokens ride in a
    user's steps, so the per-token target allows at least the same batch."""
    b = lc.Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms"))
    p, full = prefix_cached_plan("Llama-3.1-8B", "H100 SXM", b, 0.5), lc.plan("Llama-3.1-8B", "H100 SXM", b)

    def first_ms(batch, new, cached):
        matmuls = max(16.06e9 / 2.345e12, (batch - 1 + new) * 2 * 8.03e9 / 494.5e12)
        reads = ((batch - 1) * 2_150 + cached) * 131_072 / 2.345e12
        attention = max(reads, 262_144 * ((cached + new) ** 2 - cached**2) / 494.5e12)
        return 100 + (matmuls + attention) * 1e3 + 1 + 32 * 23e-3

    assert p.ttft.to("ms").m == pytest.approx(first_ms(p.batch, 1_000, 1_000), rel=1e-3)
    assert full.ttft.to("ms").m == pytest.approx(first_ms(full.batch, 2_000, 0), rel=1e-3)
    assert p.kv_per_request == full.kv_per_request and p.max_batch == full.max_batch
    assert p.batch >= full.batch and p.tpot <= b.tpot_target


def test_prefix_caching_saves_gpus_only_where_prefill_is_charged():
    """The capacity-planning method charges no prefill: caching prompts shortens the first token
    and leaves the fleet as it is. The course's method charges it: the fleet can only shrink."""
    b = lc.Brief(20, 4_000, 400, Q_(1, "s"), Q_(40, "ms"))
    kw = dict(weight_bytes="fp8", tensor_parallel=2)
    cap = prefix_cached_plan("Llama-3.1-70B", "H100 SXM", b, 0.5, assumptions="capacity", **kw)
    cap_full = lc.plan("Llama-3.1-70B", "H100 SXM", b, assumptions="capacity", **kw)
    assert cap.gpus == cap_full.gpus and cap.ttft < cap_full.ttft
    course = prefix_cached_plan("Llama-3.1-70B", "H100 SXM", b, 0.5, **kw)
    assert course.gpus < lc.plan("Llama-3.1-70B", "H100 SXM", b, **kw).gpus


def test_prefix_caching_at_zero_hit_rate_is_the_plan():
    """A hit rate of 0 caches nothing: the same GPUs as plan()."""
    p = prefix_cached_plan("Llama-3.1-70B", "H100 SXM", BRIEF, 0.0, weight_bytes="fp8", tensor_parallel=2)
    assert p.gpus == lc.plan("Llama-3.1-70B", "H100 SXM", BRIEF, weight_bytes="fp8", tensor_parallel=2).gpus


def test_fp8_kv_halves_kv():
    """FP8 KV is 1 byte per value instead of 2: half the KV per request."""
    full = lc.plan("Llama-2-13B", "H100 SXM", BRIEF)
    half = lc.plan("Llama-2-13B", "H100 SXM", BRIEF, kv_bytes="fp8")
    assert half.kv_per_request.to("GB").m == pytest.approx(full.kv_per_request.to("GB").m / 2)
    assert by_name(rank_levers("Llama-2-13B", "H100 SXM", BRIEF))["FP8 KV cache"].gpus == half.gpus


@pytest.mark.parametrize(
    "kw, msg",
    [
        (dict(hit_rate=1.0), "below 1"),
        (dict(hit_rate=-0.1), "hit_rate"),
        (dict(context_fraction=0), "context_fraction"),
    ],
)
def test_bad_input(kw, msg):
    """Hit rates of 1 or below 0, and a zero context fraction, are refused."""
    with pytest.raises(InputError, match=msg):
        rank_levers("Llama-3.1-8B", "H100 SXM", BRIEF, **kw)


def test_verdict_says_why():
    """70B FP8 on one H100 reads 70.6 GB per step, 21 ms at 3.35 TB/s: a 10 ms per-token target is missed."""
    p = lc.plan("Llama-3.1-70B", "H100 SXM", lc.Brief(5, 2_000, 300, Q_(2, "s"), Q_(10, "ms")), weight_bytes="fp8")
    v = verdict(p)
    assert not p.meets_targets and v.startswith("misses") and "per token" in v and "weight reads" in v


def test_lever_plan_takes_plan_s_arguments():
    """The lever ranking's plan (llmcourse.planner.design.lever_plan) mirrors plan()'s signature, so the same arguments get the
    same checks: a parameter added to plan() must be added there too."""
    import inspect

    from llmcourse.planner.design import lever_plan, plan

    assert list(inspect.signature(lever_plan).parameters.values()) == list(inspect.signature(plan).parameters.values())
