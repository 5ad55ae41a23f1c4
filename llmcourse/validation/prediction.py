"""Predicting a measured row: its metric from the row's own fields, the catalog and the one replica model.

* :func:`predict` - one row's metric from the row's own fields, the catalog and the one replica
  model (:func:`llmcourse.replica.model.replica`), never the measured value, under an assumptions preset
  (the course's by default, or a what-if of it: ``resolve().replace(bandwidth_efficiency=0.8)``).
* :func:`components` - the same prediction split into the times the two efficiencies divide,
  so that :func:`~llmcourse.validation.fit_efficiencies` can search many efficiency pairs quickly;
  :func:`load_components` the same for a closed-loop row (what :func:`~llmcourse.validation.evidence` fits).
* :func:`closed_loop_ttft`, :func:`wave_share` - the time to first token of a closed loop of requests.
* :func:`kv_share`, :func:`family` - the group a row's discussion belongs to.
* :func:`scalar` - a formula as a plain-float function of its inputs (the package's one lambdify helper; the
  closed loops' forms here, ``throughput_s``, ``wave_s``, ``ttft_s``, ``loop_rate_s``, are the fits' too).

Every row is predicted by one call of :func:`llmcourse.replica.model.replica` (``tensor_parallel`` = the
row's ``tp``, ``prompt_tokens`` = ``isl``, ``answer_tokens`` = ``osl``, the row's weight and KV
precisions) under the assumptions given, the course's method by default (stated in the chapter):

* an offline-maximum row (and an online row with unlimited request rate) runs the largest batch
  whose KV cache fits at ``isl + osl`` tokens; its output tokens per second are the replica's
  ``throughput`` (with the course's method: the batch prefills its prompts together, with the
  attention term, then decodes ``osl`` steps reading the KV cache at the average context
  ``isl + osl / 2``, and the cycle is charged);
* a low-concurrency row (a fixed request rate such as 2 per second) runs a batch of 1: its
  inter-token latency is the replica's decode ``step`` and its time to first token the prefill
  of its one prompt;
* the matmuls run at the precision :func:`llmcourse.replica.step.matmul_precision` gives (with the
  course's method: the weights' own where the GPU has a peak for it, FP8 weights on an H100 at
  FP8 FLOP/s, FP4 on a B200 at FP4, otherwise BF16);
* a closed-loop row (``concurrency`` requests in flight) runs a batch of the concurrency: its time per
  output token is the step plus the other requests' prefills, its time to first token :func:`closed_loop_ttft`.

Examples
--------
>>> from llmcourse.validation import measurements
>>> p = predict(measurements()[0])
>>> p.batch, p.compute_precision
(5120, 'fp8')
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import pint

from llmcourse.assumptions import Assumptions, for_engine, resolve
from llmcourse.catalog import models
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import checked, scalar
from llmcourse.replica.memory import usable_memory, weight_bytes
from llmcourse.replica.model import Replica
from llmcourse.replica.step import layer_floor_ms, matmul_precision
from llmcourse.units import parsed_unit, to
from llmcourse.validation.client import client_wave_share
from llmcourse.validation.measured import Measurement
from llmcourse.validation.row_replica import row_engine, separate_prefill, setup_replica

_MS, _PER_S = parsed_unit("ms")[0], parsed_unit("1/s")[0]
_MS_TO_S = 1e-3  # a time in ms as seconds  # parsed once: pint re-parses a string unit each time


@dataclass(frozen=True)
class Prediction:
    """A row's predicted metric and the pieces it came from."""

    id: str
    metric: str
    value: float
    unit: str
    batch: int
    compute_precision: str
    step_time_ms: float | None
    prefill_time_ms: float | None
    prefill_share: float | None
    bound: str

    def rows(self) -> list[tuple[str, str]]:
        out = [
            ("predicted", f"{self.value:,.1f} {self.unit}"),
            ("batch", f"{self.batch:,}"),
            ("compute precision", self.compute_precision),
            ("decode bound", self.bound),
        ]
        if self.step_time_ms is not None:
            out.append(("decode step", f"{self.step_time_ms:.2f} ms"))
        if self.prefill_time_ms is not None:
            out.append(("prefill", f"{self.prefill_time_ms:,.1f} ms"))
        if self.prefill_share is not None:
            out.append(("prefill share of the cycle", f"{self.prefill_share:.0%}"))
        return out


def _replica(row: Measurement, a: Assumptions) -> Replica:
    return setup_replica(row, a)[1]


def engine_usable_fraction(
    row: Measurement, kv_free_fraction: float | None = None, *, assumptions: Assumptions | str | None = None
) -> float:
    """The share of the GPUs' memory that weights and KV cache use together under an engine's rule
    that gives the KV cache ``kv_free_fraction`` of what the weights leave (TensorRT-LLM's
    ``free_gpu_memory_fraction``): the memory rule ``"free"`` of
    :func:`llmcourse.replica.memory.usable_memory`, with ``kv_free_fraction`` defaulting to the
    assumptions' ``memory_fraction`` (the course's: 0.9, also the engine's default). Activations
    are ignored. Pass the result to :func:`predict` as the assumptions' ``memory_fraction`` under the rule
    ``"total"`` (``resolve().replace(memory_rule="total", memory_fraction=engine_usable_fraction(row))``); the
    course's own rule (``"engine"``) already sizes a TensorRT-LLM row this way.

    Examples
    --------
    >>> from llmcourse.validation import measurements
    >>> r = measurements()[7]
    >>> r.id, round(engine_usable_fraction(r), 4)
    ('T8', 0.9882)
    """
    a = resolve(assumptions)
    w = weight_bytes(row.model, row.weights)
    free_rule = a.replace(memory_rule="free", memory_fraction=kv_free_fraction)
    free = usable_memory(row.gpu, row.tp, weights=w, assumptions=free_rule)
    whole = usable_memory(row.gpu, row.tp, assumptions=a.replace(memory_rule="total", memory_fraction=1))
    return float(to(free / whole, "").m)


