"""The published tables' fit: two global efficiencies fitted to the measured rows, and the error held out.

* :func:`dataset` - the rows and their components: every row's prediction at any efficiencies (what the
  chapter's calculator needs, with no fit).
* :func:`fit_efficiencies`, :func:`leave_one_out` - two global factors fitted by least squares in log space,
  and the error on rows the fit did not see; :func:`validate` does it all.
* :func:`error_stats` - median and worst ``|ln(predicted / measured)|`` and the share within 2x.

Plain Python (the standard library, no numpy), so that the chapter's calculator also runs in the reader's browser.
"""

from __future__ import annotations

import bisect
import math
import operator
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, count, repeat
from typing import Any, NamedTuple

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.errors import InputError
from llmcourse.units import plain_number
from llmcourse.validation.measured import Measurement, measurements
from llmcourse.validation.prediction import Components, Prediction, components, family, predict, throughput_s


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
    decode_only = c.metric == "output_tokens_per_s" and not c.counts_prefill and not (c.mixed_step or c.chunk_steps)
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
    if c.chunk_steps:  # a mean of steps with and without a prompt's chunk: each grid point by the row's own value
        return [(math.log(c.value(eb, ef)) - target) ** 2 for eb in eb_axis for ef in ef_axis]
    if c.mixed_step:
        return _sq_log_mixed(c, target, eb_axis, ef_axis)
    # output tokens per second (cycle_throughput), times in seconds; prefill batches of their own take
    # ``prefill_passes`` passes, each the prefill times plus the step overhead: P max(x, y) + P (q + o_p) is
    # max(P x, P y) + P (q + o_p)
    b, osl, thr = repeat(c.batch), repeat(c.osl), throughput_s
    step_c = [(c.decode_compute_ms / ef + o) / 1000.0 for ef in ef_axis]
    passes = c.prefill_passes or 1
    q = passes * (c.prefill_extra_ms + (c.pass_overhead_ms if c.prefill_passes else 0.0))
    p_cmp, p_mem = passes * c.prefill_compute_ms, passes * c.prefill_memory_ms
    pre_c = [(p_cmp / ef + q) / 1000.0 for ef in ef_axis]
    neg_s, neg_p = [-x for x in step_c], [-x for x in pre_c]
    both_c = _sq_log(map(thr, b, osl, step_c, pre_c), target)
    out = []
    for eb in eb_axis:
        step_m, pre_m = (c.decode_memory_ms / eb + o) / 1000.0, (p_mem / eb + q) / 1000.0
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


def _sq_log_mixed(c: Components, target: float, eb_axis: list[float], ef_axis: list[float]) -> list[float]:
    """:func:`_sq_log_errors` of a throughput row whose engine mixes prompt chunks into its decode steps: ``decoding``
    tokens a step of two kernels (:meth:`Components.value`), each the slower of a time over the bandwidth efficiency
    and one over the compute efficiency, row by row of the bandwidth axis."""
    wm, wc, am, ac, extra = c.mixed_step
    # decoding / step: (ln(decoding / step) - target)^2 = (ln(step) - (ln(decoding) - target))^2, step in s
    target = math.log(c.decoding) - target
    wc_f, ac_f = [wc / ef for ef in ef_axis], [ac / ef for ef in ef_axis]
    out: list[float] = []
    for eb in eb_axis:
        wm_e, am_e = wm / eb, am / eb
        steps = [(max(wm_e, x) + max(am_e, y) + extra) / 1000.0 for x, y in zip(wc_f, ac_f, strict=True)]
        out += _sq_log(steps, target)
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
    (26, 'T17', 8.62, 'course')
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
        (['T3', 'T17'], [])
        >>> total = validate([r for r in measurements() if r.id in ("T3", "T8")], assumptions="lab")
        >>> total.faster_than_predicted("datasheet")  # T8 under 90% of the total: 5 conversations, not 38
        ['T8']
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
