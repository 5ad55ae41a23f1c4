"""Disaggregated serving: a prefill pool and a decode pool (chapter *Disaggregated serving*,
``book/10b_disaggregation.md``).

An aggregated replica prefills and decodes on the same GPUs: every new prompt's prefill stalls the
decode steps of the requests already in its batch, so the time per token carries the other
requests' prefills, and one replica shape must suit both phases. A disaggregated deployment gives
each phase its own pool: ``x`` GPUs of prefill replicas that only prefill (one prompt at a time,
shaped for compute), ``y`` GPUs of decode replicas that only decode (a large batch, shaped for
memory), and a link between the pools that carries each prompt's KV cache from one to the other.

Every time here comes from the one replica model (:func:`llmcourse.replica.replica`): a prefill
replica's prefill of one prompt, a decode replica's step at its batch with no prefill charged to
it (``count_prefill`` and ``prefill_interference`` off: its requests arrive prefilled). The pools
are joined by the formulas of :mod:`llmcourse.formulas.disagg`: the KV hand-off over the link
(alpha-beta), the wait for a free prefill replica (M/D/c, Sakasegawa's approximation) and the time
to first token, their sum with the request's overhead.

:func:`disaggregated` sizes the two pools for a :class:`~llmcourse.planner.design.Brief` (or evaluates
given ones); :func:`compare` puts it beside the aggregated :func:`~llmcourse.planner.design.plan` at the
same targets; :func:`llmcourse.validation.disagg.measured_rows` and :func:`~llmcourse.validation.disagg.predict_row` express the disaggregated rows of the
aiconfigurator file through the same model.

Examples
--------
>>> from llmcourse.planner.design import Brief
>>> from llmcourse.units import Q_
>>> b = Brief(20, 2_000, 300, Q_(600, "ms"), Q_(40, "ms"))
>>> d = disaggregated("Llama-3.1-70B", "H100 SXM", b, prefill_tensor_parallel=4, decode_tensor_parallel=4,
...                   weight_bytes="fp8")
>>> d.prefill.gpus, d.decode.gpus, d.meets_targets
(12, 4, True)
>>> disaggregated("Llama-3.1-8B", "H100 SXM", b, prefill_gpus=0)
Traceback (most recent call last):
...
llmcourse.errors.InputError: prefill_gpus=0: a pool needs at least one replica of 1 GPU; give a whole multiple of 1, or leave it at None to size the pool.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import pint

from llmcourse.arith import at_most
from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Link, Model, gpus, links, models
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import checked, scalar
from llmcourse.planner.design import Brief, Plan, plan
from llmcourse.replica.base import check_positions
from llmcourse.replica.memory import kv_bytes_per_sequence, largest_batch, largest_within
from llmcourse.replica.model import Replica, replica, replica_setup
from llmcourse.replica.step import decode_steps
from llmcourse.simulator import LENGTH_CV, SizingRun, prompt_lengths, simulate_pool
from llmcourse.stats import sorted_percentile
from llmcourse.units import Q_, ms_text, parsed_unit, percentile_rank, plain_number, quantity, to

__all__ = [
    "COMPARE_RUN",
    "Comparison",
    "Disaggregated",
    "MoeLayout",
    "Pool",
    "compare",
    "disaggregated",
    "kv_handoff",
    "pool_link",
]

_MS, _S, _PER_S = (parsed_unit(u)[0] for u in ("ms", "s", "1/s"))
#: How :func:`compare` queues both deployments (a simulation's settings, not a modelling constant): Poisson
#: arrivals; prompts and answers spread about the brief's lengths by the simulator's default
#: (:data:`~llmcourse.simulator.LENGTH_CV`), the same draws on both sides (the prefill pool an M/G/c queue, each
#: prompt prefilled in its own time); the aggregated replicas behind the ``"least_cost"`` router (NVIDIA Dynamo's
#: KV router's cost: the prompt tokens a replica owes and the KV it holds; see :mod:`llmcourse.simulator.fleet`); and
#: 20,000 requests, so that a p99 rests on 200 of them rather than the 40 of :func:`plan`'s default 4,000. Lengths
#: all equal to the brief's would flatter no side but mislead both: requests that arrive together then finish
#: together, and a router counting requests sends the next burst of prompts to the replica that just emptied.
COMPARE_RUN = SizingRun(requests=20_000, router="least_cost")

#: The most replicas one pool is sized to (a bound on the search; far above any product's fleet).
_MOST_REPLICAS = 100_000


# plain-float forms, for the closed-loop fixed point (hundreds of evaluations per row)
wait_f = scalar("mdc_wait", "prefill_utilisation", "prefill_servers", "prefill_time")
rho_f = scalar("prefill_pool_utilisation", "request_rate", "prefill_time", "prefill_servers")
wave_f = scalar("wave_wait", "burst_prompts", "prefill_servers", "prefill_time")
ttft_f = scalar("disagg_ttft", "request_overhead", "prefill_queue_wait", "prefill_time", "kv_handoff")


def pool_link(gpu: GPU | str, link: Link | str | None = None) -> Link:
    """The link between the pools: ``link`` if given (a catalog name: two pools in one NVLink domain
    may hand off over NVLink), else the scale-out link of the GPU's own (pools on different nodes).

    Examples
    --------
    >>> pool_link("H100 SXM").name, pool_link("H100 SXM", "NVLink 4").name
    ('InfiniBand NDR', 'NVLink 4')
    """
    if link is not None:
        return link if isinstance(link, Link) else links[link]
    g = gpu if isinstance(gpu, GPU) else gpus[gpu]
    if g.link is None:
        raise InputError(
            f"{g.name} names no link, so the pools' hand-off link is unknown: give link= (a catalog name such as "
            "'InfiniBand NDR', or a Link), or build the GPU with its link."
        )
    return links[links[g.link].scale_out] if isinstance(g.link, str) else links[g.link.scale_out]


@checked
def kv_handoff(
    model: Model | str,
    prompt_tokens: float,
    *,
    link: Link | str,
    kv_lanes: int = 1,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
) -> pint.Quantity:
    """Time to hand one prompt's KV cache from a prefill replica to a decode replica over ``link``
    (formula ``kv_handoff_time``): the link's fixed cost and latency, then the prompt's KV bytes
    over ``kv_lanes`` lanes of the link's bandwidth at the assumptions' ``link_efficiency``.

    Examples
    --------
    >>> round(kv_handoff("Llama-3.1-70B", 2_000, link="InfiniBand NDR").to("ms").m, 2)
    16.39
    """
    a, lk, m = resolve(assumptions), links[link], models[model]
    kv = kv_bytes_per_sequence(m, prompt_tokens, kv_bytes)
    check_positions(m, prompt_tokens, "prompt_tokens")  # no deployment holds a longer prompt to hand off
    return to(
        F["kv_handoff_time"](
            collective_base=lk.base,
            link_latency=lk.latency,
            kv_per_sequence=kv,
            kv_lanes=kv_lanes,
            link_bandwidth=lk.bandwidth,
            link_efficiency=a.link_efficiency,
        ),
        _MS,
    )


def kv_lanes(pre: Replica, dec: Replica) -> int:
    """The links one prompt's KV cache crosses in parallel: one per GPU of the tensor-parallel group that
    holds it, on the side with fewer. A prompt's KV sits on one attention data-parallel rank (and its
    tensor-parallel group), so the other ranks' GPUs, and the expert-parallel ones, carry none of it."""
    return min(pre.layout.tensor_parallel, dec.layout.tensor_parallel)


