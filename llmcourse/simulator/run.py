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
  course's method by default), and the efficiencies and the usable memory share may be
  overridden one by one; no modelling constant is set here.

The single-server queue's closed forms (M/M/1: utilisation, mean time in the system, the highest
rate for a mean-time target) are registered as formulas ``mm1_*`` (chapter section *10_queueing*);
:mod:`llmcourse.simulator.closed_form` puts the averages-only estimate beside a run.

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

import math
import random
import time
from dataclasses import dataclass, field
from itertools import accumulate
from operator import add, sub
from typing import Any

import pint

from llmcourse.catalog import GPU, Model
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import SYMBOLS, check_value
from llmcourse.replica.base import model_of
from llmcourse.simulator.events import _event_loop
from llmcourse.simulator.service import ServiceModel, _check_request, build_replica
from llmcourse.simulator.workload import LENGTH_CV, _drawn, _lengths, _prefill_costs, _prompts
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

__all__ = ["PERCENTILES", "SimResult", "simulate"]

PERCENTILES = (50, 95, 99)
#: Bounds on a simulation's size (not modelling constants): past a million requests a run takes minutes, and
#: below one request per 30 years the arrival times leave floating point.
_MOST_REQUESTS, _MOST_WHY = 1_000_000, " (a larger run takes minutes; the percentiles settle long before)"
_SLOWEST, _SLOWEST_WHY = 1e-9, " per second (about one request in 30 years)"
_MOST_CV, _CV_WHY = 100.0, " (a spread past 100 times the mean leaves floating point in the lognormal)"


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
    first, finish, busy, batch_area = _event_loop(
        rep, arrivals, clients, t_req, ans, need, tok_c, pre, work, budget, chunk
    )
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