def predict(row: Measurement, *, assumptions: Assumptions | str | None = None) -> Prediction:
    """Predict a row's metric with :func:`llmcourse.replica.model.replica` from the row's own fields
    (never its ``value``), under ``assumptions`` (the course's method by default).

    A what-if of the efficiencies or of the memory share is a change of the assumptions
    (``assumptions=resolve().replace(bandwidth_efficiency=0.8, compute_efficiency=0.4)``);
    :func:`engine_usable_fraction` gives TensorRT-LLM's memory rule as a ``memory_fraction`` of the total.

    Examples
    --------
    >>> from llmcourse.validation import measurements
    >>> r = measurements()[16]
    >>> r.id, r.metric, round(predict(r).value, 2)
    ('T17', 'itl_ms', 8.62)
    """
    _need_row(row)
    a = resolve(assumptions)
    setup, rep = setup_replica(row, a)
    cp = matmul_precision(row.weights, row.gpu, a)
    if row.load_kind == "concurrency":
        return _predict_closed_loop(row, rep, cp, setup)
    s, pre = rep.step, rep.batch_prefill
    if row.metric == "output_tokens_per_s":
        pre_ms = float(pre.time.m_as(_MS)) if rep.counts_prefill else None
        value = float(rep.throughput.m_as(_PER_S))
        step_ms = float(s.step_time.m_as(_MS))
        return Prediction(
            row.id, row.metric, value, row.unit, rep.batch, cp, step_ms, pre_ms, rep.prefill_share, s.bound
        )
    if row.metric == "itl_ms":
        step_ms = float(s.step_time.m_as(_MS))
        return Prediction(row.id, row.metric, step_ms, row.unit, rep.batch, cp, step_ms, None, None, s.bound)
    pre_ms = float(pre.time.m_as(_MS))
    return Prediction(row.id, row.metric, pre_ms, row.unit, rep.batch, cp, None, pre_ms, None, pre.bound)


#: Output tokens per second of a batch: (batch, answer_tokens, step_time s, prefill_time s) -> 1/s (also the
#: published tables' fit's, in fit.py).
throughput_s = scalar("cycle_throughput", "batch", "answer_tokens", "step_time", "prefill_time")
#: Output tokens per second of a batch that only decodes: (batch, step_time s) -> 1/s.
_decode_throughput = scalar("throughput", "batch", "step_time")


@dataclass(frozen=True)
class Components:
    """A row's prediction as times at 100% efficiency (ms), which the efficiencies divide.

    The replica model's decode step (step rule ``"max"``) is the slower of a memory time (over the
    bandwidth efficiency) and a compute time (over the compute efficiency), plus a fixed
    ``step_overhead_ms``; its prefill is the slower of a compute and a memory time. Holding the
    four times at efficiency 1 lets a fit try thousands of efficiency pairs without calling the
    replica model again; :meth:`value` agrees with :func:`predict` under the same assumptions
    (the tests check it). ``counts_prefill`` says whether a throughput row charges the prefill
    (the cycle) or counts decode steps only. Under an engine's scheduler (the course's
    ``prefill_schedule`` ``"engine"``) a throughput row is the engine's picture, as the replica model
    gives it (:meth:`~llmcourse.replica.model.ReplicaSetup.engine_parts`): the steady mixed step's kernels
    (``mixed_step``) and the requests it decodes, or the cycle with the batch's prefill in passes of its own.
    """

    id: str
    metric: str
    batch: int
    osl: int
    decode_memory_ms: float
    decode_compute_ms: float
    prefill_compute_ms: float
    prefill_memory_ms: float
    step_overhead_ms: float = 0.0
    counts_prefill: bool = True
    prefill_extra_ms: float = 0.0
    #: an engine that mixes prompt chunks into its decode steps (formula ``mixed_step_time``): its steady step's
    #: kernels at 100% efficiency (as :attr:`LoadComponents.mixed_step`, the step's fixed time in the last) and the
    #: requests a step decodes (formula ``decoding_batch``); a throughput row is then ``decoding`` tokens a step
    mixed_step: tuple[float, ...] = ()
    decoding: float = 0.0
    #: a prompt's chunks in steps of their own (as :attr:`LoadComponents.chunk_steps`): the step that decodes alone,
    #: each chunk's step and the share of steps with a chunk
    decode_step: tuple[float, ...] = ()
    chunk_steps: tuple[tuple[float, ...], ...] = ()
    chunk_share: float = 0.0
    chunk_weights: tuple[float, ...] = ()  # each chunk step's share of them
    #: an engine that runs prefill batches of their own: the forward passes of the batch's prefill (each the
    #: prefill times above, plus the assumptions' step overhead ``pass_overhead_ms``); 0: one, no overhead
    prefill_passes: int = 0
    pass_overhead_ms: float = 0.0

    def __post_init__(self) -> None:
        times = (self.decode_memory_ms, self.decode_compute_ms, self.prefill_compute_ms, self.prefill_memory_ms)
        if not all(t > 0 and math.isfinite(t) for t in times):
            raise InputError(f"row {self.id}: the four times at 100% efficiency must be finite and above zero.")
        if not (self.step_overhead_ms >= 0 and math.isfinite(self.step_overhead_ms)):
            raise InputError(f"row {self.id}: the step overhead must be finite and 0 or more.")

    def value(self, bandwidth_efficiency: float, compute_efficiency: float) -> float:
        """The metric at the given efficiencies.

        Examples
        --------
        >>> c = Components("x", "itl_ms", 1, 100, 7.0, 0.1, 50.0, 7.0)
        >>> c.value(0.7, 0.5), c.value(0.7, 0.001)
        (10.0, 100.0)
        """
        eb, ef = float(bandwidth_efficiency), float(compute_efficiency)
        step = max(self.decode_memory_ms / eb, self.decode_compute_ms / ef) + self.step_overhead_ms
        pre = max(self.prefill_compute_ms / ef, self.prefill_memory_ms / eb) + self.prefill_extra_ms
        if self.metric == "itl_ms":
            return step
        if self.metric == "ttft_ms":
            return pre
        if self.chunk_steps:  # the engine's mean step, some with a prompt's chunk, its decoding requests' tokens
            mean = _chunked_steps_ms(
                self.decode_step, self.chunk_steps, self.chunk_share, eb, ef, 0.0, self.chunk_weights
            )[1]
            return _decode_throughput(self.decoding, mean / 1000.0)
        if self.mixed_step:  # the engine's steady mixed step, its decoding requests' tokens each step
            return _decode_throughput(self.decoding, _kernels_ms(self.mixed_step, eb, ef, 0.0) / 1000.0)
        if self.prefill_passes:  # the batch's prompts in passes of their own, each paying the step overhead
            pre = self.prefill_passes * (pre + self.pass_overhead_ms)
        if not self.counts_prefill:
            return _decode_throughput(self.batch, step / 1000.0)
        return throughput_s(self.batch, self.osl, step / 1000.0, pre / 1000.0)


