"""A fleet of identical replicas behind a router: which replica each request goes to, and the replicas' queues.

A router sees each replica's state when a request arrives and picks one; the replica then schedules it exactly as
:func:`~llmcourse.simulator.events.event_loop` does for one replica (admission by KV memory, whole prompts or a token
budget per iteration, decode steps; :func:`fleet_loop` with one replica gives the same times to the last bit). The
routers (:data:`ROUTERS`), as the open-source routers run them:

* ``"random"``: a replica at random (SGLang router's ``random`` policy, ``sgl-router/src/policies/random.rs``). A
  Poisson stream split at random is a Poisson stream of 1/N the rate to each replica, so this is one replica at
  that rate: an **upper bound** on the wait, since it ignores what the router can see.
* ``"round_robin"``: each replica in turn (``round_robin.rs``; Dynamo's frontend default).
* ``"least_loaded"``: the replica with the fewest requests in it, waiting or running (join the shortest queue: the
  load-balancing fallback of SGLang's ``cache_aware`` policy, ``cache_aware.rs``; llm-d's ``queue-scorer``). The
  default of a percentile plan.
* ``"least_kv"``: the replica with the fewest KV tokens its requests will hold as a router can know them (each one's
  prompt and the mean answer: no router knows an answer's length before it ends): Dynamo's KV router's active-blocks
  cost (``lib/llm/src/kv_router``: potential active blocks), llm-d's
  ``kv-cache-utilization-scorer``.
* ``"power_of_two"``: two replicas at random, the one with fewer requests (``power_of_two.rs``).
* ``"least_cost"``: the replica with the lowest cost as NVIDIA Dynamo's KV router weighs it without a prefix cache
  (docs ``router-design``, "Potential New Prefill Blocks" and "Potential Decode Blocks"; ``lib/llm/src/kv_router``,
  ``DefaultWorkerSelector``): the prompt tokens it has still to prefill (those routed to it whose first token has not
  come, with the new one's), plus the KV tokens its requests will hold (``least_kv``'s count), at Dynamo's default
  weight of 1 (``overlap_score_weight``); a tie goes to one of the tied replicas at random. Counting the prefills a
  replica owes, it does not send a burst of prompts to the replica that just emptied, which the request counts of
  ``least_loaded`` do when every answer has the same length (the requests that arrived together finish together).
* ``"prefix_aware"``: SGLang's ``cache_aware`` policy. If the fleet is imbalanced (the most loaded replica holds more
  than ``balance_abs_threshold`` requests over the least loaded, and more than ``balance_rel_threshold`` times it),
  the least loaded; otherwise, for a request whose shared prefix is at least ``cache_threshold`` of its prompt, the
  least loaded replica that holds its prefix; otherwise the least loaded (SGLang takes the replica with the smallest
  cache tree there). llm-d's ``prefix-cache-scorer`` with its ``queue-scorer`` and Dynamo's KV router (overlap
  blocks against active blocks) weigh the same two things.

Each router counts a replica's requests as the open-source routers do: up at routing, down when the answer ends.
A prefix is held by a replica from the moment a request carrying it is routed there (as SGLang's router inserts it
in its tree at routing) and never evicted: the replica sets aside KV for every prefix of the workload, as one replica
with a prefix cache holds its prefix once. A request that finds its prefix skips its prefill and its reservation.
"""

from __future__ import annotations

import bisect
import difflib
import heapq
import math
import random
from collections import deque
from dataclasses import dataclass

from llmcourse.errors import UnknownNameError
from llmcourse.simulator.events import fill_chunks, start_request
from llmcourse.simulator.service import ServiceModel
from llmcourse.simulator.workload import Requests
from llmcourse.units import plain_number

__all__ = ["MOST_REPLICAS", "ROUTERS", "Fleet", "fleet_loop"]

