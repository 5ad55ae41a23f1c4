"""The closed-loop evidence: measured rows predicted, the parameters fitted, each model, GPU and engine held out.

* :func:`evidence` - closed-loop rows (the shipped aiconfigurator rows by default) predicted by the one replica
  model, :data:`FIT_PARAMETERS` fitted on all of them by a coordinate search and again without each group of
  :data:`HOLD_OUT` in turn (:class:`Evidence`: the predictions, the fits, the errors by family).
* :func:`summarize` - the error of predictions against measurements (:class:`Summary`).
* :func:`band`, :meth:`Evidence.band` - an 80% band around a prediction from the held-out errors of its family;
  :func:`band_table` - the table of bands ``llmcourse/data/bands.json`` ships (read by :mod:`llmcourse.bands`).
* :func:`not_predicted_reasons` - the rows the replica model could not predict, by kind of reason.
"""

from __future__ import annotations

import math
import operator
import re
import statistics
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.bands import (
    BAND_METRICS,
    BAND_PERCENTILES,
    BAND_WHICH,
    GENERATIONS,
    METRIC_NAMES,
    METRICS,
    MIN_BAND_ROWS,
    MIN_MODEL_BAND_ROWS,
    SETUP_ROWS,
    Band,
    band_for,
    concurrency_band,
    in_reading_order,
)
from llmcourse.catalog import models
from llmcourse.errors import InputError
from llmcourse.stats import percentile, weighted_percentile  # the standard library's numerics, as numpy's
from llmcourse.validation.client import CLIENT_MODEL, CLIENT_MODELS, client_wave_share
from llmcourse.validation.measured import Loaded, Measurement, Skipped, silicon
from llmcourse.validation.prediction import (
    LoadComponents,
    config_key,
    load_components,
    loop_rate_s,
    ttft_s,
    wave_s,
)

#: The fields of :class:`~llmcourse.assumptions.Assumptions` :func:`evidence` fits, and the grid of each.
FIT_PARAMETERS = (
    "bandwidth_efficiency", "compute_efficiency", "step_overhead_ms", "layer_floor_us", "closed_loop_wave_share",
    "request_overhead_ms",
)  # fmt: skip
#: How many of :data:`FIT_PARAMETERS` (the first) time the step: what the time per token depends on.
_STEP = 4
FIT_GRIDS: dict[str, tuple[float, ...]] = {
    "bandwidth_efficiency": tuple(round(0.2 + 0.05 * k, 2) for k in range(17)),  # 0.2 to 1
    "compute_efficiency": tuple(round(0.1 + 0.1 * k, 2) for k in range(10)),  # 0.1 to 1
    "step_overhead_ms": tuple(0.25 * k for k in range(21)),  # 0 to 5 ms
    "layer_floor_us": tuple(float(k) for k in range(101)),  # 0 to 100 us a layer
    # 0 to 0.48 by 0.02, then 0.5 to 1 by 0.1 (the shares fitted lie between 0.1 and 0.3)
    "closed_loop_wave_share": tuple(round(0.02 * k, 2) for k in range(25)) + tuple(k / 10 for k in range(5, 11)),
    "request_overhead_ms": tuple(10.0 * k for k in range(31)),  # 0 to 300 ms
}
#: The order the coordinate search moves the parameters in: the per-request overhead before the wave share, because
#: the rows at 1 in flight (no wave) pin the overhead, and a search that moves the share first can stop short of both.
_FIT_ORDER = sorted(enumerate(FIT_PARAMETERS), key=lambda jp: jp[1] == "closed_loop_wave_share")
#: The groups :func:`evidence` holds out in turn (fit on the others, predict the group): each model, each GPU,
#: each engine, and each (model, GPU, engine) group (``"group"``: what the coverage of the bands is measured on).
HOLD_OUT = ("model", "gpu", "engine", "group")
#: The families an error table is broken down by (``"group"``: a model on a GPU under an engine).
FACETS = ("engine", "gpu_generation", "architecture", "metric", "concurrency_band", "model", "gpu", "group")
#: The metrics the step's parameters are fitted on (not the time to first token: it holds a fixed cost per
#: request, request_overhead_ms, fitted on its own, that the step's efficiencies must not be bent to stand in for).
FIT_METRICS = ("tpot_ms", "itl_ms")
#: The metrics each of :data:`FIT_PARAMETERS` is fitted on: the step's parameters on the time per token,
#: the wave share and the per-request overhead (which change nothing else) on the time to first token, so
#: that a held-out fold fits both without its group; none: held at the assumptions' value. The compute
#: efficiency is held: a decode step is memory-bound, so the time per token barely sees it (fitted on it, it
#: swung between 0.5 and 1 from fold to fold with the time per token barely changed, halving every prefill),
#: while the times to first token that do see it come close to the course's 0.5 (fitted on them with the wave
#: share: 0.6 on all rows, 0.4 to 0.7 by fold). The per-step overhead is held too: a forward pass pays it and its
#: layers' floor alike, and over the measured models (32 to 94 layers) the two trade against each other (fitted
#: together, the held-out median factor of the time per token moves by under 0.003 and the search stops where it
#: starts), so the floor, which grows with the model's depth as the ring's latencies did, carries the fit.
FIT_OBJECTIVES: dict[str, tuple[str, ...]] = {
    "bandwidth_efficiency": FIT_METRICS,
    "compute_efficiency": (),
    "step_overhead_ms": (),
    "layer_floor_us": FIT_METRICS,
    "closed_loop_wave_share": ("ttft_ms",),
    "request_overhead_ms": ("ttft_ms",),
}