def components(row: Measurement, *, assumptions: Assumptions | str | None = None) -> Components:
    """The times of :func:`predict` at 100% bandwidth and compute efficiency: the same replica
    model under the same assumptions, with both efficiencies set to 1.

    Examples
    --------
    >>> from llmcourse.validation import measurements
    >>> c, a = components(measurements()[16]), resolve()
    >>> round(c.value(a.bandwidth_efficiency, a.compute_efficiency), 2), round(c.value(1, 1), 2)
    (8.62, 6.55)
    """
    _need_row(row)
    a = resolve(assumptions)
    if row.load_kind == "concurrency":
        raise InputError(
            f"row {row.id}: components() holds the published tables' rows; a closed-loop row is split by "
            "load_components() (what evidence() uses)."
        )
    if a.step_rule != "max":
        raise InputError(
            f"components() splits a step into one memory and one compute time (step rule 'max'); assumptions "
            f"{a.name!r} use step rule {a.step_rule!r}: predict each efficiency pair with predict() instead."
        )
    setup, rep = setup_replica(row, a.replace(bandwidth_efficiency=1.0, compute_efficiency=1.0))
    s, pre = rep.step, rep.batch_prefill
    engine: dict[str, Any] = {}
    if row.metric == "output_tokens_per_s":  # a throughput row runs the engine's steps (an ITL or TTFT row: batch 1)
        parts = setup.engine_parts(rep.batch)
        if "chunks" in parts:  # a prompt's chunks in steps of their own, the rest decoding alone
            engine = dict(
                decode_step=_kernels(*parts["decode"], 0.0),
                chunk_steps=tuple(_kernels(*k, 0.0) for k in parts["chunks"]),
                chunk_share=float(parts["replica_share"]),  # the replica's tokens: every request's prompt counts
                chunk_weights=tuple(parts["weights"]),
                decoding=float(rep.engine_step.decoding),
            )
        elif "step" in parts:  # prompt chunks in every decode step: the steady mixed step, its fixed time included
            engine = dict(mixed_step=_kernels(*parts["step"], 0.0), decoding=float(rep.engine_step.decoding))
        elif parts:  # separate prefill batches: one pass's times, paid once a pass
            pre = parts["pass"]
            engine = dict(prefill_passes=parts["passes"], pass_overhead_ms=a.step_overhead_ms, counts_prefill=True)
    return Components(
        row.id,
        row.metric,
        rep.batch,
        row.osl,
        float((s.memory_time).m_as(_MS)),
        float((s.compute_time).m_as(_MS)),
        float(pre.compute_time.m_as(_MS)),
        float(pre.memory_time.m_as(_MS)),
        # the fixed time the step adds (per-step overhead, all-reduces), as the replica model gives it
        step_overhead_ms=float((s.step_time - max(s.memory_time, s.compute_time)).m_as(_MS)),
        counts_prefill=engine.pop("counts_prefill", rep.counts_prefill),
        # the fixed time a prefill adds (its collectives), as the replica model gives it
        prefill_extra_ms=float((pre.time - max(pre.compute_time, pre.memory_time)).m_as(_MS)),
        **engine,
    )


def _need_row(row: Any) -> None:
    """Refuse anything but a :class:`Measurement` where a measured row is expected."""
    fields = ("id", "model", "gpu", "tp", "weights", "kv", "isl", "osl", "metric", "load_kind")
    if not isinstance(row, Measurement) and not all(hasattr(row, f) for f in fields):
        raise InputError(
            f"a measured row must be a llmcourse.validation.Measurement (from measurements() or load_measurements()); "
            f"got {type(row).__name__}."
        )


#: Below this share of usable memory left for the KV cache, a row is "KV-starved".
KV_STARVED_SHARE = 0.10


def kv_share(row: Measurement, *, assumptions: Assumptions | str | None = None) -> float:
    """Share of the usable memory (by the assumptions' memory rule, the course's by default: the rule of the row's
    engine) that the weights leave for the KV cache.

    Examples
    --------
    >>> from llmcourse.validation import measurements
    >>> r = measurements()[7]  # TensorRT-LLM: 70.55 GB + 0.9 x 9.45 GB usable, 8.50 GB of it for the KV cache
    >>> r.id, round(kv_share(r), 3), round(kv_share(r, assumptions="lab"), 3)
    ('T8', 0.108, 0.02)
    """
    _need_row(row)
    w = weight_bytes(row.model, row.weights)
    mem = usable_memory(row.gpu, row.tp, weights=w, assumptions=assumptions, engine=row_engine(row))
    return float(to((mem - w) / mem, "").m)


