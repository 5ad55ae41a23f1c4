"""THE model of one replica: the batch that fits, its decode step, prefill, throughput and cost; :func:`replica`
is the one front door (a plain or a speculative replica)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import pint

from llmcourse.arith import over, times
from llmcourse.assumptions import Assumptions, for_engine, resolve
from llmcourse.catalog import GPU, Model
from llmcourse.catalog.precision import precision_label
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import checked
from llmcourse.replica.base import (
    BYTES_TO_GB,
    MS_TO_S,
    S_TO_MS,
    check_positions,
    gpu_of,
    model_of,
    once,
    own_quantity,
    price_of,
)
from llmcourse.replica.chunked import ChunkedSteps, StepParts, chunked_steps, steady_step
from llmcourse.replica.deployment import Deployment, Workload
from llmcourse.replica.memory import (
    admission_si,
    check_weights_fit,
    final_batch_si,
    gpus_for_weights,
    kv_sequence_si,
    replica_memory_si,
)
from llmcourse.replica.parallel import Layout, layout
from llmcourse.replica.prefilling import Prefill, prefiller, prompt_chunks, separate_prefill_s
from llmcourse.replica.setups import keep_set_up, kept_set_up, set_up_key
from llmcourse.replica.speculative import (
    Speculation,
    SpeculativeStep,
    check_speculating_engine,
    speculation_of,
    speculative_cycle,
    speculative_memory,
)
from llmcourse.replica.step import DecodeStep, EngineStep, decoder, layer_floor_ms, matmul_precision
from llmcourse.units import (
    BYTE,
    GB,
    MS,
    PER_S,
    USD,
    fmt,
    plain_number,
    quantity,
    to,
)

# --- the replica model ----------------------------------------------------------------------------
_NO_PROMPT = "the time to first token needs the prompt length: give replica(..., prompt_tokens=...)."


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
    kv_per_sequence: pint.Quantity  #: under llama.cpp its own layers' only, beside the window cache (``kv_in_use``)
    max_batch: int
    batch: int
    context_tokens: float
    matmul: str = "bf16"
    #: How the weights are stored: each tensor group's precision, "(the checkpoint's)" when none was given.
    weight_precision: str | None = None
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
    engine: str = "vLLM"
    engine_step: EngineStep | None = field(default=None, repr=False)
    kv_in_use: pint.Quantity | None = field(default=None, repr=False)

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
        """The weights and the batch's KV cache: at their final length, or (admission ``"blocks"``) the KV the
        staggered conversations hold (formula ``kv_in_use``)."""
        kv = self.batch * self.kv_per_sequence if self.kv_in_use is None else self.kv_in_use
        return to(self.weights + kv, GB)

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
        if self.engine_step is not None:
            return self.engine_step.throughput
        if not self.counts_prefill:
            return s.throughput
        return to(
            F["cycle_throughput"](
                batch=self.batch,
                answer_tokens=self.answer_tokens,
                prefill_time=self.batch_prefill.time,
                step_time=s.step_time,
            ),
            PER_S,
        )

    @property
    def prefill_share(self) -> float | None:
        """Share of the cycle spent prefilling (None when prefill is not charged); under an engine's scheduler,
        the share of a user's time per token the prompts take (:attr:`EngineStep.prefill_share`)."""
        if self.engine_step is not None:
            return self.engine_step.prefill_share
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
        its share of the other requests' prefills that run between its steps; under an engine's scheduler
        (assumptions' ``prefill_schedule`` ``"engine"``), the step the engine runs (:class:`EngineStep`)."""
        s = self._need_step()
        if self.engine_step is not None:
            return self.engine_step.time_per_token
        if not (self.assumptions.prefill_interference and self.batch_prefill is not None):
            return s.step_time
        return to(
            F["interleaved_tpot"](
                step_time=s.step_time,
                prefill_time=self.batch_prefill.time,
                batch=self.batch,
                answer_tokens=self.answer_tokens,
            ),
            MS,
        )

    @property
    def tokens_per_s_per_user(self) -> pint.Quantity:
        return to(1 / self.tpot, PER_S)

    @property
    def ttft(self) -> pint.Quantity:
        """Time to first token with no queue: the assumptions' per-request overhead, then one prompt's prefill."""
        if self.first_prefill is None:
            raise InputError(_NO_PROMPT)
        pre = self.first_prefill.time if self.engine_step is None else self.engine_step.first_token_prefill
        return to(
            F["first_token_time"](
                request_overhead=quantity(self.assumptions.request_overhead_ms, MS), prefill_time=pre
            ),
            MS,
        )

    @property
    def requests_per_second(self) -> pint.Quantity:
        """Requests the replica completes per second at full load."""
        if self.answer_tokens is None:
            raise InputError("requests per second needs the answer length: give replica(..., answer_tokens=...).")
        return to(over(self.throughput, self.answer_tokens), PER_S)

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
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    price_per_hour: Any = None,
    assumptions: Assumptions | str | None = None,
    cached_prompt_tokens: float = 0,
    speculation: Any = None,
    pipeline_parallel: int = 1,
    data_parallel: int = 1,
    expert_parallel: int | None = None,
    link: Any = None,
    engine: str | None = None,
    max_batched_tokens: int | None = None,
    mixed_prefill: bool | None = None,
    max_running: int | None = None,
) -> Replica:
    """The one replica model: ``tensor_parallel`` GPUs serving ``batch`` requests of
    ``prompt_tokens`` in and ``answer_tokens`` out (the largest batch that fits if ``batch`` is
    None), under ``assumptions`` (the course's by default; a what-if changes them:
    ``assumptions=resolve("course").replace(bandwidth_efficiency=0.8)``).

    ``context_tokens`` is the final length of a sequence; a method that neither charges prefill
    nor reads the KV cache at the average context (``"envelope"``, ``"capacity"``) may be given
    that alone. ``price_per_hour`` defaults to the catalog's price of the GPU, if it has one.
    ``cached_prompt_tokens`` of each prompt found in a prefix cache are not prefilled again (their
    KV is still held for the request: the memory and the batch are the full prompt's).
    ``speculation`` (a :class:`llmcourse.replica.speculative.Speculation`; by default the assumptions',
    off in every preset) makes the deployment speculate: the draft's weights and KV count in memory
    and each decode step is the speculative cycle per output token
    (:func:`llmcourse.replica.model.speculative_replica`).

    A replica may span ``tensor_parallel`` x ``data_parallel`` x ``pipeline_parallel`` GPUs
    (:func:`llmcourse.replica.parallel.layout`; ``expert_parallel`` splits a MoE model's experts), its
    collectives on ``link`` (the GPU's own by default): see :func:`decode_step`. With several
    attention groups each holds the attention weights whole, so the weights held grow.

    ``engine`` (``"vLLM"`` by default, ``"SGLang"``, ``"TensorRT-LLM"``, ``"llama.cpp"``) and its scheduler settings
    (``max_batched_tokens``, ``mixed_prefill``, ``max_running``; None: the engine's defaults,
    :mod:`~llmcourse.replica.scheduler`) set, under the course's assumptions (``prefill_schedule`` ``"engine"``),
    the steps the replica runs: a waiting prompt goes into a step beside the decode tokens, whole where the token
    budget's rest holds it (else in chunks of that rest), and the other steps decode alone (formula
    ``chunked_mean_step``), or separate prefill batches pause decoding; the time per token, the throughput and the first token follow from those
    steps (:class:`~llmcourse.replica.step.EngineStep`), and the batch is capped at ``max_running``. With admission
    ``"blocks"`` (the course's) the largest batch is the one whose staggered conversations fit (formula
    ``kv_in_use``), not all at their final length.

    Examples
    --------
    >>> r = replica("Qwen2.5-72B", "H100 SXM", tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300,
    ...             weight_bytes="fp8")
    >>> r.batch, round(r.step.step_time.to(MS).m, 1), round(r.throughput.m), r.fits
    (100, 34.8, 1164, True)
    >>> e = replica("Qwen2.5-72B", "H100 SXM", tensor_parallel=2, context_tokens=2_300, weight_bytes="fp8",
    ...             assumptions="envelope")
    >>> round(e.throughput.m), round(e.cost_per_million_output_tokens.m, 2)
    (4387, 0.32)
    """
    deployment, workload = _objects(
        model, gpu, tensor_parallel, pipeline_parallel, data_parallel, expert_parallel, link, weight_bytes, kv_bytes,
        speculation, prompt_tokens, answer_tokens, context_tokens, cached_prompt_tokens,
        (engine, max_batched_tokens, mixed_prefill, max_running),
    )  # fmt: skip
    return setup_of(deployment, workload, resolve(assumptions), price_per_hour).at(batch)


