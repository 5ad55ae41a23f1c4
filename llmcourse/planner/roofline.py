"""Roofline helpers: arithmetic intensity, attainable FLOP/s and the decode crossover batch.

Built on :mod:`llmcourse.formulas` (section *Roofline*) and the planner; nothing here re-types
a formula. The crossover batch is the SymPy solution of decode memory time = compute time
(``FORMULAS["crossover_batch"]``).

Defined in the chapters *Decode* (``book/05_decode.md``) and *Batching* (``book/08_batching.md``).

Examples
--------
>>> import llmcourse as lc
>>> round(crossover_batch("Llama-3.1-8B", "H100 SXM", context_tokens=288), 1)
418.1
>>> first_compute_bound_batch("Llama-3.1-8B", "H100 SXM", context_tokens=288, attention_flops=True)
411
>>> crossover_batch("Llama-3.1-8B", "H100 SXM", context_tokens=2_304) is None
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model, gpus, models
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import checked
from llmcourse.replica.attention import decode_attention_flops_si
from llmcourse.replica.memory import kv_bytes_per_sequence
from llmcourse.replica.memory import weight_bytes as _weight_bytes
from llmcourse.replica.prefilling import prefill
from llmcourse.replica.step import decode_step, matmul_precision, weights_read_per_step
from llmcourse.units import Q_, as_quantity, to

__all__ = [
    "RooflinePoint",
    "WeightCeiling",
    "arithmetic_intensity",
    "attainable_flops",
    "crossover_batch",
    "decode_flops_per_token",
    "decode_point",
    "first_compute_bound_batch",
    "first_compute_bound_from",
    "prefill_point",
    "ridge_intensity",
    "weight_read_ceiling",
]


def _model(model: Model | str) -> Model:
    return model if isinstance(model, Model) else models[model]


def _gpu(gpu: GPU | str) -> GPU:
    return gpu if isinstance(gpu, GPU) else gpus[gpu]


def _roofs(
    gpu: GPU | str,
    assumptions: Assumptions | str | None,
    compute_precision: str | None,
    weight_bytes: Any,
    model: Model | None = None,
) -> tuple[GPU, Assumptions, str]:
    """The GPU, the assumptions and the matmul precision (of ``model``'s checkpoint where ``weight_bytes`` is None)."""
    g = _gpu(gpu)
    a = resolve(assumptions)
    return g, a, compute_precision or matmul_precision(weight_bytes, g, a, model)


@checked
def arithmetic_intensity(flops: pint.Quantity, bytes_moved: pint.Quantity) -> pint.Quantity:
    """FLOPs per byte moved.

    Examples
    --------
    >>> arithmetic_intensity(Q_(16.06, "GFLOP"), Q_(16.06, "GB"))
    <Quantity(1.0, 'FLOP / byte')>
    """
    return to(
        F["arithmetic_intensity"](
            flops_done=as_quantity(flops, "FLOP", "flops"), bytes_moved=as_quantity(bytes_moved, "B", "bytes_moved")
        ),
        "FLOP/B",
    )


@checked
def ridge_intensity(
    gpu: GPU | str,
    *,
    compute_precision: str | None = None,
    weight_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
) -> pint.Quantity:
    """The intensity where the memory roof meets the compute roof: below it a step is memory-bound.

    The efficiencies come from ``assumptions`` (the course's by default); the compute roof is the peak at the precision the matmuls of ``weight_bytes`` weights run at under those
    assumptions (BF16 for BF16 weights), or at ``compute_precision`` if named.

    Examples
    --------
    >>> round(ridge_intensity("H100 SXM").m)
    211
    >>> peaks = resolve().replace(bandwidth_efficiency=1, compute_efficiency=1)  # the datasheet's peaks
    >>> round(ridge_intensity("H100 SXM", assumptions=peaks).m)
    295
    >>> round(ridge_intensity("H100 SXM", weight_bytes="fp8").m)  # FP8 matmuls: twice the compute roof
    422
    """
    g, a, precision = _roofs(gpu, assumptions, compute_precision, weight_bytes)
    return to(
        F["ridge_intensity"](
            peak_flops=g.peak_flops(precision),
            bandwidth=g.bandwidth,
            compute_efficiency=a.compute_efficiency,
            bandwidth_efficiency=a.bandwidth_efficiency,
        ),
        "FLOP/B",
    )


@checked
def attainable_flops(
    gpu: GPU | str,
    intensity: Any,
    *,
    compute_precision: str | None = None,
    weight_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
) -> pint.Quantity:
    """The roofline: the lower of the compute roof and intensity x bandwidth (the roofs as in
    :func:`ridge_intensity`).

    Examples
    --------
    >>> attainable_flops("H100 SXM", Q_(1, "FLOP/B")).to("TFLOP/s")
    <Quantity(2.345, 'teraFLOP / second')>
    >>> attainable_flops("H100 SXM", Q_(1000, "FLOP/B")).to("TFLOP/s")
    <Quantity(494.5, 'teraFLOP / second')>
    """
    g, a, precision = _roofs(gpu, assumptions, compute_precision, weight_bytes)
    i = as_quantity(intensity, "FLOP/B", "intensity")
    return to(
        F["attainable_flops"](
            peak_flops=g.peak_flops(precision),
            bandwidth=g.bandwidth,
            intensity=i,
            compute_efficiency=a.compute_efficiency,
            bandwidth_efficiency=a.bandwidth_efficiency,
        ),
        "TFLOP/s",
    )


@dataclass(frozen=True)
class RooflinePoint:
    """A step placed on the roofline: its intensity and the FLOP/s it achieves."""

    label: str
    flops: pint.Quantity
    bytes_moved: pint.Quantity
    time: pint.Quantity

    @property
    def intensity(self) -> pint.Quantity:
        return arithmetic_intensity(self.flops, self.bytes_moved)

    @property
    def achieved(self) -> pint.Quantity:
        """FLOPs done over the step's time."""
        return to(self.flops / self.time, "TFLOP/s")


@checked
def decode_point(
    model: Model | str, gpu: GPU | str, *, batch: int = 1, context_tokens: float, **kwargs: Any
) -> RooflinePoint:
    """A decode step as a roofline point: its FLOPs over weight + KV bytes (see :func:`decode_step`).

    Examples
    --------
    >>> p = decode_point("Llama-3.1-8B", "H100 SXM", context_tokens=2_304)
    >>> round(p.intensity.m, 2)
    0.98
    """
    s = decode_step(model, gpu, batch=batch, context_tokens=context_tokens, **kwargs)
    return RooflinePoint(
        f"decode, batch {s.batch}", to(s.flops, "GFLOP"), to(s.weights_read + s.kv_read, "GB"), s.step_time
    )


@checked
def prefill_point(model: Model | str, gpu: GPU | str, prompt_tokens: float, **kwargs: Any) -> RooflinePoint:
    """A prefill as a roofline point: its FLOPs over one read of the weights.

    Examples
    --------
    >>> p = prefill_point("Llama-3.1-8B", "H100 SXM", 2_048)
    >>> round(p.intensity.m)
    2116
    """
    m = _model(model)
    p = prefill(m, gpu, prompt_tokens, **kwargs)
    w = _weight_bytes(m, kwargs.get("weight_bytes"))
    return RooflinePoint(f"prefill, {prompt_tokens:,.0f} tokens", to(p.flops, "GFLOP"), to(w, "GB"), p.time)


@checked
def decode_flops_per_token(
    model: Model | str,
    context_tokens: float,
    *,
    attention_flops: bool | None = None,
    assumptions: Assumptions | str | None = None,
) -> pint.Quantity:
    """FLOPs per generated token: the assumptions' FLOPs per active parameter (a multiply and an
    add, 2), plus attention at the context if the assumptions count it or ``attention_flops`` asks.

    Examples
    --------
    >>> round(decode_flops_per_token("Llama-3.1-8B", 288).to("GFLOP").m, 2)
    16.06
    >>> round(decode_flops_per_token("Llama-3.1-8B", 288, attention_flops=True).to("GFLOP").m, 3)
    16.211
    """
    m = _model(model)
    a = resolve(assumptions).replace(decode_attention_flops=attention_flops)
    per_param = Q_(a.flops_per_param, "FLOP")
    f = F["decode_flops_per_token"](flops_per_param=per_param, active_params=m.active_params)
    if a.decode_attention_flops:
        f = f + Q_(decode_attention_flops_si(m, context_tokens, a.flops_per_param), "FLOP")  # by layer type
    return to(f, "GFLOP")


@checked
def crossover_batch(
    model: Model | str,
    gpu: GPU | str,
    *,
    context_tokens: float,
    attention_flops: bool | None = None,
    n_gpus: int = 1,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    compute_precision: str | None = None,
    assumptions: Assumptions | str | None = None,
) -> float | None:
    """The batch at which a decode step's compute time equals its memory time, or ``None`` if
    there is none (each extra sequence adds more KV-read time than compute time).

    ``context_tokens`` is the context each sequence's KV is read at. The efficiencies, the FLOPs
    per parameter, whether attention FLOPs count and the matmul precision come from
    ``assumptions`` (the course's by default), the last two unless given (``attention_flops``,
    ``compute_precision``). ``n_gpus`` cancels: it divides both times. For a mixture-of-experts model the weights read depend on the batch; the solution is
    iterated to a fixed point.
    """
    m = _model(model)
    g, a, precision = _roofs(gpu, assumptions, compute_precision, weight_bytes, m)
    kv = kv_bytes_per_sequence(m, context_tokens, kv_bytes)
    f_tok = decode_flops_per_token(m, context_tokens, attention_flops=attention_flops, assumptions=a)
    args = dict(
        kv_per_sequence=kv,
        bandwidth=g.bandwidth,
        flops_per_token=f_tok,
        peak_flops=g.peak_flops(precision),
        bandwidth_efficiency=a.bandwidth_efficiency,
        compute_efficiency=a.compute_efficiency,
    )
    guess = 1
    for _ in range(50 if m.is_moe else 1):
        b = float(F["crossover_batch"](bytes_read=weights_read_per_step(m, guess, weight_bytes), **args).m)
        if b <= 0 or not math.isfinite(b):
            return None
        if max(1, math.ceil(b)) == guess:
            break
        guess = max(1, math.ceil(b))
    return b


def first_compute_bound_batch(model: Model | str, gpu: GPU | str, **kwargs: Any) -> int | None:
    """The smallest whole batch whose decode step is compute-bound (``None`` if there is none)."""
    return first_compute_bound_from(crossover_batch(model, gpu, **kwargs))


def first_compute_bound_from(b: float | None) -> int | None:
    """:func:`first_compute_bound_batch` from the crossover batch ``b`` (for a caller that has it already):
    the smallest whole batch above ``b`` (at least 1), ``None`` where there is no crossover.

    Examples
    --------
    >>> first_compute_bound_from(57.3), first_compute_bound_from(64.0), first_compute_bound_from(None)
    (58, 65, None)
    """
    if b is None:
        return None
    n = max(1, math.ceil(b))
    return n + 1 if n == b else n


@dataclass(frozen=True)
class WeightCeiling:
    """The pure weight-read model: each step reads the weights once and nothing else."""

    batch: int
    weights: pint.Quantity
    step_time: pint.Quantity
    tokens_per_s_per_user: pint.Quantity
    throughput: pint.Quantity


@checked
def weight_read_ceiling(
    model: Model | str,
    gpu: GPU | str,
    *,
    batch: int = 1,
    n_gpus: int = 1,
    weight_bytes: Any = None,
    assumptions: Assumptions | str | None = None,
) -> WeightCeiling:
    """Speed if a decode step only read the weights (no KV cache, no compute limit): the ceiling
    of a single stream, and a batch riding along for free, at the assumptions' bandwidth
    efficiency (the course's by default; ``assumptions="envelope"`` reads at the full datasheet
    bandwidth, the hard ceiling).

    Examples
    --------
    >>> c = weight_read_ceiling("Llama-3.1-8B", "H100 SXM", batch=8, assumptions="envelope")
    >>> round(c.tokens_per_s_per_user.m), round(c.throughput.m)
    (209, 1669)
    >>> round(weight_read_ceiling("Llama-3.1-8B", "H100 SXM").tokens_per_s_per_user.m)
    146
    """
    m, g = _model(model), _gpu(gpu)
    a = resolve(assumptions)
    w = _weight_bytes(m, weight_bytes)
    t = F["weight_read_time"](
        weights=w,
        n_gpus=n_gpus,
        bandwidth=g.bandwidth,
        bandwidth_efficiency=a.bandwidth_efficiency,
    )
    per_user = to(F["throughput"](batch=1, step_time=t), "1/s")
    return WeightCeiling(
        batch=int(batch),
        weights=to(w, "GB"),
        step_time=to(t, "ms"),
        tokens_per_s_per_user=per_user,
        throughput=to(F["throughput"](batch=batch, step_time=t), "1/s"),
    )
