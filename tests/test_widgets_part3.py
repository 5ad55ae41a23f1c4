"""The calculators and figures of chapters 9-11, driven as a reader would.

Expected values are the source texts' figures or hand arithmetic (in each docstring).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest

import llmcourse as lc
from llmcourse import Q_
from llmcourse.planner.design import Brief
from llmcourse.planner.levers import rank_levers
from llmcourse.plots.design_review import lever_bars
from llmcourse.plots.fleet import cost_vs_utilisation, gpus_vs_throughput
from llmcourse.plots.queueing import percentiles_vs_load
from llmcourse.simulator import knee, load_sweep
from llmcourse.widgets.design_review import design_review_calculator
from llmcourse.widgets.fleet import fleet_calculator
from llmcourse.widgets.queueing import queueing_calculator


def row(calc, label):
    return dict(calc.rows)[label]


# --- the capstone ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def review():
    return design_review_calculator()


def test_review_meets_targets(review):
    """70B FP8 on 2 x H100, 20 req/s of 4,000 + 400 tokens: 80,000 prompt and 8,000 answer tok/s; both targets met."""
    c = review.set()
    assert row(c, "1. brief in tokens") == "80,000 prompt + 8,000 answer tok/s"
    assert row(c, "review: time to first token").endswith("\u2713")
    assert row(c, "review: time per output token").endswith("\u2713")
    assert row(c, "verdict").startswith("meets both targets")
    assert "x 2)" in row(c, "review: GPUs")


def test_review_has_every_column(review):
    """Targets, GPUs, $/hour, $ per 1,000 requests, $ per million answer tokens and the bottleneck are all shown."""
    labels = dict(review.rows)
    for k in ("GPUs", "$ per hour", "$ per 1,000 requests", "$ per million answer tokens", "bottleneck"):
        assert "review: " + k in labels
    # FP8 KV, INT4, EAGLE, the split, the budget, prefix, GQA, shorter
    assert sum(k.startswith("lever ") for k in labels) == 8


def test_review_more_traffic_more_gpus(review):
    """Ten times the requests needs more GPUs (about ten times)."""
    small = int(row(review.set(requests_per_second=2.0), "review: GPUs").split()[0].replace(",", ""))
    big = int(row(review.set(requests_per_second=20.0), "review: GPUs").split()[0].replace(",", ""))
    assert 5 * small <= big <= 12 * small


def test_review_cannot_meet_a_10_ms_token_target():
    """70B FP8 on one H100 reads 70.6 GB a step: 70.6 / (0.7 x 3,350 GB/s) = 30 ms > 10 ms even at a batch of 1."""
    c = design_review_calculator(tensor_parallel=1, brief=Brief(20.0, 4_000, 400, Q_(2_000.0, "ms"), Q_(10.0, "ms")))
    assert row(c, "review: time per output token").endswith("\u2717")
    v = row(c, "verdict")
    assert v.startswith("misses its targets") and "batch of 1" in v and "weight reads" in v


def test_review_slow_prefill_says_why():
    """A 32,000-token prompt on 70B FP8 (2 H100s): (2 x 70.6e9 x 32,000 + 2 x 80 x 64 x 128 x 32,000^2)
    / (0.5 x 2 x 1,979e12) = 2.96 s > 1 s."""
    c = design_review_calculator(brief=Brief(20.0, 32_000, 400, Q_(1_000.0, "ms"), Q_(40.0, "ms")))
    assert row(c, "review: time to first token").endswith("\u2717")
    assert "prefill of 32,000 prompt tokens" in row(c, "verdict")


def test_review_does_not_fit_and_names_the_fix():
    """Qwen2.5-72B in BF16 is 145 GB, more than 72 GB on one H100; INT4 (36 GB) fits."""
    c = design_review_calculator(model="Qwen2.5-72B", tensor_parallel=1, weights="bf16")
    assert row(c, "review: fits") == "no"
    assert row(c, "verdict").startswith("cannot serve this brief")
    assert row(c, "lever 1: INT4 weights").startswith("does not fit") is False


def test_review_small_model_one_gpu():
    """Llama-3.1-8B, 10 req/s of 2,000 + 300 tokens: one GPU by the six-step planner (100% of the peaks); two by the
    course's method (batch 185: 29.1 ms steps and 12.4 s of prefill per cycle, 8.8 requests/s per GPU, 13 / 8.8 -> 2)."""
    kw = dict(
        model="Llama-3.1-8B",
        tensor_parallel=1,
        brief=Brief(10.0, 2_000, 300, Q_(1_000.0, "ms"), Q_(50.0, "ms")),
        weights="bf16",
    )
    c = design_review_calculator(method="planner", **kw)
    assert row(c, "review: GPUs") == "1" and "1 GPU;" in row(c, "verdict")
    assert row(design_review_calculator(**kw), "review: GPUs") == "2"


