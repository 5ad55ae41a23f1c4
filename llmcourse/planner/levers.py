"""Rank the levers of a design by re-running the design planner with each one switched on.

Defined in the capstone chapter *Design review* (``book/11_design_review.md``). Every number comes
from :func:`llmcourse.planner.design.plan` (a lever's plan by plan()'s own path, ``llmcourse.planner.design.lever_plan``, which stops
at the fields a ranking reads: the same numbers, without the replica plan() also returns), or for the split into
two pools from :func:`llmcourse.planner.disagg.disaggregated`, on the same replica model. The levers come in three
kinds (:attr:`Lever.kind`), ranked apart: **engineering** levers change how the same model serves the same
product; a **model** change needs another checkpoint (and an evaluation of its answers); a **product** change
changes what users get. The levers:

* **FP8 KV cache** (engineering): ``kv_bytes="fp8"``, one byte per cached value, as vLLM's
  ``--kv-cache-dtype fp8``, SGLang's ``--kv-cache-dtype fp8_e4m3`` and TensorRT-LLM's FP8 KV cache store it;
  nothing changes for a cache already at one byte or less.
* **INT4 weights** (engineering): ``weight_bytes="int4"`` (per-group scales not counted).
* **EAGLE head** (engineering): speculative decoding with the model's EAGLE-3 head
  (``Speculation("eagle head", EAGLE_DRAFT_TOKENS, EAGLE_ACCEPTANCE)``), for a model the draft catalog has a
  head for (``llmcourse/data/speculative_drafts.csv``); vLLM, SGLang and TensorRT-LLM all run EAGLE-3 heads.
* **Disaggregation** (engineering): a prefill pool and a decode pool of the baseline's replica shape
  (:func:`~llmcourse.planner.disagg.disaggregated`, its first token at the brief's percentile, or on the mean
  with the prefill queue's mean wait); NVIDIA Dynamo, llm-d, SGLang, vLLM and TensorRT-LLM run the split.
* **Small token budget** (engineering): the engine's per-step token budget cut to about
  :math:`B\\,(1 + T_p/T_a)` (formula ``spread_token_budget``; of those at batches up to three times the
  baseline's, the one that needs the fewest GPUs), so that every step carries a small chunk of prompt instead of a
  few steps carrying whole prompts: vLLM's ``--max-num-batched-tokens`` (vLLM lowers its default
  ``--max-num-seqs`` to the budget, and refuses one set above it), TensorRT-LLM's ``max_num_tokens`` with chunked
  context on, SGLang's ``--chunked-prefill-size`` with ``--enable-mixed-chunk``. The time per token steadies and
  the batch at the target grows; the first token waits for its prompt's chunks and, with room for about one
  prompt's chunk a step, for the prompts before it (charged as a queue, formula ``mdc_wait``). Not for llama.cpp,
  nor where the engine's budget is that small already.
* **Prefix caching at a hit rate** ``h`` (engineering): the modelling choice of this course is that a hit
  saves *prefill work only*. The cached tokens' keys and values still sit in memory for the whole
  request (the request attends to them), so the KV per request and the largest batch are those of
  the full prompt; only the prefill shrinks, to that of the ``(1 - h)`` of the prompt that is new
  (its tokens still attend to the cached ones): the time to first token, the prefills between a
  user's steps and, where the assumptions charge prefill, each batch's share of the replica's time.
  It is :func:`llmcourse.planner.design.plan` with ``cached_prompt_tokens``. (Prefix blocks shared by many
  requests are stored once in a paged cache, which would also save memory; that is not counted.)
* **GQA with 8 KV heads** (model): the model with ``kv_heads=8`` (``Model.with_``); nothing changes for a
  model that already has 8 or fewer (or uses MLA).
* **Shorter contexts** (product): the prompt cut to ``context_fraction`` of its length (trimmed history or
  fewer retrieved passages): less KV held *and* less prefill, and less context for the answer.

The headroom, the efficiencies and whether prefill is charged are those of the plan's
assumptions (``assumptions=`` among the plan keywords; the course's method by default).

Examples
--------
>>> from llmcourse.planner.design import Brief
>>> from llmcourse.units import Q_
>>> b = Brief(20, 3_600, 400, Q_(1, "s"), Q_(40, "ms"))  # within Llama 2 13B's 4,096 positions
>>> [(x.kind, x.name, x.gpus) for x in rank_levers("Llama-2-13B", "H100 SXM", b)][:2]
[('engineering', 'FP8 KV cache', 18), ('engineering', 'INT4 weights', 23)]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pint

from llmcourse.arith import at_most, times
from llmcourse.catalog import GPU, Model
from llmcourse.catalog.drafts import draft_heads
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS
from llmcourse.planner.design import Brief, Plan, lever_plan, plan
from llmcourse.planner.disagg import disaggregated
from llmcourse.replica.base import bytes_of, gpu_of, model_of
from llmcourse.replica.scheduler import EngineSettings, engine_settings, scheduler_of
from llmcourse.replica.speculative import Speculation
from llmcourse.units import Q_, fmt, plain_number, to

__all__ = [
    "BUDGET_BATCHES",
    "CONTEXT_FRACTION",
    "EAGLE_ACCEPTANCE",
    "EAGLE_DRAFT_TOKENS",
    "HIT_RATE",
    "KINDS",
    "LEVER_NAMES",
    "Lever",
    "prefix_cached_plan",
    "rank_levers",
    "rank_levers_against",
    "verdict",
]

LEVER_NAMES = (
    "GQA, 8 KV heads",
    "FP8 KV cache",
    "INT4 weights",
    "shorter contexts",
    "prefix caching",
    "EAGLE head",
    "disaggregation",
    "small token budget",
)
#: The kinds of lever, in the order a ranking lists them: serving changes first, then another model, then the product.
KINDS = ("engineering", "model", "product")
_KIND = {"GQA, 8 KV heads": "model", "shorter contexts": "product"}  # the rest are engineering
#: The levers' settings when none are given (a scenario of the review, not a modelling constant):
#: half of each prompt's tokens found in the prefix cache (the low end of the capacity-planning
#: method's "50-80% hit rates are common in multi-turn chat"), and prompts cut to half.
HIT_RATE = 0.5  # a scenario value (half of each prompt cached), not a modelling constant
CONTEXT_FRACTION = 0.5  # likewise: prompts cut to half
#: The EAGLE head's scenario (likewise): four draft tokens a step, each accepted with probability 0.7 (the chapter
#: *Speculative decoding*'s chat setting; acceptance depends on the traffic, so measure your own).
EAGLE_DRAFT_TOKENS, EAGLE_ACCEPTANCE = 4, 0.7
#: The small token budget lever's search (likewise, a search grid, not a modelling constant): budgets that spread the
#: prompts evenly at the baseline's batch times each of these.
BUDGET_BATCHES = (1, 1.25, 1.5, 1.75, 2, 2.5, 3)


@dataclass(frozen=True)
class Lever:
    """One lever's re-run plan against the baseline."""

    name: str
    applies: bool
    fits: bool
    gpus: int | None
    saved: int | None
    meets_targets: bool
    ttft: pint.Quantity | None
    tpot: pint.Quantity | None
    cost_per_hour: pint.Quantity | None
    note: str

    @property
    def kind(self) -> str:
        """``"engineering"``, ``"model"`` (another checkpoint) or ``"product"`` (users get something else)."""
        return _KIND.get(self.name, "engineering")

    def row(self) -> tuple[str, str]:
        """(label, text) for a review table."""
        if not self.fits:
            return (self.name, f"does not fit ({self.note})")
        saved = (
            ""
            if self.saved is None
            else f", saves {self.saved:,}"
            if self.saved >= 0
            else f", costs {-self.saved:,} more"
        )
        mark = "\u2713" if self.meets_targets else "\u2717"
        kind = "" if self.kind == "engineering" else f" ({self.kind} change)"
        return (self.name + kind, f"{self.gpus:,} GPUs{saved}; targets {mark}; {self.note}")