def _facets(row: Measurement) -> dict[str, str]:
    return {
        "engine": row.engine.split(" ")[0],
        "gpu_generation": GENERATIONS.get(row.gpu, row.gpu),
        "architecture": "MoE" if models[row.model].is_moe else "dense",
        "metric": row.metric,
        "concurrency_band": concurrency_band(row.concurrency),
        "model": row.model,
        "gpu": row.gpu,
        "group": group_name(row),
    }


def group_name(row: Measurement) -> str:
    """A row's (model, GPU, engine) group, as the folds and tables name it: ``"Llama-3.1-70B / H200 SXM / vLLM"``."""
    return f"{row.model} / {row.gpu} / {row.engine.split(' ')[0]}"


def folds(facets: Sequence[dict[str, str]], kind: str) -> dict[str, tuple[list[int], list[int]]]:
    """The held-out folds of ``kind`` (a facet of :data:`FACETS`: ``"group"`` for (model, GPU, engine)): for each
    value of it among the rows' ``facets``, (the rows fitted on: every row of another value, the rows held out:
    every row of this one). Every row is held out in exactly one fold, and no fold fits on a row it holds out.

    Examples
    --------
    >>> folds([{"model": "a"}, {"model": "b"}, {"model": "a"}], "model")
    {'a': ([1], [0, 2]), 'b': ([0, 2], [1])}
    """
    if kind not in FACETS:
        raise InputError(f"hold_out names {kind!r}; use facets of {', '.join(FACETS)}.")
    out: dict[str, tuple[list[int], list[int]]] = {}
    for g in sorted({f[kind] for f in facets}):
        out[g] = ([i for i, f in enumerate(facets) if f[kind] != g], [i for i, f in enumerate(facets) if f[kind] == g])
    return out


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

    def __init__(
        self,
        comps: Sequence[LoadComponents],
        row_cfg: Sequence[int],
        rows: Sequence[Measurement],
        client: str = CLIENT_MODEL,
    ):
        self.comps, self.row_cfg, self.client = list(comps), list(row_cfg), client
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
        key = ("tpot", *params[:_STEP])
        hit = self._errs.get(key)
        if hit is None:
            eb, ef, oh, floor = params[:_STEP]
            tpot = [c.tpot(eb, ef, oh, floor) for c in self.comps]
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
            base = self._ttft_base.get(params[: _STEP + 1])
            if base is None:
                parts = self._queue.get(params[:_STEP])
                if parts is None:
                    parts = self._queue[params[:_STEP]] = []
                    for k in sorted({self.row_cfg[i] for i in rows}):
                        c = self.comps[k]
                        first, step, _, wait = c.queue(*params[:_STEP])
                        p = first / 1e3
                        wave = wave_s(1.0, c.group_concurrency, p)
                        parts.append((k, p, step / 1e3, wait, wave, c.separate_prefill))
                s, f, share = params[_STEP], ttft_s, client_wave_share
                base = self._ttft_base[params[: _STEP + 1]] = [
                    f(p, st, w, share(whole, s, self.client) * wave) * 1e3 for _, p, st, w, wave, whole in parts
                ]
            r, log = params[_STEP + 1], math.log
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
            times = [self._times(c, params) for c in self.comps]
            preds = []
            for k, metric in zip(self.row_cfg, self.metric, strict=True):
                tpot, ttft = times[k]
                if metric == "ttft_ms":
                    preds.append(ttft)
                elif metric == "output_tokens_per_s":
                    c = self.comps[k]
                    preds.append(loop_rate_s(c.concurrency, c.osl, ttft / 1e3, tpot / 1e3))
                else:
                    preds.append(tpot)
            errs = [abs(x) for x in map(operator.sub, map(math.log, preds), self.log_meas)]
            hit = self.cache[params] = (preds, errs)
        return hit

    def _times(self, c: LoadComponents, params: tuple[float, ...]) -> tuple[float, float]:
        """(time per output token, time to first token) in ms of a configuration at ``params``, its wave share
        from the fitter's client model (:func:`~llmcourse.validation.client.client_wave_share`)."""
        first, step, tpot, wait = c.queue(*params[:_STEP])
        p = first / 1e3
        share = client_wave_share(c.separate_prefill, params[_STEP], self.client)
        return tpot, ttft_s(p, step / 1e3, wait, wave_s(share, c.group_concurrency, p)) * 1e3 + params[_STEP + 1]

    def objective(self, params: tuple[float, ...], idx: Sequence[int], metrics: tuple[str, ...] = FIT_METRICS) -> float:
        """Median |ln(predicted / measured)| over the positions ``idx`` of the rows ``metrics`` counts."""
        errs = self.fit_errors(params, metrics)
        return statistics.median([errs[i] for i in idx])

    def positions(self, rows: Sequence[int], metrics: tuple[str, ...] = FIT_METRICS) -> list[int]:
        """Positions among the rows ``metrics`` counts of those of ``rows`` it counts."""
        pos = self._pos[metrics]
        return [pos[i] for i in rows if i in pos]

    def fit(
        self, rows: Sequence[int], start: tuple[float, ...], only: tuple[str, ...] | None = None
    ) -> tuple[float, ...]:
        """Coordinate search on the grids from ``start``: each parameter in turn takes the grid value of
        least median ``|ln(predicted / measured)|`` over those of ``rows`` whose metric is in its
        :data:`FIT_OBJECTIVES`, until none moves (ties keep the current value, then the first grid value);
        a parameter with no objective, or none of whose rows is among ``rows``, keeps its start; so does one not
        in ``only`` (when given)."""
        idx = {m: self.positions(rows, m) if m else [] for m in set(FIT_OBJECTIVES.values())}
        cur = list(start)
        for _ in range(8):
            moved = False
            for j, name in _FIT_ORDER:
                metrics = FIT_OBJECTIVES[name]
                if not idx[metrics] or (only is not None and name not in only):
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
    client: str = CLIENT_MODEL

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

    def indices(self, family: dict[str, str] | None) -> list[int]:
        fam = family or {}
        bad = [k for k in fam if k not in FACETS]
        if bad:
            raise InputError(f"family facet {bad[0]!r} unknown; use {', '.join(FACETS)}.")
        return [i for i, f in enumerate(self.facets) if all(f[k] == v for k, v in fam.items())]

    def summary(self, which: str = "predicted", family: dict[str, str] | None = None) -> Summary:
        """The :class:`Summary` of one set of predictions over all rows or one family (facet -> value)."""
        preds, idx = self.predictions(which), self.indices(family)
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
            for value in in_reading_order(facet, {f[facet] for f in self.facets if f["metric"] == metric}):
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
        and 90th percentiles of measured / held-out predicted over the rows of the family, each (model, GPU, engine)
        setup of ``SETUP_ROWS`` rows or more counted once (as :func:`band_table`'s bands). ``family``
        is a row (its facets) or facet -> value (``"metric"`` required); with fewer than
        :data:`MIN_BAND_ROWS` rows, the most specific facets are dropped (``gpu``, ``model``,
        ``concurrency_band``, ``engine``, ``gpu_generation``, ``architecture``) until there are enough.
        """
        fam = _facets(family) if isinstance(family, Measurement) else dict(family)
        if "metric" not in fam:
            raise InputError(f"a band needs the metric in the family (one of {', '.join(METRICS)}).")
        preds = self.predictions(which)
        order = ["group", "gpu", "model", "concurrency_band", "engine", "gpu_generation", "architecture"]
        while True:
            idx = self.indices(fam)
            if len(idx) >= MIN_BAND_ROWS or set(fam) == {"metric"}:
                break
            fam.pop(next(k for k in order if k in fam))
        if not idx:
            raise InputError(f"no measured rows of {fam['metric']} to draw a band from.")
        ratios = [self.rows[i].value / preds[i] for i in idx]
        weights = _setup_weights([self.facets[i]["group"] for i in idx])
        lo, hi = (weighted_percentile(ratios, weights, q) for q in BAND_PERCENTILES)
        v = float(value)
        label = ", ".join(f"{k} {fam[k]}" for k in FACETS if k in fam)
        return Band(v, v * lo, v * hi, len(idx), label, METRICS[fam["metric"]])


def evidence(
    rows: Sequence[Measurement] | Loaded | None = None,
    *,
    assumptions: Assumptions | str | None = None,
    hold_out: Sequence[str] = HOLD_OUT,
    client: str = CLIENT_MODEL,
    steps_from: Evidence | None = None,
) -> Evidence:
    """Predict closed-loop rows (the shipped aiconfigurator rows by default) with the one replica
    model under ``assumptions`` (the course's by default); fit :data:`FIT_PARAMETERS` on all of them
    (coordinate search on :data:`FIT_GRIDS`, each parameter to the least median ``|ln(predicted /
    measured)|`` of the rows of its :data:`FIT_OBJECTIVES`: the step's on the time per token, the wave
    share and the per-request overhead on the time to first token, the compute efficiency held) and again without
    each model, GPU, engine and (model, GPU, engine) group in turn (:func:`folds`), predicting the group held out.
    The time to first token reads the closed loop with the client model ``client`` (:data:`CLIENT_MODEL`, the one
    every chapter uses, by default; :func:`client_alternatives` compares the others). The (model, GPU, engine)
    folds (33 on the shipped rows) start their search from the fit on every row (a warm start: each leaves out a
    few percent of the rows, so the search moves a step or two); the others start from the assumptions' values.
    ``steps_from``: an evidence of the same rows and assumptions whose fits of the step's parameters (those fitted
    on the time per token, which the client model does not change, so that their search ends where it ended
    there) are taken as they are, fold by fold; only the parameters fitted on the time to first token are searched.

    Each distinct configuration calls the replica model once (:func:`load_components`); every
    prediction at a parameter value is computed once and shared by the fits. Rows the replica model
    cannot predict (weights that leave no room for a sequence) are listed in ``not_predicted``.
    """
    t0 = time.perf_counter()
    a = resolve(assumptions)
    client_wave_share(False, 0.0, client)  # an unknown client model is refused here, with its name
    if rows is None:
        rows = silicon()
    src = rows.rows if isinstance(rows, Loaded) else tuple(rows)
    comps: list[LoadComponents] = []
    where: dict[tuple, int | Skipped] = {}
    kept, row_cfg, skipped = [], [], []
    for i, r in enumerate(src):
        key = config_key(r)
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
    fitter = _Fitter(comps, row_cfg, kept, client)
    own = tuple(float(getattr(a, p)) for p in FIT_PARAMETERS)
    predicted = fitter.at(own)[0]

    def snap(v: float, grid: tuple[float, ...]) -> float:
        return min(grid, key=lambda g: abs(g - v))

    start = tuple(snap(v, FIT_GRIDS[p]) for v, p in zip(own, FIT_PARAMETERS, strict=True))
    everything = list(range(len(kept)))
    ttft_only = tuple(p for p in FIT_PARAMETERS if FIT_OBJECTIVES[p] == ("ttft_ms",)) if steps_from else None

    def given(fit: dict[str, float] | None, fallback: tuple[float, ...]) -> tuple[float, ...]:
        return fallback if fit is None else tuple(fit[p] for p in FIT_PARAMETERS)

    best = fitter.fit(everything, given(steps_from and steps_from.fitted, start), ttft_only)
    facets = tuple(_facets(r) for r in kept)
    held: dict[str, tuple[float, ...]] = {}
    fold_fits: dict[str, dict[str, dict[str, float]]] = {}
    for kind in hold_out:
        out = [math.nan] * len(kept)
        fold_fits[kind] = {}
        warm = best if kind == "group" else start
        for g, (train, test) in folds(facets, kind).items():
            known = steps_from.fold_fits.get(kind, {}).get(g) if steps_from else None
            if steps_from is not None and known is None:
                raise InputError(f"steps_from has no fold of {kind} {g!r}: give an evidence of the same rows.")
            p = fitter.fit(train, given(known, warm), ttft_only) if train else start
            fold_fits[kind][g] = dict(zip(FIT_PARAMETERS, p, strict=True))
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
        fold_fits=fold_fits,
        facets=facets,
        not_predicted=tuple(skipped),
        seconds={"components": t1 - t0, "fits": t2 - t1, "configurations": float(len(comps))},
        client=client,
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
    'time per token 21 ms; 80% band 17 to 27 ms, from 212 measured rows like this one (family: ...)'
    """
    global _EVIDENCE
    ev = evidence_
    if ev is None:
        if _EVIDENCE is None:
            _EVIDENCE = evidence()
        ev = _EVIDENCE
    return ev.band(family, value)


def _sig4(x: float) -> float:
    return float(f"{x:.4g}")


def band_table(ev: Evidence, which: str = BAND_WHICH) -> dict[str, Any]:
    """The table of 80% bands that ``llmcourse/data/bands.json`` holds, from the evidence given: for each
    metric of :data:`BAND_METRICS`, each metric and architecture, and each metric, architecture and GPU
    generation, the 10th, 50th and 90th percentiles (4 significant digits) of measured / predicted over the
    family's rows, each (model, GPU, engine) setup of :data:`~llmcourse.bands.SETUP_ROWS` rows or more counted once
    (predictions ``which``, leave-one-(model, GPU, engine)-group-out by default), the row count and the setups'.
    A family of fewer than :data:`MIN_BAND_ROWS` rows is left out (a lookup falls back to a wider family); the
    metric's own family is always kept. ``"measured"`` gives, for each metric, every model's row count and the
    GPU generations it was measured on (what a band's label says of the model). ``scripts/make_bands.py`` writes
    it; the validation chapter checks that the shipped file equals it.

    Examples
    --------
    >>> rows = [r for r in silicon().rows if r.model == "Llama-3.1-70B" and r.gpu == "H200 SXM"]
    >>> t = band_table(evidence(rows, hold_out=("model",)), which="predicted")  # doctest: +SKIP
    >>> sorted(t["families"])  # doctest: +SKIP
    ['tpot_ms', 'tpot_ms/dense', 'tpot_ms/dense/Hopper', 'ttft_ms', 'ttft_ms/dense', 'ttft_ms/dense/Hopper']
    """
    families, measured = _ratio_families(ev, ev.predictions(which), range(len(ev.rows)))
    return {
        "about": "80% bands of measured / predicted by family (metric, metric/architecture, "
        "metric/architecture/GPU generation), written by scripts/make_bands.py from "
        "llmcourse.validation.evidence(); the validation chapter checks this file against its own evidence.",
        "method": ev.assumptions.name,
        "which": which,
        "percentiles": list(BAND_PERCENTILES),
        "min_rows": MIN_BAND_ROWS,
        "rows": len(ev.rows),
        "families": families,
        "measured": measured,
    }


def _setup_weights(setups: Sequence[str], setup_rows: float = SETUP_ROWS) -> list[float]:
    """Each row's weight in a band's percentiles, from the (model, GPU, engine) setup of each row of the family: one
    over the larger of its setup's rows and ``setup_rows`` (a setup of ``setup_rows`` rows or more counts once); 1 for
    ``setup_rows=math.inf`` (every row counts once)."""
    rows = Counter(setups)
    return [1.0 if math.isinf(setup_rows) else 1 / max(rows[g], setup_rows) for g in setups]


def _ratio_families(
    ev: Evidence, preds: Sequence[float], keep: Iterable[int], setup_rows: float = SETUP_ROWS
) -> tuple[dict, dict]:
    """The ``"families"`` and ``"measured"`` entries of :func:`band_table` from the rows ``keep`` of ``ev`` and
    the predictions ``preds`` (what :func:`coverage` builds again in each fold, from the other folds' rows).

    Each (model, GPU, engine) setup of :data:`~llmcourse.bands.SETUP_ROWS` rows or more counts once in a family's
    percentiles, a smaller one in proportion to its rows (:func:`~llmcourse.stats.weighted_percentile`, each row
    weighted by one over its setup's rows in the family, or over ``setup_rows``): a band is read for a setup, often
    one nobody has measured, and a setup measured at 200 concurrencies says no more about the next setup than one
    measured at 20. ``setup_rows=math.inf`` counts every row once instead (what :func:`coverage` compares)."""
    groups: dict[str, list[tuple[float, str]]] = {}
    measured: dict[str, dict[str, dict[str, Any]]] = {}
    rows, facets = ev.rows, ev.facets
    for i in keep:
        f = facets[i]
        m = f["metric"]
        if m not in BAND_METRICS:
            continue
        ratio = rows[i].value / preds[i]
        arch, gen = f["architecture"], f["gpu_generation"]
        for key in (m, f"{m}/{arch}", f"{m}/{arch}/{gen}"):
            groups.setdefault(key, []).append((ratio, f["group"]))
        seen = measured.setdefault(m, {}).setdefault(f["model"], {"n": 0, "generations": set()})
        seen["n"] += 1
        seen["generations"].add(gen)
    lo, hi = BAND_PERCENTILES
    families = {}
    for k, v in sorted(groups.items()):
        if len(v) >= MIN_BAND_ROWS or "/" not in k:
            ratios, setups = [r for r, _ in v], [g for _, g in v]
            weights = _setup_weights(setups, setup_rows)
            families[k] = {
                "n": len(v),
                "setups": len(set(setups)),
                "low": _sig4(weighted_percentile(ratios, weights, lo)),
                "median": _sig4(weighted_percentile(ratios, weights, 50)),
                "high": _sig4(weighted_percentile(ratios, weights, hi)),
            }
    seen_out = {
        m: {k: {"n": v["n"], "generations": sorted(v["generations"])} for k, v in sorted(by.items())}
        for m, by in sorted(measured.items())
    }
    return families, seen_out


@dataclass(frozen=True)
class Coverage:
    """How many held-out rows of one metric fell inside their 80% band, pooled and fold by fold.

    ``folds`` holds, for each fold (a (model, GPU, engine) group by default), its name, its rows of the metric and
    how many of them fell inside the band (:func:`coverage`).
    """

    metric: str
    rows: int
    inside: int
    folds: tuple[tuple[str, int, int], ...]

    @property
    def share(self) -> float:
        """The share of all the held-out rows inside their band (pooled over the folds)."""
        return self.inside / self.rows if self.rows else math.nan

    def fold_shares(self, min_rows: int = 1) -> list[float]:
        """Each fold's share inside, of the folds with at least ``min_rows`` rows of the metric."""
        return [k / n for _, n, k in self.folds if n >= max(1, min_rows)]

    def fold_mean(self, min_rows: int = 1) -> float:
        """The group-weighted coverage: the mean over the folds (of at least ``min_rows`` rows of the metric) of each
        fold's share inside, every fold counting once whatever its rows (:attr:`share` weighs each row once).

        Examples
        --------
        >>> c = Coverage("tpot_ms", 12, 9, (("a", 10, 9), ("b", 2, 0)))
        >>> c.share, c.fold_mean()  # 9 / 12 pooled; (9/10 + 0/2) / 2 by fold
        (0.75, 0.45)
        """
        v = self.fold_shares(min_rows)
        if not v:
            raise InputError(f"no fold has {min_rows} rows of {self.metric}: lower min_rows.")
        return statistics.fmean(v)

    def spread(self, min_rows: int = 20) -> tuple[float, float, float, float, float]:
        """(least, 25th percentile, median, 75th percentile, most) of the folds' shares inside, over the folds
        with at least ``min_rows`` rows of the metric (a fold of a few rows is all in or all out)."""
        v = sorted(self.fold_shares(min_rows))
        if not v:
            raise InputError(f"no fold has {min_rows} rows of {self.metric}: lower min_rows.")
        return v[0], percentile(v, 25), statistics.median(v), percentile(v, 75), v[-1]


def coverage(ev: Evidence, kind: str = "group", *, setup_rows: float = SETUP_ROWS) -> dict[str, Coverage]:
    """The coverage of the 80% bands, per metric of :data:`BAND_METRICS`: in each fold of ``kind`` (each
    (model, GPU, engine) group by default, :func:`folds`), the fold's rows predicted with the parameters fitted
    without the fold (``held_out_<kind>``), each given the band a plan would print
    (:func:`llmcourse.bands.band_for`: the model's own family, its architecture on the GPU's generation, ...),
    drawn from a table of bands built as :func:`band_table` builds the shipped one but from the other folds' rows
    only (their measured / held-out predicted); the share of the fold's rows inside their band. The other folds'
    held-out predictions come from fits that saw this fold's rows (a full nesting would refit every pair of
    folds); the band never sees them. ``setup_rows``: the rows at which a setup counts in full in a band
    (:data:`~llmcourse.bands.SETUP_ROWS`, as the shipped table; ``math.inf``: every row counts once).

    Examples
    --------
    >>> rows = [r for r in silicon().rows if r.model == "Llama-3.1-70B" and r.gpu == "H200 SXM"]  # doctest: +SKIP
    >>> c = coverage(evidence(rows, hold_out=("group",)))  # doctest: +SKIP
    >>> sorted(c), 0 <= c["ttft_ms"].share <= 1  # doctest: +SKIP
    (['tpot_ms', 'ttft_ms'], True)
    """
    preds = ev.predictions(f"held_out_{kind}")
    counts: dict[str, list[tuple[str, int, int]]] = {m: [] for m in BAND_METRICS}
    for g, (train, test) in folds(ev.facets, kind).items():
        families, measured = _ratio_families(ev, preds, train, setup_rows)
        table = {"families": families, "min_rows": MIN_BAND_ROWS, "min_model_rows": MIN_MODEL_BAND_ROWS}
        table["measured"] = measured
        tally = {m: [0, 0] for m in BAND_METRICS}
        for i in test:
            row = ev.rows[i]
            if row.metric not in tally or row.metric not in families:
                continue
            b = band_for(row.metric, row.model, row.gpu, preds[i], table=table)
            tally[row.metric][0] += 1
            tally[row.metric][1] += b.low <= row.value <= b.high
        for m, (n, k) in tally.items():
            if n:
                counts[m].append((g, n, k))
    return {m: Coverage(m, sum(n for _, n, _ in c), sum(k for _, _, k in c), tuple(c)) for m, c in counts.items() if c}


@dataclass(frozen=True)
class ClientAlternative:
    """One client model's held-out error on the time to first token, and its band's coverage."""

    client: str
    summary: Summary
    coverage: Coverage
    wave_share: float


def client_alternatives(
    rows: Sequence[Measurement] | Loaded | None = None,
    *,
    assumptions: Assumptions | str | None = None,
    base: Evidence | None = None,
) -> list[ClientAlternative]:
    """Each client model of :data:`~llmcourse.validation.client.CLIENT_MODELS` judged on the same rows (the
    shipped ones by default): the evidence under it held out by (model, GPU, engine) group (its parameters,
    the wave share included where it has one, refitted in every fold), the time to first token's held-out
    :class:`Summary` and the coverage of its bands (:func:`coverage`). The client model of the course,
    :data:`~llmcourse.validation.client.CLIENT_MODEL`, is the one of least held-out median factor. ``base``: an
    evidence of the same rows and assumptions already held out by group (its client model's entry is read from
    it, not computed again, and the others take its fits of the step's parameters: ``steps_from`` of
    :func:`evidence`).
    """
    if base is None or "group" not in base.held_out:
        base = evidence(rows, assumptions=assumptions, hold_out=("group",))
    out = []
    for name in CLIENT_MODELS:
        if base.client == name:
            ev = base
        else:
            ev = evidence(rows, assumptions=assumptions, hold_out=("group",), client=name, steps_from=base)
        s = ev.summary("held_out_group", {"metric": "ttft_ms"})
        out.append(ClientAlternative(name, s, coverage(ev)["ttft_ms"], ev.fitted["closed_loop_wave_share"]))
    return out


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


def reason_kind(reason: str) -> str:
    """A reason without its numbers: the kind :func:`not_predicted_reasons` names, else the text
    before any detail in parentheses."""
    return next((name for rx, name in _NOT_PREDICTED if rx.search(reason)), reason.split(" (")[0])
