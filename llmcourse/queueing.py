"""A small discrete-event simulation of one replica doing continuous batching.

Defined in the chapter *Queueing: what the averages hide* (``book/10_queueing.md``).

The closed-form plan of the earlier chapters assumes an empty queue: every request is
prefilled the moment it arrives and decodes beside a steady batch. This module lets requests
arrive at random and wait for each other, so the tail (p95, p99) becomes visible.

The model (stated once, used everywhere):

* Requests arrive as a Poisson process (exponential gaps) at ``rate``; prompt and answer
  lengths are drawn from a lognormal distribution with the given means and coefficient of
  variation (``cv=0``: every request the same length).
* **Admission control by KV memory.** The replica's KV budget in tokens is
  :func:`~llmcourse.planner.max_batch` at a context of one token (free memory / KV per token,
  under the assumptions' memory rule).
  A waiting request is admitted, first come first served, when its prompt + answer tokens fit in
  what is left of that budget and the batch is below ``batch_cap`` (an engine's "max sequences").
  Its KV is reserved for the whole answer at admission and freed when it finishes.
* **Iterations.** When requests were admitted, the next iteration prefills all their prompts
  together (decoding stalls meanwhile, as in an engine without chunked prefill); it produces each
  one's first token. Otherwise the iteration is one decode step of the whole running batch and
  gives each request one more token.
* **Service times come from the one replica model.** Once per run (:func:`build_replica`, a
  :class:`ServiceModel`) the decode step is tabulated against the batch: the step of
  :func:`llmcourse.planner.replica` at that batch for the mean request, which reads the KV cache
  at the context the assumptions say (the course's method: the average, prompt + answer / 2, as
  :func:`~llmcourse.planner.plan` does), interpolated linearly between table points (exact for a
  dense model whose step stays memory-bound or compute-bound, since it is then linear in the
  batch). A prompt's prefill compute time per token is tabulated against its length
  (:func:`~llmcourse.planner.prefill` under the same assumptions; linear in the length, so the
  interpolation is exact, also with the course's causal attention term, which is quadratic in
  each prompt's length: prompts are timed one by one), and a group of prompts prefilled together
  takes the slower of their compute times added and one read of the weights, the rule of
  :func:`~llmcourse.planner.prefill`. The capacity is the replica's requests per second at the
  largest batch the memory and the batch cap allow.
* **Assumptions.** :func:`build_replica` (and :func:`simulate`, :func:`load_sweep` through it)
  takes ``assumptions=`` (a preset name or an :class:`~llmcourse.assumptions.Assumptions`; the
  course's method by default), and the efficiencies and the usable memory share may be
  overridden one by one; no modelling constant is set here.

The single-server queue's closed forms (M/M/1: utilisation, mean time in the system, the highest
rate for a mean-time target) are registered as formulas ``mm1_*`` (chapter section *10_queueing*).

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

import heapq
import math
import random
import time
from bisect import bisect_right
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import SYMBOLS, check_value
from llmcourse.planner import Replica, gpu_of, max_batch, model_of, prefill, replica
from llmcourse.units import Q_, as_quantity, fmt, plain_number, seed_number

__all__ = [
    "PERCENTILES",
    "ClosedForm",
    "ServiceModel",
    "SimResult",
    "at_load",
    "build_replica",
    "closed_form",
    "knee",
    "load_sweep",
    "percentile",
    "simulate",
]

PERCENTILES = (50, 95, 99)
#: Bounds on a simulation's size (not modelling constants): past a million requests a run takes minutes, and
#: below one request per 30 years the arrival times leave floating point.
_MOST_REQUESTS, _MOST_WHY = 1_000_000, " (a larger run takes minutes; the percentiles settle long before)"
_SLOWEST, _SLOWEST_WHY = 1e-9, " per second (about one request in 30 years)"
_MOST_CV, _CV_WHY = 100.0, " (a spread past 100 times the mean leaves floating point in the lognormal)"

# The single-server queue (M/M/1) forms the chapter and its exercises use are registered in
# llmcourse.formulas (mm1_utilisation, mm1_time_in_system, mm1_max_rate) with every other formula.


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of ``values`` by linear interpolation between the two nearest ranks
    (numpy's default ``"linear"`` method): position ``(n - 1) * q / 100`` on the sorted values.

    Examples
    --------
    >>> percentile([4, 1, 3, 2], 50), round(percentile([1, 2, 3, 4], 99), 12), percentile([7], 95)
    (2.5, 3.97, 7.0)
    """
    q = plain_number(q, "q (the percentile)", allow_zero=True, at_most=100)
    try:
        xs = [_finite(x) for x in values]
    except TypeError:
        raise InputError(f"values must be a sequence of numbers; got {type(values).__name__}.") from None
    if not xs:
        raise InputError("the percentile of no values is undefined.")
    return _percentile_sorted(sorted(xs), q)


