"""The worked answers of the speculative-decoding questions (``book/08b_speculative.md``).

One function for each question of ``llmcourse/data/interview/04_speculative.md``, registered under its
id (:func:`~llmcourse.interview.questions.register_worked`), computed with
:mod:`llmcourse.replica.speculative`.

Examples
--------
>>> from llmcourse.interview import QUESTIONS
>>> round(QUESTIONS["spec_expected"].numbers()["tau"], 2)
3.36
"""

from __future__ import annotations

import functools
from typing import Any

from llmcourse.assumptions import resolve
from llmcourse.interview.figures import COURSE, draw, pct, per_s
from llmcourse.interview.questions import register_worked
from llmcourse.interview.templates import num
from llmcourse.planner.serving import fleet
from llmcourse.planner.speculation import crossover_batch, crossover_estimate
from llmcourse.replica import speculative, speculative_replica
from llmcourse.replica.acceptance import published
from llmcourse.replica.memory import weight_bytes
from llmcourse.replica.model import replica
from llmcourse.units import Q_

__all__ = ["ACCEPTANCES", "ANSWERS", "DRAFTS", "PROMPTS"]


#: Draft lengths and acceptance rates the variants draw from, and the prompt and answer lengths.
DRAFTS, ACCEPTANCES = (2, 3, 4, 5, 6, 8), (0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)
PROMPTS, ANSWERS = (500, 1_000, 2_000, 4_000, 8_000), (100, 300, 500, 1_000)


@register_worked("spec_expected")
def _spec_expected(variant: int = 0) -> dict[str, Any]:
    g = draw(variant, k=(4, DRAFTS), alpha=(0.8, ACCEPTANCES), prompt=(2_000, PROMPTS), answer=(300, ANSWERS))
    spec = speculative.Speculation("draft model", g["k"], g["alpha"], "Llama-3.1-8B")
    ctx = g["prompt"] + g["answer"] / 2  # each cache read at its average length
    s = speculative.speculative_step(
        "Llama-3.1-70B", "H100 SXM", spec, context_tokens=ctx, tensor_parallel=2, weight_bytes="fp8"
    )
    return dict(
        prompt=g["prompt"],
        answer=g["answer"],
        ctx=ctx,
        k=spec.draft_tokens,
        alpha=spec.acceptance,
        positions=spec.draft_tokens + 1,
        tau=s.expected_tokens,
        w70=weight_bytes("Llama-3.1-70B", "fp8").to("GB"),
        bw_pct=pct(resolve(COURSE).bandwidth_efficiency),
        plain=s.plain.step_time,
        plain_read=s.plain.memory_time,
        plain_comm=s.plain.comm_time,
        over=s.plain.overhead_time,
        draft_over=s.draft.overhead_time,
        verify=s.verify.step_time,
        draft=s.draft_step_time,
        draft_read=s.draft.memory_time,
        draft_comm=s.draft.comm_time,
        cycle=s.cycle_time,
        per_token=s.time_per_token,
        speedup=s.speedup,
        user_plain=per_s(s.plain.tokens_per_s_per_user),
        user_spec=per_s(s.tokens_per_s_per_user),
    )


@functools.cache
def _crossing_setups() -> tuple[tuple[int, float, int], ...]:
    """(draft tokens, acceptance, context) of an EAGLE head on Llama 3.1 8B and one H100 where speculation stops
    paying at some batch (the crossover question asks where)."""
    return tuple(
        (k, alpha, ctx)
        for k in DRAFTS[:5]
        for alpha in ACCEPTANCES
        for ctx in (128, 288, 512, 1_024)
        if crossover_batch(
            "Llama-3.1-8B", "H100 SXM", speculative.Speculation("eagle head", k, alpha), context_tokens=ctx
        )
        is not None
    )


