"""Disaggregated serving: the KV hand-off, the prefill pool's queue, sizing the two pools, the measured rows."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llmcourse as lc
from llmcourse import Q_
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.formulas import FORMULAS as F
from llmcourse.planner.design import Brief
from llmcourse.planner.disagg import (
    MoeLayout,
    compare,
    disaggregated,
    kv_handoff,
    pool_link,
)
from llmcourse.replica.model import replica
from llmcourse.replica.step import decode_step
from llmcourse.validation.disagg import measured_factors, measured_rows, predict_row

COURSE = lc.resolve()
BRIEF = Brief(20, 2_000, 300, Q_(600, "ms"), Q_(40, "ms"))
SHAPE = dict(prefill_tensor_parallel=4, decode_tensor_parallel=4, weight_bytes="fp8")


@pytest.fixture(scope="module")
def sized():
    return disaggregated("Llama-3.1-70B", "H100 SXM", BRIEF, **SHAPE)


def test_handoff_of_a_70b_prompt_by_hand():
    """2,000 tokens x 320 KiB = 655.36 MB over 50 GB/s at the link efficiency, plus 5 + 2.5 us."""
    kv = 2_000 * 320 * 1024  # bytes: 2 x 80 layers x 8 KV heads x 128 values x 2 bytes = 320 KiB a token
    expected_s = 5e-6 + 2.5e-6 + kv / (50e9 * COURSE.link_efficiency)
    got = kv_handoff("Llama-3.1-70B", 2_000, link="InfiniBand NDR")
    assert got.to("s").m == pytest.approx(expected_s, rel=1e-9)


def test_handoff_splits_over_lanes():
    """Four lanes carry the bytes four times as fast; the fixed cost and latency stay."""
    one = kv_handoff("Llama-3.1-70B", 8_000, link="InfiniBand NDR").to("s").m
    four = kv_handoff("Llama-3.1-70B", 8_000, link="InfiniBand NDR", kv_lanes=4).to("s").m
    fixed = 7.5e-6
    assert four - fixed == pytest.approx((one - fixed) / 4, rel=1e-9)


def test_mdc_wait_with_one_replica_is_pollaczek_khinchine():
    """One server: Sakasegawa's wait is M/D/1's exact rho t / (2 (1 - rho)) (0.8 x 100 / 0.4 = 200 ms)."""
    w = F["mdc_wait"](prefill_utilisation=0.8, prefill_servers=1, prefill_time=Q_(100, "ms"))
    assert w.to("ms").m == pytest.approx(200.0, rel=1e-12)


def test_mdc_wait_by_hand_for_four_replicas():
    """c = 4, rho = 0.8: 0.8^(sqrt(10) - 1) / (4 x 0.2) x 100 ms / 2."""
    w = F["mdc_wait"](prefill_utilisation=0.8, prefill_servers=4, prefill_time=Q_(100, "ms"))
    assert w.to("ms").m == pytest.approx(0.8 ** (math.sqrt(10) - 1) / 0.8 * 50, rel=1e-12)


def test_wave_wait_by_hand():
    """12 prompts at once on 4 replicas: waves wait 0, 1, 2 prefills; the mean is 1 prefill."""
    w = F["wave_wait"](burst_prompts=12, prefill_servers=4, prefill_time=Q_(100, "ms"))
    assert w.to("ms").m == pytest.approx(100.0)


def test_pool_link_defaults_to_the_scale_out():
    """Pools on different nodes hand off over the GPU's scale-out link; a given link is used as is."""
    assert pool_link("B200").name == "InfiniBand XDR"
    assert pool_link("B200", "NVLink 5").name == "NVLink 5"


def test_sized_pools_meet_both_targets(sized):
    """The sized deployment meets the brief's time to first token and time per token."""
    assert sized.meets_targets and sized.sized


def test_ttft_is_the_sum_of_its_parts(sized):
    """TTFT = request overhead + wait + prefill + hand-off + the decode replica's first step (the user's first token
    is the decode instance's), that step being the decode pool's step at its batch."""
    parts = Q_(COURSE.request_overhead_ms, "ms") + sized.queue_wait + sized.prefill_time + sized.kv_handoff
    assert sized.first_step == sized.tpot and sized.first_step > Q_(0, "ms")
    assert sized.ttft.to("ms").m == pytest.approx((parts + sized.first_step).to("ms").m, rel=1e-9)


