"""Prefill: the time to read a prompt and make its KV cache (chapter *Prefill*)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import checked, si
from llmcourse.replica.attention import prefill_attention_flops_si
from llmcourse.replica.base import FLOP_TO_TFLOP, MS_TO_S, S_TO_MS, check_positions, gpu_of, model_of, replaced
from llmcourse.replica.deployment import Deployment
from llmcourse.replica.memory import fitted_layout, kv_copies_si, kv_sequence_si, weights_si
from llmcourse.replica.parallel import Layout, comm_seconds_of, send_seconds
from llmcourse.replica.step import matmul_precision
from llmcourse.units import (
    MS,
    TFLOP,
    plain_number,
    quantity,
)


# --- prefill ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Prefill:
    """Prefill of ``prompts`` prompts of ``prompt_tokens`` tokens, processed together."""

    prompts: int
    flops: pint.Quantity
    attention_flops: pint.Quantity
    compute_time: pint.Quantity
    memory_time: pint.Quantity
    time: pint.Quantity
    comm_time: pint.Quantity | None = None

    @property
    def bound(self) -> str:
        return "compute" if self.compute_time >= self.memory_time else "memory"


@checked
def prefill(
    model: Model | str,
    gpu: GPU | str,
    prompt_tokens: float,
    *,
    prompts: int = 1,
    n_gpus: int = 1,
    weight_bytes: Any = None,
    attention: bool | None = None,
    compute_precision: str | None = None,
    cached_tokens: float = 0,
    assumptions: Assumptions | str | None = None,
    data_parallel: int = 1,
    pipeline_parallel: int = 1,
    expert_parallel: int | None = None,
    link: Any = None,
    engine: str | None = None,
) -> Prefill:
    """Prefill time: the slower of the FLOPs (``flops_per_param`` per active parameter per token,
    plus the causal attention term if the assumptions count it) and one read of the weights.
    With ``cached_tokens`` of the prompt already in a prefix cache, only the rest is computed: the
    FLOPs of the whole prompt less those of its cached prefix (the new tokens still attend to it).
    Keyword arguments left at ``None`` come from ``assumptions``.

    On several GPUs (``n_gpus`` per tensor-parallel group, and the other degrees as in
    :func:`decode_step`): one prompt runs on one group, through the stages one after the other;
    several prompts spread over every GPU, a pipeline's stages idling for its bubble. With
    ``communication`` in the assumptions, the prompt tokens' collectives are added (at prefill their
    bytes, not their latency, are what counts). ``engine`` (vLLM by default) reads the GPU's memory for the check
    that the weights fit at all (llama.cpp's as GiB).

    Examples
    --------
    >>> p = prefill("Llama-3.1-8B", "H100 SXM", 2_048)
    >>> round(p.compute_time.to(MS).m, 1), round(p.memory_time.to(MS).m, 1), p.bound
    (68.7, 6.8, 'compute')
    """
    d = Deployment(
        model_of(model),
        gpu_of(gpu),
        n_gpus,
        pipeline_parallel,
        data_parallel,
        expert_parallel,
        link,
        weight_bytes,
        engine=engine,
    )
    check_positions(d.model, prompt_tokens, "prompt_tokens")
    lay = fitted_layout(d, assumptions)
    a = replaced(resolve(assumptions), prefill_attention=attention)
    precision = compute_precision or matmul_precision(weight_bytes, d.gpu, a, d.model)
    return prefiller(d, lay, a, prompt_tokens, cached_tokens, precision)(prompts)


def prefiller(
    d: Deployment, lay: Layout, a: Assumptions, prompt_tokens: float, cached_tokens: Any, precision: str
) -> Callable[[float, bool], Prefill | float]:
    """:func:`prefill` of ``d`` on its layout ``lay`` (checked) as a function of the number of prompts (and
    ``time_only``: only its time, in seconds, as a plain float): the formulas by value, on plain floats in their
    symbols' units, the units attached to the result; one prompt's FLOPs and the roofs worked out once, each call
    computing only what the number of prompts changes, to the same floats."""
    m, g, weight_bytes = d.model, d.gpu, d.weight_bytes
    t, pp = prompt_tokens, lay.pipeline_parallel
    cached = plain_number(cached_tokens, "cached_tokens", allow_zero=True)
    if cached >= t:
        raise InputError(f"cached_tokens ({cached:g}) must be fewer than prompt_tokens ({t:g}): at least one is new.")
    per_param = a.flops_per_param

    def flops_of(tokens: float) -> tuple[float, float]:
        if tokens == 0:
            return 0, 0
        linear = F["prefill_flops_linear"].value(
            flops_per_param=per_param, params=m.active_params, prompt_tokens=tokens
        )
        return linear, linear + prefill_attention_flops_si(m, tokens, per_param)  # attention by layer type

    (lin_t, full_t), (lin_c, full_c) = flops_of(t), flops_of(cached)
    linear, full = lin_t - lin_c, full_t - full_c
    flops = full if a.prefill_attention else linear
    peak = si(g.peak_flops(precision), "peak_flops")
    weights = weights_si(m, weight_bytes)
    bandwidth = si(g.bandwidth, "bandwidth")
    prefill_time, with_overhead = F["prefill_time"].value, F["step_with_overhead"].value
    comm_of = comm_seconds_of(m, lay, a)  # comm_seconds(m, lay, ., a)

    def of(prompts: float, time_only: bool = False) -> Prefill | float:
        n = prompts
        gpus_ = lay.tensor_parallel if n == 1 else lay.n_gpus  # one prompt: one group; more: every GPU
        eta_f, eta_b = a.compute_efficiency, a.bandwidth_efficiency
        time = prefill_time(
            prompts=n, prefill_flops=flops, n_gpus=gpus_, peak_flops=peak, compute_efficiency=eta_f, weights=weights,
            bandwidth=bandwidth, bandwidth_efficiency=eta_b,
        )  # fmt: skip
        comm = S_TO_MS * comm_of(n * (t - cached))  # ms
        if pp > 1 and n == 1:  # through the stages in turn, a send between each two
            send = send_seconds(m, lay, t - cached, a)
            comm = comm + (pp - 1) * (0 if send is None else send * S_TO_MS)
        elif pp > 1:  # the stages work at once, each on its layers' collectives, and idle for the bubble
            comm = comm / pp
            bubble = F["pipeline_bubble"].value(stages=pp, micro_batches=n)
            time = F["pipelined_prefill_time"].value(prefill_time=time, bubble=bubble)
        total = with_overhead(step_time=time, step_overhead=comm * MS_TO_S)
        if time_only:
            return total
        comp = dict(prompts=n, prefill_flops=flops, n_gpus=gpus_, peak_flops=peak, compute_efficiency=eta_f)
        mem = dict(weights=weights, n_gpus=gpus_, bandwidth=bandwidth, bandwidth_efficiency=eta_b)
        return Prefill(
            prompts=int(n),
            flops=quantity(n * flops * FLOP_TO_TFLOP, TFLOP._units),
            attention_flops=quantity(n * (full - linear) * FLOP_TO_TFLOP, TFLOP._units),
            compute_time=quantity(F["prefill_compute_time"].value(**comp) * S_TO_MS, MS._units),
            memory_time=quantity(F["weight_read_time"].value(**mem) * S_TO_MS, MS._units),
            time=quantity(total * S_TO_MS, MS._units),
            comm_time=quantity(comm, MS),
        )

    return of


# --- prefill as an engine schedules it ----------------------------------------------------------------
def prompt_chunks(
    d: Deployment, lay: Layout, a: Assumptions, prompt_tokens: float, cached_tokens: float, room: float
) -> list[tuple[float, float, float]]:
    """A prompt's new tokens in chunks of at most ``room`` tokens (what a step's token budget leaves beside its
    decode tokens), in order: (tokens, attention FLOPs per token of the chunk, KV bytes of its prompt's earlier
    tokens the chunk reads). A chunk attends to everything before it: its attention FLOPs are the causal term of
    formula ``prefill_flops`` at its end less that at its start (0 when the assumptions leave it out), and it reads
    the earlier tokens' KV once (every copy the replica keeps).

    Examples
    --------
    >>> from llmcourse.assumptions import resolve
    >>> from llmcourse.replica.parallel import layout
    >>> d = Deployment("Llama-3.1-8B", "H100 SXM")
    >>> chunks = prompt_chunks(d, layout(d.model, d.gpu), resolve(), 5_000, 0, 2_048)
    >>> [int(c[0]) for c in chunks], chunks[0][2]
    ([2048, 2048, 904], 0.0)
    """
    terms = chunk_terms(d, lay, a)
    out, start, step = [], float(cached_tokens), max(1, int(room))
    while start < prompt_tokens:
        n = min(step, prompt_tokens - start)
        out.append((n, *terms(start, n)))
        start += n
    return out


def chunk_terms(d: Deployment, lay: Layout, a: Assumptions) -> Callable[[float, float], tuple[float, float]]:
    """The terms of :func:`prompt_chunks`' chunks as a function of a chunk (its first token ``start``, its ``n``
    tokens): (attention FLOPs per token of the chunk, KV bytes of its prompt's earlier tokens the chunk reads). The
    causal attention FLOPs of a prompt's first t tokens and the KV bytes before each start are kept by t and start (a
    prompt's next chunk starts where the last ended; a simulation asks the same ones again and again).

    Examples
    --------
    >>> from llmcourse.assumptions import resolve
    >>> from llmcourse.replica.parallel import layout
    >>> d = Deployment("Llama-3.1-8B", "H100 SXM")
    >>> terms = chunk_terms(d, layout(d.model, d.gpu), resolve())
    >>> terms(2_048, 2_048) == prompt_chunks(d, layout(d.model, d.gpu), resolve(), 4_096, 2_048, 2_048)[0][1:]
    True
    """
    m = d.model
    copies = kv_copies_si(m, lay.tensor_parallel, a)
    per = a.flops_per_param
    causal: dict[float, float] = {}
    earlier: dict[float, float] = {}

    def attention(t: float) -> float:  # the causal attention FLOPs of a prompt's first t tokens
        if t <= 0 or not a.prefill_attention:
            return 0.0
        got = causal.get(t)
        if got is None:
            kw = dict(flops_per_param=per, params=m.active_params, prompt_tokens=t)
            full = F["prefill_flops"].value(**kw, layers=m.layers, heads=m.heads, head_dim=m.head_dim)
            got = causal[t] = full - F["prefill_flops_linear"].value(**kw)
        return got

    def terms(start: float, n: float) -> tuple[float, float]:
        start = float(start)
        if start > 0:
            kv = earlier.get(start)
            if kv is None:
                kv = earlier[start] = kv_sequence_si(m, start, d.kv_bytes) * copies
        else:
            kv = 0.0
        return (attention(start + n) - attention(start)) / n, kv

    return terms


def separate_prefill_s(of: Callable[[float, bool], Prefill | float], prompts: float, new_tokens: float, budget: int,
                       step_overhead_s: float) -> float:  # fmt: skip
    """Seconds to prefill ``prompts`` prompts of ``new_tokens`` new tokens each, in prefill batches of their own of at
    most ``budget`` tokens (SGLang without mixed chunks: ``Scheduler.get_new_batch_prefill`` takes prompts up to
    ``chunked_prefill_size``, chunking the last): ``ceil(prompts x new_tokens / budget)`` forward passes, each with
    its share of the prompts (``of``: :func:`prefiller`'s function of the number of prompts) and the step's fixed
    overhead (formula ``step_with_overhead``)."""
    passes = math.ceil(prompts * new_tokens / budget)
    each = of(prompts / passes, True)
    return passes * F["step_with_overhead"].value(step_time=each, step_overhead=step_overhead_s)
