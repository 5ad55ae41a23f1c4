"""Validation: the course's predictions against published, measured serving results.

Used by the chapter *How good is the estimate?* (``book/12_validation.md``).

* :func:`measurements` - the rows of ``llmcourse/data/measurements.csv``, each with its source.
* :func:`predict` - one row's metric from the row's own fields, the catalog and the one replica
  model (:func:`llmcourse.planner.replica`), never the measured value, under an assumptions preset
  (the course's by default) whose two efficiencies may be overridden.
* :func:`components` - the same prediction split into the times the two efficiencies divide,
  so that :func:`fit_efficiencies` can search many efficiency pairs quickly.
* :func:`dataset` - the rows and their components: every row's prediction at any efficiencies
  (what the chapter's calculator needs, with no fit).
* :func:`fit_efficiencies`, :func:`leave_one_out` - two global factors fitted by least squares
  in log space, and the error on rows the fit did not see; :func:`validate` does it all.
* :func:`error_stats` - median and worst ``|ln(predicted / measured)|`` and the share within 2x.

Plain Python (the standard library and SymPy, no numpy), so that the chapter's calculator also runs
in the reader's browser.

The data file keeps every column of the published table (``id``, ``source``, ``gpu``, ``n_gpus``,
``tp``, ``model``, ``weights``, ``kv``, ``engine``, ``isl``, ``osl``, ``load``, ``metric``, ``value``,
``unit``, ``notes``) with each source written out in full, and adds ``load_kind``
(``offline_max``; ``online_unbounded`` for "QPS INF"; ``online_rate`` for a fixed rate) and
``request_rate_per_s``. Rows T25 and T26 are the times to first token given in the notes of
T17 and T19 (same runs). GPU and model names resolve in the catalog ("H200", "Mistral-7B" and
"Llama-3.3-70B" are aliases).

Every row is predicted by one call of :func:`llmcourse.planner.replica` (``tensor_parallel`` = the
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
* the matmuls run at the precision :func:`llmcourse.planner.matmul_precision` gives (with the
  course's method: the weights' own where the GPU has a peak for it, FP8 weights on an H100 at
  FP8 FLOP/s, FP4 on a B200 at FP4, otherwise BF16).

Examples
--------
>>> rows = measurements()
>>> len(rows), rows[0].id, rows[0].model
(26, 'T1', 'Llama-3.1-8B')
>>> p = predict(rows[0])
>>> p.batch, p.compute_precision
(3812, 'fp8')
"""

from __future__ import annotations

import bisect
import csv
import dataclasses
import functools
import inspect
import json
import math
import operator
import re
import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from itertools import compress, count, repeat
from pathlib import Path
from typing import Any, NamedTuple

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import gpus, models
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import checked
from llmcourse.planner import Brief, Replica, matmul_precision, plan, replica, usable_memory, weight_bytes
from llmcourse.stats import percentile  # the standard library's numerics, as numpy's
from llmcourse.units import Q_, parsed_unit, plain_number, to

__all__ = [
    "AICONFIGURATOR",
    "ARCHITECTURE_GAPS",
    "BANDS_FILE",
    "BAND_METRICS",
    "BAND_PERCENTILES",
    "BAND_WHICH",
    "COURSE_COLUMNS",
    "DISAGGREGATED_REASON",
    "ENABLED_LAYOUTS",
    "FACETS",
    "FIT_GRIDS",
    "FIT_METRICS",
    "FIT_OBJECTIVES",
    "FIT_PARAMETERS",
    "FORMATS",
    "GRID",
    "HOLD_OUT",
    "KV_STARVED_SHARE",
    "LAYOUT_KEYWORDS",
    "LAYOUT_REASON",
    "METRICS",
    "METRIC_NAMES",
    "OWN_MAX_ROWS",
    "REPLAN_EXAMPLE",
    "SEPARATE_PREFILL_ENGINES",
    "Band",
    "Components",
    "Dataset",
    "ErrorStats",
    "Evidence",
    "Fit",
    "LoadComponents",
    "Loaded",
    "Measurement",
    "OwnBenchmark",
    "Prediction",
    "Replan",
    "Skipped",
    "Summary",
    "Validation",
    "architecture",
    "band",
    "band_for",
    "band_table",
    "bands_markdown",
    "closed_loop_ttft",
    "compare_methods",
    "components",
    "concurrency_band",
    "course_csv",
    "dataset",
    "end_to_end",
    "engine_usable_fraction",
    "error_stats",
    "evidence",
    "family",
    "fit_efficiencies",
    "gpu_generation",
    "gpus_band",
    "grid_markdown",
    "held_out_markdown",
    "held_out_table",
    "kv_share",
    "layout_gap",
    "layout_keywords",
    "leave_one_out",
    "load_components",
    "load_measurements",
    "measurements",
    "not_predicted_reasons",
    "own_benchmark",
    "parameters_markdown",
    "parameters_table",
    "parse_measurements",
    "plan_bands",
    "predict",
    "shipped_bands",
    "silicon",
    "summarize",
    "validate",
    "wave_share",
]

_MS, _PER_S = parsed_unit("ms")[0], parsed_unit("1/s")[0]  # parsed once: pint re-parses a string unit each time

#: The metrics a row may report, and their units.
METRICS = {"output_tokens_per_s": "1/s", "itl_ms": "ms", "ttft_ms": "ms", "tpot_ms": "ms"}
#: What each metric is, in words.
METRIC_NAMES = {
    "output_tokens_per_s": "output tokens per second",
    "itl_ms": "inter-token latency",
    "ttft_ms": "time to first token",
    "tpot_ms": "time per output token",
}
#: How a row loaded the replica: the largest batch (offline, or online with no rate limit), a fixed
#: request rate, or a closed loop of ``concurrency`` requests in flight (a benchmark's concurrency).
LOAD_KINDS = ("offline_max", "online_unbounded", "online_rate", "concurrency")


@dataclass(frozen=True)
class Measurement:
    """One published measurement (a row of ``measurements.csv``)."""

    id: str
    source: str
    gpu: str
    n_gpus: int
    tp: int
    model: str
    weights: str
    kv: str
    engine: str
    isl: int
    osl: int
    load: str
    load_kind: str
    metric: str
    value: float
    unit: str
    notes: str = ""
    concurrency: int | None = None
    pp: int = 1
    attention_dp: int = 1
    ep: int = 1

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise InputError(f"row {self.id}: metric {self.metric!r} unknown; use one of {', '.join(METRICS)}.")
        if self.load_kind not in LOAD_KINDS:
            raise InputError(
                f"row {self.id}: load_kind {self.load_kind!r} unknown; use one of {', '.join(LOAD_KINDS)}."
            )
        for name in ("tp", "pp", "attention_dp", "ep"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"row {self.id}: {name} must be a whole number of at least 1; got {v!r}.")
        if self.n_gpus != self.tp * self.pp * self.attention_dp:
            raise InputError(
                f"row {self.id}: n_gpus ({self.n_gpus}) must equal tp x pp x attention_dp "
                f"({self.tp} x {self.pp} x {self.attention_dp}) (one replica per row)."
            )
        if self.load_kind == "concurrency":
            c = self.concurrency
            if isinstance(c, bool) or not isinstance(c, int) or c < 1:
                raise InputError(
                    f"row {self.id}: a closed-loop row needs a concurrency of at least 1 request in flight; got {c!r}."
                )


def measurements() -> list[Measurement]:
    """The published measurements shipped with the package, in file order."""
    text = resources.files("llmcourse.data").joinpath("measurements.csv").read_text(encoding="utf-8")
    out = []
    for r in csv.DictReader(text.splitlines()):
        out.append(
            Measurement(
                id=r["id"],
                source=r["source"],
                gpu=r["gpu"],
                n_gpus=int(r["n_gpus"]),
                tp=int(r["tp"]),
                model=r["model"],
                weights=r["weights"],
                kv=r["kv"],
                engine=r["engine"],
                isl=int(r["isl"]),
                osl=int(r["osl"]),
                load=r["load"],
                load_kind=r["load_kind"],
                metric=r["metric"],
                value=float(r["value"]),
                unit=r["unit"],
                notes=r["notes"],
            )
        )
    return out


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


def _assumptions(
    assumptions: Assumptions | str | None,
    bandwidth_efficiency: float | None = None,
    compute_efficiency: float | None = None,
    usable_fraction: float | None = None,
) -> Assumptions:
    """The assumptions of a prediction: a preset (the course's by default) with the overrides given
    (checked by :class:`~llmcourse.assumptions.Assumptions`; ``usable_fraction`` is its ``memory_fraction``)."""
    return resolve(assumptions).replace(
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
        memory_fraction=usable_fraction,
    )


def _replica(row: Measurement, a: Assumptions) -> Replica:
    """The one replica model of a row: its GPUs, precisions and lengths; a batch of 1 at a fixed
    request rate, the concurrency in a closed loop, otherwise the largest batch that fits."""
    gap = layout_gap(row)
    if gap is not None:
        raise InputError(f"row {row.id}: {gap}")
    batch = {"online_rate": 1, "concurrency": row.concurrency}.get(row.load_kind)
    r = replica(
        row.model,
        row.gpu,
        tensor_parallel=row.tp,
        batch=batch,
        prompt_tokens=row.isl,
        answer_tokens=row.osl,
        weight_bytes=row.weights,
        kv_bytes=row.kv,
        assumptions=a,
        **layout_keywords(row),
    )
    if not r.fits:
        raise InputError(f"row {row.id}: {r.reason}")
    return r


def engine_usable_fraction(
    row: Measurement, kv_free_fraction: float | None = None, *, assumptions: Assumptions | str | None = None
) -> float:
    """The share of the GPUs' memory that weights and KV cache use together under an engine's rule
    that gives the KV cache ``kv_free_fraction`` of what the weights leave (TensorRT-LLM's
    ``free_gpu_memory_fraction``): the memory rule ``"free"`` of
    :func:`llmcourse.planner.usable_memory`, with ``kv_free_fraction`` defaulting to the
    assumptions' ``memory_fraction`` (the course's: 0.9, also the engine's default). Activations
    are ignored. Pass the result to :func:`predict` as ``usable_fraction``.

    Examples
    --------
    >>> r = measurements()[7]
    >>> r.id, round(engine_usable_fraction(r), 4)
    ('T8', 0.9882)
    """
    a = resolve(assumptions)
    w = weight_bytes(row.model, row.weights)
    free = usable_memory(row.gpu, row.tp, kv_free_fraction, weights=w, assumptions=a.replace(memory_rule="free"))
    whole = usable_memory(row.gpu, row.tp, 1, assumptions=a.replace(memory_rule="total"))
    return float(to(free / whole, "").m)


def predict(
    row: Measurement,
    bandwidth_efficiency: float | None = None,
    compute_efficiency: float | None = None,
    *,
    usable_fraction: float | None = None,
    assumptions: Assumptions | str | None = None,
) -> Prediction:
    """Predict a row's metric with :func:`llmcourse.planner.replica` from the row's own fields
    (never its ``value``), under ``assumptions`` (the course's method by default).

    The efficiencies and ``usable_fraction`` (the share of the GPUs' memory that weights and KV
    cache may use) override the assumptions' own; :func:`engine_usable_fraction` gives the
    engine's memory rule as a ``usable_fraction``.

    Examples
    --------
    >>> r = measurements()[16]
    >>> r.id, r.metric, round(predict(r).value, 2)
    ('T17', 'itl_ms', 7.88)
    """
    _need_row(row)
    a = _assumptions(assumptions, bandwidth_efficiency, compute_efficiency, usable_fraction)
    rep = _replica(row, a)
    cp = matmul_precision(row.weights, row.gpu, a)
    if row.load_kind == "concurrency":
        return _predict_closed_loop(row, rep, cp)
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


def _scalar(name: str, *args: str):
    """A formula's expression as a plain-float function of the named inputs (in their declared units),
    positional in the order given."""
    f = F[name]
    names = sorted(x.name for x in f.inputs)
    if names != sorted(args):
        raise ValueError(f"{name} takes {', '.join(names)}; got {', '.join(args)}.")
    return f.positional(*args)  # lambdify's code, from the formulas' cache when current


#: Output tokens per second of a batch: (batch, answer_tokens, step_time s, prefill_time s) -> 1/s.
_throughput = _scalar("cycle_throughput", "batch", "answer_tokens", "step_time", "prefill_time")
#: Output tokens per second of a batch that only decodes: (batch, step_time s) -> 1/s.
_decode_throughput = _scalar("throughput", "batch", "step_time")