def _finite(x: Any) -> float:
    """A finite number of any sign (refused otherwise, as the number helpers say)."""
    if isinstance(x, float) and math.isfinite(x):
        return x
    if isinstance(x, int) and not isinstance(x, bool) and -(2**1000) < x < 0:
        return float(x)
    return plain_number(x, "values", allow_zero=True)


def _percentile_sorted(xs: Sequence[float], q: float) -> float:
    pos = q / 100 * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    a, b, t = float(xs[lo]), float(xs[hi]), pos - lo
    # numpy's lerp: from the nearer end, so a percentile never leaves [a, b] by rounding
    return a + (b - a) * t if t < 0.5 else b - (b - a) * (1 - t)


def _interp(x: float, xs: Sequence[float], ys: Sequence[float]) -> float:
    """Piecewise-linear interpolation of the table ``(xs, ys)`` (``xs`` increasing) at ``x``, held at
    the end values outside it: ``np.interp`` for one point."""
    i = bisect_right(xs, x)
    if i == 0:
        return float(ys[0])
    if i == len(xs):
        return float(ys[-1])
    j = i - 1
    slope = (ys[i] - ys[j]) / (xs[i] - xs[j])
    return float(slope * (x - xs[j]) + ys[j])


@dataclass(frozen=True)
class ServiceModel:
    """The service times of one replica for a simulation run, tabulated once from the one replica
    model (:func:`llmcourse.planner.replica`): decode step time against batch, each prompt's prefill
    compute time against its length, one read of the weights, and the capacity."""

    model: str
    gpu: str
    n_gpus: int
    prompt_tokens: float
    answer_tokens: float
    kv_budget_tokens: int
    batch_cap: int
    assumptions: Assumptions = field(repr=False)
    weight_bytes: Any = field(repr=False)
    kv_bytes: Any = field(repr=False)
    batch_grid: tuple[int, ...] = field(repr=False)
    step_grid_s: tuple[float, ...] = field(repr=False)
    prefill_grid: tuple[float, ...] = field(repr=False)
    prefill_per_token_s: tuple[float, ...] = field(repr=False)  # one prompt's compute time / its length
    weight_read_s: float = field(repr=False)
    step_s: tuple[float, ...] = field(repr=False)  # step time in s for batch 0..batch_cap (index 0 unused)
    capacity_rps: float = field(repr=False)  # the replica's requests per second for the mean request

    def step_time(self, batch: int) -> float:
        """Decode step time in seconds for ``batch`` sequences (from the table)."""
        return float(self.step_s[batch])

    def prefill_compute_time(self, prompt_tokens: float) -> float:
        """Compute time in seconds of one prompt of ``prompt_tokens`` tokens: its length times the compute
        time per token, interpolated in the table (exact for the replica model's prefill, whose FLOPs are a
        linear term plus, if charged, an attention term quadratic in the length)."""
        return prompt_tokens * _interp(prompt_tokens, self.prefill_grid, self.prefill_per_token_s)

    def prefill_time(self, prompt_tokens: float, prompts: int = 1) -> float:
        """Prefill time in seconds of ``prompts`` prompts of ``prompt_tokens`` tokens processed together:
        the slower of their compute time and one read of the weights (:func:`llmcourse.planner.prefill`)."""
        return max(prompts * self.prefill_compute_time(prompt_tokens), self.weight_read_s)

    def batch_prefill_time(self, prompt_lengths: Sequence[float]) -> float:
        """Prefill time in seconds of prompts of these lengths processed together: the slower of their
        compute times added and one read of the weights."""
        return max(math.fsum([self.prefill_compute_time(x) for x in prompt_lengths]), self.weight_read_s)

    def capacity(self, prompt_tokens: float | None = None, answer_tokens: float | None = None) -> pint.Quantity:
        """Most requests per second the replica completes when every request is the mean size: the
        replica model's ``requests_per_second`` at the largest batch the KV memory and the batch cap
        allow (for the course's method, the batch's prompts prefilled together, then its answers
        decoded). By default for the lengths the tables were built for."""
        p = self.prompt_tokens if prompt_tokens is None else plain_number(prompt_tokens, "prompt_tokens")
        a = self.answer_tokens if answer_tokens is None else plain_number(answer_tokens, "answer_tokens")
        if (p, a) == (self.prompt_tokens, self.answer_tokens):
            return Q_(self.capacity_rps, "1/s")
        return _capacity(self._base(), p, a)

    def _base(self) -> dict[str, Any]:
        """What :func:`llmcourse.planner.replica` needs besides the lengths and the batch."""
        keys = ("model", "gpu", "n_gpus", "batch_cap", "assumptions", "weight_bytes", "kv_bytes")
        return {k: getattr(self, k) for k in keys}