def prefix_cached_plan(model: Model | str, gpu: GPU | str, brief: Brief, hit_rate: float, **plan_kwargs: Any) -> Plan:
    """:func:`plan` with ``hit_rate`` of each prompt's tokens found in a prefix cache: those are not
    prefilled again (the new tokens still attend to them), but their KV is held for the whole request,
    so the memory per request is the full prompt's (see the module notes).

    Examples
    --------
    >>> from llmcourse.units import Q_
    >>> b = Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms"))
    >>> p, full = prefix_cached_plan("Llama-3.1-8B", "H100 SXM", b, 0.5), plan("Llama-3.1-8B", "H100 SXM", b)
    >>> prefills = [x.replica.first_prefill.time for x in (p, full)]  # the first token also waits per request
    >>> round((prefills[0] / prefills[1]).m, 2), p.kv_per_request == full.kv_per_request
    (0.51, True)
    """
    return _prefix_cached(plan, model, gpu, brief, hit_rate, plan_kwargs)


def _prefix_cached(planner: Any, model: Any, gpu: Any, brief: Brief, hit_rate: float, plan_kwargs: dict) -> Any:
    """:func:`prefix_cached_plan` through ``planner`` (:func:`plan`, or the lever ranking's ``lever_plan``)."""
    h = _hit_rate(hit_rate)
    return planner(model, gpu, _brief(brief), cached_prompt_tokens=h * brief.prompt_tokens, **plan_kwargs)