@dataclass(frozen=True)
class Components:
    """A row's prediction as times at 100% efficiency (ms), which the efficiencies divide.

    The replica model's decode step (step rule ``"max"``) is the slower of a memory time (over the
    bandwidth efficiency) and a compute time (over the compute efficiency), plus a fixed
    ``step_overhead_ms``; its prefill is the slower of a compute and a memory time. Holding the
    four times at efficiency 1 lets a fit try thousands of efficiency pairs without calling the
    replica model again; :meth:`value` agrees with :func:`predict` under the same assumptions
    (the tests check it). ``counts_prefill`` says whether a throughput row charges the prefill
    (the cycle) or counts decode steps only.
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
        if not self.counts_prefill:
            return _decode_throughput(self.batch, step / 1000.0)
        return _throughput(self.batch, self.osl, step / 1000.0, pre / 1000.0)


def components(
    row: Measurement, *, usable_fraction: float | None = None, assumptions: Assumptions | str | None = None
) -> Components:
    """The times of :func:`predict` at 100% bandwidth and compute efficiency: the same replica
    model under the same assumptions, with both efficiencies set to 1.

    Examples
    --------
    >>> c, a = components(measurements()[16]), resolve()
    >>> round(c.value(a.bandwidth_efficiency, a.compute_efficiency), 2), round(c.value(1, 1), 2)
    (7.88, 5.82)
    """
    _need_row(row)
    a = _assumptions(assumptions, usable_fraction=usable_fraction)
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
    rep = _replica(row, a.replace(bandwidth_efficiency=1.0, compute_efficiency=1.0))
    s, pre = rep.step, rep.batch_prefill
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
        counts_prefill=rep.counts_prefill,
        # the fixed time a prefill adds (its collectives), as the replica model gives it
        prefill_extra_ms=float((pre.time - max(pre.compute_time, pre.memory_time)).m_as(_MS)),
    )


@dataclass(frozen=True)
class ErrorStats:
    """How far predictions land from measurements, as ``|ln(predicted / measured)|``."""

    n: int
    median_abs_log: float
    worst_abs_log: float
    worst_id: str
    within_2x: float

    @property
    def median_factor(self) -> float:
        """The median error as a factor (1.3 = 30% off either way)."""
        return math.exp(self.median_abs_log)

    @property
    def worst_factor(self) -> float:
        return math.exp(self.worst_abs_log)


def _need_row(row: Any) -> None:
    """Refuse anything but a :class:`Measurement` where a measured row is expected."""
    fields = ("id", "model", "gpu", "tp", "weights", "kv", "isl", "osl", "metric", "load_kind")
    if not isinstance(row, Measurement) and not all(hasattr(row, f) for f in fields):
        raise InputError(
            f"a measured row must be a llmcourse.validation.Measurement (from measurements() or load_measurements()); "
            f"got {type(row).__name__}."
        )


def error_stats(predicted: Sequence[float], measured: Sequence[float], ids: Sequence[str]) -> ErrorStats:
    """Median and worst ``|ln(predicted / measured)|`` and the share of rows within a factor of 2.

    Examples
    --------
    >>> s = error_stats([2.0, 1.0, 0.25], [1.0, 1.0, 1.0], ["a", "b", "c"])
    >>> round(s.median_factor, 3), round(s.worst_factor, 3), s.worst_id, round(s.within_2x, 3)
    (2.0, 4.0, 'c', 0.667)
    """

    def numbers(xs: Any, name: str) -> list[float]:
        if isinstance(xs, str | bytes) or not isinstance(xs, Sequence):
            raise InputError(f"{name} must be a list of numbers; got {type(xs).__name__}.")
        return [plain_number(x, f"each of {name}") for x in xs]

    p, m = numbers(predicted, "predicted"), numbers(measured, "measured")
    if isinstance(ids, str | bytes) or not isinstance(ids, Sequence):
        raise InputError(f"ids must be a list of row ids; got {type(ids).__name__}.")
    if len(p) != len(m) or len(ids) != len(p) or len(p) == 0:
        raise InputError("error_stats needs as many predictions as measurements and ids, at least one.")
    if (
        any(x <= 0 for x in p)
        or any(x <= 0 for x in m)
        or not all(math.isfinite(a * b) for a, b in zip(p, m, strict=True))
    ):
        raise InputError("predictions and measurements must be finite and greater than zero.")
    e = [abs(math.log(a / b)) for a, b in zip(p, m, strict=True)]
    i = max(range(len(e)), key=e.__getitem__)  # the first of equal worst rows
    return ErrorStats(
        n=len(p),
        median_abs_log=statistics.median(e),
        worst_abs_log=e[i],
        worst_id=ids[i],
        within_2x=sum(x <= math.log(2) + 1e-12 for x in e) / len(e),
    )


@dataclass(frozen=True)
class Fit:
    """Two global efficiencies fitted by least squares on ``ln(predicted / measured)``."""

    bandwidth_efficiency: float
    compute_efficiency: float
    rms_log_error: float
    ids: tuple[str, ...]


#: The coarse grid of :func:`fit_efficiencies`: lowest and highest efficiency, points per axis.
GRID = (0.02, 1.0, 161)


def _grid(lo: float, hi: float, n: int) -> list[float]:
    """``n`` points log-spaced from ``lo`` to ``hi``, both included: ``exp`` of numpy's ``linspace``
    (``k * step + ln(lo)``, the last exactly ``ln(hi)``), as the fit computed it with numpy."""
    a, b = math.log(lo), math.log(hi)
    step = (b - a) / (n - 1)
    return [math.exp(k * step + a) for k in range(n - 1)] + [math.exp(b)]


def _count_above(decreasing_neg: list[float], x: float) -> int:
    """How many leading values of a non-increasing axis (given negated, so ascending) exceed ``x``."""
    return bisect.bisect_left(decreasing_neg, -x)


def _sq_log(values: Iterable[float], target: float) -> list[float]:
    """``(ln(x) - target)^2`` of each value (``map`` keeps the loop out of the interpreter)."""
    d = list(map(operator.sub, map(math.log, values), repeat(target)))
    return list(map(operator.mul, d, d))


def _sq_log_errors(c: Components, target: float, eb_axis: list[float], ef_axis: list[float]) -> list[float]:
    """``(ln(value) - target)^2`` of one row at every grid point, row-major with the bandwidth
    efficiency outer: the same numbers as :meth:`Components.value` at each point, computed by axis.

    A time over the bandwidth efficiency depends on the outer index only, a time over the compute
    efficiency on the inner index only, and the compute times fall as the inner index grows. So for
    each outer index the inner axis splits in at most three runs: where the compute times are the
    slower ones (a list that does not depend on the outer index), a run where one time of each kind
    is the slower, and a run where the memory times are (one value). The step overhead is added to
    both of a step's times, which leaves the slower one the same.
    """
    n = len(ef_axis)
    o = c.step_overhead_ms
    decode_only = c.metric == "output_tokens_per_s" and not c.counts_prefill
    if c.metric in ("itl_ms", "ttft_ms") or decode_only:
        if c.metric == "ttft_ms":
            mem, cmp, o = c.prefill_memory_ms, c.prefill_compute_ms, c.prefill_extra_ms
        else:
            mem, cmp = c.decode_memory_ms, c.decode_compute_ms
        if decode_only:
            # batch / step: (ln(batch / step) - target)^2 = (ln(step) - (ln(batch) - target))^2, step in s
            mem, cmp, o = mem / 1000.0, cmp / 1000.0, o / 1000.0
            target = math.log(c.batch) - target
        by_ef = [cmp / ef + o for ef in ef_axis]
        sq_ef, neg = _sq_log(by_ef, target), [-x for x in by_ef]
        by_eb = [mem / eb + o for eb in eb_axis]
        out: list[float] = []
        for t, sq_t in zip(by_eb, _sq_log(by_eb, target), strict=True):
            k = _count_above(neg, t)
            out += sq_ef[:k]
            out += [sq_t] * (n - k)
        return out
    # output tokens per second (cycle_throughput), times in seconds
    b, osl, thr = repeat(c.batch), repeat(c.osl), _throughput
    step_c = [(c.decode_compute_ms / ef + o) / 1000.0 for ef in ef_axis]
    q = c.prefill_extra_ms
    pre_c = [(c.prefill_compute_ms / ef + q) / 1000.0 for ef in ef_axis]
    neg_s, neg_p = [-x for x in step_c], [-x for x in pre_c]
    both_c = _sq_log(map(thr, b, osl, step_c, pre_c), target)
    out = []
    for eb in eb_axis:
        step_m, pre_m = (c.decode_memory_ms / eb + o) / 1000.0, (c.prefill_memory_ms / eb + q) / 1000.0
        ks, kp = _count_above(neg_s, step_m), _count_above(neg_p, pre_m)
        lo, hi = min(ks, kp), max(ks, kp)
        out += both_c[:lo]
        if ks < kp:  # decode at its memory time, prefill at its compute time
            out += _sq_log(map(thr, b, osl, repeat(step_m), pre_c[lo:hi]), target)
        elif kp < ks:  # decode at its compute time, prefill at its memory time
            out += _sq_log(map(thr, b, osl, step_c[lo:hi], repeat(pre_m)), target)
        if hi < n:
            d = math.log(thr(c.batch, c.osl, step_m, pre_m)) - target
            out += [d * d] * (n - hi)
    return out


class _Level(NamedTuple):
    """One grid: its two axes, each row's squared errors on it (row-major, bandwidth outer), their sum."""

    eb: list[float]
    ef: list[float]
    per_row: list[list[float]]
    total: list[float]


class _Search:
    """The grid search of :func:`fit_efficiencies` over a set of rows, and over the same set less
    any one row (for :func:`leave_one_out`) without redoing the grids.

    Each row's squared errors on the coarse grid are computed once; the sum over all rows (added
    in row order) gives the fit on all rows, and the sum less one row finds the candidates of the
    fit without it. Those candidates (every grid point within rounding of the smallest) are then
    summed again over the kept rows in row order, so a held-out fit is exactly the fit of
    :func:`fit_efficiencies` on the kept rows, ties going to the first grid point (bandwidth
    efficiency outer), as numpy's ``argmin`` does. The fine grid around a coarse best point is
    computed once per distinct point.
    """

    def __init__(self, comps: Sequence[Components], measured: Sequence[float], lo: float, hi: float, n: int):
        if len(comps) != len(measured) or len(comps) == 0:
            raise InputError("fit_efficiencies needs one measurement per row and at least one row.")
        if not 0 < lo < hi or n < 2:
            raise InputError(f"the grid needs 0 < lo < hi and n >= 2; got lo={lo}, hi={hi}, n={n}.")
        self.comps, self.targets = list(comps), [math.log(float(x)) for x in measured]
        self.lo, self.hi, self.n = lo, hi, n
        self.coarse = self._level(_grid(lo, hi, n), _grid(lo, hi, n))
        self.fine: dict[tuple[int, int], _Level] = {}

    def _level(self, eb_axis: list[float], ef_axis: list[float]) -> _Level:
        per_row = [_sq_log_errors(c, t, eb_axis, ef_axis) for c, t in zip(self.comps, self.targets, strict=True)]
        total = [0.0] * len(per_row[0])
        for r in per_row:
            total = list(map(operator.add, total, r))
        return _Level(eb_axis, ef_axis, per_row, total)

    @staticmethod
    def _best(level: _Level, skip: int | None) -> tuple[int, int, float]:
        """Indices and sum of squares of the best grid point, the first one of equal sums."""
        per_row, total = level.per_row, level.total
        if skip is None:
            sse = min(total)
            k = total.index(sse)
        else:
            rest = list(map(operator.sub, total, per_row[skip]))
            # a sum less a row differs from the sum of the other rows by rounding only (under 1e-14 of
            # the largest sum): every point that could be the best is within this of the smallest
            near = min(rest) + 1e-9 * max(total)
            k, sse = -1, math.inf
            for j in compress(count(), map(operator.le, rest, repeat(near))):
                s = 0.0
                for i, r in enumerate(per_row):
                    if i != skip:
                        s += r[j]
                if s < sse:
                    k, sse = j, s
        return k // len(level.ef), k % len(level.ef), sse

    def fit(self, skip: int | None = None) -> Fit:
        """The fit on every row, or on every row but ``skip``."""
        kept = [c for i, c in enumerate(self.comps) if i != skip]
        if not kept:
            raise InputError("fit_efficiencies needs one measurement per row and at least one row.")
        i, j, _ = self._best(self.coarse, skip)
        if (i, j) not in self.fine:
            step = (math.log(self.hi) - math.log(self.lo)) / (self.n - 1)
            eb, ef = self.coarse.eb[i], self.coarse.ef[j]
            self.fine[i, j] = self._level(*(self._around(x, step) for x in (eb, ef)))
        level = self.fine[i, j]
        i, j, sse = self._best(level, skip)
        return Fit(level.eb[i], level.ef[j], math.sqrt(sse / len(kept)), tuple(c.id for c in kept))

    def _around(self, x: float, step: float) -> list[float]:
        return _grid(max(self.lo, x * math.exp(-2 * step)), min(self.hi, x * math.exp(2 * step)), 81)


def fit_efficiencies(
    comps: Sequence[Components],
    measured: Sequence[float],
    *,
    lo: float = GRID[0],
    hi: float = GRID[1],
    n: int = GRID[2],
) -> Fit:
    """Least squares in log space over a log-spaced grid of both efficiencies in ``[lo, hi]``
    (``n`` points each), then an 81 x 81 grid over two coarse steps either side of the best point.
    Efficiencies above 1 are not allowed: a factor above 100% of a datasheet peak would hide a
    missing term, not calibrate a real one. Of equal sums the first grid point wins (the lowest
    bandwidth efficiency, then the lowest compute efficiency).

    The objective is piecewise smooth (each time is the slower of two), so a grid search is
    robust where a gradient method could stall on a kink.

    Examples
    --------
    >>> rows = [r for r in measurements() if r.id in ("T3", "T17", "T25")]
    >>> f = fit_efficiencies([components(r) for r in rows], [r.value for r in rows])
    >>> 0.02 <= f.compute_efficiency <= 1 and 0.02 <= f.bandwidth_efficiency <= 1
    True
    """
    return _Search(comps, measured, lo, hi, n).fit()


def _leave_one_out(search: _Search) -> tuple[list[float], list[Fit]]:
    fits = [search.fit(skip=i) for i in range(len(search.comps))]
    preds = [c.value(f.bandwidth_efficiency, f.compute_efficiency) for c, f in zip(search.comps, fits, strict=True)]
    return preds, fits


def leave_one_out(comps: Sequence[Components], measured: Sequence[float]) -> tuple[list[float], list[Fit]]:
    """For each row: fit on all the others, predict it. Returns the held-out predictions and fits
    (each fit the same as :func:`fit_efficiencies` on the other rows)."""
    return _leave_one_out(_Search(comps, measured, *GRID))


#: Below this share of usable memory left for the KV cache, a row is "KV-starved".
KV_STARVED_SHARE = 0.10


def kv_share(row: Measurement, *, assumptions: Assumptions | str | None = None) -> float:
    """Share of the usable memory (by the assumptions' memory rule, the course's by default) that
    the weights leave for the KV cache.

    Examples
    --------
    >>> r = measurements()[7]
    >>> r.id, round(kv_share(r), 3)
    ('T8', 0.02)
    """
    _need_row(row)
    w = weight_bytes(row.model, row.weights)
    mem = usable_memory(row.gpu, row.tp, weights=w, assumptions=assumptions)
    return float(to((mem - w) / mem, "").m)


def family(row: Measurement, *, assumptions: Assumptions | str | None = None) -> str:
    """The group a row's discussion belongs to, from its fields and the catalog: ``"latency"``
    (ITL, TTFT), ``"MoE"`` (a mixture-of-experts model's throughput), ``"KV-starved"`` (a dense
    model whose weights leave under :data:`KV_STARVED_SHARE` of usable memory for the cache, so
    a small error in the memory accounting changes the batch several-fold) or ``"dense"``.

    Examples
    --------
    >>> [family(r) for r in measurements() if r.id in ("T3", "T8", "T15", "T17")]
    ['dense', 'KV-starved', 'MoE', 'latency']
    """
    if row.metric != "output_tokens_per_s":
        return "latency"
    if models[row.model].is_moe:
        return "MoE"
    return "KV-starved" if kv_share(row, assumptions=assumptions) < KV_STARVED_SHARE else "dense"


@dataclass(frozen=True)
class Dataset:
    """The measured rows and their :class:`Components` under one set of assumptions: enough to
    predict every row at any pair of efficiencies and score the predictions, without a fit (what
    the chapter's calculator needs)."""

    rows: tuple[Measurement, ...]
    comps: tuple[Components, ...]
    assumptions: Assumptions

    @property
    def measured(self) -> list[float]:
        return [r.value for r in self.rows]

    @property
    def ids(self) -> list[str]:
        return [r.id for r in self.rows]

    def at(self, bandwidth_efficiency: float, compute_efficiency: float) -> list[float]:
        """Every row's prediction at the given efficiencies (the fast path of :class:`Components`)."""
        return [c.value(bandwidth_efficiency, compute_efficiency) for c in self.comps]

    def ids_of(self, fam: str) -> list[str]:
        """Ids of the rows of one :func:`family`."""
        return [r.id for r in self.rows if family(r, assumptions=self.assumptions) == fam]


def dataset(rows: Sequence[Measurement] | None = None, *, assumptions: Assumptions | str | None = None) -> Dataset:
    """The rows (all the published measurements by default) and their components under
    ``assumptions`` (the course's method by default).

    Examples
    --------
    >>> d = dataset()
    >>> a = d.assumptions
    >>> len(d.rows), d.ids[16], round(d.at(a.bandwidth_efficiency, a.compute_efficiency)[16], 2), a.name
    (26, 'T17', 7.88, 'course')
    """
    a = resolve(assumptions)
    rows = tuple(measurements() if rows is None else rows)
    return Dataset(rows, tuple(components(r, assumptions=a) for r in rows), a)


