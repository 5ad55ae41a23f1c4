"""One replica's service times for a simulation run, tabulated once from the one replica model.

:func:`build_replica` asks :func:`llmcourse.replica.replica` for the decode step at a grid of batches (for the mean
request, the KV cache read at the context the assumptions say) and :func:`~llmcourse.replica.prefilling.prefill` for a
prompt's compute time at a grid of lengths, and keeps them in a :class:`ServiceModel`: the simulation reads its
tables, interpolated linearly between their points (exact for a dense model whose step stays memory-bound or
compute-bound, and for the prefill's compute per token, linear in the length). The capacity is the replica's
requests per second at the largest batch the memory and the batch cap allow. No modelling constant is set here:
they come from ``assumptions=`` (the course's method by default; the efficiencies and the usable memory share may
be overridden one by one).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model, gpus, models
from llmcourse.errors import InputError
from llmcourse.replica.base import gpu_of, model_of
from llmcourse.replica.deployment import Deployment
from llmcourse.replica.memory import max_batch
from llmcourse.replica.model import Replica, replica
from llmcourse.replica.prefilling import chunk_terms, prefill
from llmcourse.replica.step import decoder
from llmcourse.units import Q_, plain_number, to

__all__ = ["MixedSteps", "ServiceModel", "build_replica", "engine_chunk_tokens"]


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


class MixedSteps:
    """The time of an engine iteration that carries prompt chunks beside its decode tokens, from the one replica model:
    the decoder's ``mixed`` step (formula ``mixed_step_time``, with the step's fixed overhead and collectives: the
    weights read once for every token, then attention over every sequence's own KV), each chunk's attention FLOPs and
    the earlier KV it reads from :func:`~llmcourse.replica.prefilling.prompt_chunks` (the chunk ``[start, start + k)``
    of a prompt is the one chunk of a prompt of ``start + k`` tokens whose first ``start`` are done). vLLM's
    ``Scheduler.schedule`` (``vllm/v1/core/sched/scheduler.py``) and TensorRT-LLM's in-flight batching run such steps;
    a lone prompt's chunk is the same step with no decode tokens (its fixed overhead included).

    Each chunk's terms and each iteration's time are kept by their inputs (whole token counts): a run asks the same
    ones again and again (a fixed-length workload, the chunks of a long prompt)."""

    def __init__(self, deployment: Deployment, layout: Any, assumptions: Assumptions, kv_tokens: float,
                 precision: str) -> None:  # fmt: skip
        self._mixed = decoder(deployment, layout, assumptions, kv_tokens, precision).mixed
        self._chunk_terms = chunk_terms(deployment, layout, assumptions)  # prompt_chunks' terms of one chunk
        self._terms: dict[tuple[int, int], tuple[float, float]] = {}
        self._steps: dict[tuple, float] = {}

    def chunk(self, start: int, k: int) -> tuple[float, float]:
        """(attention FLOPs, earlier KV bytes read) of a prompt's tokens ``start`` to ``start + k``."""
        key = (start, k)
        got = self._terms.get(key)
        if got is None:
            att, kv = self._chunk_terms(start, k)  # prompt_chunks(d, lay, a, start + k, start, k)'s one chunk
            got = self._terms[key] = (k * att, kv)
        return got

    def __call__(self, batch: int, chunks: tuple[tuple[int, int], ...]) -> float:
        """Seconds of one iteration of ``batch`` decode tokens and the prompt chunks ``chunks`` ((start, tokens) each)."""
        key = (batch, chunks)
        got = self._steps.get(key)
        if got is None:
            c = att = kv = 0.0
            for start, k in chunks:
                a, r = self.chunk(start, k)
                c, att, kv = c + k, att + a, kv + r
            got = self._steps[key] = self._mixed(batch, c, att / c, kv, step_only=True)
            if len(self._steps) > 100_000:  # a long run of spread lengths: keep the memory bounded
                self._steps.clear()
        return got