def family(row: Measurement, *, assumptions: Assumptions | str | None = None) -> str:
    """The group a row's discussion belongs to, from its fields and the catalog: ``"latency"``
    (ITL, TTFT), ``"MoE"`` (a mixture-of-experts model's throughput), ``"KV-starved"`` (a dense
    model whose weights leave under :data:`KV_STARVED_SHARE` of usable memory for the cache, so
    a small error in the memory accounting changes the batch several-fold) or ``"dense"``.

    Examples
    --------
    >>> from llmcourse.validation import measurements
    >>> [family(r) for r in measurements() if r.id in ("T3", "T8", "T15", "T17")]
    ['dense', 'dense', 'MoE', 'latency']
    >>> family(measurements()[7], assumptions="lab")  # T8 under the sources' 90% of the total: 2% for the cache
    'KV-starved'
    """
    if row.metric != "output_tokens_per_s":
        return "latency"
    if models[row.model].is_moe:
        return "MoE"
    return "KV-starved" if kv_share(row, assumptions=assumptions) < KV_STARVED_SHARE else "dense"


# --- prediction of a closed-loop row ----------------------------------------------------------------
# The closed loops' symbols and formulas (closed_loop_prefill_wait, closed_loop_wave_wait, closed_loop_ttft,
# closed_loop_throughput, closed_loop_request_time) are defined in llmcourse/formulas/validation.py; here as
# plain floats of times in s (wave_s, ttft_s and loop_rate_s are also the closed-loop fit's, in held_out.py).
_wait_s = scalar(
    "closed_loop_prefill_wait", "prefill_time", "step_time", "time_per_token", "answer_tokens", "concurrency"
)
wave_s = scalar("closed_loop_wave_wait", "wave_share", "concurrency", "prefill_time")
ttft_s = scalar("closed_loop_ttft", "prefill_time", "step_time", "prefill_wait", "wave_wait")
loop_rate_s = scalar("closed_loop_throughput", "concurrency", "answer_tokens", "ttft", "time_per_token")
_tpot_s = scalar("interleaved_tpot", "step_time", "prefill_time", "batch", "answer_tokens")
_floor_s = scalar("layer_floor_time", "layers", "layer_floor")
_queue_s = scalar("capped_queue_wait", "concurrency", "running", "ttft", "answer_tokens", "time_per_token")


def queued_wait_s(first_s: float, step_s: float, tpot_s: float, osl: float, n: int, running: int) -> float:
    """The wait (s) of formula ``closed_loop_ttft`` for ``n`` requests in flight on an engine that runs ``running``
    of them at once: the queue's behind the prefills of the running ones (formula ``closed_loop_prefill_wait`` at
    ``running``), and when ``n`` is more, the wait for a running request to finish (formula ``capped_queue_wait``:
    ``(n / running - 1)`` services, a service its first token at ``running`` and its answer's other tokens; a queued
    request is admitted when a running one finishes, at a step's end, so it waits no part of a step under way).

    Examples
    --------
    >>> round(queued_wait_s(0.04, 0.02, 0.022, 1_000, 64, 64), 4) == round(_wait_s(0.04, 0.02, 0.022, 1_000, 64), 4)
    True
    >>> w = _wait_s(0.04, 0.02, 0.022, 1_000, 32)  # 64 in flight, 32 running: one service more, 0.04 + w + 21.98 s
    >>> round(queued_wait_s(0.04, 0.02, 0.022, 1_000, 64, 32) - w, 3) == round(0.04 + w + 999 * 0.022, 3)
    True
    """
    b = min(n, running)
    w = _wait_s(first_s, step_s, tpot_s, osl, b)
    if n <= b:
        return w
    return w + _queue_s(n, b, first_s + w, osl, tpot_s)


def per_group(n: int, groups: int) -> int:
    """Requests of ``n`` that one of ``groups`` attention data-parallel groups holds (the most of any): each group
    schedules and prefills its own, so a closed loop's waits are each group's. SGLang's ``DataParallelController``
    (``python/sglang/srt/managers/data_parallel_controller.py``) hands each request to one DP rank, round robin by
    default; TensorRT-LLM's attention DP balances the requests over its ranks (``PyExecutor``, ``attention_dp_config``);
    vLLM runs an engine core per data-parallel rank behind one front end.

    Examples
    --------
    >>> per_group(5_632, 72), per_group(64, 1), per_group(3, 8)
    (79, 64, 1)
    """
    return max(1, math.ceil(n / groups))


def _predict_closed_loop(row: Measurement, rep: Replica, cp: str, setup: Any) -> Prediction:
    """A closed-loop row's metric from its replica at a batch of the concurrency (see :func:`predict`).
    A concurrency above the largest batch whose KV fits at the final context is still predicted at
    that batch (engines page the cache in as sequences grow); :func:`kv_over_capacity` says which."""
    if rep.step is None:
        raise InputError(f"row {row.id}: {rep.reason}")
    s = rep.step
    step_ms, tpot_ms = float(s.step_time.m_as(_MS)), float(rep.tpot.m_as(_MS))
    if rep.engine_step is not None and rep.engine_step.mixed_prefill:  # the step under way is a mixed one
        # where the engine carries a prompt in a step beside the decodes (vLLM, TensorRT-LLM), the step under way the
        # formula charges is one that decodes alone, as for SGLang: a step with a prompt under way is another
        # request's prefill, which the queue's or the wave's wait already charges
        parts = setup.engine_parts(rep.batch)
        step_ms = float(parts["decode"][0]) * 1e3 if "decode" in parts else tpot_ms
    first = rep.first_prefill.time if rep.engine_step is None else rep.engine_step.first_token_prefill
    pre_ms = float(first.m_as(_MS))
    overhead = rep.assumptions.request_overhead_ms
    share = wave_share(row, assumptions=rep.assumptions)
    g = 1 if rep.layout is None else rep.layout.data_parallel
    n = per_group(row.concurrency, g)  # one attention group's requests: each group queues and prefills its own
    wait = queued_wait_s(pre_ms / 1e3, step_ms / 1e3, tpot_ms / 1e3, row.osl, n, per_group(rep.batch, g))
    ttft_ms = _closed_loop_ttft_ms(pre_ms, step_ms, tpot_ms, row.osl, n, overhead, share, wait)
    value = {"tpot_ms": tpot_ms, "itl_ms": tpot_ms, "ttft_ms": ttft_ms}.get(row.metric)
    if value is None:  # output tokens per second
        value = loop_rate_s(row.concurrency, row.osl, ttft_ms / 1e3, tpot_ms / 1e3)
    return Prediction(row.id, row.metric, value, row.unit, rep.batch, cp, step_ms, pre_ms, None, s.bound)