# --- the two pools ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pool:
    """One pool: ``replicas`` replicas of ``replica.n_gpus`` GPUs each, doing one phase."""

    role: str
    replicas: int
    replica: Replica = field(repr=False)
    rate: pint.Quantity  # requests per second the pool completes at full load

    @property
    def gpus_per_replica(self) -> int:
        return self.replica.n_gpus

    @property
    def gpus(self) -> int:
        return self.replicas * self.replica.n_gpus

    @property
    def shape(self) -> str:
        lay = self.replica.layout
        parts = [f"TP{lay.tensor_parallel}"]
        if lay.data_parallel > 1:
            parts.append(f"DP{lay.data_parallel}")
        if lay.expert_parallel > 1:
            parts.append(f"EP{lay.expert_parallel}")
        return " ".join(parts)


@dataclass(frozen=True)
class Disaggregated:
    """A disaggregated deployment for a brief (see :func:`disaggregated`)."""

    model: str
    gpu: str
    brief: Brief
    prefill: Pool
    decode: Pool
    link: Link
    prefill_time: pint.Quantity
    kv_handoff: pint.Quantity
    queue_wait: pint.Quantity
    utilisation: float
    ttft: pint.Quantity
    tpot: pint.Quantity
    sized: bool = True
    #: The decode replica's first step, which gives the request its first token (part of :attr:`ttft`).
    first_step: pint.Quantity = field(default_factory=lambda: Q_(0.0, "ms"))
    #: Whether the prefill queue's prompts were spread about the brief's length (M/G/c: each prefilled in its own
    #: time, the percentile taken over each request's whole first token); False: all of the brief's length.
    spread_prompts: bool = False
    #: The percentile the time to first token (and ``queue_wait``) is for: the prefill queue simulated
    #: (:func:`llmcourse.simulator.simulate_pool`); None: the mean, by Sakasegawa's M/D/c approximation.
    ttft_percentile: float | None = None

    @property
    def gpus(self) -> int:
        return self.prefill.gpus + self.decode.gpus

    @property
    def batch(self) -> int:
        return self.decode.replica.batch

    @property
    def ttft_met(self) -> bool:
        return at_most(self.ttft, self.brief.ttft_target)

    @property
    def tpot_met(self) -> bool:
        return at_most(self.tpot, self.brief.tpot_target)

    @property
    def meets_targets(self) -> bool:
        return self.ttft_met and self.tpot_met

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) rows for a review table."""
        mark = {True: "\u2713", False: "\u2717"}
        b, q = self.brief, self.ttft_percentile
        at = "mean" if q is None else f"p{q:g}, simulated"
        part = "at the brief's prompt" if self.spread_prompts else "of which"
        return [
            (
                f"time to first token ({at})",
                f"{ms_text(self.ttft)} (target {ms_text(b.ttft_target)}) {mark[self.ttft_met]}",
            ),
            (f"wait for a prefill replica ({at})", ms_text(self.queue_wait)),
            (f"{part}: prefill", ms_text(self.prefill_time)),
            (f"{part}: KV hand-off", f"{ms_text(self.kv_handoff)} over {self.link.name}"),
            ("and the decode replica's first step", ms_text(self.first_step)),
            ("time per output token", f"{ms_text(self.tpot)} (target {ms_text(b.tpot_target)}) {mark[self.tpot_met]}"),
            (
                "prefill pool",
                f"{self.prefill.gpus:,} GPUs ({self.prefill.replicas:,} x {self.prefill.shape}), "
                f"busy {self.utilisation:.0%}",
            ),
            (
                "decode pool",
                f"{self.decode.gpus:,} GPUs ({self.decode.replicas:,} x {self.decode.shape}), batch {self.batch}",
            ),
            ("GPUs", f"{self.gpus:,}"),
        ]

    def __str__(self) -> str:
        return "\n".join(f"{k:>30}: {v}" for k, v in self.rows())


def _pool_size(gpus_: Any, name: str, per_replica: int) -> int | None:
    """Replicas in a pool of ``gpus_`` GPUs (None: size it), refusing zero and a split replica."""
    if gpus_ is None:
        return None
    hint = f"give a whole multiple of {per_replica}, or leave it at None to size the pool"
    n = plain_number(gpus_, name, integer=True, allow_zero=True, at_most=_MOST_REPLICAS * per_replica)
    if n < 1:
        unit = "GPU" if per_replica == 1 else "GPUs"
        raise InputError(f"{name}={n:g}: a pool needs at least one replica of {per_replica} {unit}; {hint}.")
    if n % per_replica:
        raise InputError(f"{name}={n:g} is not a whole number of {per_replica}-GPU replicas; {hint}.")
    return int(n) // per_replica


def _refuse_percentiles(brief: Brief, fn: str) -> None:
    """Refuse a percentile target for the time per token: the decode pool's queue is not simulated (its step at
    the planned batch is every request's time per token, the mean's target). The first token's may be a
    percentile: the prefill pool's queue is simulated."""
    if brief.tpot_percentile is not None:
        raise InputError(
            f"{fn}() takes the time per token's target on the mean (the decode pool's step at its batch), not at a "
            "percentile: give tpot_percentile=None (ttft_percentile may be given: the prefill queue is simulated), "
            "or use plan() to size aggregated replicas to a percentile of the time per token."
        )