@dataclass(frozen=True)
class Validation(Dataset):
    """Every row predicted three ways (the assumptions' own efficiencies, calibrated, held out) and
    the statistics."""

    default: tuple[Prediction, ...]
    fit: Fit
    calibrated: tuple[float, ...]
    held_out: tuple[float, ...]
    held_out_fits: tuple[Fit, ...]

    @property
    def datasheet(self) -> Assumptions:
        """The assumptions of the ``"datasheet"`` predictions: these, at 100% of both peaks."""
        return self.assumptions.replace(bandwidth_efficiency=1.0, compute_efficiency=1.0)

    def stats(self, which: str = "default", subset: Sequence[str] | None = None) -> ErrorStats:
        """Error statistics of ``"default"`` (the assumptions' own efficiencies), ``"calibrated"``,
        ``"held_out"`` or ``"datasheet"`` (the same assumptions at 100% of both peaks, :attr:`datasheet`)
        predictions, over all rows or the ids in ``subset``."""
        preds = self._predictions(which)
        keep = [i for i, r in enumerate(self.rows) if subset is None or r.id in subset]
        return error_stats([preds[i] for i in keep], [self.measured[i] for i in keep], [self.ids[i] for i in keep])

    def _predictions(self, which: str) -> list[float]:
        preds = {
            "default": lambda: [p.value for p in self.default],
            "calibrated": lambda: list(self.calibrated),
            "held_out": lambda: list(self.held_out),
            "datasheet": lambda: self.at(1.0, 1.0),
        }
        if which not in preds:
            raise InputError(f"which must be one of {', '.join(preds)}; got {which!r}.")
        return preds[which]()

    def faster_than_predicted(self, which: str = "default") -> list[str]:
        """Ids of the rows whose measurement beat the prediction: more tokens per second than
        predicted, or a shorter time (the rows for which the estimate was not a bound).

        Examples
        --------
        >>> v = validate([r for r in measurements() if r.id in ("T3", "T8", "T17")])
        >>> v.faster_than_predicted(), v.faster_than_predicted("datasheet")
        (['T3', 'T8'], ['T8'])
        """
        out = []
        for r, p in zip(self.rows, self._predictions(which), strict=True):
            if (r.value > p) if r.metric == "output_tokens_per_s" else (r.value < p):
                out.append(r.id)
        return out

    def table(self) -> list[dict[str, str]]:
        """One dict per row for the chapter's table (text, already formatted)."""
        out = []
        for r, p, c, h in zip(self.rows, self.default, self.calibrated, self.held_out, strict=True):
            unit = "tok/s" if r.metric == "output_tokens_per_s" else "ms"
            num = (lambda x: f"{x:,.0f}") if unit == "tok/s" else (lambda x: f"{x:.1f}")
            out.append(
                {
                    "id": r.id,
                    "GPU": f"{r.tp} x {r.gpu}",
                    "model": r.model,
                    "w/kv": f"{r.weights}/{r.kv}",
                    "isl/osl": f"{r.isl}/{r.osl}",
                    "load": r.load,
                    "metric": f"{r.metric.split('_')[0]} ({unit})",
                    "batch": f"{p.batch:,}",
                    "measured": num(r.value),
                    "predicted": num(p.value),
                    "ratio": f"{p.value / r.value:.2f}",
                    "calibrated": f"{c / r.value:.2f}",
                    "held out": f"{h / r.value:.2f}",
                }
            )
        return out

    def markdown(self) -> str:
        """The table as Markdown (ratios are predicted / measured)."""
        t = self.table()
        head = list(t[0])
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(row[k] for k in head) + " |" for row in t]
        return "\n".join(lines)


def validate(rows: Sequence[Measurement] | None = None, *, assumptions: Assumptions | str | None = None) -> Validation:
    """Predict every row under ``assumptions`` (the course's method by default, at its own
    efficiencies), fit the two global efficiencies on all rows, and predict each row again with
    factors fitted on the other rows (leave one out).

    Examples
    --------
    >>> v = validate()
    >>> v.stats("default").n, v.assumptions.name
    (26, 'course')
    """
    d = dataset(rows, assumptions=assumptions)
    search = _Search(d.comps, d.measured, *GRID)
    fit = search.fit()
    held, fits = _leave_one_out(search)
    return Validation(
        rows=d.rows,
        comps=d.comps,
        assumptions=d.assumptions,
        default=tuple(predict(r, assumptions=d.assumptions) for r in d.rows),
        fit=fit,
        calibrated=tuple(d.at(fit.bandwidth_efficiency, fit.compute_efficiency)),
        held_out=tuple(held),
        held_out_fits=tuple(fits),
    )


# ==================================================================================================
# Measured files at a concurrency: load them, predict them through replica(), error by family
# ==================================================================================================
# The closed loops' symbols and formulas (closed_loop_prefill_wait, closed_loop_wave_wait, closed_loop_ttft,
# closed_loop_throughput, closed_loop_request_time) are defined in llmcourse/formulas_validation.py.
_wait_s = _scalar(
    "closed_loop_prefill_wait", "prefill_time", "step_time", "time_per_token", "answer_tokens", "concurrency"
)
_wave_s = _scalar("closed_loop_wave_wait", "wave_share", "concurrency", "prefill_time")
_ttft_s = _scalar("closed_loop_ttft", "prefill_time", "step_time", "prefill_wait", "wave_wait")
_loop_rate_s = _scalar("closed_loop_throughput", "concurrency", "answer_tokens", "ttft", "time_per_token")
_tpot_s = _scalar("interleaved_tpot", "step_time", "prefill_time", "batch", "answer_tokens")


# --- parallel layouts beyond tensor parallelism -------------------------------------------------
#: The keyword of :func:`llmcourse.planner.replica` each parallel layout of a row needs.
LAYOUT_KEYWORDS = {"pp": "pipeline_parallel", "ep": "expert_parallel", "attention_dp": "data_parallel"}
#: The layouts predictions pass to :func:`~llmcourse.planner.replica` (the others' rows are skipped
#: with :data:`LAYOUT_REASON`); switch one on here once ``replica()`` has its keyword.
ENABLED_LAYOUTS: frozenset[str] = frozenset({"pp", "ep", "attention_dp"})
LAYOUT_REASON = "needs pipeline/expert/attention-data parallelism"


@functools.cache
def _replica_keywords() -> frozenset[str]:
    return frozenset(inspect.signature(replica).parameters)  # read once: inspect is slow, the signature fixed


def layout_gap(row: Measurement) -> str | None:
    """Why the one replica model cannot express a row's parallel layout yet (``None`` if it can): a
    pipeline, expert or attention-data parallel size above 1 whose layout is not switched on in
    :data:`ENABLED_LAYOUTS`, or whose keyword :func:`~llmcourse.planner.replica` lacks.

    Examples
    --------
    >>> r = measurements()[0]
    >>> layout_gap(r) is None, layout_gap(dataclasses.replace(r, ep=8))
    (True, None)
    """
    need = [k for k in LAYOUT_KEYWORDS if getattr(row, k) > 1]
    have = _replica_keywords()
    missing = [k for k in need if k not in ENABLED_LAYOUTS or LAYOUT_KEYWORDS[k] not in have]
    if not missing:
        return None
    return f"{LAYOUT_REASON} ({', '.join(f'{k}={getattr(row, k)}' for k in need)})"


def layout_keywords(row: Measurement) -> dict[str, int]:
    """The keywords of :func:`~llmcourse.planner.replica` for a row's enabled layouts beyond tensor parallelism."""
    return {LAYOUT_KEYWORDS[k]: getattr(row, k) for k in sorted(ENABLED_LAYOUTS) if getattr(row, k) > 1}


# --- prediction of a closed-loop row ----------------------------------------------------------------
def _predict_closed_loop(row: Measurement, rep: Replica, cp: str) -> Prediction:
    """A closed-loop row's metric from its replica at a batch of the concurrency (see :func:`predict`).
    A concurrency above the largest batch whose KV fits at the final context is still predicted at
    that batch (engines page the cache in as sequences grow); :func:`kv_over_capacity` says which."""
    if rep.step is None:
        raise InputError(f"row {row.id}: {rep.reason}")
    s = rep.step
    step_ms, tpot_ms = float(s.step_time.m_as(_MS)), float(rep.tpot.m_as(_MS))
    pre_ms = float(rep.first_prefill.time.m_as(_MS))
    overhead = rep.assumptions.request_overhead_ms
    share = wave_share(row, assumptions=rep.assumptions)
    ttft_ms = _closed_loop_ttft_ms(pre_ms, step_ms, tpot_ms, row.osl, row.concurrency, overhead, share)
    value = {"tpot_ms": tpot_ms, "itl_ms": tpot_ms, "ttft_ms": ttft_ms}.get(row.metric)
    if value is None:  # output tokens per second
        value = _loop_rate_s(row.concurrency, row.osl, ttft_ms / 1e3, tpot_ms / 1e3)
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
    return _ttft_s(p, s, w, _wave_s(share, n, p)) * 1e3 + request_overhead_ms


#: Engines whose default scheduler runs a batch of prefills on its own, between decode steps, so that every
#: decoding request waits each prefill whole: a closed loop's waves stay whole (wave share 1, not fitted).
#: SGLang: chunked prefill, but its mixed chunks (``--enable-mixed-chunk``) are off by default. vLLM and
#: TensorRT-LLM put prefill chunks into the decode steps (in-flight batching): their share is the assumptions'
#: ``closed_loop_wave_share``.
SEPARATE_PREFILL_ENGINES = ("SGLang",)


def wave_share(row: Measurement, *, assumptions: Assumptions | str | None = None) -> float:
    """The wave share of a closed-loop row (formula ``closed_loop_wave_wait``): 1 for an engine of
    :data:`SEPARATE_PREFILL_ENGINES`, else the assumptions' ``closed_loop_wave_share`` (the course's by default).

    Examples
    --------
    >>> rows = silicon().rows
    >>> [wave_share(next(r for r in rows if r.engine.startswith(e))) for e in ("SGLang", "vLLM", "TensorRT-LLM")]
    [1.0, 0.14, 0.14]
    """
    if row.engine.split(" ")[0] in SEPARATE_PREFILL_ENGINES:
        return 1.0
    return float(resolve(assumptions).closed_loop_wave_share)


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

    A new request arrives while a decode step is under way (it waits half a step on average), then
    waits behind the prompts of the other ``n_c - 1`` requests being prefilled, then is prefilled.
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


# --- reading measured files -----------------------------------------------------------------------
#: The formats :func:`load_measurements` reads, for its messages.
FORMATS = {
    "course": "the course's CSV (the columns of llmcourse/data/measurements.csv: id, gpu, tp, model, weights, kv, "
    "engine, isl, osl, load_kind, metric, value; and concurrency, pp, attention_dp, ep for a closed loop)",
    "aiconfigurator": "aiconfigurator's silicon CSV (model_path, system, backend, isl, osl, tp_size, ..., "
    "silicon_ttft_ms, silicon_tpot_ms)",
    "vllm": "the JSON of `vllm bench serve --save-result` (one result, a list of them, or one per line)",
}
DISAGGREGATED_REASON = (
    "disaggregated: separate prefill and decode pools, predicted by llmcourse.disagg (chapter Disaggregated serving) "
    "where the row gives both pools' workers and batches"
)
#: Models whose attention the planner has no term for, with the reason; ``max_context`` (if given)
#: is the longest context at which the catalog's row is still exact (GLM-5's sparse attention picks
#: 2,048 past tokens, so it attends to all of them up to there).
ARCHITECTURE_GAPS: dict[str, tuple[str, int | None]] = {
    "Qwen3.5-397B-A17B": (
        "hybrid linear attention (45 of 60 layers are Gated DeltaNet, a fixed recurrent state per sequence): "
        "the planner has no term for it",
        None,
    ),
    "GLM-5": (
        "DeepSeek sparse attention (each query attends to 2,048 selected past tokens) at a context above 2,048 "
        "tokens: the planner has no term for it",
        2_048,
    ),
}
#: aiconfigurator's quantization modes as the course's precisions.
_QUANT = {"fp8": "fp8", "fp8_block": "fp8", "nvfp4": "fp4", "int4_wo": "int4", "bf16": "bf16", "fp16": "fp16"}
_PRECISION = {"fp8": "fp8", "fp4": "fp4", "int4": "int4", "bf16": "bf16", "fp16": "fp16", "int8": "int8"}
_ENGINES = {"trtllm": "TensorRT-LLM", "tensorrt-llm": "TensorRT-LLM", "sglang": "SGLang", "vllm": "vLLM"}
_COURSE_REQUIRED = ("id", "gpu", "tp", "model", "weights", "kv", "engine", "isl", "osl", "load_kind", "metric", "value")
_AIC_REQUIRED = (
    "id", "backend", "model_path", "system", "mode", "isl", "osl", "tp_size", "pp_size", "attention_dp_size",
    "moe_ep_size", "silicon_ttft_ms", "silicon_tpot_ms",
)  # fmt: skip


@dataclass(frozen=True)
class Skipped:
    """A row of a measured file that the course cannot express, with where it is and why."""

    line: int
    id: str
    reason: str

    def __str__(self) -> str:
        return f"row {self.line}" + (f" ({self.id})" if self.id else "") + f": {self.reason}"