def test_review_starts_at_the_briefs_numbers():
    """The controls start at the brief's rate, lengths and targets (in ms); a brief with percentile targets is refused
    (the calculator plans on the mean)."""
    c = design_review_calculator(brief=Brief(Q_(36, "1/minute"), 1_500, 250, Q_(0.8, "s"), Q_(30, "ms")))
    shown = {
        k: c.controls[k].value for k in ("requests_per_second", "prompt_tokens", "answer_tokens", "ttft_ms", "tpot_ms")
    }
    assert shown == dict(requests_per_second=0.6, prompt_tokens=1_500, answer_tokens=250, ttft_ms=800.0, tpot_ms=30.0)
    with pytest.raises(lc.InputError, match="targets on the mean"):
        design_review_calculator(brief=Brief(20, 4_000, 400, Q_(1, "s"), Q_(40, "ms"), ttft_percentile=99))


def test_review_bad_input_is_a_message(review):
    """Zero answer tokens is refused with a message, not a traceback."""
    c = review.set(answer_tokens=0)
    assert c.error and "answer" in c.error and c.rows == []
    review.set(answer_tokens=400)


# --- fleet ------------------------------------------------------------------------------------------
def test_fleet_calculator_seed_002():
    """Seed 002: 0.786 GB per sequence, 25.8 ms, 39 tok/s, 2,483 (1,738) tok/s, 81 replicas, 162 GPUs, $295,650."""
    c = fleet_calculator(method="capacity")
    assert row(c, "KV per sequence") == "0.786 GB"
    assert row(c, "step time").startswith("25.8 ms (memory-bound")
    assert row(c, "tok/s per user") == "39"
    assert row(c, "tok/s per replica, decode only (usable)") == "2,483 (1,738)"
    assert row(c, "headroom kept back") == "30%"
    assert row(c, "replicas (exact)") == "81 (80.5)" and row(c, "GPUs") == "162"
    assert row(c, "monthly cost, always on") == "$295,650"


def test_fleet_calculator_utilisation():
    """$5/h / (2,483 x 3,600) x 1e6 = $0.56 per million at full load; at 50%, $1.12."""
    c = fleet_calculator(method="capacity", utilisation=0.5)
    assert row(c, "$ per million output tokens: full load / average") == "$0.56 / $1.12"


def test_fleet_calculator_memory_overflow():
    """A batch of 128 needs 70.6 + 128 x 0.786 = 171 GB > 144 GB: said plainly."""
    assert "does NOT fit" in row(fleet_calculator(batch=128), "memory check")


def test_fleet_calculator_headroom_override():
    """Half kept back on the capacity method's replica: 140,000 / (2,483 x 0.5) = 112.8 -> 113 replicas, 226 GPUs."""
    c = fleet_calculator(method="capacity", headroom=0.5)
    assert row(c, "headroom kept back") == "50%" and row(c, "GPUs") == "226"


def test_fleet_calculator_course_charges_prefill():
    """Under the course's method the replica's row says prefill is charged, and the fleet is larger than 162."""
    c = fleet_calculator()
    label = next(k for k, _ in c.rows if k.startswith("tok/s per replica"))
    assert "prefill charged" in label and int(row(c, "GPUs").replace(",", "")) > 162


# --- queueing -----------------------------------------------------------------------------------------
def test_queueing_calculator_reports_percentiles():
    """p50 <= p99 and the closed form is shown beside the simulation."""
    c = queueing_calculator(requests=2_000)
    assert "closed form: TTFT / TPOT (batch)" in dict(c.rows)
    p50 = float(row(c, "TTFT p50").split()[0].replace(",", ""))
    p99 = float(row(c, "TTFT p99").split()[0].replace(",", ""))
    assert p50 <= p99


# --- figures --------------------------------------------------------------------------------------------
def test_figures_have_labelled_axes():
    """Every figure of the part labels its axes (with units where there are any)."""
    sweep = load_sweep(
        "Llama-3.1-8B", "H100 SXM", prompt_tokens=2_000, answer_tokens=300, loads=(0.1, 0.9, 1.0), requests=1_000
    )
    b = lc.Brief(20, 3_600, 400, Q_(1, "s"), Q_(40, "ms"))  # within Llama 2 13B's 4,096 positions
    axes = [
        cost_vs_utilisation(Q_(0.3166, "USD")),
        gpus_vs_throughput(Q_(21.7e6, "1/s")),
        *percentiles_vs_load(sweep, knee_load=knee(sweep)),
        lever_bars(lc.plan("Llama-2-13B", "H100 SXM", b), rank_levers("Llama-2-13B", "H100 SXM", b)),
    ]
    for ax in axes:
        assert ax.get_xlabel() and (ax.get_ylabel() or ax.get_yticklabels())
    assert "(ms)" in axes[2].get_ylabel() and "%" in axes[2].get_xlabel()