def test_prefill_time_is_the_replica_models(sized):
    """The prefill pool's service time is the replica model's prefill of one prompt."""
    r = replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=4, batch=1, prompt_tokens=2_000, answer_tokens=300,
                weight_bytes="fp8")  # fmt: skip
    assert sized.prefill_time == r.first_prefill.time


def test_decode_tpot_is_a_plain_decode_step(sized):
    """A decode replica's time per token is its decode step: no prefill shares it."""
    r = sized.decode.replica
    s = decode_step("Llama-3.1-70B", "H100 SXM", batch=r.batch, context_tokens=2_000 + 300 / 2, n_gpus=4,
                    weight_bytes="fp8")  # fmt: skip
    assert sized.tpot.to("ms").m == pytest.approx(s.step_time.to("ms").m, rel=1e-9)


def test_sized_pools_are_the_smallest(sized):
    """The decode pool has the headroom over the rate (20 requests/s x 1.3)."""
    assert sized.decode.rate.to("1/s").m >= 20 * COURSE.headroom


def test_a_prefill_pool_set_by_the_ttft_target_is_the_smallest_that_meets_it():
    """40 prompts/s of about 96 ms each: the headroom asks for ceil(40 x 0.096 x 1.3) = 5 replicas, but 100 ms of
    overhead + 96 ms of prefill + about 4 ms of hand-off + the decode replica's first step (under 40 ms, the time per
    token's target) leave only a few ms of a 245 ms target for the wait, which 5 replicas (busy 77%) exceed: the target
    sets the pool, and one replica fewer than it gives misses it."""
    b = Brief(40, 2_000, 300, Q_(245, "ms"), Q_(40, "ms"))
    d = disaggregated("Llama-3.1-70B", "H100 SXM", b, **SHAPE)
    c, t = d.prefill.replicas, d.prefill_time.to("s").m
    assert 0.09 < t < 0.1 and Q_(30, "ms") < d.first_step <= Q_(40, "ms")  # the premises of the arithmetic above
    assert c > math.ceil(40 * t * COURSE.headroom)  # more than the headroom asks: the TTFT target set the pool
    assert d.ttft_met
    fewer = disaggregated("Llama-3.1-70B", "H100 SXM", b, prefill_gpus=(c - 1) * 4, **SHAPE)
    assert not fewer.ttft_met and fewer.ttft > d.ttft


def test_utilisation_by_hand(sized):
    """Busy share = 20 requests/s x the prefill time / the replicas."""
    expected = 20 * sized.prefill_time.to("s").m / sized.prefill.replicas
    assert sized.utilisation == pytest.approx(expected, rel=1e-9)


@settings(max_examples=8, deadline=None)
@given(c=st.integers(2, 12))
def test_more_prefill_gpus_never_raise_ttft(c):
    """Adding a prefill replica never raises the time to first token."""
    kw = dict(prefill_tensor_parallel=4, decode_tensor_parallel=4, weight_bytes="fp8", decode_gpus=8)
    b = Brief(10, 2_000, 300, Q_(2, "s"), Q_(60, "ms"))
    few = disaggregated("Llama-3.1-70B", "H100 SXM", b, prefill_gpus=4 * c, **kw)
    more = disaggregated("Llama-3.1-70B", "H100 SXM", b, prefill_gpus=4 * (c + 1), **kw)
    assert more.ttft <= few.ttft


@pytest.mark.parametrize("slow,fast", [("PCIe 4 x16", "InfiniBand NDR"), ("InfiniBand NDR", "NVLink 4")])
def test_a_faster_link_never_raises_ttft(slow, fast):
    """A link with more bandwidth hands the KV off sooner, so the time to first token does not rise."""
    kw = dict(prefill_gpus=12, decode_gpus=8, **SHAPE)
    a = disaggregated("Llama-3.1-70B", "H100 SXM", BRIEF, link=slow, **kw)
    b = disaggregated("Llama-3.1-70B", "H100 SXM", BRIEF, link=fast, **kw)
    assert b.ttft <= a.ttft and b.kv_handoff < a.kv_handoff


