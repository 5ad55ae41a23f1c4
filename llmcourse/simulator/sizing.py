"""Sizing a fleet to percentile targets by simulating one replica's queue (the sizing behind
:func:`llmcourse.planner.design.plan` for a brief with ``ttft_percentile=`` or ``tpot_percentile=``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pint

from llmcourse.assumptions import Assumptions
from llmcourse.catalog import GPU, Model
from llmcourse.simulator.events import Scheduler
from llmcourse.simulator.run import simulate
from llmcourse.simulator.service import build_replica
from llmcourse.simulator.workload import LENGTH_CV
from llmcourse.units import plain_number, to

__all__ = ["PercentileSizing", "size_to_percentiles"]


@dataclass(frozen=True)
class PercentileSizing:
    """How :func:`plan` sized a brief with percentile targets: by simulating one replica's queue
    (:func:`simulate`) at the rate each of ``replicas`` replicas receives, and what the
    fleet sized on the mean would have given at the same percentiles."""

    ttft_percentile: float | None
    tpot_percentile: float | None
    replicas: int
    ttft: pint.Quantity  # at ttft_percentile (p99 if that is None), simulated at the chosen fleet
    tpot: pint.Quantity  # at tpot_percentile (p99 if that is None)
    mean_replicas: int  # the fleet sized on the mean (with the assumptions' headroom)
    mean_ttft: pint.Quantity  # what that fleet gives at the same percentiles
    mean_tpot: pint.Quantity
    met: bool  # both percentile targets met (False: none of the fleets tried meets them)
    requests: int
    seed: int
    chunk_tokens: int | None

    def label(self, metric: str) -> str:
        q = self.ttft_percentile if metric == "ttft" else self.tpot_percentile
        return f"p{q if q is not None else 99:g}"


def size_to_percentiles(
    model: Model | str,
    gpu: GPU | str,
    brief: Any,
    *,
    batch: int,
    mean_replicas: int,
    tensor_parallel: int = 1,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
    cached_prompt_tokens: float = 0,
    chunk_tokens: int | None = None,
    prompt_cv: float | None = None,
    answer_cv: float | None = None,
    requests: int = 4_000,
    seed: int = 0,
) -> Any:
    """The fewest replicas whose simulated percentiles meet a brief's percentile targets (the sizing behind
    :func:`llmcourse.planner.design.plan` for ``Brief(..., ttft_percentile=..., tpot_percentile=...)``).

    One replica (``tensor_parallel`` GPUs, its batch capped at ``batch``) is simulated at the rate each of N
    replicas receives, ``brief.requests_per_second / N``, from the fewest that keep up (the rate over one
    replica's capacity, rounded up), doubling until the targets are met, then halving the gap (the percentiles
    fall as N grows). ``mean_replicas`` is the fleet sized on the mean, simulated too for comparison. If no fleet
    up to 64 times the smallest meets the targets (a target below what one request takes alone), the sizing says
    so (``met=False``) and keeps the fleet sized on the mean.
    """

    p, a = brief.prompt_tokens, brief.answer_tokens
    svc = build_replica(
        model,
        gpu,
        prompt_tokens=p,
        answer_tokens=a,
        n_gpus=tensor_parallel,
        weight_bytes=weight_bytes,
        kv_bytes=kv_bytes,
        batch_cap=batch,
        assumptions=assumptions,
    )
    cached = plain_number(cached_prompt_tokens, "cached_prompt_tokens", allow_zero=True)
    run = dict(
        prompt_tokens=p,
        answer_tokens=a,
        requests=requests,
        seed=seed,
        prompt_cv=LENGTH_CV if prompt_cv is None else prompt_cv,
        answer_cv=LENGTH_CV if answer_cv is None else answer_cv,
        scheduler=Scheduler(chunk_tokens, prefix_hit_rate=1.0 if cached > 0 else 0.0, prefix_tokens=cached),
        replica=svc,
    )
    qt = 99.0 if brief.ttft_percentile is None else brief.ttft_percentile
    qp = 99.0 if brief.tpot_percentile is None else brief.tpot_percentile
    seen: dict[int, tuple[pint.Quantity, pint.Quantity]] = {}

    def at(n: int) -> tuple[pint.Quantity, pint.Quantity]:
        if n not in seen:
            r = simulate(svc.model, svc.gpu, rate=brief.requests_per_second / n, **run)
            seen[n] = (r.at("ttft", qt), r.at("tpot", qp))
        return seen[n]

    def meets(n: int) -> bool:
        ttft, tpot = at(n)
        return (brief.ttft_percentile is None or ttft <= brief.ttft_target) and (
            brief.tpot_percentile is None or tpot <= brief.tpot_target
        )

    fewest = max(1, math.ceil(to(brief.requests_per_second / svc.capacity(p, a), "").m * (1 + 1e-12)))
    lo, hi = fewest, fewest
    while not meets(hi) and hi < 64 * fewest:
        lo, hi = hi, min(2 * hi, 64 * fewest)
    met = meets(hi)
    if met and hi > lo:
        while hi - lo > 1:  # meets(hi) and not meets(lo)
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if meets(mid) else (mid, hi)
    elif met:
        hi = lo
    best = hi if met else mean_replicas
    return PercentileSizing(
        ttft_percentile=brief.ttft_percentile,
        tpot_percentile=brief.tpot_percentile,
        replicas=best,
        ttft=at(best)[0],
        tpot=at(best)[1],
        mean_replicas=mean_replicas,
        mean_ttft=at(mean_replicas)[0],
        mean_tpot=at(mean_replicas)[1],
        met=met,
        requests=int(requests),
        seed=int(seed),
        chunk_tokens=chunk_tokens,
    )
