"""The planner: composes the formulas into the estimates the chapters teach.

Nothing here re-types a formula: every number comes from :data:`llmcourse.formulas.FORMULAS`.
Each function accepts a catalog name or a :class:`~llmcourse.catalog.Model` /
:class:`~llmcourse.catalog.GPU`, checks its inputs and returns quantities with units.

* :func:`traffic` - requests to tokens per second (chapter *Tokens*).
* :func:`weight_bytes`, :func:`kv_bytes_per_token`, :func:`kv_bytes_per_sequence`,
  :func:`max_batch` - memory (chapters *Weights*, *KV cache*).
* :func:`decode_step`, :func:`prefill`, :func:`request_cycle` - speed (chapters *Decode*,
  *Prefill*, *Batching*).
* :func:`serving_plan` - the whole-table method of the first seed text.
* :func:`replica`, :func:`fleet`, :func:`prefill_pool` - the roofline sizing method.
* :class:`Brief`, :func:`plan` - the design planner used by the capstone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pint

from llmcourse._arith import _at_most, _greater, _over, _plus, _times
from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model, bytes_per_value, gpus, models
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import SYMBOLS, check_value, checked, si
from llmcourse.parallel import Layout, _comm_seconds_of, decode_comm_time, layout, send_seconds
from llmcourse.units import (
    HOURS_PER_MONTH,
    Q_,
    as_quantity,
    fmt,
    parsed_unit,
    percentile_rank,
    plain_number,
    quantity,
    to,
    ureg,
)

__all__ = [
    "Brief",
    "ComputeBudget",
    "DecodeStep",
    "Fleet",
    "PercentileSizing",
    "Plan",
    "Prefill",
    "PrefillPool",
    "Replica",
    "RequestCycle",
    "ServingPlan",
    "Traffic",
    "compute_budget",
    "cost_per_million",
    "decode_step",
    "fleet",
    "gpu_of",
    "gpus_for_weights",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token",
    "kv_copies",
    "largest_batch",
    "matmul_precision",
    "max_batch",
    "model_of",
    "plan",
    "prefill",
    "prefill_pool",
    "replica",
    "request_cycle",
    "serving_plan",
    "traffic",
    "usable_memory",
    "weight_bytes",
]

B = "B"  # bytes
# units parsed once: pint parses a unit string at every conversion, which was most of a plan's time
_GB = parsed_unit("GB")[0]
_MS = parsed_unit("ms")[0]
_PER_S = parsed_unit("1/s")[0]
_PFLOP_S = parsed_unit("PFLOP/s")[0]
_USD = parsed_unit("USD")[0]
_S = parsed_unit("s")[0]
_TFLOP = parsed_unit("TFLOP")[0]
_USD_H = parsed_unit("USD/hour")[0]
_GFLOP = parsed_unit("GFLOP")[0]
_FLOP = parsed_unit("FLOP")[0]
_B = parsed_unit("B")[0]
_GIB = parsed_unit("GiB")[0]


def _replaced(a: Assumptions, **changes: Any) -> Assumptions:
    """``a.replace(**changes)``, which returns ``a`` itself when every change is None (an override left out), without
    its checks of the field names in that case (the callers here pass their own, known, fields)."""
    for v in changes.values():
        if v is not None:
            return a.replace(**changes)
    return a


def _once(make: Callable[[], Any]) -> Callable[[], Any]:
    """``functools.cache(make)`` for a function of no arguments (its value worked out at the first call, kept;
    an error not kept), without building functools' wrapper (a few microseconds each, three per replica).

    Examples
    --------
    >>> calls = []
    >>> get = _once(lambda: calls.append(1) or len(calls))
    >>> get(), get(), calls
    (1, 1, [1])
    """
    got: list[Any] = []

    def get() -> Any:
        if not got:
            got.append(make())
        return got[0]

    return get


#: The replicas :func:`_replica_of` has set up, by their inputs (:func:`_setup_key`), the least recently used
#: first: a calculator asks for the same few replicas at every update (the design review's five plans, the many-GPUs
#: chart's bars), and most controls (the request rate, a target, the batch) change none of them. Bounded: the least
#: recently used set-up goes first. Its reads and writes hold :data:`_SETUPS_LOCK` (a set-up itself is made outside
#: it: two threads asking for a new one at once may both make it, and get equal figures).
_SETUPS: dict[tuple, tuple[tuple, Callable[[int | None], Replica]]] = {}
_SETUPS_KEPT = 256
_SETUPS_LOCK = threading.Lock()


def _setup_key(value: Any) -> Any:
    """``value`` as a part of a :data:`_SETUPS` key: equal keys for inputs that give the same replica, to the same
    floats and types. Numbers with their type (4_000 and 4_000.0 print differently); a quantity of a plain number by
    its magnitude and units (pint hashes a quantity slowly; an array's magnitude is not hashable); a model or
    assumptions by every field with its type (frozen dataclasses of plain fields, so ``Model.with_`` gives an equal
    key; a model's aliases count, though its equality leaves them out; 1 and 1.0 in a field are different keys, as
    such numbers are: a replica holds the model and the assumptions it was set up with, and a caller must get back
    what it gave); anything else (a catalog GPU or link: frozen, and slow to hash by value) by identity (the inputs
    are kept beside the set-up, so that an id is not reused while it is kept)."""
    t = type(value)
    if value is None or t is str:
        return value
    if t in (int, float, bool):
        return (t, value)
    if t is Q_ and type(value._magnitude) in (int, float):
        return (Q_, type(value._magnitude), value._magnitude, value._units)
    if t is Model or t is Assumptions:
        fields = tuple(value.__dict__.values())
        return (t, fields, tuple(map(type, fields)))
    return (object, id(value))


def _kept(set_up: Callable[..., Callable[..., Any]]) -> Callable[..., Callable[..., Any]]:
    """``set_up`` (a replica's, or a decode step's, as a function of the batch), each of its answers kept in
    :data:`_SETUPS` by the function and its inputs (given by position; a dict of inputs, a replica's shape, by its
    items): the same inputs give the kept set-up, and an input that is refused is refused each time (an exception is
    not kept). What a set-up returns must be built anew at each call (a kept set-up is shared)."""

    @functools.wraps(set_up)
    def kept(*args: Any) -> Callable[..., Any]:
        key = (
            set_up,
            *(
                tuple((k, _setup_key(x)) for k, x in sorted(v.items())) if type(v) is dict else _setup_key(v)
                for v in args
            ),
        )
        with _SETUPS_LOCK:
            got = _SETUPS.pop(key, None)
            if got is not None:
                _SETUPS[key] = got  # the most recently used, last
                return got[1]
        got = (args, set_up(*args))  # the inputs kept beside it: an id in the key is not reused while it is kept
        with _SETUPS_LOCK:
            while len(_SETUPS) >= _SETUPS_KEPT:  # the least recently used goes
                _SETUPS.pop(next(iter(_SETUPS)))
            _SETUPS[key] = got
        return got[1]

    return kept


@contextlib.contextmanager
def _set_ups_aside() -> Iterator[None]:
    """Within the block, no set-up is kept from before and none made in it is kept after: the planner's whole path,
    as a new input takes it (the live warm-up; tests comparing kept set-ups with fresh ones). It swaps the
    process's one store: not for blocks on several threads at once (one would put back another's)."""
    global _SETUPS
    with _SETUPS_LOCK:
        kept, _SETUPS = _SETUPS, {}
    try:
        yield
    finally:
        with _SETUPS_LOCK:
            _SETUPS = kept


def _max_batch_si(usable: float, weights: float, kv_per_sequence: float) -> int:
    """:func:`max_batch` on plain floats in bytes: the sequences whose KV cache fits beside the weights in the usable
    memory, 0 when the weights alone take it all."""
    if weights >= usable:
        return 0
    return int(F["max_batch"].value(usable_memory=usable, weights=weights, kv_per_sequence=kv_per_sequence))


def largest_batch(meets: Callable[[int], bool], top: int) -> int:
    """The largest batch in 1..``top`` for which ``meets(batch)`` holds, or 0 if even batch 1 fails;
    ``meets`` must hold up to some batch and fail beyond it (as a step-time or speed target does,
    since the step grows with the batch). Bisection: about log2(top) calls.

    Examples
    --------
    >>> largest_batch(lambda b: b * b <= 50, 4_096), largest_batch(lambda b: False, 64)
    (7, 0)
    """
    lo, hi = 0, int(top)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if meets(mid) else (lo, mid - 1)
    return lo


def _largest_within(value: Callable[[int], float], target: float, top: int) -> int:
    """``largest_batch(lambda b: value(b) <= target, top)`` for a ``value`` that grows with the batch (a step's
    time, a token's time: the time of a batch grows by its own KV reads or FLOPs, far more than a float's
    rounding): the same batch, found with fewer calls. The batch lies between the largest batch known to meet
    the target and the smallest known to miss it; the next call is where the line through the two ends' values
    crosses the target (a step's time is nearly linear in the batch, so 1, ``top``, the crossing and the batch
    after it usually settle it), or the middle when the line has not halved the bracket (a kink, where the step
    turns from memory- to compute-bound).

    Examples
    --------
    >>> calls = []
    >>> step = lambda b: calls.append(b) or 10.0 + 0.37 * b  # 40 ms at a batch of 81.1
    >>> _largest_within(step, 40.0, 4_096), calls
    (81, [1, 4096, 81, 82])
    >>> calls.clear()
    >>> largest_batch(lambda b: step(b) <= 40.0, 4_096), len(calls)
    (81, 12)
    >>> _largest_within(lambda b: 50.0 + b, 40.0, 64), _largest_within(lambda b: float(b), 1e9, 64)
    (0, 64)
    """
    top = int(top)
    if top < 1:
        return 0
    v = value(1)
    if v > target:
        return 0
    lo, f_lo, hi, f_hi = 1, v, top + 1, math.inf  # value(lo) <= target < value(hi); hi = top + 1 is never asked
    if top > 1:
        v = value(top)
        if v <= target:
            return top
        hi, f_hi = top, v
    step = "line"
    while hi - lo > 1:
        if step == "line":  # where the line through both ends' values crosses the target, inside the bracket
            mid = min(max(lo + int((target - f_lo) / (f_hi - f_lo) * (hi - lo)), lo + 1), hi - 1)
        else:
            mid = lo + 1 if step == "next" else (lo + hi) // 2
        width = hi - lo
        v = value(mid)
        if v <= target:
            lo, f_lo = mid, v
        else:
            hi, f_hi = mid, v
        if step == "line":  # met: the batch after it; missed: the line again if it halved the bracket
            step = "next" if v <= target else "line" if 2 * (hi - lo) <= width else "half"
        else:
            step = "half" if step == "next" else "line"
    return lo


# --- input checking -------------------------------------------------------------------------
def model_of(model: Model | str) -> Model:
    """A :class:`~llmcourse.catalog.Model` from itself or a catalog name ("did you mean" if unknown)."""
    if isinstance(model, Model):
        return model
    return models[model]


def gpu_of(gpu: GPU | str) -> GPU:
    """A :class:`~llmcourse.catalog.GPU` from itself or a catalog name ("did you mean" if unknown)."""
    if isinstance(gpu, GPU):
        return gpu
    return gpus[gpu]


_model, _gpu = model_of, gpu_of


def _bytes(value: Any, name: str) -> pint.Quantity:
    """Bytes per value from a precision name, a plain number of bytes, or a byte quantity."""
    if isinstance(value, pint.Quantity):
        q = as_quantity(value, B, name)
        _number(q.to(B).magnitude, name)
        return q.to(B)
    try:
        return quantity(bytes_per_value(value), _B)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None


_number = plain_number  # the one check of counts and fractions (llmcourse.units)

# --- the internal path: plain floats in the symbols' units (B, FLOP, s), the formulas by value -----------
_S_MS = ureg._get_conversion_factor(_S._units, _MS._units)  # pint's factors, as its conversions use them
_MS_S = ureg._get_conversion_factor(_MS._units, _S._units)
_B_GB = ureg._get_conversion_factor(_B._units, _GB._units)  # in_unit(x, _B, _GB) is quantity(x * _B_GB, _GB)
_FLOP_GFLOP = ureg._get_conversion_factor(_FLOP._units, _GFLOP._units)
_FLOP_TFLOP = ureg._get_conversion_factor(_FLOP._units, _TFLOP._units)
_BYTES_SI: dict[tuple[type, Any], float] = {}  # bytes per value of a precision name or a number


def _bytes_si(value: Any, name: str) -> float:
    """:func:`_bytes` as a plain float of bytes (a precision name's, or a plain number's, looked up once)."""
    t = type(value)
    if t is str or t is int or t is float:
        key = (t, value)
        got = _BYTES_SI.get(key)
        if got is None:
            got = si(_bytes(value, name), "kv_bytes")  # an unknown name or a bad number raises, with ``name``
            _BYTES_SI[key] = got
        return got
    return si(_bytes(value, name), "kv_bytes")


def _weights_si(m: Model, weight_bytes: Any) -> float:
    """:func:`weight_bytes` in bytes, as a plain float."""
    return F["weight_bytes"].value(params=m.params, weight_bytes_per_param=_bytes_si(weight_bytes, "bytes_per_param"))


def _weights_read_si(m: Model, batch: float, wpp: float) -> float:
    """:func:`weights_read_per_step` in bytes, as a plain float, for ``wpp`` bytes per weight."""
    if not m.is_moe:
        return F["weight_bytes"].value(params=m.params, weight_bytes_per_param=wpp)
    return F["moe_bytes_read"].value(
        weight_bytes_per_param=wpp,
        params=m.params,
        expert_params=m.expert_params,
        experts_per_token=m.experts_per_token,
        experts=m.experts,
        batch=batch,
    )


def _kv_token_si(m: Model, kv_bytes: Any) -> float:
    """:func:`kv_bytes_per_token` in bytes, as a plain float."""
    b = _bytes_si(kv_bytes, "kv_bytes")
    if m.attention == "MLA":
        q = F["kv_bytes_per_token_mla"].value(
            layers=m.layers, kv_lora_rank=m.kv_lora_rank, rope_dim=m.qk_rope_head_dim, kv_bytes=b
        )
    else:
        q = F["kv_bytes_per_token"].value(layers=m.layers, kv_heads=m.kv_heads, head_dim=m.head_dim, kv_bytes=b)
    return round(q, 6)


def _kv_sequence_si(m: Model, context: float, kv_bytes: Any) -> float:
    """:func:`kv_bytes_per_sequence` in bytes, as a plain float."""
    ctx = _cached_tokens(m, context)
    return F["kv_bytes_per_sequence"].value(kv_per_token=_kv_token_si(m, kv_bytes), context=ctx)


def _usable_si(g: GPU, n: float, a: Assumptions, weights: float) -> float:
    """:func:`usable_memory` in bytes, as a plain float, for checked inputs and ``weights`` bytes."""
    mem = si(g.memory if a.memory_unit == "GB" else quantity(to(g.memory, _GB).m, _GIB), "gpu_memory")
    if a.memory_rule == "total":
        return F["usable_memory"].value(n_gpus=n, gpu_memory=mem, usable_fraction=a.memory_fraction)
    share = F["engine_usable_fraction"].value(
        weights=weights, kv_free_fraction=a.memory_fraction, n_gpus=n, gpu_memory=mem
    )
    # weights beyond the whole memory leave nothing for the KV cache: the usable memory is all of it
    return F["usable_memory"].value(n_gpus=n, gpu_memory=mem, usable_fraction=min(float(share), 1.0))


def _kv_copies(m: Model, n: float, a: Assumptions) -> float:
    """:func:`kv_copies` for a checked model, GPU count and assumptions."""
    if not a.kv_replication:
        return 1.0
    heads = 1 if m.attention == "MLA" else m.kv_heads
    return float(F["kv_replication"].value(n_gpus=n, kv_heads=heads))


def _check_positions(m: Model, tokens: float, name: str) -> None:
    """Refuse a sequence longer than the model's positions (``max_position``): no deployment of the
    model holds it. The memory arithmetic (:func:`kv_bytes_per_sequence`, :func:`max_batch`) answers
    for any length, as the sources' what-if tables do; the estimates of a deployment check here."""
    if m.max_position is not None and tokens > m.max_position:
        raise InputError(
            f"{name} ({tokens:,.0f} tokens) is beyond the {m.max_position:,} positions of {m.name} (max_position): "
            f"give at most {m.max_position:,} tokens, or a model with a longer context."
        )