def _hit_rate(hit_rate: Any) -> float:
    h = plain_number(hit_rate, "hit_rate", allow_zero=True, at_most=1.0)
    if h >= 1:
        raise InputError(f"hit_rate is the share of prompt tokens found in the cache and must be below 1; got {h}.")
    return h


def _brief(brief: Any) -> Brief:
    if not isinstance(brief, Brief):
        raise InputError(f"brief must be a Brief: build one with llmcourse.Brief(...), not {type(brief).__name__}.")
    return brief


def _lever(name: str, base: Plan, p: Any, note: str, applies: bool = True) -> Lever:
    """The lever ``name`` from the baseline plan and the lever's (a :class:`Plan`, or the figures of one that
    ``lever_plan`` gives: the same fields)."""
    if not p.fits:
        return Lever(name, applies, False, None, None, False, None, None, None, p.reason)
    saved = None if not base.fits else base.gpus - p.gpus
    return Lever(name, applies, True, p.gpus, saved, p.meets_targets, p.ttft, p.tpot, p.cost_per_hour, note)


def rank_levers(
    model: Model | str,
    gpu: GPU | str,
    brief: Brief,
    *,
    hit_rate: float = HIT_RATE,
    context_fraction: float = CONTEXT_FRACTION,
    **plan_kwargs: Any,
) -> list[Lever]:
    """Re-run :func:`plan` with each lever on its own; ranked by kind (engineering levers first, then a model
    change, then a product change: :data:`KINDS`), within a kind those that meet the targets first, each by GPUs
    saved (most first).

    ``plan_kwargs`` (``weight_bytes``, ``kv_bytes``, ``assumptions``, ...) describe the baseline; a lever
    overrides only its own setting. Levers that leave the plan unfitted sort last.
    """
    return rank_levers_against(model, gpu, brief, None, hit_rate, context_fraction, plan_kwargs)