def _closed_loop_ttft_ms(
    pre_ms: float,
    step_ms: float,
    tpot_ms: float,
    osl: float,
    n: int,
    request_overhead_ms: float,
    share: float,
    wait_s: float | None = None,
) -> float:
    """Time to first token (ms) of :data:`closed_loop_ttft` with its waits (the queue's, ``wait_s`` when
    already known, and the wave's at the share ``share``), plus the request's fixed overhead (the
    assumptions' ``request_overhead_ms``: spent before the request reaches the engine), from times in ms."""
    p, s, t = pre_ms / 1e3, step_ms / 1e3, tpot_ms / 1e3
    w = _wait_s(p, s, t, osl, n) if wait_s is None else wait_s
    return ttft_s(p, s, w, wave_s(share, n, p)) * 1e3 + request_overhead_ms


def wave_share(row: Measurement, *, assumptions: Assumptions | str | None = None) -> float:
    """The wave share of a closed-loop row (formula ``closed_loop_wave_wait``) under the one client model
    (:func:`llmcourse.validation.client.client_wave_share`): 1 where the engine ran its prefill batches on their own
    (:func:`~llmcourse.validation.row_replica.separate_prefill`: SGLang by default, its mixed chunks off), else the
    assumptions' ``closed_loop_wave_share`` (the course's by default): vLLM and TensorRT-LLM put prefill chunks into
    their decode steps.

    Examples
    --------
    >>> from llmcourse.validation import silicon
    >>> rows = silicon().rows
    >>> [wave_share(next(r for r in rows if r.engine.startswith(e))) for e in ("SGLang", "vLLM", "TensorRT-LLM")]
    [1.0, 0.14, 0.14]
    """
    separate = separate_prefill(row)
    return client_wave_share(separate, resolve(assumptions).closed_loop_wave_share)


@checked
def closed_loop_ttft(
    prefill_time: pint.Quantity,
    step_time: pint.Quantity,
    time_per_token: pint.Quantity,
    answer_tokens: float,
    concurrency: int,
    wave_share: float = 0.0,
) -> pint.Quantity:
    """Mean time to first token of a closed loop of ``concurrency`` requests in flight (formulas
    ``closed_loop_prefill_wait``, ``closed_loop_wave_wait`` and ``closed_loop_ttft``).

    A new request arrives while a decode step is under way (it waits half a step on average: assumed, a request
    landing at a random point of a step, which the steps' varying lengths and the clients' jitter spread; a client
    that answers at once after a step's end waits most of the next one. Where the engine carries a prompt in a step
    beside the decodes, ``step_time`` is a step that decodes alone, since a step with a prompt under way is another
    request's prefill, which the two waits below already charge), then waits behind the prompts of the other
    ``n_c - 1`` requests being prefilled, then is prefilled.
    Two waits, of which the longer counts:

    * the queue's, for arrivals spread at random: the Pollaczek-Khinchine mean for a fixed service
      time ``t_pre`` at utilisation ``rho = (n_c - 1) t_pre / (cycle + W)``, the share of time the
      other clients keep the prefill busy when each client's cycle is its prefill, half a step,
      ``T_a - 1`` tokens and the wait: ``W = rho t_pre / (2 (1 - rho))`` is a quadratic in ``W``,
      whose positive root is the formula. One request alone never waits; when the prompts alone fill
      the cycle, ``W`` tends to the other requests' prefills, ``(n_c - 1) t_pre`` less the rest of
      the cycle. ``tests/test_measured.py`` checks it against the queueing simulator.
    * the wave's: a benchmark starts its ``n_c`` requests together and, with answers of one length,
      they come back together. The k-th of a wave is prefilled after the k - 1 before it; while it
      decodes, each later prefill holds its steps by ``s_w t_pre`` (``s_w`` = ``wave_share``: 1 when the
      engine runs each prefill on its own, less when it puts prefill chunks into the decode steps), so
      the next wave comes back bunched by ``s_w t_pre`` a request, and the k-th waits
      ``(k - 1) s_w t_pre``: a mean of ``s_w (n_c - 1) t_pre / 2``, the same wave after wave.

    Examples
    --------
    >>> from llmcourse.units import Q_
    >>> round(closed_loop_ttft(Q_(40, "ms"), Q_(20, "ms"), Q_(22, "ms"), 1_000, 1).to("ms").m, 3)
    50.0
    >>> round(closed_loop_ttft(Q_(40, "ms"), Q_(20, "ms"), Q_(22, "ms"), 1_000, 64).to("ms").m, 1)
    52.6
    >>> round(closed_loop_ttft(Q_(40, "ms"), Q_(20, "ms"), Q_(22, "ms"), 1_000, 64, 0.5).to("ms").m, 1)
    680.0
    """
    w = F["closed_loop_prefill_wait"](
        prefill_time=prefill_time,
        step_time=step_time,
        time_per_token=time_per_token,
        answer_tokens=answer_tokens,
        concurrency=concurrency,
    )
    wave = F["closed_loop_wave_wait"](wave_share=wave_share, concurrency=concurrency, prefill_time=prefill_time)
    return to(
        F["closed_loop_ttft"](prefill_time=prefill_time, step_time=step_time, prefill_wait=w, wave_wait=wave), "ms"
    )


