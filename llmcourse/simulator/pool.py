"""A pool of servers that each serve one request at a time, first come first served: the prefill pool of a
disaggregated deployment (chapter *Disaggregated serving*), where a prompt waits for a free prefill replica.

With Poisson arrivals and a fixed service time it is the M/D/c queue; given each request's own service time (a
prompt's prefill at its own length) it is the M/G/c queue. Its mean wait has Sakasegawa's closed-form
approximation (``FORMULAS["mdc_wait"]``), but a product's target is a percentile, and a percentile of the wait has
no closed form: this module simulates the queue. Each arrival takes the server that frees first (the
Kiefer-Wolfowitz recursion: keep the ``c`` servers' free times; a request starts at the later of its arrival and
the earliest free time, and that server is next free one service later). That is a prefill pool fed from one
queue, as NVIDIA Dynamo's first disaggregation design ran it (prefill workers pulling from a shared ``PrefillQueue``,
docs ``design_docs/disagg_serving``); its ``PrefillRouter`` and llm-d's inference scheduler now pick a prefill worker
by load, which a router that sends each prompt to the worker free first matches.

The arrivals are the simulator's own (:func:`llmcourse.simulator.workload.poisson_gaps`, the gaps an open-loop run
draws from its seed), so a pool and a replica's run with the same seed see the same arrival times.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import pint

from llmcourse.errors import InputError
from llmcourse.simulator.run import MOST_REQUESTS, MOST_REQUESTS_WHY
from llmcourse.simulator.workload import poisson_gaps
from llmcourse.stats import sorted_percentile
from llmcourse.units import Q_, as_quantity, percentile_rank, plain_number, seed_number, to

__all__ = ["PoolRun", "simulate_pool"]


@dataclass(frozen=True)
class PoolRun:
    """What a simulated pool's requests waited for a free server (seconds, sorted), each one's time through the pool
    (its wait, its service and the time given after it, sorted on its own), and the run that drew them."""

    servers: int
    utilisation: float
    waits_s: tuple[float, ...]
    requests: int
    seed: int
    through_s: tuple[float, ...] = ()

    @property
    def mean_wait(self) -> pint.Quantity:
        """The mean wait over the run's requests."""
        return Q_(math.fsum(self.waits_s) / len(self.waits_s), "s")

    def wait_at(self, q: float) -> pint.Quantity:
        """The ``q``-th percentile of the wait (linear between the nearest ranks, as numpy's default)."""
        return Q_(sorted_percentile(self.waits_s, percentile_rank(q, "q")), "s")

    def through_at(self, q: float) -> pint.Quantity:
        """The ``q``-th percentile of a request's time through the pool: its wait, its service and its time after."""
        return Q_(sorted_percentile(self.through_s, percentile_rank(q, "q")), "s")


def simulate_pool(
    rate: pint.Quantity,
    service_time: pint.Quantity,
    servers: int,
    *,
    requests: int = 4_000,
    seed: int = 0,
    service_times: Sequence[float] | None = None,
    after: Sequence[float] | float = 0.0,
) -> PoolRun:
    """Simulate ``requests`` Poisson arrivals at ``rate`` at ``servers`` servers that each serve one request at a
    time in ``service_time`` (first come, first served): the M/D/c queue. The same seed gives the same run.

    ``service_times`` (seconds, one per request in arrival order) gives each request its own service: the M/G/c
    queue, its load the rate times their mean (``service_time`` then only names the run's typical request).
    ``after`` (seconds, one per request or one for all) is added to each request's wait and service in
    :attr:`PoolRun.through_s`: a prefill pool's KV hand-off, which holds no server.

    Examples
    --------
    One server busy 80% of the time: the Pollaczek-Khinchine mean wait of M/D/1 is rho t / (2 (1 - rho)) =
    0.8 x 100 / 0.4 = 200 ms; a run of 100,000 requests comes within a few percent of it.

    >>> run = simulate_pool(Q_(8, "1/s"), Q_(100, "ms"), 1, requests=100_000)
    >>> 0.95 < (run.mean_wait / Q_(200, "ms")).to("").m < 1.05
    True
    >>> run.wait_at(99) > 4 * run.mean_wait  # the tail: a p99 several times the mean
    True

    Requests served in 50 ms or 150 ms, at random (independent of each other, as M/G/1 asks), load the server as
    100 ms each do, but wait longer: the
    Pollaczek-Khinchine mean wait is lambda E[S^2] / (2 (1 - rho)) = 8 x 0.0125 / 0.4 = 250 ms (E[S^2] = (0.05^2 +
    0.15^2) / 2 = 0.0125 s^2), against 200 ms for the fixed 100 ms.

    >>> rng = random.Random(1)
    >>> times = [rng.choice((0.05, 0.15)) for _ in range(100_000)]
    >>> run = simulate_pool(Q_(8, "1/s"), Q_(100, "ms"), 1, requests=100_000, service_times=times)
    >>> 0.95 < (run.mean_wait / Q_(250, "ms")).to("").m < 1.05, round(run.utilisation, 2)
    (True, 0.8)
    >>> simulate_pool(Q_(20, "1/s"), Q_(100, "ms"), 2)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: servers=2 serving 20 requests/s of 100 ms each would be busy 100% of the time, so the queue grows without end: give at least 3 servers.
    """
    lam = float(to(as_quantity(rate, "1/s", "rate"), "1/s").m)
    plain_number(lam, "rate")
    t = float(to(as_quantity(service_time, "s", "service_time"), "s").m)
    plain_number(t, "service_time")
    c = int(plain_number(servers, "servers", integer=True))
    n = int(plain_number(requests, "requests", integer=True, at_most=MOST_REQUESTS, why=MOST_REQUESTS_WHY))
    seed_number(seed)
    if service_times is not None:
        times = [float(x) for x in service_times]
        if len(times) != n or not all(x > 0 for x in times):
            raise InputError(
                f"service_times must give each of the {n:,} requests a positive service time in seconds; got "
                f"{len(times):,} times{'' if all(x > 0 for x in times) else ', not all positive'}."
            )
        t = math.fsum(times) / n
    rho = lam * t / c
    if rho >= 1:
        raise InputError(
            f"servers={c} serving {lam:g} requests/s of {t * 1e3:,.0f} ms each would be busy {rho:.0%} of the time, "
            f"so the queue grows without end: give at least {math.floor(lam * t) + 1} servers."
        )
    arrivals = accumulate(g / lam for g in poisson_gaps(random.Random(seed), n))
    service = [t] * n if service_times is None else times
    waits = _waits(arrivals, service, c)
    then = [float(after)] * n if isinstance(after, (int, float)) else [float(x) for x in after]
    if len(then) != n:
        raise InputError(f"after must give one time for all requests or one for each of the {n:,}; got {len(then):,}.")
    through = [w + s + x for w, s, x in zip(waits, service, then, strict=True)]
    return PoolRun(c, rho, tuple(sorted(waits)), n, int(seed), tuple(sorted(through)))


def _waits(arrivals: Any, service: Sequence[float], c: int) -> list[float]:
    """Each arrival's wait at ``c`` servers, the k-th request served in ``service[k]``, first come first served
    (Kiefer-Wolfowitz)."""
    free = [0.0] * c  # a heap of the servers' next free times
    waits = []
    for arrive, t in zip(arrivals, service, strict=False):
        start = max(arrive, free[0])
        waits.append(start - arrive)
        heapq.heapreplace(free, start + t)
    return waits
