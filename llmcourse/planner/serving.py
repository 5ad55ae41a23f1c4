"""Serving figures built on :func:`~llmcourse.replica.replica`: traffic, the compute budget, the request cycle,
the whole-table serving plan, the fleet and the prefill pool."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model, gpus
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import checked
from llmcourse.replica.base import check_positions, gpu_of, model_of, price_of
from llmcourse.replica.memory import check_weights_fit
from llmcourse.replica.model import Replica, cost_per_million, replica
from llmcourse.replica.parallel import decode_comm_time
from llmcourse.replica.prefilling import Prefill
from llmcourse.replica.scheduler import EngineSettings, engine_settings
from llmcourse.replica.step import DecodeStep, layer_floor_ms, matmul_precision, weights_read_per_step
from llmcourse.units import (
    FLOP,
    GB,
    HOURS_PER_MONTH,
    MS,
    PER_S,
    PFLOP_S,
    Q_,
    USD,
    S,
    as_quantity,
    plain_number,
    to,
)


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
    >>> round(t.request_rate.to(PER_S).m, 1), round(t.output_tokens_per_s.m)
    (6.9, 2083)
    """
    peak = F["peak_request_rate"](daily_rate=requests, peak_factor=peak_factor)
    return Traffic(
        request_rate=peak,
        input_tokens_per_s=F["token_rate"](request_rate=peak, tokens_per_request=prompt_tokens),
        output_tokens_per_s=F["token_rate"](request_rate=peak, tokens_per_request=answer_tokens),
    )