def rank_levers_against(
    model: Model | str,
    gpu: GPU | str,
    brief: Brief,
    base: Plan | None,
    hit_rate: float,
    context_fraction: float,
    plan_kwargs: dict[str, Any],
) -> list[Lever]:
    """:func:`rank_levers`, given the baseline ``base`` if the caller has planned it already (the same
    ``plan(model, gpu, brief, **plan_kwargs)``: the design review's own plan), else planned here.

    ``hit_rate``, ``context_fraction`` and ``plan_kwargs`` (a dict of :func:`plan`'s keywords) are
    :func:`rank_levers`'s, given as they are.

    Examples
    --------
    >>> from llmcourse.planner.design import Brief
    >>> from llmcourse.units import Q_
    >>> b = Brief(20, 3_600, 400, Q_(1, "s"), Q_(40, "ms"))
    >>> base = plan("Llama-2-13B", "H100 SXM", b)
    >>> levers = rank_levers_against("Llama-2-13B", "H100 SXM", b, base, HIT_RATE, CONTEXT_FRACTION, {})
    >>> [(x.name, x.gpus) for x in levers if x.kind != "engineering"]
    [('GQA, 8 KV heads', 12), ('shorter contexts', 15)]
    """
    m, g = model_of(model), gpu_of(gpu)
    cf = plain_number(context_fraction, "context_fraction", at_most=1.0)
    hit_rate = _hit_rate(hit_rate)
    if base is None:
        base = plan(m, g, _brief(brief), **plan_kwargs)
    out = []
    if m.attention == "MLA" or m.kv_heads <= 8 or m.heads % 8:
        why = f"{m.name} already has {m.kv_heads} KV heads" if m.attention != "MLA" else f"{m.name} uses MLA"
        out.append(_lever(LEVER_NAMES[0], base, base, why, applies=False))
    else:
        out.append(
            _lever(
                LEVER_NAMES[0],
                base,
                lever_plan(m.with_(kv_heads=8), g, brief, **plan_kwargs),
                f"{m.kv_heads} -> 8 KV heads: KV per request / {m.kv_heads // 8}",
            )
        )
    out.append(_fp8_kv(m, g, brief, base, plan_kwargs))
    out.append(
        _lever(
            LEVER_NAMES[2],
            base,
            lever_plan(m, g, brief, **{**plan_kwargs, "weight_bytes": "int4"}),
            "half a byte per weight",
        )
    )
    short = Brief(
        brief.requests_per_second, brief.prompt_tokens * cf, brief.answer_tokens, brief.ttft_target, brief.tpot_target
    )
    out.append(
        _lever(
            LEVER_NAMES[3],
            base,
            lever_plan(m, g, short, **plan_kwargs),
            f"prompt cut to {cf:.0%} ({short.prompt_tokens:,.0f} tokens)",
        )
    )
    out.append(
        _lever(
            LEVER_NAMES[4],
            base,
            _prefix_cached(lever_plan, m, g, brief, hit_rate, plan_kwargs),
            f"{hit_rate:.0%} of prompt tokens cached: less prefill, same KV held",
        )
    )
    out.append(_eagle(m, g, brief, base, plan_kwargs))
    out.append(_split(m, g, brief, base, plan_kwargs))
    out.append(_budget(m, g, brief, base, plan_kwargs))
    order = {k: i for i, k in enumerate(KINDS)}
    return sorted(
        out,
        key=lambda x: (
            not x.fits,
            order[x.kind],
            not x.meets_targets,
            -(x.saved or 0) if x.saved is not None else 0,
            x.gpus or 0,
        ),
    )


def _not_applied(name: str, base: Plan, why: str) -> Lever:
    """A lever that does not apply to this deployment: the baseline's figures, nothing saved."""
    return _lever(name, base, base, why, applies=False)


def _fp8_kv(m: Model, g: GPU, brief: Brief, base: Plan, plan_kwargs: dict[str, Any]) -> Lever:
    """The FP8 KV cache lever: one byte per cached value, where the baseline stores more."""
    if to(bytes_of(plan_kwargs.get("kv_bytes", 2), "kv_bytes"), "B").m <= 1:
        return _not_applied(LEVER_NAMES[1], base, "the KV cache is already one byte per value or less")
    p = lever_plan(m, g, brief, **{**plan_kwargs, "kv_bytes": "fp8"})
    return _lever(LEVER_NAMES[1], base, p, "1 byte per cached value: half the KV per request of BF16")


