"""The capstone calculator of the chapter *Design review* (``book/11_design_review.md``).

Every number comes from :func:`llmcourse.planner.design.plan` (directly, or through
:func:`llmcourse.planner.levers.rank_levers`, which re-runs it); the few rows that restate a plan's
fields in another form (tokens per second, how long the answer streams) use the registered formulas.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ipywidgets as w

from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.planner.design import Brief, Plan, plan
from llmcourse.planner.levers import CONTEXT_FRACTION, HIT_RATE, Lever, rank_levers_against, verdict
from llmcourse.units import Q_, fmt, parsed_unit, to
from llmcourse.widgets import (
    Calculator,
    float_slider,
    gpu_dropdown,
    int_box,
    int_slider,
    model_dropdown,
    precision_dropdown,
    preset_dropdown,
)

__all__ = ["REVIEW_BRIEF", "DesignReview", "brief_controls", "design_review", "design_review_calculator"]

_MS, _USD_H, _PER_S = (parsed_unit(u)[0] for u in ("ms", "USD/hour", "1/s"))  # parsed once, not at each use


@dataclass(frozen=True)
class DesignReview:
    """A plan, its verdict and the ranked levers, as one review table."""

    plan: Plan
    verdict: str
    levers: list[Lever]

    def rows(self) -> list[tuple[str, str]]:
        p, b = self.plan, self.plan.brief
        tok = lambda n: F["token_rate"](request_rate=b.requests_per_second, tokens_per_request=n)  # noqa: E731
        rows = [
            (
                "1. brief in tokens",
                f"{tok(b.prompt_tokens).m:,.0f} prompt + {tok(b.answer_tokens).m:,.0f} answer tok/s",
            ),
            (
                "2. does it fit",
                f"weights {fmt(p.weights, 'GB')} in {fmt(p.usable_memory, 'GB')} usable; "
                f"KV {fmt(p.kv_per_request, 'GB')} per request",
            ),
        ]
        if p.fits:
            stream = F["generation_time"](tokens_per_request=b.answer_tokens, token_rate=1 / p.tpot)
            rows += [
                (
                    "3. one request",
                    f"first token after {fmt(p.ttft, 'ms')}, then {fmt(p.tpot, 'ms')} per token "
                    f"(answer streams for {fmt(stream, 's')})",
                ),
                (
                    "4. batching",
                    f"{p.batch} request{'s' if p.batch != 1 else ''} per step (memory allows {p.max_batch}); "
                    f"bound by {p.bottleneck}",
                ),
                ("5. scale out", f"{p.gpus:,} GPUs, {p.in_flight:,.0f} requests in flight"),
            ]
        rows += [("review: " + k, v) for k, v in p.rows()]
        rows.append(("verdict", self.verdict))
        rows += [(f"lever {i}: {name}", text) for i, (name, text) in enumerate((x.row() for x in self.levers), 1)]
        return rows


def design_review(
    model: Any,
    gpu: Any,
    brief: Brief,
    *,
    hit_rate: float = HIT_RATE,
    context_fraction: float = CONTEXT_FRACTION,
    **plan_kwargs: Any,
) -> DesignReview:
    """Run :func:`plan` for the brief, say whether it meets its targets and why, and rank the levers.

    Examples
    --------
    >>> r = design_review("Llama-3.1-8B", "H100 SXM", Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms")))
    >>> r.plan.gpus, r.verdict
    (2, 'meets both targets with 2 GPUs; the bottleneck is compute.')
    """
    p = plan(model, gpu, brief, **plan_kwargs)
    # rank_levers(model, gpu, brief, hit_rate=..., context_fraction=..., **plan_kwargs) with its baseline, p, planned once
    levers = rank_levers_against(model, gpu, brief, p, hit_rate, context_fraction, plan_kwargs)
    return DesignReview(p, verdict(p), levers)


def _compute(
    model: str,
    gpu: str,
    tensor_parallel: int,
    requests_per_second: float,
    prompt_tokens: int,
    answer_tokens: int,
    ttft_ms: float,
    tpot_ms: float,
    price: float,
    weights: str,
    kv_cache: str,
    method: str,
    hit_rate: float,
    context_fraction: float,
) -> DesignReview:
    brief = Brief(requests_per_second, prompt_tokens, answer_tokens, Q_(ttft_ms, _MS), Q_(tpot_ms, _MS))
    return design_review(
        model,
        gpu,
        brief,
        hit_rate=hit_rate,
        context_fraction=context_fraction,
        weight_bytes=weights,
        kv_bytes=kv_cache,
        price_per_hour=Q_(price, _USD_H),
        tensor_parallel=tensor_parallel,
        assumptions=method,
    )


#: The brief the capstone calculator starts at: 20 requests/s (peak) of 4,000 prompt and 400 answer tokens, a first
#: token within 1 s and a token every 40 ms (targets on the mean).
REVIEW_BRIEF = Brief(20.0, 4_000, 400, Q_(1_000.0, _MS), Q_(40.0, _MS))


def design_review_calculator(
    model: str = "Llama-3.1-70B",
    gpu: str = "H100 SXM",
    tensor_parallel: int = 2,
    brief: Brief = REVIEW_BRIEF,
    price: float = 2.5,
    weights: str = "fp8",
    kv_cache: str = "bf16",
    method: str = "course",
    hit_rate: float = HIT_RATE,
    context_fraction: float = CONTEXT_FRACTION,
) -> Calculator:
    """The whole estimate for a brief: review table, verdict and ranked levers. The controls start at ``brief``'s
    rate, lengths and targets (on the mean: the calculator plans on the mean).

    Examples
    --------
    >>> c = design_review_calculator()
    >>> dict(c.rows)["review: GPUs"], dict(c.set(method="planner").rows)["review: GPUs"]
    ('42 (21 x 2)', '24 (12 x 2)')
    >>> dict(design_review_calculator(brief=Brief(2, 4_000, 400, Q_(1, "s"), Q_(40, "ms"))).rows)["review: GPUs"]
    '6 (3 x 2)'
    """
    rate, prompt, answer, ttft_ms, tpot_ms = brief_controls(brief)
    return Calculator(
        _compute,
        {
            "model": model_dropdown(model),
            "gpu": gpu_dropdown(gpu),
            "tensor_parallel": int_slider(tensor_parallel, 1, 8, description="GPUs per replica (TP)"),
            "requests_per_second": w.BoundedFloatText(
                value=rate,
                min=0.001,
                max=1e7,
                description="Requests/s (peak)",
                style={"description_width": "initial"},
            ),
            "prompt_tokens": int_box(prompt, "Prompt tokens"),
            "answer_tokens": int_box(answer, "Answer tokens"),
            "ttft_ms": float_slider(ttft_ms, 50.0, 10_000.0, 50.0, "TTFT target (ms)"),
            "tpot_ms": float_slider(tpot_ms, 5.0, 200.0, 1.0, "Per-token target (ms)"),
            "price": float_slider(price, 0.25, 10.0, 0.25, "$ per GPU-hour"),
            "weights": precision_dropdown(weights, "Weights"),
            "kv_cache": precision_dropdown(kv_cache, "KV cache"),
            "method": preset_dropdown(method),
            "hit_rate": float_slider(hit_rate, 0.0, 0.95, 0.05, "Prefix-cache hit rate"),
            "context_fraction": float_slider(context_fraction, 0.1, 1.0, 0.05, "Shorter context: keep"),
        },
        title="Design review",
    )


def brief_controls(brief: Brief) -> tuple[float, int, int, float, float]:
    """A brief as a calculator's controls start: (requests per second, prompt tokens, answer tokens, TTFT target in
    ms, TPOT target in ms); a brief with percentile targets is refused (a calculator plans on the mean).

    Examples
    --------
    >>> brief_controls(Brief(20, 2_000, 300, Q_(0.6, "s"), Q_(40, "ms")))
    (20.0, 2000, 300, 600.0, 40.0)
    """
    if not isinstance(brief, Brief):
        raise InputError(f"brief must be a Brief(requests_per_second, prompt_tokens, answer_tokens, ttft_target, "
                         f"tpot_target); got {type(brief).__name__}.")  # fmt: skip
    if brief.on_percentiles:
        raise InputError(
            "the calculator plans for targets on the mean: give a Brief without ttft_percentile and tpot_percentile "
            "(plan() sizes for percentile targets)."
        )
    rate = float(to(brief.requests_per_second, _PER_S).m)
    ttft, tpot = float(to(brief.ttft_target, _MS).m), float(to(brief.tpot_target, _MS).m)
    return rate, round(brief.prompt_tokens), round(brief.answer_tokens), ttft, tpot