def _objects(
    model: Any,
    gpu: Any,
    tensor_parallel: Any,
    pipeline_parallel: Any,
    data_parallel: Any,
    expert_parallel: Any,
    link: Any,
    weight_bytes: Any,
    kv_bytes: Any,
    speculation: Any,
    prompt_tokens: Any,
    answer_tokens: Any,
    context_tokens: Any,
    cached_prompt_tokens: Any,
    engine: tuple[Any, Any, Any, Any] = (None, None, None, None),
) -> tuple[Deployment, Workload]:
    """The :class:`Deployment` and the :class:`Workload` (at no batch) of :func:`replica`'s checked keywords
    (``engine``: the engine's name and its scheduler settings, as :class:`Deployment` takes them)."""
    deployment = Deployment(
        model_of(model), gpu_of(gpu), tensor_parallel, pipeline_parallel, data_parallel, expert_parallel, link,
        weight_bytes, kv_bytes, speculation, *engine,
    )  # fmt: skip
    return deployment, Workload(prompt_tokens, answer_tokens, context_tokens, cached_prompt_tokens)


@checked
def replica_setup(
    model: Model | str,
    gpu: GPU | str,
    *,
    tensor_parallel: int = 1,
    prompt_tokens: float | None = None,
    answer_tokens: float | None = None,
    context_tokens: float | None = None,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    price_per_hour: Any = None,
    assumptions: Assumptions | str | None = None,
    cached_prompt_tokens: float = 0,
    speculation: Any = None,
    pipeline_parallel: int = 1,
    data_parallel: int = 1,
    expert_parallel: int | None = None,
    link: Any = None,
    engine: str | None = None,
    max_batched_tokens: int | None = None,
    mixed_prefill: bool | None = None,
    max_running: int | None = None,
) -> Callable[[int | None], Replica]:
    """The set-up of ``replica(model, gpu, batch=..., ...)`` for a caller that asks one replica at several
    batches (batches it has checked): :func:`replica`'s checks (the same parameters, checked by the same names)
    and its set-up done once, here (:func:`setup_of`), then each batch's replica by replica()'s own path,
    ``setup.at(batch)``; a replica without speculation (a :class:`ReplicaSetup`) also gives its time per token
    alone, ``setup.tpot_ms(batch)``.

    Examples
    --------
    >>> s = replica_setup("Llama-3.1-70B", "H100 SXM", tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300,
    ...                   weight_bytes="fp8")
    >>> s.at(None).batch, s.at(16).batch, round(s.tpot_ms(16), 1) == round(s.at(16).tpot.m, 1)
    (103, 16, True)
    """
    deployment, workload = _objects(
        model, gpu, tensor_parallel, pipeline_parallel, data_parallel, expert_parallel, link, weight_bytes, kv_bytes,
        speculation, prompt_tokens, answer_tokens, context_tokens, cached_prompt_tokens,
        (engine, max_batched_tokens, mixed_prefill, max_running),
    )  # fmt: skip
    return setup_of(deployment, workload, resolve(assumptions), price_per_hour)


