"""A small discrete-event simulation of one replica doing continuous batching.

Defined in the chapter *Queueing: what the averages hide* (``book/10_queueing.md``).

The closed-form plan of the earlier chapters assumes an empty queue: every request is
prefilled the moment it arrives and decodes beside a steady batch. This module lets requests
arrive at random and wait for each other, so the tail (p95, p99) becomes visible.

The model (stated once, used everywhere):

* Requests arrive as a Poisson process (exponential gaps) at ``rate`` (or, with ``concurrency``, from a closed
  loop of clients); prompt and answer
  lengths are drawn from a lognormal distribution with the given means and coefficient of
  variation (``cv=0``: every request the same length).
* **Admission control by KV memory.** The replica's KV budget in tokens is
  :func:`~llmcourse.replica.memory.max_batch` at a context of one token (free memory / KV per token,
  under the assumptions' memory rule).
  A waiting request is admitted, first come first served, when its prompt + answer tokens fit in
  what is left of that budget and the batch is below ``batch_cap`` (an engine's "max sequences").
  Its KV is reserved for the whole answer at admission and freed when it finishes.
* **Iterations.** Each iteration has the engine's token budget (a
  :class:`~llmcourse.simulator.events.Scheduler`; by default :func:`~llmcourse.simulator.service.engine_chunk_tokens`,
  8,192 tokens under the course's method, as vLLM, SGLang and TensorRT-LLM default to on H100-class GPUs): one token
  per running request, the rest to the admitted prompts' chunks, first come first served. With ``chunk_tokens=None``
  (the sources' presets) the next iteration after an admission prefills all the admitted prompts together while
  decoding stalls; it produces each one's first token. Otherwise the iteration is one decode step of the whole
  running batch. A prefix cache skips the cached tokens' prefill; a :class:`~llmcourse.simulator.fleet.Fleet` runs
  several replicas behind a router.
* **Service times come from the one replica model.** Once per run (:func:`build_replica`, a
  :class:`ServiceModel`) the decode step is tabulated against the batch: the step of
  :func:`llmcourse.replica.replica` at that batch for the mean request, which reads the KV cache
  at the context the assumptions say (the course's method: the average, prompt + answer / 2, as
  :func:`~llmcourse.planner.design.plan` does), interpolated linearly between table points (exact for a
  dense model whose step stays memory-bound or compute-bound, since it is then linear in the
  batch). A prompt's prefill compute time per token is tabulated against its length
  (:func:`~llmcourse.replica.prefilling.prefill` under the same assumptions; linear in the length, so the
  interpolation is exact, also with the course's causal attention term, which is quadratic in
  each prompt's length: prompts are timed one by one), and a group of prompts prefilled together
  takes the slower of their compute times added and one read of the weights, the rule of
  :func:`~llmcourse.replica.prefilling.prefill`. The capacity is the replica's requests per second at the
  largest batch the memory and the batch cap allow.
* **Assumptions.** :func:`build_replica` (and :func:`simulate`, :func:`load_sweep` through it)
  takes ``assumptions=`` (a preset name or an :class:`~llmcourse.assumptions.Assumptions`; the
  course's method by default), and the efficiencies and the usable memory share may be
  overridden one by one; no modelling constant is set here.

The single-server queue's closed forms (M/M/1: utilisation, mean time in the system, the highest
rate for a mean-time target) are registered as formulas ``mm1_*`` (chapter section *10_queueing*);
:mod:`llmcourse.simulator.closed_forms` puts the averages-only estimate beside a run.

* **The request's fixed overhead.** The assumptions' ``request_overhead_ms`` (the HTTP round trip,
  tokenising; 100 ms under the course's method, 0 under the sources' presets) is spent before a
  request reaches the engine, off the GPU: the engine sees the same Poisson arrivals a constant
  later, so it adds that much to every TTFT and changes nothing else.

TTFT is arrival to first token, the fixed overhead included; TPOT is (finish - first token) / (answer - 1).

Examples
--------
>>> r = simulate("Llama-3.1-8B", "H100 SXM", rate=Q_(4, "1/s"), prompt_tokens=2_000, answer_tokens=300,
...              requests=2_000, seed=1)
>>> r.completed, r.ttft["p50"] < r.ttft["p99"]
(2000, True)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import time
from dataclasses import dataclass, field
from operator import sub
from typing import Any

import pint

from llmcourse.catalog import GPU, Model
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import SYMBOLS, check_value
from llmcourse.replica.base import model_of
from llmcourse.simulator.events import ENGINE_BUDGET, Scheduler, event_loop
from llmcourse.simulator.fleet import Fleet, fleet_loop
from llmcourse.simulator.service import ServiceModel, build_replica, check_request
from llmcourse.simulator.workload import LENGTH_CV, Requests, closed_loop, grouped_open_loop, open_loop
from llmcourse.stats import percentile_interval, sorted_percentile
from llmcourse.units import (
    Q_,
    as_quantity,
    fmt,
    in_unit,
    parsed_unit,
    percentile_rank,
    plain_number,
    quantity,
    seed_number,
    to,
)

__all__ = ["PERCENTILES", "SimResult", "simulate"]

PERCENTILES = (50, 95, 99)
#: Bounds on a simulation's size (not modelling constants): past a million requests a run takes minutes, and
#: below one request per 30 years the arrival times leave floating point.
MOST_REQUESTS, MOST_REQUESTS_WHY = 1_000_000, " (a larger run takes minutes; the percentiles settle long before)"
#: The most prefill chunks a run may schedule (requests x uncached prompt tokens / ``chunk_tokens``): each is an
#: iteration of the event loop, about half a microsecond; past this a run takes more than seconds (a percentile
#: plan runs several), and the percentiles settle long before. A run past it is refused, saying what to change.
MOST_CHUNK_STEPS = 5_000_000
_SLOWEST, _SLOWEST_WHY = 1e-9, " per second (about one request in 30 years)"
MOST_CV, MOST_CV_WHY = 100.0, " (a spread past 100 times the mean leaves floating point in the lognormal)"
_MS_UNIT, _S_UNIT, _PER_S_UNIT = (parsed_unit(u)[0] for u in ("ms", "s", "1/s"))  # parsed once, not per run
_ENGINE_SCHEDULER = Scheduler()  # the default: the engine's token budget per iteration, no prefix cache


@dataclass(frozen=True)
class SimResult:
    """What one simulation run measured (times as quantities in ms)."""

    replica: ServiceModel = field(repr=False)
    rate: pint.Quantity
    load: float
    completed: int
    ttft: dict[str, pint.Quantity]
    tpot: dict[str, pint.Quantity]
    busy_fraction: float
    throughput: pint.Quantity
    request_throughput: pint.Quantity
    mean_batch: float
    in_system_seen_by_arrivals: float
    littles_law_in_system: float
    mean_time_in_system: pint.Quantity
    wall_time: pint.Quantity
    ttft_s: tuple[float, ...] = field(repr=False)  # per request, in arrival order
    tpot_s: tuple[float, ...] = field(repr=False)  # per request with more than one answer token
    concurrency: int | None = None  # a closed loop's clients (None: Poisson arrivals at ``rate``)
    chunk_tokens: int | None = None  # the scheduler's token budget per iteration (None: whole prompts)
    prefix_hit_rate: float = 0.0
    prefill_tokens: int = 0  # prompt tokens actually prefilled (the prefix cache's hits skip theirs)
    fleet: Fleet | None = None  # the replicas and their router (None: one replica)

    def at(self, metric: str, q: float) -> pint.Quantity:
        """The ``q``-th percentile (0 < q < 100) of ``"ttft"`` or ``"tpot"`` over the run's requests, in ms.

        Examples
        --------
        >>> r = simulate("Llama-3.1-8B", "H100 SXM", rate=Q_(4, "1/s"), prompt_tokens=2_000, answer_tokens=300,
        ...              requests=500)
        >>> r.at("ttft", 99) == r.ttft["p99"], r.at("tpot", 90) <= r.tpot["p95"]
        (True, True)
        """
        return Q_(sorted_percentile(self._sorted(metric), percentile_rank(q)) * 1e3, "ms")

    def interval(self, metric: str, q: float) -> tuple[pint.Quantity | None, pint.Quantity | None]:
        """About 95% of samples of as many independent requests would put the ``q``-th percentile of ``"ttft"`` or
        ``"tpot"`` in this interval (:func:`~llmcourse.stats.percentile_interval`, in ms; an end the run is too short
        to bound is None): how far the run's figure could be from the percentile of the load it stands for. A queue's
        requests are not independent (a burst delays its neighbours), so compare runs with other seeds too.

        Examples
        --------
        >>> r = simulate("Llama-3.1-8B", "H100 SXM", rate=Q_(4, "1/s"), prompt_tokens=2_000, answer_tokens=300,
        ...              requests=500)
        >>> lo, hi = r.interval("ttft", 99)
        >>> lo <= r.at("ttft", 99) <= hi, lo < hi
        (True, True)
        """
        lo, hi = percentile_interval(self._sorted(metric), percentile_rank(q))
        return (Q_(lo * 1e3, "ms") if math.isfinite(lo) else None), (Q_(hi * 1e3, "ms") if math.isfinite(hi) else None)

    @functools.cached_property
    def _in_order(self) -> dict[str, list[float]]:
        """Each metric's values sorted, once: a sizing asks a run for two percentiles and their intervals."""
        return {"ttft": sorted(self.ttft_s), "tpot": sorted(self.tpot_s)}

    def _sorted(self, metric: str) -> list[float]:
        if metric not in ("ttft", "tpot"):
            raise InputError(f"metric must be 'ttft' or 'tpot'; got {metric!r}.")
        return self._in_order[metric]

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) rows for a calculator."""
        out = [("load (arrival rate / capacity)", f"{self.load:.2f}")]
        if self.fleet is not None:
            out.append(("fleet", self.fleet.label()))
        out += [(f"TTFT p{q}", fmt(self.ttft[f"p{q}"], "ms")) for q in PERCENTILES]
        out += [(f"TPOT p{q}", fmt(self.tpot[f"p{q}"], "ms")) for q in PERCENTILES]
        out += [
            ("busy fraction", f"{self.busy_fraction:.0%}"),
            ("output tokens/s", fmt(self.throughput, "1/s")),
            ("mean batch", f"{self.mean_batch:.1f}"),
            (
                "in system: seen by arrivals / Little's law",
                f"{self.in_system_seen_by_arrivals:.1f} / {self.littles_law_in_system:.1f}",
            ),
            ("requests simulated (wall time)", f"{self.completed:,} ({fmt(self.wall_time, 'ms')})"),
        ]
        return out


def simulate(
    model: Model | str,
    gpu: GPU | str,
    *,
    rate: pint.Quantity | None = None,
    prompt_tokens: float,
    answer_tokens: float,
    requests: int = 10_000,
    seed: int = 0,
    prompt_cv: float = LENGTH_CV,
    answer_cv: float = LENGTH_CV,
    concurrency: int | None = None,
    scheduler: Scheduler | None = None,
    replica: ServiceModel | None = None,
    fleet: Fleet | None = None,
    **replica_kwargs: Any,
) -> SimResult:
    """Simulate ``requests`` requests on one replica; see the module notes.

    The load is either open (``rate``: Poisson arrivals) or closed (``concurrency``: that many clients,
    each sending its next request when its last one finishes, the way a benchmark at a concurrency
    does; the next request reaches the engine the request overhead later; the clients' first requests
    are spread at random over the time one request takes with all of them running (its prefill and its
    answer at the full batch): started together, identical requests would run in lockstep, which the
    measured engines do not show). ``prompt_tokens`` and
    ``answer_tokens`` are the means of the length distributions; ``*_cv`` their coefficients of
    variation (0: fixed).

    ``scheduler`` is how the engine schedules (:class:`~llmcourse.simulator.events.Scheduler`: whole prompts or a
    token budget per iteration, ``chunk_tokens``; a prefix cache, ``prefix_hit_rate`` and ``prefix_tokens``); by
    default the engine's token budget (:func:`~llmcourse.simulator.service.engine_chunk_tokens`: 8,192 under the
    course's method, whole prompts under the sources' presets) and no prefix cache.

    ``fleet`` (:class:`~llmcourse.simulator.fleet.Fleet`) serves an open loop of ``rate`` requests per second on that
    many replicas behind a router (least loaded, power of two, prefix-aware, ...); by default one replica. The load is
    then the rate over the fleet's capacity.

    ``replica`` reuses the service model of :func:`build_replica` (otherwise one is built from
    ``replica_kwargs``: ``assumptions=``, ``n_gpus=``, ...). The same seed gives the same result.

    Examples
    --------
    >>> rep = build_replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=2_000, answer_tokens=300)
    >>> whole = simulate("Llama-3.1-8B", "H100 SXM", concurrency=8, prompt_tokens=2_000, answer_tokens=300,
    ...                  requests=400, replica=rep)
    >>> chunked = simulate("Llama-3.1-8B", "H100 SXM", concurrency=8, prompt_tokens=2_000, answer_tokens=300,
    ...                    requests=400, replica=rep, scheduler=Scheduler(chunk_tokens=512))
    >>> chunked.tpot["p99"] < whole.tpot["p99"]  # chunks no longer stall a running answer for a whole prompt
    True
    >>> simulate("Llama-3.1-8B", "H100 SXM", rate=2.0, prompt_tokens=2_000, answer_tokens=300)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: rate needs a unit: write Q_(2.0, '1/s') (or any unit of 1 / [time], such as 1/s or 1/day), not the bare number 2.0.
    """
    start = time.perf_counter()
    run = _checked_run(rate, concurrency, prompt_tokens, answer_tokens, requests, prompt_cv, answer_cv, scheduler)
    seed_number(seed)
    rep = _service_of(model, gpu, run, replica, replica_kwargs)
    if run.scheduler.chunk_tokens == ENGINE_BUDGET:
        run = dataclasses.replace(run, scheduler=run.scheduler.for_replica(rep))
        _check_work(run.n, run.p, run.scheduler)
    t_req = in_unit(rep.assumptions.request_overhead_ms, _MS_UNIT, _S_UNIT).m
    if fleet is None:
        budget, longest = _kv_room(rep, run)
        reqs = _requests_of(rep, run, seed, longest)
        timeline = event_loop(rep, reqs, run.clients, t_req, budget, run.scheduler.chunk_tokens)
        return _measured(rep, run, reqs, timeline, t_req, start)
    reqs, timeline = _fleet_run(rep, run, seed, fleet)
    return _measured(rep, run, reqs, timeline, t_req, start, fleet)


def _fleet_run(
    rep: ServiceModel, run: _Run, seed: int, fleet: Fleet
) -> tuple[Requests, tuple[list[float], list[float], float, float]]:
    """An open loop served by ``fleet`` (:func:`~llmcourse.simulator.fleet.fleet_loop`): its requests as they arrive
    (their prefixes not yet found) and the fleet's timeline. Each replica sets aside KV for every shared prefix."""
    if not isinstance(fleet, Fleet):
        raise InputError(f"fleet must be a Fleet(replicas=..., router=...), or None for one replica; got {fleet!r}.")
    if run.rate is None:
        raise InputError(
            "a fleet is simulated under an open loop: give rate=Q_(..., '1/s') for the fleet's traffic, not "
            "concurrency= (a closed loop's clients each wait for their own answer, whatever the router does)."
        )
    s = run.scheduler
    per_group = s.resident_tokens
    groups = fleet.prefix_groups if per_group else 0
    budget, longest = _kv_room(rep, dataclasses.replace(run, scheduler=_held(s, groups)))
    draws = (rep, seed, run.n, (run.a, run.acv), (run.p, run.pcv), longest, s.prefix_hit_rate, per_group, run.rate)
    if not groups:
        reqs = open_loop(*draws)
        *timeline, _ = fleet_loop(rep, reqs, fleet, budget, s.chunk_tokens)
        return reqs, (timeline[0], timeline[1], timeline[2], timeline[3])
    grouped = grouped_open_loop(*draws, groups)
    *timeline, work = fleet_loop(rep, grouped.miss, fleet, budget, s.chunk_tokens, grouped.hit, grouped.group)
    return dataclasses.replace(grouped.miss, work=work), (timeline[0], timeline[1], timeline[2], timeline[3])