def _replica_at(base: dict[str, Any], batch: int | None, prompt_tokens: float, answer_tokens: float) -> Replica:
    """The one replica model of a service model's ``base`` for these lengths, at ``batch`` (the largest
    that fits if None)."""
    return replica(
        base["model"],
        base["gpu"],
        tensor_parallel=base["n_gpus"],
        batch=batch,
        prompt_tokens=prompt_tokens,
        answer_tokens=answer_tokens,
        weight_bytes=base["weight_bytes"],
        kv_bytes=base["kv_bytes"],
        assumptions=base["assumptions"],
    )


def _capacity(base: dict[str, Any], prompt_tokens: float, answer_tokens: float) -> pint.Quantity:
    """Requests per second of the replica at the largest batch that fits and the cap allows."""
    top = _replica_at(base, None, prompt_tokens, answer_tokens)
    if top.max_batch < 1:
        raise InputError(f"{top.model} on {top.tensor_parallel} x {top.gpu}: {top.reason}")
    b = min(base["batch_cap"], top.max_batch)
    return _replica_at(base, b, prompt_tokens, answer_tokens).requests_per_second.to("1/s")


def _check_request(prompt_tokens: float, answer_tokens: float, budget: int) -> None:
    if prompt_tokens + answer_tokens > budget:
        raise InputError(
            f"one request of {prompt_tokens + answer_tokens:,.0f} tokens needs more KV than the replica holds "
            f"({budget:,} tokens): shorten the context or add memory."
        )


def _grid(top: int, points: int = 24) -> tuple[int, ...]:
    """About ``points`` whole numbers from 1 to ``top``, evenly spaced on a log scale (no repeats)."""
    top = max(top, 1)
    step = math.log10(top) / (points - 1)
    xs = [10 ** (k * step) for k in range(points)]
    xs[0], xs[-1] = 1.0, float(top)
    return tuple(sorted({round(x) for x in xs}))