def _owned(base: dict[str, Any]) -> dict[str, Any]:
    """A kept set-up's figures of a replica (``base``), its quantities (the price among them) the caller's own
    (:func:`own_quantity`)."""
    price = base["price_per_hour"]
    return {**base, "weights": own_quantity(base["weights"]), "usable_memory": own_quantity(base["usable_memory"]),
            "kv_per_sequence": own_quantity(base["kv_per_sequence"]),
            "price_per_hour": None if price is None else own_quantity(price)}  # fmt: skip


class _Shared:
    """A kept set-up, shared by every caller with equal inputs: its public attributes are set once, while it is
    made, and never after (a caller's change would reach the next caller's replicas and plans)."""

    _sealed = False

    def __setattr__(self, name: str, value: Any) -> None:
        if self._sealed and not name.startswith("_"):
            raise AttributeError(
                f"{type(self).__name__}.{name} is read-only: a kept set-up is shared by every caller with the same "
                "inputs (ask replica() or setup_of() for another)."
            )
        object.__setattr__(self, name, value)


class ReplicaSetup(_Shared):
    """The set-up of one replica without speculation (a :class:`Deployment` serving a :class:`Workload` under
    :class:`~llmcourse.assumptions.Assumptions`, its inputs checked): everything that does not depend on the
    batch (the layout, the memory, the largest batch, the price) worked out once, so that a search over the batch
    (:func:`~llmcourse.planner.design.plan`) computes only each batch's decode step and prefill. :meth:`at` gives
    the replica at a batch (``setup(batch)`` too), :meth:`tpot_ms` and :meth:`figures` its time per token and its
    other figures as plain floats, without building it. The workload's own batch is not read. Built by
    :func:`setup_of`, which keeps it (the same inputs give the same set-up: a kept set-up is shared, so each
    replica it gives has quantities of its own).

    Examples
    --------
    >>> from llmcourse.assumptions import resolve
    >>> d, w = Deployment("Llama-3.1-8B", "H100 SXM"), Workload(prompt_tokens=2_000, answer_tokens=300)
    >>> s = setup_of(d, w, resolve())
    >>> s.max_batch, s.at(16).batch, round(s.tpot_ms(16), 2) == round(s.at(16).tpot.to(MS).m, 2)
    (197, 16, True)
    """

    def __init__(self, deployment: Deployment, workload: Workload, a: Assumptions, price_per_hour: Any) -> None:
        d, m, g = deployment, deployment.model, deployment.gpu
        self.deployment, self.workload, self.assumptions = deployment, workload, a
        lay = layout(m, g, tensor_parallel=d.tensor_parallel, data_parallel=d.data_parallel,
                     pipeline_parallel=d.pipeline_parallel, expert_parallel=d.expert_parallel, link=d.link)  # fmt: skip
        self.layout = lay
        final, p, ans = _workload(a, workload.context_tokens, workload.prompt_tokens, workload.answer_tokens)
        check_positions(m, final, "context_tokens" if p is None else "prompt_tokens + answer_tokens")
        self._final, self._prompt, self._answer = final, p, ans
        # plain floats in bytes from here (the formulas by value); the units are attached to what is returned
        w, mem, kv_seq, pool = self._w, self._mem, self._kv_seq, self._pool = replica_memory_si(d, lay, a, final)
        # the batch admitted, and (admission "blocks") the KV of a conversation on average and what its answer adds,
        # each with the copies replica_memory_si counted; llama.cpp's at the final length (its context is allocated
        # at start-up), beside its window cache
        if d.engine == "llama.cpp":
            top, self._admitted = final_batch_si(mem, w, kv_seq, pool, final), None
        else:
            top, self._admitted = admission_si(
                a, mem, w, kv_seq, lambda t: kv_sequence_si(m, t, d.kv_bytes) * kv_seq / kv_sequence_si(m, final, d.kv_bytes),
                p, ans,
            )  # fmt: skip
        engine = a.prefill_schedule == "engine" and p is not None
        # the engine's steps carry prompts only where the prompts are prefilled: a replica whose requests arrive
        # prefilled (count_prefill and prefill_interference off, a disaggregated decode pool's) decodes alone
        self._engine = engine and (a.count_prefill or a.prefill_interference)
        self._sched = d.scheduler
        # the engine's cap on running requests is per scheduler, and each data-parallel attention group runs its own
        # (vLLM starts an engine core per data-parallel rank, each with its max_num_seqs; TensorRT-LLM's attention DP
        # ranks each batch up to max_batch_size)
        self._cap = None if self._sched.max_running is None else self._sched.max_running * lay.data_parallel
        self._capped = engine or d.engine == "llama.cpp"  # llama.cpp's slots bound it under every preset
        if self._capped and self._cap is not None and top > 0:
            top = min(top, self._cap)  # the engine runs no more, whatever fits
        self.max_batch = top
        price = None if price_per_hour is None and g.price_per_hour is None else price_of(g, price_per_hour)
        #: The replica's figures that do not depend on the batch (:class:`Replica`'s fields, the caller's own copies
        #: by :func:`_owned`).
        self.base = MappingProxyType(dict(
            model=m.name, gpu=g.name, tensor_parallel=lay.tensor_parallel, assumptions=a,
            weights=quantity(w * BYTES_TO_GB, GB._units), usable_memory=quantity(mem * BYTES_TO_GB, GB._units),
            kv_per_sequence=quantity(kv_seq * BYTES_TO_GB, GB._units), max_batch=top, context_tokens=final,
            matmul=matmul_precision(d.weight_bytes, g, a, m), weight_precision=precision_label(m, d.weight_bytes),
            spec=m, prompt_tokens=p, answer_tokens=ans, price_per_hour=price, layout=lay, engine=d.engine,
        ))  # fmt: skip
        cached = workload.cached_prompt_tokens
        if cached:  # checked under plan()'s name (the prefill checks it again as its cached_tokens)
            plain_number(cached, "cached_prompt_tokens", allow_zero=True)
        if cached and p is None:
            raise InputError("cached_prompt_tokens needs prompt_tokens (the cached tokens are part of the prompt).")
        n_all = lay.n_gpus
        self._where = f"one {g.name}" if n_all == 1 else f"{n_all} x {g.name}"
        #: Why the replica cannot serve (its weights, or one sequence beside them, do not fit), or None.
        self.unfit = self._unfit_reason()
        if self.unfit is not None:
            self._sealed = True
            return
        self._kv_ctx = final if a.kv_read_context == "final" or p is None else p + ans / 2
        # decode_step() and prefill() of this layout, their inputs checked above: the weights must fit the GPUs
        check_weights_fit(m, g, d.weight_bytes, n_all, "n_gpus", a, d.engine)
        cp = self.base["matmul"]
        # the decode step of this layout as a function of the batch, and the prefill of its prompts as a function
        # of their number, each set up once (at its first use); one prompt's prefill does not depend on the batch
        self._decoder = once(lambda: decoder(d, lay, a, self._kv_ctx, cp))
        self._prefiller = once(lambda: prefiller(d, lay, a, p, cached, cp))
        self._first_ms = once(lambda: S_TO_MS * self._prefiller()(1, True))  # one prompt's Prefill.time in ms
        self._chunks: dict[int, list[tuple[float, float, float]]] = {}  # a prompt's chunks, by the room a step leaves
        self._engine_at: dict[int, tuple[float, float, float, float, float | None, float, float]] = {}
        # a batch's step, prefill and time per token in ms, as tpot_ms found them (kept with the set-up: a search
        # against another target, or the same one again, asks mostly the same batches)
        self._probed: dict[int, tuple[float, float | None, float]] = {}
        self._sealed = True

    def _unfit_reason(self) -> str | None:
        w, mem, where, m, g = self._w, self._mem, self._where, self.deployment.model, self.deployment.gpu
        kv_seq = self._held(1) if self._pool is not None else self._kv_seq  # llama.cpp's: with its shared cache
        if w >= mem:
            need = gpus_for_weights(m, g, self.deployment.weight_bytes, self.assumptions)
            return (
                f"weights {fmt(quantity(w, BYTE), 'GB')} don't fit in the {fmt(quantity(mem, BYTE), 'GB')} usable on "
                f"{where}: store fewer bytes per weight, use a GPU with more memory, or use tensor_parallel={need}."
            )
        if self.max_batch < 1:
            return (
                f"after {fmt(quantity(w, BYTE), 'GB')} of weights, {fmt(quantity(mem - w, BYTE), 'GB')} is left on "
                f"{where}: less than one sequence's KV cache ({fmt(quantity(kv_seq, BYTE), 'GB')}); shorten the "
                "context, quantize, or add GPUs."
            )
        return None

    def at(self, batch: int | None) -> Replica:
        """The replica at ``batch`` (a whole number it has checked; None: the largest batch that fits)."""
        if self.unfit is not None:  # at any batch, no step
            return Replica(batch=0, reason=self.unfit, **_owned(self.base))
        b = self.max_batch if batch is None else int(batch)
        reason = self._over(b) if b > self.max_batch else "fits"
        step = self._decoder()(b)
        first = batch_pre = None
        if self._prompt is not None:
            first = self._prefiller()(1)  # each replica its own Prefill (the set-up is kept, and shared)
            batch_pre = first if b == 1 else self._prefiller()(b)
        return Replica(
            batch=b,
            step=step,
            first_prefill=first,
            batch_prefill=batch_pre,
            reason=reason,
            kv_read_tokens=self._kv_ctx,
            cached_prompt_tokens=float(self.workload.cached_prompt_tokens),
            engine_step=self._engine_step(b) if self._engine else None,
            kv_in_use=None
            if self._admitted is None and self._pool is None
            else quantity(self._held(b) * BYTES_TO_GB, GB._units),
            **_owned(self.base),
        )

    def _held(self, b: int) -> float:
        """Bytes of KV ``b`` conversations hold (formula ``kv_in_use``; at their final length without admission
        ``"blocks"``)."""
        if self._admitted is None:
            return b * self._kv_seq + (0.0 if self._pool is None else self._pool.held(b, self._final))
        mean, growth = self._admitted
        return F["kv_in_use"].value(batch=b, kv_per_sequence=self._kv_seq, kv_mean=mean, kv_growth=growth,
                                    admission_spreads=self.assumptions.admission_spreads)  # fmt: skip

    def _over(self, b: int) -> str:
        """Why a batch of ``b`` is more than the replica runs: its KV cache, or the engine's cap."""
        cap = self._cap if self._capped else None
        if cap is not None and b > cap and self._w + self._held(b) <= self._mem:
            return f"a batch of {b} is more than the {cap:,} requests {self._sched.engine} runs at once (max_running)."
        held = "staggered conversations" if self._admitted is not None else f"sequences of {self._final:,.0f} tokens"
        return (
            f"a batch of {b} needs {fmt(quantity(self._w + self._held(b), BYTE), 'GB')} but "
            f"{fmt(quantity(self._mem, BYTE), 'GB')} is usable on {self._where}: at most {self.max_batch} {held} fit."
        )

    def _engine_figures(self, b: int) -> tuple[float, float, float, float, float | None, float, float]:
        """The engine's steps at a batch of ``b`` (see :class:`EngineStep`), in seconds and 1/s as plain floats:
        (decoding, chunk tokens, time per token, the first token's prefill, the cycle's prefill batches or None,
        output tokens per second, the decode step alone)."""
        got = self._engine_at.get(b)
        if got is not None:
            return got
        sc, ans, dec = self._sched, self._answer, self._decoder()
        new = self._prompt - float(self.workload.cached_prompt_tokens)  # the prompt tokens to compute
        alone = dec(b, True)  # the decode step without prompts
        if sc.mixed_prefill:  # vLLM, TensorRT-LLM, llama.cpp: prompt chunks ride in the decode steps
            # each data-parallel attention group runs its own scheduler with its own budget, in step with the others
            dp = self.layout.data_parallel
            budget = sc.token_budget * dp
            n = F["decoding_batch"].value(batch=b, token_budget=budget, answer_tokens=ans, prompt_tokens=new)
            c = F["steady_chunk_tokens"].value(batch=n, prompt_tokens=new, answer_tokens=ans)
            chunks = self._chunks_of(sc.token_budget - n / dp)
            cs = chunked_steps(dec.mixed, n, chunks, ans, dp)  # a new prompt in steps of its own, the rest decode alone
            if cs is not None:  # a user sees the others' prompts; the replica runs them all
                tpot, step = cs.mean(n - 1), cs.mean(n)
            else:  # chunks in every step: the budget spreads the prompts over all of them (every group its share)
                tpot = step = steady_step(dec.mixed, n, c, chunks, dp)[0]
            # a new prompt is chunked by its own group's budget, beside that group's decode tokens
            first = sum(dec.mixed(b - 1, k, f, r)[0] for k, f, r in self._chunks_of(sc.token_budget - (b - 1) / dp))
            got = (n, c, tpot, first, None, F["throughput"].value(batch=n, step_time=step), alone)
        else:  # SGLang without mixed chunks: prefill batches of their own pause every decoding request
            a = self.assumptions  # each prefill pass is a forward pass: the step's overhead and its layers' floor
            over = (a.step_overhead_ms + layer_floor_ms(self.deployment.model, a)) * MS_TO_S
            cycle = separate_prefill_s(self._prefiller(), b, new, sc.token_budget, over)
            first = separate_prefill_s(self._prefiller(), 1, new, sc.token_budget, over)
            tpot = F["interleaved_tpot"].value(step_time=alone, prefill_time=cycle, batch=b, answer_tokens=ans)
            rate = F["cycle_throughput"].value(batch=b, answer_tokens=ans, prefill_time=cycle, step_time=alone)
            got = (b, 0.0, tpot, first, cycle, rate, alone)
        self._engine_at[b] = got
        return got

    def engine_parts(self, b: int) -> dict[str, Any]:
        """The engine's steps at a batch of ``b`` in parts (seconds), for a caller that re-weighs the efficiencies
        (validation's fits): with mixed prefill, ``"first"`` (each step of a new prompt's chunks) and ``"step"`` (the
        steady step) or :class:`ChunkedSteps`' ``"decode"``, ``"chunks"``, ``"share"``, ``"replica_share"``, ``"weights"``; with separate prefill batches, ``"passes"`` and
        ``"pass"`` (the forward passes of the batch's prefill and one pass's :class:`Prefill`), ``"first_passes"`` and
        ``"first_pass"`` (the same for one prompt). Empty when the replica does not run an engine's steps."""
        if not self._engine:
            return {}
        sc, dec, dp = self._sched, self._decoder(), self.layout.data_parallel
        new = self._prompt - float(self.workload.cached_prompt_tokens)
        if sc.mixed_prefill:
            first = [dec.mixed(b - 1, k, f, r) for k, f, r in self._chunks_of(sc.token_budget - (b - 1) / dp)]
            cs = self._chunked(b)
            if cs is not None:
                n = cs.decoding
                return {"decode": cs.decode, "chunks": list(cs.chunks), "first": first, "share": cs.share(n - 1),
                        "replica_share": cs.share(n), "weights": cs.weights}  # fmt: skip
            return {"step": self._steady_step(b), "first": first}
        passes, first_passes = math.ceil(b * new / sc.token_budget), math.ceil(new / sc.token_budget)
        pre = self._prefiller()
        return {
            "passes": passes,
            "pass": pre(b / passes),
            "first_passes": first_passes,
            "first_pass": pre(1 / first_passes),
        }

    def _chunked(self, b: int) -> ChunkedSteps | None:
        """The :class:`~llmcourse.replica.chunked.ChunkedSteps` of a batch of ``b`` (an engine that mixes prompts into
        its decode steps), or None where every step carries chunks (the steady step)."""
        n, dp = self._engine_figures(b)[0], self.layout.data_parallel
        room = self._sched.token_budget - n / dp
        return chunked_steps(self._decoder().mixed, n, self._chunks_of(room), self._answer, dp)

    def _bounding_step(self, b: int) -> StepParts:
        """The mixed step that takes most of a user's time at a batch of ``b`` (the steady step where every step
        carries chunks)."""
        cs = self._chunked(b)
        return self._steady_step(b) if cs is None else cs.bounding()

    def _steady_step(self, b: int) -> StepParts:
        """The steady mixed step of a batch of ``b`` (:func:`~llmcourse.replica.chunked.steady_step`)."""
        n, c = self._engine_figures(b)[:2]
        dp = self.layout.data_parallel  # every group prefills its own share
        return steady_step(self._decoder().mixed, n, c, self._chunks_of(self._sched.token_budget - n / dp), dp)

    def _chunks_of(self, room: float) -> list[tuple[float, float, float]]:
        """The prompt's chunks when a step leaves ``room`` tokens beside its decode tokens (at least 1)."""
        r = max(1, int(room))
        got = self._chunks.get(r)
        if got is None:
            d, a = self.deployment, self.assumptions
            got = self._chunks[r] = prompt_chunks(
                d, self.layout, a, self._prompt, self.workload.cached_prompt_tokens, r
            )
        return got

    def _engine_step(self, b: int) -> EngineStep:
        """The :class:`EngineStep` of a batch of ``b``, its times as quantities."""
        n, c, tpot, first, cycle, rate, alone = self._engine_figures(b)
        sc = self._sched
        bound = None
        if sc.mixed_prefill:  # what bounds the steps that take most of a user's time: a kernel at its FLOPs, else the
            _, (wm, am), (wc, ac) = self._bounding_step(b)  # larger read
            bound = "compute" if wc > wm or ac > am else "KV reads" if am > wm else "weight reads"

        def ms(t: float) -> pint.Quantity:
            return quantity(t * S_TO_MS, MS._units)

        return EngineStep(
            sc.engine, sc.mixed_prefill, sc.token_budget, n, c, ms(tpot), ms(first), quantity(rate, PER_S._units),
            None if cycle is None else ms(cycle), ms(alone), bound,
        )  # fmt: skip

    __call__ = at

    def tpot_ms(self, batch: int) -> float:
        """``at(batch).tpot`` in milliseconds, as a plain float: the step and the batch's prefill alone."""
        known = self._probed.get(batch)
        if known is not None:
            return known[2]
        if self.unfit is not None:
            self.at(batch)._need_step()  # raises: no step
        a, p = self.assumptions, self._prompt
        if self._engine:
            return S_TO_MS * self._engine_figures(batch)[2]
        step_ms = S_TO_MS * self._decoder()(batch, True)
        if not (a.prefill_interference and p is not None):
            self._probed[batch] = (step_ms, None, step_ms)
            return step_ms
        pre_ms = self._first_ms() if batch == 1 else S_TO_MS * self._prefiller()(batch, True)
        tpot = F["interleaved_tpot"].value(
            step_time=step_ms * MS_TO_S, prefill_time=pre_ms * MS_TO_S, batch=batch, answer_tokens=self._answer
        )
        self._probed[batch] = (step_ms, pre_ms, tpot * S_TO_MS)
        return tpot * S_TO_MS

    def figures(self, batch: int) -> tuple[float, float, float]:
        """``at(batch)``'s ``ttft`` and ``tpot`` in milliseconds and ``requests_per_second`` in 1/s, as plain
        floats: the formulas of the replica's properties by value, in the same order, to the same floats (for a
        prompt and an answer given), without building the replica, its step or its prefills."""
        if self.unfit is not None:
            self.at(batch)._need_step()  # raises: no step
        if self._prompt is None:
            raise InputError(_NO_PROMPT)
        a, ans = self.assumptions, self._answer
        if self._engine:  # the engine's steps (Replica.ttft, tpot and requests_per_second by their formulas)
            _, _, tpot, first_s, _, rate, _ = self._engine_figures(batch)
            ttft = F["first_token_time"].value(request_overhead=a.request_overhead_ms * MS_TO_S, prefill_time=first_s)
            return S_TO_MS * ttft, S_TO_MS * tpot, rate / ans
        first = self._first_ms()  # Prefill.time of one prompt, in ms
        ttft = F["first_token_time"].value(
            request_overhead=a.request_overhead_ms * MS_TO_S, prefill_time=first * MS_TO_S
        )
        step_ms, pre_ms, _ = self._probed.get(batch) or (None, None, None)  # the search's own figures of this batch
        if step_ms is None:
            step_ms = S_TO_MS * self._decoder()(batch, True)  # DecodeStep.step_time, in ms
        if pre_ms is None:
            pre_ms = first if batch == 1 else S_TO_MS * self._prefiller()(batch, True)  # Prefill.time, in ms
        step_s, pre_s = step_ms * MS_TO_S, MS_TO_S * pre_ms
        tpot_ms = step_ms
        if a.prefill_interference:  # the batch's prefill between a user's steps
            tpot_ms = S_TO_MS * F["interleaved_tpot"].value(
                step_time=step_s, prefill_time=pre_s, batch=batch, answer_tokens=ans
            )
        if a.count_prefill:
            throughput = F["cycle_throughput"].value(
                batch=batch, answer_tokens=ans, prefill_time=pre_s, step_time=step_s
            )
        else:
            throughput = F["throughput"].value(batch=batch, step_time=step_s)
        return S_TO_MS * ttft, tpot_ms, throughput / ans


