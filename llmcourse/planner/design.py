"""The design planner: a :class:`Brief` in, the cheapest :class:`Plan` that meets it out (the capstone)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import pint

from llmcourse.arith import at_most, greater, over, plus, times
from llmcourse.assumptions import Assumptions, resolve
from llmcourse.bands import plan_bands
from llmcourse.catalog import GPU, Model
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import SYMBOLS, check_value, checked
from llmcourse.replica.base import gpu_of, model_of, own_quantity, price_of
from llmcourse.replica.deployment import Deployment, Workload
from llmcourse.replica.memory import largest_batch, largest_within
from llmcourse.replica.model import Replica, ReplicaSetup, SpeculativeSetup, setup_of
from llmcourse.replica.scheduler import EngineSettings, engine_settings
from llmcourse.replica.step import DecodeStep
from llmcourse.simulator import PercentileSizing, SizingRun, build_replica, size_to_percentiles
from llmcourse.units import (
    MS,
    PER_S,
    Q_,
    USD,
    USD_H,
    as_quantity,
    fmt,
    ms_text,
    percentile_rank,
    plain_number,
    quantity,
    to,
)


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
            else quantity(plain_number(r, "requests_per_second"), PER_S)  # Q_(x, PER_S), without pint's checks
        )
        plain_number(rate.magnitude, "requests_per_second")
        object.__setattr__(self, "requests_per_second", rate)
        for name in ("prompt_tokens", "answer_tokens"):  # at least one token each, as every estimate asks
            object.__setattr__(self, name, check_value(getattr(self, name), SYMBOLS[name], name))
        for name in ("ttft_target", "tpot_target"):
            q = as_quantity(getattr(self, name), "s", name)
            plain_number(q.magnitude, name)
            object.__setattr__(self, name, q)
        for name in ("ttft_percentile", "tpot_percentile"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, percentile_rank(getattr(self, name), name))


#: The share of a fleet's full-load capacity above which a plan prints a warning (a reading threshold, not a
#: modelling constant: no figure depends on it).
BUSY_WARNING = 0.85


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
    #: The KV one request adds at its final length (under llama.cpp, with a model that has sliding-window or chunked
    #: layers, its other layers' only: the window cache its slots share is held once, beside; the replica's
    #: ``kv_in_use``).
    kv_per_request: pint.Quantity
    tensor_parallel: int = 1
    #: How the weights are stored (each tensor group's precision; "(the checkpoint's)" when none was given).
    weight_precision: str | None = None
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
    #: The model and the GPU planned for, as given (a hand-made GPU, a model from a Hugging Face config): what the
    #: bands' family is drawn for.
    specs: tuple[Model, GPU] | None = field(default=None, repr=False, compare=False)
    #: How the tensor-parallel degree was chosen, when plan() searched for it (``tensor_parallel="auto"``).
    tensor_parallel_choice: str | None = None
    #: The engine the replica runs under and its scheduler, in words (see :func:`engine_said`).
    engine: str | None = None

    @property
    def throughput(self) -> pint.Quantity | None:
        """Output tokens per second of one replica at full load (the replica model's)."""
        return None if self.replica is None else self.replica.throughput

    @property
    def ttft_met(self) -> bool:
        """The time to first token within its target: at its percentile if the brief gives one (simulated), else
        the replica model's (no queue)."""
        if self.fits and self.sizing is not None and self.brief.ttft_percentile is not None:
            return at_most(self.sizing.ttft, self.brief.ttft_target)
        return bool(self.fits and at_most(self.ttft, self.brief.ttft_target))

    @property
    def tpot_met(self) -> bool:
        """The time per output token within its target: at its percentile if the brief gives one (simulated)."""
        if self.fits and self.sizing is not None and self.brief.tpot_percentile is not None:
            return at_most(self.sizing.tpot, self.brief.tpot_target)
        return bool(self.fits and at_most(self.tpot, self.brief.tpot_target))

    @property
    def meets_targets(self) -> bool:
        return self.ttft_met and self.tpot_met

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) rows for a review table."""
        tp = self.tensor_parallel
        shape = f"{tp} GPU{'s' if tp > 1 else ''} per replica" + (
            f"; {self.tensor_parallel_choice}" if self.tensor_parallel_choice else ""
        )
        if not self.fits:
            return [("fits", "no"), ("why", self.reason), ("tensor parallel", shape), ("engine", self.engine or "")]
        mark = {True: "\u2713", False: "\u2717"}
        z, b = self.sizing, self.brief
        if z is None:
            speed = [
                (
                    "time to first token",
                    f"{ms_text(self.ttft)} (target {ms_text(b.ttft_target)}) {mark[self.ttft_met]}",
                ),
                (
                    "time per output token",
                    f"{ms_text(self.tpot)} (target {ms_text(b.tpot_target)}) {mark[self.tpot_met]}",
                ),
            ]
        else:
            on_mean = lambda q: "" if q is not None else ", the mean with no queue"  # noqa: E731
            ttft = ms_text(z.ttft) if b.ttft_percentile is not None else ms_text(self.ttft)
            tpot = ms_text(z.tpot) if b.tpot_percentile is not None else ms_text(self.tpot)
            tl = z.label("ttft") if b.ttft_percentile is not None else "mean"
            pl = z.label("tpot") if b.tpot_percentile is not None else "mean"
            speed = [
                (
                    f"time to first token, {tl}",
                    f"{ttft} (target {ms_text(b.ttft_target)}{on_mean(b.ttft_percentile)}) {mark[self.ttft_met]}",
                ),
                (
                    f"time per output token, {pl}",
                    f"{tpot} (target {ms_text(b.tpot_target)}{on_mean(b.tpot_percentile)}) {mark[self.tpot_met]}",
                ),
                ("percentile sizing simulated", z.describe()),
                (
                    "sized on the mean instead",
                    f"{z.mean_replicas * self.tensor_parallel:,} GPUs: {z.label('ttft')} TTFT {ms_text(z.mean_ttft)}, "
                    f"{z.label('tpot')} TPOT {ms_text(z.mean_tpot)}",
                ),
            ]
            speed += sizing_edge_rows(z, self.tensor_parallel)
        return [
            *speed,
            *plan_bands(self),
            ("weights", f"{fmt(self.weights, 'GB')}" + (f", {self.weight_precision}" if self.weight_precision else "")),
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
            ("tensor parallel", shape),
            ("engine", self.engine or ""),
            ("requests in flight", f"{self.in_flight:,.0f}"),
            (
                "$ per hour",
                f"${to(self.cost_per_hour, 'USD/hour').m:,.2f} "
                f"({self.gpus:,} GPU{'s' if self.gpus != 1 else ''} x ${to(self.price_per_hour, 'USD/hour').m:,.2f} "
                "per GPU-hour)",
            ),
            ("$ per 1,000 requests", f"${to(self.cost_per_thousand_requests, 'USD').m:,.3f}"),
            ("$ per million answer tokens", f"${to(self.cost_per_million_output_tokens, 'USD').m:,.3f}"),
            *self._warnings(),
        ]

    def _warnings(self) -> list[tuple[str, str]]:
        """The warning rows: a fleet planned to run above :data:`BUSY_WARNING` of its full-load capacity, and a
        percentile time per token below the mean one (and why it can be)."""
        out = []
        capacity = to(self.requests_per_second_per_gpu, "1/s").m * self.gpus
        busy = to(self.brief.requests_per_second, "1/s").m / capacity if capacity > 0 else math.inf
        if busy > BUSY_WARNING:
            advice = (
                "the percentiles above are simulated at this load; a burst above the brief's rate queues further"
                if self.sizing is not None
                else "a burst queues; size on percentile targets (ttft_percentile=99) or add headroom"
            )
            out.append(
                (
                    "warning",
                    f"the fleet runs at {busy:.1%} of its full-load capacity (above {BUSY_WARNING:.0%}): {advice}",
                )
            )
        z = self.sizing
        if z is not None and self.brief.tpot_percentile is not None and to(z.tpot, "ms").m < to(self.tpot, "ms").m:
            out.append(
                (
                    "note",
                    f"the {z.label('tpot')} time per token ({to(z.tpot, 'ms').m:,.1f} ms) is below the mean "
                    f"({to(self.tpot, 'ms').m:,.1f} ms): the percentile comes from the simulated queue, where a "
                    f"replica's batch is rarely full; the mean is the replica model's at the planned batch of "
                    f"{self.batch}",
                )
            )
        return out

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
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    price_per_hour: Any = None,
    tensor_parallel: int | Literal["auto"] = 1,
    assumptions: Assumptions | str | None = None,
    cached_prompt_tokens: float = 0,
    speculation: Any = None,
    simulation: SizingRun | None = None,
    engine: str | EngineSettings | None = None,
) -> Plan:
    """Design a fleet of replicas of ``tensor_parallel`` GPUs for a brief, through :func:`replica`.

    The replica runs under ``engine``: an engine's name (``"vLLM"``, the default, ``"SGLang"``,
    ``"TensorRT-LLM"``, ``"llama.cpp"``; an unknown name gets "did you mean") or
    :class:`~llmcourse.replica.scheduler.EngineSettings` with its scheduler settings (the token budget of a
    step, mixed or separate prefill, the most requests running); the plan says which (``plan.engine``, its
    "engine" row). Under the course's method the batch is admitted on the KV blocks in use (staggered
    conversations hold their prompt and half their answer on average) and its steps are the engine's: vLLM,
    TensorRT-LLM and llama.cpp put each new request's prompt into a decode step, whole where the token budget holds
    it, SGLang pauses decoding
    for prefill batches of its own. The batch is the largest that fits and keeps the time per token within its
    target (a batch of 1 if none does; the plan then reports the target unmet); that time includes the prompts
    of the requests that join the batch. The time to first token is one prompt's prefill (of its uncached part,
    with ``cached_prompt_tokens`` in a prefix cache; under the course's method its chunks, each a step shared
    with the batch's decode tokens). Requests per second per replica come from the replica's throughput (with
    each request's prefill charged under the course's and the planner's assumptions); replicas = ceil(rate x
    headroom / that); in flight by Little's law; cost per million answer tokens = GPUs x price per hour /
    answer tokens per hour. The memory share, the headroom and the efficiencies are the assumptions' (a
    what-if: ``assumptions=resolve("course").replace(headroom=1.5)``); the six-step planner's method is
    ``assumptions="planner"`` (each request sized at its final length, its prefill added to the decode steps).

    **Percentile targets** (``Brief(..., ttft_percentile=99)``): the queue decides a percentile, so the plan
    simulates it (:func:`llmcourse.simulator.simulate`, as ``simulation`` says: a
    :class:`~llmcourse.simulator.SizingRun`, by default 4,000 Poisson arrivals, lengths spread by the simulator's
    default, the engine's token budget per iteration; the cached prompt tokens as a prefix every request hits). The
    replicas, each batch capped at the plan's, share the traffic through the run's router (least loaded by default;
    ``SizingRun(router="random")`` is an upper bound on the wait; the output says which); the fewest replicas
    whose simulated percentiles meet the targets are the plan (no headroom on top: the queue is modelled, not
    allowed for), and ``plan.sizing`` says what the fleet sized on the mean would have given.

    Examples
    --------
    >>> b = Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms"))
    >>> p = plan("Llama-3.1-8B", "H100 SXM", b)
    >>> p.fits, p.meets_targets, p.bottleneck, p.gpus, p.batch
    (True, True, 'compute', 2, 127)
    >>> p.engine
    'vLLM (8,192 tokens a step, prompt chunks mixed into decode steps, at most 1,024 running)'
    >>> sg = plan("Llama-3.1-8B", "H100 SXM", b, engine="sglang")
    >>> sg.engine, sg.batch
    ('SGLang (8,192 tokens a step, separate prefill batches)', 120)
    >>> plan("Llama-3.1-8B", "H100 SXM", b, engine="sglng")
    Traceback (most recent call last):
    ...
    llmcourse.errors.UnknownNameError: no engine named 'sglng'. Did you mean 'SGLang'? Known: vLLM, SGLang, TensorRT-LLM, llama.cpp.
    >>> plan("Llama-3.1-8B", "H100 SXM", b, assumptions="planner").gpus
    1
    >>> tail = plan("Llama-3.1-8B", "H100 SXM", Brief(10, 2_000, 300, Q_(300, "ms"), Q_(50, "ms"), ttft_percentile=99))
    >>> tail.sizing.ttft <= Q_(300, "ms"), tail.gpus > p.gpus
    (True, True)

    **The replica size** (``tensor_parallel="auto"``): the plan of each of :data:`TP_CHOICES` GPUs per replica
    (those the model's heads and the GPU's link allow), and the cheapest per hour of those that meet the brief
    (of those that fit, if none does; fewer GPUs per replica on a tie); ``plan.tensor_parallel_choice`` says
    which was chosen and why.

    >>> big = plan("Llama-3.1-70B", "H100 SXM", Brief(2, 2_000, 300, Q_(1, "s"), Q_(30, "ms")), tensor_parallel="auto")
    >>> big.tensor_parallel, big.tensor_parallel_choice.split(":")[0]
    (4, 'auto')
    """
    if simulation is not None and not isinstance(simulation, SizingRun):
        raise InputError(
            "simulation must be a SizingRun (llmcourse.simulator.SizingRun(requests=..., seed=...)), "
            f"not {type(simulation).__name__}."
        )
    if type(tensor_parallel) is str:  # "auto", as @checked lets through: the cheapest replica size
        return _plan_auto(
            model, gpu, brief, weight_bytes=weight_bytes, kv_bytes=kv_bytes, price_per_hour=price_per_hour,
            assumptions=assumptions, cached_prompt_tokens=cached_prompt_tokens, speculation=speculation,
            simulation=simulation, engine=engine,
        )  # fmt: skip
    d, w, a, price = _plan_inputs(
        model, gpu, brief, assumptions, price_per_hour, tensor_parallel, weight_bytes, kv_bytes, speculation,
        cached_prompt_tokens, engine,
    )  # fmt: skip
    got = _planned(d, w, brief, a, price, True)
    if got.unfit is not None:
        return Plan(fits=False, reason=got.unfit, **got.base)
    sizing = None
    if brief.on_percentiles:
        sizing = _sized_on_percentiles(d, w, brief, a, got, simulation or SizingRun())
    return _plan_of(brief, price, got, sizing)


#: The replica sizes ``tensor_parallel="auto"`` tries (GPUs per replica, one NVLink board at most).
TP_CHOICES = (1, 2, 4, 8)


def _plan_auto(model: Any, gpu: Any, brief: Any, **kw: Any) -> Plan:
    """:func:`plan` with ``tensor_parallel="auto"``: the plan of each size of :data:`TP_CHOICES`, and the cheapest
    per hour that meets the brief (else that fits), with ``tensor_parallel_choice`` saying why."""
    plans: list[Plan] = []
    said: list[str] = []
    for tp in TP_CHOICES:
        try:
            p = plan(model, gpu, brief, tensor_parallel=tp, **kw)
        except InputError as exc:
            if tp == 1:  # one GPU is always a shape: an error here is the inputs', not the size's
                raise
            said.append(f"{tp}: {str(exc).split(';')[0].rstrip('.')}")
            continue
        plans.append(p)
        cost = f"${to(p.cost_per_hour, 'USD/hour').m:,.2f}/hour" if p.fits else "does not fit"
        said.append(f"{tp}: {cost}" + ("" if not p.fits or p.meets_targets else ", misses a target"))
    fits = [p for p in plans if p.fits]
    met = [p for p in fits if p.meets_targets]
    sizes = ", ".join(map(str, TP_CHOICES))
    pool, why = (
        (met, f"the cheapest of {sizes} GPUs per replica that meets the brief")
        if met
        else (fits, f"none of {sizes} GPUs per replica meets the brief: the cheapest that fits")
        if fits
        else (plans[-1:], f"none of {sizes} GPUs per replica fits: the largest tried")
    )
    best = min(pool, key=lambda p: (to(p.cost_per_hour, "USD/hour").m, p.tensor_parallel) if p.fits else (0, 0))
    return dataclasses.replace(best, tensor_parallel_choice=f"auto: {why} ({'; '.join(said)})")


def _plan_inputs(
    model: Any,
    gpu: Any,
    brief: Any,
    assumptions: Any,
    price_per_hour: Any,
    tensor_parallel: Any,
    weight_bytes: Any,
    kv_bytes: Any,
    speculation: Any,
    cached_prompt_tokens: Any,
    engine: Any = None,
) -> tuple[Deployment, Workload, Assumptions, pint.Quantity]:
    """:func:`plan`'s checks of its inputs (after ``@checked``'s), and what they are: the deployment (under
    ``engine``: a name or :class:`EngineSettings`), the workload (the brief's lengths, at no batch), the
    assumptions and the price."""
    m, g = model_of(model), gpu_of(gpu)
    if not isinstance(brief, Brief):
        raise InputError(
            "brief must be a Brief(requests_per_second, prompt_tokens, answer_tokens, ttft_target, tpot_target)."
        )
    a, price = resolve(assumptions), price_of(g, price_per_hour)
    e = engine_settings(engine)
    d = Deployment(
        m, g, tensor_parallel, weight_bytes=weight_bytes, kv_bytes=kv_bytes, speculation=speculation, engine=e.engine,
        max_batched_tokens=e.max_batched_tokens, mixed_prefill=e.mixed_prefill, max_running=e.max_running,
    )  # fmt: skip
    return d, Workload(brief.prompt_tokens, brief.answer_tokens, cached_prompt_tokens=cached_prompt_tokens), a, price


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
    d: Deployment, w: Workload, brief: Brief, a: Assumptions, price: pint.Quantity, with_replica: bool
) -> _Planned:
    """:func:`plan`'s one path once its inputs are checked (:func:`_plan_inputs`): the replica set up once, the
    largest batch whose time per token meets the target (at least 1), the replica's time to first token, time
    per token and requests per second at that batch (as plain floats, the units attached here: the replica
    itself is built only ``with_replica``, first, as plan() builds it), and the replicas the brief's rate needs."""
    # replica()'s own set-up, its inputs checked here (a brief's lengths by the Brief): what does not depend on the
    # batch is worked out once for the search below. Without speculation the price is the replica's only: none of
    # the figures depend on it, so the set-up is that of the catalog's price (kept across prices) and the price is
    # given to the replica built below; a speculative replica is built with it, at each batch the search asks
    plain = (d.speculation if d.speculation is not None else a.speculation) is None
    setup = setup_of(d, w, a, None if plain else price)
    if isinstance(setup, ReplicaSetup):
        got, unfit, top_batch = setup.base, setup.unfit, setup.max_batch
    else:
        top = setup.at(None)
        got, unfit, top_batch = vars(top), None if top.fits else top.reason, top.max_batch
    base = dict(
        model=d.model.name,
        gpu=d.gpu.name,
        brief=brief,
        weights=own_quantity(got["weights"]),
        usable_memory=own_quantity(got["usable_memory"]),
        kv_per_request=own_quantity(got["kv_per_sequence"]),
        tensor_parallel=got["tensor_parallel"],
        weight_precision=got.get("weight_precision"),
        specs=(d.model, d.gpu),
        engine=engine_said(d, a),
    )
    if unfit is not None:
        return _Planned(base, unfit)
    batch = _batch_within(setup, brief.tpot_target, top_batch)
    r = setup.at(batch) if with_replica or not plain else None
    if r is not None and plain:
        r = dataclasses.replace(r, price_per_hour=price)  # checked by _plan_inputs, which gave it
    if plain:  # the replica's properties on floats (Replica.ttft, .tpot, .requests_per_second)
        ttft_ms, tpot_ms, rps_ = setup.figures(batch)
        ttft, tpot, rps = quantity(ttft_ms, MS), quantity(tpot_ms, MS), quantity(rps_, PER_S)
    else:
        ttft, tpot, rps = r.ttft, r.tpot, r.requests_per_second  # each worked out once
    replicas = int(F["gpus_for_rate"](request_rate=brief.requests_per_second, headroom=a.headroom, rps_per_gpu=rps).m)
    return _Planned(base, None, batch, r, ttft, tpot, rps, replicas)


def engine_said(d: Deployment, a: Assumptions) -> str:
    """The engine a plan runs under, in words: its scheduler as the replica model runs it (assumptions'
    ``prefill_schedule`` ``"engine"``, the course's), or, under a method that adds each prefill to the decode
    steps (the sources' presets), the engine named with that said.

    Examples
    --------
    >>> d = Deployment("Llama-3.1-8B", "H100 SXM", engine="sglang")
    >>> engine_said(d, resolve("course"))
    'SGLang (8,192 tokens a step, separate prefill batches)'
    >>> engine_said(d, resolve("planner"))
    "SGLang (not modelled: the planner method adds each request's prefill to the decode steps)"
    """
    if a.prefill_schedule == "engine":
        return d.scheduler.label()
    return f"{d.engine} (not modelled: the {a.name} method adds each request's prefill to the decode steps)"


def _batch_within(setup: ReplicaSetup | SpeculativeSetup, target: pint.Quantity, top: int) -> int:
    """The largest batch, up to ``top``, whose time per token meets ``target`` (the step grows with the batch);
    at least 1."""
    if isinstance(setup, ReplicaSetup):  # the time per token alone: the search's one question of each batch
        tpot_ms = setup.tpot_ms
        if type(target) is Q_ and target._units == MS._units:  # pint compares the magnitudes of one unit
            return max(1, largest_within(tpot_ms, target._magnitude, top))
        return max(1, largest_batch(lambda b: quantity(tpot_ms(b), MS) <= target, top))
    return max(1, largest_batch(lambda b: setup.at(b).tpot <= target, top))


def _sized_on_percentiles(
    d: Deployment,
    w: Workload,
    brief: Brief,
    a: Assumptions,
    got: _Planned,
    run: SizingRun,
) -> PercentileSizing:
    """The fewest replicas whose simulated percentiles meet the brief's targets (:func:`plan`, percentile targets)."""
    if d.speculation is not None:
        raise InputError(
            "percentile targets are sized by simulating the queue, which does not model speculative decoding: "
            "give speculation=None, or targets on the mean (ttft_percentile=None, tpot_percentile=None)."
        )
    service = build_replica(
        d.model, d.gpu, prompt_tokens=brief.prompt_tokens, answer_tokens=brief.answer_tokens,
        n_gpus=got.replica.tensor_parallel, weight_bytes=d.weight_bytes, kv_bytes=d.kv_bytes, batch_cap=got.batch,
        assumptions=a,
    )  # fmt: skip
    return size_to_percentiles(
        service,
        brief,
        mean_replicas=got.replicas,
        cached_prompt_tokens=w.cached_prompt_tokens,
        chunk_tokens=run.chunk_tokens,
        prompt_cv=run.prompt_cv,
        answer_cv=run.answer_cv,
        requests=run.requests,
        seed=run.seed,
        router=run.router,
        settled=run.settled,
    )


def _plan_of(brief: Brief, price: pint.Quantity, got: _Planned, sizing: PercentileSizing | None) -> Plan:
    """The :class:`Plan` of a replica that fits (``got``): the fleet on the mean rate, or on the percentiles
    (``sizing``), and what it costs."""
    r, batch, ttft, tpot, rps = got.replica, got.batch, got.ttft, got.tpot, got.rps
    s, tp = r.step, r.tensor_parallel
    n = (got.replicas if sizing is None else sizing.replicas) * tp
    in_flight = F["littles_law"](
        request_rate=brief.requests_per_second, time_in_system=plus(ttft, times(tpot, brief.answer_tokens))
    ).m
    per_token = F["cost_per_token"](
        n_gpus=n,
        price=price,
        throughput=F["token_rate"](request_rate=brief.requests_per_second, tokens_per_request=brief.answer_tokens),
    )
    # what bounds the step the engine runs: its mixed step (prompt chunks beside the decode tokens), else the decode
    # step's own (no engine's steps, or an engine that pauses decoding for prefill batches)
    bottleneck = None if r.engine_step is None else r.engine_step.bound
    if bottleneck is None:
        bottleneck = (
            "compute" if s.bound == "compute" else "KV reads" if greater(s.kv_read, s.weights_read) else "weight reads"
        )
    return Plan(
        fits=True,
        reason="fits",
        max_batch=r.max_batch,
        batch=batch,
        ttft=to(ttft, MS),
        tpot=to(tpot, MS),
        requests_per_second_per_gpu=to(over(rps, tp), PER_S),
        gpus=n,
        in_flight=float(in_flight),
        price_per_hour=price,
        cost_per_hour=to(times(price, n), USD_H),
        cost_per_million_output_tokens=to(times(per_token, 1e6), USD),
        cost_per_thousand_requests=to(times(times(per_token, brief.answer_tokens), 1e3), USD),
        bottleneck=bottleneck,
        step=s,
        replica=r,
        sizing=sizing,
        **got.base,
    )


@checked
def lever_plan(
    model: Model | str,
    gpu: GPU | str,
    brief: Brief,
    *,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    price_per_hour: Any = None,
    tensor_parallel: int | Literal["auto"] = 1,
    assumptions: Assumptions | str | None = None,
    cached_prompt_tokens: float = 0,
    speculation: Any = None,
    simulation: SizingRun | None = None,
    engine: str | EngineSettings | None = None,
) -> Plan | _LeverFigures:
    """What a lever ranking reads of :func:`plan` with the same arguments (whether it fits and why, the GPUs,
    the time to first token and per token, the cost per hour, whether the targets are met), worked out by
    plan()'s own path (:func:`_planned`) without the replica, its step, the in-flight count or the costs per
    token: plan() itself for percentile targets (sized through the simulator) and for ``tensor_parallel="auto"``."""
    if (isinstance(brief, Brief) and brief.on_percentiles) or type(tensor_parallel) is str:  # "auto": plan()'s search
        return plan(
            model, gpu, brief, weight_bytes=weight_bytes, kv_bytes=kv_bytes, price_per_hour=price_per_hour,
            tensor_parallel=tensor_parallel, assumptions=assumptions, cached_prompt_tokens=cached_prompt_tokens,
            speculation=speculation, simulation=simulation, engine=engine,
        )  # fmt: skip
    d, w, a, price = _plan_inputs(
        model, gpu, brief, assumptions, price_per_hour, tensor_parallel, weight_bytes, kv_bytes, speculation,
        cached_prompt_tokens, engine,
    )  # fmt: skip
    got = _planned(d, w, brief, a, price, False)
    if got.unfit is not None:
        return _LeverFigures(False, got.unfit)
    n = got.replicas * got.base["tensor_parallel"]
    ttft, tpot = to(got.ttft, MS), to(got.tpot, MS)  # as Plan holds them
    met = at_most(ttft, brief.ttft_target) and at_most(tpot, brief.tpot_target)  # Plan.meets_targets on the mean
    return _LeverFigures(True, "fits", n, ttft, tpot, to(times(price, n), USD_H), met)


class _LeverFigures(NamedTuple):
    """The fields of a :class:`Plan` a lever ranking reads (see :func:`lever_plan`)."""

    fits: bool
    reason: str
    gpus: int | None = None
    ttft: pint.Quantity | None = None
    tpot: pint.Quantity | None = None
    cost_per_hour: pint.Quantity | None = None
    meets_targets: bool = False


def sizing_edge_rows(z: Any, tensor_parallel: int) -> list[tuple[str, str]]:
    """A percentile plan's rows on how settled its fleet size is: the sampling intervals of the percentiles with a
    target (at the fleet that decided the answer), what one replica fewer gives, the largest fleet tried when none
    met the targets, and a warning when a target lies inside an interval (one run cannot settle the answer)."""

    def around(iv: tuple[pint.Quantity | None, pint.Quantity | None]) -> str:
        lo, hi = iv
        if hi is None:  # the run too short to bound it above (or below)
            return "unbounded" if lo is None else f"above {ms_text(lo)} (too few requests to bound it above)"
        return (
            f"{ms_text(lo)} to {ms_text(hi)}"
            if lo is not None
            else f"below {ms_text(hi)} (too few requests to bound it below)"
        )

    rows = []
    gpus = lambda n: f"{n * tensor_parallel:,} GPUs"  # noqa: E731
    if not z.met and z.largest_ttft is not None and z.interval_replicas is not None:
        rows.append(
            (
                "largest fleet tried",
                f"{gpus(z.interval_replicas)}: {z.label('ttft')} TTFT {ms_text(z.largest_ttft)}, "
                f"{z.label('tpot')} TPOT {ms_text(z.largest_tpot)}",
            )
        )
    spans = [f"{z.label(m)} {m.upper()} {around(iv)}" for m, iv in (("ttft", z.ttft_interval), ("tpot", z.tpot_interval))
             if iv is not None]  # fmt: skip
    if spans and z.interval_replicas is not None:
        rows.append(
            (
                "sampling interval, ~95%",
                f"at {gpus(z.interval_replicas)}: {', '.join(spans)} (as independent requests would give; a queue's "
                "are not, so other seeds can spread wider)",
            )
        )
    if z.fewer_ttft is not None and z.fewer_tpot is not None:
        rows.append(
            (
                "one fewer, upper ends" if z.settled else "one replica fewer",
                f"{gpus(z.replicas - 1)}: {z.label('ttft')} TTFT {ms_text(z.fewer_ttft)}, "
                f"{z.label('tpot')} TPOT {ms_text(z.fewer_tpot)}",
            )
        )
    if z.close_call():
        if z.met:
            why = (
                "the fleet found may be too small (the first whose sample dips under the target) or larger than needed"
            )
        elif not z.settled:
            why = "the largest fleet tried misses by less than the sampling noise: a longer run may find one that meets it"
        else:
            why = (
                "the largest fleet tried meets it only inside its sampling interval (its upper end is above the "
                "target), so no fleet is vouched for: the plan keeps the fleet sized on the mean. "
                "SizingRun(settled=False) gives the first fleet whose sampled percentile meets it"
            )
        rows.append(
            (
                "answer not settled",
                f"a target lies inside the sampling interval, so this run cannot tell whether that fleet meets it: {why}. "
                "Rerun with more requests (SizingRun(requests=...)) or other seeds, or loosen the target",
            )
        )
    return rows