def build_replica(
    model: Model | str,
    gpu: GPU | str,
    *,
    prompt_tokens: float,
    answer_tokens: float,
    n_gpus: int = 1,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    batch_cap: int = 256,
    assumptions: Assumptions | str | None = None,
    bandwidth_efficiency: float | None = None,
    compute_efficiency: float | None = None,
    usable_fraction: float | None = None,
) -> ServiceModel:
    """Tabulate one replica's service times from the one replica model (once per run), under
    ``assumptions`` (the course's method by default; the efficiencies and the usable memory share
    override it one by one).

    The step table runs from batch 1 to ``batch_cap`` (at most the KV budget, one token each); the
    prefill table from 1 token to the longest prompt there can be: the KV budget, capped at the model's
    ``max_position`` (a context beyond it is refused by :func:`~llmcourse.planner.prefill`; Llama 3.1 8B
    on an H100 holds 426,788 tokens of KV but has 131,072 positions).

    Examples
    --------
    >>> rep = build_replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=2_000, answer_tokens=300)
    >>> rep.kv_budget_tokens, rep.batch_cap, rep.assumptions.name, rep.prefill_grid[-1]
    (426788, 256, 'course', 131072.0)
    """
    m, g = model_of(model), gpu_of(gpu)
    p = plain_number(prompt_tokens, "prompt_tokens")
    a_ = plain_number(answer_tokens, "answer_tokens")
    cap = int(plain_number(batch_cap, "batch_cap", integer=True))
    tp = int(plain_number(n_gpus, "n_gpus", integer=True))
    a = resolve(assumptions).replace(
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
        memory_fraction=usable_fraction,
    )
    budget = max_batch(m, g, 1, n_gpus=tp, weight_bytes=weight_bytes, kv_bytes=kv_bytes, assumptions=a)
    if budget < 1:
        raise InputError(f"{m.name} does not fit on {tp} x {g.name}: add GPUs or store fewer bytes per weight.")
    _check_request(p, a_, budget)
    cap = min(cap, budget)  # a batch beyond the KV budget (one token each) never runs: no table for it
    base = dict(
        model=m.name, gpu=g.name, n_gpus=tp, batch_cap=cap, assumptions=a, weight_bytes=weight_bytes, kv_bytes=kv_bytes
    )
    bgrid = _grid(cap)
    steps = tuple(float(_replica_at(base, b, p, a_).step.step_time.to("s").m) for b in bgrid)
    table = tuple(_interp(b, bgrid, steps) for b in range(cap + 1))
    longest = min(budget, m.max_position or budget)  # no prompt is longer than the model's positions
    pgrid = tuple(sorted(set(map(float, _grid(longest, 32))) | {p}))
    pres = [prefill(m, g, t, n_gpus=tp, weight_bytes=weight_bytes, assumptions=a) for t in pgrid]
    return ServiceModel(
        prompt_tokens=p,
        answer_tokens=a_,
        kv_budget_tokens=int(budget),
        batch_grid=bgrid,
        step_grid_s=steps,
        prefill_grid=pgrid,
        prefill_per_token_s=tuple(float(x.compute_time.to("s").m) / t for x, t in zip(pres, pgrid, strict=True)),
        weight_read_s=float(pres[0].memory_time.to("s").m),
        step_s=table,
        capacity_rps=float(_capacity(base, p, a_).m),
        **base,
    )


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

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) rows for a calculator."""
        out = [("load (arrival rate / capacity)", f"{self.load:.2f}")]
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


def _lengths(rng: random.Random, mean: float, cv: float, n: int, top: int) -> list[int]:
    """``n`` whole lengths, lognormal with this mean and coefficient of variation (fixed if ``cv`` is 0),
    rounded half to even and held between 1 and ``top``."""
    if cv == 0:
        return [min(max(round(mean), 1), top)] * n
    sigma2 = math.log(1 + cv**2)
    mu, sigma = math.log(mean) - sigma2 / 2, math.sqrt(sigma2)
    draw = rng.lognormvariate
    return [min(max(round(draw(mu, sigma)), 1), top) for _ in range(n)]


def simulate(
    model: Model | str,
    gpu: GPU | str,
    *,
    rate: pint.Quantity,
    prompt_tokens: float,
    answer_tokens: float,
    requests: int = 10_000,
    seed: int = 0,
    prompt_cv: float = 0.5,
    answer_cv: float = 0.5,
    replica: ServiceModel | None = None,
    **replica_kwargs: Any,
) -> SimResult:
    """Simulate ``requests`` Poisson arrivals at ``rate`` on one replica; see the module notes.

    ``prompt_tokens`` and ``answer_tokens`` are the means of the length distributions; ``*_cv`` their
    coefficients of variation (0: fixed). ``replica`` reuses the service model of :func:`build_replica`
    (otherwise one is built from ``replica_kwargs``: ``assumptions=``, ``n_gpus=``, ...). The same seed
    gives the same result.

    Examples
    --------
    >>> simulate("Llama-3.1-8B", "H100 SXM", rate=2.0, prompt_tokens=2_000, answer_tokens=300)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: rate needs a unit: write Q_(2.0, '1/s') (or any unit of 1 / [time], such as 1/s or 1/day), not the bare number 2.0.
    """
    start = time.perf_counter()
    lam = as_quantity(rate, "1/s", "rate").to("1/s").m
    plain_number(lam, "rate", at_least=_SLOWEST, why=_SLOWEST_WHY)
    p = check_value(prompt_tokens, SYMBOLS["prompt_tokens"], "prompt_tokens")
    a = check_value(answer_tokens, SYMBOLS["answer_tokens"], "answer_tokens")
    n = int(plain_number(requests, "requests", integer=True, at_most=_MOST_REQUESTS, why=_MOST_WHY))
    pcv = plain_number(prompt_cv, "prompt_cv", allow_zero=True, at_most=_MOST_CV, why=_CV_WHY)
    acv = plain_number(answer_cv, "answer_cv", allow_zero=True, at_most=_MOST_CV, why=_CV_WHY)
    seed_number(seed)
    rep = replica or build_replica(model, gpu, prompt_tokens=p, answer_tokens=a, **replica_kwargs)
    budget = rep.kv_budget_tokens
    _check_request(p, a, budget)
    positions = model_of(rep.model).max_position or budget  # a sequence is held within the model's positions
    rng = random.Random(seed)
    expo = rng.expovariate
    arrivals = list(accumulate(expo(lam) for _ in range(n)))
    ans = _lengths(rng, a, acv, n, min(budget, positions) // 2)
    pro = _lengths(rng, p, pcv, n, min(budget, positions) - max(ans))
    need = [x + y for x, y in zip(pro, ans, strict=True)]
    first = [0.0] * n
    finish = [0.0] * n
    step_s, cap = rep.step_s, rep.batch_cap
    # each prompt's prefill compute time (one table look-up per distinct length); a group prefilled together
    # takes the slower of their sum and one read of the weights (ServiceModel.batch_prefill_time)
    by_len = {x: rep.prefill_compute_time(x) for x in set(pro)}
    pre_c = [by_len[x] for x in pro]
    w_read = rep.weight_read_s
    heappush, heappop, ceil = heapq.heappush, heapq.heappop, math.ceil
    waiting: deque[int] = deque()
    admit, next_waiting = waiting.append, waiting.popleft
    running: list[tuple[int, int]] = []  # heap of (decode-step count at which it finishes, request)
    t = busy = batch_area = 0.0
    i = done = 0
    g = used = 0  # decode steps done so far; KV tokens reserved
    while done < n:
        while i < n and arrivals[i] <= t:
            admit(i)
            i += 1
        if not running and not waiting:
            t = arrivals[i]
            continue
        admitted = []
        room = cap - len(running)
        while waiting and len(admitted) < room and used + need[waiting[0]] <= budget:
            j = next_waiting()
            used += need[j]
            admitted.append(j)
        if admitted:
            dt = max(math.fsum([pre_c[j] for j in admitted]), w_read)
            t += dt
            busy += dt
            for j in admitted:
                first[j] = t
                if ans[j] <= 1:
                    finish[j] = t
                    used -= need[j]
                    done += 1
                else:
                    heappush(running, (g + ans[j] - 1, j))
            continue
        b = len(running)
        dt = step_s[b]
        k = running[0][0] - g
        if not waiting and i < n:
            k = min(k, max(1, ceil((arrivals[i] - t) / dt)))
        t += k * dt
        busy += k * dt
        batch_area += k * dt * b
        g += k
        while running and running[0][0] <= g:
            _, j = heappop(running)
            finish[j] = t
            used -= need[j]
            done += 1
    # the request's fixed overhead (HTTP round trip, tokenising: the assumptions' request_overhead_ms) is spent
    # before it reaches the engine, off the GPU: the engine sees the same arrivals a constant later, so the queue
    # is the same and every TTFT is that much longer (times in the system stay the engine's)
    t_req = Q_(rep.assumptions.request_overhead_ms, "ms").to("s").m
    ttft = tuple([t_req + (f - x) for f, x in zip(first, arrivals, strict=True)])
    tpot = tuple([(finish[j] - first[j]) / (ans[j] - 1) for j in range(n) if ans[j] > 1])
    if not tpot:
        raise InputError(
            f"every simulated answer was one token long (answer_tokens={a:g}, answer_cv={acv:g}), so no request "
            "has a time per output token: give answer_tokens of 2 or more, or a spread (answer_cv > 0)."
        )
    span = max(finish) - arrivals[0]
    mean_in_system = math.fsum([f - x for f, x in zip(finish, arrivals, strict=True)]) / n
    # Little's law check: arrivals see time averages (Poisson), so the number in the system that
    # each arrival finds estimates L independently of lambda x W. Request i finds the i that arrived
    # before it, less those that finished at or before its arrival (a merge of two sorted lists).
    ends = sorted(finish)
    departed = seen_total = 0
    for i, x in enumerate(arrivals):
        while departed < n and ends[departed] <= x:
            departed += 1
        seen_total += i - departed
    lam_hat = Q_((n - 1) / (arrivals[-1] - arrivals[0]), "1/s") if n > 1 else Q_(lam, "1/s")
    little = F["littles_law"](request_rate=lam_hat, time_in_system=Q_(mean_in_system, "s")).m
    ttft_sorted, tpot_sorted = sorted(ttft), sorted(tpot)
    return SimResult(
        replica=rep,
        rate=Q_(lam, "1/s"),
        load=float(lam / rep.capacity(p, a).m),
        completed=done,
        ttft={f"p{q}": Q_(_percentile_sorted(ttft_sorted, q) * 1e3, "ms") for q in PERCENTILES},
        tpot={f"p{q}": Q_(_percentile_sorted(tpot_sorted, q) * 1e3, "ms") for q in PERCENTILES},
        busy_fraction=float(busy / span),
        throughput=Q_(sum(ans) / span, "1/s"),
        request_throughput=Q_(n / span, "1/s"),
        mean_batch=float(batch_area / max(busy, 1e-300)),
        in_system_seen_by_arrivals=seen_total / n,
        littles_law_in_system=float(little),
        mean_time_in_system=Q_(mean_in_system, "s"),
        wall_time=Q_((time.perf_counter() - start) * 1e3, "ms"),
        ttft_s=ttft,
        tpot_s=tpot,
    )


@dataclass(frozen=True)
class ClosedForm:
    """The averages-only estimate at an arrival rate: the request's overhead and its prefill alone, and the batch
    Little's law gives."""

    rate: pint.Quantity
    batch: int
    ttft: pint.Quantity
    tpot: pint.Quantity