def test_compare_queues_both_first_tokens_at_the_same_percentile():
    """The chapter's case: 20 requests/s of 2,000 + 300 tokens on TP4 replicas of H100s in FP8, targets on the mean.
    compare() reads both first tokens at p99, each in its queue: the aggregated plan's simulated p99 (not its
    queue-less mean), the disaggregated one's simulated prefill queue. The disaggregated p99 is the fixed parts plus
    the wait's p99 (the prefill and the hand-off are the same for every prompt of one length), and its prefill pool is
    the fewest replicas whose p99 meets the 600 ms (one fewer misses it, or is unstable). Every prompt of the brief's
    length here (a run that spreads none), so that the parts add up."""
    from llmcourse.simulator import SizingRun

    fixed = SizingRun(prompt_cv=0, answer_cv=0, requests=20_000, router="least_cost")
    c = compare("Llama-3.1-70B", "H100 SXM", BRIEF, tensor_parallel=4, weight_bytes="fp8", simulation=fixed)
    agg, dis = c.aggregated, c.disaggregated
    assert agg.brief.ttft_percentile == dis.ttft_percentile == 99 and not dis.spread_prompts
    assert c.aggregated_ttft == agg.sizing.ttft and c.aggregated_ttft != agg.ttft  # the queued p99, not the mean
    parts = Q_(COURSE.request_overhead_ms, "ms") + dis.queue_wait + dis.prefill_time + dis.kv_handoff + dis.first_step
    assert abs((dis.ttft - parts).to("ms").m) < 1e-9 and dis.ttft <= BRIEF.ttft_target
    pre = dis.prefill.replicas
    rate, t = 20.0, dis.prefill_time.to("s").m
    if rate * t < pre - 1:  # one fewer replica is a stable queue: its simulated p99 must miss the target
        from llmcourse.planner.disagg import COMPARE_RUN
        from llmcourse.simulator import simulate_pool

        run = simulate_pool(Q_(rate, "1/s"), dis.prefill_time, pre - 1, requests=COMPARE_RUN.requests)
        assert parts - dis.queue_wait + run.wait_at(99) > BRIEF.ttft_target
    assert agg.meets_targets and dis.meets_targets
    row = dict(c.rows())["aggregated"]
    assert "TTFT p99" in row and f"{c.aggregated_ttft.to('ms').m:,.1f} ms" in row
    assert f"simulated p99 {agg.sizing.tpot.to('ms').m:,.1f} ms" in row  # the fleet's time per token, not the plan's


def test_compare_spreads_the_prompts_on_both_sides():
    """compare()'s default run spreads prompts about the brief's length on both sides: the prefill pool is an M/G/c
    queue of the prompts the aggregated run draws. Its p99 first token then exceeds the one of every prompt at 2,000
    tokens (the long prompts' prefill and the wait behind them), and its busy share is the rate times the prompts'
    mean prefill over the replicas (not the brief's prompt's)."""
    from llmcourse.planner.disagg import COMPARE_RUN
    from llmcourse.simulator import LENGTH_CV, SizingRun, prompt_lengths

    assert COMPARE_RUN.prompt_cv is None and COMPARE_RUN.answer_cv is None and COMPARE_RUN.router == "least_cost"
    fixed_run = SizingRun(prompt_cv=0, answer_cv=0, requests=20_000, router="least_cost")
    kw = dict(tensor_parallel=4, weight_bytes="fp8")
    fixed = compare("Llama-3.1-70B", "H100 SXM", BRIEF, simulation=fixed_run, **kw).disaggregated
    spread = compare("Llama-3.1-70B", "H100 SXM", BRIEF, **kw).disaggregated
    assert spread.spread_prompts and not fixed.spread_prompts
    assert spread.prefill.replicas >= fixed.prefill.replicas
    if spread.prefill.replicas == fixed.prefill.replicas:
        assert spread.ttft > fixed.ttft  # the same pool: the long prompts' prefills and the waits behind them
    lengths = prompt_lengths(0, 20_000, (300, LENGTH_CV), (2_000, LENGTH_CV), 131_072)
    assert 1_900 < sum(lengths) / len(lengths) < 2_100 and max(lengths) > 3 * 2_000  # a mean of about 2,000, a tail
    load = lambda d: d.utilisation * d.prefill.replicas  # noqa: E731  (replicas' worth of prefill: rate x mean time)
    assert load(spread) != pytest.approx(load(fixed), rel=1e-6)  # the prompts' mean prefill, not the brief's prompt's
    assert load(spread) == pytest.approx(load(fixed), rel=0.1)  # about the same load: a mean of about 2,000 tokens