#: The decode pool's assumptions for each of the pool's (its requests arrive prefilled), by the id of the
#: assumptions (kept beside, to check): Assumptions.replace checks and names the copy, the same copy each time.
_DECODE_ASSUMPTIONS: dict[int, tuple[Assumptions, Assumptions]] = {}


def _decode_assumptions(a: Assumptions) -> Assumptions:
    """``a.replace(count_prefill=False, prefill_interference=False)``, made once per assumptions object.

    Examples
    --------
    >>> from llmcourse.assumptions import resolve
    >>> _decode_assumptions(resolve("course")).name
    'course (count_prefill=False, prefill_interference=False)'
    """
    got = _DECODE_ASSUMPTIONS.get(id(a))
    if got is not None and got[0] is a:
        return got[1]
    dec = a.replace(count_prefill=False, prefill_interference=False)
    if len(_DECODE_ASSUMPTIONS) < 256:  # the presets and a few of a reader's own
        _DECODE_ASSUMPTIONS[id(a)] = (a, dec)
    return dec


def need_fit(rep: Replica, role: str, keyword: str) -> None:
    if not rep.fits:
        raise InputError(f"the {role} replica does not fit: {rep.reason.rstrip('.')} (change {keyword}, or quantize).")


@dataclass(frozen=True)
class MoeLayout:
    """How each pool's replicas spread a mixture of experts beyond tensor parallelism: attention data-parallel
    groups and expert-parallel ranks (as :func:`llmcourse.replica.replica` takes them: ``expert_parallel`` None is
    1 with one attention group, the whole group with several). A dense model keeps the default, one group and no
    expert parallelism, in both pools.

    Examples
    --------
    >>> MoeLayout(decode_data_parallel=8).decode_expert_parallel is None
    True
    """

    prefill_data_parallel: int = 1
    prefill_expert_parallel: int | None = None
    decode_data_parallel: int = 1
    decode_expert_parallel: int | None = None


_NO_EXPERT_SPREAD = MoeLayout()


