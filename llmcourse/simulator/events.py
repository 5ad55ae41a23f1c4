"""The discrete-event engine of the simulation: one replica doing continuous batching, as vLLM v1 and SGLang
schedule (:class:`Scheduler`: whole prompts or a token budget per iteration, and a prefix cache).

A waiting request is admitted, first come first served, when its prompt + answer tokens fit in what is left of the
replica's KV budget and the batch is below the engine's cap; its KV is reserved for the whole answer at admission
and freed when it finishes. An iteration then prefills the admitted prompts whole (decoding stalls meanwhile), or
with a token budget per iteration runs one mixed iteration (a token per running sequence, the rest to prompt
chunks, first come first served), or decodes the running batch. Times come from the service model's tables.

The loop (:func:`event_loop`) is written for speed on plain lists and locals, with no call per event (the browser
runs it at every change of a calculator). Each pass is one event: the arrivals up to now join the queue and the
queue is admitted; then one prefill iteration, or one mixed iteration of chunks, or as many decode steps of the
running batch as pass before the next finish (or the next arrival, if one could start), in one jump (the step's time
is constant until then); then the sequences that finished leave. A running sequence is one int on a heap,
``(decode step at which it finishes) * n + request`` (a one-token answer finishes with its first token, at the step
count of its prefill); the open loop's arrivals end with an infinite sentinel.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass

from llmcourse.errors import InputError
from llmcourse.simulator.service import ServiceModel, engine_chunk_tokens
from llmcourse.simulator.workload import Requests
from llmcourse.units import plain_number

__all__ = ["ENGINE_BUDGET", "Scheduler"]

#: ``Scheduler(chunk_tokens=ENGINE_BUDGET)``, the default: the engine's token budget per iteration
#: (:func:`~llmcourse.simulator.service.engine_chunk_tokens`: 8,192 under the course's method, whole prompts under the
#: sources' presets).
ENGINE_BUDGET = "engine"

_CHUNK_WHY = ": each iteration must make progress on a prompt (engines use 512 to 16,384)"


@dataclass(frozen=True)
class Scheduler:
    """How the engine schedules a replica's iterations, as vLLM v1 and SGLang do.

    ``chunk_tokens="engine"`` (the default) schedules by the engine's budget
    (:func:`~llmcourse.simulator.service.engine_chunk_tokens`: 8,192 tokens under the course's method, as vLLM,
    SGLang and TensorRT-LLM default to on H100-class GPUs; whole prompts under the sources' presets).
    ``chunk_tokens=None`` prefills newly admitted prompts whole while decoding stalls (no engine does this by default
    today); ``chunk_tokens=T`` gives every iteration a budget of ``T`` tokens, one per running sequence first and the rest to prompt chunks, first come
    first served (vLLM's ``max_num_batched_tokens``, SGLang's chunked prefill size); a mixed iteration takes the
    decode step of its running batch plus its chunks' compute. A prefix cache: a share ``prefix_hit_rate`` of
    requests find their first ``prefix_tokens`` tokens cached (at most all but the prompt's last token, which is
    computed to give the first answer token); those tokens are not prefilled, and their KV is held once for
    everyone, not per request.

    Examples
    --------
    >>> Scheduler(chunk_tokens=512, prefix_hit_rate=0.5, prefix_tokens=1_000)
    Scheduler(chunk_tokens=512, prefix_hit_rate=0.5, prefix_tokens=1000.0)
    >>> Scheduler().chunk_tokens
    'engine'
    >>> Scheduler(chunk_tokens=0)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: chunk_tokens must be greater than zero; got 0.
    >>> Scheduler(prefix_hit_rate=0.5)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: prefix_hit_rate=0.5 needs the cached prefix's length: give prefix_tokens (the system prompt's tokens, say), or prefix_hit_rate=0.
    """

    chunk_tokens: int | str | None = ENGINE_BUDGET
    prefix_hit_rate: float = 0.0
    prefix_tokens: float = 0

    def __post_init__(self) -> None:
        if isinstance(self.chunk_tokens, str):
            if self.chunk_tokens != ENGINE_BUDGET:
                raise InputError(
                    f"chunk_tokens={self.chunk_tokens!r}: give a number of tokens per iteration, "
                    f"{ENGINE_BUDGET!r} for the engine's budget, or None for whole prompts."
                )
        elif self.chunk_tokens is not None:
            chunk = int(plain_number(self.chunk_tokens, "chunk_tokens", integer=True, at_least=1, why=_CHUNK_WHY))
            object.__setattr__(self, "chunk_tokens", chunk)
        why = " (a share of requests)"
        hit = plain_number(self.prefix_hit_rate, "prefix_hit_rate", allow_zero=True, at_most=1, why=why)
        shared = plain_number(self.prefix_tokens, "prefix_tokens", allow_zero=True)
        if hit > 0 and shared < 1:
            raise InputError(
                f"prefix_hit_rate={hit:g} needs the cached prefix's length: give prefix_tokens (the system prompt's "
                "tokens, say), or prefix_hit_rate=0."
            )
        object.__setattr__(self, "prefix_hit_rate", hit)
        object.__setattr__(self, "prefix_tokens", shared)

    def for_replica(self, service: ServiceModel) -> Scheduler:
        """This scheduler with the engine's budget made a number (or None) for ``service``'s replica
        (:func:`~llmcourse.simulator.service.engine_chunk_tokens`); itself if its budget is already one."""
        if self.chunk_tokens != ENGINE_BUDGET:
            return self
        return Scheduler(engine_chunk_tokens(service), self.prefix_hit_rate, self.prefix_tokens)

    @property
    def resident_tokens(self) -> int:
        """The cached prefix's KV tokens, held once for every request (none without hits)."""
        return math.ceil(self.prefix_tokens) if self.prefix_hit_rate > 0 else 0