@register_worked("spec_crossover")
def _spec_crossover(variant: int = 0) -> dict[str, Any]:
    k, alpha, ctx = draw(variant, setup=((4, 0.7, 288), _crossing_setups()))["setup"]
    spec, batch = speculative.Speculation("eagle head", k, alpha), 200
    s = speculative.speculative_step("Llama-3.1-8B", "H100 SXM", spec, batch=batch, context_tokens=ctx)
    return dict(
        ctx=ctx,
        k=spec.draft_tokens,
        alpha=spec.acceptance,
        positions=spec.draft_tokens + 1,
        batch=batch,
        tau=s.expected_tokens,
        cross=crossover_batch("Llama-3.1-8B", "H100 SXM", spec, context_tokens=ctx),
        estimate=crossover_estimate("Llama-3.1-8B", "H100 SXM", spec, context_tokens=ctx),
        speedup=s.speedup,
        x=per_s(s.throughput),
        x_plain=per_s(s.plain_throughput),
        plain=s.plain.step_time,
        verify=s.verify.step_time,
        draft=s.draft_step_time,
        over=s.plain.overhead_time,
        draft_over=s.draft.overhead_time,
        fit_long=speculative.speculative_memory("Llama-3.1-8B", "H100 SXM", spec, context_tokens=2_150).max_batch,
    )


@register_worked("spec_mtp")
def _spec_mtp(variant: int = 0) -> dict[str, Any]:
    g = draw(
        variant,
        alpha=(0.85, (0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)),
        ctx=(2_150, (550, 850, 1_150, 1_650, 2_150)),
    )
    spec = speculative.Speculation("mtp", 1, g["alpha"])
    kw = dict(context_tokens=g["ctx"], tensor_parallel=8, weight_bytes="fp8")
    one, full = (speculative.speculative_step("DeepSeek-V3", "H200 SXM", spec, batch=b, **kw) for b in (1, 256))
    row = next(r for r in published("mtp", figure="speedup") if r.target == "DeepSeek-V3")
    near = f", close to DeepSeek's {num(row.value, 2)}x and to the" if variant == 0 else ", close to the"
    return dict(
        ctx=g["ctx"],
        near=near,
        alpha=spec.acceptance,
        tau=one.expected_tokens,
        s1=one.speedup,
        s256=full.speedup,
        w_plain1=one.plain.weights_read,
        w_ver1=one.verify.weights_read,
        w_mtp1=one.draft.weights_read,
        t_plain1=one.plain.step_time,
        fixed1=one.plain.overhead_time + one.plain.floor_time + one.plain.comm_time,
        t_ver1=one.verify.step_time,
        t_mtp1=one.draft_step_time,
        w_plain256=full.plain.weights_read,
        published=row.value,
    )


@register_worked("spec_fleet")
def _spec_fleet() -> dict[str, Any]:
    kw = dict(tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300, weight_bytes="fp8")
    draft, head = (
        speculative.Speculation("draft model", 4, 0.7, "Llama-3.1-8B"),
        speculative.Speculation("eagle head", 4, 0.7),
    )
    reps = {
        "plain": replica("Llama-3.1-70B", "H100 SXM", **kw),
        "draft": speculative_replica("Llama-3.1-70B", "H100 SXM", draft, **kw),
        "head": speculative_replica("Llama-3.1-70B", "H100 SXM", head, **kw),
    }
    demand = Q_(10_000, "1/s")
    out: dict[str, Any] = dict(
        k=head.draft_tokens,
        alpha=head.acceptance,
        headroom=resolve(COURSE).headroom,
        mem=reps["plain"].usable_memory,
        w70=reps["plain"].weights,
    )
    for key, r in reps.items():
        out |= {
            f"b_{key}": r.batch,
            f"u_{key}": per_s(r.tokens_per_s_per_user),
            f"t_{key}": r.tpot,
            f"x_{key}": per_s(r.throughput),
            f"g_{key}": fleet(demand, r).gpus,
            f"c_{key}": r.cost_per_million_output_tokens,
        }
    for key, spec in (("draft", draft), ("head", head)):
        m = speculative.speculative_memory(
            "Llama-3.1-70B", "H100 SXM", spec, context_tokens=2_300, tensor_parallel=2, weight_bytes="fp8"
        )
        out |= {f"w_{key}": m.draft_weights, f"kv_{key}": m.draft_kv_per_sequence.to("MB")}
    return out
