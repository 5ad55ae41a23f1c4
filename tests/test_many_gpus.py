"""The chapter *Many GPUs*: its calculator, its plot data (the measured rows) and its exercises, against
hand arithmetic from the link catalog's figures and the issue's measured figures."""

from __future__ import annotations

import math

import pytest

import llmcourse as lc
from llmcourse import Q_
from llmcourse.errors import InputError
from llmcourse.exercises import check, get, reset
from llmcourse.planner.moe import hot_cold_pick_probabilities
from llmcourse.plots.many_gpus import error_summary, llama70_measured, predicted_tpot
from llmcourse.widgets.many_gpus import (
    allreduce_latency,
    expert_load_imbalance,
    free_split,
    many_gpus,
    many_gpus_calculator,
    parts_against_n,
    parts_bar_svg,
)

W70_FP8 = 70.554e9  # Llama 3.1 70B: 70.554 B parameters, one byte each


def _ring(t0_us, alpha_us, bw_gb_s, n, message_bytes, eta=0.8):
    """A ring all-reduce by hand, in seconds: t0 + 2(N-1) alpha + 2(N-1)/N x bytes / (eta x bandwidth)."""
    return t0_us * 1e-6 + 2 * (n - 1) * alpha_us * 1e-6 + 2 * (n - 1) / n * message_bytes / (eta * bw_gb_s * 1e9)


def _one_shot(base_us, alpha_us, bw_gb_s, n, message_bytes, eta=0.8):
    """The engines' one-shot all-reduce by hand, in seconds: the kernel's fixed cost + one flag latency + the N - 1
    peers' whole messages over the link, (N - 1) x bytes / (eta x bandwidth)."""
    return (base_us + alpha_us) * 1e-6 + (n - 1) * message_bytes / (eta * bw_gb_s * 1e9)


@pytest.fixture(autouse=True)
def _fresh():
    reset()
    yield
    reset()


# --- the calculator ----------------------------------------------------------------------------------------------
def test_calculator_parts_add_up_and_weight_reads_by_hand():
    """Default (70B FP8 on 4 x H200): weight reads are 70.554 GB / (4 x 0.7 x 4.8 TB/s); the parts add up."""
    res = many_gpus_calculator(plot=False).result
    assert math.isclose(res.parts["weight reads"].to("s").m, W70_FP8 / (4 * 0.7 * 4.8e12), rel_tol=1e-9)
    assert math.isclose(sum(p.to("ms").m for p in res.parts.values()), res.replica.tpot.to("ms").m, rel_tol=1e-9)


def test_calculator_communication_on_nvlink_and_pcie_by_hand():
    """2 x 80 all-reduces of 4 x 8,192 x 2 B over 4 GPUs: on NVLink 4 the engines' one-shot (the course's 3.5 us
    kernel, one 0.8 us flag, 3 peers' 64 KiB at 80% of 450 GB/s: 4.846 us, below the ring's 9.573 us and the
    two-shot's 8.873 us); on PCIe 5, where the GPUs do not read each other's memory, the ring (10 us, 2 x 3 x 2 us,
    1.5 x 64 KiB at 80% of 63 GB/s)."""
    c = many_gpus_calculator(plot=False)
    nv = c.result.parts["communication"].to("s").m
    pcie = c.set(link="PCIe 5 x16").result.parts["communication"].to("s").m
    assert math.isclose(nv, 160 * _one_shot(3.5, 0.8, 450, 4, 4 * 8_192 * 2), rel_tol=1e-9)
    assert math.isclose(pcie, 160 * _ring(10, 2.0, 63, 4, 4 * 8_192 * 2), rel_tol=1e-9)
    assert dict(c.rows)["link"].startswith("PCIe 5 x16")


def test_calculator_one_gpu_pays_no_communication_and_shows_errors():
    """On one GPU nothing is sent; a tensor-parallel degree that does not divide the heads lists the ones that do."""
    c = many_gpus_calculator(plot=False)
    assert c.set(tensor_parallel=1).result.parts["communication"].m == 0
    c.set(tensor_parallel=3)
    assert c.error is not None and "1, 2, 4, 8, 16, 32, 64" in c.error
    c.set(tensor_parallel=4, batch=5_000)
    assert c.error is not None and "at most" in c.error