@dataclass(frozen=True)
class Loaded:
    """What :func:`load_measurements` read: the rows it can express and, separately, those it cannot."""

    format: str
    rows: tuple[Measurement, ...]
    skipped: tuple[Skipped, ...]
    source: str = ""

    def reasons(self) -> dict[str, int]:
        """How many rows were skipped for each reason (the text before any parenthesis or colon detail)."""
        out: dict[str, int] = {}
        for sk in self.skipped:
            key = sk.reason.split(" (")[0] if sk.reason.startswith(LAYOUT_REASON) else sk.reason
            if sk.reason.startswith(REPEAT_REASON.split(" row ")[0]):
                key = REPEAT_REASON.replace("row {line} ({id})", "an earlier row")
            out[key] = out.get(key, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def report(self) -> str:
        """One line per skipped row, after a count of what was read."""
        head = f"{self.source or 'input'} ({FORMATS[self.format].split(' (')[0]}): {len(self.rows)} measurements read"
        return "\n".join([head + f", {len(self.skipped)} rows skipped", *map(str, self.skipped)])


class _RowError(Exception):
    """A reason a row cannot be expressed (caught per row; never leaves this module)."""


def _cell(r: dict[str, Any], col: str) -> str:
    if col not in r or r[col] is None:
        raise _RowError(f"missing column {col!r}")
    text = str(r[col]).strip()
    if not text:
        raise _RowError(f"column {col!r} is empty")
    return text


def _number(r: dict[str, Any], col: str) -> float:
    text = _cell(r, col)
    try:
        x = float(text)
    except ValueError:
        raise _RowError(f"column {col!r}: {text!r} is not a number") from None
    if not math.isfinite(x) or x <= 0:
        raise _RowError(f"column {col!r} must be a number above zero; got {text}")
    return x


def _whole(r: dict[str, Any], col: str, default: int | None = None) -> int:
    if default is not None and (col not in r or r[col] is None or not str(r[col]).strip()):
        return default
    text = _cell(r, col)
    try:
        x = float(text)
    except ValueError:
        raise _RowError(f"column {col!r}: {text!r} is not a whole number") from None
    if x != int(x):
        raise _RowError(f"column {col!r}: {text!r} is not a whole number")
    if x < 1:
        what = "requests in flight" if "concurrency" in col or col == "batch_size" else "a size"
        raise _RowError(f"column {col!r} must be at least 1 ({what}); got {text}")
    return int(x)


def _model_name(text: str) -> str:
    """A catalog model name from a file's model field (a Hugging Face id such as
    ``nvidia/DeepSeek-R1-NVFP4``: the organisation and a quantization suffix dropped)."""
    name = text.strip().rstrip("/").split("/")[-1]
    for suffix in ("-NVFP4", "-FP8", "-FP4", "-AWQ", "-GPTQ", "-INT4"):
        if name.upper().endswith(suffix):
            name = name[: -len(suffix)]
    if name in ARCHITECTURE_GAPS and ARCHITECTURE_GAPS[name][1] is None:
        raise _RowError(f"{name}: {ARCHITECTURE_GAPS[name][0]}")
    try:
        return models[name].name
    except UnknownNameError as exc:
        raise _RowError(str(exc).split(" Known:")[0]) from None


def _gpu_name(text: str) -> str:
    try:
        return gpus[text.strip()].name
    except UnknownNameError as exc:
        raise _RowError(str(exc).split(" Known:")[0]) from None


def _precision(text: str, col: str) -> str:
    key = text.strip().lower()
    if key in _QUANT:
        return _QUANT[key]
    if key in _PRECISION:
        return _PRECISION[key]
    raise _RowError(f"column {col!r}: precision {text!r} unknown; use one of {', '.join(sorted(_PRECISION))}")


def _context_gap(model: str, isl: int, osl: int) -> None:
    gap = ARCHITECTURE_GAPS.get(model)
    if gap is not None and gap[1] is not None and isl + osl > gap[1]:
        raise _RowError(f"{model}: {gap[0]}")


def _engine(text: str, version: str = "") -> str:
    name = _ENGINES.get(text.strip().lower(), text.strip())
    return f"{name} {version.strip()}".strip()


def _read_course(records: list[dict[str, str]]) -> tuple[list[Measurement], list[Skipped]]:
    rows, skipped = [], []
    for k, r in enumerate(records):
        line, rid = k + 2, (r.get("id") or "").strip()
        try:
            for col in _COURSE_REQUIRED:
                _cell(r, col)
            metric, kind = _cell(r, "metric"), _cell(r, "load_kind")
            if metric not in METRICS:
                raise _RowError(f"metric {metric!r} unknown; use one of {', '.join(METRICS)}")
            if kind not in LOAD_KINDS:
                raise _RowError(f"load_kind {kind!r} unknown; use one of {', '.join(LOAD_KINDS)}")
            model, gpu = _model_name(_cell(r, "model")), _gpu_name(_cell(r, "gpu"))
            tp, pp = _whole(r, "tp"), _whole(r, "pp", 1)
            dp, ep = _whole(r, "attention_dp", 1), _whole(r, "ep", 1)
            isl, osl = _whole(r, "isl"), _whole(r, "osl")
            _context_gap(model, isl, osl)
            conc = _whole(r, "concurrency") if kind == "concurrency" else None
            m = Measurement(
                id=rid,
                source=(r.get("source") or "").strip(),
                gpu=gpu,
                n_gpus=_whole(r, "n_gpus", tp * pp * dp),
                tp=tp,
                model=model,
                weights=_precision(_cell(r, "weights"), "weights"),
                kv=_precision(_cell(r, "kv"), "kv"),
                engine=_cell(r, "engine"),
                isl=isl,
                osl=osl,
                load=(r.get("load") or "").strip(),
                load_kind=kind,
                metric=metric,
                value=_number(r, "value"),
                unit=(r.get("unit") or "").strip() or METRICS[metric],
                notes=(r.get("notes") or "").strip(),
                concurrency=conc,
                pp=pp,
                attention_dp=dp,
                ep=ep,
            )
            gap = layout_gap(m)
            if gap is not None:
                raise _RowError(gap)
            rows.append(m)
        except (_RowError, InputError) as exc:
            skipped.append(Skipped(line, rid, str(exc).removeprefix(f"row {rid}: ")))
    return rows, skipped


_CONCURRENCY = re.compile(r"silicon_concurrency=(\d+)")


def _aic_weights(r: dict[str, str], model: str) -> tuple[str, str]:
    """(weights, note) of an aiconfigurator row: the GEMM quantization (the experts' for a MoE model,
    whose weights are mostly experts), else the precision column, else the checkpoint's own."""
    moe = models[model].is_moe
    for col in ("moe_quant_mode", "gemm_quant_mode") if moe else ("gemm_quant_mode",):
        if (r.get(col) or "").strip():
            return _precision(r[col], col), ""
    if (r.get("precision") or "").strip():
        return _precision(r["precision"], "precision"), ""
    own = models[model].weight_dtype
    return own, f"precision not given: the checkpoint's own ({own})"


def _aic_kv(engine_key: str, weights: str) -> str:
    """The KV-cache precision the course assumes for an aiconfigurator row (the file does not give one):
    FP8 where TensorRT-LLM runs FP8 or FP4 weights, else BF16.
    ``engine_key`` is the row's ``backend`` in lower case. Shared by the aggregated rows here and the
    disaggregated rows of :func:`llmcourse.disagg.measured_rows`."""
    return "fp8" if engine_key == "trtllm" and weights in ("fp8", "fp4") else "bf16"


#: The reason a row repeats an earlier one (aiconfigurator's file publishes some runs twice, under two ids).
REPEAT_REASON = "the same measurement as row {line} ({id}): the same setup and the same times, published more than once"


def _first_of(seen: dict[Any, tuple[int, str]], same: Any, line: int, rid: str) -> None:
    """Record row ``line`` (id ``rid``) as the first with ``same`` (its setup and times), or raise the
    :data:`REPEAT_REASON` naming the row that had them first (shared by the aggregated and disaggregated readers)."""
    if same in seen:
        first, first_id = seen[same]
        raise _RowError(REPEAT_REASON.format(line=first, id=first_id))
    seen[same] = (line, rid)


def _read_aiconfigurator(records: list[dict[str, str]], kv: str | None) -> tuple[list[Measurement], list[Skipped]]:
    rows, skipped = [], []
    seen: dict[tuple, tuple[int, str]] = {}  # a row's setup and times -> the first row that had them
    for k, r in enumerate(records):
        line, rid = k + 2, (r.get("id") or "").strip()
        try:
            for col in _AIC_REQUIRED:
                if col not in r:
                    raise _RowError(f"missing column {col!r}")
            if _cell(r, "mode") == "disagg":
                raise _RowError(DISAGGREGATED_REASON)
            model, gpu = _model_name(_cell(r, "model_path")), _gpu_name(_cell(r, "system"))
            isl, osl = _whole(r, "isl"), _whole(r, "osl")
            _context_gap(model, isl, osl)
            tp, pp, dp = _whole(r, "tp_size"), _whole(r, "pp_size", 1), _whole(r, "attention_dp_size", 1)
            ep = 1
            if models[model].is_moe and (r.get("moe_ep_size") or "").strip() not in ("", "0"):
                ep = _whole(r, "moe_ep_size")
            found = _CONCURRENCY.search(r.get("silicon_data_source") or "")
            if found:
                conc = int(found.group(1))
                if conc < 1:
                    raise _RowError(f"silicon_concurrency must be at least 1 request in flight; got {conc}")
            else:
                conc = _whole(r, "batch_size") * dp
            weights, note = _aic_weights(r, model)
            engine_key = _cell(r, "backend").lower()
            kv_ = kv or _aic_kv(engine_key, weights)
            values = {"ttft_ms": _number(r, "silicon_ttft_ms"), "tpot_ms": _number(r, "silicon_tpot_ms")}
            base = dict(
                source=f"ai-dynamo/aiconfigurator silicon_sample.csv @095f58a: {rid}",
                gpu=gpu,
                n_gpus=tp * pp * dp,
                tp=tp,
                model=model,
                weights=weights,
                kv=kv_,
                engine=_engine(engine_key, r.get("backend_version") or ""),
                isl=isl,
                osl=osl,
                load=f"concurrency {conc}",
                load_kind="concurrency",
                unit="ms",
                notes=note,
                concurrency=conc,
                pp=pp,
                attention_dp=dp,
                ep=ep,
            )
            made = [Measurement(id=f"{rid}:{m.split('_')[0]}", metric=m, value=v, **base) for m, v in values.items()]
            gap = layout_gap(made[0])
            if gap is not None:
                raise _RowError(gap)
            same = (tuple(v for key, v in base.items() if key not in ("source", "notes")), tuple(values.values()))
            _first_of(seen, same, line, rid)
            rows += made
        except (_RowError, InputError) as exc:
            skipped.append(Skipped(line, rid, str(exc)))
    return rows, skipped


def _json_records(text: str) -> list[Any]:
    text = text.strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        try:  # --append-result writes one JSON object per line
            data = [json.loads(x) for x in text.splitlines() if x.strip()]
        except json.JSONDecodeError as exc:
            raise InputError(f"the text starts like JSON but is not valid JSON ({exc}).") from None
    return data if isinstance(data, list) else [data]


def _is_vllm(rec: Any) -> bool:
    return isinstance(rec, dict) and any(k in rec for k in ("mean_tpot_ms", "mean_ttft_ms", "output_throughput"))


def _read_vllm(records: list[Any], given: dict[str, Any]) -> tuple[list[Measurement], list[Skipped]]:
    """``vllm bench serve --save-result`` results. The JSON names the model, the lengths (through
    its token totals) and the concurrency; the GPU, the tensor-parallel size and the precisions come
    from ``--metadata gpu=... tp=... weights=... kv=...`` keys in the JSON or from the keywords of
    :func:`load_measurements`."""
    rows, skipped = [], []
    metrics = {"mean_ttft_ms": "ttft_ms", "mean_tpot_ms": "tpot_ms", "mean_itl_ms": "itl_ms"}
    for k, rec in enumerate(records):
        line = k + 1
        rid = f"vllm#{line}"
        try:
            if not _is_vllm(rec):
                raise _RowError("not a vllm bench serve result (no mean_tpot_ms, mean_ttft_ms or output_throughput)")
            r = {**{k_: v for k_, v in given.items() if v is not None}, **rec}

            def pick(*keys: str, r: dict[str, Any] = r) -> Any:
                return next((r[x] for x in keys if r.get(x) not in (None, "")), None)

            model = _model_name(str(pick("model_id", "model") or ""))
            gpu_text = pick("gpu")
            if gpu_text is None:
                raise _RowError(
                    "no GPU named: give load_measurements(..., gpu='H100') or run vllm bench serve with "
                    "--metadata gpu=H100"
                )
            gpu = _gpu_name(str(gpu_text))
            rate = r.get("request_rate", "inf")
            conc = r.get("max_concurrency")
            if conc is None:
                if str(rate) != "inf":
                    raise _RowError(
                        f"an open-loop request rate ({rate}/s) without --max-concurrency: the queueing simulator "
                        "predicts that, not this closed-loop model; rerun with --max-concurrency"
                    )
                raise _RowError(
                    "no --max-concurrency and an unlimited request rate: a burst of every prompt at once, not a "
                    "steady concurrency; rerun with --max-concurrency"
                )
            conc = _whole({"max_concurrency": conc}, "max_concurrency")
            tp = _whole({"tp": pick("tensor_parallel_size", "tensor_parallel", "tp") or 1}, "tp")
            done = _number({"completed": r.get("completed")}, "completed")
            isl = pick("random_input_len", "input_len") or round(_number(r, "total_input_tokens") / done)
            osl = pick("random_output_len", "output_len") or round(_number(r, "total_output_tokens") / done)
            isl, osl = _whole({"isl": isl}, "isl"), _whole({"osl": osl}, "osl")
            _context_gap(model, isl, osl)
            w = pick("weights", "dtype", "quantization")
            weights = _precision(str(w), "weights") if w is not None else models[model].weight_dtype
            kv_text = str(pick("kv", "kv_cache_dtype") or "auto")
            kv_ = "bf16" if kv_text.lower() == "auto" else _precision(kv_text, "kv")
            base = dict(
                source=f"vllm bench serve result {line}" + (f" ({r['date']})" if r.get("date") else ""),
                gpu=gpu,
                n_gpus=tp,
                tp=tp,
                model=model,
                weights=weights,
                kv=kv_,
                engine=_engine(str(pick("engine") or "vllm"), str(pick("engine_version") or "")),
                isl=isl,
                osl=osl,
                load=f"concurrency {conc}",
                load_kind="concurrency",
                notes="" if w is not None else f"precision not given: the checkpoint's own ({weights})",
                concurrency=conc,
            )
            made = [
                Measurement(id=f"{rid}:{m.split('_')[0]}", metric=m, value=_number(r, key), unit="ms", **base)
                for key, m in metrics.items()
                if r.get(key) not in (None, "")
            ]
            if r.get("output_throughput") not in (None, ""):
                made.append(
                    Measurement(
                        id=f"{rid}:throughput",
                        metric="output_tokens_per_s",
                        value=_number(r, "output_throughput"),
                        unit="1/s",
                        **base,
                    )
                )
            rows += made
        except (_RowError, InputError) as exc:
            skipped.append(Skipped(line, rid, str(exc)))
    return rows, skipped


def parse_measurements(
    text: str,
    *,
    source: str = "pasted text",
    gpu: str | None = None,
    tensor_parallel: int | None = None,
    weights: str | None = None,
    kv: str | None = None,
    engine: str | None = None,
) -> Loaded:
    """Read measured rows from text in any of :data:`FORMATS` (what the live calculator is pasted).

    The keywords fill what a format does not say: the GPU, tensor-parallel size, precisions and
    engine of a ``vllm bench serve`` result (its ``--metadata`` keys win), and ``kv`` the KV-cache
    precision of aiconfigurator rows, which the file does not give (by default FP8 for TensorRT-LLM
    with FP8 or FP4 weights, whose quantized checkpoints store the cache in FP8, else BF16, the
    engines' default).

    Examples
    --------
    >>> head = "id,gpu,tp,model,weights,kv,engine,isl,osl,load_kind,concurrency,metric,value"
    >>> got = parse_measurements(head + "\\nA,H100,1,Llama-3.1-8B,bf16,bf16,vLLM,1000,100,concurrency,8,tpot_ms,9.5"
    ...                          "\\nB,H100,1,Llama-3.1-8B,bf16,bf16,vLLM,1000,100,concurrency,0,tpot_ms,9.5")
    >>> got.format, [r.id for r in got.rows], [str(s) for s in got.skipped]
    ('course', ['A'], ["row 3 (B): column 'concurrency' must be at least 1 (requests in flight); got 0"])
    """
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{source} is empty: give {', '.join(FORMATS.values())}.")
    body = text.lstrip("\ufeff").strip()
    if body[:1] in "[{":
        recs = _json_records(body)
        if recs and all(_is_vllm(x) for x in recs[:1]):
            given = dict(gpu=gpu, tp=tensor_parallel, weights=weights, kv=kv, engine=engine)
            rows, skipped = _read_vllm(recs, given)
            return Loaded("vllm", tuple(rows), tuple(skipped), source)
    else:
        reader = csv.DictReader(body.splitlines())
        head = set(reader.fieldnames or ())
        if {"silicon_tpot_ms", "model_path"} <= head or {"silicon_ttft_ms", "model_path"} <= head:
            rows, skipped = _read_aiconfigurator(list(reader), kv)
            return Loaded("aiconfigurator", tuple(rows), tuple(skipped), source)
        if {"metric", "value"} <= head:
            rows, skipped = _read_course(list(reader))
            return Loaded("course", tuple(rows), tuple(skipped), source)
    raise InputError(f"{source}: not a format this package reads; it reads {'; '.join(FORMATS.values())}.")


def load_measurements(path: str | Path, **given: Any) -> Loaded:
    """Read a measured file in any of :data:`FORMATS`: the rows the course can express, and each row it
    cannot with its row number and the reason (a missing column, an unknown model or GPU with a
    "did you mean", text where a number belongs, a concurrency of 0, a disaggregated run, a parallel
    layout or an architecture the planner has no term for). See :func:`parse_measurements` for the
    keywords.

    Examples
    --------
    >>> got = load_measurements(AICONFIGURATOR)
    >>> got.format, len(got.rows) > 3_000, got.skipped[0].reason.split(" (")[0]
    ('aiconfigurator', True, 'disaggregated: separate prefill and decode pools, predicted by llmcourse.disagg')
    """
    if isinstance(path, Path) or (isinstance(path, str) and "\n" not in path):
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError(f"no file at {str(p)!r}: give the path to a measured CSV or vllm JSON.") from None
        return parse_measurements(text, source=p.name, **given)
    raise InputError("load_measurements takes a path; for text, use parse_measurements(text).")


#: The measured rows shipped with the package (ai-dynamo/aiconfigurator, Apache-2.0; see llmcourse/data/README.md).
AICONFIGURATOR = Path(str(resources.files("llmcourse.data").joinpath("aiconfigurator-silicon.csv")))


def silicon() -> Loaded:
    """The aiconfigurator rows shipped with the package, read by :func:`load_measurements` (cached)."""
    global _SILICON
    if _SILICON is None:
        _SILICON = load_measurements(AICONFIGURATOR)
    return _SILICON


_SILICON: Loaded | None = None


# --- the fast path of a closed-loop row ---------------------------------------------------------
@dataclass(frozen=True)
class LoadComponents:
    """A closed-loop configuration's replica model as times at 100% efficiency (ms), so that a fit
    can try many values of :data:`FIT_PARAMETERS` without calling the replica model again.

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

    def tpot(
        self,
        bandwidth_efficiency: float,
        compute_efficiency: float,
        step_overhead_ms: float,
        closed_loop_wave_share: float | None = None,
        request_overhead_ms: float | None = None,
    ) -> float:
        """Time per output token (ms): the first of :meth:`times`, on its own (what a fit needs most; the wave
        share and the per-request overhead change only the time to first token)."""
        return self._step_tpot(bandwidth_efficiency, compute_efficiency, step_overhead_ms)[1]

    def _step_tpot(self, eb: float, ef: float, step_overhead_ms: float) -> tuple[float, float]:
        """(decode step, time per output token), in ms, at bandwidth and compute efficiencies ``eb`` and ``ef``:
        the step plus the other requests' prefills between its steps (formula ``interleaved_tpot``)."""
        step = max(self.decode_memory_ms / eb, self.decode_compute_ms / ef) + step_overhead_ms + self.step_extra_ms
        if not self.interference:
            return step, step
        batch = max(self.batch_prefill_compute_ms / ef, self.batch_prefill_memory_ms / eb) + self.batch_prefill_extra_ms
        return step, _tpot_s(step, batch, self.concurrency, self.osl)

    def times(
        self,
        bandwidth_efficiency: float,
        compute_efficiency: float,
        step_overhead_ms: float,
        closed_loop_wave_share: float | None = None,
        request_overhead_ms: float | None = None,
    ) -> tuple:
        """(time per output token, time to first token, decode step), in ms; the wave share and the
        per-request overhead are the configuration's own (the assumptions') when not given, and the wave
        share 1 whatever is given for an engine of :data:`SEPARATE_PREFILL_ENGINES`."""
        first, step, tpot, wait = self.queue(bandwidth_efficiency, compute_efficiency, step_overhead_ms)
        share = self.share(closed_loop_wave_share)
        over = self.request_overhead_ms if request_overhead_ms is None else request_overhead_ms
        ttft = _closed_loop_ttft_ms(first, step, tpot, self.osl, self.concurrency, over, share, wait)
        return tpot, ttft, step

    def queue(
        self, bandwidth_efficiency: float, compute_efficiency: float, step_overhead_ms: float
    ) -> tuple[float, float, float, float]:
        """(prefill of one prompt ms, decode step ms, time per output token ms, the queue's wait s: formula
        ``closed_loop_prefill_wait``): what the time to first token takes from the step's parameters."""
        eb, ef = bandwidth_efficiency, compute_efficiency
        step, tpot = self._step_tpot(eb, ef, step_overhead_ms)
        first = max(self.prefill_compute_ms / ef, self.prefill_memory_ms / eb) + self.prefill_extra_ms
        return first, step, tpot, _wait_s(first / 1e3, step / 1e3, tpot / 1e3, self.osl, self.concurrency)

    def share(self, closed_loop_wave_share: float | None = None) -> float:
        """The wave share of the configuration's time to first token (see :meth:`times`)."""
        if self.separate_prefill:
            return 1.0
        return self.closed_loop_wave_share if closed_loop_wave_share is None else closed_loop_wave_share


def _config(row: Measurement) -> tuple:
    return (
        row.model, row.gpu, row.tp, row.pp, row.attention_dp, row.ep, row.weights, row.kv, row.isl, row.osl,
        row.concurrency, row.engine.split(" ")[0] in SEPARATE_PREFILL_ENGINES,
    )  # fmt: skip


def load_components(row: Measurement, *, assumptions: Assumptions | str | None = None) -> LoadComponents:
    """The :class:`LoadComponents` of a closed-loop row: one call of the replica model at 100% of both
    peaks under ``assumptions`` (the course's by default). Raises :class:`InputError` with the
    replica model's reason if the weights leave no room for one sequence; a concurrency above the
    largest batch whose KV fits at the final context is split at that batch, with ``fits`` False.

    Examples
    --------
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
    rep = _replica(row, a.replace(bandwidth_efficiency=1.0, compute_efficiency=1.0))
    if rep.step is None:
        raise InputError(f"row {row.id}: {rep.reason}")
    s, first, batch = rep.step, rep.first_prefill, rep.batch_prefill

    def ms(q: pint.Quantity) -> float:
        return float(q.m_as(_MS))

    def extra(p: Any) -> float:
        return ms(p.time) - max(ms(p.compute_time), ms(p.memory_time))

    return LoadComponents(
        concurrency=int(row.concurrency),
        osl=row.osl,
        decode_memory_ms=ms(s.memory_time),
        decode_compute_ms=ms(s.compute_time),
        step_extra_ms=ms(s.step_time) - max(ms(s.memory_time), ms(s.compute_time)) - a.step_overhead_ms,
        batch_prefill_compute_ms=ms(batch.compute_time),
        batch_prefill_memory_ms=ms(batch.memory_time),
        batch_prefill_extra_ms=extra(batch),
        prefill_compute_ms=ms(first.compute_time),
        prefill_memory_ms=ms(first.memory_time),
        prefill_extra_ms=extra(first),
        interference=bool(a.prefill_interference and batch is not None),
        fits=rep.fits,
        request_overhead_ms=a.request_overhead_ms,
        closed_loop_wave_share=a.closed_loop_wave_share,
        separate_prefill=row.engine.split(" ")[0] in SEPARATE_PREFILL_ENGINES,
    )


# --- error by family, held out ---------------------------------------------------------------------
#: The fields of :class:`~llmcourse.assumptions.Assumptions` :func:`evidence` fits, and the grid of each.
FIT_PARAMETERS = (
    "bandwidth_efficiency", "compute_efficiency", "step_overhead_ms", "closed_loop_wave_share", "request_overhead_ms",
)  # fmt: skip
FIT_GRIDS: dict[str, tuple[float, ...]] = {
    "bandwidth_efficiency": tuple(round(0.2 + 0.05 * k, 2) for k in range(17)),  # 0.2 to 1
    "compute_efficiency": tuple(round(0.1 + 0.1 * k, 2) for k in range(10)),  # 0.1 to 1
    "step_overhead_ms": tuple(0.25 * k for k in range(21)),  # 0 to 5 ms
    # 0 to 0.48 by 0.02, then 0.5 to 1 by 0.1 (the shares fitted lie between 0.1 and 0.3)
    "closed_loop_wave_share": tuple(round(0.02 * k, 2) for k in range(25)) + tuple(k / 10 for k in range(5, 11)),
    "request_overhead_ms": tuple(10.0 * k for k in range(31)),  # 0 to 300 ms
}
#: The order the coordinate search moves the parameters in: the per-request overhead before the wave share, because
#: the rows at 1 in flight (no wave) pin the overhead, and a search that moves the share first can stop short of both.
_FIT_ORDER = sorted(enumerate(FIT_PARAMETERS), key=lambda jp: jp[1] == "closed_loop_wave_share")
#: The groups :func:`evidence` holds out in turn (fit on the others, predict the group).
HOLD_OUT = ("model", "gpu", "engine")
#: The families an error table is broken down by.
FACETS = ("engine", "gpu_generation", "architecture", "metric", "concurrency_band", "model", "gpu")
#: The metrics the step's parameters are fitted on (not the time to first token: it holds a fixed cost per
#: request, request_overhead_ms, fitted on its own, that the step's efficiencies must not be bent to stand in for).
FIT_METRICS = ("tpot_ms", "itl_ms")
#: The metrics each of :data:`FIT_PARAMETERS` is fitted on: the step's parameters on the time per token,
#: the wave share and the per-request overhead (which change nothing else) on the time to first token, so
#: that a held-out fold fits both without its group; none: held at the assumptions' value. The compute
#: efficiency is held: a decode step is memory-bound, so the time per token barely sees it (fitted on it, it
#: swung between 0.5 and 1 from fold to fold with the time per token barely changed, halving every prefill),
#: while the times to first token that do see it come close to the course's 0.5 (fitted on them with the wave
#: share: 0.6 on all rows, 0.4 to 0.7 by fold).
FIT_OBJECTIVES: dict[str, tuple[str, ...]] = {
    "bandwidth_efficiency": FIT_METRICS,
    "compute_efficiency": (),
    "step_overhead_ms": FIT_METRICS,
    "closed_loop_wave_share": ("ttft_ms",),
    "request_overhead_ms": ("ttft_ms",),
}
#: A GPU's generation, for the family tables (a GPU not listed is its own family).
GENERATIONS = {
    "H100 SXM": "Hopper", "H100 PCIe": "Hopper", "H200 SXM": "Hopper", "B200": "Blackwell", "GB200": "Blackwell",
    "B300": "Blackwell Ultra", "GB300": "Blackwell Ultra", "A100 SXM 80GB": "Ampere", "A100 SXM 40GB": "Ampere",
    "A10G": "Ampere", "L4": "Ada", "L40S": "Ada", "RTX 4090": "Ada", "MI300X": "CDNA 3", "MI325X": "CDNA 3",
}  # fmt: skip
_BANDS = ((4, "1-4"), (16, "5-16"), (64, "17-64"), (256, "65-256"))
#: Fewest held-out rows a band is drawn from; a family with fewer is widened (see :meth:`Evidence.band`).
MIN_BAND_ROWS = 30
#: Fewest rows a measured model's own band is drawn from: fewer than a kind of model needs, because a model's own
#: rows are more like a setup of it than any kind's; at 20 the 10th and 90th percentiles still lie between its
#: 2nd and 3rd, and its 18th and 19th, rows.
MIN_MODEL_BAND_ROWS = 20


def concurrency_band(concurrency: int | None) -> str:
    """The concurrency family of a row: ``"1-4"``, ``"5-16"``, ``"17-64"``, ``"65-256"`` or ``"257+"``."""
    if concurrency is None:
        return "n/a"
    return next((label for top, label in _BANDS if concurrency <= top), "257+")


def _ordered(facet: str, values: Iterable[str]) -> list[str]:
    """A facet's values in reading order: concurrency bands from the lowest, anything else sorted."""
    if facet == "concurrency_band":
        order = [b for _, b in _BANDS] + ["257+", "n/a"]
        return sorted(values, key=lambda v: order.index(v) if v in order else len(order))
    return sorted(values)


def _facets(row: Measurement) -> dict[str, str]:
    return {
        "engine": row.engine.split(" ")[0],
        "gpu_generation": GENERATIONS.get(row.gpu, row.gpu),
        "architecture": "MoE" if models[row.model].is_moe else "dense",
        "metric": row.metric,
        "concurrency_band": concurrency_band(row.concurrency),
        "model": row.model,
        "gpu": row.gpu,
    }


@dataclass(frozen=True)
class Summary:
    """Error of predictions against measurements: the median of measured / predicted (above 1: the
    prediction is too fast or too optimistic for a time), the median factor ``exp(median |ln|)``,
    the median and mean absolute percentage error, and the share within 2x either way."""

    n: int
    median_ratio: float
    median_factor: float
    median_ape: float
    mape: float
    within_2x: float

    def cells(self) -> list[str]:
        return [
            f"{self.n:,}",
            f"{self.median_ratio:.2f}",
            f"{self.median_factor:.2f}",
            f"{self.median_ape:.0%}",
            f"{self.mape:.0%}",
            f"{self.within_2x:.0%}",
        ]


SUMMARY_HEAD = ["rows", "median measured/predicted", "median factor", "median APE", "MAPE", "within 2x"]


def summarize(predicted: Sequence[float], measured: Sequence[float]) -> Summary:
    """The :class:`Summary` of predictions against measurements (both positive, as many of each).

    Examples
    --------
    >>> s = summarize([1.0, 1.0, 1.0], [2.0, 1.0, 0.25])
    >>> s.median_ratio, s.median_factor, round(s.median_ape, 2), round(s.mape, 2), round(s.within_2x, 2)
    (1.0, 2.0, 0.5, 1.17, 0.67)
    """
    p, m = [float(x) for x in predicted], [float(x) for x in measured]
    if len(p) != len(m) or not p:
        raise InputError("summarize needs as many predictions as measurements, at least one.")
    if not all(x > 0 and y > 0 and math.isfinite(x * y) for x, y in zip(p, m, strict=True)):
        raise InputError("predictions and measurements must be finite and greater than zero.")
    ratio = [y / x for x, y in zip(p, m, strict=True)]
    ape = [abs(x - y) / y for x, y in zip(p, m, strict=True)]
    logs = [abs(math.log(r)) for r in ratio]
    return Summary(
        n=len(p),
        median_ratio=statistics.median(ratio),
        median_factor=math.exp(statistics.median(logs)),
        median_ape=statistics.median(ape),
        mape=statistics.fmean(ape),
        within_2x=sum(x <= math.log(2) + 1e-12 for x in logs) / len(logs),
    )


class _Fitter:
    """Every row's prediction at any value of the fitted parameters, from one :class:`LoadComponents`
    per distinct configuration, cached per parameter value; and the coordinate search."""

    def __init__(self, comps: Sequence[LoadComponents], row_cfg: Sequence[int], rows: Sequence[Measurement]):
        self.comps, self.row_cfg = list(comps), list(row_cfg)
        self.metric = [r.metric for r in rows]
        self.log_meas = [math.log(r.value) for r in rows]
        self.cache: dict[tuple[float, ...], tuple[list[float], list[float]]] = {}
        #: per objective (the metrics of :data:`FIT_OBJECTIVES`): the rows it counts, their position among them
        self._rows: dict[tuple[str, ...], list[int]] = {}
        self._pos: dict[tuple[str, ...], dict[int, int]] = {}
        for metrics in {m for m in FIT_OBJECTIVES.values() if m} | {FIT_METRICS}:
            self._rows[metrics] = [i for i, m in enumerate(self.metric) if m in metrics]
            self._pos[metrics] = {i: k for k, i in enumerate(self._rows[metrics])}
        #: rows the objective of the step's parameters counts (time per token)
        self.fit_rows = self._rows[FIT_METRICS]
        self._errs: dict[tuple, list[float]] = {}
        self._queue: dict[tuple[float, ...], list[tuple]] = {}
        self._ttft_base: dict[tuple[float, ...], list[float]] = {}
        #: each time-to-first-token row as (its configuration's place in sorted order, ln of its measurement)
        cfgs = sorted({self.row_cfg[i] for i in self._rows[("ttft_ms",)]})
        place = {k: j for j, k in enumerate(cfgs)}
        self._ttft_rows = [(place[self.row_cfg[i]], self.log_meas[i]) for i in self._rows[("ttft_ms",)]]

    def _tpot_errors(self, params: tuple[float, ...]) -> list[float]:
        """|ln(predicted / measured)| of the time-per-token rows (the step's parameters alone matter)."""
        key = ("tpot", *params[:3])
        hit = self._errs.get(key)
        if hit is None:
            eb, ef, oh = params[:3]
            tpot = [c.tpot(eb, ef, oh) for c in self.comps]
            rows = self.fit_rows
            hit = self._errs[key] = [abs(math.log(tpot[self.row_cfg[i]]) - self.log_meas[i]) for i in rows]
        return hit

    def _ttft_errors(self, params: tuple[float, ...]) -> list[float]:
        """|ln(predicted / measured)| of the time-to-first-token rows. What the step's parameters give each
        configuration (its prefill, step and queue's wait, and its wave's wait at a share of 1, which the
        share scales: formula ``closed_loop_wave_wait``) is computed once per step parameters, and each
        configuration's time before the per-request overhead once per step parameters and wave share."""
        key = ("ttft", *params)
        hit = self._errs.get(key)
        if hit is None:
            rows = self._rows[("ttft_ms",)]
            base = self._ttft_base.get(params[:4])
            if base is None:
                parts = self._queue.get(params[:3])
                if parts is None:
                    parts = self._queue[params[:3]] = []
                    for k in sorted({self.row_cfg[i] for i in rows}):
                        c = self.comps[k]
                        first, step, _, wait = c.queue(*params[:3])
                        p = first / 1e3
                        wave = _wave_s(1.0, c.concurrency, p)
                        parts.append((k, p, step / 1e3, wait, wave, c.separate_prefill))
                s, f = params[3], _ttft_s
                base = self._ttft_base[params[:4]] = [
                    f(p, st, w, wave if whole else s * wave) * 1e3 for _, p, st, w, wave, whole in parts
                ]
            r, log = params[4], math.log
            log_ttft = [log(t + r) for t in base]  # in the configurations' sorted order, as _ttft_rows
            hit = self._errs[key] = [abs(log_ttft[j] - m) for j, m in self._ttft_rows]
        return hit

    def fit_errors(self, params: tuple[float, ...], metrics: tuple[str, ...] = FIT_METRICS) -> list[float]:
        """|ln(predicted / measured)| at ``params`` of the rows an objective counts (time per token by default)."""
        return self._ttft_errors(params) if metrics == ("ttft_ms",) else self._tpot_errors(params)

    def at(self, params: tuple[float, ...]) -> tuple[list[float], list[float]]:
        """(predictions, |ln(predicted / measured)|) of every row at ``params`` (in :data:`FIT_PARAMETERS` order)."""
        hit = self.cache.get(params)
        if hit is None:
            times = [c.times(*params) for c in self.comps]
            preds = []
            for k, metric in zip(self.row_cfg, self.metric, strict=True):
                tpot, ttft, _ = times[k]
                if metric == "ttft_ms":
                    preds.append(ttft)
                elif metric == "output_tokens_per_s":
                    c = self.comps[k]
                    preds.append(_loop_rate_s(c.concurrency, c.osl, ttft / 1e3, tpot / 1e3))
                else:
                    preds.append(tpot)
            errs = [abs(x) for x in map(operator.sub, map(math.log, preds), self.log_meas)]
            hit = self.cache[params] = (preds, errs)
        return hit

    def objective(self, params: tuple[float, ...], idx: Sequence[int], metrics: tuple[str, ...] = FIT_METRICS) -> float:
        """Median |ln(predicted / measured)| over the positions ``idx`` of the rows ``metrics`` counts."""
        errs = self.fit_errors(params, metrics)
        return statistics.median([errs[i] for i in idx])

    def positions(self, rows: Sequence[int], metrics: tuple[str, ...] = FIT_METRICS) -> list[int]:
        """Positions among the rows ``metrics`` counts of those of ``rows`` it counts."""
        pos = self._pos[metrics]
        return [pos[i] for i in rows if i in pos]

    def fit(self, rows: Sequence[int], start: tuple[float, ...]) -> tuple[float, ...]:
        """Coordinate search on the grids from ``start``: each parameter in turn takes the grid value of
        least median ``|ln(predicted / measured)|`` over those of ``rows`` whose metric is in its
        :data:`FIT_OBJECTIVES`, until none moves (ties keep the current value, then the first grid value);
        a parameter with no objective, or none of whose rows is among ``rows``, keeps its start."""
        idx = {m: self.positions(rows, m) if m else [] for m in set(FIT_OBJECTIVES.values())}
        cur = list(start)
        for _ in range(8):
            moved = False
            for j, name in _FIT_ORDER:
                metrics = FIT_OBJECTIVES[name]
                if not idx[metrics]:
                    continue
                best, best_v = cur[j], self.objective(tuple(cur), idx[metrics], metrics)
                for v in FIT_GRIDS[name]:
                    trial = (*cur[:j], v, *cur[j + 1 :])
                    o = self.objective(trial, idx[metrics], metrics)
                    if o < best_v - 1e-12:
                        best, best_v = v, o
                if best != cur[j]:
                    cur[j], moved = best, True
            if not moved:
                break
        return tuple(cur)


@dataclass(frozen=True)
class Band:
    """An 80% band around a predicted value from the held-out errors of a family of measured rows."""

    value: float
    low: float
    high: float
    n: int
    family: str
    unit: str = ""

    def text(self, what: str = "prediction") -> str:
        """One line: the value, then the band and the family it comes from.

        Examples
        --------
        >>> Band(21.2, 17.04, 27.4, 212, "time per output token, dense models, Hopper GPUs", "ms").text("time per token")
        'time per token 21 ms; 80% of 212 measured setups like this one were between 17 and 27 ms (family: time per output token, dense models, Hopper GPUs)'
        """
        u = f" {self.unit}" if self.unit else ""
        return (
            f"{what} {_figure(self.value)}{u}; 80% of {self.n:,} measured setups like this one were between "
            f"{_figure(self.low)} and {_figure(self.high)}{u} (family: {self.family})"
        )


def _figure(x: float) -> str:
    """A figure as a reader reads it: whole numbers from 10 up (with thousands separators), else two
    significant digits, never an exponent.

    Examples
    --------
    >>> _figure(21.2), _figure(1234.5), _figure(8.46), _figure(0.0123)
    ('21', '1,234', '8.5', '0.012')
    """
    x = float(x)
    if not math.isfinite(x) or x == 0 or abs(x) >= 10:
        return f"{x:,.0f}"
    return f"{x:,.{max(0, 1 - math.floor(math.log10(abs(x))))}f}"


@dataclass(frozen=True)
class Evidence:
    """The measured rows predicted by the one replica model, under the assumptions given, with
    :data:`FIT_PARAMETERS` fitted on all rows and held out by model, GPU and engine."""

    rows: tuple[Measurement, ...]
    assumptions: Assumptions
    predicted: tuple[float, ...]
    fitted: dict[str, float]
    calibrated: tuple[float, ...]
    held_out: dict[str, tuple[float, ...]]
    fold_fits: dict[str, dict[str, dict[str, float]]]
    facets: tuple[dict[str, str], ...]
    not_predicted: tuple[Skipped, ...]
    seconds: dict[str, float]

    def predictions(self, which: str = "predicted") -> tuple[float, ...]:
        """``"predicted"`` (the assumptions' own parameters), ``"calibrated"`` (fitted on every row) or
        ``"held_out_model"``, ``"held_out_gpu"``, ``"held_out_engine"`` (fitted without the row's group)."""
        if which == "predicted":
            return self.predicted
        if which == "calibrated":
            return self.calibrated
        kind = which.removeprefix("held_out_")
        if kind in self.held_out:
            return self.held_out[kind]
        names = ["predicted", "calibrated", *(f"held_out_{k}" for k in self.held_out)]
        raise InputError(f"which must be one of {', '.join(names)}; got {which!r}.")

    def _index(self, family: dict[str, str] | None) -> list[int]:
        fam = family or {}
        bad = [k for k in fam if k not in FACETS]
        if bad:
            raise InputError(f"family facet {bad[0]!r} unknown; use {', '.join(FACETS)}.")
        return [i for i, f in enumerate(self.facets) if all(f[k] == v for k, v in fam.items())]

    def summary(self, which: str = "predicted", family: dict[str, str] | None = None) -> Summary:
        """The :class:`Summary` of one set of predictions over all rows or one family (facet -> value)."""
        preds, idx = self.predictions(which), self._index(family)
        if not idx:
            raise InputError(f"no rows in the family {family}.")
        return summarize([preds[i] for i in idx], [self.rows[i].value for i in idx])

    def metrics(self) -> list[str]:
        """The metrics of the rows: time per output token first, then time to first token, then the others."""
        have = {f["metric"] for f in self.facets}
        return [m for m in ("tpot_ms", "ttft_ms", "itl_ms", "output_tokens_per_s") if m in have]

    def table(
        self, which: str = "predicted", by: Sequence[str] = FACETS[:6], metric: str | None = None
    ) -> list[list[str]]:
        """Rows of [facet, value, *Summary cells] for one metric (errors of different metrics are never
        pooled): all its rows first, then each family of each facet of ``by`` (``"metric"`` skipped).
        ``metric`` may be left out when the rows have only one."""
        if metric is None:
            if len(self.metrics()) != 1:
                raise InputError(f"the rows hold {', '.join(self.metrics())}: give metric=... (one table per metric).")
            metric = self.metrics()[0]
        if metric not in self.metrics():
            raise InputError(f"metric {metric!r}: the rows hold {', '.join(self.metrics())}.")
        base = {"metric": metric}
        out = [["all", "", *self.summary(which, base).cells()]]
        for facet in (f for f in by if f != "metric"):
            for value in _ordered(facet, {f[facet] for f in self.facets if f["metric"] == metric}):
                out.append([facet, value, *self.summary(which, {**base, facet: value}).cells()])
        return out

    def markdown(self, which: str = "predicted", by: Sequence[str] = FACETS[:6], metric: str | None = None) -> str:
        """:meth:`table` as Markdown; with no ``metric``, one table per metric, each under its name."""
        head = ["family", "value", *SUMMARY_HEAD]
        top = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

        def one(m: str) -> str:
            return "\n".join(top + ["| " + " | ".join(r) + " |" for r in self.table(which, by, m)])

        if metric is not None:
            return one(metric)
        return "\n\n".join(f"{METRIC_NAMES[m]} (`{m}`):\n\n{one(m)}" for m in self.metrics())

    def band(self, family: Measurement | dict[str, str], value: float, which: str = "held_out_model") -> Band:
        """An 80% band around ``value`` (a prediction of the family's metric): ``value`` times the 10th
        and 90th percentiles of measured / held-out predicted over the rows of the family. ``family``
        is a row (its facets) or facet -> value (``"metric"`` required); with fewer than
        :data:`MIN_BAND_ROWS` rows, the most specific facets are dropped (``gpu``, ``model``,
        ``concurrency_band``, ``engine``, ``gpu_generation``, ``architecture``) until there are enough.
        """
        fam = _facets(family) if isinstance(family, Measurement) else dict(family)
        if "metric" not in fam:
            raise InputError(f"a band needs the metric in the family (one of {', '.join(METRICS)}).")
        preds = self.predictions(which)
        order = ["gpu", "model", "concurrency_band", "engine", "gpu_generation", "architecture"]
        while True:
            idx = self._index(fam)
            if len(idx) >= MIN_BAND_ROWS or set(fam) == {"metric"}:
                break
            fam.pop(next(k for k in order if k in fam))
        if not idx:
            raise InputError(f"no measured rows of {fam['metric']} to draw a band from.")
        ratios = sorted(self.rows[i].value / preds[i] for i in idx)
        v = float(value)
        label = ", ".join(f"{k} {fam[k]}" for k in FACETS if k in fam)
        return Band(v, v * percentile(ratios, 10), v * percentile(ratios, 90), len(idx), label, METRICS[fam["metric"]])


def evidence(
    rows: Sequence[Measurement] | Loaded | None = None,
    *,
    assumptions: Assumptions | str | None = None,
    hold_out: Sequence[str] = HOLD_OUT,
) -> Evidence:
    """Predict closed-loop rows (the shipped aiconfigurator rows by default) with the one replica
    model under ``assumptions`` (the course's by default); fit :data:`FIT_PARAMETERS` on all of them
    (coordinate search on :data:`FIT_GRIDS`, each parameter to the least median ``|ln(predicted /
    measured)|`` of the rows of its :data:`FIT_OBJECTIVES`: the step's on the time per token, the wave
    share and the per-request overhead on the time to first token, the compute efficiency held) and again without each model, GPU and
    engine in turn, predicting the group held out.

    Each distinct configuration calls the replica model once (:func:`load_components`); every
    prediction at a parameter value is computed once and shared by the fits. Rows the replica model
    cannot predict (weights that leave no room for a sequence) are listed in ``not_predicted``.
    """
    t0 = time.perf_counter()
    a = resolve(assumptions)
    if rows is None:
        rows = silicon()
    src = rows.rows if isinstance(rows, Loaded) else tuple(rows)
    comps: list[LoadComponents] = []
    where: dict[tuple, int | Skipped] = {}
    kept, row_cfg, skipped = [], [], []
    for i, r in enumerate(src):
        key = _config(r)
        if key not in where:
            try:
                where[key] = len(comps)
                comps.append(load_components(r, assumptions=a))
            except InputError as exc:
                where[key] = Skipped(i + 1, r.id, str(exc).removeprefix(f"row {r.id}: "))
        k = where[key]
        if isinstance(k, Skipped):
            skipped.append(Skipped(i + 1, r.id, k.reason))
            continue
        kept.append(r)
        row_cfg.append(k)
    if not kept:
        raise InputError("no row could be predicted: " + (str(skipped[0]) if skipped else "no closed-loop rows given"))
    t1 = time.perf_counter()
    fitter = _Fitter(comps, row_cfg, kept)
    own = tuple(float(getattr(a, p)) for p in FIT_PARAMETERS)
    predicted = fitter.at(own)[0]

    def snap(v: float, grid: tuple[float, ...]) -> float:
        return min(grid, key=lambda g: abs(g - v))

    start = tuple(snap(v, FIT_GRIDS[p]) for v, p in zip(own, FIT_PARAMETERS, strict=True))
    everything = list(range(len(kept)))
    best = fitter.fit(everything, start)
    facets = tuple(_facets(r) for r in kept)
    held: dict[str, tuple[float, ...]] = {}
    folds: dict[str, dict[str, dict[str, float]]] = {}
    for kind in hold_out:
        if kind not in FACETS:
            raise InputError(f"hold_out names {kind!r}; use facets of {', '.join(FACETS)}.")
        out = [math.nan] * len(kept)
        folds[kind] = {}
        for g in sorted({f[kind] for f in facets}):
            train = [i for i, f in enumerate(facets) if f[kind] != g]
            test = [i for i, f in enumerate(facets) if f[kind] == g]
            p = fitter.fit(train, start) if train else start
            folds[kind][g] = dict(zip(FIT_PARAMETERS, p, strict=True))
            preds = fitter.at(p)[0]
            for i in test:
                out[i] = preds[i]
        held[kind] = tuple(out)
    t2 = time.perf_counter()
    return Evidence(
        rows=tuple(kept),
        assumptions=a,
        predicted=tuple(predicted),
        fitted=dict(zip(FIT_PARAMETERS, best, strict=True)),
        calibrated=tuple(fitter.at(best)[0]),
        held_out=held,
        fold_fits=folds,
        facets=facets,
        not_predicted=tuple(skipped),
        seconds={"components": t1 - t0, "fits": t2 - t1, "configurations": float(len(comps))},
    )


_EVIDENCE: Evidence | None = None


def band(family: Measurement | dict[str, str], value: float, *, evidence_: Evidence | None = None) -> Band:
    """An 80% band around a prediction from the held-out (leave-one-model-out) errors of the matching
    family of the shipped measured rows (:meth:`Evidence.band`); the evidence is computed once, on
    first use, under the course's method.

    Examples
    --------
    >>> b = band({"metric": "tpot_ms", "architecture": "dense"}, 21.0)  # doctest: +SKIP
    >>> b.text("time per token")  # doctest: +SKIP
    'time per token 21 ms; 80% of 212 measured setups like this one (...) were between 17 and 27 ms'
    """
    global _EVIDENCE
    ev = evidence_
    if ev is None:
        if _EVIDENCE is None:
            _EVIDENCE = evidence()
        ev = _EVIDENCE
    return ev.band(family, value)


# ==================================================================================================
# The band on every answer, the chapter's tables, and your own benchmark
# ==================================================================================================
_request_time_s = _scalar("closed_loop_request_time", "ttft", "answer_tokens", "time_per_token")

#: The predictions the shipped bands come from: each model's rows predicted with the parameters fitted
#: without that model (leave one model out), so that a band says how far a model not yet measured lands.
BAND_WHICH = "held_out_model"
#: The metrics bands are drawn for (those of the closed-loop rows), and the band's percentiles.
BAND_METRICS = ("tpot_ms", "ttft_ms")
BAND_PERCENTILES = (10, 90)
#: The shipped table of bands, in ``llmcourse/data`` (written by ``scripts/make_bands.py``).
BANDS_FILE = "bands.json"


def gpu_generation(gpu: Any) -> str:
    """A GPU's generation, the family the bands and tables use (a GPU not in :data:`GENERATIONS` is
    its own family).

    Examples
    --------
    >>> gpu_generation("H200"), gpu_generation("B300"), gpu_generation("A10G")
    ('Hopper', 'Blackwell Ultra', 'Ampere')
    """
    name = gpus[getattr(gpu, "name", gpu)].name
    return GENERATIONS.get(name, name)


def architecture(model: Any) -> str:
    """``"MoE"`` for a mixture-of-experts model, else ``"dense"``.

    Examples
    --------
    >>> architecture("Llama-3.1-8B"), architecture("DeepSeek-V3")
    ('dense', 'MoE')
    """
    return "MoE" if models[getattr(model, "name", model)].is_moe else "dense"


def _sig4(x: float) -> float:
    return float(f"{x:.4g}")


def _model_key(metric: str, model: str, generation: str | None = None) -> str:
    """The key of a model's own family in the table of bands: ``"tpot_ms/model=GLM-5"``, and with a GPU
    generation ``"tpot_ms/model=GLM-5/Hopper"``."""
    return f"{metric}/model={model}" + (f"/{generation}" if generation else "")


def band_table(ev: Evidence, which: str = BAND_WHICH) -> dict[str, Any]:
    """The table of 80% bands that ``llmcourse/data/bands.json`` holds, from the evidence given: for each
    metric of :data:`BAND_METRICS`, each metric and architecture, each metric, architecture and GPU
    generation, each metric and measured model, and each metric, model and GPU generation, the 10th, 50th
    and 90th percentiles (4 significant digits) of measured / predicted over the family's rows
    (predictions ``which``, leave-one-model-out by default) and the row count. A family of fewer than
    :data:`MIN_BAND_ROWS` rows (a model's own: :data:`MIN_MODEL_BAND_ROWS`) is left out (a lookup falls back
    to a wider family); the metric's own family is always kept. ``"measured"`` gives, for each metric, every
    model's row count and the GPU generations it was measured on. ``scripts/make_bands.py`` writes it; the
    validation chapter checks that the shipped file equals it.

    Examples
    --------
    >>> rows = [r for r in silicon().rows if r.model == "Llama-3.1-70B" and r.gpu == "H200 SXM"]
    >>> t = band_table(evidence(rows, hold_out=("model",)), which="predicted")  # doctest: +SKIP
    >>> sorted(t["families"])  # doctest: +SKIP
    ['tpot_ms', 'tpot_ms/dense', 'tpot_ms/dense/Hopper', 'ttft_ms', 'ttft_ms/dense', 'ttft_ms/dense/Hopper']
    """
    preds = ev.predictions(which)
    groups: dict[str, list[float]] = {}
    measured: dict[str, dict[str, dict[str, Any]]] = {}
    for row, f, p in zip(ev.rows, ev.facets, preds, strict=True):
        m = f["metric"]
        if m not in BAND_METRICS:
            continue
        arch, gen = f["architecture"], f["gpu_generation"]
        for key in (m, f"{m}/{arch}", f"{m}/{arch}/{gen}", _model_key(m, f["model"]), _model_key(m, f["model"], gen)):
            groups.setdefault(key, []).append(row.value / p)
        seen = measured.setdefault(m, {}).setdefault(f["model"], {"n": 0, "generations": set()})
        seen["n"] += 1
        seen["generations"].add(gen)
    lo, hi = BAND_PERCENTILES
    families = {
        k: {
            "n": len(v),
            "low": _sig4(percentile(v, lo)),
            "median": _sig4(statistics.median(v)),
            "high": _sig4(percentile(v, hi)),
        }
        for k, v in sorted(groups.items())
        if len(v) >= (MIN_MODEL_BAND_ROWS if "/model=" in k else MIN_BAND_ROWS) or "/" not in k
    }
    return {
        "about": "80% bands of measured / predicted by family (metric, metric/architecture, "
        "metric/architecture/GPU generation, metric/model=name, metric/model=name/GPU generation), written by "
        "scripts/make_bands.py from "
        "llmcourse.validation.evidence(); the validation chapter checks this file against its own evidence.",
        "method": ev.assumptions.name,
        "which": which,
        "percentiles": list(BAND_PERCENTILES),
        "min_rows": MIN_BAND_ROWS,
        "min_model_rows": MIN_MODEL_BAND_ROWS,
        "rows": len(ev.rows),
        "families": families,
        "measured": {
            m: {k: {"n": v["n"], "generations": sorted(v["generations"])} for k, v in sorted(by.items())}
            for m, by in sorted(measured.items())
        },
    }


_SHIPPED_BANDS: dict[str, Any] | None = None


def shipped_bands() -> dict[str, Any]:
    """The table of bands shipped in ``llmcourse/data/bands.json`` (read once)."""
    global _SHIPPED_BANDS
    if _SHIPPED_BANDS is None:
        try:
            text = resources.files("llmcourse.data").joinpath(BANDS_FILE).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError(f"llmcourse/data/{BANDS_FILE} is missing: run scripts/make_bands.py.") from None
        _SHIPPED_BANDS = json.loads(text)
    return _SHIPPED_BANDS


def band_for(metric: str, model: Any, gpu: Any, value: Any = 1.0, *, table: dict[str, Any] | None = None) -> Band:
    """An 80% band around a prediction of ``metric`` (``"tpot_ms"`` or ``"ttft_ms"``) for a model on a
    GPU, from the shipped table (:func:`shipped_bands`, or ``table``): the first family the table has, of
    the metric and, in turn, the model itself on the GPU's generation; the model on every GPU it was
    measured on, if those include the GPU's generation; the model's architecture on the GPU's generation;
    the architecture on any GPU; the metric alone. A measured model's own rows come first: how far the
    replica model misses one model (say, an attention it has no term for) is not how far it misses the
    average of its architecture. But a model's rows from other generations say less about this one than
    its architecture's rows from this one do, so they are used only where the model was measured here too.
    ``value`` is the prediction, in ms or as a time quantity (1 by default: the band is then the ratios).
    Standard library only (it runs in the live book).

    Examples
    --------
    >>> b = band_for("tpot_ms", "Llama-3.1-70B", "H100 SXM", 20.0)
    >>> b.family, b.low < 20.0 < b.high, b.n > 100
    ('time per output token, Llama-3.1-70B, Hopper GPUs', True, True)
    >>> band_for("tpot_ms", "Llama-3.1-8B", "B200").family
    'time per output token, dense models, Blackwell GPUs; Llama-3.1-8B measured on Hopper GPUs only'
    >>> band_for("tpot_ms", "Mixtral-8x7B", "H100 SXM").family
    'time per output token, MoE models, Hopper GPUs; Mixtral-8x7B not measured'
    """
    t = shipped_bands() if table is None else table
    if metric not in BAND_METRICS:
        raise InputError(f"metric {metric!r}: bands are drawn for {', '.join(BAND_METRICS)}.")
    arch, gen = architecture(model), gpu_generation(gpu)
    unit = METRICS[metric]
    if type(value) is Q_ and value._units == parsed_unit(unit)[0]._units:  # in the metric's unit already
        value = float(value._magnitude)  # what the conversion below gives: the magnitude itself
    elif hasattr(value, "to") and hasattr(value, "magnitude"):
        from llmcourse.units import as_quantity  # a time quantity, in the metric's unit

        value = float(to(as_quantity(value, "s", "value"), unit).magnitude)  # to(): the unit parsed once
    v = plain_number(value, "value")
    name, fams, few = METRIC_NAMES[metric], t["families"], t["min_rows"]
    label, who = f"{name}, {arch} models", models[getattr(model, "name", model)].name
    seen = t.get("measured", {}).get(metric, {}).get(who)
    gens = seen["generations"] if seen else []
    on = ", ".join(gens[:-1]) + (" and " if len(gens) > 1 else "") + (gens[-1] if gens else "")
    own = f"{name}, {who}, {on} GPUs (fewer than {t.get('min_model_rows', few)} measured {gen} rows)"
    if seen is None:
        why = f"; {who} not measured"
    elif gen not in gens:
        why = f"; {who} measured on {on} GPUs only"
    else:
        why = f"; only {seen['n']} measured rows of {who}"
    for key, text in (
        (_model_key(metric, who, gen), f"{name}, {who}, {gen} GPUs"),
        (_model_key(metric, who) if gen in gens else None, own),
        (f"{metric}/{arch}/{gen}", f"{label}, {gen} GPUs{why}"),
        (f"{metric}/{arch}", f"{label}, all GPUs (fewer than {few} measured {gen} rows){why}"),
        (metric, f"{name}, all models and GPUs (fewer than {few} measured {arch} rows){why}"),
    ):
        if key in fams:
            f = fams[key]
            return Band(v, v * f["low"], v * f["high"], int(f["n"]), text, unit)
    raise InputError(f"the table of bands has no family of {metric}: run scripts/make_bands.py.")


def _summary_text(s: Summary) -> str:
    return (
        f"median factor {s.median_factor:.2f}, median APE {s.median_ape:.0%}, MAPE {s.mape:.0%}, "
        f"{s.within_2x:.0%} within 2x ({s.n:,} rows; median measured/predicted {s.median_ratio:.2f})"
    )


def _evidence_groups(ev: Evidence, facet: str, metric: str) -> list[str]:
    """The values of ``facet`` among the rows of ``metric``."""
    return sorted({f[facet] for f in ev.facets if f["metric"] == metric})


def held_out_table(ev: Evidence, metric: str) -> list[list[str]]:
    """One row per set of predictions (the assumptions' own, calibrated on every row, and each hold-out)
    of ``metric``: the :class:`Summary` cells and the worst group of at least :data:`MIN_BAND_ROWS` rows
    (by median factor: the group held out, or the model for the first two)."""
    out = []
    for which in ("predicted", "calibrated", *(f"held_out_{k}" for k in ev.held_out)):
        facet = which.removeprefix("held_out_") if which.startswith("held_out_") else "model"
        groups = []
        for g in _evidence_groups(ev, facet, metric):
            s = ev.summary(which, {"metric": metric, facet: g})
            if s.n >= MIN_BAND_ROWS:
                groups.append((s.median_factor, g, s.n))
        worst = max(groups) if groups else None
        cell = f"{facet} {worst[1]}: {worst[0]:.2f} ({worst[2]:,} rows)" if worst else "-"
        out.append([which.replace("_", " "), *ev.summary(which, {"metric": metric}).cells(), cell])
    return out


def held_out_markdown(ev: Evidence, metric: str) -> str:
    """:func:`held_out_table` as Markdown."""
    head = ["predictions", *SUMMARY_HEAD, f"worst group of {MIN_BAND_ROWS}+ rows (median factor)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in held_out_table(ev, metric)])


def parameters_table(ev: Evidence) -> list[list[str]]:
    """One row per parameter of :data:`FIT_PARAMETERS`: its meaning, the metric it is fitted on
    (:data:`FIT_OBJECTIVES`; "held" at the assumptions' value when none), the assumptions' value, the
    value fitted on every row, and the range of the values fitted with each model, GPU or engine held out."""
    from llmcourse.assumptions import MEANING

    out = []
    for p in FIT_PARAMETERS:
        on = ", ".join(f"`{m}`" for m in FIT_OBJECTIVES[p]) or "held"
        row = [f"`{p}`", MEANING[p], on, f"{getattr(ev.assumptions, p):g}", f"{ev.fitted[p]:g}"]
        for kind in ev.fold_fits:
            vals = [f[p] for f in ev.fold_fits[kind].values()]
            row.append(f"{min(vals):g} to {max(vals):g}" if min(vals) != max(vals) else f"{vals[0]:g}")
        out.append(row)
    return out


def parameters_markdown(ev: Evidence) -> str:
    """:func:`parameters_table` as Markdown."""
    head = ["parameter", "meaning", "fitted on", f"{ev.assumptions.name}'s", "fitted on all rows"]
    head += [f"fitted without each {k}" for k in ev.fold_fits]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in parameters_table(ev)])


