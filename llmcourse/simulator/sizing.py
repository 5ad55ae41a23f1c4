"""Sizing a fleet to percentile targets by simulating one replica's queue (the sizing behind
:func:`llmcourse.planner.design.plan` for a brief with ``ttft_percentile=`` or ``tpot_percentile=``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pint

from llmcourse.errors import InputError
from llmcourse.simulator.events import ENGINE_BUDGET, Scheduler
from llmcourse.simulator.fleet import MOST_REPLICAS, Fleet
from llmcourse.simulator.run import MOST_CV, MOST_CV_WHY, MOST_REQUESTS, MOST_REQUESTS_WHY, simulate
from llmcourse.simulator.service import ServiceModel
from llmcourse.simulator.workload import LENGTH_CV
from llmcourse.units import plain_number, seed_number, to

__all__ = ["PercentileSizing", "SizingRun", "size_to_percentiles"]


@dataclass(frozen=True)
class SizingRun:
    """How a plan with percentile targets simulates its queue (:func:`size_to_percentiles`): ``requests`` Poisson
    arrivals drawn with ``seed``, lengths spread by ``prompt_cv`` and ``answer_cv`` (None: the simulator's
    :data:`~llmcourse.simulator.workload.LENGTH_CV`), the engine's token budget per iteration
    (``chunk_tokens="engine"``: :func:`~llmcourse.simulator.service.engine_chunk_tokens`), chunks of ``chunk_tokens``,
    or whole prompts (``None``); the fleet's requests sent to its replicas by ``router``
    (:data:`~llmcourse.simulator.fleet.ROUTERS`: ``"least_loaded"`` by default, as the open-source routers balance;
    ``"random"`` is an upper bound on the wait). ``settled=True`` counts a fleet as meeting a percentile target only
    when the whole of its sampling interval clears it (:meth:`SimResult.interval`: its upper end meets the target), at
    the cost of more replicas, or of none found where the target sits on the floor (then the plan keeps the fleet
    sized on the mean, marked unmet, and says so). Other seeds can still differ: the interval takes the requests as
    independent, and a queue's are not. The simulator checks each field, by its name, when it runs.

    Examples
    --------
    >>> SizingRun(requests=1_000).requests, SizingRun().seed, SizingRun().router
    (1000, 0, 'least_loaded')
    >>> SizingRun(router="jsq")
    Traceback (most recent call last):
    ...
    llmcourse.errors.UnknownNameError: no router named 'jsq'. Known: random, round_robin, least_loaded, least_kv, power_of_two, least_cost, prefix_aware.
    """

    chunk_tokens: int | str | None = ENGINE_BUDGET
    prompt_cv: float | None = None
    answer_cv: float | None = None
    requests: int = 4_000
    seed: int = 0
    router: str = "least_loaded"
    settled: bool = False

    def __post_init__(self) -> None:
        """Each field checked when the run is described, by the simulator's own bounds and names."""
        Scheduler(self.chunk_tokens)  # the scheduler's check of a chunk, by the same name
        Fleet(1, self.router)  # the fleet's check of a router's name
        for name in ("prompt_cv", "answer_cv"):
            if getattr(self, name) is not None:
                plain_number(getattr(self, name), name, allow_zero=True, at_most=MOST_CV, why=MOST_CV_WHY)
        plain_number(self.requests, "requests", integer=True, at_most=MOST_REQUESTS, why=MOST_REQUESTS_WHY)
        seed_number(self.seed)
        if not isinstance(self.settled, bool):
            raise InputError(f"settled must be True or False; got {self.settled!r}.")


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
    met: bool  # both percentile targets met (False: the largest fleet the search tried misses them)
    requests: int
    seed: int
    chunk_tokens: int | None  # the token budget per iteration the replicas ran (None: whole prompts)
    router: str = "least_loaded"
    ttft_target: pint.Quantity | None = None  # the brief's targets, for close_call
    tpot_target: pint.Quantity | None = None
    # what one replica fewer gives at the same percentiles (None: the targets not met, the chosen fleet the fewest
    # that keep up, or a fleet so large that the search's last step was more than one replica)
    fewer_ttft: pint.Quantity | None = None
    fewer_tpot: pint.Quantity | None = None
    settled: bool = False  # a fleet met a target only with its interval's upper end (SizingRun(settled=True)); the
    # fewer_* figures are then the upper ends that fleet missed with
    # about 95% sampling intervals (SimResult.interval, as independent draws would give) of the percentiles with a
    # target, at the fleet that decided the answer (interval_replicas): the chosen fleet, or the largest tried when
    # none met the targets
    ttft_interval: tuple[pint.Quantity | None, pint.Quantity | None] | None = None
    tpot_interval: tuple[pint.Quantity | None, pint.Quantity | None] | None = None
    interval_replicas: int | None = None
    largest_ttft: pint.Quantity | None = None  # the largest fleet tried's percentiles, when none met the targets
    largest_tpot: pint.Quantity | None = None

    def close_call(self) -> bool:
        """Whether a percentile target lies inside the sampling interval of the fleet that decided the answer: the run
        cannot tell whether that fleet meets it, so one run does not settle the answer. Met, the fleet found may be too
        small (where the percentile barely falls with the fleet, the first fleet whose sample dips under the target
        is found); not met, a longer run may find a fleet that meets the target.

        Examples
        --------
        >>> import dataclasses
        >>> from llmcourse.units import Q_
        >>> iv = (Q_(290, "ms"), Q_(310, "ms"))
        >>> z = PercentileSizing(99, None, 11, Q_(298, "ms"), Q_(10, "ms"), 2, Q_(420, "ms"), Q_(20, "ms"), True, 4000,
        ...                      0, 8192, ttft_target=Q_(300, "ms"), tpot_target=Q_(50, "ms"), ttft_interval=iv)
        >>> z.close_call(), dataclasses.replace(z, ttft_target=Q_(311, "ms")).close_call()
        (True, False)
        """
        pairs = ((self.ttft_percentile, self.ttft_interval, self.ttft_target),
                 (self.tpot_percentile, self.tpot_interval, self.tpot_target))  # fmt: skip
        return any(
            q is not None
            and iv is not None
            and t is not None
            and (iv[0] is None or iv[0] <= t)
            and (iv[1] is None or t <= iv[1])
            for q, iv, t in pairs
        )  # an open end (None: the run too short to bound it) holds every target on its side

    def describe(self) -> str:
        """How the queue was simulated, in words (a plan's output says it)."""
        chunks = "whole prompts" if self.chunk_tokens is None else f"prompts in chunks of {self.chunk_tokens:,} tokens"
        bound = ", an upper bound on the wait" if self.router == "random" else ""
        settled = "; a fleet meets a target only with its interval's upper end" if self.settled else ""
        return f"router {self.router}{bound}; {chunks}; {self.requests:,} requests, seed {self.seed}{settled}"

    def label(self, metric: str) -> str:
        q = self.ttft_percentile if metric == "ttft" else self.tpot_percentile
        return f"p{q if q is not None else 99:g}"