#: The routers a fleet simulation knows, and what each does (see the module notes).
ROUTERS: dict[str, str] = {
    "random": "a replica at random (an upper bound on the wait: one replica at 1/N of the traffic)",
    "round_robin": "each replica in turn",
    "least_loaded": "the replica with the fewest requests in it (join the shortest queue)",
    "least_kv": "the replica with the fewest KV tokens its requests will hold (prompts and the mean answer)",
    "power_of_two": "of two replicas at random, the one with fewer requests",
    "least_cost": "the replica with the fewest prompt tokens still to prefill plus KV tokens held (Dynamo's KV "
    "router's cost), a tie at random",
    "prefix_aware": "the least loaded replica holding the request's prefix unless the fleet is imbalanced "
    "(SGLang's cache_aware)",
}
#: The most replicas a fleet simulation runs (the router reads every replica; a larger fleet is simulated as one
#: replica at its share of the traffic with ``router="random"``, or as many replicas as requests with
#: ``"least_loaded"``/``"least_kv"``/``"least_cost"``, where every request finds an idle one).
MOST_REPLICAS = 10_000


@dataclass(frozen=True)
class Fleet:
    """``replicas`` identical replicas behind a ``router`` (:data:`ROUTERS`), for
    :func:`~llmcourse.simulator.run.simulate` (``fleet=``) and a percentile plan's sizing.

    ``prefix_groups`` shared prefixes: the requests the scheduler says carry a prefix (``prefix_hit_rate``, of
    ``prefix_tokens``) each carry one of them, at random; a request finds its prefix cached when its replica holds it.
    ``balance_abs_threshold``, ``balance_rel_threshold`` and ``cache_threshold`` are the ``prefix_aware`` router's
    (SGLang router's defaults: 64, 1.5 and 0.3, ``sgl-router`` ``RouterConfig``).

    Examples
    --------
    >>> Fleet(20).router, Fleet(20, "least_kv").replicas
    ('least_loaded', 20)
    >>> Fleet(4, "least_load")
    Traceback (most recent call last):
    ...
    llmcourse.errors.UnknownNameError: no router named 'least_load'. Did you mean 'least_loaded'? Known: random, round_robin, least_loaded, least_kv, power_of_two, least_cost, prefix_aware.
    """

    replicas: int
    router: str = "least_loaded"
    prefix_groups: int = 1
    balance_abs_threshold: float = 64
    balance_rel_threshold: float = 1.5
    cache_threshold: float = 0.3

    def __post_init__(self) -> None:
        n = int(plain_number(self.replicas, "replicas", integer=True, at_most=MOST_REPLICAS))
        object.__setattr__(self, "replicas", n)
        if not isinstance(self.router, str) or self.router not in ROUTERS:
            close = difflib.get_close_matches(str(self.router), list(ROUTERS), n=1, cutoff=0.5)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise UnknownNameError(f"no router named {self.router!r}.{hint} Known: {', '.join(ROUTERS)}.")
        groups = int(plain_number(self.prefix_groups, "prefix_groups", integer=True))
        object.__setattr__(self, "prefix_groups", groups)
        for name in ("balance_abs_threshold", "balance_rel_threshold"):
            object.__setattr__(self, name, plain_number(getattr(self, name), name, allow_zero=True))
        cut = plain_number(self.cache_threshold, "cache_threshold", allow_zero=True, at_most=1)
        object.__setattr__(self, "cache_threshold", cut)

    def label(self) -> str:
        """The router in words, for a plan's output."""
        bound = " (an upper bound on the wait)" if self.router == "random" else ""
        return f"{self.replicas} replicas, router {self.router}{bound}"


class _ByCost:
    """The replicas by cost (least_cost's prefill owed plus KV held), kept as the costs change: the lowest cost and
    the replicas at it in replica order, without a pass over the whole fleet at each request (a sizing simulates
    fleets of thousands of replicas, most of them idle at the same cost).

    Examples
    --------
    >>> c = _ByCost(3)
    >>> c.set(0, 5), c.set(2, 5), c.lowest()
    (None, None, [1])
    >>> c.set(1, 5), c.lowest()
    (None, [0, 1, 2])
    """

    def __init__(self, k: int) -> None:
        self.cost = [0] * k
        self.at: dict[int, list[int]] = {0: list(range(k))}  # each cost held: its replicas, in replica order
        self.costs = [0]  # lazy min-heap of the costs held (a cost no longer held is dropped when it comes up)

    def set(self, r: int, cost: int) -> None:
        """Replica ``r``'s cost is now ``cost``."""
        old = self.cost[r]
        if cost == old:
            return
        same = self.at[old]
        del same[bisect.bisect_left(same, r)]
        if not same:
            del self.at[old]
        self.cost[r] = cost
        if cost in self.at:
            bisect.insort(self.at[cost], r)
        else:
            self.at[cost] = [r]
            heapq.heappush(self.costs, cost)

    def lowest(self) -> list[int]:
        """The replicas at the lowest cost, in replica order."""
        while self.costs[0] not in self.at:
            heapq.heappop(self.costs)
        return self.at[self.costs[0]]