@dataclass(frozen=True)
class ServiceModel:
    """The service times of one replica for a simulation run, tabulated once from the one replica
    model (:func:`llmcourse.replica.replica`): decode step time against batch, each prompt's prefill
    compute time against its length, one read of the weights, and the capacity."""

    model: str | Model  # a catalog model by its name; one of the reader's own (not in the catalog) itself
    gpu: str | GPU
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
    #: The most requests the replica runs at once for the mean request: what it admits (on the KV blocks in use under
    #: the course's method, at the final length under the sources' presets) within ``batch_cap``.
    admitted_batch: int | None = field(default=None, repr=False)  # None: batch_cap (a service model set by hand)
    #: The engine's iterations with prompt chunks (None: the sources' presets, whole prompts and no engine steps).
    mixed: MixedSteps | None = field(default=None, repr=False, compare=False)
    #: The engine's token budget per iteration (its scheduler's), or None for whole prompts.
    engine_budget: int | None = field(default=None, repr=False)

    @property
    def running_cap(self) -> int:
        """The most requests a simulation runs at once: the replica's admitted batch on the KV blocks in use, or
        ``batch_cap`` where requests reserve their final length (the KV budget then decides)."""
        return self.admitted_batch if self.blocks and self.admitted_batch is not None else self.batch_cap

    @property
    def blocks(self) -> bool:
        """Whether requests are admitted on the KV blocks in use (their prompt and the tokens decoded so far), as
        vLLM's and SGLang's paged caches are, rather than each reserving its final length. A service model set by hand
        (no admitted batch from the replica) reserves final lengths. The simulator does not preempt: the replica's
        admitted batch leaves the room the answers grow into (``admission_spreads`` spreads above the mean)."""
        return self.assumptions.admission == "blocks" and self.admitted_batch is not None

    def first_token_time(self, prompt_tokens: float) -> float:
        """Seconds from a lone request's admission to its first token: its prompt in chunks of the engine's budget,
        each an engine iteration of its own (with the step's fixed overhead); whole prompts: :meth:`prefill_time`."""
        if self.mixed is None or self.engine_budget is None:
            return self.prefill_time(prompt_tokens)
        total, start, p = 0.0, 0, math.ceil(prompt_tokens)
        while start < p:
            k = min(self.engine_budget, p - start)
            total += self.mixed(0, ((start, k),))
            start += k
        return total

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
        the slower of their compute time and one read of the weights (:func:`llmcourse.replica.prefilling.prefill`)."""
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


def engine_chunk_tokens(service: ServiceModel) -> int | None:
    """The token budget of one engine iteration on this replica, which a simulation schedules by when its scheduler
    says ``chunk_tokens="engine"`` (the default): decode tokens first, then prompt chunks. ``None``: prompts are
    prefilled whole.

    The one place the budget is read: the deployment's engine scheduler
    (:attr:`~llmcourse.replica.deployment.Deployment.scheduler`: vLLM's ``max_num_batched_tokens`` by default, 8,192 on
    an H100, 2,048 on an A100) under the course's method (``prefill_schedule="engine"``); whole prompts under the
    sources' presets, as their figures were made.

    Examples
    --------
    >>> engine_chunk_tokens(build_replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=2_000, answer_tokens=300))
    8192
    >>> engine_chunk_tokens(build_replica("Llama-3.1-8B", "A100 SXM 80GB", prompt_tokens=2_000, answer_tokens=300))
    2048
    >>> print(engine_chunk_tokens(build_replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=2_000, answer_tokens=300,
    ...                                         assumptions="lab")))
    None
    """
    return service.engine_budget


def check_request(prompt_tokens: float, answer_tokens: float, budget: int) -> None:
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
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    batch_cap: int = 256,
    assumptions: Assumptions | str | None = None,
) -> ServiceModel:
    """Tabulate one replica's service times from the one replica model (once per run), under
    ``assumptions`` (the course's method by default; a what-if is a changed object,
    ``assumptions=resolve("course").replace(bandwidth_efficiency=0.8)``).

    The step table runs from batch 1 to ``batch_cap`` (at most the KV budget, one token each); the
    prefill table from 1 token to the longest prompt there can be: the KV budget, capped at the model's
    ``max_position`` (a context beyond it is refused by :func:`~llmcourse.replica.prefilling.prefill`; Llama 3.1 8B
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
    check_request(p, a_, budget)
    cap = min(cap, budget)  # a batch beyond the KV budget (one token each) never runs: no table for it
    # a catalog model or GPU by its name (as the service model shows it), one of the reader's own by itself (a
    # config read from a file, a hand-made GPU: no name would find it again)
    base = dict(
        model=m.name if models.get(m.name) is m else m, gpu=g.name if gpus.get(g.name) is g else g, n_gpus=tp,
        batch_cap=cap, assumptions=a, weight_bytes=weight_bytes, kv_bytes=kv_bytes,
    )  # fmt: skip
    bgrid = _grid(cap)
    steps = tuple(float(to(_replica_at(base, b, p, a_).step.step_time, "s").m) for b in bgrid)
    table = tuple(_interp(b, bgrid, steps) for b in range(cap + 1))
    longest = min(budget, m.max_position or budget)  # no prompt is longer than the model's positions
    pgrid = tuple(sorted(set(map(float, _grid(longest, 32))) | {p}))
    pres = [prefill(m, g, t, n_gpus=tp, weight_bytes=weight_bytes, assumptions=a) for t in pgrid]
    top = _replica_at(base, None, p, a_)
    mixed, engine_budget = None, None
    if a.prefill_schedule == "engine":  # the course's method: the engine's steps, by its scheduler
        d = Deployment(m, g, tensor_parallel=tp, weight_bytes=weight_bytes, kv_bytes=kv_bytes)
        engine_budget = d.scheduler.token_budget
        mixed = MixedSteps(d, top.layout, a, top.kv_read_tokens, top.matmul)
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
        admitted_batch=min(cap, top.max_batch),
        mixed=mixed,
        engine_budget=engine_budget,
        **base,
    )