def _deployment(m: Model, g: GPU, n_gpus: int, weight_bytes: Any, assumptions: Any, **degrees: Any) -> Layout:
    """The layout of a step's GPUs (``n_gpus`` per tensor-parallel group and the other ``degrees``,
    checked by :func:`llmcourse.parallel.layout`), refused if the weights do not fit in all of them."""
    lay = layout(m, g, tensor_parallel=n_gpus, **degrees)
    _check_weights_fit(m, g, weight_bytes, lay.n_gpus, "n_gpus", assumptions)
    return lay


def _check_weights_fit(m: Model, g: GPU, weight_bytes: Any, gpus_: float, name: str, assumptions: Any) -> None:
    """Refuse a deployment whose weights exceed the whole memory of the ``gpus_`` GPUs they are spread
    over (every byte of it, before any share is kept back): such a replica cannot exist, so no step
    or prefill of it has a time. ``name`` is the caller's argument for the GPU count."""
    if _weights_si(m, weight_bytes) > gpus_ * si(g.memory, "gpu_memory"):
        w, total = _weights(m, weight_bytes), gpus_ * g.memory
        need = gpus_for_weights(m, g, weight_bytes, assumptions)
        where = f"one {g.name}" if gpus_ == 1 else f"{gpus_:g} x {g.name}"
        raise InputError(
            f"{m.name}'s weights ({fmt(w, 'GB')}) do not fit in the {fmt(total, 'GB')} of {where}: give "
            f"{name}={need} (the GPUs whose usable memory holds them), store fewer bytes per weight "
            "(weight_bytes='fp8' or 'int4'), or pick a GPU with more memory."
        )


def _price(gpu: GPU | str, price_per_hour: Any) -> pint.Quantity:
    """The price given, else the catalog's price of ``gpu`` (a GPU or the name of one)."""
    if price_per_hour is None:
        known = gpu if isinstance(gpu, GPU) else gpus.get(gpu)
        if known is None or known.price_per_hour is None:
            name = gpu.name if isinstance(gpu, GPU) else gpu
            raise InputError(f"{name} has no price in the catalog: pass price_per_hour=Q_(2.5, 'USD/hour').")
        return _own(known.price_per_hour)  # the caller's own: an in-place change must not reach the catalog
    q = as_quantity(price_per_hour, "USD/hour", "price_per_hour")
    _number(q.magnitude, "price_per_hour")
    return q


# --- tokens ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Traffic:
    """Peak traffic in requests and tokens per second."""

    request_rate: pint.Quantity
    input_tokens_per_s: pint.Quantity
    output_tokens_per_s: pint.Quantity


@checked
def traffic(requests: Any, prompt_tokens: float, answer_tokens: float, *, peak_factor: float = 1.0) -> Traffic:
    """Turn a request rate into peak input and output tokens per second.

    Parameters
    ----------
    requests : Quantity
        Average request rate in any unit of 1/time, e.g. ``Q_(200_000, "1/day")``.
    prompt_tokens, answer_tokens : float
        Tokens per request in and out.
    peak_factor : float
        Peak-hour rate over the average.

    Examples
    --------
    >>> t = traffic(Q_(200_000, "1/day"), 2_000, 300, peak_factor=3)
    >>> round(t.request_rate.to(_PER_S).m, 1), round(t.output_tokens_per_s.m)
    (6.9, 2083)
    """
    peak = F["peak_request_rate"](daily_rate=requests, peak_factor=peak_factor)
    return Traffic(
        request_rate=peak,
        input_tokens_per_s=F["token_rate"](request_rate=peak, tokens_per_request=prompt_tokens),
        output_tokens_per_s=F["token_rate"](request_rate=peak, tokens_per_request=answer_tokens),
    )


# --- memory ---------------------------------------------------------------------------------
@checked
def weight_bytes(model: Model | str, bytes_per_param: Any = 2) -> pint.Quantity:
    """Bytes of a model's weights: parameters x bytes per parameter.

    Examples
    --------
    >>> weight_bytes("Llama-3.1-8B").to(_GB)
    <Quantity(16.06, 'gigabyte')>
    >>> weight_bytes("Qwen2.5-72B", "fp8").to(_GB)
    <Quantity(72.7, 'gigabyte')>
    """
    m = _model(model)
    return F["weight_bytes"](params=m.params, weight_bytes_per_param=_bytes(bytes_per_param, "bytes_per_param"))


_weights = weight_bytes  # the function, for bodies whose ``weight_bytes`` parameter shadows its name


@checked
def kv_bytes_per_token(model: Model | str, kv_bytes: Any = 2) -> pint.Quantity:
    """KV cache bytes per token: 2 x layers x KV heads x head dim x bytes (MLA: the latent).

    Uses ``kv_heads`` and ``head_dim`` from the config, never ``hidden``: the classic bug.

    Examples
    --------
    >>> kv_bytes_per_token("Qwen2.5-72B").to("KiB")
    <Quantity(320.0, 'kibibyte')>
    >>> kv_bytes_per_token("DeepSeek-V3").to("B")
    <Quantity(70272.0, 'byte')>
    """
    m = _model(model)
    b = _bytes(kv_bytes, "kv_bytes")
    if m.attention == "MLA":
        q = F["kv_bytes_per_token_mla"](
            layers=m.layers, kv_lora_rank=m.kv_lora_rank, rope_dim=m.qk_rope_head_dim, kv_bytes=b
        )
    else:
        q = F["kv_bytes_per_token"](layers=m.layers, kv_heads=m.kv_heads, head_dim=m.head_dim, kv_bytes=b)
    return Q_(round(q.to(B).m, 6), B)


def _cached_tokens(m: Model, context: float) -> float:
    """Tokens cached per layer on average: sliding-window layers keep at most the window."""
    if not m.sliding_window:
        return context
    n_win = m.sliding_window_layers if m.sliding_window_layers is not None else m.layers
    return ((m.layers - n_win) * context + n_win * min(context, m.sliding_window)) / m.layers


@checked
def kv_bytes_per_sequence(model: Model | str, context_tokens: float, kv_bytes: Any = 2) -> pint.Quantity:
    """KV cache bytes of one sequence of ``context_tokens`` tokens (sliding windows capped).

    Examples
    --------
    >>> kv_bytes_per_sequence("Qwen2.5-72B", 2_300).to(_GB)
    <Quantity(0.753664, 'gigabyte')>
    >>> kv_bytes_per_sequence("Llama-3.1-8B", 32_768).to("GiB")
    <Quantity(4.0, 'gibibyte')>
    """
    m = _model(model)
    ctx = _cached_tokens(m, context_tokens)
    return F["kv_bytes_per_sequence"](kv_per_token=kv_bytes_per_token(m, kv_bytes), context=ctx)


def kv_copies(model: Model | str, n_gpus: int = 1, assumptions: Assumptions | str | None = None) -> float:
    """How many times a replica of ``n_gpus`` GPUs stores each sequence's KV cache: tensor
    parallelism splits the KV heads, but every GPU keeps at least one, so past ``kv_heads`` GPUs
    the heads are replicated; MLA's single latent is replicated on every GPU. 1 when the
    assumptions leave replication out (the sources' methods).

    Examples
    --------
    >>> kv_copies("Llama-3.1-70B", 8), kv_copies("Llama-3.1-70B", 16), kv_copies("DeepSeek-V3", 8)
    (1.0, 2.0, 8.0)
    """
    m, n = _model(model), _number(n_gpus, "n_gpus", integer=True)
    if not resolve(assumptions).kv_replication:
        return 1.0
    heads = 1 if m.attention == "MLA" else m.kv_heads
    return float(F["kv_replication"](n_gpus=n, kv_heads=heads).m)


@checked
def usable_memory(
    gpu: GPU | str,
    n_gpus: int = 1,
    usable_fraction: float | None = None,
    *,
    weights: pint.Quantity | None = None,
    assumptions: Assumptions | str | None = None,
) -> pint.Quantity:
    """Memory a server may use for weights and KV cache on ``n_gpus`` GPUs, by the assumptions'
    memory rule: a share of the total (``"total"``), or the ``weights`` plus a share of what they
    leave (``"free"``); the GPU's memory read as datasheet GB or as the HBM's GiB.
    ``usable_fraction`` overrides the assumptions' ``memory_fraction``.

    Examples
    --------
    >>> usable_memory("H100 SXM", 2).to(_GB)
    <Quantity(144.0, 'gigabyte')>
    >>> round(usable_memory("H100 SXM", 2, assumptions=resolve().replace(memory_unit="GiB")).to(_GB).m, 1)
    154.6
    """
    g = _gpu(gpu)
    a = _replaced(resolve(assumptions), memory_fraction=usable_fraction)
    n = n_gpus
    mem = g.memory if a.memory_unit == "GB" else Q_(to(g.memory, _GB).m, "GiB")
    if a.memory_rule == "total":
        return F["usable_memory"](n_gpus=n, gpu_memory=mem, usable_fraction=a.memory_fraction)
    if weights is None:
        raise InputError(f"the memory rule 'free' of assumptions {a.name!r} needs the weights' bytes (weights=...).")
    share = F["engine_usable_fraction"](weights=weights, kv_free_fraction=a.memory_fraction, n_gpus=n, gpu_memory=mem)
    # weights beyond the whole memory leave nothing for the KV cache: the usable memory is all of it
    return F["usable_memory"](n_gpus=n, gpu_memory=mem, usable_fraction=min(float(share.m), 1.0))


@checked
def max_batch(
    model: Model | str,
    gpu: GPU | str,
    context_tokens: float,
    *,
    n_gpus: int = 1,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    usable_fraction: float | None = None,
    assumptions: Assumptions | str | None = None,
) -> int:
    """Conversations whose KV cache fits beside the weights (0 if the weights alone do not fit).

    Examples
    --------
    >>> max_batch("Llama-3.1-8B", "H100 SXM", 2_048 + 512)
    166
    """
    m, g = _model(model), _gpu(gpu)
    w = _weights(m, weight_bytes)
    mem = usable_memory(g, n_gpus, usable_fraction, weights=w, assumptions=assumptions)
    if w >= mem:
        return 0
    kv = kv_bytes_per_sequence(m, context_tokens, kv_bytes) * kv_copies(m, n_gpus, assumptions)
    return int(F["max_batch"](usable_memory=mem, weights=w, kv_per_sequence=kv).m)


# --- decode -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DecodeStep:
    """One decode step of a batch: bytes moved, FLOPs done, and the time each would take."""

    batch: int
    weights_read: pint.Quantity
    kv_read: pint.Quantity
    flops: pint.Quantity
    memory_time: pint.Quantity
    compute_time: pint.Quantity
    step_time: pint.Quantity
    fraction_of_experts: float | None
    kernel_bounds: tuple[str, str] | None = None
    comm_time: pint.Quantity | None = None
    overhead_time: pint.Quantity | None = None
    layout: Layout | None = field(default=None, repr=False)

    @property
    def bound(self) -> str:
        """``"memory"`` or ``"compute"``: which limit sets the step time. With the per-operation step
        rule it is ``"compute"`` as soon as one kernel (the weight matmuls or attention) is
        compute-bound, since that kernel's time then grows with the batch."""
        if self.kernel_bounds is not None:
            return "compute" if "compute" in self.kernel_bounds else "memory"
        return "compute" if self.compute_time > self.memory_time else "memory"

    @property
    def tokens_per_s_per_user(self) -> pint.Quantity:
        return to(1 / self.step_time, _PER_S)

    @property
    def throughput(self) -> pint.Quantity:
        """Output tokens per second of the whole batch."""
        return to(F["throughput"](batch=self.batch, step_time=self.step_time), _PER_S)