def test_the_pool_simulation_against_closed_forms():
    """M/D/1 at rho = 0.8 and 100 ms: the Pollaczek-Khinchine mean wait rho t / (2 (1 - rho)) = 200 ms, and a share
    1 - rho = 20% of arrivals that find the server free (PASTA). With four servers at rho = 0.8 Sakasegawa's
    approximation, 0.8^(sqrt(10) - 1) / (4 x 0.2) x 50 ms = 38.4 ms, is an approximation: within 15%."""
    from llmcourse.simulator import simulate_pool

    one = simulate_pool(Q_(8, "1/s"), Q_(100, "ms"), 1, requests=200_000)
    assert one.mean_wait.to("ms").m == pytest.approx(200.0, rel=0.05)
    assert sum(w == 0 for w in one.waits_s) / one.requests == pytest.approx(0.2, abs=0.01)
    four = simulate_pool(Q_(32, "1/s"), Q_(100, "ms"), 4, requests=200_000)
    saka = 0.8 ** (10**0.5 - 1) / (4 * 0.2) * 50.0
    assert four.mean_wait.to("ms").m == pytest.approx(saka, rel=0.15)
    assert four.wait_at(99) > 3 * four.mean_wait  # the tail the mean hides


@pytest.mark.parametrize(
    ("agg", "dis", "want"),
    [
        ((True, 20), (True, 16), "disaggregated"),  # both meet: fewer GPUs
        ((True, 16), (True, 16), "aggregated"),  # a tie goes to the simpler system
        ((True, 40), (False, 16), "aggregated"),  # only one meets the targets
        ((False, 8), (True, 40), "disaggregated"),
        ((False, 8), (False, 4), "neither"),
    ],
)
def test_the_verdict_rule(agg, dis, want):
    """Comparison.winner on hand-made deployments: the one that meets both targets on fewer GPUs."""
    from types import SimpleNamespace

    from llmcourse.planner.disagg import Comparison

    a, d = (SimpleNamespace(meets_targets=ok, gpus=n) for ok, n in (agg, dis))
    assert Comparison(a, d).winner == want


def test_a_first_token_percentile_is_sized_and_a_time_per_token_percentile_refused():
    """The prefill queue is simulated, so a TTFT percentile is sized (on the simulated p99, no headroom: 20 x 0.096 s
    = 1.92 replicas' worth, so at least 2, and p99 within 600 ms); the decode pool's queue is not, so a TPOT
    percentile is refused, saying what to do."""
    b = Brief(20, 2_000, 300, Q_(600, "ms"), Q_(40, "ms"), ttft_percentile=99)
    d = disaggregated("Llama-3.1-70B", "H100 SXM", b, **SHAPE)
    assert d.ttft_percentile == 99 and d.ttft_met and d.prefill.replicas >= 2
    assert "p99, simulated" in d.rows()[0][0]
    with pytest.raises(InputError, match=r"tpot_percentile=None.*plan\(\)"):
        disaggregated("Llama-3.1-70B", "H100 SXM", Brief(20, 2_000, 300, Q_(600, "ms"), Q_(40, "ms"),
                                                         tpot_percentile=90), **SHAPE)  # fmt: skip
    with pytest.raises(InputError, match=r"compare\(\).*tpot_percentile=None"):
        compare("Llama-3.1-70B", "H100 SXM", Brief(20, 2_000, 300, Q_(600, "ms"), Q_(40, "ms"), tpot_percentile=90),
                tensor_parallel=4, weight_bytes="fp8")  # fmt: skip


@pytest.mark.parametrize("name", ["prefill_tensor_parallel", "decode_tensor_parallel"])
def test_compare_refuses_zero_gpus_per_replica(name):
    """0 is not 'the default': compare() passes it on, and it is refused."""
    with pytest.raises(InputError, match="tensor_parallel"):
        compare("Llama-3.1-70B", "H100 SXM", BRIEF, tensor_parallel=4, weight_bytes="fp8", **{name: 0})


def test_a_prompt_beyond_the_models_positions_is_refused():
    """Llama 3.1 has 131,072 positions: a longer prompt has no KV cache to hand off."""
    assert kv_handoff("Llama-3.1-70B", 131_072, link="InfiniBand NDR").m > 0
    with pytest.raises(InputError, match="max_position"):
        kv_handoff("Llama-3.1-70B", 131_073, link="InfiniBand NDR")


