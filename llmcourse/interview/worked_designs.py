"""The worked answers of the operations design prompts (``llmcourse/data/interview/07_operations.md``): a support
assistant held to a p99 first token, a nightly batch of jobs, and a code assistant served aggregated or
disaggregated.

Each function takes ``variant`` (0: the book's givens), draws its brief with :func:`llmcourse.interview.figures.draw`
and sizes it with the planner (:func:`llmcourse.planner.plan`, :func:`llmcourse.planner.disagg.compare`); the figures a
good answer must reach are the planner's for that brief.

Examples
--------
>>> from llmcourse.interview import QUESTIONS
>>> QUESTIONS["design_support_p99"].numbers(0)["gpus"] > 0
True
"""

from __future__ import annotations

from typing import Any

from llmcourse.formulas import FORMULAS as F
from llmcourse.interview.figures import PEAK_FACTOR, draw, per_s
from llmcourse.interview.questions import register_worked
from llmcourse.interview.templates import num
from llmcourse.planner.design import Brief, plan
from llmcourse.planner.disagg import compare
from llmcourse.units import Q_

# --- design prompts ----------------------------------------------------------------------------------------------------
#: The support assistant's promise: 99% of first tokens within 500 ms.
_SUPPORT_TTFT = Q_(500, "ms")
#: The largest replica (GPUs) a design question tries when its replicas miss the targets: one H100 or H200 node.
_LARGEST_REPLICA = 8


def _verdict(met: bool) -> str:
    return "meets" if met else "misses"


def _design_support(variant: int) -> dict[str, Any]:
    g = draw(
        variant,
        model=("Llama-3.1-70B", ("Llama-3.1-70B", "Qwen2.5-72B", "Qwen3-32B", "Llama-3.1-8B")),
        gpu=("H100 SXM", ("H100 SXM", "H200 SXM", "B200", "MI300X")),
        daily=(3_000_000, (1_000_000, 2_000_000, 3_000_000, 5_000_000, 8_000_000)),
    )
    rps = per_s(F["peak_request_rate"](daily_rate=Q_(g["daily"], "1/day"), peak_factor=PEAK_FACTOR))
    rps = round(rps, 1)
    mean_brief = Brief(rps, 3_000, 300, _SUPPORT_TTFT, Q_(50, "ms"))
    p99_brief = Brief(rps, 3_000, 300, _SUPPORT_TTFT, Q_(50, "ms"), ttft_percentile=99)
    on_mean = plan(g["model"], g["gpu"], mean_brief, weight_bytes="fp8", tensor_parallel="auto")
    p = plan(g["model"], g["gpu"], p99_brief, weight_bytes="fp8", tensor_parallel=on_mean.tensor_parallel)
    z = p.sizing
    design, larger = p, ""
    # a prompt alone is too slow at the p99 on these replicas, or so close to it that only a nearly idle fleet meets
    # it (more than twice the mean's): larger replicas prefill it faster
    if not z.met or p.gpus > 2 * on_mean.gpus:
        shapes = [2**k for k in range(1, 4) if on_mean.tensor_parallel < 2**k <= _LARGEST_REPLICA]
        met = [q for q in (plan(g["model"], g["gpu"], p99_brief, weight_bytes="fp8", tensor_parallel=t) for t in shapes)
               if q.sizing.met and (not z.met or q.gpus < p.gpus)]  # fmt: skip
        design = min(met, key=lambda q: q.gpus) if met else p
        faster = (
            f" Replicas of {design.tensor_parallel} GPUs prefill it faster and meet it with {design.gpus:,} GPUs"
            f" (p99 {num(design.sizing.ttft)}), {num(design.cost_per_million_output_tokens)} per million tokens:"
            f" that is the design."
        )
        if not z.met:
            larger = (
                f" No number of replicas of {p.tensor_parallel} meets it: at the p99 a prompt that never waits is"
                f" already too slow."
                + (faster if met else f" Nor do replicas of up to {_LARGEST_REPLICA} GPUs: the promise or the prompts"
                   f" must change.")
            )  # fmt: skip
        elif met:
            larger = (
                f" Replicas of {p.tensor_parallel} meet it only nearly idle: at the p99 a prompt that never waits is"
                f" already close to the target, so almost none may wait." + faster
            )
    settled = (
        " The p99 target lies inside the simulated p99's sampling interval at that fleet, so the count is rough:"
        " another seed of the same simulation can move it; say so, and give the target room."
        if design.sizing is not None and design.sizing.met and design.sizing.close_call()
        else ""
    )
    return g | dict(
        rps=rps,
        peak=PEAK_FACTOR,
        gpus=design.gpus,
        gpus_p99=p.gpus,
        larger=larger,
        settled=settled,
        tp=p.tensor_parallel,
        mean_gpus=on_mean.gpus,
        p99=z.ttft,
        mean_p99=z.mean_ttft,
        mean_verdict=_verdict(z.mean_ttft <= _SUPPORT_TTFT),
        p99_verdict=_verdict(z.ttft <= _SUPPORT_TTFT),
        gpus_vs="fewer than" if p.gpus < on_mean.gpus else ("more than" if p.gpus > on_mean.gpus else "as many as"),
        design_tp=design.tensor_parallel,
        batch=p.batch,
        ttft=on_mean.ttft.to("ms"),
        tpot=on_mean.tpot.to("ms"),
        bottleneck=str(on_mean.bottleneck),
        cost=p.cost_per_million_output_tokens,
        in_flight=on_mean.in_flight,
    )