class SpeculativeSetup(_Shared):
    """The set-up of a replica that speculates: the speculative replica at each batch (:meth:`at`, or
    ``setup(batch)``), from the target's own set-up (one tensor-parallel group, without speculation)."""

    def __init__(self, deployment: Deployment, workload: Workload, a: Assumptions, price_per_hour: Any) -> None:
        d = self.deployment = deployment
        self.workload, self.assumptions = workload, a
        self._spec = d.speculation if d.speculation is not None else a.speculation
        check_speculating_engine(d.engine)
        # the target's replica: one tensor-parallel group (the speculative cycle reads no other degree)
        self._plain = Deployment(d.model, d.gpu, d.tensor_parallel, weight_bytes=d.weight_bytes, kv_bytes=d.kv_bytes)
        self._a_plain = dataclasses.replace(a, speculation=None)  # Assumptions.replace() ignores None values
        self._price = price_per_hour
        self._sealed = True

    def at(self, batch: int | None) -> Replica:
        """The speculative replica at ``batch`` (None: the largest that fits with the draft)."""
        d = self.deployment
        plain_at = _replica_of(self._plain, self.workload, self._a_plain, self._price)
        return _speculative(plain_at, d.model, d.gpu, speculation_of(self._spec), batch, d.weight_bytes, d.kv_bytes)

    __call__ = at