def test_kv_lanes_are_one_tensor_parallel_group():
    """A prompt's KV sits on one attention data-parallel rank: a TP2 x DP4 replica (8 GPUs) hands off over 2 lanes,
    and the smaller group of the two sides sets them."""
    from llmcourse.planner.disagg import kv_lanes as _kv_lanes

    kw = dict(batch=8, prompt_tokens=1_000, answer_tokens=100, weight_bytes="fp8")
    dp = replica("Qwen3-30B-A3B", "H100 SXM", tensor_parallel=2, data_parallel=4, **kw)
    tp4 = replica("Qwen3-30B-A3B", "H100 SXM", tensor_parallel=4, **kw)
    assert dp.n_gpus == 8 and _kv_lanes(dp, tp4) == _kv_lanes(tp4, dp) == 2 and _kv_lanes(tp4, tp4) == 4


def test_moe_layout_shapes_each_pool():
    """A mixture of experts spread over attention groups: prefill replicas of TP1 x DP2 (2 GPUs, the experts split
    over both: EP2) and decode replicas of TP1 x DP4 (EP4); each pool's replica is replica()'s of that shape, and a
    dense model refuses a data-parallel pool with replica()'s message."""
    b = Brief(5, 1_000, 200, Q_(2, "s"), Q_(80, "ms"))
    d = disaggregated("Qwen3-30B-A3B", "H100 SXM", b, moe_layout=MoeLayout(2, None, 4, None))
    assert (d.prefill.shape, d.decode.shape) == ("TP1 DP2 EP2", "TP1 DP4 EP4")
    assert (d.prefill.gpus_per_replica, d.decode.gpus_per_replica) == (2, 4)
    want = replica("Qwen3-30B-A3B", "H100 SXM", data_parallel=4, batch=d.batch, prompt_tokens=1_000, answer_tokens=200)
    assert d.decode.replica.layout == want.layout
    with pytest.raises(InputError, match="data_parallel=2 splits attention"):
        disaggregated("Llama-3.1-8B", "H100 SXM", b, moe_layout=MoeLayout(prefill_data_parallel=2))
    with pytest.raises(InputError, match="moe_layout must be a MoeLayout"):
        disaggregated("Qwen3-30B-A3B", "H100 SXM", b, moe_layout={"decode_data_parallel": 4})


def test_measured_rows_take_the_kv_precision_rule_of_the_aggregated_rows():
    """FP8 KV where TensorRT-LLM runs FP8 or FP4 weights, else BF16, as the validation chapter's rows."""
    from llmcourse.validation.measured import aic_kv

    assert (aic_kv("trtllm", "fp8"), aic_kv("trtllm", "fp4"), aic_kv("trtllm", "bf16")) == ("fp8", "fp8", "bf16")
    assert aic_kv("vllm", "fp8") == aic_kv("sglang", "fp4") == "bf16"
    rows = measured_rows()[0]
    assert all(
        r.kv == ("fp8" if r.engine.startswith("TensorRT-LLM") and r.weights in ("fp8", "fp4") else "bf16") for r in rows
    )


def test_unmet_ttft_is_reported_not_hidden():
    """A target below the prefill alone cannot be met by any pool: the deployment says it is unmet."""
    b = Brief(5, 8_000, 300, Q_(50, "ms"), Q_(60, "ms"))
    d = disaggregated("Llama-3.1-70B", "H100 SXM", b, **SHAPE)
    assert not d.ttft_met and d.ttft > d.prefill_time


def test_a_pool_of_zero_gpus_is_refused():
    """Zero GPUs in a pool: the message says to give a whole multiple of the replica."""
    with pytest.raises(InputError, match=r"prefill_gpus=0.*whole multiple of 4"):
        disaggregated("Llama-3.1-70B", "H100 SXM", BRIEF, prefill_gpus=0, **SHAPE)
    with pytest.raises(InputError, match=r"decode_gpus=0"):
        disaggregated("Llama-3.1-70B", "H100 SXM", BRIEF, decode_gpus=0, **SHAPE)


def test_a_split_replica_is_refused():
    """Six GPUs are not a whole number of 4-GPU replicas."""
    with pytest.raises(InputError, match="not a whole number of 4-GPU replicas"):
        disaggregated("Llama-3.1-70B", "H100 SXM", BRIEF, prefill_gpus=6, **SHAPE)