def end_to_end(ev: Evidence, which: str = "predicted") -> Summary:
    """The :class:`Summary` of each request's end-to-end time (formula ``closed_loop_request_time``: the
    time to first token, then ``osl - 1`` times the time per output token), over the configurations
    measured in both metrics (rows whose ids differ only in the part after the last ``:``).

    Examples
    --------
    >>> stems = sorted({r.id.rsplit(":", 1)[0] for r in silicon().rows if r.model == "Llama-3.1-70B"})[:3]
    >>> rows = [r for r in silicon().rows if r.id.rsplit(":", 1)[0] in stems]
    >>> len(rows), end_to_end(evidence(rows, hold_out=())).n
    (6, 3)
    """
    preds = ev.predictions(which)
    by: dict[str, dict[str, tuple[float, float, int]]] = {}
    for row, p in zip(ev.rows, preds, strict=True):
        if row.metric in ("tpot_ms", "ttft_ms"):
            by.setdefault(row.id.rsplit(":", 1)[0], {})[row.metric] = (row.value, p, row.osl)
    pred, meas = [], []
    for pair in by.values():
        if len(pair) == 2:
            (mt, pt, osl), (mf, pf, _) = pair["tpot_ms"], pair["ttft_ms"]
            pred.append(_request_time_s(pf, osl, pt))
            meas.append(_request_time_s(mf, osl, mt))
    if not pred:
        raise InputError("no configuration is measured in both time to first token and time per output token.")
    return summarize(pred, meas)