@checked
def disaggregated(
    model: Model | str,
    gpu: GPU | str,
    brief: Brief,
    *,
    prefill_gpus: int | None = None,
    decode_gpus: int | None = None,
    prefill_tensor_parallel: int = 1,
    decode_tensor_parallel: int = 1,
    moe_layout: MoeLayout | None = None,
    link: Link | str | None = None,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
) -> Disaggregated:
    """A prefill pool and a decode pool for ``brief``, each of replicas of its own shape (``*_tensor_parallel``
    GPUs each, and for a mixture of experts the attention groups and expert ranks of ``moe_layout``).

    The prefill pool's replicas prefill one prompt at a time; the smallest pool with the
    assumptions' headroom over the arrival rate whose time to first token (request overhead, the
    M/D/c wait, the prefill, the KV hand-off over ``link``: see :func:`pool_link`) meets the target,
    or ``prefill_gpus`` if given. With a percentile target (``Brief(..., ttft_percentile=99)``) the
    prefill queue is simulated instead (:func:`llmcourse.simulator.simulate_pool`: :data:`COMPARE_RUN`'s
    requests and seed, Poisson arrivals, one prompt's fixed prefill) and the pool is the fewest replicas
    whose simulated percentile meets the target, with no headroom on top (the queue is modelled, not
    allowed for, as :func:`~llmcourse.planner.design.plan` sizes on percentiles). The decode pool's replicas decode the largest batch whose time per
    token meets its target (no prefill shares their steps); the fewest replicas that complete the
    rate with the headroom, or ``decode_gpus`` if given (then the batch is the smallest that keeps up
    with the rate). A target no pool can meet (the prefill alone is slower) is reported unmet, with the prefill
    pool past which doubling the replicas shortens the first token by under 1% (not the barely stable pool,
    whose queue is long).

    Examples
    --------
    >>> from llmcourse.planner.design import Brief
    >>> from llmcourse.units import Q_
    >>> b = Brief(20, 2_000, 300, Q_(600, "ms"), Q_(40, "ms"))
    >>> d = disaggregated("Llama-3.1-70B", "H100 SXM", b, prefill_tensor_parallel=4, decode_tensor_parallel=4,
    ...                   weight_bytes="fp8", prefill_gpus=8)
    >>> d.prefill.replicas, round(d.utilisation, 2), d.ttft_met
    (2, 0.96, False)
    >>> p99 = disaggregated("Llama-3.1-70B", "H100 SXM", Brief(20, 2_000, 300, Q_(600, "ms"), Q_(40, "ms"),
    ...                     ttft_percentile=99), prefill_tensor_parallel=4, decode_tensor_parallel=4, weight_bytes="fp8")
    >>> p99.ttft_met, p99.ttft_percentile, p99.ttft <= Q_(600, "ms")
    (True, 99.0, True)
    """
    return _disaggregated(
        model, gpu, brief, (prefill_gpus, decode_gpus), (prefill_tensor_parallel, decode_tensor_parallel), moe_layout,
        link, weight_bytes, kv_bytes, assumptions, COMPARE_RUN,
    )  # fmt: skip


def _disaggregated(
    model: Any,
    gpu: Any,
    brief: Any,
    pool_gpus: tuple[Any, Any],
    shapes: tuple[Any, Any],
    moe_layout: Any,
    link: Any,
    weight_bytes: Any,
    kv_bytes: Any,
    assumptions: Any,
    simulation: Any,
) -> Disaggregated:
    """:func:`disaggregated`, its prefill queue simulated (for a percentile target) with ``simulation``'s requests and
    seed (:func:`compare` gives its own); ``pool_gpus`` is (prefill_gpus, decode_gpus), ``shapes`` the two pools'
    tensor-parallel sizes."""
    (prefill_gpus, decode_gpus), (prefill_tensor_parallel, decode_tensor_parallel) = pool_gpus, shapes
    m, g = models[model], gpus[gpu]
    if not isinstance(brief, Brief):
        raise InputError(
            "brief must be a Brief(requests_per_second, prompt_tokens, answer_tokens, ttft_target, tpot_target)."
        )
    _refuse_percentiles(brief, "disaggregated")
    moe = _moe_layout(moe_layout)
    a = resolve(assumptions)
    lk = pool_link(g, link)
    common = dict(
        prompt_tokens=brief.prompt_tokens, answer_tokens=brief.answer_tokens, weight_bytes=weight_bytes,
        kv_bytes=kv_bytes,
    )  # fmt: skip
    pre = _prefill_replica(m, g, prefill_tensor_parallel, moe, a, common)
    a_dec = _decode_assumptions(a)
    dec_at, top = _decode_replicas(m, g, decode_tensor_parallel, moe, a_dec, common)
    c_given = _pool_size(prefill_gpus, "prefill_gpus", pre.n_gpus)
    r_given = _pool_size(decode_gpus, "decode_gpus", top.n_gpus)
    handoff = kv_handoff(m, brief.prompt_tokens, link=lk, kv_lanes=kv_lanes(pre, top), kv_bytes=kv_bytes, assumptions=a)
    if simulation is not None and not isinstance(simulation, SizingRun):
        raise InputError(
            f"simulation must be a SizingRun (llmcourse.simulator.SizingRun(requests=..., seed=...)), not "
            f"{type(simulation).__name__}."
        )
    decode = _DecodePool(m, g, brief, dec_at, top, a_dec)
    r, dec = decode.sized(r_given, moe, weight_bytes, kv_bytes)
    spread = None
    if brief.ttft_percentile is not None and simulation is not None:
        spread = _spread_prompts(m, brief, simulation, handoff, lambda x: _prefill_replica(
            m, g, prefill_tensor_parallel, moe, a, {**common, "prompt_tokens": x}).first_prefill.time, lk, kv_bytes, a,
            kv_lanes(pre, top))  # fmt: skip
    prefill = _PrefillPool(brief, pre, handoff, a, simulation, dec.tpot, spread)
    c, rho, wait, ttft = prefill.sized(c_given)
    return Disaggregated(
        model=m.name,
        gpu=g.name,
        brief=brief,
        prefill=Pool("prefill", c, pre, prefill.rate(c)),
        decode=Pool("decode", r, dec, to(decode.pool_rate(r, dec), _PER_S)),
        link=lk,
        prefill_time=to(prefill.t_pre, _MS),
        kv_handoff=handoff,
        queue_wait=to(wait, _MS),
        utilisation=rho,
        ttft=to(ttft, _MS),
        tpot=to(dec.tpot, _MS),
        sized=c_given is None and r_given is None,
        ttft_percentile=brief.ttft_percentile,
        first_step=to(dec.tpot, _MS),
        spread_prompts=spread is not None,
    )