def test_an_overloaded_prefill_pool_is_refused():
    """A prefill pool busier than 100% has no steady queue: the message gives the GPUs it needs."""
    with pytest.raises(InputError, match="grows without end; give at least"):
        disaggregated("Llama-3.1-70B", "H100 SXM", BRIEF, prefill_gpus=4, **SHAPE)


def test_too_small_a_decode_pool_is_refused():
    """A decode pool that cannot keep up with the rate even at its largest batch says how many GPUs it needs."""
    b = Brief(200, 2_000, 1_000, Q_(5, "s"), Q_(60, "ms"))
    with pytest.raises(InputError, match=r"decode_gpus=4.*give at least"):
        disaggregated("Llama-3.1-70B", "H100 SXM", b, decode_gpus=4, **SHAPE)


def test_an_unknown_link_is_refused():
    """A link not in the catalog: the message lists the known ones."""
    with pytest.raises(UnknownNameError, match="no link named"):
        disaggregated("Llama-3.1-70B", "H100 SXM", BRIEF, link="NVLink 9", **SHAPE)


def test_a_layout_that_does_not_fit_is_refused():
    """70B in BF16 on one 80 GB GPU: the prefill replica does not fit, and the message says what to change."""
    with pytest.raises(InputError, match=r"prefill replica does not fit.*prefill_tensor_parallel"):
        disaggregated("Llama-3.1-70B", "H100 SXM", BRIEF)
    with pytest.raises(InputError, match="does not divide"):
        disaggregated("Llama-3.1-70B", "H100 SXM", BRIEF, prefill_tensor_parallel=4, decode_tensor_parallel=3)


def test_bad_brief_is_refused():
    """Something other than a Brief is refused with the fields a Brief takes."""
    with pytest.raises(InputError, match="Brief"):
        disaggregated("Llama-3.1-70B", "H100 SXM", {"rate": 20}, **SHAPE)


def test_measured_rows_are_the_ones_with_pools_given():
    """Every expressed row gives both pools' workers and batches; the others say why they are left out."""
    rows, skipped = measured_rows()
    assert len(rows) > 200
    assert all(r.prefill_workers >= 1 and r.decode_batch >= 1 for r in rows)
    assert all(reason for _, reason in skipped)


def test_a_measured_row_by_its_parts():
    """A row's TTFT is the fixed point: overhead + wait + prefill + hand-off at the closed loop's rate."""
    row = measured_rows()[0][0]
    p = predict_row(row)
    parts = COURSE.request_overhead_ms + p.wait_ms + p.prefill_ms + p.handoff_ms
    assert p.ttft_ms == pytest.approx(parts, rel=1e-6)
    assert p.utilisation < 1


def test_measured_factors_cover_the_rows_by_gpu():
    """The table has one line per GPU and one for all; its counts add up and its shares are shares."""
    table = measured_factors()
    by_gpu, total = table[:-1], table[-1]
    assert total[0] == "all" and sum(t[1] for t in by_gpu) == total[1]
    assert all(0 <= t[3] <= 1 and 0 <= t[5] <= 1 for t in table)
    print("\npredicted / measured (disaggregated rows):")
    for t in table:
        print(f"  {t[0]:>10} {t[1]:4d} rows  TTFT median {t[2]:.2f} ({t[3]:.0%} within 2x)  "
              f"TPOT median {t[4]:.2f} ({t[5]:.0%} within 2x)")  # fmt: skip


def test_poisson_arrivals_are_an_option():
    """With Poisson arrivals (no waves) the wait is never larger than with the waves."""
    row = next(r for r in measured_rows()[0] if r.concurrency > 4 * r.prefill_workers)
    assert predict_row(row, arrivals="poisson").ttft_ms <= predict_row(row).ttft_ms
    with pytest.raises(InputError, match="arrivals"):
        predict_row(row, arrivals="bursty")


_HOSTILE = [0, -1, 1.5, float("nan"), float("inf"), "4", None, True, Q_(4, "GB"), 10**9]
_ARGS = {
    "prefill_gpus": 12,
    "decode_gpus": 8,
    "prefill_tensor_parallel": 4,
    "decode_tensor_parallel": 4,
    "link": "InfiniBand NDR",
    "weight_bytes": "fp8",
    "kv_bytes": 2,
}