#: How :func:`not_predicted_reasons` names the replica model's reasons.
_NOT_PREDICTED = (
    (re.compile(r"^weights .* don't fit"), "the weights do not fit in the GPUs' usable memory"),
    (
        re.compile(r"^tensor_parallel=\d+ does not divide"),
        "the tensor-parallel size does not divide the attention heads",
    ),
    (re.compile(r"^a batch of \d+ needs"), "the concurrency's KV cache does not fit beside the weights"),
)


def not_predicted_reasons(ev: Evidence) -> dict[str, int]:
    """How many measurements the replica model could not predict, for each kind of reason."""
    out: dict[str, int] = {}
    for sk in ev.not_predicted:
        key = next((name for rx, name in _NOT_PREDICTED if rx.search(sk.reason)), sk.reason)
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


# --- your own benchmark ---------------------------------------------------------------------------
#: The most measurements :func:`own_benchmark` fits when asked to bound its work (the live calculator).
OWN_MAX_ROWS = 600
#: The most rows of each kind the report lists one by one (then a count).
OWN_LISTED = 25


@dataclass(frozen=True)
class OwnBenchmark:
    """A reader's measured rows: what was read and skipped (row by row, with the reason), the error of
    the assumptions' own parameters on them, the parameters refitted on them, and the error of the refit
    (see :func:`own_benchmark`)."""

    loaded: Loaded
    evidence: Evidence | None
    not_fitted: tuple[Skipped, ...]
    dropped: int = 0
    error: str = ""
    replan: Replan | None = None

    def rows(self) -> list[tuple[str, str]]:
        """(label, text) rows: the per-row report, then the errors and the refit."""
        got = self.loaded
        head = FORMATS[got.format].split(" (")[0]
        n = len(got.skipped)
        out = [("read", f"{head}: {len(got.rows):,} measurements, {n:,} row{'' if n == 1 else 's'} skipped")]
        out += _listed(
            "skipped", got.skipped, lambda s: (f"skipped: row {s.line}" + (f" ({s.id})" if s.id else ""), s.reason)
        )
        out += _listed("not fitted", self.not_fitted, lambda s: (f"not fitted: {s.id}", s.reason))
        if self.dropped:
            out.append(
                (
                    "not fitted",
                    f"{self.dropped:,} measurements after the first {OWN_MAX_ROWS:,} (the calculator's bound)",
                )
            )
        ev = self.evidence
        if ev is None:
            out.append(("no fit", self.error))
            return out
        out += _listed("not predicted", ev.not_predicted, lambda s: (f"not predicted: {s.id}", s.reason))
        a, names = ev.assumptions, _refitted(ev)
        for m in ev.metrics():
            out.append((f"{a.name}'s method: {METRIC_NAMES[m]}", _summary_text(ev.summary("predicted", {"metric": m}))))
        if names:
            fit = ", ".join(f"{p} {ev.fitted[p]:g} ({a.name}'s {getattr(a, p):g})" for p in names)
            out.append(("refitted parameters", fit))
        else:
            out.append(("refitted parameters", "none: the fit needs time-per-token or first-token rows"))
        for m in ev.metrics():
            out.append((f"refitted: {METRIC_NAMES[m]}", _summary_text(ev.summary("calibrated", {"metric": m}))))
        for kind, folds in ev.fold_fits.items():
            if len(folds) > 1:
                for m in ev.metrics():
                    s = ev.summary(f"held_out_{kind}", {"metric": m})
                    out.append((f"refitted without each {kind}: {METRIC_NAMES[m]}", _summary_text(s)))
        if self.replan is not None:
            out += self.replan.rows()
        return out

    def text(self) -> str:
        """The report as lines of text (what ``python -m llmcourse validate FILE`` prints)."""
        return "\n".join(f"{k}: {v}" for k, v in self.rows())