def _eagle(m: Model, g: GPU, brief: Brief, base: Plan, plan_kwargs: dict[str, Any]) -> Lever:
    """The EAGLE head lever, for a model whose head the draft catalog lists (and a baseline that does not speculate
    already, on targets for the mean: a percentile's queue simulation does not model speculation)."""
    name = LEVER_NAMES[5]
    if not any(kind == "eagle head" and target == m.name for kind, target in draft_heads().values()):
        return _not_applied(name, base, f"no EAGLE head for {m.name} in the draft catalog")
    if plan_kwargs.get("speculation") is not None:
        return _not_applied(name, base, "the baseline already speculates")
    if brief.on_percentiles:
        return _not_applied(name, base, "percentile targets are simulated without speculation")
    if engine_settings(plan_kwargs.get("engine")).engine == "llama.cpp":
        return _not_applied(name, base, "speculation under llama.cpp is not modelled")
    spec = Speculation("eagle head", EAGLE_DRAFT_TOKENS, EAGLE_ACCEPTANCE)
    p = lever_plan(m, g, brief, **{**plan_kwargs, "speculation": spec})
    return _lever(name, base, p, f"{spec.label()}: {spec.expected_tokens:.2f} tokens a verification step")


def _budget(m: Model, g: GPU, brief: Brief, base: Plan, plan_kwargs: dict[str, Any]) -> Lever:
    """The small token budget lever: of the budgets that spread each prompt evenly over the steps at batches from
    the baseline's up to :data:`BUDGET_BATCHES` times it (formula ``spread_token_budget``), the one that needs the
    fewest GPUs; the engine's cap on running requests no higher than the budget, prompt chunks mixed into decode
    steps. A budget too small for a batch holds the batch to what it can feed (a prompt for every answer finished),
    so the fewest GPUs sit at a batch in between, not at the baseline's.

    A small budget leaves room for about one prompt's chunk a step, so a new prompt waits for the one before it:
    on a brief for the mean, the first token is charged that wait (formula ``mdc_wait``, one server per replica,
    each prompt's chunk steps its service), and replicas are added until it meets the target (as the split's
    prefill pool is charged its queue); a brief on percentiles is simulated with the budget by :func:`plan`."""
    name = "small token budget"  # one of LEVER_NAMES
    if not base.fits:
        return _lever(name, base, base, base.reason)
    e = engine_settings(plan_kwargs.get("engine"))
    if e.engine == "llama.cpp":
        return _not_applied(name, base, "llama.cpp runs a prompt apart from the decodes")
    default = scheduler_of(e.engine, g, max_batched_tokens=e.max_batched_tokens, max_running=e.max_running)
    best: tuple[tuple[bool, int, float], Lever] | None = None
    for budget in sorted(
        {
            math.ceil(
                FORMULAS["spread_token_budget"](
                    batch=round(base.batch * f), prompt_tokens=brief.prompt_tokens, answer_tokens=brief.answer_tokens
                )
            )
            for f in BUDGET_BATCHES
        }
    ):
        if budget >= default.token_budget:
            continue
        cap = budget if default.max_running is None else min(budget, default.max_running)
        settings = EngineSettings(e.engine, max_batched_tokens=budget, mixed_prefill=True, max_running=cap)
        p = plan(m, g, brief, **{**plan_kwargs, "engine": settings})
        if not p.fits:
            continue
        lever = _queued(name, base, p, brief, f"{budget:,} tokens a step, at most {cap:,} running")
        key = (not lever.meets_targets, lever.gpus or 0, to(lever.ttft, "s").m)
        if best is None or key < best[0]:
            best = (key, lever)
    if best is None:
        return _not_applied(name, base, f"the engine's budget, {default.token_budget:,} tokens, is that small already")
    return best[1]


