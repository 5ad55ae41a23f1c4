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

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pint

from llmcourse.catalog import GPU, Model, bytes_per_value, gpus, models
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.units import HOURS_PER_MONTH, Q_, as_quantity, fmt, plain_number

__all__ = [
    "Brief",
    "DecodeStep",
    "Fleet",
    "Plan",
    "Prefill",
    "PrefillPool",
    "Replica",
    "RequestCycle",
    "ServingPlan",
    "Traffic",
    "cost_per_million",
    "decode_step",
    "fleet",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token",
    "largest_batch",
    "max_batch",
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


# --- input checking -------------------------------------------------------------------------
def _model(model: Model | str) -> Model:
    if isinstance(model, Model):
        return model
    return models[model]


def _gpu(gpu: GPU | str) -> GPU:
    if isinstance(gpu, GPU):
        return gpu
    return gpus[gpu]


def _bytes(value: Any, name: str) -> pint.Quantity:
    """Bytes per value from a precision name, a plain number of bytes, or a byte quantity."""
    if isinstance(value, pint.Quantity):
        q = as_quantity(value, B, name)
        _number(q.to(B).magnitude, name)
        return q.to(B)
    try:
        return Q_(bytes_per_value(value), B)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None


_number = plain_number  # the one check of counts and fractions (llmcourse.units)


def _fraction(value: Any, name: str) -> float:
    return _number(value, name, at_most=1.0)


def _price(gpu: GPU | str, price_per_hour: Any) -> pint.Quantity:
    """The price given, else the catalog's price of ``gpu`` (a GPU or the name of one)."""
    if price_per_hour is None:
        known = gpu if isinstance(gpu, GPU) else gpus.get(gpu)
        if known is None or known.price_per_hour is None:
            name = gpu.name if isinstance(gpu, GPU) else gpu
            raise InputError(f"{name} has no price in the catalog: pass price_per_hour=Q_(2.5, 'USD/hour').")
        return known.price_per_hour
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
    >>> round(t.request_rate.to("1/s").m, 1), round(t.output_tokens_per_s.m)
    (6.9, 2083)
    """
    rate = as_quantity(requests, "1/s", "requests (a rate such as Q_(200_000, '1/day'))")
    peak = F["peak_request_rate"](daily_rate=rate, peak_factor=_number(peak_factor, "peak_factor"))
    return Traffic(
        request_rate=peak,
        input_tokens_per_s=F["token_rate"](
            request_rate=peak, tokens_per_request=_number(prompt_tokens, "prompt_tokens")
        ),
        output_tokens_per_s=F["token_rate"](
            request_rate=peak, tokens_per_request=_number(answer_tokens, "answer_tokens")
        ),
    )


# --- memory ---------------------------------------------------------------------------------
def weight_bytes(model: Model | str, bytes_per_param: Any = 2) -> pint.Quantity:
    """Bytes of a model's weights: parameters x bytes per parameter.

    Examples
    --------
    >>> weight_bytes("Llama-3.1-8B").to("GB")
    <Quantity(16.06, 'gigabyte')>
    >>> weight_bytes("Qwen2.5-72B", "fp8").to("GB")
    <Quantity(72.7, 'gigabyte')>
    """
    m = _model(model)
    return F["weight_bytes"](params=m.params, weight_bytes_per_param=_bytes(bytes_per_param, "bytes_per_param"))


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


def kv_bytes_per_sequence(model: Model | str, context_tokens: float, kv_bytes: Any = 2) -> pint.Quantity:
    """KV cache bytes of one sequence of ``context_tokens`` tokens (sliding windows capped).

    Examples
    --------
    >>> kv_bytes_per_sequence("Qwen2.5-72B", 2_300).to("GB")
    <Quantity(0.753664, 'gigabyte')>
    >>> kv_bytes_per_sequence("Llama-3.1-8B", 32_768).to("GiB")
    <Quantity(4.0, 'gibibyte')>
    """
    m = _model(model)
    ctx = _cached_tokens(m, _number(context_tokens, "context_tokens"))
    return F["kv_bytes_per_sequence"](kv_per_token=kv_bytes_per_token(m, kv_bytes), context=ctx)


def usable_memory(gpu: GPU | str, n_gpus: int = 1, usable_fraction: float = 0.9) -> pint.Quantity:
    """Memory a server may use on ``n_gpus`` GPUs.

    Examples
    --------
    >>> usable_memory("H100 SXM", 2).to("GB")
    <Quantity(144.0, 'gigabyte')>
    """
    g = _gpu(gpu)
    return F["usable_memory"](
        n_gpus=_number(n_gpus, "n_gpus", integer=True),
        gpu_memory=g.memory,
        usable_fraction=_fraction(usable_fraction, "usable_fraction"),
    )


def max_batch(
    model: Model | str,
    gpu: GPU | str,
    context_tokens: float,
    *,
    n_gpus: int = 1,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    usable_fraction: float = 0.9,
) -> int:
    """Conversations whose KV cache fits beside the weights (0 if the weights alone do not fit).

    Examples
    --------
    >>> max_batch("Llama-3.1-8B", "H100 SXM", 2_048 + 512)
    166
    """
    m, g = _model(model), _gpu(gpu)
    mem = usable_memory(g, n_gpus, usable_fraction)
    w = _weights(m, weight_bytes)
    if w >= mem:
        return 0
    kv = kv_bytes_per_sequence(m, context_tokens, kv_bytes)
    return int(F["max_batch"](usable_memory=mem, weights=w, kv_per_sequence=kv).m)


def _weights(m: Model, per_param: Any) -> pint.Quantity:
    return weight_bytes(m, per_param)


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

    @property
    def bound(self) -> str:
        """``"memory"`` or ``"compute"``: which limit sets the step time."""
        return "compute" if self.compute_time > self.memory_time else "memory"

    @property
    def tokens_per_s_per_user(self) -> pint.Quantity:
        return (1 / self.step_time).to("1/s")

    @property
    def throughput(self) -> pint.Quantity:
        """Output tokens per second of the whole batch."""
        return F["throughput"](batch=self.batch, step_time=self.step_time).to("1/s")


def weights_read_per_step(model: Model | str, batch: int = 1, weight_bytes: Any = 2) -> pint.Quantity:
    """Weight bytes one decode step reads: all of them for a dense model; for a MoE model the
    shared weights plus the expected fraction of experts that ``batch`` tokens touch.

    Examples
    --------
    >>> weights_read_per_step("Llama-3.1-8B").to("GB")
    <Quantity(16.06, 'gigabyte')>
    >>> round(weights_read_per_step("Qwen3-30B-A3B", 1).to("GB").m, 2)
    6.7
    """
    m = _model(model)
    b = _bytes(weight_bytes, "weight_bytes")
    n = _number(batch, "batch", integer=True)
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


def decode_step(
    model: Model | str,
    gpu: GPU | str,
    *,
    batch: int = 1,
    context_tokens: float,
    n_gpus: int = 1,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    bandwidth_efficiency: float = 0.7,
    compute_efficiency: float = 0.5,
    attention_flops: bool = False,
    compute_precision: str = "bf16",
) -> DecodeStep:
    """Time of one decode step: the slower of reading the bytes and doing the FLOPs.

    Bytes: the weights (a MoE model: the experts the batch touches) plus every sequence's
    KV cache at ``context_tokens``. FLOPs: 2 per active parameter per sequence, plus the
    attention FLOPs at that context if ``attention_flops``.

    Examples
    --------
    >>> s = decode_step("Llama-3.1-8B", "H100 SXM", batch=1, context_tokens=2_048 + 256)
    >>> round(s.step_time.to("ms").m, 2), s.bound
    (6.98, 'memory')
    """
    m, g = _model(model), _gpu(gpu)
    n = _number(batch, "batch", integer=True)
    gpus_ = _number(n_gpus, "n_gpus", integer=True)
    eta_b = _fraction(bandwidth_efficiency, "bandwidth_efficiency")
    eta_f = _fraction(compute_efficiency, "compute_efficiency")
    ctx = _number(context_tokens, "context_tokens")
    w_read = weights_read_per_step(m, n, weight_bytes)
    kv_seq = kv_bytes_per_sequence(m, ctx, kv_bytes)
    f_tok = F["decode_flops_per_token"](flops_per_param=Q_(2, "FLOP"), active_params=m.active_params)
    if attention_flops:
        f_tok = f_tok + F["decode_attention_flops"](
            flops_per_param=Q_(2, "FLOP"), layers=m.layers, heads=m.heads, head_dim=m.head_dim, context=ctx
        )
    common = dict(batch=n, n_gpus=gpus_)
    mem_args = dict(bytes_read=w_read, kv_per_sequence=kv_seq, bandwidth=g.bandwidth, bandwidth_efficiency=eta_b)
    comp_args = dict(flops_per_token=f_tok, peak_flops=g.peak_flops(compute_precision), compute_efficiency=eta_f)
    phi = None
    if m.is_moe:
        phi = float(F["moe_fraction_touched"](experts_per_token=m.experts_per_token, experts=m.experts, batch=n).m)
    return DecodeStep(
        batch=int(n),
        weights_read=w_read.to("GB"),
        kv_read=(n * kv_seq).to("GB"),
        flops=(n * f_tok).to("GFLOP"),
        memory_time=F["decode_memory_time"](**common, **mem_args).to("ms"),
        compute_time=F["decode_compute_time"](**common, **comp_args).to("ms"),
        step_time=F["decode_step_time"](**common, **mem_args, **comp_args).to("ms"),
        fraction_of_experts=phi,
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

    @property
    def bound(self) -> str:
        return "compute" if self.compute_time >= self.memory_time else "memory"


def prefill(
    model: Model | str,
    gpu: GPU | str,
    prompt_tokens: float,
    *,
    prompts: int = 1,
    n_gpus: int = 1,
    weight_bytes: Any = 2,
    compute_efficiency: float = 0.5,
    bandwidth_efficiency: float = 0.7,
    attention: bool = True,
    compute_precision: str = "bf16",
) -> Prefill:
    """Prefill time: the slower of the FLOPs (2 per active parameter per token, plus the causal
    attention term if ``attention``) and one read of the weights.

    Examples
    --------
    >>> p = prefill("Llama-3.1-8B", "H100 SXM", 2_048)
    >>> round(p.compute_time.to("ms").m, 1), round(p.memory_time.to("ms").m, 1), p.bound
    (68.7, 6.8, 'compute')
    """
    m, g = _model(model), _gpu(gpu)
    t = _number(prompt_tokens, "prompt_tokens")
    n = _number(prompts, "prompts", integer=True)
    gpus_ = _number(n_gpus, "n_gpus", integer=True)
    eta_f = _fraction(compute_efficiency, "compute_efficiency")
    eta_b = _fraction(bandwidth_efficiency, "bandwidth_efficiency")
    two = Q_(2, "FLOP")
    linear = F["prefill_flops_linear"](flops_per_param=two, params=m.active_params, prompt_tokens=t)
    full = F["prefill_flops"](
        flops_per_param=two,
        params=m.active_params,
        prompt_tokens=t,
        layers=m.layers,
        heads=m.heads,
        head_dim=m.head_dim,
    )
    flops = full if attention else linear
    comp = dict(
        prompts=n,
        prefill_flops=flops,
        n_gpus=gpus_,
        peak_flops=g.peak_flops(compute_precision),
        compute_efficiency=eta_f,
    )
    mem = dict(weights=_weights(m, weight_bytes), n_gpus=gpus_, bandwidth=g.bandwidth, bandwidth_efficiency=eta_b)
    return Prefill(
        prompts=int(n),
        flops=(n * flops).to("TFLOP"),
        attention_flops=(n * (full - linear)).to("TFLOP"),
        compute_time=F["prefill_compute_time"](**comp).to("ms"),
        memory_time=F["weight_read_time"](**mem).to("ms"),
        time=F["prefill_time"](**(comp | mem)).to("ms"),
    )


# --- a batch's whole life: prefill then decode ------------------------------------------------------
@dataclass(frozen=True)
class RequestCycle:
    """A batch of requests from prefill to last token, as the interactive lab times it.

    The decode steps read each sequence's KV cache at the average context
    (prompt + answer / 2). ``throughput`` counts decode steps only; ``end_to_end_throughput``
    divides the tokens by prefill plus decode time, which is what a GPU-hour buys.
    """

    decode: DecodeStep
    prefill: Prefill
    answer_tokens: int
    price_per_hour: pint.Quantity

    @property
    def total_time(self) -> pint.Quantity:
        """Prefill of every prompt plus one decode step per answer token."""
        tokens = self.decode.batch * self.answer_tokens
        return (tokens / self.end_to_end_throughput).to("s")

    @property
    def throughput(self) -> pint.Quantity:
        return self.decode.throughput

    @property
    def end_to_end_throughput(self) -> pint.Quantity:
        return F["cycle_throughput"](
            batch=self.decode.batch,
            answer_tokens=self.answer_tokens,
            prefill_time=self.prefill.time,
            step_time=self.decode.step_time,
        ).to("1/s")

    @property
    def cost_per_million_output_tokens(self) -> pint.Quantity:
        return cost_per_million(self.price_per_hour, self.end_to_end_throughput)

    @property
    def decode_only_cost_per_million(self) -> pint.Quantity:
        return cost_per_million(self.price_per_hour, self.throughput)


def request_cycle(
    model: Model | str,
    gpu: GPU | str,
    *,
    batch: int,
    prompt_tokens: float,
    answer_tokens: float,
    price_per_hour: Any = None,
    **kwargs: Any,
) -> RequestCycle:
    """Prefill ``batch`` prompts together, then decode ``answer_tokens`` steps.

    ``kwargs`` go to :func:`decode_step` and :func:`prefill` (``n_gpus``, ``weight_bytes``,
    efficiencies). The lab's cost per million tokens divides by this whole time.

    Examples
    --------
    >>> c = request_cycle("Llama-3.1-8B", "H100 SXM", batch=1, prompt_tokens=256, answer_tokens=64,
    ...                   price_per_hour=Q_(3, "USD/hour"))
    >>> round(c.cost_per_million_output_tokens.m, 2)
    5.83
    """
    g = _gpu(gpu)
    a = _number(answer_tokens, "answer_tokens", integer=True)
    p = _number(prompt_tokens, "prompt_tokens")
    pre_kw = {k: v for k, v in kwargs.items() if k not in ("attention_flops", "kv_bytes")}
    dec_kw = {k: v for k, v in kwargs.items() if k != "attention"}
    step = decode_step(model, g, batch=batch, context_tokens=p + a / 2, **dec_kw)
    pre = prefill(model, g, p, prompts=batch, **pre_kw)
    return RequestCycle(decode=step, prefill=pre, answer_tokens=int(a), price_per_hour=_price(g, price_per_hour))


def cost_per_million(price_per_hour: pint.Quantity, tokens_per_s: pint.Quantity, n_gpus: int = 1) -> pint.Quantity:
    """Dollars per million tokens for ``n_gpus`` GPUs producing ``tokens_per_s`` at full load.

    Examples
    --------
    >>> cost_per_million(Q_(2.5, "USD/hour"), Q_(4387, "1/s"), n_gpus=2)  # doctest: +ELLIPSIS
    <Quantity(0.3165..., 'USD')>
    """
    per_token = F["cost_per_token"](
        n_gpus=_number(n_gpus, "n_gpus", integer=True),
        price=as_quantity(price_per_hour, "USD/hour", "price_per_hour"),
        throughput=as_quantity(tokens_per_s, "1/s", "tokens_per_s"),
    )
    return (per_token * 1e6).to("USD")


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

    def __getitem__(self, key: str) -> Any:
        """Dictionary-style access with the seed code's keys (``p["batch"]``, ``p["weights_gb"]``).

        Examples
        --------
        >>> p = serving_plan("Qwen2.5-7B", "H100 SXM", 1, 2_300)
        >>> p["batch"], round(p["weights_gb"], 1)
        (430, 15.2)
        """
        if key == "weights_gb":
            return float(self.weights.to("GB").m)
        if key in self.__dataclass_fields__:
            return getattr(self, key)
        raise KeyError(f"{key!r}: a serving plan has {', '.join(['weights_gb', *self.__dataclass_fields__])}")

    def __str__(self) -> str:
        if not self.fits:
            return self.message
        text = (
            f"batch {self.batch}, {self.tokens_per_s_per_user.m:.0f} tok/s per user "
            f"({self.tokens_per_s_alone.m:.0f} if alone), {self.output_tokens_per_s.m:,.0f} tok/s total"
        )
        if self.prefill_time is not None:
            text += f", prefill {self.prefill_time.to('s').m:.2f} s"
        if self.cost_per_million_output_tokens is not None:
            text += f", ${self.cost_per_million_output_tokens.m:.2f} per M output tokens at full load"
        return text


def serving_plan(
    model: Model | str,
    gpu: GPU | str,
    n_gpus: int,
    context_tokens: float,
    *,
    weight_bytes: Any = 2,
    usable_fraction: float = 0.9,
    kv_bytes: Any = 2,
    prompt_tokens: float | None = None,
    bandwidth_efficiency: float = 1.0,
    compute_efficiency: float = 0.5,
    price_per_hour: Any = None,
) -> ServingPlan:
    """Fill the GPUs' free memory with conversations and time one decode step.

    The method of the course's first worked table: usable memory = ``usable_fraction`` of
    the GPUs; batch = free memory / KV per conversation; each step reads the weights and
    every KV cache at peak bandwidth (``bandwidth_efficiency=1``). "Alone" is one user with
    no KV read. Prefill (if ``prompt_tokens``) uses 2 FLOPs per parameter at
    ``compute_efficiency``. When the weights do not fit, the plan says so (``fits=False``).

    Examples
    --------
    >>> print(serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8", prompt_tokens=2_000))
    batch 94, 47 tok/s per user (92 if alone), 4,387 tok/s total, prefill 0.29 s, $0.32 per M output tokens at full load
    >>> print(serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300))
    weights 145 GB don't fit in 144 GB of usable memory: add GPUs or store fewer bytes per weight.
    """
    m, g = _model(model), _gpu(gpu)
    n = int(_number(n_gpus, "n_gpus", integer=True))
    mem = usable_memory(g, n, usable_fraction)
    w = _weights(m, weight_bytes)
    kv_seq = kv_bytes_per_sequence(m, context_tokens, kv_bytes)
    base = dict(
        model=m.name,
        gpu=g.name,
        n_gpus=n,
        weights=w.to("GB"),
        usable_memory=mem.to("GB"),
        kv_per_sequence=kv_seq.to("GB"),
    )
    batch = max_batch(
        m, g, context_tokens, n_gpus=n, weight_bytes=weight_bytes, kv_bytes=kv_bytes, usable_fraction=usable_fraction
    )
    if batch < 1:
        why = "don't fit in" if w >= mem else "leave no room for one conversation's KV cache in"
        msg = (
            f"weights {w.to('GB').m:.0f} GB {why} {mem.to('GB').m:.0f} GB of usable memory: "
            "add GPUs or store fewer bytes per weight."
        )
        return ServingPlan(fits=False, message=msg, **base)
    eff = dict(
        n_gpus=n,
        weight_bytes=weight_bytes,
        kv_bytes=kv_bytes,
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
    )
    step = decode_step(m, g, batch=batch, context_tokens=context_tokens, **eff)
    alone = F["weight_read_time"](
        weights=weights_read_per_step(m, 1, weight_bytes),
        n_gpus=n,
        bandwidth=g.bandwidth,
        bandwidth_efficiency=_fraction(bandwidth_efficiency, "bandwidth_efficiency"),
    )
    pre = None
    if prompt_tokens is not None:
        pre = prefill(
            m,
            g,
            prompt_tokens,
            n_gpus=n,
            weight_bytes=weight_bytes,
            compute_efficiency=compute_efficiency,
            bandwidth_efficiency=bandwidth_efficiency,
            attention=False,
        ).time.to("s")
    cost = None
    if price_per_hour is not None or g.price_per_hour is not None:
        cost = cost_per_million(_price(g, price_per_hour), step.throughput, n)
    return ServingPlan(
        fits=True,
        message="fits",
        batch=batch,
        step_time=step.step_time,
        tokens_per_s_per_user=step.tokens_per_s_per_user,
        tokens_per_s_alone=(1 / alone).to("1/s"),
        output_tokens_per_s=step.throughput,
        prefill_time=pre,
        cost_per_million_output_tokens=cost,
        **base,
    )


# --- the roofline sizing method -------------------------------------------------------------------
@dataclass(frozen=True)
class Replica:
    """One tensor-parallel replica running a fixed batch (the roofline sizing method)."""

    model: str
    gpu: str
    tensor_parallel: int
    step: DecodeStep
    memory_used: pint.Quantity
    usable_memory: pint.Quantity

    @property
    def fits(self) -> bool:
        return bool(self.memory_used <= self.usable_memory)

    @property
    def throughput(self) -> pint.Quantity:
        return self.step.throughput

    @property
    def tokens_per_s_per_user(self) -> pint.Quantity:
        return self.step.tokens_per_s_per_user


def replica(
    model: Model | str,
    gpu: GPU | str,
    *,
    tensor_parallel: int,
    batch: int,
    context_tokens: float,
    weight_bytes: Any = 1,
    kv_bytes: Any = 2,
    bandwidth_efficiency: float = 0.7,
    compute_efficiency: float = 0.5,
    usable_fraction: float = 0.9,
) -> Replica:
    """A replica of ``tensor_parallel`` GPUs decoding ``batch`` sequences of ``context_tokens``.

    Examples
    --------
    >>> r = replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=2, batch=64, context_tokens=2_400)
    >>> round(r.step.step_time.to("ms").m, 1), round(r.throughput.m), r.fits
    (25.8, 2483, True)
    """
    m, g = _model(model), _gpu(gpu)
    tp = int(_number(tensor_parallel, "tensor_parallel", integer=True))
    step = decode_step(
        m,
        g,
        batch=batch,
        context_tokens=context_tokens,
        n_gpus=tp,
        weight_bytes=weight_bytes,
        kv_bytes=kv_bytes,
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
    )
    used = (_weights(m, weight_bytes) + step.kv_read).to("GB")
    return Replica(
        model=m.name,
        gpu=g.name,
        tensor_parallel=tp,
        step=step,
        memory_used=used,
        usable_memory=usable_memory(g, tp, usable_fraction).to("GB"),
    )


@dataclass(frozen=True)
class Fleet:
    """Replicas to meet a demand of output tokens per second, and what they cost."""

    demand: pint.Quantity
    usable_throughput_per_replica: pint.Quantity
    replicas: int
    gpus: int
    price_per_hour: pint.Quantity
    monthly_cost: pint.Quantity
    replicas_exact: float


def fleet(demand: pint.Quantity, rep: Replica, *, headroom_fraction: float = 0.3, price_per_hour: Any = None) -> Fleet:
    """Size a fleet: keep ``headroom_fraction`` of each replica's throughput back for prefill
    and bursts, then replicas = ceil(demand / what is left).

    Examples
    --------
    >>> r = replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=2, batch=64, context_tokens=2_400)
    >>> f = fleet(Q_(140_000, "1/s"), r)
    >>> f.replicas, f.gpus, round(f.monthly_cost.to("USD").m, -3)
    (81, 162, 296000.0)
    """
    d = as_quantity(demand, "1/s", "demand (output tokens per second, e.g. Q_(140_000, '1/s'))")
    _number(d.magnitude, "demand")
    hf = _number(headroom_fraction, "headroom_fraction", allow_zero=True)
    if hf >= 1:
        raise InputError(f"headroom_fraction is the share of throughput kept back and must be below 1; got {hf}.")
    usable = F["usable_throughput"](throughput=rep.throughput, headroom_fraction=hf)
    n = int(F["replicas_needed"](demand=d, throughput=usable).m)
    price = _price(rep.gpu, price_per_hour)
    total = n * rep.tensor_parallel
    cost = F["fleet_cost"](gpus=total, price=price, hours=HOURS_PER_MONTH)
    return Fleet(
        demand=d.to("1/s"),
        usable_throughput_per_replica=usable.to("1/s"),
        replicas=n,
        gpus=total,
        price_per_hour=price,
        monthly_cost=cost.to("USD"),
        replicas_exact=float((d / usable).to("").m),
    )


@dataclass(frozen=True)
class PrefillPool:
    """GPUs that would do all prefill work on their own."""

    compute_rate: pint.Quantity
    gpus: int


def prefill_pool(
    input_tokens_per_s: pint.Quantity, model: Model | str, gpu: GPU | str, *, compute_efficiency: float = 0.5
) -> PrefillPool:
    """FLOP/s to prefill a stream of prompt tokens (2 per active parameter) and the GPUs it takes.

    Examples
    --------
    >>> p = prefill_pool(Q_(700_000, "1/s"), "Llama-3.1-70B", "H100 SXM")
    >>> round(p.compute_rate.to("PFLOP/s").m), p.gpus
    (99, 200)
    """
    m, g = _model(model), _gpu(gpu)
    rate = F["prefill_compute_rate"](
        token_rate=as_quantity(input_tokens_per_s, "1/s", "input_tokens_per_s"),
        flops_per_param=Q_(2, "FLOP"),
        params=m.active_params,
    )
    n = F["gpus_for_compute"](
        compute_rate=rate, peak_flops=g.flops, compute_efficiency=_fraction(compute_efficiency, "compute_efficiency")
    )
    return PrefillPool(compute_rate=rate.to("PFLOP/s"), gpus=int(n.m))


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

    def __post_init__(self) -> None:
        r = self.requests_per_second
        rate = (
            as_quantity(r, "1/s", "requests_per_second")
            if isinstance(r, pint.Quantity | str)
            else Q_(_number(r, "requests_per_second"), "1/s")
        )
        _number(rate.magnitude, "requests_per_second")
        object.__setattr__(self, "requests_per_second", rate)
        object.__setattr__(self, "prompt_tokens", _number(self.prompt_tokens, "prompt_tokens"))
        object.__setattr__(self, "answer_tokens", _number(self.answer_tokens, "answer_tokens"))
        for name in ("ttft_target", "tpot_target"):
            q = as_quantity(getattr(self, name), "s", name)
            _number(q.magnitude, name)
            object.__setattr__(self, name, q)


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

    @property
    def ttft_met(self) -> bool:
        return bool(self.fits and self.ttft <= self.brief.ttft_target)

    @property
    def tpot_met(self) -> bool:
        return bool(self.fits and self.tpot <= self.brief.tpot_target)

    @property
    def meets_targets(self) -> bool:
        return self.ttft_met and self.tpot_met

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) rows for a review table."""
        if not self.fits:
            return [("fits", "no"), ("why", self.reason)]
        mark = {True: "\u2713", False: "\u2717"}
        ms = lambda q: f"{q.to('ms').m:,.1f} ms"  # noqa: E731
        return [
            ("time to first token", f"{ms(self.ttft)} (target {ms(self.brief.ttft_target)}) {mark[self.ttft_met]}"),
            ("time per output token", f"{ms(self.tpot)} (target {ms(self.brief.tpot_target)}) {mark[self.tpot_met]}"),
            ("batch (of at most)", f"{self.batch} ({self.max_batch})"),
            ("bottleneck", self.bottleneck),
            ("requests/s per GPU", f"{self.requests_per_second_per_gpu.to('1/s').m:,.2f}"),
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
            ("$ per hour", f"${self.cost_per_hour.to('USD/hour').m:,.2f}"),
            ("$ per 1,000 requests", f"${self.cost_per_thousand_requests.to('USD').m:,.3f}"),
            ("$ per million answer tokens", f"${self.cost_per_million_output_tokens.to('USD').m:,.3f}"),
        ]

    def __str__(self) -> str:
        return "\n".join(f"{k:>28}: {v}" for k, v in self.rows())

    def _repr_html_(self) -> str:
        body = "".join(f"<tr><th style='text-align:left'>{k}</th><td>{v}</td></tr>" for k, v in self.rows())
        return f"<table><caption>{self.model} on {self.gpu}</caption>{body}</table>"