def setup_of(
    deployment: Deployment, workload: Workload, assumptions: Assumptions, price_per_hour: Any = None
) -> ReplicaSetup | SpeculativeSetup:
    """The set-up of a replica (its inputs checked, as :func:`replica` checks them): a kept
    :class:`ReplicaSetup`, or for a deployment that speculates (its own speculation, or the assumptions'), a
    :class:`SpeculativeSetup`.

    Examples
    --------
    >>> from llmcourse.assumptions import resolve
    >>> w = Workload(prompt_tokens=2_000, answer_tokens=300)
    >>> s = setup_of(Deployment("Llama-3.1-8B", "H100 SXM"), w, resolve())
    >>> s is setup_of(Deployment("Llama-3.1-8B", "H100 SXM"), w, resolve()), type(s).__name__
    (True, 'ReplicaSetup')
    """
    d = deployment
    assumptions = for_engine(assumptions, d.engine)  # llama.cpp's own kernels where the assumptions set them
    if (d.speculation if d.speculation is not None else assumptions.speculation) is None:
        return _replica_of(d, workload, assumptions, price_per_hour)
    return SpeculativeSetup(d, workload, assumptions, price_per_hour)


def _replica_of(deployment: Deployment, workload: Workload, a: Assumptions, price_per_hour: Any) -> ReplicaSetup:
    """The :class:`ReplicaSetup` of these inputs, kept (:mod:`~llmcourse.replica.setups`): the same inputs give the
    same set-up."""
    inputs = (deployment, workload, a, price_per_hour)
    key = set_up_key(ReplicaSetup, inputs)
    got = kept_set_up(key)
    return got if got is not None else keep_set_up(key, inputs, ReplicaSetup(*inputs))