#: The example brief the own-benchmark calculator and ``validate FILE`` re-plan when the reader gives none: 10
#: requests per second within 2 s to the first token and 50 ms per token (a chat product; change it to yours).
REPLAN_EXAMPLE = {"requests_per_second": 10, "ttft_ms": 2_000, "tpot_ms": 50}


@dataclass(frozen=True)
class Replan:
    """A brief planned for the reader's most-measured setup twice: under the assumptions' own parameters and
    under the parameters refitted on the reader's rows (see :func:`own_benchmark`)."""

    setup: Measurement  # a row of the setup: its model, GPU, tensor-parallel GPUs, precisions and lengths
    brief: Any
    before: Any  # planner.Plan under the assumptions' own parameters
    after: Any  # planner.Plan under the refitted ones

    def rows(self) -> list[tuple[str, str]]:
        b, r = self.brief, self.setup
        ms = lambda q: f"{to(q, 'ms').m:,.0f} ms"  # noqa: E731
        what = (
            f"{to(b.requests_per_second, '1/s').m:g} requests/s of {r.isl:,} + {r.osl:,} tokens within "
            f"{ms(b.ttft_target)} / {ms(b.tpot_target)}, {r.model} ({r.weights}) on {r.tp} x {r.gpu}"
        )

        def one(p: Any) -> str:
            if not p.fits:
                return f"does not fit: {p.reason}"
            met = "targets met" if p.meets_targets else "targets NOT met"
            return f"{p.gpus:,} GPUs, batch {p.batch}, {ms(p.tpot)} per token ({met})"

        name = self.before.replica.assumptions.name.split(" (")[0] if self.before.replica is not None else "the method"
        return [
            ("re-planned", what),
            (f"re-planned, {name}'s parameters", one(self.before)),
            ("re-planned, refitted parameters", one(self.after)),
        ]