def _queued(name: str, base: Plan, p: Plan, brief: Brief, settings: str) -> Lever:
    """The budget lever's plan ``p`` with its prompts' queue: on a brief for the mean, the replicas that bring the
    first token, with its wait for the prompt room (formula ``mdc_wait``, one server per replica), within the target
    (no more than four times the plan's); on percentiles, ``p`` as simulated."""
    if brief.on_percentiles or p.replica is None or p.replica.engine_step is None:
        return _lever(name, base, p, f"{settings}: prompts in small chunks over every step")
    t_pre = to(p.replica.engine_step.first_token_prefill, "s").m
    rate = to(brief.requests_per_second, "1/s").m
    tp = p.tensor_parallel
    replicas = (p.gpus or 0) // tp
    ttft, met = to(p.ttft, "s").m, False
    for n in range(replicas, 4 * replicas + 1):
        rho = rate * t_pre / n
        if rho >= 1:
            continue
        wait = FORMULAS["mdc_wait"](prefill_utilisation=rho, prefill_servers=1, prefill_time=Q_(t_pre, "s"))
        ttft = to(p.ttft, "s").m + to(wait, "s").m
        met = at_most(Q_(ttft, "s"), brief.ttft_target) and p.tpot is not None and at_most(p.tpot, brief.tpot_target)
        replicas = n
        if met:
            break
    gpus = replicas * tp
    note = (
        f"{settings}: prompts in small chunks over every step; the first token with its wait for the prompt room "
        f"({replicas:,} replicas)"
    )
    cost = to(times(base.price_per_hour, gpus), "USD/hour")
    return Lever(name, True, True, gpus, base.gpus - gpus, met, to(Q_(ttft, "s"), "ms"), p.tpot, cost, note)


def _split(m: Model, g: GPU, brief: Brief, base: Plan, plan_kwargs: dict[str, Any]) -> Lever:
    """The disaggregation lever: a prefill pool and a decode pool of the baseline's replica shape, at the baseline's
    precisions, assumptions and price (refused by the pools' sizing: the lever does not fit, and says why)."""
    name = LEVER_NAMES[6]
    if not base.fits:
        return _lever(name, base, base, base.reason)
    if plan_kwargs.get("speculation") is not None or plan_kwargs.get("cached_prompt_tokens", 0):
        return _not_applied(name, base, "the pools are sized without speculation or a prefix cache")
    tp = base.tensor_parallel
    try:
        d = disaggregated(
            m, g, brief, prefill_tensor_parallel=tp, decode_tensor_parallel=tp,
            weight_bytes=plan_kwargs.get("weight_bytes"), kv_bytes=plan_kwargs.get("kv_bytes", 2),
            assumptions=plan_kwargs.get("assumptions"),
        )  # fmt: skip
    except InputError as exc:
        return Lever(name, True, False, None, None, False, None, None, None, str(exc))
    q = d.ttft_percentile
    queued = "its mean wait for a prefill replica" if q is None else f"the prefill queue's p{q:g}, simulated"
    note = f"{d.prefill.gpus:,} prefill + {d.decode.gpus:,} decode GPUs (TP{tp}); the first token with {queued}"
    cost = to(times(base.price_per_hour, d.gpus), "USD/hour")
    return Lever(name, True, True, d.gpus, base.gpus - d.gpus, d.meets_targets, d.ttft, d.tpot, cost, note)


def verdict(p: Plan) -> str:
    """One sentence: does the plan meet its brief, and if not, why and what to change."""
    if not isinstance(p, Plan):
        raise InputError(f"verdict takes a Plan (from llmcourse.plan(...)), not {type(p).__name__}.")
    if not p.fits:
        return f"cannot serve this brief: {p.reason}"
    b = p.brief
    if p.meets_targets:
        return f"meets both targets with {p.gpus:,} GPU{'s' if p.gpus != 1 else ''}; the bottleneck is {p.bottleneck}."
    why = []
    if not p.tpot_met:
        why.append(
            f"even a batch of {p.batch} takes {fmt(p.tpot, 'ms')} per token against a "
            f"{fmt(b.tpot_target, 'ms')} target ({p.bottleneck}): store fewer bytes per weight, "
            "use a GPU with more bandwidth, split the model over GPUs, or verify several drafted tokens per read of "
            "the weights (speculative decoding)"
        )
    if not p.ttft_met:
        why.append(
            f"prefill of {b.prompt_tokens:,.0f} prompt tokens takes {fmt(p.ttft, 'ms')} against a "
            f"{fmt(b.ttft_target, 'ms')} target: shorten or cache the prompt, or use more FLOP/s"
        )
    return "misses its targets: " + "; ".join(why) + "."