@register_worked("design_support_p99")
def _design_support_p99(variant: int = 0) -> dict[str, Any]:
    return _design_support(variant)


@register_worked("design_batch_jobs")
def _design_batch_jobs(variant: int = 0) -> dict[str, Any]:
    g = draw(
        variant,
        model=("Llama-3.1-70B", ("Llama-3.1-70B", "Qwen2.5-72B", "Qwen3-32B", "Llama-3.1-8B")),
        gpu=("H100 SXM", ("H100 SXM", "H200 SXM", "B200", "MI300X")),
        docs=(10_000_000, (2_000_000, 5_000_000, 10_000_000, 20_000_000)),
        hours=(8, (4, 6, 8, 12)),
    )
    rps = round(g["docs"] / (g["hours"] * 3_600), 1)
    brief = Brief(rps, 6_000, 500, Q_(60, "s"), Q_(200, "ms"))
    p = plan(g["model"], g["gpu"], brief, weight_bytes="fp8", tensor_parallel="auto")
    online = plan(
        g["model"],
        g["gpu"],
        Brief(rps, 6_000, 500, Q_(1, "s"), Q_(30, "ms")),
        weight_bytes="fp8",
        tensor_parallel="auto",
    )
    return g | dict(
        rps=rps,
        gpus=p.gpus,
        tp=p.tensor_parallel,
        batch=p.batch,
        cost=p.cost_per_million_output_tokens,
        job=(p.cost_per_hour * Q_(g["hours"], "hour")).to("USD"),
        online_gpus=online.gpus,
        online_cost=online.cost_per_million_output_tokens,
        bottleneck=str(p.bottleneck),
        tpot=p.tpot.to("ms"),
    )


@register_worked("design_code_disagg")
def _design_code_disagg(variant: int = 0) -> dict[str, Any]:
    g = draw(
        variant,
        model=("Llama-3.1-70B", ("Llama-3.1-70B", "Qwen2.5-72B", "Qwen3-32B")),
        gpu=("H100 SXM", ("H100 SXM", "H200 SXM", "B200")),
        rps=(40, (10, 20, 40, 80)),
        prompt=(8_000, (4_000, 8_000, 16_000)),
    )
    brief = Brief(g["rps"], g["prompt"], 200, Q_(1_500, "ms"), Q_(25, "ms"))
    tp = plan(g["model"], g["gpu"], brief, weight_bytes="fp8", tensor_parallel="auto").tensor_parallel
    c = compare(g["model"], g["gpu"], brief, tensor_parallel=tp, weight_bytes="fp8")  # both first tokens at p99
    agg, d = c.aggregated, c.disaggregated
    # neither meets both targets: a prompt alone is too slow at the p99 on replicas of tp GPUs, so the design takes
    # larger replicas (a shorter prefill), doubling until one side meets them or the replica is a whole node
    final, tp_final = c, tp
    while final.winner == "neither" and 2 * tp_final <= _LARGEST_REPLICA:
        tp_final *= 2
        final = compare(g["model"], g["gpu"], brief, tensor_parallel=tp_final, weight_bytes="fp8")
    fa, fd = final.aggregated, final.disaggregated
    best = min(x.gpus for x in (fa, fd) if x.meets_targets) if final.winner != "neither" else fa.gpus
    if final is c:
        larger = ""
    else:
        larger = (
            f" Neither meets both targets on replicas of {tp}: at the p99 a prompt that never waits is already too"
            f" slow, so more replicas do not help; replicas of {tp_final} GPUs prefill it faster. There: aggregated"
            f" {fa.gpus} GPUs, p99 TTFT {num(final.aggregated_ttft.to('ms'))} ({_verdict(fa.meets_targets)} the targets);"
            f" disaggregated {fd.prefill.gpus} prefill + {fd.decode.gpus} decode = {fd.gpus} GPUs, p99 TTFT"
            f" {num(fd.ttft)}, TPOT {num(fd.tpot)} ({_verdict(fd.meets_targets)} the targets)."
        )
    verdict = (
        f"neither meets both targets on replicas of up to {tp_final} GPUs; the target or the prompts must change"
        if final.winner == "neither"
        else f"{final.winner}, replicas of {tp_final} GPUs, {best:,} GPUs"
    )
    return g | dict(
        tp=tp,
        agg_gpus=agg.gpus,
        agg_ttft=c.aggregated_ttft.to("ms"),
        agg_tpot=agg.tpot.to("ms"),
        agg_met=_verdict(agg.meets_targets),
        dis_gpus=d.gpus,
        dis_met=_verdict(d.meets_targets),
        prefill_gpus=d.prefill.gpus,
        decode_gpus=d.decode.gpus,
        dis_ttft=d.ttft,
        dis_tpot=d.tpot,
        handoff=d.kv_handoff,
        winner=final.winner,
        larger=larger,
        verdict=verdict,
        tp_final=tp_final,
        gpus=best,
        bottleneck=str(agg.bottleneck),
    )