@checked
def weights_read_per_step(model: Model | str, batch: int = 1, weight_bytes: Any = 2) -> pint.Quantity:
    """Weight bytes one decode step reads: all of them for a dense model; for a MoE model the
    shared weights plus the expected fraction of experts that ``batch`` tokens touch.

    Examples
    --------
    >>> weights_read_per_step("Llama-3.1-8B").to(_GB)
    <Quantity(16.06, 'gigabyte')>
    >>> round(weights_read_per_step("Qwen3-30B-A3B", 1).to(_GB).m, 2)
    6.7
    """
    m = _model(model)
    b = _bytes(weight_bytes, "weight_bytes")
    n = batch
    if not m.is_moe:
        return F["weight_bytes"](params=m.params, weight_bytes_per_param=b)
    return F["moe_bytes_read"](
        weight_bytes_per_param=b,
        params=m.params,
        expert_params=m.expert_params,
        experts_per_token=m.experts_per_token,
        experts=m.experts,
        batch=n,
    )


@checked
def matmul_precision(weight_bytes: Any, gpu: GPU | str, assumptions: Assumptions | str | None = None) -> str:
    """The precision the matrix multiplications run at, by the assumptions' ``matmul_precision``
    rule: ``"weights"`` runs FP8 (1-byte) weights at FP8 and FP4 (half-byte) weights at FP4 where
    the GPU has a peak FLOP/s figure for it, else BF16; ``"bf16"`` always runs BF16.

    Examples
    --------
    >>> matmul_precision("fp8", "H100 SXM"), matmul_precision("fp8", "A100 SXM 80GB")
    ('fp8', 'bf16')
    >>> matmul_precision("fp4", "B200"), matmul_precision("fp8", "H100 SXM", "envelope")
    ('fp4', 'bf16')
    >>> matmul_precision("int4", "B200"), matmul_precision(1, "H100 SXM")  # INT4 is weight-only: BF16 matmuls
    ('bf16', 'fp8')
    """
    g = _gpu(gpu)
    if resolve(assumptions).matmul_precision == "bf16":
        return "bf16"
    if isinstance(weight_bytes, str):
        # by name: integer formats are weight-only (W8A16, W4A16): widened to 16 bits to multiply
        name = weight_bytes.lower()
        _bytes(name, "weight_bytes")  # an unknown name is refused here
        wanted = {"fp8": "fp8", "fp4": "fp4"}.get(name, "bf16")
    else:  # a number of bytes: 1 byte is read as FP8, anything else as 16-bit arithmetic
        wanted = "fp8" if _bytes(weight_bytes, "weight_bytes").m == bytes_per_value("fp8") else "bf16"
    if wanted == "fp8" and g.fp8_flops is not None:
        return "fp8"
    if wanted == "fp4" and g.fp4_flops is not None:
        return "fp4"
    return "bf16"


def _four_bit(weight_bytes: Any) -> bool:
    """4-bit weights: FP4, INT4, MXFP4, or a number of bytes per weight under 0.75 (half a byte plus
    its group scales, e.g. 0.53 B for INT4 with a 16-bit scale per 64 weights)."""
    if isinstance(weight_bytes, str):
        return bytes_per_value(weight_bytes.lower()) < 0.75
    return _bytes(weight_bytes, "weight_bytes").m < 0.75


def _read_efficiency(weight_bytes: Any, a: Assumptions) -> float:
    """The bandwidth efficiency a decode step reaches: the assumptions', times their 4-bit factor
    for 4-bit weights."""
    return a.bandwidth_efficiency * (a.four_bit_bandwidth_factor if _four_bit(weight_bytes) else 1.0)


@checked
def decode_step(
    model: Model | str,
    gpu: GPU | str,
    *,
    batch: int = 1,
    context_tokens: float,
    n_gpus: int = 1,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    bandwidth_efficiency: float | None = None,
    compute_efficiency: float | None = None,
    attention_flops: bool | None = None,
    compute_precision: str | None = None,
    assumptions: Assumptions | str | None = None,
    data_parallel: int = 1,
    pipeline_parallel: int = 1,
    expert_parallel: int | None = None,
    link: Any = None,
) -> DecodeStep:
    """Time of one decode step of ``batch`` sequences, each reading its KV at ``context_tokens``.

    Bytes: the weights (a MoE model: the experts the batch touches) plus every sequence's KV
    cache. FLOPs: ``flops_per_param`` per active parameter per sequence, plus the attention FLOPs
    at that context if the assumptions count them. The step rule of the assumptions combines the
    two: the slower of the totals (``"max"``), or the weight matmuls and attention as separate
    kernels whose times add (``"sum"``); then the per-step overhead is added. Keyword arguments
    left at ``None`` come from ``assumptions`` (the course's by default); ``compute_precision``
    names the matmul precision outright (``"bf16"``, ``"fp8"``, ``"fp4"``).

    On several GPUs (:func:`llmcourse.parallel.layout`): ``n_gpus`` is the tensor-parallel degree
    of a group, ``data_parallel`` the attention groups (each with its own ``batch / data_parallel``
    sequences; the experts split over all), ``pipeline_parallel`` the stages (the batch goes
    through in that many micro-batches, so a token's time is one micro-batch's pass through every
    layer plus a send and an overhead per stage boundary). With ``communication`` in the
    assumptions the step pays its collectives on ``link`` (the GPU's own by default).

    Examples
    --------
    >>> s = decode_step("Llama-3.1-8B", "H100 SXM", batch=1, context_tokens=2_048 + 256)
    >>> round(s.step_time.to(_MS).m, 2), s.bound
    (7.98, 'memory')
    """
    m, g, lay, a, precision = _decode_inputs(
        model, gpu, context_tokens, n_gpus, weight_bytes, assumptions, bandwidth_efficiency, compute_efficiency,
        attention_flops, compute_precision, data_parallel, pipeline_parallel, expert_parallel, link,
    )  # fmt: skip
    return _decode(m, g, lay, a, batch, context_tokens, weight_bytes, kv_bytes, precision)


def _decode_inputs(
    model: Model | str,
    gpu: GPU | str,
    context_tokens: float,
    n_gpus: int,
    weight_bytes: Any,
    assumptions: Any,
    bandwidth_efficiency: float | None,
    compute_efficiency: float | None,
    attention_flops: bool | None,
    compute_precision: str | None,
    data_parallel: int,
    pipeline_parallel: int,
    expert_parallel: int | None,
    link: Any,
) -> tuple[Model, GPU, Layout, Assumptions, str]:
    """:func:`decode_step`'s checks of its checked inputs, and what it works out from them: the model, the
    GPU, the layout, the assumptions and the matmul precision."""
    m, g = _model(model), _gpu(gpu)
    _check_positions(m, context_tokens, "context_tokens")
    degrees = dict(data_parallel=data_parallel, pipeline_parallel=pipeline_parallel, expert_parallel=expert_parallel)
    lay = _deployment(m, g, n_gpus, weight_bytes, assumptions, link=link, **degrees)
    a = _replaced(
        resolve(assumptions),
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
        decode_attention_flops=attention_flops,
    )
    precision = compute_precision or matmul_precision(weight_bytes, g, a)
    return m, g, lay, a, precision


@checked
def _decoder_of(
    model: Model | str,
    gpu: GPU | str,
    *,
    context_tokens: float,
    n_gpus: int = 1,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
    data_parallel: int = 1,
    pipeline_parallel: int = 1,
    expert_parallel: int | None = None,
    link: Any = None,
) -> Callable[[float, bool], DecodeStep | float]:
    """:func:`decode_step`'s checks (the same parameters, checked by the same names) and its step as a function
    of the batch (the set-up kept: :func:`_kept`)."""
    return _decoder_kept(
        model, gpu, context_tokens, n_gpus, weight_bytes, kv_bytes, assumptions, data_parallel, pipeline_parallel,
        expert_parallel, link,
    )  # fmt: skip


@_kept
def _decoder_kept(
    model: Any,
    gpu: Any,
    context_tokens: float,
    n_gpus: int,
    weight_bytes: Any,
    kv_bytes: Any,
    assumptions: Any,
    data_parallel: int,
    pipeline_parallel: int,
    expert_parallel: int | None,
    link: Any,
) -> Callable[[float, bool], DecodeStep | float]:
    """:func:`_decoder_of` once its arguments are checked."""
    m, g, lay, a, precision = _decode_inputs(
        model, gpu, context_tokens, n_gpus, weight_bytes, assumptions, None, None, None, None, data_parallel,
        pipeline_parallel, expert_parallel, link,
    )  # fmt: skip
    return _decoder(m, g, lay, a, context_tokens, weight_bytes, kv_bytes, precision)


def _decode_steps(
    model: Model | str,
    gpu: GPU | str,
    *,
    context_tokens: float,
    n_gpus: int = 1,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
    data_parallel: int = 1,
    pipeline_parallel: int = 1,
    expert_parallel: int | None = None,
    link: Any = None,
    step_time_only: bool = False,
    both: bool = False,
) -> Callable[..., Any]:
    """``lambda b: decode_step(model, gpu, batch=b, ...)`` for a search over the batch (``batch`` a whole
    number of at least 1): the checks, the layout and the batch-independent terms worked out once, at the first
    call (so a search that never asks raises nothing), then each batch's step alone; the same steps, to the
    same floats, as :func:`decode_step` (``step_time_only``: only its ``step_time``, the same quantity; ``both``:
    ``lambda b, step_only=False: ...``, the step, or with ``step_only`` its time in seconds as a plain float)."""

    @functools.cache
    def setup() -> Callable[[float, bool], DecodeStep | float]:
        return _decoder_of(
            model, gpu, context_tokens=context_tokens, n_gpus=n_gpus, weight_bytes=weight_bytes, kv_bytes=kv_bytes,
            assumptions=assumptions, data_parallel=data_parallel, pipeline_parallel=pipeline_parallel,
            expert_parallel=expert_parallel, link=link,
        )  # fmt: skip

    if both:
        return lambda batch, step_only=False: setup()(batch, step_only)
    if step_time_only:
        return lambda batch: quantity(setup()(batch, True) * _S_MS, _MS._units)  # DecodeStep.step_time
    return lambda batch: setup()(batch)


def _decode(
    m: Model,
    g: GPU,
    lay: Layout,
    a: Assumptions,
    batch: float,
    ctx: float,
    weight_bytes: Any,
    kv_bytes: Any,
    precision: str,
    step_only: bool = False,
) -> DecodeStep | float:
    """:func:`decode_step` once its inputs are checked and its layout is known: the formulas by value, on
    plain floats in their symbols' units (bytes, FLOPs, seconds), the units attached to the result
    (``step_only``: only the step's time, in seconds, as a plain float)."""
    return _decoder(m, g, lay, a, ctx, weight_bytes, kv_bytes, precision)(batch, step_only)