def _held(scheduler: Scheduler, groups: int) -> Scheduler:
    """A scheduler whose one cached prefix stands for the ``groups`` prefixes each replica sets aside KV for."""
    if groups <= 1:
        return scheduler
    return Scheduler(scheduler.chunk_tokens, scheduler.prefix_hit_rate, scheduler.resident_tokens * groups)


#: What :class:`~llmcourse.simulator.events.Scheduler` holds: given to :func:`simulate` loose, refused with where it
#: goes now (a keyword the service model does not take would otherwise fail deep in it, or be dropped beside
#: ``replica=``).
_SCHEDULER_KEYWORDS = ("chunk_tokens", "prefix_hit_rate", "prefix_tokens")
#: The keywords :func:`simulate` passes on to :func:`build_replica` (its own, read once from its signature).
_BUILD_KEYWORDS = tuple(
    k
    for k in inspect.signature(build_replica).parameters
    if k not in ("model", "gpu", "prompt_tokens", "answer_tokens")
)


def _service_of(model: Any, gpu: Any, run: _Run, replica: ServiceModel | None, kw: dict[str, Any]) -> ServiceModel:
    """The service model a simulation runs on: ``replica`` as given, or :func:`build_replica` of the keywords ``kw``
    (its own, by name); a keyword it does not take, or one beside ``replica``, is refused saying where it goes."""
    loose = [k for k in _SCHEDULER_KEYWORDS if k in kw]
    if loose:
        raise InputError(
            f"{loose[0]}= is a field of the scheduler now: give scheduler=Scheduler({loose[0]}=...) to simulate()."
        )
    unknown = sorted(set(kw) - set(_BUILD_KEYWORDS))
    if unknown:
        raise InputError(
            f"simulate() takes no {unknown[0]}=: besides its own, it takes {', '.join(_BUILD_KEYWORDS)} (or replica=)."
        )
    if replica is None:
        return build_replica(model, gpu, prompt_tokens=run.p, answer_tokens=run.a, **kw)
    if kw:
        raise InputError(
            f"{', '.join(sorted(kw))} beside replica=: give them to build_replica(), which made the service model "
            "(a simulation of a given service model cannot change it)."
        )
    return replica