class _Replicas:
    """The replicas' queues and the router's view of them, advanced one event at a time (see :func:`fleet_loop`)."""

    def __init__(
        self, rep: ServiceModel, reqs: Requests, fleet: Fleet, budget: int, chunk: int | None, hit: Requests | None
    ) -> None:
        k, n = fleet.replicas, len(reqs.arrivals)
        self.hit = hit
        self.rep, self.reqs, self.fleet, self.budget, self.chunk, self.n = rep, reqs, fleet, budget, chunk, n
        self.first, self.finish, self.left = [0.0] * n, [0.0] * n, list(reqs.work)
        self.need, self.work, self.tok_c, self.pre = list(reqs.need), list(reqs.work), list(reqs.tok_c), list(reqs.pre)
        self.waiting: list[deque[int]] = [deque() for _ in range(k)]
        self.prefilling: list[deque[int]] = [deque() for _ in range(k)]
        self.running: list[list[int]] = [[] for _ in range(k)]
        self.used, self.steps = [0] * k, [0] * k  # KV tokens held at admission; decode steps so far
        # (admission on the KV blocks in use) each request's first step less one, and their sum over each replica's
        # running requests: replica r's hold used[r] + len(running[r]) * steps[r] - off[r] tokens
        self.blocks = rep.blocks
        self.cap = rep.running_cap
        self.began, self.off = [0] * n, [0] * k
        self.cached = list(reqs.cached or [0] * n)
        self.clock = [0.0] * k  # when the replica's current iteration began
        self.plan: list[tuple] = [()] * k  # the current iteration: () when idle
        self.version = [0] * k  # an iteration's end on the event heap is stale once its replica's version moves on
        self.ends: list[tuple[float, int, int]] = []  # (end time, replica, version)
        self.busy = self.area = 0.0
        self.done = 0
        self.count, self.kv = [0] * k, [0] * k  # the router's view: requests in each replica, KV they will hold
        self.owed = [0] * k  # the prompt tokens routed to each replica whose first token has not come (least_cost)
        self.by_cost = _ByCost(k) if fleet.router == "least_cost" else None  # owed plus kv, by replica
        mean_answer = round(sum(reqs.ans) / n) if n else 0
        self.kv_seen = [w + mean_answer for w in reqs.work]  # a request's prompt and the mean answer
        self.by_count = [(0, r) for r in range(k)]  # lazy min-heaps of (load, replica)
        self.by_kv = [(0, r) for r in range(k)]
        self.most = [(0, r) for r in range(k)]  # lazy max-heap of (-requests, replica)
        self.held: list[set[int]] = [set() for _ in range(k)]
        self.holders: dict[int, list[int]] = {}  # the replicas holding each prefix
        self.rand = random.Random(f"router {fleet.router}").random
        # the heaps each router reads (one never read would only grow), decided once
        self.by_count_kept = fleet.router in ("least_loaded", "prefix_aware")
        self.by_kv_kept, self.most_kept = fleet.router == "least_kv", fleet.router == "prefix_aware"

    # -- the router ---------------------------------------------------------------------------------------------
    def _least(self, heap: list[tuple[int, int]], load: list[int]) -> int:
        while heap[0][0] != load[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0][1]

    def moved(self, r: int) -> None:
        """Replica ``r``'s load changed: its new entries on the router's heaps. The heaps are lazy (an entry whose
        load is no longer its replica's is dropped when it comes up), so one call after several changes leaves the
        router seeing what a call after each would."""
        if self.by_count_kept:
            heapq.heappush(self.by_count, (self.count[r], r))
        if self.by_kv_kept:
            heapq.heappush(self.by_kv, (self.kv[r], r))
        if self.by_cost is not None:
            self.by_cost.set(r, self.owed[r] + self.kv[r])
        if self.most_kept:
            heapq.heappush(self.most, (-self.count[r], r))

    def _prefix_aware(self, j: int, group: int, prompt: int) -> int:
        f, count = self.fleet, self.count
        low = self._least(self.by_count, count)
        while -self.most[0][0] != count[self.most[0][1]]:
            heapq.heappop(self.most)
        hi, lo = count[self.most[0][1]], count[low]
        if (hi - lo > f.balance_abs_threshold and hi > f.balance_rel_threshold * lo) or group < 0:
            return low
        if self.hit is not None and self.reqs.work[j] - self.hit.work[j] < f.cache_threshold * prompt:
            return low  # the shared prefix is too small a share of the prompt to follow
        holders = self.holders.get(group)
        return min(holders, key=count.__getitem__) if holders else low

    def _least_cost(self) -> int:
        """The replica with the lowest prefill owed plus KV held, one of the tied at random (Dynamo's selector)."""
        tied = self.by_cost.lowest()  # kept as owed and kv change (moved, first_token): the lowest cost's replicas
        return tied[int(self.rand() * len(tied))] if len(tied) > 1 else tied[0]

    def first_token(self, r: int, j: int) -> None:
        """Request ``j`` got its first token on replica ``r``: its prompt is no longer owed (Dynamo lowers a worker's
        prompt-side load when the first output token signals the prefill done)."""
        self.owed[r] -= self.work[j]
        if self.by_cost is not None:
            self.by_cost.set(r, self.owed[r] + self.kv[r])

    def route(self, j: int, group: int) -> int:
        """The replica request ``j`` goes to (``group``: its prefix, -1 for none)."""
        f, k = self.fleet, self.fleet.replicas
        if k == 1:
            return 0
        if f.router == "random":
            return int(self.rand() * k)
        if f.router == "round_robin":
            return j % k
        if f.router == "least_loaded":
            return self._least(self.by_count, self.count)
        if f.router == "least_kv":
            return self._least(self.by_kv, self.kv)
        if f.router == "least_cost":
            return self._least_cost()
        if f.router == "power_of_two":
            a = int(self.rand() * k)
            b = int(self.rand() * (k - 1))
            b += b >= a
            return a if self.count[a] <= self.count[b] else b
        return self._prefix_aware(j, group, self.reqs.work[j])

    # -- one replica's iterations, as event_loop runs them --------------------------------------------------------
    def start(self, r: int, t: float) -> None:
        """Begin replica ``r``'s next iteration at ``t`` (admit first), or leave it idle."""
        rep, n, need = self.rep, self.n, self.need
        waiting, prefilling, running = self.waiting[r], self.prefilling[r], self.running[r]
        b = len(running)
        self.clock[r] = t
        if waiting:
            room = self.cap - b - len(prefilling)
            hold = self.work if self.blocks else need
            now = self.used[r] + (b * self.steps[r] - self.off[r] if self.blocks else 0)
            while room > 0 and waiting and now + hold[waiting[0]] <= self.budget:
                j = waiting.popleft()
                self.used[r] += hold[j]
                now += hold[j]
                prefilling.append(j)
                room -= 1
        elif not b and not prefilling:
            self.plan[r] = ()
            return
        chunk = self.chunk
        if prefilling and chunk is None:
            pre = self.pre
            x = pre[prefilling[0]] if len(prefilling) == 1 else math.fsum([pre[j] for j in prefilling])
            plan: tuple = ("whole", x if x >= rep.weight_read_s else rep.weight_read_s)
        elif prefilling and chunk - b >= 1:
            ready, compute, parts = fill_chunks(
                prefilling, self.left, chunk - b, self.tok_c, self.cached, self.work, rep.mixed is None
            )
            if rep.mixed is not None:  # the engine's step (event_loop's): decode tokens and chunks in one pass
                dt = rep.mixed(b, tuple(parts))
            else:
                dt = rep.step_s[b] + compute if b else max(compute, rep.weight_read_s)
            plan = ("mixed", dt, b, ready)
        else:
            dt = rep.step_s[b]
            k = 1 if prefilling else running[0] // n - self.steps[r]
            plan = ("decode", dt, b, k, not prefilling and not waiting)
        self.plan[r] = plan
        self._push(r)

    def _push(self, r: int) -> None:
        """Replica ``r``'s current iteration's end on the event heap (its earlier one, if any, now stale)."""
        plan = self.plan[r]
        v = self.version[r] = self.version[r] + 1
        heapq.heappush(self.ends, (self.clock[r] + (plan[3] * plan[1] if plan[0] == "decode" else plan[1]), r, v))

    def cut(self, r: int, t: float) -> None:
        """A request reached replica ``r`` at ``t`` during a run of decode steps: end the run at the first step
        boundary after ``t``, so the next iteration can admit it (as event_loop cuts at the next arrival)."""
        plan = self.plan[r]
        if not plan:
            self.start(r, t)
            return
        if plan[0] != "decode" or not plan[4]:
            return
        _, dt, b, k, _ = plan
        m = math.ceil((t - self.clock[r]) / dt)
        self.plan[r] = ("decode", dt, b, (m if m > 1 else 1) if m < k else k, False)
        self._push(r)

    def end(self, r: int) -> None:
        """Replica ``r``'s iteration ends: its first tokens and finishes, then its next iteration."""
        plan, n, steps = self.plan[r], self.n, self.steps
        t = self.clock[r]
        prefilling, running = self.prefilling[r], self.running[r]
        ans = self.reqs.ans
        if plan[0] == "whole":
            t += plan[1]
            self.busy += plan[1]
            for j in prefilling:
                self.off[r] += start_request(j, t, steps[r], self.first, running, ans, self.began, self.blocks)
                self.first_token(r, j)
            prefilling.clear()
        elif plan[0] == "mixed":
            _, dt, b, ready = plan
            t += dt
            self.busy += dt
            self.area += dt * b
            steps[r] += b > 0
            for _ in range(ready):
                j = prefilling.popleft()
                self.off[r] += start_request(j, t, steps[r], self.first, running, ans, self.began, self.blocks)
                self.first_token(r, j)
        else:
            _, dt, b, k, _ = plan
            x = k * dt
            t += x
            self.busy += x
            self.area += x * b
            steps[r] += k
        top = (steps[r] + 1) * n
        if running and running[0] < top:
            hold, finish, began, kv_seen = (
                self.work if self.blocks else self.need,
                self.finish,
                self.began,
                self.kv_seen,
            )
            while running and running[0] < top:
                j = heapq.heappop(running) % n
                finish[j] = t
                self.used[r] -= hold[j]
                self.off[r] -= began[j]
                self.count[r] -= 1
                self.kv[r] -= kv_seen[j]
                self.done += 1
            self.moved(r)
        self.start(r, t)