def test_calculator_expert_parallel_for_moe_only():
    """DeepSeek-V3 on 8 x H200: the experts split 8 ways; a dense model ignores the expert-parallel control."""
    c = many_gpus_calculator(plot=False)
    rows = dict(c.set(model="DeepSeek-V3", tensor_parallel=8, expert_parallel=8, batch=16).rows)
    assert "experts split 8 ways" in rows["replica"] and rows["KV copies per sequence"] == "8"
    rows = dict(c.set(model="Llama-3.1-70B", tensor_parallel=4).rows)
    assert "experts" not in rows["replica"]


def test_free_split_is_faster_than_the_course():
    """With the GPUs talking for free, no overhead and no floor per layer the time per token is lower, by at least
    1 ms (the overhead)."""
    res = many_gpus("Llama-3.1-70B", "B200", tensor_parallel=8, batch=4, prompt_tokens=1_024, answer_tokens=8_192)
    assert res.replica.tpot.to("ms").m - res.free.to("ms").m > 1.0
    assert free_split().communication is False and free_split().step_overhead_ms == 0 == free_split().layer_floor_us


def test_bar_has_one_stack_per_degree_and_says_what_does_not_fit():
    """The SVG draws 1, 2, 4 and 8 GPUs; DeepSeek-V3 does not fit on fewer than 8 H200s, and says so."""
    bars = parts_against_n(
        "DeepSeek-V3",
        "H200 SXM",
        batch=16,
        prompt_tokens=1_024,
        answer_tokens=1_024,
        weight_bytes="fp8",
        expert_parallel=8,
    )
    assert [n for n, _, _ in bars] == [1, 2, 4, 8]
    assert [p is None for _, p, _ in bars] == [True, True, True, False]
    svg = parts_bar_svg(bars, "DeepSeek-V3")
    assert svg.startswith("<svg") and svg.count("weights don&#x27;t fit") == 3 and "8 GPUs" in svg
    assert 'data-part="weight-reads"' in svg and "time per output token (ms)" in svg


def test_allreduce_latency_by_hand():
    """8 x H100, 4 sequences. The engines' one-shot: 3.5 + 0.8 us + 7 x 65,536 B / (0.8 x 450 GB/s) = 5.574 us; the
    ring: 4.5 + 14 x 0.8 us + 14/8 x 65,536 B / (0.8 x 450 GB/s) = 16.02 us. On two GPUs the one-shot is
    3.5 + 0.8 + 65,536 / 360e3 = 4.482 us: TP8's small all-reduce 1.24x TP2's (the ring's: 16.02 / 6.282 = 2.55x)."""
    kw = dict(batch=4, prompt_tokens=1_024, answer_tokens=1_024, weight_bytes="fp8")
    ring = lc.resolve().replace(allreduce_algorithm="ring")
    r = {n: lc.replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=n, **kw) for n in (2, 8)}
    rr = {n: lc.replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=n, assumptions=ring, **kw) for n in (2, 8)}
    got = {n: allreduce_latency("Llama-3.1-70B", r[n]).to("s").m for n in (2, 8)}
    assert math.isclose(got[8], _one_shot(3.5, 0.8, 450, 8, 65_536), rel_tol=1e-9)
    assert math.isclose(got[2], _one_shot(3.5, 0.8, 450, 2, 65_536), rel_tol=1e-9)
    # issue 34's bar: TP8's small-message all-reduce within 1.6x of TP2's on NVLink. By hand from the formula's
    # constants (3.5 us kernel, 0.8 us flag latency, 450 GB/s at 80%, 4 x 8,192 x 2 B = 65,536 B):
    # (4.3 + 7 x 0.18204) / (4.3 + 0.18204) = 5.5743 / 4.4820 = 1.244
    assert math.isclose(got[8] / got[2], 5.5743 / 4.4820, rel_tol=1e-4) and got[8] / got[2] < 1.6
    ring8 = allreduce_latency("Llama-3.1-70B", rr[8]).to("s").m
    assert math.isclose(ring8, _ring(4.5, 0.8, 450, 8, 65_536), rel_tol=1e-9)
    assert ring8 / allreduce_latency("Llama-3.1-70B", rr[2]).to("s").m > 2.5