# --- the fast path of a closed-loop row ---------------------------------------------------------
@dataclass(frozen=True)
class LoadComponents:
    """A closed-loop configuration's replica model as times at 100% efficiency (ms), so that a fit
    can try many values of :data:`~llmcourse.validation.FIT_PARAMETERS` without calling the replica model again.

    The replica model's decode step (step rule ``"max"``) is the slower of a memory time (over the
    bandwidth efficiency) and a compute time (over the compute efficiency), plus the assumptions'
    ``step_overhead_ms``, plus what else the model adds to a step (``step_extra_ms``: its
    collectives); a prefill is the slower of a compute and a memory time plus its collectives. The
    time per token is the step plus the other requests' prefills (formula ``interleaved_tpot``), the
    time to first token :func:`closed_loop_ttft`. :meth:`times` agrees with :func:`predict` under
    the same assumptions (``tests/test_measured.py`` checks it).
    """

    concurrency: int
    osl: int
    decode_memory_ms: float
    decode_compute_ms: float
    step_extra_ms: float
    batch_prefill_compute_ms: float
    batch_prefill_memory_ms: float
    batch_prefill_extra_ms: float
    prefill_compute_ms: float
    prefill_memory_ms: float
    prefill_extra_ms: float
    interference: bool
    fits: bool = True
    request_overhead_ms: float = 0.0
    closed_loop_wave_share: float = 0.0
    separate_prefill: bool = False
    #: requests the engine runs at once (0: the concurrency); the rest wait (:func:`queued_wait_s`)
    running: int = 0
    #: an engine that mixes prompt chunks into its steps (formula ``mixed_step_time``): its steady step, and the first
    #: prompt's chunks, each a step of its own with the running requests' decode tokens, as (matmuls' memory ms, their
    #: compute ms, attention's memory ms, its compute ms, collectives ms) at 100% efficiency
    mixed_step: tuple[float, ...] = ()
    first_chunks: tuple[tuple[float, ...], ...] = ()
    #: an engine whose new prompts go whole (or in a few chunks) into steps of their own (formula
    #: ``chunked_mean_step``): the step that decodes alone, each step of a prompt's chunks, and the share of steps that
    #: carry a chunk (formula ``prompt_step_share``), kernels as :attr:`mixed_step`'s; empty: :attr:`mixed_step`
    decode_step: tuple[float, ...] = ()
    chunk_steps: tuple[tuple[float, ...], ...] = ()
    chunk_share: float = 0.0
    chunk_weights: tuple[float, ...] = ()  # each chunk step's share of them
    #: an engine that runs prefill batches of their own: the forward passes of the batch's prefill and of one
    #: prompt's (each pays the step overhead; the prefill times above are then one pass's); 0: one, no overhead
    prefill_passes: int = 0
    first_passes: int = 0
    #: the model's layers and the assumptions' floor per layer (us): each forward pass (a step, a prefill pass, a
    #: chunk) pays ``layers x layer_floor_us`` besides the per-step overhead (formula ``layer_floor_time``)
    layers: int = 0
    layer_floor_us: float = 0.0
    #: attention data-parallel groups, each holding :func:`per_group` of the requests (its own queue and prefills)
    groups: int = 1

    def pass_overhead(self, step_overhead_ms: float, layer_floor_us: float | None = None) -> float:
        """The fixed time (ms) each forward pass pays: the per-step overhead plus the layers' floor (at
        ``layer_floor_us``, the configuration's own when None)."""
        floor = self.layer_floor_us if layer_floor_us is None else layer_floor_us
        return step_overhead_ms + _floor_s(self.layers, floor * 1e-6) * 1e3  # formula layer_floor_time, in ms

    def at_shares(self, bandwidth: float, compute: float) -> LoadComponents:
        """These times with every memory time over ``bandwidth`` and every compute time over ``compute``: the times
        of an engine whose kernels reach ``bandwidth`` and ``compute`` times the general shares (llama.cpp's own,
        :func:`~llmcourse.assumptions.for_engine`), so that the general shares divide them as they divide any row's.

        Examples
        --------
        >>> c = LoadComponents(1, 10, 8.0, 1.0, 0.0, 60.0, 2.0, 0.0, 60.0, 2.0, 0.0, False)
        >>> d = c.at_shares(2.0, 1.5)
        >>> d.decode_memory_ms, d.decode_compute_ms, d.prefill_compute_ms, c.at_shares(1.0, 1.0) is c
        (4.0, 0.6666666666666666, 40.0, True)
        """
        if bandwidth == 1 and compute == 1:
            return self

        def kernels(k: tuple[float, ...]) -> tuple[float, ...]:
            return (k[0] / bandwidth, k[1] / compute, k[2] / bandwidth, k[3] / compute, *k[4:]) if k else k

        return dataclasses.replace(
            self,
            decode_memory_ms=self.decode_memory_ms / bandwidth,
            decode_compute_ms=self.decode_compute_ms / compute,
            batch_prefill_memory_ms=self.batch_prefill_memory_ms / bandwidth,
            batch_prefill_compute_ms=self.batch_prefill_compute_ms / compute,
            prefill_memory_ms=self.prefill_memory_ms / bandwidth,
            prefill_compute_ms=self.prefill_compute_ms / compute,
            mixed_step=kernels(self.mixed_step),
            first_chunks=tuple(kernels(k) for k in self.first_chunks),
            decode_step=kernels(self.decode_step),
            chunk_steps=tuple(kernels(k) for k in self.chunk_steps),
        )

    def tpot(
        self,
        bandwidth_efficiency: float,
        compute_efficiency: float,
        step_overhead_ms: float,
        layer_floor_us: float | None = None,
        closed_loop_wave_share: float | None = None,
        request_overhead_ms: float | None = None,
    ) -> float:
        """Time per output token (ms): the first of :meth:`times`, on its own (what a fit needs most; the wave
        share and the per-request overhead change only the time to first token)."""
        over = self.pass_overhead(step_overhead_ms, layer_floor_us)
        return self._step_tpot(bandwidth_efficiency, compute_efficiency, over)[1]

    def _step_tpot(self, eb: float, ef: float, step_overhead_ms: float) -> tuple[float, float]:
        """(decode step, time per output token), in ms, at bandwidth and compute efficiencies ``eb`` and ``ef``:
        the step plus the other requests' prefills between its steps (formula ``interleaved_tpot``)."""
        if self.chunk_steps:  # (the step that decodes alone, the mean step)
            return _chunked_steps_ms(
                self.decode_step, self.chunk_steps, self.chunk_share, eb, ef, step_overhead_ms, self.chunk_weights
            )
        if self.mixed_step:
            step = _kernels_ms(self.mixed_step, eb, ef, step_overhead_ms)
            return step, step
        step = max(self.decode_memory_ms / eb, self.decode_compute_ms / ef) + step_overhead_ms + self.step_extra_ms
        if not self.interference:
            return step, step
        batch = max(self.batch_prefill_compute_ms / ef, self.batch_prefill_memory_ms / eb) + self.batch_prefill_extra_ms
        if self.prefill_passes:
            batch = self.prefill_passes * (batch + step_overhead_ms)
        return step, _tpot_s(step, batch, self.running or self.concurrency, self.osl)

    def times(
        self,
        bandwidth_efficiency: float,
        compute_efficiency: float,
        step_overhead_ms: float,
        layer_floor_us: float | None = None,
        closed_loop_wave_share: float | None = None,
        request_overhead_ms: float | None = None,
    ) -> tuple:
        """(time per output token, time to first token, decode step), in ms; the layers' floor, the wave share and
        the per-request overhead are the configuration's own (the assumptions') when not given, and the wave
        share 1 whatever is given for an engine of :data:`SEPARATE_PREFILL_ENGINES`."""
        first, step, tpot, wait = self.queue(bandwidth_efficiency, compute_efficiency, step_overhead_ms, layer_floor_us)
        share = self.share(closed_loop_wave_share)
        over = self.request_overhead_ms if request_overhead_ms is None else request_overhead_ms
        ttft = _closed_loop_ttft_ms(first, step, tpot, self.osl, self.group_concurrency, over, share, wait)
        return tpot, ttft, step

    def queue(
        self,
        bandwidth_efficiency: float,
        compute_efficiency: float,
        step_overhead_ms: float,
        layer_floor_us: float | None = None,
    ) -> tuple[float, float, float, float]:
        """(prefill of one prompt ms, decode step ms, time per output token ms, the queue's wait s: formula
        ``closed_loop_prefill_wait``): what the time to first token takes from the step's parameters."""
        eb, ef = bandwidth_efficiency, compute_efficiency
        step_overhead_ms = self.pass_overhead(step_overhead_ms, layer_floor_us)  # what each forward pass pays
        step, tpot = self._step_tpot(eb, ef, step_overhead_ms)
        if self.first_chunks:
            first = sum(_kernels_ms(k, eb, ef, step_overhead_ms) for k in self.first_chunks)
        else:
            first = max(self.prefill_compute_ms / ef, self.prefill_memory_ms / eb) + self.prefill_extra_ms
            if self.first_passes:
                first = self.first_passes * (first + step_overhead_ms)
        n, g = self.concurrency, self.groups
        running = per_group(self.running or n, g)
        return first, step, tpot, queued_wait_s(first / 1e3, step / 1e3, tpot / 1e3, self.osl, per_group(n, g), running)

    @property
    def group_concurrency(self) -> int:
        """The requests in flight one attention group holds (:func:`per_group`): the closed loop's waits are its."""
        return per_group(self.concurrency, self.groups)

    def share(self, closed_loop_wave_share: float | None = None) -> float:
        """The wave share of the configuration's time to first token (see :meth:`times`)."""
        fitted = self.closed_loop_wave_share if closed_loop_wave_share is None else closed_loop_wave_share
        return client_wave_share(self.separate_prefill, fitted)