def _refitted(ev: Evidence) -> list[str]:
    """The parameters of :data:`FIT_PARAMETERS` the rows of ``ev`` refitted: those with a metric of their
    :data:`FIT_OBJECTIVES` among the rows' (the others keep the assumptions' values)."""
    have = set(ev.metrics())
    return [p for p in FIT_PARAMETERS if have & set(FIT_OBJECTIVES[p])]


def _replan(loop: Sequence[Measurement], ev: Evidence, brief: Any) -> Replan | None:
    """Plan ``brief`` for the setup with the most rows among ``loop``, before and after the refit (None if the
    refit fitted nothing, or the setup's layout is more than tensor parallelism)."""
    if not _refitted(ev):
        return None
    key = lambda r: (r.model, r.gpu, r.tp, r.pp, r.attention_dp, r.ep, r.weights, r.kv, r.isl, r.osl)  # noqa: E731
    counts: dict[tuple, int] = {}
    for r in loop:
        counts[key(r)] = counts.get(key(r), 0) + 1
    top = max(counts, key=lambda k: (counts[k], k[:3]))
    setup = next(r for r in loop if key(r) == top)
    if (setup.pp, setup.attention_dp, setup.ep) != (1, 1, 1):
        return None
    brief = dataclasses.replace(brief, prompt_tokens=setup.isl, answer_tokens=setup.osl)  # the setup's lengths
    before, after = (
        plan(
            setup.model,
            setup.gpu,
            brief,
            tensor_parallel=setup.tp,
            weight_bytes=setup.weights,
            kv_bytes=setup.kv,
            assumptions=a,
        )
        for a in (ev.assumptions, ev.assumptions.replace(**ev.fitted))
    )
    return Replan(setup, brief, before, after)


def _reason_kind(reason: str) -> str:
    """A reason without its numbers: the kind :func:`not_predicted_reasons` names, else the text
    before any detail in parentheses."""
    return next((name for rx, name in _NOT_PREDICTED if rx.search(reason)), reason.split(" (")[0])


def _listed(kind: str, items: Sequence[Skipped], row: Any) -> list[tuple[str, str]]:
    """The first :data:`OWN_LISTED` items one by one, then how many more of each kind of reason."""
    out = [row(s) for s in items[:OWN_LISTED]]
    if len(items) > OWN_LISTED:
        counts: dict[str, int] = {}
        for s in items[OWN_LISTED:]:
            counts[_reason_kind(s.reason)] = counts.get(_reason_kind(s.reason), 0) + 1
        more = "; ".join(f"{n:,}: {k}" for k, n in sorted(counts.items(), key=lambda kv: -kv[1]))
        out.append((f"{kind}: {len(items) - OWN_LISTED:,} more", more))
    return out


def own_benchmark(
    source: Loaded | str | Path,
    *,
    bounded: bool = False,
    assumptions: Assumptions | str | None = None,
    brief: Any = None,
    **given: Any,
) -> OwnBenchmark:
    """Your own benchmark: read measured rows (a :class:`Loaded`, a :class:`~pathlib.Path`, or text in any of
    :data:`FORMATS`; ``given`` as :func:`parse_measurements` takes), predict the closed-loop ones with
    the one replica model under ``assumptions`` (the course's by default), refit :data:`FIT_PARAMETERS`
    on them and hold out each model, GPU and engine that has company (:func:`evidence`). Rows of other
    loads (offline maximum, a fixed rate) are listed as not fitted (:func:`validate` predicts those).
    ``bounded`` fits at most :data:`OWN_MAX_ROWS` measurements (the live calculator's bound). With a
    :class:`~llmcourse.planner.Brief`, the fleet is re-planned for the setup with the most rows (its
    model, GPU, tensor-parallel GPUs, precisions and lengths; the brief's own lengths are replaced by the
    setup's) under the assumptions' parameters and under the refitted ones (:class:`Replan`).

    Text in no format this package reads, or nothing at all, raises :class:`InputError` with the
    formats; a malformed row is listed with its row number and the reason.

    Examples
    --------
    >>> head = "id,gpu,tp,model,weights,kv,engine,isl,osl,load_kind,concurrency,metric,value"
    >>> text = head + "\\nA,H100,1,Llama-3.1-8B,bf16,bf16,vLLM,1000,100,concurrency,8,tpot_ms,9.5\\nB,H100,1,Llama-3.1-8B"
    >>> r = own_benchmark(text)
    >>> dict(r.rows())["skipped: row 3 (B)"]
    "missing column 'weights'"
    >>> [k for k, _ in r.rows()]
    ['read', 'skipped: row 3 (B)', "course's method: time per output token", 'refitted parameters', 'refitted: time per output token']
    """
    return _own_replanned(_own_fitted(source, bounded, assumptions, given), brief)


def _own_fitted(source: Loaded | str | Path, bounded: bool, assumptions: Any, given: dict[str, Any]) -> tuple:
    """What :func:`own_benchmark` works out from the rows alone (read, predicted, refitted), before any brief:
    (the rows read, the closed-loop rows fitted, the rows not fitted, how many dropped, the evidence or None,
    why not)."""
    if isinstance(source, Loaded):
        got = source
    elif isinstance(source, Path):
        got = load_measurements(source, **given)
    else:
        got = parse_measurements(source, **given)
    loop = [r for r in got.rows if r.load_kind == "concurrency"]
    not_fitted = tuple(
        Skipped(
            0,
            r.id,
            f"load {r.load_kind}: the refit takes closed-loop rows (load_kind concurrency); validate() predicts these",
        )
        for r in got.rows
        if r.load_kind != "concurrency"
    )
    dropped = 0
    if bounded and len(loop) > OWN_MAX_ROWS:
        dropped, loop = len(loop) - OWN_MAX_ROWS, loop[:OWN_MAX_ROWS]
    if not loop:
        return got, loop, not_fitted, dropped, None, "no closed-loop row to predict and fit"
    try:
        ev = evidence(loop, assumptions=assumptions)
    except InputError as exc:
        return got, loop, not_fitted, dropped, None, str(exc)
    return got, loop, not_fitted, dropped, ev, None


def _own_replanned(fitted: tuple, brief: Any) -> OwnBenchmark:
    """:func:`own_benchmark` from :func:`_own_fitted`'s answer: the brief re-planned, if one is given."""
    got, loop, not_fitted, dropped, ev, why = fitted
    if ev is None:
        return OwnBenchmark(got, None, not_fitted, dropped, why)
    replan = None
    if brief is not None:
        if not isinstance(brief, Brief):
            raise InputError(f"brief must be a llmcourse.Brief (or None); got {type(brief).__name__}.")
        replan = _replan(loop, ev, brief)
    return OwnBenchmark(got, ev, not_fitted, dropped, replan=replan)


#: The columns :func:`course_csv` writes (the course's format, closed-loop columns included).
COURSE_COLUMNS = (
    "id", "source", "gpu", "n_gpus", "tp", "pp", "attention_dp", "ep", "model", "weights", "kv", "engine", "isl",
    "osl", "load", "load_kind", "concurrency", "metric", "value", "unit", "notes",
)  # fmt: skip


def course_csv(rows: Iterable[Measurement]) -> str:
    """Measurements as text in the course's CSV format (what :func:`parse_measurements` reads back): a
    way to turn rows of any format read into one file of the course's, and to write an example.

    Examples
    --------
    >>> rows = measurements()[:2]
    >>> text = course_csv(rows)
    >>> text.splitlines()[0].split(",")[:5], [r.id for r in parse_measurements(text).rows]
    (['id', 'source', 'gpu', 'n_gpus', 'tp'], ['T1', 'T2'])
    """
    import io

    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(COURSE_COLUMNS)
    for r in rows:
        out.writerow(
            [
                "" if getattr(r, c) is None else f"{getattr(r, c):g}" if c == "value" else getattr(r, c)
                for c in COURSE_COLUMNS
            ]
        )
    return buf.getvalue()


def plan_bands(plan: Any) -> list[tuple[str, str]]:
    """The band rows of a :class:`~llmcourse.planner.Plan` (what ``Plan.rows()`` shows): the time per
    output token and the time to first token, each with the 80% band of its family (:func:`band_for`);
    none for a plan that does not fit or that was made under another method than the bands'.

    Examples
    --------
    >>> from llmcourse.planner import Brief, plan
    >>> p = plan("Llama-3.1-8B", "H100 SXM", Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms")))
    >>> [k for k, _ in plan_bands(p)]
    ['time per token, 80% band', 'first token, 80% band']
    >>> plan_bands(plan("Llama-3.1-8B", "H100 SXM", Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms")), assumptions="planner"))
    []
    """
    if not plan.fits or plan.replica is None or plan.replica.assumptions.name != shipped_bands()["method"]:
        return []
    out = []
    for metric, value, label, what in (
        ("tpot_ms", plan.tpot, "time per token, 80% band", "time per token"),
        ("ttft_ms", plan.ttft, "first token, 80% band", "time to first token"),
    ):
        out.append((label, band_for(metric, plan.model, plan.gpu, value).text(what)))
    return out


def grid_markdown(ev: Evidence, metric: str, rows: str, cols: str, which: str = "predicted") -> str:
    """A Markdown table of one metric: the median measured / predicted of each family of two facets
    (``rows`` down, ``cols`` across), with its row count; a dash where no row was measured.

    Examples
    --------
    >>> stems = sorted({r.id.rsplit(":", 1)[0] for r in silicon().rows if r.model == "Llama-3.1-70B"})[:3]
    >>> ev = evidence([r for r in silicon().rows if r.id.rsplit(":", 1)[0] in stems], hold_out=())
    >>> print(grid_markdown(ev, "tpot_ms", "engine", "concurrency_band").splitlines()[0])
    | engine \\ concurrency_band | 65-256 |
    """
    down = _ordered(rows, {f[rows] for f in ev.facets if f["metric"] == metric})
    across = _ordered(cols, {f[cols] for f in ev.facets if f["metric"] == metric})
    lines = [f"| {rows} \\ {cols} | " + " | ".join(across) + " |", "|" + "---|" * (len(across) + 1)]
    for d in down:
        cells = []
        for c in across:
            fam = {"metric": metric, rows: d, cols: c}
            cells.append(
                f"{ev.summary(which, fam).median_ratio:.2f} ({len(ev._index(fam)):,})" if ev._index(fam) else "-"
            )
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bands_markdown(table: dict[str, Any], *, models: bool = False) -> str:
    """The families of a table of bands (:func:`band_table`, :func:`shipped_bands`) as Markdown: the
    row count and the 10th, 50th and 90th percentiles of measured / predicted; the families of kinds of
    model (metric, architecture, GPU generation), or with ``models`` those of each measured model."""
    lo, hi = table["percentiles"]
    head = ["family", "rows", f"{lo}th percentile", "median", f"{hi}th percentile"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, f in table["families"].items():
        if ("/model=" in key) != models:
            continue
        name = " / ".join([METRIC_NAMES[key.split("/")[0]], *key.replace("model=", "").split("/")[1:]])
        lines.append(f"| {name} | {f['n']:,} | {f['low']:.2f} | {f['median']:.2f} | {f['high']:.2f} |")
    return "\n".join(lines)


# --- what a change of method does, family by family ------------------------------------------------
def gpus_band(n_gpus: int) -> str:
    """The replica-size family of a row: ``"1 GPU"``, ``"2 GPUs"``, ``"4 GPUs"``, ``"8 GPUs"`` or ``"9+ GPUs"``.

    Examples
    --------
    >>> gpus_band(1), gpus_band(4), gpus_band(16)
    ('1 GPU', '4 GPUs', '9+ GPUs')
    """
    if n_gpus == 1:
        return "1 GPU"
    return f"{n_gpus} GPUs" if n_gpus in (2, 4, 8) else ("9+ GPUs" if n_gpus > 8 else f"{n_gpus} GPUs")


def compare_methods(
    ev: Evidence, other: Assumptions | str, *, metric: str = "tpot_ms", by: Sequence[str] = ("gpus", "engine")
) -> list[list[str]]:
    """A table of the error of ``ev``'s predictions beside those of ``other`` assumptions, over the
    rows of ``metric``, overall and by family (``"gpus"``: the replica's GPU count, see
    :func:`gpus_band`; or any of :data:`FACETS`): rows of [family, value, rows, median factor and
    share within 2x under ``other``, then under ``ev``'s assumptions]. Each configuration is
    predicted once under ``other`` (rows that share one share the replica model's call)."""
    b = resolve(other)
    idx = [i for i, r in enumerate(ev.rows) if r.metric == metric]
    if not idx:
        raise InputError(f"no rows of {metric!r} to compare.")
    cache: dict[tuple, float] = {}
    before: dict[int, float] = {}
    for i in idx:
        row = ev.rows[i]
        key = _config(row)
        if key not in cache:
            cache[key] = predict(row, assumptions=b).value
        before[i] = cache[key]

    def fam(i: int, facet: str) -> str:
        return gpus_band(ev.rows[i].n_gpus) if facet == "gpus" else ev.facets[i][facet]

    def cells(group: list[int]) -> list[str]:
        old = summarize([before[i] for i in group], [ev.rows[i].value for i in group])
        new = summarize([ev.predicted[i] for i in group], [ev.rows[i].value for i in group])
        return [
            f"{len(group):,}",
            f"{old.median_factor:.2f}",
            f"{old.within_2x:.0%}",
            f"{new.median_factor:.2f}",
            f"{new.within_2x:.0%}",
        ]

    out = [["all", "", *cells(idx)]]
    for facet in by:
        for value in sorted({fam(i, facet) for i in idx}, key=lambda v: (len(v), v)):
            out.append([facet, value, *cells([i for i in idx if fam(i, facet) == value])])
    return out
