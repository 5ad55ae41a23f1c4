"""The requests a simulation run draws: their lengths, the prefix cache's hits, their arrival gaps, and what each
one costs to prefill.

Prompt and answer lengths are lognormal with the given means and coefficient of variation (``cv=0``: every request
the same length); an open loop's arrivals are a Poisson process (exponential gaps). Everything is drawn from
``random.Random(seed)`` in a fixed order, so the same seed gives the same requests; an open loop's draws do not
depend on the rate (the gaps are drawn at 1/s and divided by it), and the last few are kept for the next run at
another load (:func:`_drawn`).
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import add, mul, sub
from random import NV_MAGICCONST
from typing import Any

from llmcourse.simulator.service import ServiceModel

__all__ = ["LENGTH_CV", "poisson_gaps", "prompt_lengths"]

#: The spread of prompt and answer lengths a simulation draws when none is given: the coefficient of variation of
#: the lognormal (0.5: about one prompt in 23 is over twice the mean). A workload's figure, not a modelling
#: constant: measure your own traffic's and pass it (``prompt_cv=``, ``answer_cv=``).
LENGTH_CV = 0.5


def poisson_gaps(rng: random.Random, n: int) -> tuple[float, ...]:
    """``n`` gaps between Poisson arrivals at a rate of 1/s, drawn from ``rng``: ``-log(1 - U)``,
    ``random.expovariate``'s formula (the gap at rate r is this / r). An open loop's run draws its arrivals so, and so
    does a pool's (:func:`llmcourse.simulator.pool.simulate_pool`).

    Examples
    --------
    >>> u = random.Random(0).random()  # 0.8444...
    >>> poisson_gaps(random.Random(0), 3)[0] == -math.log(1 - u), round(-math.log(1 - u), 4)
    (True, 1.8606)
    """
    rand, log = rng.random, math.log
    return tuple([-log(1.0 - rand()) for _ in range(n)])


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


def _gaps_answers(
    rng: random.Random, n: int, answer: tuple[float, float], longest: int
) -> tuple[tuple[float, ...], list[int]]:
    """An open loop's first draws from its stream: the arrivals' gaps (at 1/s), then the answers' lengths."""
    gaps = poisson_gaps(rng, n)
    return gaps, _lengths(rng, *answer, n, longest // 2)


def prompt_lengths(
    seed: int, n: int, answer: tuple[float, float], prompt: tuple[float, float], longest: int
) -> list[int]:
    """The prompts' lengths an open loop of ``n`` requests draws from ``seed`` (no prefix cache): the same draws, in
    the same order, as :func:`open_loop` (gaps, answers, then prompts; ``answer`` and ``prompt`` are (mean, cv)), so a
    prefill pool simulated with ``seed`` (:func:`llmcourse.simulator.simulate_pool`) sees the prompts an aggregated
    fleet's run with the same seed sees, up to ``longest`` (the longest sequence held).

    Examples
    --------
    >>> prompt_lengths(0, 3, (300, 0), (2_000, 0), 100_000)
    [2000, 2000, 2000]
    >>> len(set(prompt_lengths(0, 1_000, (300, 0.5), (2_000, 0.5), 100_000))) > 500
    True
    """
    rng = random.Random(seed)
    _, ans = _gaps_answers(rng, n, answer, longest)
    return _lengths(rng, *prompt, n, longest - max(ans))


def _open_loop_draws(
    rep: ServiceModel,
    seed: int,
    n: int,
    answer: tuple[float, float],
    prompt: tuple[float, float],
    longest: int,
    hit: float,
    resident: int,
) -> tuple[Any, ...]:
    """What an open loop's run draws and derives from its seed, before the load: each arrival's gap at a rate of
    1/s (``-log(1 - U)``, ``random.expovariate``'s formula: the gap at rate r is this / r), then the answers'
    lengths, the prompts' and the prefix cache's hits (:func:`_prompts`), then the prefill work and times
    (:func:`_prefill_costs`). ``longest`` is the longest sequence the KV memory and the model's positions hold.
    The same numbers, drawn in the same order, at every load: :func:`_drawn` keeps the last few."""
    rng = random.Random(seed)
    gaps, ans = _gaps_answers(rng, n, answer, longest)
    pro, cached = _prompts(rng, *prompt, n, longest - max(ans), hit, resident)
    work, tok_c, pre = _prefill_costs(rep, pro, cached)
    need = list(map(add, work, ans))
    return (
        gaps,
        tuple(ans),
        tuple(work),
        tuple(need),
        tuple(tok_c),
        tuple(pre),
        None if cached is None else tuple(cached),
    )


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


@dataclass(frozen=True)
class Requests:
    """A run's requests, in order: the engine's arrival times (a closed loop's past its first clients are filled in
    as the run goes), each answer's length, the prompt tokens it prefills (the prefix cache's hits skip theirs), the
    KV tokens it reserves (those and its answer), and its prefill compute time per token and in all (s)."""

    arrivals: list[float]
    ans: Sequence[int]
    work: Sequence[int]
    need: Sequence[int]
    tok_c: Sequence[float]
    pre: Sequence[float]
    cached: Sequence[int] | None = None  # each prompt's tokens the prefix cache holds (None: none)


def open_loop(
    rep: ServiceModel,
    seed: int,
    n: int,
    answer: tuple[float, float],
    prompt: tuple[float, float],
    longest: int,
    hit: float,
    resident: int,
    rate: float,
) -> Requests:
    """Poisson arrivals at ``rate`` per second: the kept draws of :func:`_drawn`, their gaps divided by the rate."""
    gaps, ans, work, need, tok_c, pre, cached = _drawn(rep, seed, n, answer, prompt, longest, hit, resident)
    return Requests(list(accumulate([x / rate for x in gaps])), ans, work, need, tok_c, pre, cached)


def closed_loop(
    rep: ServiceModel,
    seed: int,
    n: int,
    answer: tuple[float, float],
    prompt: tuple[float, float],
    longest: int,
    hit: float,
    resident: int,
    clients: int,
) -> Requests:
    """A closed loop of ``clients``: the answers' lengths, then the first clients' arrival times, then the prompts.

    The clients start spread at random over one request's time at the full batch (its prefill and its answer):
    started together, identical requests would run in lockstep, every prefill queued behind all the others, as no
    engine shows. The later requests' arrival times are the engine's to fill in (0 until then)."""
    rng = random.Random(seed)
    (a, acv), (p, pcv) = answer, prompt
    ans = _lengths(rng, a, acv, n, longest // 2)
    alone = rep.prefill_compute_time(p) + a * rep.step_time(min(clients, rep.batch_cap))
    arrivals = [rng.uniform(0, alone) if j < clients else 0.0 for j in range(n)]
    pro, cached = _prompts(rng, p, pcv, n, longest - max(ans), hit, resident)
    work, tok_c, pre = _prefill_costs(rep, pro, cached)
    return Requests(arrivals, ans, work, list(map(add, work, ans)), tok_c, pre, cached)


@dataclass(frozen=True)
class GroupedRequests:
    """An open loop's requests for a fleet whose prompts start with one of a few shared prefixes: ``miss`` as if no
    replica held a request's prefix, ``hit`` as if its replica did (the prefix's tokens not prefilled, nor reserved:
    the replica holds them once), and each request's prefix ``group`` (-1: none)."""

    miss: Requests
    hit: Requests
    group: list[int]


def grouped_open_loop(
    rep: ServiceModel,
    seed: int,
    n: int,
    answer: tuple[float, float],
    prompt: tuple[float, float],
    longest: int,
    share: float,
    prefix: int,
    rate: float,
    groups: int,
) -> GroupedRequests:
    """:func:`open_loop`'s requests, the same draws in the same order (a share ``share`` of them carry a prefix of
    ``prefix`` tokens), each carrier given one of ``groups`` prefixes, uniformly, from a stream of its own (``seed``
    and "groups"): the lengths and arrivals are those of the run without groups."""
    rng = random.Random(seed)
    rand, log = rng.random, math.log
    gaps = [-log(1.0 - rand()) for _ in range(n)]
    ans = _lengths(rng, *answer, n, longest // 2)
    pro, cached = _prompts(rng, *prompt, n, longest - max(ans), share, prefix)
    arrivals = list(accumulate([x / rate for x in gaps]))
    work, tok_c, pre = _prefill_costs(rep, pro, cached)
    hit = Requests(arrivals, ans, work, list(map(add, work, ans)), tok_c, pre, cached)
    work, tok_c, pre = _prefill_costs(rep, pro, None)
    miss = Requests(list(arrivals), ans, work, list(map(add, work, ans)), tok_c, pre)
    pick = random.Random(f"{seed} groups").randrange
    group = [pick(groups) if c > 0 else -1 for c in cached or [0] * n]
    return GroupedRequests(miss, hit, group)