def size_to_percentiles(
    service: ServiceModel,
    brief: Any,
    *,
    mean_replicas: int,
    cached_prompt_tokens: float = 0,
    chunk_tokens: int | str | None = ENGINE_BUDGET,
    prompt_cv: float | None = None,
    answer_cv: float | None = None,
    requests: int = 4_000,
    seed: int = 0,
    router: str = "least_loaded",
    settled: bool = False,
) -> PercentileSizing:
    """The fewest replicas whose simulated percentiles meet a brief's percentile targets (the sizing behind
    :func:`llmcourse.planner.design.plan` for ``Brief(..., ttft_percentile=..., tpot_percentile=...)``).

    N replicas of ``service`` (:func:`~llmcourse.simulator.service.build_replica` at the brief's lengths, its batch
    capped at the plan's) are simulated behind ``router`` (:class:`~llmcourse.simulator.fleet.Fleet`; with
    ``"random"``, one replica at the rate each of N receives, ``brief.requests_per_second / N``: a Poisson stream split
    at random is that, an upper bound on the wait). The search starts at ``mean_replicas``, the fleet sized on the mean
    (simulated too, for comparison), and gallops, the step doubling, down to a fleet that misses the targets or up to
    one that meets them, then halves the gap (the percentiles fall as N grows); it never goes below the fewest that
    keep up (the rate over one replica's capacity, rounded up). If the largest fleet tried (64 times that) misses the
    targets (a target below what one request takes alone), the sizing says so (``met=False``) and keeps the fleet
    sized on the mean; :meth:`PercentileSizing.close_call` says when a target lies inside a sampling interval. Every request finds its first ``cached_prompt_tokens`` cached; prompts are prefilled whole or in chunks of
    ``chunk_tokens``; the lengths spread by ``prompt_cv`` and ``answer_cv``
    (:data:`~llmcourse.simulator.workload.LENGTH_CV` if None).

    Examples
    --------
    >>> from llmcourse.planner.design import Brief
    >>> from llmcourse.simulator.service import build_replica
    >>> from llmcourse.units import Q_
    >>> brief = Brief(30, 2_000, 300, Q_(400, "ms"), Q_(50, "ms"), ttft_percentile=99)
    >>> service = build_replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=2_000, answer_tokens=300, batch_cap=64)
    >>> z = size_to_percentiles(service, brief, mean_replicas=4, requests=1_000)
    >>> z.met, z.ttft <= brief.ttft_target, z.label("ttft"), z.router
    (True, True, 'p99', 'least_loaded')
    >>> worst = size_to_percentiles(service, brief, mean_replicas=4, requests=1_000, router="random")
    >>> worst.replicas >= z.replicas
    True
    """
    if not isinstance(service, ServiceModel):
        raise InputError(
            f"service must be a ServiceModel: build one with build_replica(...), not {type(service).__name__}."
        )
    cached = plain_number(cached_prompt_tokens, "cached_prompt_tokens", allow_zero=True)
    scheduler = Scheduler(chunk_tokens, prefix_hit_rate=1.0 if cached > 0 else 0.0, prefix_tokens=cached)
    scheduler = scheduler.for_replica(service)
    Fleet(1, router)  # the router's name checked before any run
    fleets = _Fleets(
        service,
        brief,
        router,
        settled,
        dict(
            prompt_tokens=brief.prompt_tokens,
            answer_tokens=brief.answer_tokens,
            requests=requests,
            seed=seed,
            prompt_cv=LENGTH_CV if prompt_cv is None else prompt_cv,
            answer_cv=LENGTH_CV if answer_cv is None else answer_cv,
            scheduler=scheduler,
            replica=service,
        ),
    )
    # the fleet that decided the answer: the chosen one, or (not met) the largest tried, the plan keeping the mean's
    decided, met = fleets.fewest_meeting(mean_replicas)
    best = decided if met else mean_replicas
    fewer = fleets.seen.get(best - 1) if met else None  # simulated by the search, whenever it could be the answer
    if fewer is not None and settled:  # what the settled search compared: the upper ends of the intervals
        fewer = tuple(iv[1] for iv in fleets.spread[best - 1])
    at_decided, spread = fleets.at(decided), fleets.spread[decided]
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
        chunk_tokens=scheduler.chunk_tokens,  # type: ignore[arg-type]  (a number or None once for_replica ran)
        router=router,
        settled=settled,
        ttft_target=brief.ttft_target,
        tpot_target=brief.tpot_target,
        fewer_ttft=None if fewer is None else fewer[0],
        fewer_tpot=None if fewer is None else fewer[1],
        ttft_interval=spread[0] if brief.ttft_percentile is not None else None,
        tpot_interval=spread[1] if brief.tpot_percentile is not None else None,
        interval_replicas=decided,
        largest_ttft=None if met else at_decided[0],
        largest_tpot=None if met else at_decided[1],
    )