@checked
def cost_per_million(price_per_hour: pint.Quantity, tokens_per_s: pint.Quantity, n_gpus: int = 1) -> pint.Quantity:
    """Dollars per million tokens for ``n_gpus`` GPUs producing ``tokens_per_s`` at full load.

    Examples
    --------
    >>> from llmcourse.units import Q_
    >>> cost_per_million(Q_(2.5, "USD/hour"), Q_(4387, "1/s"), n_gpus=2)  # doctest: +ELLIPSIS
    <Quantity(0.3165..., 'USD')>
    """
    per_token = F["cost_per_token"](
        n_gpus=n_gpus,
        price=price_per_hour,
        throughput=tokens_per_s,
    )
    return to(times(per_token, 1e6), USD)  # pint's product, on the magnitude


# --- in the replica model ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpeculativeReplica(Replica):
    """A :class:`~llmcourse.replica.model.Replica` whose decode step is the speculative cycle per output
    token (:meth:`SpeculativeStep.per_token_step`), whose weights and KV cache per sequence include
    the draft's, and whose largest batch is the one that fits with the draft. Its throughput, time per
    token, requests per second and cost follow from the replica model; ``fleet()`` takes it as it
    takes any replica. ``speculative`` holds the cycle's detail."""

    speculation: Speculation | None = None
    speculative: SpeculativeStep | None = field(default=None, repr=False)