def _spread_prompts(
    m: Model,
    brief: Brief,
    run: SizingRun,
    handoff: pint.Quantity,
    prefill_at: Any,
    lk: Link,
    kv_bytes: Any,
    a: Assumptions,
    lanes: int,
) -> tuple[list[float], list[float]] | None:
    """Each simulated prompt's prefill and KV hand-off (s), for prompts spread about the brief's length as ``run``
    spreads them (None where it gives every prompt the brief's length). The prompts are the ones an aggregated
    fleet's run with the same seed draws (:func:`llmcourse.simulator.prompt_lengths`). A prefill at any length
    comes from the replica model (``prefill_at``) at about 24 lengths from the shortest prompt to the longest, its
    time per token interpolated between them (as the simulator's service model tabulates it); the hand-off is the
    alpha-beta send, a fixed part and one in proportion to the prompt's KV bytes (taken at 1 token and at the
    brief's prompt)."""
    pcv = LENGTH_CV if run.prompt_cv is None else run.prompt_cv
    acv = LENGTH_CV if run.answer_cv is None else run.answer_cv
    if pcv == 0:
        return None
    longest = m.max_position or 10**9  # the aggregated replicas' KV holds Llama-sized prompts to their positions
    lengths = prompt_lengths(run.seed, run.requests, (brief.answer_tokens, acv), (brief.prompt_tokens, pcv), longest)
    lo, hi = min(lengths), max(lengths)
    step = math.log(hi / lo) / 23 if hi > lo else 0.0
    grid = sorted({lo, hi, *(round(lo * math.exp(k * step)) for k in range(24))})
    per = [float(to(prefill_at(x), _S).m) / x for x in grid]  # seconds per token at each grid length
    slopes = [(per[i] - per[i - 1]) / (grid[i] - grid[i - 1]) for i in range(1, len(grid))]
    own: dict[int, float] = {}
    for x in set(lengths):
        i = min(max(bisect.bisect_right(grid, x), 1), len(grid) - 1)
        own[x] = x * (per[i - 1] + slopes[i - 1] * (x - grid[i - 1])) if len(grid) > 1 else x * per[0]
    h1 = float(to(kv_handoff(m, 1, link=lk, kv_lanes=lanes, kv_bytes=kv_bytes, assumptions=a), _S).m)
    hp, p = float(to(handoff, _S).m), float(brief.prompt_tokens)
    per_token = (hp - h1) / (p - 1) if p > 1 else 0.0
    return [own[x] for x in lengths], [h1 + per_token * (x - 1) for x in lengths]


def _prefill_replica(
    m: Model, g: GPU, tensor_parallel: Any, moe: MoeLayout, a: Assumptions, common: dict[str, Any]
) -> Replica:
    """The prefill pool's replica: one prompt at a time, timed by the replica model; refused if it does not fit."""
    pre = replica(
        m, g, tensor_parallel=tensor_parallel, data_parallel=moe.prefill_data_parallel,
        expert_parallel=moe.prefill_expert_parallel, batch=1, assumptions=a, **common,
    )  # fmt: skip
    need_fit(pre, "prefill", "prefill_tensor_parallel")
    return pre


def _decode_replicas(
    m: Model, g: GPU, tensor_parallel: Any, moe: MoeLayout, a_dec: Assumptions, common: dict[str, Any]
) -> tuple[Any, Replica]:
    """The decode pool's replica at any batch (its requests arrive prefilled, so none of their prefill is charged to
    it: replica()'s checks and set-up once), and at its largest; refused if it does not fit."""
    dec_at = replica_setup(
        m, g, tensor_parallel=tensor_parallel, data_parallel=moe.decode_data_parallel,
        expert_parallel=moe.decode_expert_parallel, assumptions=a_dec, **common,
    )  # fmt: skip
    top = dec_at(None)
    need_fit(top, "decode", "decode_tensor_parallel")
    return dec_at, top


def _moe_layout(moe_layout: Any) -> MoeLayout:
    if moe_layout is None:
        return _NO_EXPERT_SPREAD
    if not isinstance(moe_layout, MoeLayout):
        raise InputError(
            "moe_layout must be a MoeLayout(prefill_data_parallel=..., decode_data_parallel=..., ...), or None for "
            f"one attention group and no expert parallelism in either pool; got {type(moe_layout).__name__}."
        )
    return moe_layout