def test_expert_load_imbalance_by_hand():
    """16 hot experts of 256 take half of 8 picks: the GPU holding them gets 16 x 0.25 + 16 x 4/240 = 4.27 picks
    against an average of 1 per GPU of 8."""
    p = hot_cold_pick_probabilities(256, 8, hot=16, hot_share=0.5)
    assert math.isclose(expert_load_imbalance(p, 8), 16 * 0.25 + 16 * 4 / 240, rel_tol=1e-9)
    assert expert_load_imbalance([8 / 256] * 256, 8) == pytest.approx(1.0)
    with pytest.raises(InputError):
        expert_load_imbalance(p, 7)


# --- the measured rows and the plot data -----------------------------------------------------------------------
def test_measured_rows_are_the_issues_figures():
    """B200, TensorRT-LLM, FP8, 4 in flight, 1,024/8,192: 14.9, 9.8, 7.0 and 5.8 ms on 1, 2, 4, 8 GPUs (issue 14)."""
    rows = sorted(
        (
            r
            for r in llama70_measured(4)
            if r.gpu == "B200"
            and r.engine == "TensorRT-LLM"
            and r.precision == "fp8"
            and (r.prompt_tokens, r.answer_tokens) == (1_024, 8_192)
        ),
        key=lambda r: r.tensor_parallel,
    )
    assert [round(r.tpot.to("ms").m, 1) for r in rows] == [14.9, 9.8, 7.0, 5.8]


def test_every_row_at_concurrency_4_within_a_quarter():
    """The issue's bar was all 81 measured Llama 3.1 70B rows at concurrency 4 within 1.25x of the course's model.
    Under the engine's picture (a new prompt goes whole, or in a few chunks, into steps of its own), the engines'
    all-reduce kernels and the layers' floor, 77 of 81 are, and all within 1.35x (the worst 1.286x). Four are
    outside, two each way. Measured slower than predicted: vLLM on 8 x B200 at FP4 (1,024 in / 8,192 out, 1.260x;
    8,192 in / 1,024 out, 1.278x), where each GPU's weight reads are short and the step is mostly its fixed costs,
    floor and all-reduces. Measured faster: TensorRT-LLM at FP8 on 1 and 2 x H200 with 8,192-token prompts and
    1,024-token answers (0.778, 0.790), where each of the other three requests' prompts takes two compute-bound
    steps (8,188 tokens, then 4) at the course's 50% of the FP8 peak, 3.6 ms a token on one H200 above the 27.2 ms
    decode step alone (which is itself above the measured 24.0 ms)."""
    s = error_summary(llama70_measured(4))
    assert len(s.factors) == 81 and s.within(1.25) == 77 and s.worst <= 1.35
    out = sorted(
        (r.gpu, r.engine, r.precision, r.tensor_parallel, r.prompt_tokens, f > 1)
        for r, f in zip(llama70_measured(4), s.factors, strict=True)
        if not 0.8 <= f <= 1.25
    )
    assert out == [
        ("B200", "vLLM", "fp4", 8, 1_024, True),
        ("B200", "vLLM", "fp4", 8, 8_192, True),
        ("H200 SXM", "TensorRT-LLM", "fp8", 1, 8_192, False),
        ("H200 SXM", "TensorRT-LLM", "fp8", 2, 8_192, False),
    ]


def test_free_split_misses_eight_gpus_by_more_than_three():
    """The free split is about right on one B200 and over 3x too fast on eight (issue 14: 3.5x at 0.7 of the
    bandwidth)."""
    rows = {
        r.tensor_parallel: r
        for r in llama70_measured(4)
        if r.gpu == "B200" and r.engine == "TensorRT-LLM" and r.precision == "fp8" and r.answer_tokens == 8_192
    }
    free = free_split()
    assert 0.9 < (rows[1].tpot / predicted_tpot(rows[1], free)).m < 1.15
    assert (rows[8].tpot / predicted_tpot(rows[8], free)).m > 3