def _kernels(t: float, m: tuple[float, float], c: tuple[float, float], step_overhead_ms: float) -> tuple[float, ...]:
    """A mixed step of :meth:`~llmcourse.replica.model.ReplicaSetup.engine_parts` (its time, its kernels' memory
    times and compute times, in s) as kernels in ms: (matmuls' memory, their compute, attention's memory, its
    compute, what else the step adds less ``step_overhead_ms``)."""
    extra = t - max(m[0], c[0]) - max(m[1], c[1]) - step_overhead_ms * _MS_TO_S
    return tuple(x * 1e3 for x in (m[0], c[0], m[1], c[1], extra))


def _kernels_ms(k: tuple[float, ...], eb: float, ef: float, step_overhead_ms: float) -> float:
    """A mixed step's time (ms) from its kernels at 100% efficiency (:attr:`LoadComponents.mixed_step`)."""
    wm, wc, am, ac, extra = k
    return max(wm / eb, wc / ef) + max(am / eb, ac / ef) + step_overhead_ms + extra


def _chunked_steps_ms(
    decode: tuple[float, ...],
    chunks: tuple[tuple[float, ...], ...],
    share: float,
    eb: float,
    ef: float,
    over: float,
    weights: tuple[float, ...],
) -> tuple[float, float]:
    """(the step that decodes alone, the mean step: formula ``chunked_mean_step``), in ms, of an engine whose prompts'
    chunks take steps of their own, from the kernels at 100% efficiency of its step that decodes alone and of each
    chunk's step, each by its weight (:attr:`~llmcourse.replica.chunked.ChunkedSteps.weights`). A closed loop's request
    waits half of the first for the step under way (see :func:`closed_loop_ttft`)."""
    chunk = math.fsum(w * _kernels_ms(k, eb, ef, over) for w, k in zip(weights, chunks, strict=True))
    alone = _kernels_ms(decode, eb, ef, over)
    mean = share * chunk + (1 - share) * alone
    return alone, mean