class _PrefillPool:
    """The prefill pool of a brief: its replicas prefill one prompt each, the prompts wait for a free one (M/D/c, or
    M/G/c with prompts of spread lengths), and each hands its KV cache to the decode pool, whose first step gives the
    first token. Plain floats in seconds for the search (hundreds of pools). The wait is the mean's (Sakasegawa), or
    for a percentile target the queue is simulated and the percentile taken over each request's time through it."""

    def __init__(
        self, brief: Brief, pre: Replica, handoff: pint.Quantity, a: Assumptions, run: SizingRun,
        first_step: pint.Quantity, spread: tuple[list[float], list[float]] | None = None,
    ) -> None:  # fmt: skip
        self.brief, self.n_pre, self.headroom, self.run = brief, pre.n_gpus, a.headroom, run
        self.q = brief.ttft_percentile
        self._simulated: dict[int, tuple[float, float]] = {}
        self.lam, self.t_pre, self.handoff = brief.requests_per_second, pre.first_prefill.time, handoff
        self.overhead = quantity(a.request_overhead_ms, _MS)  # Q_(a.request_overhead_ms, _MS), without pint's checks
        self.lam_s, self.t_s = float(to(self.lam, _PER_S).m), float(to(self.t_pre, _S).m)
        self.over_s, self.handoff_s = float(to(self.overhead, _S).m), float(to(handoff, _S).m)
        self.first_s = float(to(first_step, _S).m)
        self.times, self.after = spread if spread is not None else (None, None)
        # the prompts' mean prefill: the load on the pool (the brief's prompt's where every prompt has its length)
        self.mean_s = self.t_s if self.times is None else math.fsum(self.times) / len(self.times)

    def _run(self, c: int) -> tuple[float, float]:
        """(the target's percentile of the wait, of the time through the pool: wait, prefill and hand-off) (s)."""
        if c not in self._simulated:
            run = simulate_pool(
                self.lam, self.t_pre, c, requests=self.run.requests, seed=self.run.seed, service_times=self.times,
                after=self.handoff_s if self.after is None else self.after,
            )  # fmt: skip
            self._simulated[c] = float(to(run.wait_at(self.q), _S).m), float(to(run.through_at(self.q), _S).m)
        return self._simulated[c]

    def wait_s(self, c: int) -> float:
        """The wait for one of ``c`` replicas (s): the mean's, or the target's percentile of the simulated queue."""
        if self.q is None:
            return wait_f(rho_f(self.lam_s, self.t_s, c), c, self.t_s)
        return self._run(c)[0]

    def ttft_s(self, c: int) -> float:
        """The time to first token with ``c`` replicas (s): the request's overhead, its wait, prefill and hand-off
        (the mean's, or the percentile of their sum over the simulated requests), and the decode replica's first step
        (vLLM's and SGLang's disaggregated proxies stream the decode instance's tokens, the first one included)."""
        if self.q is None:
            return ttft_f(self.over_s, self.wait_s(c), self.t_s, self.handoff_s) + self.first_s
        return self.over_s + self._run(c)[1] + self.first_s

    def no_wait_s(self) -> float:
        """The time to first token with no wait at all: the least any number of replicas gives (s)."""
        if self.times is None or self.q is None:
            return ttft_f(self.over_s, 0.0, self.t_s, self.handoff_s) + self.first_s
        rank = percentile_rank(self.q, "ttft_percentile")
        alone = sorted(t + h for t, h in zip(self.times, self.after or (), strict=True))
        return self.over_s + float(sorted_percentile(alone, rank)) + self.first_s

    def fewest(self) -> int:
        """At least the headroom over the rate (and a stable queue), then the fewest that meet the target; on a
        percentile target, no headroom (the queue is simulated), only a stable queue. A target that no pool can meet
        (the prompt's own prefill and hand-off exceed it) gets the pool beyond which doubling buys under 1%."""
        stable = math.floor(self.lam_s * self.mean_s) + 1
        if self.q is None:
            c_min = int(F["gpus_for_rate"](request_rate=self.lam, headroom=self.headroom, rps_per_gpu=1 / self.t_pre).m)
            c = max(c_min, stable)
        else:
            c = stable
        target = float(to(self.brief.ttft_target, _S).m)
        if self.ttft_s(c) <= target:
            return c
        lo, limit = c, target
        if self.no_wait_s() >= target:
            # out of reach even with no wait: not the barely stable pool (a long queue), but the pool past which
            # doubling it no longer shortens the first token by 1% (the rest is the prefill itself); then the
            # fewest within that 1% of it
            while c < _MOST_REPLICAS and self.ttft_s(min(2 * c, _MOST_REPLICAS)) < 0.99 * self.ttft_s(c):
                lo, c = c, min(2 * c, _MOST_REPLICAS)
            limit = self.ttft_s(c) / 0.99
        else:
            while self.ttft_s(c) > target and c < _MOST_REPLICAS:
                lo, c = c, min(2 * c, _MOST_REPLICAS)
        while c - lo > 1:  # the wait falls as replicas are added
            mid = (lo + c) // 2
            lo, c = (mid, c) if self.ttft_s(mid) > limit else (lo, mid)
        return c

    def sized(self, c_given: int | None) -> tuple[int, float, pint.Quantity, pint.Quantity]:
        """(replicas, utilisation, the queue's wait, the time to first token): ``c_given`` replicas, else the
        fewest; refused if they would be busy all the time."""
        c = self.fewest() if c_given is None else c_given
        mean_t = quantity(self.mean_s, _S)
        rho = float(F["prefill_pool_utilisation"](request_rate=self.lam, prefill_time=mean_t, prefill_servers=c).m)
        if rho >= 1:
            need, n_pre = math.floor(self.lam_s * self.mean_s) + 1, self.n_pre
            raise InputError(
                f"prefill_gpus={c * n_pre}: {c} prefill replica{'s' if c > 1 else ''} would be busy {rho:.0%} of the "
                f"time ({self.lam_s:g} prompts/s of {self.mean_s * 1e3:,.0f} ms each on average), so the queue grows "
                f"without end; give at least {need * n_pre} GPUs."
            )
        if self.q is None:
            wait = F["mdc_wait"](prefill_utilisation=rho, prefill_servers=c, prefill_time=self.t_pre)
            ttft = F["disagg_ttft"](
                request_overhead=self.overhead, prefill_queue_wait=wait, prefill_time=self.t_pre,
                kv_handoff=self.handoff,
            )  # fmt: skip
            ttft = ttft + quantity(self.first_s, _S)  # the decode replica's first step gives the first token
        else:
            wait, ttft = quantity(self.wait_s(c), _S), quantity(self.ttft_s(c), _S)
        return c, rho, wait, ttft

    def rate(self, c: int) -> pint.Quantity:
        """Prompts per second ``c`` replicas prefill at full load."""
        return to(F["prefill_pool_rate"](prefill_servers=c, prefill_time=self.t_pre), _PER_S)