def speculative_replica(model: Model | str, gpu: GPU | str, speculation: Speculation, **kw: Any) -> SpeculativeReplica:
    """:func:`llmcourse.replica.replica` for a deployment that speculates: the same keywords
    (``tensor_parallel``, ``batch``, ``prompt_tokens``, ``answer_tokens``, ...), with the draft's
    weights and KV cache in memory (``batch=None`` gives the largest batch that fits with them) and
    each decode step replaced by the speculative cycle per output token, at the context the
    assumptions read the KV cache at.

    Examples
    --------
    >>> kw = dict(tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300, weight_bytes="fp8")
    >>> plain = replica("Llama-3.1-70B", "H100 SXM", **kw)
    >>> spec = speculative_replica("Llama-3.1-70B", "H100 SXM", Speculation("eagle head", 4, 0.7), **kw)
    >>> (plain.batch, round(plain.tokens_per_s_per_user.m)), (spec.batch, round(spec.tokens_per_s_per_user.m))
    ((103, 12), (100, 14))
    """
    spec = speculation_of(speculation)
    m, g = model_of(model), gpu_of(gpu)

    def plain_at(batch: int | None) -> Replica:
        return replica(m, g, **(kw | {"batch": batch}))

    return _speculative(plain_at, m, g, spec, kw.get("batch"), kw.get("weight_bytes"), kw.get("kv_bytes", 2))