def closed_form(rep: ServiceModel, rate: pint.Quantity, prompt_tokens: float, answer_tokens: float) -> ClosedForm:
    """TTFT = the request's fixed overhead, then one prompt's prefill (``FORMULAS["first_token_time"]``); TPOT =
    the step time at the batch in flight by Little's law, B = rate x (prefill + answer x step(B)) (the time a
    request spends on the engine: its fixed overhead is spent before it), found by fixed-point iteration and
    capped by memory.

    Examples
    --------
    >>> rep = build_replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=2_000, answer_tokens=300)
    >>> c = closed_form(rep, Q_(0.001, "1/s"), 2_000, 300)
    >>> c.batch, round(c.tpot.to("ms").m, 2) == round(rep.step_time(1) * 1e3, 2)
    (1, True)
    """
    if not isinstance(rep, ServiceModel):
        raise InputError(f"rep must be a ServiceModel: build one with build_replica(...), not {type(rep).__name__}.")
    lam = as_quantity(rate, "1/s", "rate").to("1/s")
    plain_number(lam.m, "rate")
    prompt_tokens = check_value(prompt_tokens, SYMBOLS["prompt_tokens"], "prompt_tokens")
    answer_tokens = check_value(answer_tokens, SYMBOLS["answer_tokens"], "answer_tokens")
    fit = max_batch(
        rep.model,
        rep.gpu,
        prompt_tokens + answer_tokens,
        n_gpus=rep.n_gpus,
        weight_bytes=rep.weight_bytes,
        kv_bytes=rep.kv_bytes,
        assumptions=rep.assumptions,
    )
    top = min(rep.batch_cap, max(1, fit))
    pre = Q_(rep.prefill_time(prompt_tokens), "s")
    b = 1
    for _ in range(50):
        in_sys = F["littles_law"](request_rate=lam, time_in_system=pre + answer_tokens * Q_(rep.step_time(b), "s")).m
        nb = min(top, max(1, math.ceil(in_sys)))
        if nb == b:
            break
        b = nb
    ttft = F["first_token_time"](request_overhead=Q_(rep.assumptions.request_overhead_ms, "ms"), prefill_time=pre)
    return ClosedForm(rate=lam, batch=b, ttft=ttft.to("ms"), tpot=Q_(rep.step_time(b) * 1e3, "ms"))