def fleet_loop(
    rep: ServiceModel,
    reqs: Requests,
    fleet: Fleet,
    budget: int,
    chunk: int | None,
    hit: Requests | None = None,
    group: list[int] | None = None,
) -> tuple[list[float], list[float], float, float, list[int]]:
    """First-token and finish times of every request of an open loop served by ``fleet``, and the fleet's busy time and
    batch x time (summed over its replicas): :func:`~llmcourse.simulator.events.event_loop`'s, for a fleet; and the
    prompt tokens each request prefilled.

    ``hit`` (with ``group``, each request's prefix or -1) are the requests as they run when their replica holds their
    prefix; ``reqs`` as they run when it does not. Arrivals and iteration ends are taken in time order, an arrival
    first at a tie (event_loop admits the arrivals up to now before each iteration)."""
    state = _Replicas(rep, reqs, fleet, budget, chunk, hit)
    arrivals, n, ends = reqs.arrivals, len(reqs.arrivals), state.ends
    i = 0
    while state.done < n:
        if i < n and (not ends or arrivals[i] <= ends[0][0]):
            j, t = i, arrivals[i]
            i += 1
            g = group[j] if group is not None else -1
            r = state.route(j, g)
            if g >= 0 and hit is not None and g in state.held[r]:
                state.work[j], state.need[j], state.left[j] = hit.work[j], hit.need[j], hit.work[j]
                state.tok_c[j], state.pre[j] = hit.tok_c[j], hit.pre[j]
                state.cached[j] = hit.cached[j] if hit.cached else 0
            if g >= 0 and g not in state.held[r]:
                state.held[r].add(g)
                state.holders.setdefault(g, []).append(r)
            state.count[r] += 1
            state.kv[r] += state.kv_seen[j]
            state.owed[r] += state.work[j]
            state.waiting[r].append(j)
            state.moved(r)
            state.cut(r, t)
            continue
        _, r, version = heapq.heappop(ends)
        if version == state.version[r]:
            state.end(r)
    return state.first, state.finish, state.busy, state.area, state.work
