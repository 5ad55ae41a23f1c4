"""Sizing a fleet to percentile targets by simulating one replica's queue (the sizing behind
:func:`llmcourse.planner.design.plan` for a brief with ``ttft_percentile=`` or ``tpot_percentile=``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pint

from llmcourse.errors import InputError
from llmcourse.simulator.events import Scheduler
from llmcourse.simulator.run import MOST_CV, MOST_CV_WHY, MOST_REQUESTS, MOST_REQUESTS_WHY, simulate
from llmcourse.simulator.service import ServiceModel
from llmcourse.simulator.workload import LENGTH_CV
from llmcourse.units import plain_number, seed_number, to

__all__ = ["PercentileSizing", "SizingRun", "size_to_percentiles"]


@dataclass(frozen=True)
class SizingRun:
    """How a plan with percentile targets simulates its queue (:func:`size_to_percentiles`): ``requests`` Poisson
    arrivals drawn with ``seed``, lengths spread by ``prompt_cv`` and ``answer_cv`` (None: the simulator's
    :data:`~llmcourse.simulator.workload.LENGTH_CV`), prompts prefilled whole (``chunk_tokens=None``) or in chunks of
    ``chunk_tokens``. The simulator checks each field, by its name, when it runs.

    Examples
    --------
    >>> SizingRun(requests=1_000).requests, SizingRun().seed
    (1000, 0)
    """

    chunk_tokens: int | None = None
    prompt_cv: float | None = None
    answer_cv: float | None = None
    requests: int = 4_000
    seed: int = 0

    def __post_init__(self) -> None:
        """Each field checked when the run is described, by the simulator's own bounds and names."""
        if self.chunk_tokens is not None:
            Scheduler(self.chunk_tokens)  # the scheduler's check of a chunk, by the same name
        for name in ("prompt_cv", "answer_cv"):
            if getattr(self, name) is not None:
                plain_number(getattr(self, name), name, allow_zero=True, at_most=MOST_CV, why=MOST_CV_WHY)
        plain_number(self.requests, "requests", integer=True, at_most=MOST_REQUESTS, why=MOST_REQUESTS_WHY)
        seed_number(self.seed)


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
    service: ServiceModel,
    brief: Any,
    *,
    mean_replicas: int,
    cached_prompt_tokens: float = 0,
    chunk_tokens: int | None = None,
    prompt_cv: float | None = None,
    answer_cv: float | None = None,
    requests: int = 4_000,
    seed: int = 0,
) -> PercentileSizing:
    """The fewest replicas whose simulated percentiles meet a brief's percentile targets (the sizing behind
    :func:`llmcourse.planner.design.plan` for ``Brief(..., ttft_percentile=..., tpot_percentile=...)``).

    One replica, ``service`` (:func:`~llmcourse.simulator.service.build_replica` at the brief's lengths, its batch
    capped at the plan's), is simulated at the rate each of N replicas receives, ``brief.requests_per_second / N``,
    from the fewest that keep up (the rate over one replica's capacity, rounded up), doubling until the targets are
    met, then halving the gap (the percentiles fall as N grows). ``mean_replicas`` is the fleet sized on the mean,
    simulated too for comparison. If no fleet up to 64 times the smallest meets the targets (a target below what one
    request takes alone), the sizing says so (``met=False``) and keeps the fleet sized on the mean. Every request
    finds its first ``cached_prompt_tokens`` cached; prompts are prefilled whole or in chunks of ``chunk_tokens``;
    the lengths spread by ``prompt_cv`` and ``answer_cv`` (:data:`~llmcourse.simulator.workload.LENGTH_CV` if None).

    Examples
    --------
    >>> from llmcourse.planner.design import Brief
    >>> from llmcourse.simulator.service import build_replica
    >>> from llmcourse.units import Q_
    >>> brief = Brief(30, 2_000, 300, Q_(400, "ms"), Q_(50, "ms"), ttft_percentile=99)
    >>> service = build_replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=2_000, answer_tokens=300, batch_cap=64)
    >>> z = size_to_percentiles(service, brief, mean_replicas=4, requests=1_000)
    >>> z.met, z.ttft <= brief.ttft_target, z.label("ttft")
    (True, True, 'p99')
    """
    if not isinstance(service, ServiceModel):
        raise InputError(
            f"service must be a ServiceModel: build one with build_replica(...), not {type(service).__name__}."
        )
    cached = plain_number(cached_prompt_tokens, "cached_prompt_tokens", allow_zero=True)
    fleets = _Fleets(
        service,
        brief,
        dict(
            prompt_tokens=brief.prompt_tokens,
            answer_tokens=brief.answer_tokens,
            requests=requests,
            seed=seed,
            prompt_cv=LENGTH_CV if prompt_cv is None else prompt_cv,
            answer_cv=LENGTH_CV if answer_cv is None else answer_cv,
            scheduler=Scheduler(chunk_tokens, prefix_hit_rate=1.0 if cached > 0 else 0.0, prefix_tokens=cached),
            replica=service,
        ),
    )
    fewest, met = fleets.fewest_meeting()
    best = fewest if met else mean_replicas
    return PercentileSizing(
        ttft_percentile=brief.ttft_percentile,
        tpot_percentile=brief.tpot_percentile,
        replicas=best,
        ttft=fleets.at(best)[0],
        tpot=fleets.at(best)[1],
        mean_replicas=mean_replicas,
        mean_ttft=fleets.at(mean_replicas)[0],
        mean_tpot=fleets.at(mean_replicas)[1],
        met=met,
        requests=int(requests),
        seed=int(seed),
        chunk_tokens=chunk_tokens,
    )