def _decoder(
    m: Model, g: GPU, lay: Layout, a: Assumptions, ctx: float, weight_bytes: Any, kv_bytes: Any, precision: str
) -> Callable[[float, bool], DecodeStep | float]:
    """:func:`_decode` as a function of the batch (and ``step_only``): what does not depend on the batch (the
    KV per sequence, the FLOPs per token, the roofs; a dense model's weights read) worked out once, so that a
    search over the batch computes only each batch's own terms, in the same order, to the same floats."""
    gpus_, dp, pp = lay.tensor_parallel, lay.data_parallel, lay.pipeline_parallel
    wpp = _bytes_si(weight_bytes, "weight_bytes")
    moe = m.is_moe
    w_dense = None if moe else _weights_read_si(m, 1, wpp)  # a dense model reads all its weights at any batch
    kv_seq = _kv_sequence_si(m, ctx, kv_bytes) * _kv_copies(m, gpus_, a)  # every copy is read
    per_param = a.flops_per_param
    f_mm = F["decode_flops_per_token"].value(flops_per_param=per_param, active_params=m.active_params)
    f_att = 0
    if a.decode_attention_flops:
        f_att = F["decode_attention_flops"].value(
            flops_per_param=per_param, layers=m.layers, heads=m.heads, head_dim=m.head_dim, context=ctx
        )
    shared = None
    if dp > 1:  # one attention group's share: its own sequences, the whole attention, 1/D of the experts
        shared = F["weight_bytes"].value(params=m.params - m.expert_params, weight_bytes_per_param=wpp)
        if w_dense is not None:
            w_dense = F["dp_bytes_read"].value(bytes_read=w_dense, expert_bytes_read=w_dense - shared, data_parallel=dp)
        kv_seq = F["dp_kv_per_sequence"].value(kv_per_sequence=kv_seq, data_parallel=dp)
        f_mm = F["dp_flops_per_token"].value(flops_per_token=f_mm, data_parallel=dp)
        if f_att > 0:
            f_att = F["dp_flops_per_token"].value(flops_per_token=f_att, data_parallel=dp)
    bandwidth, eta_b = si(g.bandwidth, "bandwidth"), _read_efficiency(weight_bytes, a)
    peak, eta_f = si(g.peak_flops(precision), "peak_flops"), a.compute_efficiency
    f_tok = f_mm + f_att
    comp_args = dict(flops_per_token=f_tok, peak_flops=peak, compute_efficiency=eta_f)
    overhead_ms = a.step_overhead_ms  # ms, as the assumptions give it
    comm_of = _comm_seconds_of(m, lay, a)  # comm_seconds(m, lay, ., a)
    step_time, per_op = F["decode_step_time"].value, F["decode_step_time_per_op"].value
    with_overhead = F["step_with_overhead"].value

    def at(batch: float, step_only: bool = False) -> DecodeStep | float:
        n = math.ceil(batch / pp)  # sequences in one micro-batch (all of them on one stage)
        if w_dense is not None:
            w_read = w_dense
        else:
            w_read = _weights_read_si(m, n, wpp)
            if dp > 1:
                w_read = F["dp_bytes_read"].value(
                    bytes_read=w_read, expert_bytes_read=w_read - shared, data_parallel=dp
                )
        kernels = None
        if a.step_rule == "max":  # the arguments by name (no dicts to build: the search's hot path)
            core = step_time(
                batch=n, n_gpus=gpus_, bytes_read=w_read, kv_per_sequence=kv_seq, bandwidth=bandwidth,
                bandwidth_efficiency=eta_b, flops_per_token=f_tok, peak_flops=peak, compute_efficiency=eta_f,
            )  # fmt: skip
        else:
            mem_args = dict(bytes_read=w_read, kv_per_sequence=kv_seq, bandwidth=bandwidth, bandwidth_efficiency=eta_b)
            core = per_op(
                batch=n,
                n_gpus=gpus_,
                **mem_args,
                **comp_args | dict(flops_per_token=f_mm),
                attention_flops_per_token=f_att,
            )
            roofs = dict(n_gpus=gpus_, bandwidth=bandwidth, bandwidth_efficiency=eta_b)
            w_time = F["weight_read_time"].value(weights=w_read, **roofs)
            kv_time = F["weight_read_time"].value(weights=n * kv_seq, **roofs)
            comp = dict(n_gpus=gpus_, peak_flops=peak, compute_efficiency=eta_f)
            mm_time = F["decode_compute_time"].value(batch=n, flops_per_token=f_mm, **comp)
            att_time = F["decode_compute_time"].value(batch=n, flops_per_token=f_att, **comp) if f_att > 0 else 0.0
            kernels = ("compute" if mm_time > w_time else "memory", "compute" if att_time > kv_time else "memory")
        overhead = overhead_ms
        comm = _S_MS * comm_of(n)  # ms
        step = with_overhead(step_time=core, step_overhead=(overhead + comm) * _MS_S)
        if pp > 1:
            send = send_seconds(m, lay, n, a)
            step = F["pipeline_token_time"].value(
                step_time=step, stages=pp, send_time=0 if send is None else send, step_overhead=overhead * _MS_S
            )
            overhead = overhead * pp
            comm = comm + (pp - 1) * (0 if send is None else send * _S_MS)
        if step_only:
            return step
        mem_args = dict(bytes_read=w_read, kv_per_sequence=kv_seq, bandwidth=bandwidth, bandwidth_efficiency=eta_b)
        phi = None
        if moe:
            phi = float(
                F["moe_fraction_touched"].value(experts_per_token=m.experts_per_token, experts=m.experts, batch=n)
            )
        common = dict(batch=n, n_gpus=gpus_)
        return DecodeStep(
            batch=int(batch),
            weights_read=quantity(w_read * _B_GB, _GB._units),
            kv_read=quantity(n * kv_seq * _B_GB, _GB._units),
            flops=quantity(n * (f_mm + f_att) * _FLOP_GFLOP, _GFLOP._units),
            memory_time=quantity(F["decode_memory_time"].value(**common, **mem_args) * _S_MS, _MS._units),
            compute_time=quantity(F["decode_compute_time"].value(**common, **comp_args) * _S_MS, _MS._units),
            step_time=quantity(step * _S_MS, _MS._units),
            fraction_of_experts=phi,
            kernel_bounds=kernels,
            comm_time=quantity(comm, _MS),
            overhead_time=quantity(overhead, _MS),
            layout=lay,
        )

    return at


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
    weight_bytes: Any = 2,
    compute_efficiency: float | None = None,
    bandwidth_efficiency: float | None = None,
    attention: bool | None = None,
    compute_precision: str | None = None,
    cached_tokens: float = 0,
    assumptions: Assumptions | str | None = None,
    data_parallel: int = 1,
    pipeline_parallel: int = 1,
    expert_parallel: int | None = None,
    link: Any = None,
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
    bytes, not their latency, are what counts).

    Examples
    --------
    >>> p = prefill("Llama-3.1-8B", "H100 SXM", 2_048)
    >>> round(p.compute_time.to(_MS).m, 1), round(p.memory_time.to(_MS).m, 1), p.bound
    (68.7, 6.8, 'compute')
    """
    m, g = _model(model), _gpu(gpu)
    _check_positions(m, prompt_tokens, "prompt_tokens")
    degrees = dict(data_parallel=data_parallel, pipeline_parallel=pipeline_parallel, expert_parallel=expert_parallel)
    lay = _deployment(m, g, n_gpus, weight_bytes, assumptions, link=link, **degrees)
    a = _replaced(
        resolve(assumptions),
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
        prefill_attention=attention,
    )
    precision = compute_precision or matmul_precision(weight_bytes, g, a)
    return _prefill(m, g, lay, a, prompt_tokens, prompts, cached_tokens, weight_bytes, precision)


def _prefill(
    m: Model,
    g: GPU,
    lay: Layout,
    a: Assumptions,
    prompt_tokens: float,
    prompts: float,
    cached_tokens: Any,
    weight_bytes: Any,
    precision: str,
    time_only: bool = False,
) -> Prefill | float:
    """:func:`prefill` once its inputs are checked and its layout is known: the formulas by value, on plain
    floats in their symbols' units, the units attached to the result (``time_only``: only its time, in
    seconds, as a plain float)."""
    return _prefiller(m, g, lay, a, prompt_tokens, cached_tokens, weight_bytes, precision)(prompts, time_only)


def _prefiller(
    m: Model,
    g: GPU,
    lay: Layout,
    a: Assumptions,
    prompt_tokens: float,
    cached_tokens: Any,
    weight_bytes: Any,
    precision: str,
) -> Callable[[float, bool], Prefill | float]:
    """:func:`_prefill` as a function of the number of prompts (and ``time_only``): one prompt's FLOPs and the
    roofs worked out once, each call computing only what the number of prompts changes, to the same floats."""
    t, pp = prompt_tokens, lay.pipeline_parallel
    cached = _number(cached_tokens, "cached_tokens", allow_zero=True)
    if cached >= t:
        raise InputError(f"cached_tokens ({cached:g}) must be fewer than prompt_tokens ({t:g}): at least one is new.")
    per_param = a.flops_per_param

    def flops_of(tokens: float) -> tuple[float, float]:
        if tokens == 0:
            return 0, 0
        kw = dict(flops_per_param=per_param, params=m.active_params, prompt_tokens=tokens)
        linear = F["prefill_flops_linear"].value(**kw)
        return linear, F["prefill_flops"].value(**kw, layers=m.layers, heads=m.heads, head_dim=m.head_dim)

    (lin_t, full_t), (lin_c, full_c) = flops_of(t), flops_of(cached)
    linear, full = lin_t - lin_c, full_t - full_c
    flops = full if a.prefill_attention else linear
    peak = si(g.peak_flops(precision), "peak_flops")
    weights = _weights_si(m, weight_bytes)
    bandwidth = si(g.bandwidth, "bandwidth")
    prefill_time, with_overhead = F["prefill_time"].value, F["step_with_overhead"].value
    comm_of = _comm_seconds_of(m, lay, a)  # comm_seconds(m, lay, ., a)

    def of(prompts: float, time_only: bool = False) -> Prefill | float:
        n = prompts
        gpus_ = lay.tensor_parallel if n == 1 else lay.n_gpus  # one prompt: one group; more: every GPU
        eta_f, eta_b = a.compute_efficiency, a.bandwidth_efficiency
        time = prefill_time(
            prompts=n, prefill_flops=flops, n_gpus=gpus_, peak_flops=peak, compute_efficiency=eta_f, weights=weights,
            bandwidth=bandwidth, bandwidth_efficiency=eta_b,
        )  # fmt: skip
        comm = _S_MS * comm_of(n * (t - cached))  # ms
        if pp > 1 and n == 1:  # through the stages in turn, a send between each two
            send = send_seconds(m, lay, t - cached, a)
            comm = comm + (pp - 1) * (0 if send is None else send * _S_MS)
        elif pp > 1:  # the stages work at once, each on its layers' collectives, and idle for the bubble
            comm = comm / pp
            bubble = F["pipeline_bubble"].value(stages=pp, micro_batches=n)
            time = F["pipelined_prefill_time"].value(prefill_time=time, bubble=bubble)
        total = with_overhead(step_time=time, step_overhead=comm * _MS_S)
        if time_only:
            return total
        comp = dict(prompts=n, prefill_flops=flops, n_gpus=gpus_, peak_flops=peak, compute_efficiency=eta_f)
        mem = dict(weights=weights, n_gpus=gpus_, bandwidth=bandwidth, bandwidth_efficiency=eta_b)
        return Prefill(
            prompts=int(n),
            flops=quantity(n * flops * _FLOP_TFLOP, _TFLOP._units),
            attention_flops=quantity(n * (full - linear) * _FLOP_TFLOP, _TFLOP._units),
            compute_time=quantity(F["prefill_compute_time"].value(**comp) * _S_MS, _MS._units),
            memory_time=quantity(F["weight_read_time"].value(**mem) * _S_MS, _MS._units),
            time=quantity(total * _S_MS, _MS._units),
            comm_time=quantity(comm, _MS),
        )

    return of


# --- the replica model ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Replica:
    """The one model of a replica: ``tensor_parallel`` GPUs serving ``batch`` requests at a time.

    Every serving figure of the package comes from here (see :func:`replica`): whether the
    weights and the batch's KV cache fit, the largest batch, one decode step and what bounds it,
    the prefill of one prompt (the time to first token with no queue) and of the batch's prompts,
    the throughput (prefill charged or not, by the assumptions), requests per second and cost.
    """

    model: str
    gpu: str
    tensor_parallel: int
    assumptions: Assumptions = field(repr=False)
    weights: pint.Quantity
    usable_memory: pint.Quantity
    kv_per_sequence: pint.Quantity
    max_batch: int
    batch: int
    context_tokens: float
    matmul: str = "bf16"
    prompt_tokens: float | None = None
    answer_tokens: float | None = None
    kv_read_tokens: float | None = None
    cached_prompt_tokens: float = 0
    spec: Model | None = field(default=None, repr=False, compare=False)
    step: DecodeStep | None = field(default=None, repr=False)
    first_prefill: Prefill | None = field(default=None, repr=False)
    batch_prefill: Prefill | None = field(default=None, repr=False)
    price_per_hour: pint.Quantity | None = None
    reason: str = "fits"
    layout: Layout | None = field(default=None, repr=False)

    @property
    def n_gpus(self) -> int:
        """GPUs of the replica: tensor x attention data x pipeline parallel."""
        return self.tensor_parallel if self.layout is None else self.layout.n_gpus

    @property
    def fits(self) -> bool:
        """The weights and the KV cache of ``batch`` sequences at their final context fit."""
        return bool(self.step is not None and 1 <= self.batch <= self.max_batch)

    @property
    def memory_used(self) -> pint.Quantity:
        return to(self.weights + self.batch * self.kv_per_sequence, _GB)

    @property
    def decode_throughput(self) -> pint.Quantity:
        """Output tokens per second while the replica only decodes (prefill not charged)."""
        return self._need_step().throughput

    @property
    def counts_prefill(self) -> bool:
        return self.assumptions.count_prefill and self.batch_prefill is not None

    @property
    def throughput(self) -> pint.Quantity:
        """Output tokens per second: with prefill charged (``count_prefill``), the batch's prompts
        are prefilled and its answers decoded in turn (the cycle); otherwise decode steps only."""
        s = self._need_step()
        if not self.counts_prefill:
            return s.throughput
        return to(
            F["cycle_throughput"](
                batch=self.batch,
                answer_tokens=self.answer_tokens,
                prefill_time=self.batch_prefill.time,
                step_time=s.step_time,
            ),
            _PER_S,
        )

    @property
    def prefill_share(self) -> float | None:
        """Share of the cycle spent prefilling (None when prefill is not charged)."""
        if not self.counts_prefill:
            return None
        return float(
            F["prefill_share"](
                answer_tokens=self.answer_tokens,
                prefill_time=self.batch_prefill.time,
                step_time=self._need_step().step_time,
            ).m
        )

    @property
    def tpot(self) -> pint.Quantity:
        """Time per output token a user sees: one decode step, plus (with ``prefill_interference``)
        its share of the other requests' prefills that run between its steps."""
        s = self._need_step()
        if not (self.assumptions.prefill_interference and self.batch_prefill is not None):
            return s.step_time
        return to(
            F["interleaved_tpot"](
                step_time=s.step_time,
                prefill_time=self.batch_prefill.time,
                batch=self.batch,
                answer_tokens=self.answer_tokens,
            ),
            _MS,
        )

    @property
    def tokens_per_s_per_user(self) -> pint.Quantity:
        return to(1 / self.tpot, _PER_S)

    @property
    def ttft(self) -> pint.Quantity:
        """Time to first token with no queue: the assumptions' per-request overhead, then one prompt's prefill."""
        if self.first_prefill is None:
            raise InputError("the time to first token needs the prompt length: give replica(..., prompt_tokens=...).")
        return to(
            F["first_token_time"](
                request_overhead=quantity(self.assumptions.request_overhead_ms, _MS),
                prefill_time=self.first_prefill.time,
            ),
            _MS,
        )

    @property
    def requests_per_second(self) -> pint.Quantity:
        """Requests the replica completes per second at full load."""
        if self.answer_tokens is None:
            raise InputError("requests per second needs the answer length: give replica(..., answer_tokens=...).")
        return to(_over(self.throughput, self.answer_tokens), _PER_S)

    @property
    def cost_per_million_output_tokens(self) -> pint.Quantity | None:
        if self.price_per_hour is None:
            return None
        return cost_per_million(self.price_per_hour, self.throughput, self.n_gpus)

    def _need_step(self) -> DecodeStep:
        if self.step is None:
            raise InputError(f"{self.model} on {self.n_gpus} x {self.gpu}: {self.reason}")
        return self.step


def _workload(
    a: Assumptions, context_tokens: Any, prompt_tokens: Any, answer_tokens: Any
) -> tuple[float, float | None, float | None]:
    """(final context, prompt, answer) from what was given; both lengths are needed by a method
    that charges prefill or reads the KV cache at the average context."""
    p, ans = prompt_tokens, answer_tokens  # checked by the caller (replica)
    if p is not None and ans is not None:
        final = p + ans
        if context_tokens is not None and context_tokens != final:
            raise InputError(
                f"context_tokens ({context_tokens}) must equal prompt_tokens + answer_tokens ({final:g}); give one or the other."
            )
        return final, p, ans
    if context_tokens is None:
        raise InputError("give prompt_tokens and answer_tokens (or context_tokens, the final length of a sequence).")
    final = context_tokens
    if p is not None:
        if p >= final:
            raise InputError(
                f"prompt_tokens ({p:g}) must be less than context_tokens ({final:g}), which includes the answer."
            )
        return final, p, final - p
    if a.count_prefill or a.kv_read_context == "average":
        raise InputError(
            f"assumptions {a.name!r} charge prefill and read the KV cache at the average context, so they need "
            "prompt_tokens and answer_tokens, not only context_tokens; give both, or name a method that works "
            "from the context alone (assumptions='envelope' or 'capacity')."
        )
    return final, None, None