def _speculative(
    plain_at: Callable[[int | None], Replica],
    m: Model,
    g: GPU,
    spec: Speculation,
    batch: int | None,
    wb: Any,
    kvb: Any,
) -> SpeculativeReplica:
    """:func:`speculative_replica` from the target's replica at a batch (``plain_at``), for ``batch`` (None: the
    largest that fits with the draft) and the target's weight and KV precisions."""
    base = plain_at(batch)
    fields_ = {f.name: getattr(base, f.name) for f in dataclasses.fields(Replica)}
    if base.step is None and base.max_batch < 1 and base.weights >= base.usable_memory:
        return SpeculativeReplica(**fields_, speculation=spec)  # the target's weights alone do not fit
    a, tp, final = base.assumptions, base.tensor_parallel, base.context_tokens
    mem = speculative_memory(
        m, g, spec, context_tokens=final, tensor_parallel=tp, weight_bytes=wb, kv_bytes=kvb, assumptions=a,
        prompt_tokens=base.prompt_tokens,
    )  # fmt: skip
    fields_ |= dict(
        weights=to(mem.weights + mem.draft_weights, "GB"),
        usable_memory=mem.usable_memory,
        kv_per_sequence=to(mem.kv_per_sequence + mem.draft_kv_per_sequence, "GB"),
        max_batch=mem.max_batch,
    )
    if mem.max_batch < 1:
        fields_ |= dict(batch=0, step=None, first_prefill=None, batch_prefill=None, reason=mem.reason(1))
        return SpeculativeReplica(**fields_, speculation=spec)
    b = batch or mem.max_batch
    if b != base.batch:
        base = plain_at(b)
        fields_ |= {f: getattr(base, f) for f in ("batch", "step", "first_prefill", "batch_prefill")}
    kv_ctx = base.kv_read_tokens  # the context the replica model reads each KV cache at
    s = speculative_cycle(m, g, spec, mem, batch=b, context_tokens=kv_ctx, tp=tp, weight_bytes=wb, kv_bytes=kvb, a=a)
    # the speculative cycle is the step: the plain replica's engine steps (no draft in them) are not carried over,
    # and the KV held is the target's and the draft's, admitted as the plain replica's is
    fields_ |= dict(step=s.per_token_step(), reason="fits" if b <= mem.max_batch else mem.reason(b),
                    engine_step=None, kv_in_use=mem.kv_in_use(b))  # fmt: skip
    return SpeculativeReplica(**fields_, speculation=spec, speculative=s)
