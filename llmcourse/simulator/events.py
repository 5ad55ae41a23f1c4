"""The discrete-event engine of the simulation: one replica doing continuous batching, as vLLM v1 and SGLang
schedule.

A waiting request is admitted, first come first served, when its prompt + answer tokens fit in what is left of the
replica's KV budget and the batch is below the engine's cap; its KV is reserved for the whole answer at admission
and freed when it finishes. An iteration then prefills the admitted prompts whole (decoding stalls meanwhile), or
with a token budget per iteration runs one mixed iteration (a token per running sequence, the rest to prompt
chunks, first come first served), or decodes the running batch. Times come from the service model's tables.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Sequence

from llmcourse.simulator.service import ServiceModel

__all__: list[str] = []


def _event_loop(
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
    the first ``clients`` requests arrive at the times given, and each finish sends the next request ``t_req`` later.

    Each pass is one event: the arrivals up to now join the queue and the queue is admitted; then one prefill
    iteration, or one mixed iteration of chunks, or as many decode steps of the running batch as pass before the next
    finish (or the next arrival, if one could start), in one jump (the step's time is constant until then); then the
    sequences that finished leave. Written for speed on plain lists and locals, with no call per event (the browser
    runs it at every change of a calculator): a running sequence is one int on the heap, ``(decode step at which it
    finishes) * n + request`` (a one-token answer finishes at its first token: at the step count of its prefill),
    and the open loop's arrivals end with an infinite sentinel.
    """
    n = len(arrivals)
    first, finish = [0.0] * n, [0.0] * n
    step_s, cap, w_read = rep.step_s, rep.batch_cap, rep.weight_read_s
    heappush, heappop, ceil, fsum, inf = heapq.heappush, heapq.heappop, math.ceil, math.fsum, math.inf
    waiting: deque[int] = deque()  # arrived, not admitted
    prefilling: deque[int] = deque()  # admitted, prompt not all prefilled yet (first come first served)
    admit, next_waiting, admitted = waiting.append, waiting.popleft, prefilling.append
    left = list(work)  # prompt tokens each still has to prefill
    running: list[int] = []  # heap of (decode-step count at which it finishes) * n + request
    closed = clients is not None
    issued = min(clients, n) if closed else n  # requests 0..issued-1 are on their way; the rest wait for a finish
    pending = sorted((arrivals[j], j) for j in range(issued)) if closed else []  # a closed loop's: (time, request)
    arr = [] if closed else [*arrivals, inf]  # the open loop's arrivals, then a sentinel
    t = busy = batch_area = 0.0
    i = done = g = used = 0  # next open-loop arrival; requests done; decode steps so far; KV tokens reserved
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
        if prefilling and chunk is None:  # whole prompts, decoding stalls: the first token of each
            x = pre[prefilling[0]] if len(prefilling) == 1 else fsum([pre[j] for j in prefilling])
            dt = x if x >= w_read else w_read  # max(x, w_read)
            t += dt
            busy += dt
            for j in prefilling:
                first[j] = t
                heappush(running, (g + ans[j] - 1) * n + j)
            prefilling.clear()
        elif prefilling and chunk - b >= 1:  # one mixed iteration: a token per running sequence, the rest to chunks
            room_t, ready, compute = chunk - b, 0, 0.0
            for j in prefilling:
                c = left[j] if left[j] < room_t else room_t
                compute += c * tok_c[j]
                left[j] -= c
                room_t -= c
                ready += left[j] == 0
                if room_t == 0:
                    break
            dt = step_s[b] + compute if b else max(compute, w_read)
            t += dt
            busy += dt
            batch_area += dt * b
            g += b > 0
            for _ in range(ready):  # the prompts prefilled to the end are the first in line: their first token
                j = prefilling.popleft()
                first[j] = t
                heappush(running, (g + ans[j] - 1) * n + j)
        else:  # decode steps only, as many as pass before the next finish (or the next arrival, if one could start)
            dt = step_s[b]
            k = 1 if prefilling else running[0] // n - g  # a budget all spent on decode tokens: one step, look again
            if not prefilling and not waiting and next_arrival != inf:
                m = ceil((next_arrival - t) / dt)
                if m < k:  # k = min(k, max(1, m))
                    k = m if m > 1 else 1
            x = k * dt
            t += x
            busy += x
            batch_area += x * b
            g += k
        top = (g + 1) * n  # the keys of the sequences that finish at step g or before
        while running and running[0] < top:
            j = heappop(running) % n
            finish[j] = t
            used -= need[j]
            done += 1
            if issued < n:  # a closed loop's client sends its next request
                arrivals[issued] = x = t + t_req
                heappush(pending, (x, issued))
                issued += 1
    return first, finish, busy, batch_area