@dataclass(frozen=True)
class ComputeBudget:
    """A replica's FLOP/s at a load: what its prompts need, what decode uses, what it has."""

    prefill: pint.Quantity
    decode: pint.Quantity
    usable: pint.Quantity

    @property
    def idle(self) -> pint.Quantity:
        """What decode leaves of the usable FLOP/s."""
        return to(self.usable - self.decode, PFLOP_S)

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
    >>> round(b.prefill.to(PFLOP_S).m, 2), round(b.idle.to(PFLOP_S).m, 2), b.prefill_fits
    (1.22, 0.75, False)
    """
    if not isinstance(rep, Replica) or rep.spec is None or rep.answer_tokens is None:
        raise InputError("compute_budget needs a Replica built with prompt_tokens and answer_tokens.")
    x = as_quantity(output_tokens_per_s, "1/s", "output_tokens_per_s")
    a, m, g = rep.assumptions, rep.spec, gpus.get(rep.gpu)
    per_param = Q_(a.flops_per_param, FLOP)
    prompts = F["token_rate"](request_rate=x / rep.answer_tokens, tokens_per_request=rep.prompt_tokens)
    need = F["prefill_compute_rate"](token_rate=prompts, flops_per_param=per_param, params=m.active_params)
    used = F["prefill_compute_rate"](token_rate=x, flops_per_param=per_param, params=m.active_params)
    usable = rep.tensor_parallel * g.peak_flops(rep.matmul) * a.compute_efficiency
    return ComputeBudget(prefill=to(need, PFLOP_S), decode=to(used, PFLOP_S), usable=to(usable, PFLOP_S))


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
        return to(tokens / self.end_to_end_throughput, S)

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
            PER_S,
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
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
) -> RequestCycle:
    """Prefill ``batch`` prompts together, then decode ``answer_tokens`` steps: the cycle of
    :func:`replica` for that batch, whether or not its KV cache fits.

    Examples
    --------
    >>> c = request_cycle("Llama-3.1-8B", "H100 SXM", batch=1, prompt_tokens=256, answer_tokens=64,
    ...                   price_per_hour=Q_(3, "USD/hour"))
    >>> round(c.cost_per_million_output_tokens.m, 2)
    7.28
    """
    a = plain_number(answer_tokens, "answer_tokens", integer=True)
    m, g = model_of(model), gpu_of(gpu)
    check_positions(m, prompt_tokens + a, "prompt_tokens + answer_tokens")
    check_weights_fit(m, g, weight_bytes, n_gpus, "n_gpus", assumptions)
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
    )
    r._need_step()
    if r.price_per_hour is None:
        price_of(r.gpu, None)  # raises: no price in the catalog
    return RequestCycle(
        decode=r.step,
        prefill=r.batch_prefill,
        answer_tokens=int(a),
        price_per_hour=r.price_per_hour,
        n_gpus=r.tensor_parallel,
        replica=r,
    )


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
            return float(to(self.weights, GB).m)
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
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    prompt_tokens: float | None = None,
    price_per_hour: Any = None,
    assumptions: Assumptions | str | None = None,
    engine: str | EngineSettings | None = None,
) -> ServingPlan:
    """Fill the GPUs' free memory with conversations of ``context_tokens`` and time one decode step:
    the table of the first worked example, from :func:`replica` with the largest batch.

    ``prompt_tokens`` (of the ``context_tokens``) gives the prefill time; the course's method (the
    default) needs it, since it charges each request's prefill to the throughput and the cost;
    ``assumptions="envelope"`` is the method of the table as first published (decode only, at the
    datasheet bandwidth). "Alone" is one user with no KV read. When the weights do not fit, the
    plan says so (``fits=False``). ``engine`` (a name, or
    :class:`~llmcourse.replica.scheduler.EngineSettings` with its scheduler settings; vLLM's defaults when
    None) is the engine the replica runs under, as for :func:`~llmcourse.planner.plan`.

    Examples
    --------
    >>> print(serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8", prompt_tokens=2_000,
    ...                    assumptions="envelope"))
    batch 94, 47 tok/s per user (92 if alone), 4,387 tok/s total, prefill 0.29 s, $0.32 per M output tokens at full load
    >>> print(serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8", prompt_tokens=2_000))
    batch 100, 12 tok/s per user (53 if alone), 1,164 tok/s total with prefill, prefill 0.16 s, $1.19 per M output tokens at full load
    >>> print(serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, assumptions="envelope"))
    weights 145 GB don't fit in 144 GB of usable memory: add GPUs or store fewer bytes per weight.
    """
    e = engine_settings(engine)
    r = replica(
        model,
        gpu,
        engine=e.engine,
        max_batched_tokens=e.max_batched_tokens,
        mixed_prefill=e.mixed_prefill,
        max_running=e.max_running,
        tensor_parallel=n_gpus,
        context_tokens=context_tokens,
        prompt_tokens=prompt_tokens,
        weight_bytes=weight_bytes,
        kv_bytes=kv_bytes,
        price_per_hour=price_per_hour,
        assumptions=assumptions,
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
    a, m, g = r.assumptions, model_of(model), gpu_of(gpu)
    alone = F["step_with_overhead"](
        step_time=F["weight_read_time"](
            weights=weights_read_per_step(m, 1, weight_bytes),
            n_gpus=r.tensor_parallel,
            bandwidth=g.bandwidth,
            bandwidth_efficiency=a.bandwidth_efficiency,
        ),
        step_overhead=Q_(a.step_overhead_ms + layer_floor_ms(m, a), MS)
        + decode_comm_time(m, r.layout, tokens=1, assumptions=a),
    )
    return ServingPlan(
        fits=True,
        message="fits",
        batch=r.batch,
        step_time=r.step.step_time,
        tokens_per_s_per_user=r.tokens_per_s_per_user,
        tokens_per_s_alone=to(1 / alone, PER_S),
        output_tokens_per_s=r.throughput,
        prefill_time=None if r.first_prefill is None else to(r.first_prefill.time, S),
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
    >>> f.replicas, f.gpus, round(f.monthly_cost.to(USD).m, -3)
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
    price = price_of(rep.gpu, price_per_hour if price_per_hour is not None else rep.price_per_hour)
    total = n * rep.tensor_parallel
    cost = F["fleet_cost"](gpus=total, price=price, hours=HOURS_PER_MONTH)
    return Fleet(
        demand=to(d, PER_S),
        throughput_per_replica=x,
        usable_throughput_per_replica=to(usable, PER_S),
        headroom=a.headroom,
        prefill_counted=rep.counts_prefill,
        replicas=n,
        gpus=total,
        price_per_hour=price,
        monthly_cost=to(cost, USD),
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
    weight_bytes: Any = None,
    assumptions: Assumptions | str | None = None,
) -> PrefillPool:
    """FLOP/s to prefill a stream of prompt tokens (``flops_per_param`` per active parameter) and
    the GPUs it takes at the assumptions' compute efficiency and matmul precision.

    Examples
    --------
    >>> p = prefill_pool(Q_(700_000, "1/s"), "Llama-3.1-70B", "H100 SXM")
    >>> round(p.compute_rate.to(PFLOP_S).m), p.gpus
    (99, 200)
    """
    m, g = model_of(model), gpu_of(gpu)
    a = resolve(assumptions)
    rate = F["prefill_compute_rate"](
        token_rate=input_tokens_per_s,
        flops_per_param=Q_(a.flops_per_param, FLOP),
        params=m.active_params,
    )
    n = F["gpus_for_compute"](
        compute_rate=rate,
        peak_flops=g.peak_flops(matmul_precision(weight_bytes, g, a, m)),
        compute_efficiency=a.compute_efficiency,
    )
    return PrefillPool(compute_rate=to(rate, PFLOP_S), gpus=int(n.m))