@dataclass(frozen=True)
class _Run:
    """A simulation's inputs, checked: the load (``rate`` per second, or ``clients`` in a closed loop), the mean
    prompt and answer lengths and their spreads, the number of requests, and the scheduler."""

    rate: float | None
    clients: int | None
    p: float
    a: float
    n: int
    pcv: float
    acv: float
    scheduler: Scheduler


def _checked_run(
    rate: Any,
    concurrency: Any,
    prompt_tokens: Any,
    answer_tokens: Any,
    requests: Any,
    prompt_cv: Any,
    answer_cv: Any,
    scheduler: Any,
) -> _Run:
    """:func:`simulate`'s inputs checked, in the order of its signature, each refusal naming what to change."""
    if (rate is None) == (concurrency is None):
        raise InputError(
            "give the load one way: rate=Q_(..., '1/s') for Poisson arrivals, or concurrency=N for N clients that "
            "each send their next request when the last one finishes."
        )
    lam = None
    if rate is not None:
        lam = to(as_quantity(rate, "1/s", "rate"), "1/s").m
        plain_number(lam, "rate", at_least=_SLOWEST, why=_SLOWEST_WHY)
    p = check_value(prompt_tokens, SYMBOLS["prompt_tokens"], "prompt_tokens")
    a = check_value(answer_tokens, SYMBOLS["answer_tokens"], "answer_tokens")
    n = int(plain_number(requests, "requests", integer=True, at_most=MOST_REQUESTS, why=MOST_REQUESTS_WHY))
    clients = None
    if concurrency is not None:
        clients = int(
            plain_number(concurrency, "concurrency", integer=True, at_most=MOST_REQUESTS, why=MOST_REQUESTS_WHY)
        )
    pcv = plain_number(prompt_cv, "prompt_cv", allow_zero=True, at_most=MOST_CV, why=MOST_CV_WHY)
    acv = plain_number(answer_cv, "answer_cv", allow_zero=True, at_most=MOST_CV, why=MOST_CV_WHY)
    if scheduler is None:
        scheduler = _ENGINE_SCHEDULER
    elif not isinstance(scheduler, Scheduler):
        raise InputError(
            "scheduler must be a Scheduler(chunk_tokens=..., prefix_hit_rate=..., prefix_tokens=...), or None for "
            f"the engine's token budget and no prefix cache; got {type(scheduler).__name__}."
        )
    _check_work(n, p, scheduler)
    return _Run(lam, clients, p, a, n, pcv, acv, scheduler)