@checked
def replica(
    model: Model | str,
    gpu: GPU | str,
    *,
    tensor_parallel: int = 1,
    batch: int | None = None,
    prompt_tokens: float | None = None,
    answer_tokens: float | None = None,
    context_tokens: float | None = None,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    price_per_hour: Any = None,
    assumptions: Assumptions | str | None = None,
    bandwidth_efficiency: float | None = None,
    compute_efficiency: float | None = None,
    usable_fraction: float | None = None,
    cached_prompt_tokens: float = 0,
    speculation: Any = None,
    pipeline_parallel: int = 1,
    data_parallel: int = 1,
    expert_parallel: int | None = None,
    link: Any = None,
) -> Replica:
    """The one replica model: ``tensor_parallel`` GPUs serving ``batch`` requests of
    ``prompt_tokens`` in and ``answer_tokens`` out (the largest batch that fits if ``batch`` is
    None), under ``assumptions`` (the course's by default; the efficiencies and the memory share
    may be overridden one by one).

    ``context_tokens`` is the final length of a sequence; a method that neither charges prefill
    nor reads the KV cache at the average context (``"envelope"``, ``"capacity"``) may be given
    that alone. ``price_per_hour`` defaults to the catalog's price of the GPU, if it has one.
    ``cached_prompt_tokens`` of each prompt found in a prefix cache are not prefilled again (their
    KV is still held for the request: the memory and the batch are the full prompt's).
    ``speculation`` (a :class:`llmcourse.speculative.Speculation`; by default the assumptions',
    off in every preset) makes the deployment speculate: the draft's weights and KV count in memory
    and each decode step is the speculative cycle per output token
    (:func:`llmcourse.speculative.speculative_replica`).

    A replica may span ``tensor_parallel`` x ``data_parallel`` x ``pipeline_parallel`` GPUs
    (:func:`llmcourse.parallel.layout`; ``expert_parallel`` splits a MoE model's experts), its
    collectives on ``link`` (the GPU's own by default): see :func:`decode_step`. With several
    attention groups each holds the attention weights whole, so the weights held grow.

    Examples
    --------
    >>> r = replica("Qwen2.5-72B", "H100 SXM", tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300,
    ...             weight_bytes="fp8")
    >>> r.batch, round(r.step.step_time.to(_MS).m, 1), round(r.throughput.m), r.fits
    (94, 32.3, 1123, True)
    >>> e = replica("Qwen2.5-72B", "H100 SXM", tensor_parallel=2, context_tokens=2_300, weight_bytes="fp8",
    ...             assumptions="envelope")
    >>> round(e.throughput.m), round(e.cost_per_million_output_tokens.m, 2)
    (4387, 0.32)
    """
    return _replica_setup(
        model, gpu, tensor_parallel, prompt_tokens, answer_tokens, context_tokens, weight_bytes, kv_bytes,
        price_per_hour, assumptions, bandwidth_efficiency, compute_efficiency, usable_fraction, cached_prompt_tokens,
        speculation, pipeline_parallel, data_parallel, expert_parallel, link,
    )(batch)  # fmt: skip


@checked
def _replica_at(
    model: Model | str,
    gpu: GPU | str,
    *,
    tensor_parallel: int = 1,
    prompt_tokens: float | None = None,
    answer_tokens: float | None = None,
    context_tokens: float | None = None,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    price_per_hour: Any = None,
    assumptions: Assumptions | str | None = None,
    bandwidth_efficiency: float | None = None,
    compute_efficiency: float | None = None,
    usable_fraction: float | None = None,
    cached_prompt_tokens: float = 0,
    speculation: Any = None,
    pipeline_parallel: int = 1,
    data_parallel: int = 1,
    expert_parallel: int | None = None,
    link: Any = None,
) -> Callable[[int | None], Replica]:
    """``lambda batch: replica(model, gpu, batch=batch, ...)`` for a caller that asks one replica at several
    batches (a batch it has checked): :func:`replica`'s checks (the same parameters, checked by the same names)
    and its set-up done once, here, then each batch's replica by replica()'s own path (for a replica without
    speculation, the function also has ``tpot_ms``: see :func:`_replica_of`)."""
    return _replica_setup(
        model, gpu, tensor_parallel, prompt_tokens, answer_tokens, context_tokens, weight_bytes, kv_bytes,
        price_per_hour, assumptions, bandwidth_efficiency, compute_efficiency, usable_fraction, cached_prompt_tokens,
        speculation, pipeline_parallel, data_parallel, expert_parallel, link,
    )  # fmt: skip


def _replica_setup(
    model: Any,
    gpu: Any,
    tensor_parallel: Any,
    prompt_tokens: Any,
    answer_tokens: Any,
    context_tokens: Any,
    weight_bytes: Any,
    kv_bytes: Any,
    price_per_hour: Any,
    assumptions: Any,
    bandwidth_efficiency: Any,
    compute_efficiency: Any,
    usable_fraction: Any,
    cached_prompt_tokens: Any,
    speculation: Any,
    pipeline_parallel: Any,
    data_parallel: Any,
    expert_parallel: Any,
    link: Any,
) -> Callable[[int | None], Replica]:
    """:func:`replica` once ``@checked`` has checked its arguments, as a function of the batch."""
    m, g = _model(model), _gpu(gpu)
    a = _replaced(
        resolve(assumptions),
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
        memory_fraction=usable_fraction,
    )
    if (speculation if speculation is not None else a.speculation) is not None:
        from llmcourse.speculative import speculative_replica  # it builds on this function

        spec = speculation if speculation is not None else a.speculation

        def speculative_at(batch: int | None) -> Replica:
            return speculative_replica(
                m,
                g,
                spec,
                tensor_parallel=tensor_parallel,
                batch=batch,
                prompt_tokens=prompt_tokens,
                answer_tokens=answer_tokens,
                context_tokens=context_tokens,
                weight_bytes=weight_bytes,
                kv_bytes=kv_bytes,
                price_per_hour=price_per_hour,
                assumptions=dataclasses.replace(a, speculation=None),  # replace() ignores None values
                cached_prompt_tokens=cached_prompt_tokens,
            )

        return speculative_at
    shape = dict(
        data_parallel=data_parallel, pipeline_parallel=pipeline_parallel, expert_parallel=expert_parallel, link=link
    )
    return _replica_of(
        m, g, a, tensor_parallel, prompt_tokens, answer_tokens, context_tokens, weight_bytes, kv_bytes, price_per_hour,
        cached_prompt_tokens, shape,
    )  # fmt: skip


def _own(q: pint.Quantity) -> pint.Quantity:
    """A new quantity equal to ``q``: a kept set-up's figure given to a caller as its own (pint's in-place
    operations, such as ``ito``, change a quantity, and must not change the next caller's)."""
    return quantity(q._magnitude, q._units)


def _owned(base: dict[str, Any]) -> dict[str, Any]:
    """A kept set-up's figures of a replica (``base``), its quantities (the price among them) the caller's own
    (:func:`_own`)."""
    price = base["price_per_hour"]
    return {**base, "weights": _own(base["weights"]), "usable_memory": _own(base["usable_memory"]),
            "kv_per_sequence": _own(base["kv_per_sequence"]),
            "price_per_hour": None if price is None else _own(price)}  # fmt: skip


@_kept
def _replica_of(
    m: Model,
    g: GPU,
    a: Assumptions,
    tensor_parallel: int,
    prompt_tokens: float | None,
    answer_tokens: float | None,
    context_tokens: float | None,
    weight_bytes: Any,
    kv_bytes: Any,
    price_per_hour: Any,
    cached_prompt_tokens: float,
    shape: dict[str, Any],
) -> Callable[[int | None], Replica]:
    """:func:`replica` (without speculation) for checked inputs, as a function of the batch: everything that
    does not depend on the batch (the layout, the memory, the largest batch, the price) worked out once,
    so that a search over the batch (:func:`plan`) computes only each batch's decode step and prefill. The same
    inputs give the same set-up, kept (:func:`_kept`)."""
    lay = layout(m, g, tensor_parallel=tensor_parallel, **shape)
    tp, n_all = lay.tensor_parallel, lay.n_gpus
    final, p, ans = _workload(a, context_tokens, prompt_tokens, answer_tokens)
    _check_positions(m, final, "context_tokens" if p is None else "prompt_tokens + answer_tokens")
    # plain floats in bytes from here (the formulas by value); the units are attached to what is returned
    w = _weights_si(m, weight_bytes)
    if lay.data_parallel > 1:  # each attention group holds everything but the experts
        w_exp = F["weight_bytes"].value(
            params=m.expert_params, weight_bytes_per_param=_bytes_si(weight_bytes, "weight_bytes")
        )
        w = F["dp_weights_held"].value(weights=w, expert_weights=w_exp, data_parallel=lay.data_parallel)
    mem = _usable_si(g, check_value(n_all, SYMBOLS["n_gpus"], "n_gpus"), a, w)
    kv_seq = _kv_sequence_si(m, final, kv_bytes) * _kv_copies(m, tp, a)  # the replica's memory for one sequence
    top = _max_batch_si(mem, w, kv_seq)
    price = None
    if price_per_hour is not None or g.price_per_hour is not None:
        price = _price(g, price_per_hour)
    base = dict(
        model=m.name,
        gpu=g.name,
        tensor_parallel=tp,
        assumptions=a,
        weights=quantity(w * _B_GB, _GB._units),
        usable_memory=quantity(mem * _B_GB, _GB._units),
        kv_per_sequence=quantity(kv_seq * _B_GB, _GB._units),
        max_batch=top,
        context_tokens=final,
        matmul=matmul_precision(weight_bytes, g, a),
        spec=m,
        prompt_tokens=p,
        answer_tokens=ans,
        price_per_hour=price,
        layout=lay,
    )
    if cached_prompt_tokens:  # checked under plan()'s name (the prefill checks it again as its cached_tokens)
        _number(cached_prompt_tokens, "cached_prompt_tokens", allow_zero=True)
    if cached_prompt_tokens and p is None:
        raise InputError("cached_prompt_tokens needs prompt_tokens (the cached tokens are part of the prompt).")
    where = f"one {g.name}" if n_all == 1 else f"{n_all} x {g.name}"
    if w >= mem:
        reason = (
            f"weights {fmt(quantity(w, _B), 'GB')} don't fit in the {fmt(quantity(mem, _B), 'GB')} usable on {where}: store fewer bytes per "
            f"weight, use a GPU with more memory, or use tensor_parallel={gpus_for_weights(m, g, weight_bytes, a)}."
        )
        return _unfit(base, reason)
    if top < 1:
        reason = (
            f"after {fmt(quantity(w, _B), 'GB')} of weights, {fmt(quantity(mem - w, _B), 'GB')} is left on {where}: "
            f"less than one sequence's KV cache ({fmt(quantity(kv_seq, _B), 'GB')}); shorten the context, quantize, "
            "or add GPUs."
        )
        return _unfit(base, reason)
    kv_ctx = final if a.kv_read_context == "final" or p is None else p + ans / 2
    # decode_step() and prefill() of this layout, their inputs checked above: the weights must fit the GPUs
    _check_weights_fit(m, g, weight_bytes, n_all, "n_gpus", a)
    cp = base["matmul"]

    # the decode step of this layout as a function of the batch, and the prefill of its prompts as a function of
    # their number, each set up once (at its first use); one prompt's prefill does not depend on the batch
    decoder = _once(lambda: _decoder(m, g, lay, a, kv_ctx, weight_bytes, kv_bytes, cp))
    prefiller = _once(lambda: _prefiller(m, g, lay, a, p, cached_prompt_tokens, weight_bytes, cp))
    first_ms = _once(lambda: _S_MS * prefiller()(1, True))  # one prompt's Prefill.time in ms, without the Prefill

    # a batch's step, prefill and time per token in ms, as tpot_ms found them (kept with the set-up: a search
    # against another target, or the same one again, asks mostly the same batches)
    probed: dict[int, tuple[float, float | None, float]] = {}

    def tpot_ms(batch: int) -> float:
        """``at(batch).tpot`` in milliseconds, as a plain float: the step and the batch's prefill alone."""
        known = probed.get(batch)
        if known is not None:
            return known[2]
        step_ms = _S_MS * decoder()(batch, True)
        if not (a.prefill_interference and p is not None):
            probed[batch] = (step_ms, None, step_ms)
            return step_ms
        pre_ms = first_ms() if batch == 1 else _S_MS * prefiller()(batch, True)
        tpot = F["interleaved_tpot"].value(
            step_time=step_ms * _MS_S, prefill_time=pre_ms * _MS_S, batch=batch, answer_tokens=ans
        )
        probed[batch] = (step_ms, pre_ms, tpot * _S_MS)
        return tpot * _S_MS

    def figures(batch: int) -> tuple[float, float, float]:
        """``at(batch)``'s ``ttft`` and ``tpot`` in milliseconds and ``requests_per_second`` in 1/s, as plain
        floats: the formulas of the replica's properties by value, in the same order, to the same floats (for a
        prompt and an answer given), without building the replica, its step or its prefills."""
        first = first_ms()  # Prefill.time of one prompt, in ms
        ttft = F["first_token_time"].value(request_overhead=a.request_overhead_ms * _MS_S, prefill_time=first * _MS_S)
        step_ms, pre_ms, _ = probed.get(batch) or (None, None, None)  # the search's own figures of this batch
        if step_ms is None:
            step_ms = _S_MS * decoder()(batch, True)  # DecodeStep.step_time, in ms
        if pre_ms is None:
            pre_ms = first if batch == 1 else _S_MS * prefiller()(batch, True)  # Prefill.time, in ms
        step_s, pre_s = step_ms * _MS_S, _MS_S * pre_ms
        tpot_ms = step_ms
        if a.prefill_interference:  # the batch's prefill between a user's steps
            tpot_ms = _S_MS * F["interleaved_tpot"].value(
                step_time=step_s, prefill_time=pre_s, batch=batch, answer_tokens=ans
            )
        if a.count_prefill:
            throughput = F["cycle_throughput"].value(
                batch=batch, answer_tokens=ans, prefill_time=pre_s, step_time=step_s
            )
        else:
            throughput = F["throughput"].value(batch=batch, step_time=step_s)
        return _S_MS * ttft, tpot_ms, throughput / ans

    def at(batch: int | None) -> Replica:
        b = top if batch is None else int(batch)
        reason = "fits"
        if b > top:
            reason = (
                f"a batch of {b} needs {fmt(quantity(w + b * kv_seq, _B), 'GB')} but {fmt(quantity(mem, _B), 'GB')} is "
                f"usable on {where}: "
                f"at most {top} sequences of {final:,.0f} tokens fit."
            )
        step = decoder()(b)
        first = batch_pre = None
        if p is not None:
            first = prefiller()(1)  # each replica its own Prefill (the set-up is kept, and shared)
            batch_pre = first if b == 1 else prefiller()(b)
        return Replica(
            batch=b,
            step=step,
            first_prefill=first,
            batch_prefill=batch_pre,
            reason=reason,
            kv_read_tokens=kv_ctx,
            cached_prompt_tokens=float(cached_prompt_tokens),
            **_owned(base),
        )

    at.tpot_ms = tpot_ms  # type: ignore[attr-defined]
    if p is not None:
        at.figures = figures  # type: ignore[attr-defined]
    at.base, at.unfit = base, None  # type: ignore[attr-defined]
    return at