def plan(
    model: Model | str,
    gpu: GPU | str,
    brief: Brief,
    *,
    weight_bytes: Any = 2,
    kv_bytes: Any = 2,
    memory_reserve: float = 0.10,
    headroom: float = 1.3,
    bandwidth_efficiency: float = 1.0,
    compute_efficiency: float = 1.0,
    price_per_hour: Any = None,
    tensor_parallel: int = 1,
) -> Plan:
    """Design a fleet of single-GPU servers for a brief.

    Usable memory is ``1 - memory_reserve`` of the GPU. Each request's KV is sized for prompt +
    answer. A decode step reads the weights plus every running request's KV at its average
    context (prompt + answer / 2) and takes the slower of bytes / bandwidth and
    2 x params x batch / FLOP/s. The batch is the largest that fits and keeps the step within
    the per-token target (a batch of 1 if none does; the plan then reports the target unmet).
    Prefill (2 FLOPs per parameter, or one weight read if slower) is the time to first token.
    Requests per second per GPU = 1 / (answer x step / batch + prefill); GPUs =
    ceil(rate x headroom / that); in flight by Little's law; cost per million answer tokens =
    GPUs x price per hour / answer tokens per hour.

    With ``tensor_parallel`` > 1 each server is a replica of that many GPUs (their memory,
    bandwidth and FLOP/s add up); requests per second per GPU is the replica's rate divided by
    its GPUs and the fleet is a whole number of replicas.

    Examples
    --------
    >>> b = Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms"))
    >>> p = plan("Llama-3.1-8B", "H100 SXM", b)
    >>> p.fits, p.meets_targets, p.bottleneck, p.gpus
    (True, True, 'KV reads', 1)
    """
    m, g = _model(model), _gpu(gpu)
    if not isinstance(brief, Brief):
        raise InputError(
            "brief must be a Brief(requests_per_second, prompt_tokens, answer_tokens, ttft_target, tpot_target)."
        )
    reserve = _number(memory_reserve, "memory_reserve", allow_zero=True)
    if reserve >= 1:
        raise InputError(f"memory_reserve is the fraction of memory held back and must be below 1; got {reserve}.")
    h = _number(headroom, "headroom")
    if h < 1:
        raise InputError(f"headroom multiplies the target rate and must be at least 1 (1.3 = 30% spare); got {h}.")
    price = _price(g, price_per_hour)
    tp = int(_number(tensor_parallel, "tensor_parallel", integer=True))
    mem = usable_memory(g, tp, 1 - reserve)
    w = _weights(m, weight_bytes)
    kv_req = kv_bytes_per_sequence(m, brief.prompt_tokens + brief.answer_tokens, kv_bytes)
    base = dict(
        model=m.name,
        gpu=g.name,
        brief=brief,
        weights=w.to("GB"),
        usable_memory=mem.to("GB"),
        kv_per_request=kv_req.to("GB"),
        tensor_parallel=tp,
    )
    if w >= mem:
        per_gpu = usable_memory(g, 1, 1 - reserve)
        need = 2 ** math.ceil(math.log2(math.ceil((w / per_gpu).to("").m + 1e-9)))
        where = f"one {g.name}" if tp == 1 else f"{tp} x {g.name}"
        return Plan(
            fits=False,
            reason=(
                f"weights {fmt(w, 'GB')} exceed the {fmt(mem, 'GB')} usable on {where}: "
                f"store fewer bytes per weight, use a GPU with more memory, or use "
                f"tensor_parallel={need}."
            ),
            **base,
        )
    top = max_batch(
        m,
        g,
        brief.prompt_tokens + brief.answer_tokens,
        n_gpus=tp,
        weight_bytes=weight_bytes,
        kv_bytes=kv_bytes,
        usable_fraction=1 - reserve,
    )
    if top < 1:
        return Plan(
            fits=False,
            reason=(
                f"after {fmt(w, 'GB')} of weights, {fmt(mem - w, 'GB')} is left: less than one "
                f"request's KV cache ({fmt(kv_req, 'GB')}); shorten the context or quantize."
            ),
            **base,
        )
    avg_ctx = brief.prompt_tokens + brief.answer_tokens / 2
    eff = dict(
        context_tokens=avg_ctx,
        n_gpus=tp,
        weight_bytes=weight_bytes,
        kv_bytes=kv_bytes,
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
    )

    def step(b: int) -> DecodeStep:
        return decode_step(m, g, batch=b, **eff)

    # the largest batch whose step meets the target (the step grows with the batch); at least 1
    batch = max(1, largest_batch(lambda b: step(b).step_time <= brief.tpot_target, top))
    s = step(batch)
    ttft = prefill(
        m,
        g,
        brief.prompt_tokens,
        n_gpus=tp,
        weight_bytes=weight_bytes,
        compute_efficiency=compute_efficiency,
        bandwidth_efficiency=bandwidth_efficiency,
        attention=False,
    ).time
    rps_replica = F["rps_per_gpu"](
        answer_tokens=brief.answer_tokens, step_time=s.step_time, batch=batch, prefill_time=ttft
    )
    replicas = int(F["gpus_for_rate"](request_rate=brief.requests_per_second, headroom=h, rps_per_gpu=rps_replica).m)
    rps = rps_replica / tp
    n = replicas * tp
    in_flight = F["littles_law"](
        request_rate=brief.requests_per_second, time_in_system=ttft + brief.answer_tokens * s.step_time
    ).m
    per_token = F["cost_per_token"](
        n_gpus=n,
        price=price,
        throughput=F["token_rate"](request_rate=brief.requests_per_second, tokens_per_request=brief.answer_tokens),
    )
    bottleneck = "compute" if s.bound == "compute" else "KV reads" if s.kv_read > s.weights_read else "weight reads"
    return Plan(
        fits=True,
        reason="fits",
        max_batch=top,
        batch=batch,
        ttft=ttft.to("ms"),
        tpot=s.step_time.to("ms"),
        requests_per_second_per_gpu=rps.to("1/s"),
        gpus=n,
        in_flight=float(in_flight),
        price_per_hour=price,
        cost_per_hour=(n * price).to("USD/hour"),
        cost_per_million_output_tokens=(per_token * 1e6).to("USD"),
        cost_per_thousand_requests=(per_token * brief.answer_tokens * 1e3).to("USD"),
        bottleneck=bottleneck,
        step=s,
        **base,
    )