class _Fleets:
    """One replica simulated at the rate each of ``n`` replicas receives, each fleet size once: its percentiles
    (the brief's, p99 where a target is on the mean), and whether they meet the brief's percentile targets."""

    def __init__(self, service: ServiceModel, brief: Any, run: dict[str, Any]) -> None:
        self.service, self.brief, self.run = service, brief, run
        self.q_ttft = 99.0 if brief.ttft_percentile is None else brief.ttft_percentile
        self.q_tpot = 99.0 if brief.tpot_percentile is None else brief.tpot_percentile
        self.seen: dict[int, tuple[pint.Quantity, pint.Quantity]] = {}

    def at(self, n: int) -> tuple[pint.Quantity, pint.Quantity]:
        """(TTFT, TPOT) at the brief's percentiles with ``n`` replicas."""
        if n not in self.seen:
            svc = self.service
            r = simulate(svc.model, svc.gpu, rate=self.brief.requests_per_second / n, **self.run)
            self.seen[n] = (r.at("ttft", self.q_ttft), r.at("tpot", self.q_tpot))
        return self.seen[n]

    def meets(self, n: int) -> bool:
        ttft, tpot = self.at(n)
        b = self.brief
        return (b.ttft_percentile is None or ttft <= b.ttft_target) and (
            b.tpot_percentile is None or tpot <= b.tpot_target
        )

    def fewest_meeting(self) -> tuple[int, bool]:
        """The fewest replicas that meet the targets, from the fewest that keep up (doubling, then halving the gap,
        to one replica in 10**9), and whether any fleet up to 64 times that meets them."""
        b, svc = self.brief, self.service
        load = to(b.requests_per_second / svc.capacity(b.prompt_tokens, b.answer_tokens), "").m  # on one replica
        fewest = max(1, math.ceil(load * (1 + 1e-12)))
        lo, hi = fewest, fewest
        while not self.meets(hi) and hi < 64 * fewest:
            lo, hi = hi, min(2 * hi, 64 * fewest)
        met = self.meets(hi)
        if met and hi > lo:
            # meets(hi) and not meets(lo); to one replica in 10**9 (a fleet of 1e300 replicas takes 40 steps, not 1,000)
            while hi - lo > max(1, lo // 10**9):
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if self.meets(mid) else (mid, hi)
        elif met:
            hi = lo
        return hi, met