def _unfit(base: dict[str, Any], reason: str) -> Callable[[int | None], Replica]:
    """:func:`_replica_of`'s answer for a replica that cannot serve (``reason``): at any batch, no step."""

    def at(batch: int | None) -> Replica:
        return Replica(batch=0, reason=reason, **_owned(base))

    at.base, at.unfit = base, reason  # type: ignore[attr-defined]
    return at


@checked
def gpus_for_weights(
    model: Model | str, gpu: GPU | str, weight_bytes: Any = 2, assumptions: Any = None, *, power_of_two: bool = True
) -> int:
    """The tensor-parallel degree a model's weights need: the fewest GPUs, rounded up to a power of
    two (tensor parallelism splits attention heads, so engines take 1, 2, 4 or 8), whose usable
    memory holds more than the weights; ``power_of_two=False`` gives the fewest GPUs unrounded.

    Examples
    --------
    >>> gpus_for_weights("Llama-3.1-70B", "H100 SXM"), gpus_for_weights("Llama-3.1-70B", "H100 SXM", "fp8")
    (2, 1)
    >>> gpus_for_weights("Llama-3.1-405B", "H100 SXM"), gpus_for_weights("Llama-3.1-405B", "H100 SXM", power_of_two=False)
    (16, 12)
    """
    m, g = _model(model), _gpu(gpu)
    w = _weights(m, weight_bytes)
    per_gpu = usable_memory(g, 1, weights=w, assumptions=assumptions)
    need = int(F["gpus_for_weights"](weights=w, gpu_memory=per_gpu, usable_fraction=1).m)
    if to(need * per_gpu - w, "B").m <= 0:  # exactly full: nothing left for the KV cache
        need += 1
    return 2 ** math.ceil(math.log2(need)) if power_of_two else need


@dataclass(frozen=True)
class ComputeBudget:
    """A replica's FLOP/s at a load: what its prompts need, what decode uses, what it has."""

    prefill: pint.Quantity
    decode: pint.Quantity
    usable: pint.Quantity

    @property
    def idle(self) -> pint.Quantity:
        """What decode leaves of the usable FLOP/s."""
        return to(self.usable - self.decode, _PFLOP_S)

    @property
    def prefill_fits(self) -> bool:
        """Whether the prompts' FLOP/s fit in what decode leaves idle."""
        return bool(self.prefill <= self.idle)


def compute_budget(rep: Replica, output_tokens_per_s: pint.Quantity) -> ComputeBudget:
    """Does the compute decode leaves idle hold the prefill? At ``output_tokens_per_s`` answer tokens per
    second on ``rep``, its prompts need ``flops_per_param`` x active parameters per prompt token, decode
    as much per answer token, and the replica has its GPUs' peak at its matmul precision times the
    compute efficiency.

    Examples
    --------
    >>> r = replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=2, batch=64, prompt_tokens=2_000, answer_tokens=400,
    ...             weight_bytes="fp8", assumptions="capacity")
    >>> b = compute_budget(r, Q_(1_728, "1/s"))
    >>> round(b.prefill.to(_PFLOP_S).m, 2), round(b.idle.to(_PFLOP_S).m, 2), b.prefill_fits
    (1.22, 0.75, False)
    """
    if not isinstance(rep, Replica) or rep.spec is None or rep.answer_tokens is None:
        raise InputError("compute_budget needs a Replica built with prompt_tokens and answer_tokens.")
    x = as_quantity(output_tokens_per_s, "1/s", "output_tokens_per_s")
    a, m, g = rep.assumptions, rep.spec, gpus.get(rep.gpu)
    per_param = Q_(a.flops_per_param, _FLOP)
    prompts = F["token_rate"](request_rate=x / rep.answer_tokens, tokens_per_request=rep.prompt_tokens)
    need = F["prefill_compute_rate"](token_rate=prompts, flops_per_param=per_param, params=m.active_params)
    used = F["prefill_compute_rate"](token_rate=x, flops_per_param=per_param, params=m.active_params)
    usable = rep.tensor_parallel * g.peak_flops(rep.matmul) * a.compute_efficiency
    return ComputeBudget(prefill=to(need, _PFLOP_S), decode=to(used, _PFLOP_S), usable=to(usable, _PFLOP_S))


# --- a batch's whole life: prefill then decode ------------------------------------------------------
@dataclass(frozen=True)
class RequestCycle:
    """A batch of requests from prefill to last token (the replica model's cycle).

    The decode steps read each sequence's KV cache at the context the assumptions say (the
    average, prompt + answer / 2, for the lab and the course). ``throughput`` counts decode
    steps only; ``end_to_end_throughput`` divides the tokens by prefill plus decode time, which
    is what a GPU-hour buys.
    """

    decode: DecodeStep
    prefill: Prefill
    answer_tokens: int
    price_per_hour: pint.Quantity
    n_gpus: int = 1
    replica: Replica | None = field(default=None, repr=False)

    @property
    def total_time(self) -> pint.Quantity:
        """Prefill of every prompt plus one decode step per answer token."""
        tokens = self.decode.batch * self.answer_tokens
        return to(tokens / self.end_to_end_throughput, _S)

    @property
    def throughput(self) -> pint.Quantity:
        return self.decode.throughput

    @property
    def end_to_end_throughput(self) -> pint.Quantity:
        return to(
            F["cycle_throughput"](
                batch=self.decode.batch,
                answer_tokens=self.answer_tokens,
                prefill_time=self.prefill.time,
                step_time=self.decode.step_time,
            ),
            _PER_S,
        )

    @property
    def cost_per_million_output_tokens(self) -> pint.Quantity:
        return cost_per_million(self.price_per_hour, self.end_to_end_throughput, self.n_gpus)

    @property
    def decode_only_cost_per_million(self) -> pint.Quantity:
        return cost_per_million(self.price_per_hour, self.throughput, self.n_gpus)


@checked
def request_cycle(
    model: Model | str,
    gpu: GPU | str,
    *,
    batch: int,
    prompt_tokens: float,
    answer_tokens: float,
    price_per_hour: Any = None,
    n_gpus: int = 1,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
    bandwidth_efficiency: float | None = None,
    compute_efficiency: float | None = None,
) -> RequestCycle:
    """Prefill ``batch`` prompts together, then decode ``answer_tokens`` steps: the cycle of
    :func:`replica` for that batch, whether or not its KV cache fits.

    Examples
    --------
    >>> c = request_cycle("Llama-3.1-8B", "H100 SXM", batch=1, prompt_tokens=256, answer_tokens=64,
    ...                   price_per_hour=Q_(3, "USD/hour"))
    >>> round(c.cost_per_million_output_tokens.m, 2)
    6.66
    """
    a = _number(answer_tokens, "answer_tokens", integer=True)
    m, g = _model(model), _gpu(gpu)
    _check_positions(m, prompt_tokens + a, "prompt_tokens + answer_tokens")
    _check_weights_fit(m, g, weight_bytes, n_gpus, "n_gpus", assumptions)
    r = replica(
        m,
        g,
        tensor_parallel=n_gpus,
        batch=batch,
        prompt_tokens=prompt_tokens,
        answer_tokens=a,
        weight_bytes=weight_bytes,
        kv_bytes=kv_bytes,
        price_per_hour=price_per_hour,
        assumptions=assumptions,
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
    )
    r._need_step()
    if r.price_per_hour is None:
        _price(r.gpu, None)  # raises: no price in the catalog
    return RequestCycle(
        decode=r.step,
        prefill=r.batch_prefill,
        answer_tokens=int(a),
        price_per_hour=r.price_per_hour,
        n_gpus=r.tensor_parallel,
        replica=r,
    )


@checked
def cost_per_million(price_per_hour: pint.Quantity, tokens_per_s: pint.Quantity, n_gpus: int = 1) -> pint.Quantity:
    """Dollars per million tokens for ``n_gpus`` GPUs producing ``tokens_per_s`` at full load.

    Examples
    --------
    >>> cost_per_million(Q_(2.5, "USD/hour"), Q_(4387, "1/s"), n_gpus=2)  # doctest: +ELLIPSIS
    <Quantity(0.3165..., 'USD')>
    """
    per_token = F["cost_per_token"](
        n_gpus=n_gpus,
        price=price_per_hour,
        throughput=tokens_per_s,
    )
    return to(_times(per_token, 1e6), _USD)  # pint's product, on the magnitude


# --- the whole-table method -------------------------------------------------------------------------
@dataclass(frozen=True)
class ServingPlan:
    """The result of :func:`serving_plan`. ``fits`` is False when the weights alone do not fit."""

    model: str
    gpu: str
    n_gpus: int
    fits: bool
    message: str
    weights: pint.Quantity
    usable_memory: pint.Quantity
    kv_per_sequence: pint.Quantity
    batch: int = 0
    step_time: pint.Quantity | None = None
    tokens_per_s_per_user: pint.Quantity | None = None
    tokens_per_s_alone: pint.Quantity | None = None
    output_tokens_per_s: pint.Quantity | None = None
    prefill_time: pint.Quantity | None = None
    cost_per_million_output_tokens: pint.Quantity | None = None
    prefill_counted: bool = False
    replica: Replica | None = field(default=None, repr=False)

    def __getitem__(self, key: str) -> Any:
        """Dictionary-style access with the seed code's keys (``p["batch"]``, ``p["weights_gb"]``).

        Examples
        --------
        >>> p = serving_plan("Qwen2.5-7B", "H100 SXM", 1, 2_300, assumptions="envelope")
        >>> p["batch"], round(p["weights_gb"], 1)
        (430, 15.2)
        """
        if key == "weights_gb":
            return float(to(self.weights, _GB).m)
        if key in self.__dataclass_fields__:
            return getattr(self, key)
        raise KeyError(f"{key!r}: a serving plan has {', '.join(['weights_gb', *self.__dataclass_fields__])}")

    def __str__(self) -> str:
        if not self.fits:
            return self.message
        total = "tok/s total" + (" with prefill" if self.prefill_counted else "")
        text = (
            f"batch {self.batch}, {self.tokens_per_s_per_user.m:.0f} tok/s per user "
            f"({self.tokens_per_s_alone.m:.0f} if alone), {self.output_tokens_per_s.m:,.0f} {total}"
        )
        if self.prefill_time is not None:
            text += f", prefill {to(self.prefill_time, 's').m:.2f} s"
        if self.cost_per_million_output_tokens is not None:
            text += f", ${self.cost_per_million_output_tokens.m:.2f} per M output tokens at full load"
        return text


@checked
def serving_plan(
    model: Model | str,
    gpu: GPU | str,
    n_gpus: int,
    context_tokens: float,
    *,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    prompt_tokens: float | None = None,
    price_per_hour: Any = None,
    assumptions: Assumptions | str | None = None,
    usable_fraction: float | None = None,
    bandwidth_efficiency: float | None = None,
    compute_efficiency: float | None = None,
) -> ServingPlan:
    """Fill the GPUs' free memory with conversations of ``context_tokens`` and time one decode step:
    the table of the first worked example, from :func:`replica` with the largest batch.

    ``prompt_tokens`` (of the ``context_tokens``) gives the prefill time; the course's method (the
    default) needs it, since it charges each request's prefill to the throughput and the cost;
    ``assumptions="envelope"`` is the method of the table as first published (decode only, at the
    datasheet bandwidth). "Alone" is one user with no KV read. When the weights do not fit, the
    plan says so (``fits=False``).

    Examples
    --------
    >>> print(serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8", prompt_tokens=2_000,
    ...                    assumptions="envelope"))
    batch 94, 47 tok/s per user (92 if alone), 4,387 tok/s total, prefill 0.29 s, $0.32 per M output tokens at full load
    >>> print(serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8", prompt_tokens=2_000))
    batch 94, 12 tok/s per user (57 if alone), 1,123 tok/s total with prefill, prefill 0.17 s, $1.24 per M output tokens at full load
    >>> print(serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, assumptions="envelope"))
    weights 145 GB don't fit in 144 GB of usable memory: add GPUs or store fewer bytes per weight.
    """
    r = replica(
        model,
        gpu,
        tensor_parallel=n_gpus,
        context_tokens=context_tokens,
        prompt_tokens=prompt_tokens,
        weight_bytes=weight_bytes,
        kv_bytes=kv_bytes,
        price_per_hour=price_per_hour,
        assumptions=assumptions,
        usable_fraction=usable_fraction,
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
    )
    base = dict(
        model=r.model,
        gpu=r.gpu,
        n_gpus=r.tensor_parallel,
        weights=r.weights,
        usable_memory=r.usable_memory,
        kv_per_sequence=r.kv_per_sequence,
        replica=r,
    )
    if not r.fits:
        why = "don't fit in" if r.weights >= r.usable_memory else "leave no room for one conversation's KV cache in"
        msg = (
            f"weights {to(r.weights, 'GB').m:.0f} GB {why} {to(r.usable_memory, 'GB').m:.0f} GB of usable memory: "
            "add GPUs or store fewer bytes per weight."
        )
        return ServingPlan(fits=False, message=msg, **base)
    a, m, g = r.assumptions, _model(model), _gpu(gpu)
    alone = F["step_with_overhead"](
        step_time=F["weight_read_time"](
            weights=weights_read_per_step(m, 1, weight_bytes),
            n_gpus=r.tensor_parallel,
            bandwidth=g.bandwidth,
            bandwidth_efficiency=a.bandwidth_efficiency,
        ),
        step_overhead=Q_(a.step_overhead_ms, _MS) + decode_comm_time(m, r.layout, tokens=1, assumptions=a),
    )
    return ServingPlan(
        fits=True,
        message="fits",
        batch=r.batch,
        step_time=r.step.step_time,
        tokens_per_s_per_user=r.tokens_per_s_per_user,
        tokens_per_s_alone=to(1 / alone, _PER_S),
        output_tokens_per_s=r.throughput,
        prefill_time=None if r.first_prefill is None else to(r.first_prefill.time, _S),
        cost_per_million_output_tokens=r.cost_per_million_output_tokens,
        prefill_counted=r.counts_prefill,
        **base,
    )