def start_request(
    j: int, t: float, g: int, first: list[float], running: list[int], ans: list[int], began: list[int], blocks: bool
) -> int:
    """Request ``j`` gets its first token at ``t`` (decode step ``g``) and joins the running heap, keyed by the step at
    which it finishes; on blocks in use, its first step is kept, and returned to be added to the running offset."""
    n = len(first)
    first[j] = t
    heapq.heappush(running, (g + ans[j] - 1) * n + j)
    if blocks:
        began[j] = g - 1
        return g - 1
    return 0


def fill_chunks(
    prefilling: deque[int],
    left: list[int],
    room: int,
    tok_c: list[float],
    skip: list[int],
    work: list[int],
    by_hand: bool,
) -> tuple[int, float, list[tuple[int, int]]]:
    """One iteration's prompt chunks, first come first served within ``room`` tokens: how many prompts it ends, and
    either their compute (a hand-set service model: ``by_hand``) or each chunk's (offset, tokens) for the engine's step.
    ``left`` (each prompt's tokens still to prefill) is updated in place."""
    ready, compute, parts = 0, 0.0, []
    for j in prefilling:
        c = left[j] if left[j] < room else room
        if by_hand:
            compute += c * tok_c[j]
        else:
            parts.append((skip[j] + work[j] - left[j], c))
        left[j] -= c
        room -= c
        ready += left[j] == 0
        if room == 0:
            break
    return ready, compute, parts


def event_loop(
    rep: ServiceModel, reqs: Requests, clients: int | None, t_req: float, budget: int, chunk: int | None
) -> tuple[list[float], list[float], float, float]:
    """First-token and finish times of every request, busy time and batch x time (see the module notes).

    ``reqs.arrivals`` are the engine's arrival times (open loop); with ``clients`` they are filled in as the loop
    runs: the first ``clients`` requests arrive at the times given, and each finish sends the next ``t_req`` later.
    """
    arrivals, ans, need, tok_c, pre = reqs.arrivals, reqs.ans, reqs.need, reqs.tok_c, reqs.pre
    n = len(arrivals)
    first, finish = [0.0] * n, [0.0] * n
    step_s, w_read, mixed = rep.step_s, rep.weight_read_s, rep.mixed
    blocks = rep.blocks  # admitted on the KV blocks in use (each its prompt now, then a token a step), or reserved
    cap = rep.running_cap
    hold = reqs.work if blocks else need  # what a request holds at admission
    skip = reqs.cached or [0] * n  # each prompt's cached tokens, before its first chunk
    began = [0] * n  # (blocks) the decode-step count at a request's first token, less one
    heappush, heappop, ceil, fsum, inf = heapq.heappush, heapq.heappop, math.ceil, math.fsum, math.inf
    waiting: deque[int] = deque()  # arrived, not admitted
    prefilling: deque[int] = deque()  # admitted, prompt not all prefilled yet (first come first served)
    admit, next_waiting, admitted = waiting.append, waiting.popleft, prefilling.append
    left = list(reqs.work)  # prompt tokens each still has to prefill
    running: list[int] = []  # heap of (decode-step count at which it finishes) * n + request
    closed = clients is not None
    issued = min(clients, n) if closed else n  # requests 0..issued-1 are on their way; the rest wait for a finish
    pending = sorted((arrivals[j], j) for j in range(issued)) if closed else []  # a closed loop's: (time, request)
    arr = [] if closed else [*arrivals, inf]  # the open loop's arrivals, then a sentinel
    t = busy = batch_area = 0.0
    i = done = g = used = off = 0  # next arrival; done; decode steps so far; KV tokens held at admission; (blocks) the
    # running requests' first steps added: they hold used + b * g - off tokens
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
            now = used + b * g - off if blocks else used
            while room > 0 and waiting and now + hold[waiting[0]] <= budget:
                j = next_waiting()
                used += hold[j]
                now += hold[j]
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
                off += start_request(j, t, g, first, running, ans, began, blocks)
            prefilling.clear()
        elif prefilling and chunk - b >= 1:  # one mixed iteration: a token per running sequence, the rest to chunks
            ready, compute, parts = fill_chunks(prefilling, left, chunk - b, tok_c, skip, reqs.work, mixed is None)
            # the engine's step (decode tokens and chunks in one pass, the weights read once), or a hand-set model's sum
            dt = mixed(b, tuple(parts)) if mixed is not None else step_s[b] + compute if b else max(compute, w_read)
            t += dt
            busy += dt
            batch_area += dt * b
            g += b > 0
            for _ in range(ready):  # the prompts prefilled to the end are the first in line: their first token
                off += start_request(prefilling.popleft(), t, g, first, running, ans, began, blocks)
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
            used -= hold[j]
            off -= began[j]
            done += 1
            if issued < n:  # a closed loop's client sends its next request
                arrivals[issued] = x = t + t_req
                heappush(pending, (x, issued))
                issued += 1
    return first, finish, busy, batch_area