# --- the exercises, by hand from the link figures ---------------------------------------------------------------------
def test_ex1_allreduces_nvlink_book_variant():
    """70B on 8 GPUs over NVLink 4, 16 sequences: 160 x (4.5 + 14 x 0.8 us + 14/8 x 262,144 B / 360 GB/s)."""
    hand = 160 * _ring(4.5, 0.8, 450, 8, 16 * 8_192 * 2)
    assert check("many_gpus_ex1", Q_(hand, "s")).correct


def test_ex1_allreduces_pcie_is_slower():
    """The same step over PCIe 5 (10 us, 2 us, 63 GB/s) by the exercise's own answer function."""
    ex = get("many_gpus_ex1")
    v = ex.variant() | dict(link="PCIe 5 x16", bw="63", alpha="2", t0="10")
    got = ex.answer(v).to("s").m
    assert math.isclose(got, 160 * _ring(10, 2, 63, 8, 16 * 8_192 * 2), rel_tol=1e-9)


def test_ex2_kv_per_gpu_replicated():
    """32 sequences of 8,192 tokens on 16 GPUs: 327,680 B x 8,192 x 32 x 2 copies / 16 per GPU."""
    assert check("many_gpus_ex2", Q_(327_680 * 8_192 * 32 * 2 / 16, "B")).correct
    assert not check("many_gpus_ex2", Q_(327_680 * 8_192 * 32 / 16, "B")).correct  # the heads do not split 16 ways


def test_ex3_bubble():
    """Four stages, eight micro-batches: 3 / 11."""
    assert check("many_gpus_ex3", 3 / 11).correct


def test_ex4_expert_parallel_bytes():
    """DeepSeek-V3 on 8 GPUs, FP8: 2 x 58 MoE layers x 8 experts x 7/8 leaving x 7,168 x 1 B."""
    assert check("many_gpus_ex4", Q_(2 * 58 * 8 * 7 / 8 * 7_168, "B")).correct


def test_ex5_overhead_share():
    """Llama 3.1 8B BF16 on one H200, cache at 4,096 tokens: 1 ms / ((16.06 GB + 4,096 x 131,072 B) / (0.7 x 4.8
    TB/s) + 1 ms + 32 layers x 23 us)."""
    memory = (8.03e9 * 2 + 4_096 * 131_072) / (0.7 * 4.8e12)
    assert check("many_gpus_ex5", 1e-3 / (memory + 1e-3 + 32 * 23e-6)).correct


def test_ex6_one_request_is_one_step():
    """At one request in flight no other request's prompt comes in while it decodes: the engine puts the prompt of
    the request that replaces it into a step of its own, after its last token, and its own prompt is its first
    token, not its time per token. So the time per token is the decode step of 1 token alone: weights + cache
    (70B FP8 on 2 x H200, 1,024 in and 1,024 out, the cache at 1,024 + 512 tokens) + the all-reduces of 1 token's
    activations (8,192 x 2 bytes each, the engines' one-shot on two GPUs: 3.5 + 0.8 us + 16,384 B / (0.8 x 450
    GB/s)) + 1 ms + 80 layers x 23 us. (A steady step that carried the next prompt's 1 x 1,024 / 1,024 = 1 token a
    step would have paid the all-reduces of 2 tokens: 160 x 16,384 B / (0.8 x 450 GB/s) = 7.3 us more.)"""
    ex = get("many_gpus_ex6")
    v = ex.variant() | dict(gpu="H200 SXM", n=2, c=1, prompt=1_024, answer=1_024)
    kv = 327_680 * (1_024 + 512)
    hand = (W70_FP8 + kv) / (2 * 0.7 * 4.8e12) + 1e-3 + 80 * 23e-6 + 160 * _one_shot(3.5, 0.8, 450, 2, 8_192 * 2)
    assert math.isclose(ex.answer(v).to("s").m, hand, rel_tol=1e-9)