# --- fleets ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fleet:
    """Replicas to meet a demand of output tokens per second, and what they cost."""

    demand: pint.Quantity
    throughput_per_replica: pint.Quantity
    usable_throughput_per_replica: pint.Quantity
    headroom: float
    prefill_counted: bool
    replicas: int
    gpus: int
    price_per_hour: pint.Quantity
    monthly_cost: pint.Quantity
    replicas_exact: float

    @property
    def headroom_fraction(self) -> float:
        """The share of each replica's throughput kept back: 1 - 1 / headroom."""
        return 1 - 1 / self.headroom


def _differs_but_headroom(x: Assumptions, y: Assumptions) -> bool:
    """Whether two sets of assumptions differ in anything but their names and headroom."""
    skip = {"name", "summary", "headroom"}
    return any(getattr(x, f) != getattr(y, f) for f in x.__dataclass_fields__ if f not in skip)


@checked
def fleet(
    demand: pint.Quantity,
    rep: Replica,
    *,
    headroom_fraction: float | None = None,
    headroom: float | None = None,
    price_per_hour: Any = None,
    assumptions: Assumptions | str | None = None,
) -> Fleet:
    """Size a fleet of replicas like ``rep`` for ``demand`` output tokens per second: each replica
    is counted at its throughput over the headroom (``headroom_fraction`` of it kept back, or
    ``headroom`` as a multiplier; by default the assumptions' headroom, which are the replica's
    own unless ``assumptions`` is given), and replicas = ceil(demand / what is left).

    Examples
    --------
    >>> r = replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=2, batch=64, context_tokens=2_400,
    ...             weight_bytes="fp8", assumptions="capacity")
    >>> f = fleet(Q_(140_000, "1/s"), r)
    >>> f.replicas, f.gpus, round(f.monthly_cost.to(_USD).m, -3)
    (81, 162, 296000.0)
    """
    if not isinstance(rep, Replica):
        raise InputError("rep must be a Replica: build one with llmcourse.replica(...).")
    d = demand
    if not rep.fits:
        raise InputError(f"cannot size a fleet of replicas that do not fit: {rep.reason}")
    a = rep.assumptions
    if assumptions is not None:
        given = resolve(assumptions)
        if _differs_but_headroom(given, a):
            raise InputError(
                f"the replica was built under assumptions {a.name!r}; build it with assumptions={given.name!r} too "
                "(a fleet takes only its headroom from assumptions=, or pass headroom=)."
            )
        a = a.replace(headroom=given.headroom)
    if headroom_fraction is not None and headroom is not None:
        raise InputError("give headroom_fraction (a share kept back) or headroom (a multiplier), not both.")
    if headroom_fraction is not None:
        hf = headroom_fraction
        if hf >= 1:
            raise InputError(f"headroom_fraction is the share of throughput kept back and must be below 1; got {hf}.")
        a = a.replace(headroom=1 / (1 - hf))
    elif headroom is not None:
        a = a.replace(headroom=headroom)
    x = rep.throughput
    usable = F["usable_throughput"](throughput=x, headroom_fraction=a.headroom_fraction)
    n = int(F["replicas_needed"](demand=d, throughput=usable).m)
    price = _price(rep.gpu, price_per_hour if price_per_hour is not None else rep.price_per_hour)
    total = n * rep.tensor_parallel
    cost = F["fleet_cost"](gpus=total, price=price, hours=HOURS_PER_MONTH)
    return Fleet(
        demand=to(d, _PER_S),
        throughput_per_replica=x,
        usable_throughput_per_replica=to(usable, _PER_S),
        headroom=a.headroom,
        prefill_counted=rep.counts_prefill,
        replicas=n,
        gpus=total,
        price_per_hour=price,
        monthly_cost=to(cost, _USD),
        replicas_exact=float(to(d / usable, "").m),
    )


@dataclass(frozen=True)
class PrefillPool:
    """GPUs that would do all prefill work on their own."""

    compute_rate: pint.Quantity
    gpus: int


@checked
def prefill_pool(
    input_tokens_per_s: pint.Quantity,
    model: Model | str,
    gpu: GPU | str,
    *,
    weight_bytes: Any = 2,
    compute_efficiency: float | None = None,
    assumptions: Assumptions | str | None = None,
) -> PrefillPool:
    """FLOP/s to prefill a stream of prompt tokens (``flops_per_param`` per active parameter) and
    the GPUs it takes at the assumptions' compute efficiency and matmul precision.

    Examples
    --------
    >>> p = prefill_pool(Q_(700_000, "1/s"), "Llama-3.1-70B", "H100 SXM")
    >>> round(p.compute_rate.to(_PFLOP_S).m), p.gpus
    (99, 200)
    """
    m, g = _model(model), _gpu(gpu)
    a = _replaced(resolve(assumptions), compute_efficiency=compute_efficiency)
    rate = F["prefill_compute_rate"](
        token_rate=input_tokens_per_s,
        flops_per_param=Q_(a.flops_per_param, _FLOP),
        params=m.active_params,
    )
    n = F["gpus_for_compute"](
        compute_rate=rate,
        peak_flops=g.peak_flops(matmul_precision(weight_bytes, g, a)),
        compute_efficiency=a.compute_efficiency,
    )
    return PrefillPool(compute_rate=to(rate, _PFLOP_S), gpus=int(n.m))


# --- the design planner ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Brief:
    """What a product asks of the serving system.

    ``requests_per_second`` may be a plain number (per second, as the name says) or a rate
    quantity; the targets must carry time units.

    Examples
    --------
    >>> Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms")).tpot_target
    <Quantity(50, 'millisecond')>
    >>> Brief(10, 2_000, 300, 1.0, Q_(50, "ms"))
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: ttft_target needs a unit: write Q_(1.0, 's') (or any unit of [time], such as s or ms), not the bare number 1.0.
    """

    requests_per_second: Any
    prompt_tokens: float
    answer_tokens: float
    ttft_target: pint.Quantity
    tpot_target: pint.Quantity
    #: The percentile each target is for (99: "p99 within the target"); None: the target is for the mean request
    #: with no queue, the replica model's figure. A percentile target is sized through the queueing simulator.
    ttft_percentile: float | None = None
    tpot_percentile: float | None = None

    @property
    def on_percentiles(self) -> bool:
        """Whether a target is for a percentile (then :func:`plan` sizes through the simulator)."""
        return self.ttft_percentile is not None or self.tpot_percentile is not None

    def __post_init__(self) -> None:
        r = self.requests_per_second
        rate = (
            as_quantity(r, "1/s", "requests_per_second")  # another pint registry's quantity is read here too
            if isinstance(r, pint.Quantity)
            else quantity(_number(r, "requests_per_second"), _PER_S)  # Q_(x, _PER_S), without pint's checks
        )
        _number(rate.magnitude, "requests_per_second")
        object.__setattr__(self, "requests_per_second", rate)
        for name in ("prompt_tokens", "answer_tokens"):  # at least one token each, as every estimate asks
            object.__setattr__(self, name, check_value(getattr(self, name), SYMBOLS[name], name))
        for name in ("ttft_target", "tpot_target"):
            q = as_quantity(getattr(self, name), "s", name)
            _number(q.magnitude, name)
            object.__setattr__(self, name, q)
        for name in ("ttft_percentile", "tpot_percentile"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, percentile_rank(getattr(self, name), name))