def load_sweep(
    model: Model | str,
    gpu: GPU | str,
    *,
    prompt_tokens: float,
    answer_tokens: float,
    loads: Any = (0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98),
    requests: int = 10_000,
    seed: int = 0,
    prompt_cv: float = 0.5,
    answer_cv: float = 0.5,
    **replica_kwargs: Any,
) -> list[tuple[SimResult, ClosedForm]]:
    """Simulate at each load (arrival rate / :meth:`ServiceModel.capacity`) with the same tables and seed."""
    rep = build_replica(model, gpu, prompt_tokens=prompt_tokens, answer_tokens=answer_tokens, **replica_kwargs)
    run = dict(requests=requests, seed=seed, prompt_cv=prompt_cv, answer_cv=answer_cv)
    return [at_load(rep, x, prompt_tokens=prompt_tokens, answer_tokens=answer_tokens, **run) for x in loads]


def at_load(
    rep: ServiceModel,
    load: float,
    *,
    prompt_tokens: float,
    answer_tokens: float,
    requests: int = 10_000,
    seed: int = 0,
    prompt_cv: float = 0.5,
    answer_cv: float = 0.5,
) -> tuple[SimResult, ClosedForm]:
    """Simulate one replica's tables at ``load`` (arrival rate / :meth:`ServiceModel.capacity`), beside
    the closed form at the same rate: one point of :func:`load_sweep`, and the chapter's calculator."""
    if not isinstance(rep, ServiceModel):
        raise InputError(f"rep must be a ServiceModel: build one with build_replica(...), not {type(rep).__name__}.")
    rate = plain_number(load, "load") * rep.capacity(prompt_tokens, answer_tokens)
    sim = simulate(
        rep.model,
        rep.gpu,
        rate=rate,
        prompt_tokens=prompt_tokens,
        answer_tokens=answer_tokens,
        requests=requests,
        seed=seed,
        prompt_cv=prompt_cv,
        answer_cv=answer_cv,
        replica=rep,
    )
    return sim, closed_form(rep, rate, prompt_tokens, answer_tokens)


def knee(sweep: list[tuple[SimResult, ClosedForm]], factor: float = 5.0) -> float | None:
    """The knee of a sweep (ordered by load): the lowest load at which the simulated p99 TTFT is more
    than ``factor`` times the p99 TTFT at the sweep's lightest load. ``None`` if it never is."""
    f = plain_number(factor, "factor")
    light = sweep[0][0].ttft["p99"]
    for r, _ in sweep:
        if r.ttft["p99"] > f * light:
            return r.load
    return None