class _DecodePool:
    """The decode pool of a brief: replicas of one shape decoding their batch, with no prefill charged to them."""

    def __init__(self, m: Model, g: GPU, brief: Brief, dec_at: Any, top: Replica, a_dec: Assumptions) -> None:
        self.m, self.g, self.brief, self.dec_at, self.top, self.a_dec = m, g, brief, dec_at, top, a_dec

    def pool_rate(self, r: int, rep: Replica) -> pint.Quantity:
        return F["decode_pool_rate"](
            replicas=r, batch=rep.batch, answer_tokens=self.brief.answer_tokens, step_time=rep.tpot
        )

    def sized(self, r_given: int | None, moe: MoeLayout, weight_bytes: Any, kv_bytes: Any) -> tuple[int, Replica]:
        """(replicas, the replica at its batch): the largest batch that meets the time per token and the fewest
        replicas for the rate, or ``r_given`` replicas at the smallest batch that keeps up with the rate."""
        top, lam = self.top, self.brief.requests_per_second
        # the search runs on the replica's own decode step (its time per token, with no prefill charged):
        # decode_step(m, g, batch=b, **shape).step_time, set up once for the searches
        step_at = decode_steps(
            self.m, self.g, n_gpus=top.tensor_parallel, data_parallel=moe.decode_data_parallel,
            expert_parallel=moe.decode_expert_parallel, weight_bytes=weight_bytes, kv_bytes=kv_bytes,
            assumptions=self.a_dec, context_tokens=top.kv_read_tokens, gives="step_time",
        )  # fmt: skip
        if r_given is None:
            dec = self.dec_at(self._batch_for_target(step_at))
            r = int(
                F["gpus_for_rate"](
                    request_rate=lam, headroom=self.a_dec.headroom, rps_per_gpu=dec.requests_per_second
                ).m
            )
            return r, dec
        r = r_given
        if self.pool_rate(r, top) < lam:
            n_dec = top.n_gpus
            need = math.ceil(float(to(lam / self.pool_rate(1, top), "").m))
            raise InputError(
                f"decode_gpus={r * n_dec}: {r} decode replica{'s' if r > 1 else ''} at their largest batch "
                f"({top.batch}) complete {to(self.pool_rate(r, top), _PER_S).m:,.2f} requests/s, fewer than the "
                f"{float(to(lam, _PER_S).m):g} asked; give at least {need * n_dec} GPUs."
            )
        # the smallest batch that keeps up with the rate (the batch the traffic fills)
        ans = self.brief.answer_tokens
        rate_at = lambda b: F["decode_pool_rate"](replicas=r, batch=b, answer_tokens=ans, step_time=step_at(b))  # noqa: E731
        return r, self.dec_at(1 + largest_batch(lambda b: rate_at(b) < lam, top.max_batch))

    def _batch_for_target(self, step_at: Any) -> int:
        """The largest batch whose time per token meets the brief's target."""
        target, top = self.brief.tpot_target, self.top
        if hasattr(self.dec_at, "tpot_ms") and type(target) is Q_ and target._units == _MS._units:
            # the replica's own time per token, in ms: its decode step alone (no prefill charged to it), the same
            # float as step_at's, compared as pint compares two quantities in ms
            return max(1, largest_within(self.dec_at.tpot_ms, target._magnitude, top.max_batch))
        return max(1, largest_batch(lambda b: step_at(b) <= target, top.max_batch))