@pytest.mark.parametrize("name", sorted(_ARGS))
@pytest.mark.parametrize("value", _HOSTILE, ids=[repr(v) for v in _HOSTILE])
def test_hostile_arguments_give_a_result_or_a_clear_refusal(name, value):
    """Any one argument replaced by a hostile value: a finite result, or InputError / UnknownNameError."""
    kw = _ARGS | {name: value}
    try:
        d = disaggregated("Llama-3.1-70B", "H100 SXM", BRIEF, **kw)
    except (InputError, UnknownNameError):
        return
    assert math.isfinite(d.ttft.to("ms").m) and math.isfinite(d.tpot.to("ms").m) and d.gpus >= 2


@pytest.mark.parametrize("value", _HOSTILE, ids=[repr(v) for v in _HOSTILE])
def test_hostile_handoff_arguments(value):
    """kv_handoff refuses hostile prompt lengths and lane counts with InputError."""
    for kw in (dict(prompt_tokens=value, kv_lanes=1), dict(prompt_tokens=2_000, kv_lanes=value)):
        try:
            t = kv_handoff("Llama-3.1-70B", link="InfiniBand NDR", **kw)
        except (InputError, UnknownNameError):
            continue
        assert math.isfinite(t.to("ms").m) and t.m > 0


def test_calculator_shows_the_comparison_and_errors():
    """The calculator's rows are compare()'s; a bad shape shows as a message, not an exception."""
    from llmcourse.widgets.disagg import disagg_calculator

    c = disagg_calculator()
    want = compare("Llama-3.1-70B", "H100 SXM", BRIEF, tensor_parallel=4, weight_bytes="fp8")
    assert c.rows == want.rows()
    assert "does not divide" in c.set(decode_tensor_parallel=3).error
    assert c.set(decode_tensor_parallel=4).error is None


def test_a_gpu_without_a_link_needs_the_pools_link_named():
    """A hand-made GPU names no link: the pools' hand-off link is asked for, naming link=, and given it the pools
    are sized (the review found a bare 'link names are strings' error)."""
    mine = lc.gpus["H100 SXM"].with_(name="MyGPU", link=None)
    with pytest.raises(InputError, match=r"MyGPU names no link.*give link="):
        disaggregated("Llama-3.1-8B", mine, BRIEF)
    d = disaggregated("Llama-3.1-8B", mine, BRIEF, link="InfiniBand NDR")
    assert d.prefill.gpus >= 1 and d.decode.gpus >= 1


def test_an_unreachable_percentile_target_gets_the_pool_past_which_more_replicas_buy_little():
    """When no pool can meet the p99 target (the prompt's own prefill is slower), the pool is not the barely stable
    one (a long queue, busy ~99%), but one whose queue no longer matters: twice its GPUs shorten the p99 first token
    by under 2%, and it is not run near saturation."""
    b = Brief(26, 8_000, 400, Q_(500, "ms"), Q_(40, "ms"), ttft_percentile=99)
    shape = dict(prefill_tensor_parallel=2, decode_tensor_parallel=2, weight_bytes="fp8")
    d = disaggregated("Llama-3.1-70B", "H100 SXM", b, **shape)
    assert not d.ttft_met and d.utilisation < 0.9
    gpus = d.prefill.replicas * d.prefill.gpus_per_replica
    doubled = disaggregated("Llama-3.1-70B", "H100 SXM", b, prefill_gpus=2 * gpus, **shape)
    assert doubled.ttft > 0.98 * d.ttft


@pytest.mark.parametrize(("target_ms", "close"), [(300, True), (400, False)])
def test_compare_says_when_the_aggregated_count_is_not_settled(target_ms, close):
    """Chapter 10's 8B brief on one H100 per replica at a p99 first token of 300 ms (the target inside the aggregated
    fleet's sampling interval) and 400 ms (clear of it): the comparison warns exactly when the aggregated side's
    sizing is a close call, since its GPU count, and so the verdict, can move with another seed."""
    brief = Brief(10, 2_000, 300, Q_(target_ms, "ms"), Q_(50, "ms"), ttft_percentile=99)
    c = compare("Llama-3.1-8B", "H100 SXM", brief)
    assert c.aggregated.sizing.close_call() is close
    assert ("aggregated size not settled" in dict(c.rows())) is close
