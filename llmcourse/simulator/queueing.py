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
  :func:`~llmcourse.replica.memory.max_batch` at a context of one token (free memory / KV per token,
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
  :func:`llmcourse.replica.replica` at that batch for the mean request, which reads the KV cache
  at the context the assumptions say (the course's method: the average, prompt + answer / 2, as
  :func:`~llmcourse.planner.design.plan` does), interpolated linearly between table points (exact for a
  dense model whose step stays memory-bound or compute-bound, since it is then linear in the
  batch). A prompt's prefill compute time per token is tabulated against its length
  (:func:`~llmcourse.replica.prefill.prefill` under the same assumptions; linear in the length, so the
  interpolation is exact, also with the course's causal attention term, which is quadratic in
  each prompt's length: prompts are timed one by one), and a group of prompts prefilled together
  takes the slower of their compute times added and one read of the weights, the rule of
  :func:`~llmcourse.replica.prefill.prefill`. The capacity is the replica's requests per second at the
  largest batch the memory and the batch cap allow.
* **Assumptions.** :func:`build_replica` (and :func:`simulate`, :func:`load_sweep` through it)
  takes ``assumptions=`` (a preset name or an :class:`~llmcourse.assumptions.Assumptions`; the
  course's method by default; a what-if is a changed object,
  ``assumptions=resolve("course").replace(bandwidth_efficiency=0.8)``); no modelling constant is set here.

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
from operator import add, mul, sub
from random import NV_MAGICCONST
from typing import Any

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import SYMBOLS, check_value
from llmcourse.replica.base import gpu_of, model_of
from llmcourse.replica.memory import max_batch
from llmcourse.replica.model import Replica, replica
from llmcourse.replica.prefill import prefill
from llmcourse.stats import percentile
from llmcourse.stats import sorted_percentile as _percentile_sorted
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

__all__ = [
    "LENGTH_CV",
    "PERCENTILES",
    "ClosedForm",
    "PercentileSizing",
    "ServiceModel",
    "SimResult",
    "at_load",
    "build_replica",
    "closed_form",
    "knee",
    "load_sweep",
    "percentile",
    "percentile_rank",
    "simulate",
    "size_to_percentiles",
]

PERCENTILES = (50, 95, 99)
#: The spread of prompt and answer lengths a simulation draws when none is given: the coefficient of variation of
#: the lognormal (0.5: about one prompt in 23 is over twice the mean). A workload's figure, not a modelling
#: constant: measure your own traffic's and pass it (``prompt_cv=``, ``answer_cv=``).
LENGTH_CV = 0.5
#: Bounds on a simulation's size (not modelling constants): past a million requests a run takes minutes, and
#: below one request per 30 years the arrival times leave floating point.
_MOST_REQUESTS, _MOST_WHY = 1_000_000, " (a larger run takes minutes; the percentiles settle long before)"
_SLOWEST, _SLOWEST_WHY = 1e-9, " per second (about one request in 30 years)"
_MOST_CV, _CV_WHY = 100.0, " (a spread past 100 times the mean leaves floating point in the lognormal)"

# The single-server queue (M/M/1) forms the chapter and its exercises use are registered in
# llmcourse.formulas (mm1_utilisation, mm1_time_in_system, mm1_max_rate) with every other formula.


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
    model (:func:`llmcourse.replica.replica`): decode step time against batch, each prompt's prefill
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
        the slower of their compute time and one read of the weights (:func:`llmcourse.replica.prefill.prefill`)."""
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
        """What :func:`llmcourse.replica.replica` needs besides the lengths and the batch."""
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
    return to(_replica_at(base, b, prompt_tokens, answer_tokens).requests_per_second, "1/s")


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
) -> ServiceModel:
    """Tabulate one replica's service times from the one replica model (once per run), under
    ``assumptions`` (the course's method by default).

    The step table runs from batch 1 to ``batch_cap`` (at most the KV budget, one token each); the
    prefill table from 1 token to the longest prompt there can be: the KV budget, capped at the model's
    ``max_position`` (a context beyond it is refused by :func:`~llmcourse.replica.prefill.prefill`; Llama 3.1 8B
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
    a = resolve(assumptions)
    budget = max_batch(m, g, 1, n_gpus=tp, weight_bytes=weight_bytes, kv_bytes=kv_bytes, assumptions=a)
    if budget < 1:
        raise InputError(f"{m.name} does not fit on {tp} x {g.name}: add GPUs or store fewer bytes per weight.")
    _check_request(p, a_, budget)
    cap = min(cap, budget)  # a batch beyond the KV budget (one token each) never runs: no table for it
    base = dict(
        model=m.name, gpu=g.name, n_gpus=tp, batch_cap=cap, assumptions=a, weight_bytes=weight_bytes, kv_bytes=kv_bytes
    )
    bgrid = _grid(cap)
    steps = tuple(float(to(_replica_at(base, b, p, a_).step.step_time, "s").m) for b in bgrid)
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
        prefill_per_token_s=tuple(float(to(x.compute_time, "s").m) / t for x, t in zip(pres, pgrid, strict=True)),
        weight_read_s=float(to(pres[0].memory_time, "s").m),
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
    concurrency: int | None = None  # a closed loop's clients (None: Poisson arrivals at ``rate``)
    chunk_tokens: int | None = None  # the scheduler's token budget per iteration (None: whole prompts)
    prefix_hit_rate: float = 0.0
    prefill_tokens: int = 0  # prompt tokens actually prefilled (the prefix cache's hits skip theirs)

    def at(self, metric: str, q: float) -> pint.Quantity:
        """The ``q``-th percentile (0 < q < 100) of ``"ttft"`` or ``"tpot"`` over the run's requests, in ms.

        Examples
        --------
        >>> r = simulate("Llama-3.1-8B", "H100 SXM", rate=Q_(4, "1/s"), prompt_tokens=2_000, answer_tokens=300,
        ...              requests=500)
        >>> r.at("ttft", 99) == r.ttft["p99"], r.at("tpot", 90) <= r.tpot["p95"]
        (True, True)
        """
        values = {"ttft": self.ttft_s, "tpot": self.tpot_s}
        if metric not in values:
            raise InputError(f"metric must be 'ttft' or 'tpot'; got {metric!r}.")
        return Q_(_percentile_sorted(sorted(values[metric]), percentile_rank(q)) * 1e3, "ms")

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
    rounded half to even and held between 1 and ``top``.

    The draws are ``rng.lognormvariate(mu, sigma)``'s, one after another, with its method (the exponential of
    Kinderman and Monahan's ratio-of-uniforms normal, ``random.normalvariate``) written out in one loop: the same
    numbers from the same stream, without two calls per draw (``tests/test_queueing.py`` compares the two).
    """
    if cv == 0:
        return [min(max(round(mean), 1), top)] * n
    sigma2 = math.log(1 + cv**2)
    mu, sigma = math.log(mean) - sigma2 / 2, math.sqrt(sigma2)
    rand, log, exp, magic = rng.random, math.log, math.exp, NV_MAGICCONST
    out = [0] * n
    for k in range(n):
        while True:  # random.normalvariate(mu, sigma)
            u1 = rand()
            u2 = 1.0 - rand()
            z = magic * (u1 - 0.5) / u2
            if z * z / 4.0 <= -log(u2):
                break
        x = round(exp(mu + z * sigma))
        if x < 1:  # min(max(x, 1), top)
            x = 1
        out[k] = top if x > top else x
    return out


def _prompts(
    rng: random.Random, mean: float, cv: float, n: int, top: int, hit: float, resident: int
) -> tuple[list[int], list[int] | None]:
    """The prompts' lengths, then (if ``hit``) how many of each one's tokens the prefix cache holds: a share
    ``hit`` of the prompts find the ``resident`` cached tokens, at most all but their last (None: no cache)."""
    pro = _lengths(rng, mean, cv, n, top)
    if hit <= 0:
        return pro, None
    draw = rng.random
    return pro, [min(resident, x - 1) if draw() < hit else 0 for x in pro]


def _prefill_costs(
    rep: ServiceModel, pro: Sequence[int], cached: Sequence[int] | None
) -> tuple[list[int], list[float], list[float]]:
    """Per request: the prompt tokens to prefill, their compute time per token, and that time for the whole prompt.

    One table look-up per distinct length: a causal prefill of x tokens is the prefill of its first c plus the
    rest, so the c cached tokens' hits leave C(x) - C(c), their attention reaching back over the cached ones
    (:meth:`ServiceModel.prefill_compute_time` is C); a group prefilled together takes the slower of their sum and
    one read of the weights (:meth:`ServiceModel.batch_prefill_time`)."""
    grid, ys = rep.prefill_grid, rep.prefill_per_token_s
    slopes = [(ys[i] - ys[i - 1]) / (grid[i] - grid[i - 1]) for i in range(1, len(grid))]  # as _interp's
    last = len(grid)
    full: dict[int, float] = {}
    for x in {*pro, *(cached or ())} - {0}:  # rep.prefill_compute_time(x), the interpolation written out
        i = bisect_right(grid, x)
        if i == 0:
            full[x] = x * float(ys[0])
        elif i == last:
            full[x] = x * float(ys[-1])
        else:
            full[x] = x * float(slopes[i - 1] * (x - grid[i - 1]) + ys[i - 1])
    if cached is None:  # (C(x) - 0) / (x - 0), then times the x tokens, once per length
        per = {x: c / x for x, c in full.items()}
        whole = {x: c * x for x, c in per.items()}
        return list(pro), list(map(per.__getitem__, pro)), list(map(whole.__getitem__, pro))
    work = list(map(sub, pro, cached))
    tok_c = [(full[x] - full.get(c, 0.0)) / w for x, c, w in zip(pro, cached, work, strict=True)]
    return work, tok_c, list(map(mul, tok_c, work))


def _open_loop_draws(
    rep: ServiceModel,
    seed: int,
    n: int,
    answer: tuple[float, float],
    prompt: tuple[float, float],
    longest: int,
    hit: float,
    resident: int,
) -> tuple[tuple[float, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[float, ...], tuple[float, ...]]:
    """What an open loop's run draws and derives from its seed, before the load: each arrival's gap at a rate of
    1/s (``-log(1 - U)``, ``random.expovariate``'s formula: the gap at rate r is this / r), then the answers'
    lengths, the prompts' and the prefix cache's hits (:func:`_prompts`), then the prefill work and times
    (:func:`_prefill_costs`). ``longest`` is the longest sequence the KV memory and the model's positions hold.
    The same numbers, drawn in the same order, at every load: :func:`_drawn` keeps the last few."""
    rng = random.Random(seed)
    rand, log = rng.random, math.log
    gaps = tuple([-log(1.0 - rand()) for _ in range(n)])
    ans = _lengths(rng, *answer, n, longest // 2)
    pro, cached = _prompts(rng, *prompt, n, longest - max(ans), hit, resident)
    work, tok_c, pre = _prefill_costs(rep, pro, cached)
    need = list(map(add, work, ans))
    return gaps, tuple(ans), tuple(work), tuple(need), tuple(tok_c), tuple(pre)


#: The last few open-loop draws (:func:`_open_loop_draws`), by their arguments and the prefill table they were
#: timed by: moving a calculator's load, or sizing a fleet, re-runs the same requests at another rate. Runs of
#: more than _MOST_KEPT requests are drawn afresh.
_DRAWN: dict[tuple[Any, ...], Any] = {}
_KEEP, _MOST_KEPT = 4, 100_000


def _drawn(rep: ServiceModel, *args: Any) -> Any:
    """:func:`_open_loop_draws` of ``args``, kept for the next run with the same arguments and prefill table."""
    key = (rep.prefill_grid, rep.prefill_per_token_s, *args)
    if key in _DRAWN:
        _DRAWN[key] = _DRAWN.pop(key)  # the most recently used last
        return _DRAWN[key]
    out = _open_loop_draws(rep, *args)
    if args[1] <= _MOST_KEPT:
        _DRAWN[key] = out
        while len(_DRAWN) > _KEEP:
            del _DRAWN[next(iter(_DRAWN))]
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
    chunk_tokens: int | None = None,
    prefix_hit_rate: float = 0.0,
    prefix_tokens: float = 0,
    replica: ServiceModel | None = None,
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

    The scheduler: ``chunk_tokens=None`` prefills newly admitted prompts whole while decoding stalls;
    ``chunk_tokens=T`` gives every iteration a budget of ``T`` tokens, one per running sequence first and
    the rest to prompt chunks, first come first served (vLLM's ``max_num_batched_tokens``, SGLang's
    chunked prefill size); a mixed iteration takes the decode step of its running batch plus its chunks'
    compute. A prefix cache: a share ``prefix_hit_rate`` of requests find their first ``prefix_tokens``
    tokens cached (at most all but the prompt's last token, which is computed to give the first answer
    token); those tokens are not prefilled, and their KV is held once for everyone, not per request.

    ``replica`` reuses the service model of :func:`build_replica` (otherwise one is built from
    ``replica_kwargs``: ``assumptions=``, ``n_gpus=``, ...). The same seed gives the same result.

    Examples
    --------
    >>> rep = build_replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=2_000, answer_tokens=300)
    >>> whole = simulate("Llama-3.1-8B", "H100 SXM", concurrency=8, prompt_tokens=2_000, answer_tokens=300,
    ...                  requests=400, replica=rep)
    >>> chunked = simulate("Llama-3.1-8B", "H100 SXM", concurrency=8, prompt_tokens=2_000, answer_tokens=300,
    ...                    requests=400, replica=rep, chunk_tokens=512)
    >>> chunked.tpot["p99"] < whole.tpot["p99"]  # chunks no longer stall a running answer for a whole prompt
    True
    >>> simulate("Llama-3.1-8B", "H100 SXM", rate=2.0, prompt_tokens=2_000, answer_tokens=300)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: rate needs a unit: write Q_(2.0, '1/s') (or any unit of 1 / [time], such as 1/s or 1/day), not the bare number 2.0.
    """
    start = time.perf_counter()
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
    n = int(plain_number(requests, "requests", integer=True, at_most=_MOST_REQUESTS, why=_MOST_WHY))
    clients = None
    if concurrency is not None:
        clients = int(plain_number(concurrency, "concurrency", integer=True, at_most=_MOST_REQUESTS, why=_MOST_WHY))
    pcv = plain_number(prompt_cv, "prompt_cv", allow_zero=True, at_most=_MOST_CV, why=_CV_WHY)
    acv = plain_number(answer_cv, "answer_cv", allow_zero=True, at_most=_MOST_CV, why=_CV_WHY)
    chunk = None
    if chunk_tokens is not None:
        why = ": each iteration must make progress on a prompt (engines use 512 to 16,384)"
        chunk = int(plain_number(chunk_tokens, "chunk_tokens", integer=True, at_least=1, why=why))
    hit = plain_number(prefix_hit_rate, "prefix_hit_rate", allow_zero=True, at_most=1, why=" (a share of requests)")
    shared = plain_number(prefix_tokens, "prefix_tokens", allow_zero=True)
    if hit > 0 and shared < 1:
        raise InputError(
            f"prefix_hit_rate={hit:g} needs the cached prefix's length: give prefix_tokens (the system prompt's "
            "tokens, say), or prefix_hit_rate=0."
        )
    seed_number(seed)
    rep = replica or build_replica(model, gpu, prompt_tokens=p, answer_tokens=a, **replica_kwargs)
    budget = rep.kv_budget_tokens
    resident = math.ceil(shared) if hit > 0 else 0  # the shared prefix's KV, held once
    if resident >= budget:
        raise InputError(
            f"the cached prefix of {resident:,} tokens fills the replica's KV memory ({budget:,} tokens): "
            "shorten it or add memory."
        )
    budget -= resident
    _check_request(p, a, budget)
    positions = model_of(rep.model).max_position or budget  # a sequence is held within the model's positions
    longest = min(budget, positions)
    if lam is not None:
        gaps, ans, work, need, tok_c, pre = _drawn(rep, seed, n, (a, acv), (p, pcv), longest, hit, resident)
        arrivals = list(accumulate([x / lam for x in gaps]))
    else:
        rng = random.Random(seed)
        ans = _lengths(rng, a, acv, n, longest // 2)
        # a closed loop's clients start spread over one request's time at the full batch: started together,
        # identical requests would run in lockstep, every prefill queued behind all the others, as no engine shows
        alone = rep.prefill_compute_time(p) + a * rep.step_time(min(clients, rep.batch_cap))
        arrivals = [rng.uniform(0, alone) if j < clients else 0.0 for j in range(n)]
        pro, cached = _prompts(rng, p, pcv, n, longest - max(ans), hit, resident)
        work, tok_c, pre = _prefill_costs(rep, pro, cached)
        need = list(map(add, work, ans))
    ms, sec, per_s = (parsed_unit(u)[0] for u in ("ms", "s", "1/s"))
    t_req = in_unit(rep.assumptions.request_overhead_ms, ms, sec).m
    first, finish, busy, batch_area = _run(rep, arrivals, clients, t_req, ans, need, tok_c, pre, work, budget, chunk)
    # the request's fixed overhead (HTTP round trip, tokenising: the assumptions' request_overhead_ms) is spent
    # before it reaches the engine, off the GPU: the engine sees the arrivals a constant later, so every TTFT is that
    # much longer (times in the system stay the engine's)
    ttft = tuple([t_req + x for x in map(sub, first, arrivals)])
    tpot = tuple([x / (y - 1) for x, y in zip(map(sub, finish, first), ans, strict=True) if y > 1])
    if not tpot:
        raise InputError(
            f"every simulated answer was one token long (answer_tokens={a:g}, answer_cv={acv:g}), so no request "
            "has a time per output token: give answer_tokens of 2 or more, or a spread (answer_cv > 0)."
        )
    span = max(finish) - min(arrivals)  # a closed loop's first clients arrive in no particular order
    mean_in_system = math.fsum(map(sub, finish, arrivals)) / n
    # Little's law check: arrivals see time averages (Poisson), so the number in the system that
    # each arrival finds estimates L independently of lambda x W. Request i finds the i that arrived
    # before it, less those that finished at or before its arrival (a merge of two sorted lists).
    ends = sorted(finish)
    starts = sorted(arrivals)
    departed = seen_total = 0
    for i, x in enumerate(starts):
        while departed < n and ends[departed] <= x:
            departed += 1
        seen_total += i - departed
    if lam is None:  # a closed loop: the rate is what the clients achieved
        lam = n / span
    lam_hat = (
        quantity((n - 1) / (starts[-1] - starts[0]), per_s)
        if n > 1 and starts[-1] > starts[0]
        else quantity(lam, per_s)
    )
    little = F["littles_law"](request_rate=lam_hat, time_in_system=quantity(mean_in_system, sec)).m
    ttft_sorted, tpot_sorted = sorted(ttft), sorted(tpot)
    return SimResult(
        replica=rep,
        rate=quantity(lam, per_s),
        load=float(lam / rep.capacity(p, a).m),
        completed=n,
        ttft={f"p{q}": quantity(_percentile_sorted(ttft_sorted, q) * 1e3, ms) for q in PERCENTILES},
        tpot={f"p{q}": quantity(_percentile_sorted(tpot_sorted, q) * 1e3, ms) for q in PERCENTILES},
        busy_fraction=float(busy / span),
        throughput=quantity(sum(ans) / span, per_s),
        request_throughput=quantity(n / span, per_s),
        mean_batch=float(batch_area / max(busy, 1e-300)),
        in_system_seen_by_arrivals=seen_total / n,
        littles_law_in_system=float(little),
        mean_time_in_system=quantity(mean_in_system, sec),
        wall_time=quantity((time.perf_counter() - start) * 1e3, ms),
        ttft_s=ttft,
        tpot_s=tpot,
        concurrency=clients,
        chunk_tokens=chunk,
        prefix_hit_rate=hit,
        prefill_tokens=sum(work),
    )


def _run(
    rep: ServiceModel,
    arrivals: list[float],
    clients: int | None,
    t_req: float,
    ans: Sequence[int],
    need: Sequence[int],
    tok_c: Sequence[float],
    pre: Sequence[float],
    work: Sequence[int],
    budget: int,
    chunk: int | None,
) -> tuple[list[float], list[float], float, float]:
    """The event loop: first-token and finish times of every request, busy time and batch x time.

    ``arrivals`` are the engine's arrival times (open loop); with ``clients`` they are filled in as the loop runs:
    the first ``clients`` requests arrive at the times given (spread by :func:`simulate`), and each finish sends the
    next request ``t_req`` later.

    Each pass of the loop is one event: the arrivals up to now join the queue and the queue is admitted; then one
    prefill iteration, or one mixed iteration of chunks, or as many decode steps of the running batch as pass before
    the next finish (or the next arrival, if one could start), in one jump: its time is the step's, constant until
    then. The hot path is written for speed on plain lists (the browser runs it at every change of a calculator):
    a running sequence is one int on the heap, ``(step at which it finishes) * n + request``, in the order of the
    pairs it stands for; the open loop's arrivals end with an infinite sentinel. "A sequence finishes" is written out
    where it happens (three places) rather than called: a call per finished request was a tenth of the loop's time.
    """
    n = len(arrivals)
    first = [0.0] * n
    finish = [0.0] * n
    step_s, cap, w_read = rep.step_s, rep.batch_cap, rep.weight_read_s
    heappush, heappop, ceil, fsum, inf = heapq.heappush, heapq.heappop, math.ceil, math.fsum, math.inf
    waiting: deque[int] = deque()
    admit, next_waiting = waiting.append, waiting.popleft
    prefilling: deque[int] = deque()  # admitted, prompt not all prefilled yet (first come first served)
    admitted = prefilling.append
    left = list(work)  # prompt tokens each still has to prefill
    running: list[int] = []  # heap of (decode-step count at which it finishes) * n + request
    pending: list[tuple[float, int]] = []  # a closed loop's next arrivals: a heap of (time, request)
    closed = clients is not None
    issued = n
    arr = [*arrivals, inf] if clients is None else []  # the open loop's arrivals, then a sentinel
    if clients is not None:
        issued = min(clients, n)  # requests 0..issued-1 are on their way; the rest wait for a finish
        pending = sorted((arrivals[j], j) for j in range(issued))
    t = busy = batch_area = 0.0
    i = done = 0
    g = used = 0  # decode steps done so far; KV tokens reserved
    while done < n:
        if closed:
            while pending and pending[0][0] <= t:
                admit(heappop(pending)[1])
            next_arrival = pending[0][0] if pending else inf
        else:
            while arr[i] <= t:
                admit(i)
                i += 1
            next_arrival = arr[i]
        b = len(running)
        if waiting:
            room = cap - b - len(prefilling)
            while room > 0 and waiting and used + need[waiting[0]] <= budget:
                j = next_waiting()
                used += need[j]
                admitted(j)
                room -= 1
        elif not b and not prefilling:  # idle until the next arrival
            t = next_arrival
            continue
        if prefilling and chunk is None:  # whole prompts, decoding stalls
            x = pre[prefilling[0]] if len(prefilling) == 1 else fsum([pre[j] for j in prefilling])
            dt = x if x >= w_read else w_read  # max(x, w_read)
            t += dt
            busy += dt
            for j in prefilling:  # the first token of each
                first[j] = t
                y = ans[j]
                if y > 1:
                    heappush(running, (g + y - 1) * n + j)
                    continue
                finish[j] = t  # a one-token answer is done
                used -= need[j]
                done += 1
                if issued < n:  # a closed loop's client sends its next request
                    arrivals[issued] = x = t + t_req
                    heappush(pending, (x, issued))
                    issued += 1
            prefilling.clear()
            continue
        if prefilling and chunk - b >= 1:  # one mixed iteration: a token per running sequence, the rest to chunks
            room_t, done_now, compute = chunk - b, [], 0.0
            for j in prefilling:
                c = min(left[j], room_t)
                compute += c * tok_c[j]
                left[j] -= c
                room_t -= c
                if left[j] == 0:
                    done_now.append(j)
                if room_t == 0:
                    break
            dt = step_s[b] + compute if b else max(compute, w_read)
            t += dt
            busy += dt
            batch_area += dt * b
            if b:
                g += 1
                top = (g + 1) * n  # the keys of the sequences that finish at step g or before
                while running and running[0] < top:
                    j = heappop(running) % n
                    finish[j] = t
                    used -= need[j]
                    done += 1
                    if issued < n:
                        arrivals[issued] = x = t + t_req
                        heappush(pending, (x, issued))
                        issued += 1
            for j in done_now:
                prefilling.popleft()  # the finished ones are the first in line
                first[j] = t
                y = ans[j]
                if y > 1:
                    heappush(running, (g + y - 1) * n + j)
                    continue
                finish[j] = t
                used -= need[j]
                done += 1
                if issued < n:
                    arrivals[issued] = x = t + t_req
                    heappush(pending, (x, issued))
                    issued += 1
            continue
        # decode steps only, as many as pass before the next finish (or the next arrival, if one could start)
        dt = step_s[b]
        if prefilling:  # a budget all spent on decode tokens: one step, then look again
            k = 1
        else:
            k = running[0] // n - g
            if not waiting and next_arrival != inf:
                m = ceil((next_arrival - t) / dt)
                if m < k:  # k = min(k, max(1, m))
                    k = m if m > 1 else 1
        x = k * dt
        t += x
        busy += x
        batch_area += x * b
        g += k
        top = (g + 1) * n
        while running and running[0] < top:
            j = heappop(running) % n
            finish[j] = t
            used -= need[j]
            done += 1
            if issued < n:
                arrivals[issued] = x = t + t_req
                heappush(pending, (x, issued))
                issued += 1
    return first, finish, busy, batch_area


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
    lam = to(as_quantity(rate, "1/s", "rate"), "1/s")
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
    return ClosedForm(rate=lam, batch=b, ttft=to(ttft, "ms"), tpot=Q_(rep.step_time(b) * 1e3, "ms"))


def load_sweep(
    model: Model | str,
    gpu: GPU | str,
    *,
    prompt_tokens: float,
    answer_tokens: float,
    loads: Any = (0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98),
    requests: int = 10_000,
    seed: int = 0,
    prompt_cv: float = LENGTH_CV,
    answer_cv: float = LENGTH_CV,
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
    prompt_cv: float = LENGTH_CV,
    answer_cv: float = LENGTH_CV,
    chunk_tokens: int | None = None,
    prefix_hit_rate: float = 0.0,
    prefix_tokens: float = 0,
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
        chunk_tokens=chunk_tokens,
        prefix_hit_rate=prefix_hit_rate,
        prefix_tokens=prefix_tokens,
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
        chunk_tokens=chunk_tokens,
        replica=svc,
    )
    if cached > 0:
        run |= dict(prefix_hit_rate=1.0, prefix_tokens=cached)
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