# --- aggregated against disaggregated --------------------------------------------------------------
@dataclass(frozen=True)
class Comparison:
    """The aggregated plan and the disaggregated deployment for one brief, and which wins."""

    aggregated: Plan
    disaggregated: Disaggregated

    @property
    def winner(self) -> str:
        """``"aggregated"`` or ``"disaggregated"``: the one that meets both targets on fewer GPUs
        (a tie goes to aggregated, the simpler system); ``"neither"`` if neither meets them."""
        agg, dis = self.aggregated, self.disaggregated
        ok_a, ok_d = agg.meets_targets, dis.meets_targets
        if not (ok_a or ok_d):
            return "neither"
        if ok_a and (not ok_d or agg.gpus <= dis.gpus):
            return "aggregated"
        return "disaggregated"

    @property
    def tie(self) -> bool:
        """Both meet the targets on as many GPUs: neither needs fewer (:attr:`winner` then picks aggregated)."""
        agg, dis = self.aggregated, self.disaggregated
        return agg.meets_targets and dis.meets_targets and agg.gpus == dis.gpus

    @property
    def verdict(self) -> str:
        """Which needs fewer GPUs, in words: a tie said as a tie.

        Examples
        --------
        >>> from types import SimpleNamespace as NS
        >>> Comparison(NS(meets_targets=True, gpus=16), NS(meets_targets=True, gpus=16)).verdict
        'a tie: 16 GPUs each (aggregated, the simpler system)'
        """
        if self.tie:
            return f"a tie: {self.aggregated.gpus:,} GPUs each (aggregated, the simpler system)"
        return self.winner

    @property
    def aggregated_ttft(self) -> pint.Quantity | None:
        """The aggregated plan's time to first token at the disaggregated one's percentile (its simulated queue's),
        or its mean with no queue where both are on the mean."""
        agg = self.aggregated
        if agg.sizing is not None and agg.brief.ttft_percentile is not None:
            return agg.sizing.ttft
        return agg.ttft

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) rows: both deployments' GPUs and times, then the verdict."""
        agg, dis = self.aggregated, self.disaggregated
        mark = {True: "\u2713", False: "\u2717"}
        q = dis.ttft_percentile
        at = "" if q is None else f" p{q:g}"
        if agg.fits:
            # the time per token the simulated fleet gave (its replicas run the batch the traffic fills, not the
            # planned one), beside the plan's at its batch, which the target is checked on
            sim = "" if agg.sizing is None else f", simulated p99 {ms_text(agg.sizing.tpot)}"
            a_row = (
                f"{agg.gpus:,} GPUs ({agg.gpus // agg.tensor_parallel:,} x TP{agg.tensor_parallel}); "
                f"TTFT{at} {ms_text(self.aggregated_ttft)} {mark[agg.ttft_met]}, TPOT at the planned batch {agg.batch} "
                f"{ms_text(agg.tpot)} {mark[agg.tpot_met]}{sim}"
            )
        else:
            a_row = f"does not fit: {agg.reason}"
        d_row = (
            f"{dis.gpus:,} GPUs ({dis.prefill.gpus:,} prefill + {dis.decode.gpus:,} decode); "
            f"TTFT{at} {ms_text(dis.ttft)} {mark[dis.ttft_met]}, TPOT {ms_text(dis.tpot)} {mark[dis.tpot_met]}"
        )
        rows = [("aggregated", a_row), ("disaggregated", d_row), *dis.rows(), ("fewer GPUs", self.verdict)]
        if agg.fits and agg.sizing is not None and agg.sizing.close_call():
            rows.append(
                (
                    "aggregated size not settled",
                    "its percentile target lies inside the simulated percentile's sampling interval, so another seed "
                    "can move its GPU count: rerun with more requests (the simulation's SizingRun with requests=...) "
                    "or with settled=True before choosing",
                )
            )
        return rows

    def __str__(self) -> str:
        return "\n".join(f"{k:>30}: {v}" for k, v in self.rows())


@checked
def compare(
    model: Model | str,
    gpu: GPU | str,
    brief: Brief,
    *,
    tensor_parallel: int = 1,
    prefill_tensor_parallel: int | None = None,
    decode_tensor_parallel: int | None = None,
    link: Link | str | None = None,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
    percentile: float = 99,
    simulation: SizingRun = COMPARE_RUN,
) -> Comparison:
    """The aggregated :func:`~llmcourse.planner.design.plan` (replicas of ``tensor_parallel`` GPUs) beside
    :func:`disaggregated` (pools of ``prefill_tensor_parallel`` and ``decode_tensor_parallel`` GPUs
    per replica, ``tensor_parallel`` by default) at the same brief, GPU and assumptions.

    Both first tokens wait in a queue, and both are read at the same percentile: the brief's
    ``ttft_percentile``, or ``percentile`` (99 by default) where the brief's target is on the mean. A
    queue-less first token on one side against a queued one on the other would favour the side without
    the queue. The aggregated replicas' queue is simulated by :func:`plan` (its percentile sizing), the
    prefill pool's by :func:`llmcourse.simulator.simulate_pool`; both see the same workload: Poisson
    arrivals drawn from ``simulation``'s seed, ``simulation``'s requests, every prompt and answer of the
    brief's length (:data:`COMPARE_RUN` by default, the pools' M/D/c model; a ``simulation`` given with
    spread lengths spreads the aggregated side's only).

    Examples
    --------
    >>> from llmcourse.planner.design import Brief
    >>> from llmcourse.units import Q_
    >>> c = compare("Llama-3.1-70B", "H100 SXM", Brief(20, 2_000, 300, Q_(600, "ms"), Q_(40, "ms")),
    ...             tensor_parallel=4, weight_bytes="fp8")
    >>> c.aggregated.brief.ttft_percentile, c.disaggregated.ttft_percentile
    (99.0, 99.0)
    >>> c.aggregated.sizing.ttft <= Q_(600, "ms") and c.disaggregated.ttft <= Q_(600, "ms")
    True
    """
    if isinstance(brief, Brief):
        _refuse_percentiles(brief, "compare")
        if brief.ttft_percentile is None:
            brief = dataclasses.replace(brief, ttft_percentile=percentile_rank(percentile, "percentile"))
    agg = plan(
        model, gpu, brief, tensor_parallel=tensor_parallel, weight_bytes=weight_bytes, kv_bytes=kv_bytes,
        assumptions=assumptions, simulation=simulation,
    )  # fmt: skip
    shapes = tuple(tensor_parallel if x is None else x for x in (prefill_tensor_parallel, decode_tensor_parallel))
    dis = _disaggregated(
        model, gpu, brief, (None, None), shapes, None, link, weight_bytes, kv_bytes, assumptions, simulation,
    )  # fmt: skip
    return Comparison(agg, dis)