@dataclass(frozen=True)
class PercentileSizing:
    """How :func:`plan` sized a brief with percentile targets: by simulating one replica's queue
    (:func:`llmcourse.queueing.simulate`) at the rate each of ``replicas`` replicas receives, and what the
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


@dataclass(frozen=True)
class Plan:
    """The design planner's answer for one brief on one GPU type (see :func:`plan`)."""

    model: str
    gpu: str
    brief: Brief
    fits: bool
    reason: str
    weights: pint.Quantity
    usable_memory: pint.Quantity
    kv_per_request: pint.Quantity
    tensor_parallel: int = 1
    max_batch: int = 0
    batch: int = 0
    ttft: pint.Quantity | None = None
    tpot: pint.Quantity | None = None
    requests_per_second_per_gpu: pint.Quantity | None = None
    gpus: int | None = None
    in_flight: float | None = None
    price_per_hour: pint.Quantity | None = None
    cost_per_hour: pint.Quantity | None = None
    cost_per_million_output_tokens: pint.Quantity | None = None
    cost_per_thousand_requests: pint.Quantity | None = None
    bottleneck: str | None = None
    step: DecodeStep | None = field(default=None, repr=False)
    replica: Replica | None = field(default=None, repr=False)
    sizing: PercentileSizing | None = None  # set when the brief's targets are percentiles

    @property
    def throughput(self) -> pint.Quantity | None:
        """Output tokens per second of one replica at full load (the replica model's)."""
        return None if self.replica is None else self.replica.throughput

    @property
    def ttft_met(self) -> bool:
        """The time to first token within its target: at its percentile if the brief gives one (simulated), else
        the replica model's (no queue)."""
        if self.fits and self.sizing is not None and self.brief.ttft_percentile is not None:
            return _at_most(self.sizing.ttft, self.brief.ttft_target)
        return bool(self.fits and _at_most(self.ttft, self.brief.ttft_target))

    @property
    def tpot_met(self) -> bool:
        """The time per output token within its target: at its percentile if the brief gives one (simulated)."""
        if self.fits and self.sizing is not None and self.brief.tpot_percentile is not None:
            return _at_most(self.sizing.tpot, self.brief.tpot_target)
        return bool(self.fits and _at_most(self.tpot, self.brief.tpot_target))

    @property
    def meets_targets(self) -> bool:
        return self.ttft_met and self.tpot_met

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) rows for a review table."""
        if not self.fits:
            return [("fits", "no"), ("why", self.reason)]
        mark = {True: "\u2713", False: "\u2717"}
        ms = lambda q: f"{to(q, 'ms').m:,.1f} ms"  # noqa: E731
        from llmcourse.validation import plan_bands  # lazily: validation imports the planner

        z, b = self.sizing, self.brief
        if z is None:
            speed = [
                ("time to first token", f"{ms(self.ttft)} (target {ms(b.ttft_target)}) {mark[self.ttft_met]}"),
                ("time per output token", f"{ms(self.tpot)} (target {ms(b.tpot_target)}) {mark[self.tpot_met]}"),
            ]
        else:
            on_mean = lambda q: "" if q is not None else ", the mean with no queue"  # noqa: E731
            ttft = ms(z.ttft) if b.ttft_percentile is not None else ms(self.ttft)
            tpot = ms(z.tpot) if b.tpot_percentile is not None else ms(self.tpot)
            tl = z.label("ttft") if b.ttft_percentile is not None else "mean"
            pl = z.label("tpot") if b.tpot_percentile is not None else "mean"
            speed = [
                (
                    f"time to first token, {tl}",
                    f"{ttft} (target {ms(b.ttft_target)}{on_mean(b.ttft_percentile)}) {mark[self.ttft_met]}",
                ),
                (
                    f"time per output token, {pl}",
                    f"{tpot} (target {ms(b.tpot_target)}{on_mean(b.tpot_percentile)}) {mark[self.tpot_met]}",
                ),
                (
                    "sized on the mean instead",
                    f"{z.mean_replicas * self.tensor_parallel:,} GPUs: {z.label('ttft')} TTFT {ms(z.mean_ttft)}, "
                    f"{z.label('tpot')} TPOT {ms(z.mean_tpot)}",
                ),
            ]
        return [
            *speed,
            *plan_bands(self),
            ("batch (of at most)", f"{self.batch} ({self.max_batch})"),
            ("bottleneck", self.bottleneck),
            ("requests/s per GPU", f"{to(self.requests_per_second_per_gpu, '1/s').m:,.2f}"),
            (
                "GPUs",
                f"{self.gpus:,}"
                + (
                    f" ({self.gpus // self.tensor_parallel} x {self.tensor_parallel})"
                    if self.tensor_parallel > 1
                    else ""
                ),
            ),
            ("requests in flight", f"{self.in_flight:,.0f}"),
            ("$ per hour", f"${to(self.cost_per_hour, 'USD/hour').m:,.2f}"),
            ("$ per 1,000 requests", f"${to(self.cost_per_thousand_requests, 'USD').m:,.3f}"),
            ("$ per million answer tokens", f"${to(self.cost_per_million_output_tokens, 'USD').m:,.3f}"),
        ]

    def __str__(self) -> str:
        return "\n".join(f"{k:>28}: {v}" for k, v in self.rows())

    def _repr_html_(self) -> str:
        import html  # the band rows carry text from the data files

        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th><td>{html.escape(str(v))}</td></tr>"
            for k, v in self.rows()
        )
        return f"<table><caption>{self.model} on {self.gpu}</caption>{body}</table>"


@checked
def plan(
    model: Model | str,
    gpu: GPU | str,
    brief: Brief,
    *,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    price_per_hour: Any = None,
    tensor_parallel: int = 1,
    assumptions: Assumptions | str | None = None,
    memory_reserve: float | None = None,
    headroom: float | None = None,
    bandwidth_efficiency: float | None = None,
    compute_efficiency: float | None = None,
    cached_prompt_tokens: float = 0,
    speculation: Any = None,
    chunk_tokens: int | None = None,
    prompt_cv: float | None = None,
    answer_cv: float | None = None,
    simulated_requests: int = 4_000,
    seed: int = 0,
) -> Plan:
    """Design a fleet of replicas of ``tensor_parallel`` GPUs for a brief, through :func:`replica`.

    Each request's KV is sized for prompt + answer. The batch is the largest that fits and keeps
    the time per token within its target (a batch of 1 if none does; the plan then reports the
    target unmet); under the course's method that time includes the prefills of the requests that
    join the batch between a user's steps. The time to first token is one prompt's prefill (of its
    uncached part, with ``cached_prompt_tokens`` in a prefix cache). Requests per second per
    replica come from the replica's throughput (with each request's prefill charged under the
    course's and the planner's assumptions); replicas = ceil(rate x headroom / that); in flight
    by Little's law; cost per million answer tokens = GPUs x price per hour / answer tokens per
    hour. ``memory_reserve`` (the share of memory held back), ``headroom`` and the efficiencies
    override the assumptions; the six-step planner's method is ``assumptions="planner"``.

    **Percentile targets** (``Brief(..., ttft_percentile=99)``): the queue decides a percentile, so the plan
    simulates it (:func:`llmcourse.queueing.simulate`, ``simulated_requests`` Poisson arrivals with ``seed``,
    lengths spread by ``prompt_cv``/``answer_cv``, prompts prefilled whole or in chunks of ``chunk_tokens``, the
    cached prompt tokens as a prefix every request hits). Each replica, its batch capped at the plan's, takes an
    equal share of the traffic (a random router: a least-loaded one does a little better); the fewest replicas
    whose simulated percentiles meet the targets are the plan (no headroom on top: the queue is modelled, not
    allowed for), and ``plan.sizing`` says what the fleet sized on the mean would have given.

    Examples
    --------
    >>> b = Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms"))
    >>> p = plan("Llama-3.1-8B", "H100 SXM", b)
    >>> p.fits, p.meets_targets, p.bottleneck, p.gpus, p.batch
    (True, True, 'KV reads', 2, 123)
    >>> plan("Llama-3.1-8B", "H100 SXM", b, assumptions="planner").gpus
    1
    >>> tail = plan("Llama-3.1-8B", "H100 SXM", Brief(10, 2_000, 300, Q_(300, "ms"), Q_(50, "ms"), ttft_percentile=99))
    >>> tail.sizing.ttft <= Q_(300, "ms"), tail.gpus > p.gpus
    (True, True)
    """
    m, g, a, price = _plan_inputs(
        model,
        gpu,
        brief,
        assumptions,
        memory_reserve,
        headroom,
        bandwidth_efficiency,
        compute_efficiency,
        price_per_hour,
    )
    got = _planned(
        m, g, brief, a, price, tensor_parallel, weight_bytes, kv_bytes, cached_prompt_tokens, speculation, True
    )
    if got.unfit is not None:
        return Plan(fits=False, reason=got.unfit, **got.base)
    r, batch, replicas = got.replica, got.batch, got.replicas
    s, tp = r.step, r.tensor_parallel
    ttft, tpot, rps = got.ttft, got.tpot, got.rps
    sizing = None
    if brief.on_percentiles:
        if speculation is not None:
            raise InputError(
                "percentile targets are sized by simulating the queue, which does not model speculative decoding: "
                "give speculation=None, or targets on the mean (ttft_percentile=None, tpot_percentile=None)."
            )
        from llmcourse.queueing import size_to_percentiles  # lazily: the simulator imports the planner

        sizing = size_to_percentiles(
            m,
            g,
            brief,
            batch=batch,
            mean_replicas=replicas,
            tensor_parallel=tp,
            weight_bytes=weight_bytes,
            kv_bytes=kv_bytes,
            assumptions=a,
            cached_prompt_tokens=cached_prompt_tokens,
            chunk_tokens=chunk_tokens,
            prompt_cv=prompt_cv,
            answer_cv=answer_cv,
            requests=simulated_requests,
            seed=seed,
        )
        replicas = sizing.replicas
    n = replicas * tp
    in_flight = F["littles_law"](
        request_rate=brief.requests_per_second, time_in_system=_plus(ttft, _times(tpot, brief.answer_tokens))
    ).m
    per_token = F["cost_per_token"](
        n_gpus=n,
        price=price,
        throughput=F["token_rate"](request_rate=brief.requests_per_second, tokens_per_request=brief.answer_tokens),
    )
    bottleneck = (
        "compute" if s.bound == "compute" else "KV reads" if _greater(s.kv_read, s.weights_read) else "weight reads"
    )
    return Plan(
        fits=True,
        reason="fits",
        max_batch=r.max_batch,
        batch=batch,
        ttft=to(ttft, _MS),
        tpot=to(tpot, _MS),
        requests_per_second_per_gpu=to(_over(rps, tp), _PER_S),
        gpus=n,
        in_flight=float(in_flight),
        price_per_hour=price,
        cost_per_hour=to(_times(price, n), _USD_H),
        cost_per_million_output_tokens=to(_times(per_token, 1e6), _USD),
        cost_per_thousand_requests=to(_times(_times(per_token, brief.answer_tokens), 1e3), _USD),
        bottleneck=bottleneck,
        step=s,
        replica=r,
        sizing=sizing,
        **got.base,
    )


def _plan_inputs(
    model: Any,
    gpu: Any,
    brief: Any,
    assumptions: Any,
    memory_reserve: Any,
    headroom: Any,
    bandwidth_efficiency: Any,
    compute_efficiency: Any,
    price_per_hour: Any,
) -> tuple[Model, GPU, Assumptions, pint.Quantity]:
    """:func:`plan`'s checks of its inputs (after ``@checked``'s): the model, the GPU, the assumptions with
    their overrides, and the price."""
    m, g = _model(model), _gpu(gpu)
    if not isinstance(brief, Brief):
        raise InputError(
            "brief must be a Brief(requests_per_second, prompt_tokens, answer_tokens, ttft_target, tpot_target)."
        )
    fraction = None
    if memory_reserve is not None:
        reserve = _number(memory_reserve, "memory_reserve", allow_zero=True)
        if reserve >= 1:
            raise InputError(f"memory_reserve is the fraction of memory held back and must be below 1; got {reserve}.")
        fraction = 1 - reserve
    a = _replaced(
        resolve(assumptions),
        memory_fraction=fraction,
        headroom=headroom,
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
    )
    return m, g, a, _price(g, price_per_hour)


@dataclass(frozen=True)
class _Planned:
    """What :func:`plan` works out before the percentiles and the costs: the replica's figures at the
    batch it chose (``replica`` itself only when asked for), and the replicas the mean rate needs."""

    base: dict[str, Any]
    unfit: str | None
    batch: int = 0
    replica: Replica | None = None
    ttft: pint.Quantity | None = None  # ms
    tpot: pint.Quantity | None = None  # ms
    rps: pint.Quantity | None = None  # requests per second of one replica
    replicas: int = 0  # sized on the mean, with the assumptions' headroom


def _planned(
    m: Model,
    g: GPU,
    brief: Brief,
    a: Assumptions,
    price: pint.Quantity,
    tensor_parallel: int,
    weight_bytes: Any,
    kv_bytes: Any,
    cached_prompt_tokens: float,
    speculation: Any,
    with_replica: bool,
) -> _Planned:
    """:func:`plan`'s one path once its inputs are checked (:func:`_plan_inputs`): the replica set up once, the
    largest batch whose time per token meets the target (at least 1), the replica's time to first token, time
    per token and requests per second at that batch (as plain floats, the units attached here: the replica
    itself is built only ``with_replica``, first, as plan() builds it), and the replicas the brief's rate needs."""

    def at(b: int | None) -> Replica:  # a speculative replica: the batch search calls replica() each time
        return replica(
            m,
            g,
            tensor_parallel=tensor_parallel,
            batch=b,
            prompt_tokens=brief.prompt_tokens,
            answer_tokens=brief.answer_tokens,
            weight_bytes=weight_bytes,
            kv_bytes=kv_bytes,
            price_per_hour=price,
            assumptions=a,
            cached_prompt_tokens=cached_prompt_tokens,
            speculation=speculation,
        )

    priced = False  # whether the replica below is to be given the price (a speculative one has it)
    if (speculation if speculation is not None else a.speculation) is None:
        # replica()'s own path, its inputs checked here (a brief's lengths by the Brief): what does not depend on
        # the batch is worked out once for the search below. The price is the replica's only: none of the figures
        # depend on it, so the set-up is that of the catalog's price (kept across prices) and the price is given to
        # the replica built below
        at = _replica_of(  # type: ignore[assignment]
            m, g, a, tensor_parallel, brief.prompt_tokens, brief.answer_tokens, None, weight_bytes, kv_bytes, None,
            cached_prompt_tokens, dict(data_parallel=1, pipeline_parallel=1, expert_parallel=None, link=None),
        )  # fmt: skip
        priced = True
    got = getattr(at, "base", None)  # replica()'s own path: the figures of the largest batch, without its step
    if got is None:
        top = at(None)
        got, unfit, top_batch = vars(top), None if top.fits else top.reason, top.max_batch
    else:
        unfit, top_batch = at.unfit, got["max_batch"]  # type: ignore[attr-defined]
    base = dict(
        model=m.name,
        gpu=g.name,
        brief=brief,
        weights=_own(got["weights"]),
        usable_memory=_own(got["usable_memory"]),
        kv_per_request=_own(got["kv_per_sequence"]),
        tensor_parallel=got["tensor_parallel"],
    )
    if unfit is not None:
        return _Planned(base, unfit)
    # the largest batch whose step meets the target (the step grows with the batch); at least 1
    if hasattr(at, "tpot_ms"):  # the time per token alone: the search's one question of each batch
        tpot_ms, target = at.tpot_ms, brief.tpot_target
        if type(target) is Q_ and target._units == _MS._units:  # pint compares the magnitudes of one unit
            batch = max(1, _largest_within(tpot_ms, target._magnitude, top_batch))
        else:
            batch = max(1, largest_batch(lambda b: quantity(tpot_ms(b), _MS) <= target, top_batch))
    else:
        batch = max(1, largest_batch(lambda b: at(b).tpot <= brief.tpot_target, top_batch))
    r = at(batch) if with_replica or not hasattr(at, "figures") else None
    if r is not None and priced:
        r = dataclasses.replace(r, price_per_hour=price)  # checked by _plan_inputs, which gave it
    if hasattr(at, "figures"):  # the replica's properties on floats (Replica.ttft, .tpot, .requests_per_second)
        ttft_ms, tpot_ms_, rps_ = at.figures(batch)
        ttft, tpot, rps = quantity(ttft_ms, _MS), quantity(tpot_ms_, _MS), quantity(rps_, _PER_S)
    else:
        ttft, tpot, rps = r.ttft, r.tpot, r.requests_per_second  # each worked out once
    replicas = int(F["gpus_for_rate"](request_rate=brief.requests_per_second, headroom=a.headroom, rps_per_gpu=rps).m)
    return _Planned(base, None, batch, r, ttft, tpot, rps, replicas)


@checked
def _lever_plan(
    model: Model | str,
    gpu: GPU | str,
    brief: Brief,
    *,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    price_per_hour: Any = None,
    tensor_parallel: int = 1,
    assumptions: Assumptions | str | None = None,
    memory_reserve: float | None = None,
    headroom: float | None = None,
    bandwidth_efficiency: float | None = None,
    compute_efficiency: float | None = None,
    cached_prompt_tokens: float = 0,
    speculation: Any = None,
    chunk_tokens: int | None = None,
    prompt_cv: float | None = None,
    answer_cv: float | None = None,
    simulated_requests: int = 4_000,
    seed: int = 0,
) -> Plan | _LeverFigures:
    """What a lever ranking reads of :func:`plan` with the same arguments (whether it fits and why, the GPUs,
    the time to first token and per token, the cost per hour, whether the targets are met), worked out by
    plan()'s own path (:func:`_planned`) without the replica, its step, the in-flight count or the costs per
    token: plan() itself for percentile targets (sized through the simulator)."""
    if isinstance(brief, Brief) and brief.on_percentiles:
        return plan(
            model, gpu, brief, weight_bytes=weight_bytes, kv_bytes=kv_bytes, price_per_hour=price_per_hour,
            tensor_parallel=tensor_parallel, assumptions=assumptions, memory_reserve=memory_reserve,
            headroom=headroom, bandwidth_efficiency=bandwidth_efficiency, compute_efficiency=compute_efficiency,
            cached_prompt_tokens=cached_prompt_tokens, speculation=speculation, chunk_tokens=chunk_tokens,
            prompt_cv=prompt_cv, answer_cv=answer_cv, simulated_requests=simulated_requests, seed=seed,
        )  # fmt: skip
    m, g, a, price = _plan_inputs(
        model,
        gpu,
        brief,
        assumptions,
        memory_reserve,
        headroom,
        bandwidth_efficiency,
        compute_efficiency,
        price_per_hour,
    )
    got = _planned(
        m, g, brief, a, price, tensor_parallel, weight_bytes, kv_bytes, cached_prompt_tokens, speculation, False
    )
    if got.unfit is not None:
        return _LeverFigures(False, got.unfit)
    n = got.replicas * got.base["tensor_parallel"]
    ttft, tpot = to(got.ttft, _MS), to(got.tpot, _MS)  # as Plan holds them
    met = _at_most(ttft, brief.ttft_target) and _at_most(tpot, brief.tpot_target)  # Plan.meets_targets on the mean
    return _LeverFigures(True, "fits", n, ttft, tpot, to(_times(price, n), _USD_H), met)


class _LeverFigures(NamedTuple):
    """The fields of a :class:`Plan` a lever ranking reads (see :func:`_lever_plan`)."""

    fits: bool
    reason: str
    gpus: int | None = None
    ttft: pint.Quantity | None = None
    tpot: pint.Quantity | None = None
    cost_per_hour: pint.Quantity | None = None
    meets_targets: bool = False