def config_key(row: Measurement) -> tuple:
    return (
        row.model, row.gpu, row.tp, row.pp, row.attention_dp, row.ep, row.weights, row.kv, row.isl, row.osl,
        row.concurrency, separate_prefill(row),
    )  # fmt: skip


def load_components(row: Measurement, *, assumptions: Assumptions | str | None = None) -> LoadComponents:
    """The :class:`LoadComponents` of a closed-loop row: one call of the replica model at 100% of both
    peaks under ``assumptions`` (the course's by default). Raises :class:`InputError` with the
    replica model's reason if the weights leave no room for one sequence; a concurrency above the
    largest batch whose KV fits at the final context is split at that batch, with ``fits`` False.

    Examples
    --------
    >>> from llmcourse.validation import silicon
    >>> row = next(r for r in silicon().rows if r.metric == "tpot_ms" and r.model == "Llama-3.1-70B")
    >>> c, a = load_components(row), resolve()
    >>> tpot, ttft, step = c.times(a.bandwidth_efficiency, a.compute_efficiency, a.step_overhead_ms)
    >>> abs(tpot - predict(row).value) < 1e-9
    True
    """
    a = resolve(assumptions)
    if row.load_kind != "concurrency":
        raise InputError(f"row {row.id}: load_components() splits closed-loop rows; use components() for this one.")
    if a.step_rule != "max":
        raise InputError(
            f"load_components() splits a step into one memory and one compute time (step rule 'max'); assumptions "
            f"{a.name!r} use step rule {a.step_rule!r}: predict each row with predict() instead."
        )
    # an engine with kernels of its own (llama.cpp: for_engine) runs at its own shares and step overhead: its times
    # at 100% are split as the general shares divide them (its share over the general one folded in), so that
    # times() at the assumptions' own values gives what the replica model predicts for the row
    own = for_engine(a, row_engine(row))
    setup, rep = setup_replica(row, own.replace(bandwidth_efficiency=1.0, compute_efficiency=1.0))
    if rep.step is None:
        raise InputError(f"row {row.id}: {rep.reason}")
    s, first, batch = rep.step, rep.first_prefill, rep.batch_prefill

    def ms(q: pint.Quantity) -> float:
        return float(q.m_as(_MS))

    def extra(p: Any) -> float:
        return ms(p.time) - max(ms(p.compute_time), ms(p.memory_time))

    step = (ms(s.step_time), ms(s.memory_time), ms(s.compute_time))
    parts = setup.engine_parts(rep.batch)
    engine: dict[str, Any] = {}

    floor_ms = layer_floor_ms(models[row.model], a)  # the layers' floor, re-weighed by the fits as the overhead is
    over = a.step_overhead_ms + floor_ms

    def kernels(t: float, m: tuple[float, float], c: tuple[float, float]) -> tuple[float, ...]:
        return _kernels(t, m, c, over)

    if "chunks" in parts:  # an engine that mixes a prompt's chunks into some of its decode steps
        engine = dict(
            interference=False,
            decode_step=kernels(*parts["decode"]),
            chunk_steps=tuple(kernels(*k) for k in parts["chunks"]),
            chunk_share=float(parts["share"]),  # a user's time per token: the other requests' prompts
            chunk_weights=tuple(parts["weights"]),
            first_chunks=tuple(kernels(*f) for f in parts["first"]),
        )
    elif "step" in parts:  # an engine that mixes prompt chunks into every decode step: the step is the mixed one
        engine = dict(
            interference=False,
            mixed_step=kernels(*parts["step"]),
            first_chunks=tuple(kernels(*f) for f in parts["first"]),
        )
    elif parts:  # separate prefill batches, each pass paying the step overhead
        batch, first = parts["pass"], parts["first_pass"]
        engine = dict(prefill_passes=parts["passes"], first_passes=parts["first_passes"], interference=True)
    got = LoadComponents(**(dict(
        concurrency=int(row.concurrency), osl=row.osl, decode_memory_ms=step[1], decode_compute_ms=step[2],
        step_extra_ms=step[0] - max(step[1], step[2]) - over, layers=models[row.model].layers,
        layer_floor_us=a.layer_floor_us,
        batch_prefill_compute_ms=ms(batch.compute_time), batch_prefill_memory_ms=ms(batch.memory_time),
        batch_prefill_extra_ms=extra(batch), prefill_compute_ms=ms(first.compute_time),
        prefill_memory_ms=ms(first.memory_time), prefill_extra_ms=extra(first),
        interference=bool(a.prefill_interference and batch is not None), fits=rep.fits,
        request_overhead_ms=a.request_overhead_ms, closed_loop_wave_share=a.closed_loop_wave_share,
        separate_prefill=separate_prefill(row), running=rep.batch,
        groups=1 if rep.layout is None else rep.layout.data_parallel,
    ) | engine))  # fmt: skip
    return got.at_shares(
        own.bandwidth_efficiency / a.bandwidth_efficiency, own.compute_efficiency / a.compute_efficiency
    )