def _check_work(n: int, p: float, scheduler: Scheduler) -> None:
    """Refuse a run of more prefill chunks than :data:`MOST_CHUNK_STEPS` (the work, not only the request count),
    saying the bound and what to change.

    Examples
    --------
    >>> _check_work(4_000, 2_000, Scheduler(chunk_tokens=1))
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: chunk_tokens=1 with 4,000 requests of 2,000 uncached prompt tokens is about 8,000,000 prefill chunks to simulate, past the simulator's bound of 5,000,000 (a run of seconds): give chunk_tokens=2 or more, or requests=2,500 or fewer.
    """
    c = scheduler.chunk_tokens
    if not isinstance(c, int):  # whole prompts, or the engine's budget (checked once the replica says it)
        return
    uncached = max(1.0, p - scheduler.prefix_hit_rate * scheduler.prefix_tokens)  # the mean prompt's chunked part
    chunks = n * math.ceil(uncached / c)
    if chunks > MOST_CHUNK_STEPS:
        fewer = max(1, MOST_CHUNK_STEPS // math.ceil(uncached / c))
        wider = math.ceil(n * uncached / MOST_CHUNK_STEPS)
        while n * math.ceil(uncached / wider) > MOST_CHUNK_STEPS:  # the ceiling's rounding: a step or two more
            wider += 1
        raise InputError(
            f"chunk_tokens={c:,} with {n:,} requests of {uncached:,.0f} uncached prompt tokens is about {chunks:,} "
            f"prefill chunks to simulate, past the simulator's bound of {MOST_CHUNK_STEPS:,} (a run of seconds): "
            f"give chunk_tokens={wider:,} or more, or requests={fewer:,} or fewer."
        )


def _kv_room(rep: ServiceModel, run: _Run) -> tuple[int, int]:
    """The KV tokens the requests share (the budget less the cached prefix, held once), and the longest sequence
    one may hold (within that and the model's positions); refused if the prefix or one mean request does not fit."""
    budget = rep.kv_budget_tokens
    resident = run.scheduler.resident_tokens
    if resident >= budget:
        raise InputError(
            f"the cached prefix of {resident:,} tokens fills the replica's KV memory ({budget:,} tokens): "
            "shorten it or add memory."
        )
    budget -= resident
    check_request(run.p, run.a, budget)
    positions = model_of(rep.model).max_position or budget  # a sequence is held within the model's positions
    return budget, min(budget, positions)


def _requests_of(rep: ServiceModel, run: _Run, seed: int, longest: int) -> Requests:
    """The run's requests drawn from ``seed``: Poisson arrivals at the rate, or a closed loop's clients."""
    s = run.scheduler
    draws = (rep, seed, run.n, (run.a, run.acv), (run.p, run.pcv), longest, s.prefix_hit_rate, s.resident_tokens)
    if run.rate is not None:
        return open_loop(*draws, run.rate)
    assert run.clients is not None
    return closed_loop(*draws, run.clients)


def _seen_by_arrivals(arrivals: list[float], finish: list[float]) -> tuple[float, list[float]]:
    """The mean number in the system each arrival finds (with the arrival times sorted): request i finds the i that
    arrived before it, less those that finished at or before its arrival (a merge of two sorted lists). Arrivals see
    time averages (Poisson), so this estimates L independently of lambda x W: the check on Little's law."""
    n = len(arrivals)
    ends, starts = sorted(finish), sorted(arrivals)
    departed = seen_total = 0
    for i, x in enumerate(starts):
        while departed < n and ends[departed] <= x:
            departed += 1
        seen_total += i - departed
    return seen_total / n, starts


def _measured(
    rep: ServiceModel,
    run: _Run,
    reqs: Requests,
    timeline: tuple[list[float], list[float], float, float],
    t_req: float,
    start: float,
    fleet: Fleet | None = None,
) -> SimResult:
    """What the run measured, from the engine's first-token and finish times, busy time and batch x time.

    The request's fixed overhead (HTTP round trip, tokenising: the assumptions' request_overhead_ms) is spent before
    it reaches the engine, off the GPU: the engine sees the arrivals a constant later, so every TTFT is that much
    longer (times in the system stay the engine's)."""
    first, finish, busy, batch_area = timeline
    arrivals, ans, n = reqs.arrivals, reqs.ans, run.n
    replicas = 1 if fleet is None else fleet.replicas
    ttft = tuple([t_req + x for x in map(sub, first, arrivals)])
    tpot = tuple([x / (y - 1) for x, y in zip(map(sub, finish, first), ans, strict=True) if y > 1])
    if not tpot:
        raise InputError(
            f"every simulated answer was one token long (answer_tokens={run.a:g}, answer_cv={run.acv:g}), so no "
            "request has a time per output token: give answer_tokens of 2 or more, or a spread (answer_cv > 0)."
        )
    span = max(finish) - min(arrivals)  # a closed loop's first clients arrive in no particular order
    mean_in_system = math.fsum(map(sub, finish, arrivals)) / n
    seen, starts = _seen_by_arrivals(arrivals, finish)
    lam = n / span if run.rate is None else run.rate  # a closed loop: the rate is what the clients achieved
    lam_hat = (n - 1) / (starts[-1] - starts[0]) if n > 1 and starts[-1] > starts[0] else lam
    in_system = quantity(mean_in_system, _S_UNIT)
    little = F["littles_law"](request_rate=quantity(lam_hat, _PER_S_UNIT), time_in_system=in_system).m
    ttft_sorted, tpot_sorted = sorted(ttft), sorted(tpot)
    return SimResult(
        replica=rep,
        rate=quantity(lam, _PER_S_UNIT),
        load=float(lam / (replicas * rep.capacity(run.p, run.a).m)),
        completed=n,
        ttft={f"p{q}": quantity(sorted_percentile(ttft_sorted, q) * 1e3, _MS_UNIT) for q in PERCENTILES},
        tpot={f"p{q}": quantity(sorted_percentile(tpot_sorted, q) * 1e3, _MS_UNIT) for q in PERCENTILES},
        busy_fraction=float(busy / (span * replicas)),
        throughput=quantity(sum(ans) / span, _PER_S_UNIT),
        request_throughput=quantity(n / span, _PER_S_UNIT),
        mean_batch=float(batch_area / max(busy, 1e-300)),
        in_system_seen_by_arrivals=seen,
        littles_law_in_system=float(little),
        mean_time_in_system=in_system,
        wall_time=quantity((time.perf_counter() - start) * 1e3, _MS_UNIT),
        ttft_s=ttft,
        tpot_s=tpot,
        concurrency=run.clients,
        chunk_tokens=run.scheduler.chunk_tokens,
        prefix_hit_rate=run.scheduler.prefix_hit_rate,
        prefill_tokens=sum(reqs.work),
        fleet=fleet,
    )