#: the largest fleet the search simulates whatever the brief: the random router's share of the traffic, rate / n,
#: stays a finite float
_FINITE = 2**1000


class _Fleets:
    """``n`` replicas behind the router simulated (one replica at 1/n of the traffic for the random router), each
    fleet size once: its percentiles (the brief's, p99 where a target is on the mean), and whether they meet the
    brief's percentile targets."""

    def __init__(self, service: ServiceModel, brief: Any, router: str, settled: bool, run: dict[str, Any]) -> None:
        self.service, self.brief, self.router, self.run, self.settled = service, brief, router, run, settled
        self.q_ttft = 99.0 if brief.ttft_percentile is None else brief.ttft_percentile
        self.q_tpot = 99.0 if brief.tpot_percentile is None else brief.tpot_percentile
        self.seen: dict[int, tuple[pint.Quantity, pint.Quantity]] = {}
        self.spread: dict[int, tuple[Any, Any]] = {}  # each fleet's (TTFT, TPOT) sampling intervals

    def at(self, n: int) -> tuple[pint.Quantity, pint.Quantity]:
        """(TTFT, TPOT) at the brief's percentiles with ``n`` replicas."""
        if n not in self.seen:
            svc, rate = self.service, self.brief.requests_per_second
            if self.router == "random":  # a Poisson stream split at random: one replica at its share
                r = simulate(svc.model, svc.gpu, rate=rate / n, **self.run)
            else:
                r = simulate(svc.model, svc.gpu, rate=rate, fleet=self._fleet(n), **self.run)
            self.seen[n] = (r.at("ttft", self.q_ttft), r.at("tpot", self.q_tpot))
            self.spread[n] = (r.interval("ttft", self.q_ttft), r.interval("tpot", self.q_tpot))
        return self.seen[n]

    def _simulated(self, n: int) -> int:
        """How many replicas a fleet of ``n`` is simulated as: past as many replicas as requests, the least-loaded
        routers send every request to an idle replica, as they do with that many (so that many are simulated)."""
        return min(n, self.run["requests"]) if self.router in ("least_loaded", "least_kv", "least_cost") else n

    def _fleet(self, n: int) -> Fleet:
        """``n`` replicas behind the router, as :meth:`_simulated` says they run."""
        n = self._simulated(n)
        if n > MOST_REPLICAS:
            raise InputError(
                f"sizing with router={self.router!r} reached {n:,} replicas, past the {MOST_REPLICAS:,} a fleet "
                "simulation runs: give router='least_loaded' (or 'random'), or a smaller brief."
            )
        return Fleet(n, self.router)

    def meets(self, n: int) -> bool:
        """Whether ``n`` replicas meet the brief's percentile targets: their percentiles (settled: the upper ends of
        their sampling intervals, an open end never meeting)."""
        ttft, tpot = self.at(n)
        if self.settled:
            ttft, tpot = (iv[1] for iv in self.spread[n])
        b = self.brief
        return (b.ttft_percentile is None or (ttft is not None and ttft <= b.ttft_target)) and (
            b.tpot_percentile is None or (tpot is not None and tpot <= b.tpot_target)
        )

    def fewest_meeting(self, start: int) -> tuple[int, bool]:
        """A fleet that meets the targets where one replica fewer does not (or the fewest that keep up), and whether
        one was found. The percentiles fall as the fleet grows, on the whole, so the search starts at ``start`` (the
        fleet sized on the mean, simulated for the comparison anyway: the answer is most often at or beside it) and
        gallops, the step doubling, down to a fleet that misses the targets or up to one that meets them, then halves
        the gap (to one replica in 10**9: a fleet of 1e300 replicas takes 40 steps, not 1,000). Above ``start``, the
        largest fleet is simulated first (64 times the fewest; past what a fleet simulation runs, the most it runs):
        if it misses the targets the search stops there, not met (a target below what one request takes alone: the
        longest prompts' prefill, which more replicas do not shorten).

        One run's percentiles are a sample: where they barely fall with the fleet they go up and down by a few
        percent from one fleet to the next, so a smaller fleet than the one found may also meet the targets, and
        ``met=False`` says the largest fleet tried missed them, not every fleet (:meth:`PercentileSizing.close_call`
        says when a target is inside the chosen fleet's sampling interval)."""
        b, svc = self.brief, self.service
        load = to(b.requests_per_second / svc.capacity(b.prompt_tokens, b.answer_tokens), "").m  # on one replica
        fewest = max(1, math.ceil(load * (1 + 1e-12)))
        most = min(64 * fewest, _FINITE)
        start = min(max(start, fewest), most)
        lo, hi, step = start, start, max(1, start // 10**9)  # the gallop's first step: one replica in 10**9
        if self.meets(start):
            while lo > fewest:
                lo = max(fewest, hi - step)
                if not self.meets(lo):
                    break
                hi, step = lo, 2 * step
            else:
                return hi, True  # the fewest that keep up meet them
        else:
            most = most if self._simulable(most) else min(most, MOST_REPLICAS)  # the largest a simulation runs
            if not self.meets(most):
                return most, False
            while not self.meets(hi):
                lo, hi, step = hi, min(most, hi + step), 2 * step
        # meets(hi) and not meets(lo)
        while hi - lo > max(1, lo // 10**9):
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if self.meets(mid) else (mid, hi)
        return hi, True

    def _simulable(self, n: int) -> bool:
        """Whether a fleet of ``n`` replicas behind the router is within the :data:`MOST_REPLICAS` a fleet simulation
        runs (see :meth:`_fleet`): the random router simulates one replica at its share, always; the least-loaded
        routers as many replicas as requests past that, so they are capped only when the run has more requests than
        the most; every other router at the most."""
        return self.router == "random" or self._simulated(n) <= MOST_REPLICAS
