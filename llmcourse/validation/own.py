"""Your own benchmark: a reader's measured rows read, predicted and refitted, and a brief re-planned with the refit.

:func:`own_benchmark` is what ``python -m llmcourse validate FILE`` prints and what the chapter's own-benchmark
calculator shows (which caches :func:`own_fitted`, the part that does not depend on the brief).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llmcourse.assumptions import Assumptions
from llmcourse.bands import METRIC_NAMES
from llmcourse.errors import InputError
from llmcourse.planner import Brief, plan
from llmcourse.units import to
from llmcourse.validation.cells import ID_SHOWN, escaped, shortened
from llmcourse.validation.held_out import (
    FIT_GRIDS,
    FIT_OBJECTIVES,
    FIT_PARAMETERS,
    Evidence,
    Summary,
    evidence,
    reason_kind,
)
from llmcourse.validation.measured import FORMATS, Loaded, Measurement, Skipped, load_measurements, parse_measurements

#: The most measurements :func:`own_benchmark` fits when asked to bound its work (the live calculator).
OWN_MAX_ROWS = 600
#: The most rows of each kind the report lists one by one (then a count).
OWN_LISTED = 25


def _summary_text(s: Summary) -> str:
    return (
        f"median factor {s.median_factor:.2f}, median APE {s.median_ape:.0%}, MAPE {s.mape:.0%}, "
        f"{s.within_2x:.0%} within 2x ({s.n:,} rows; median measured/predicted {s.median_ratio:.2f})"
    )


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
    #: Why the brief could not be re-planned for the most-measured setup ('' where it was, or none was asked).
    replan_error: str = ""

    def rows(self) -> list[tuple[str, str]]:
        """(label, text) rows: the per-row report, then the errors and the refit; the text a file gave (ids,
        names, reasons) escaped (:func:`~llmcourse.validation.cells.escaped`)."""
        return [(escaped(k), escaped(v)) for k, v in self._rows()]

    def _rows(self) -> list[tuple[str, str]]:
        got = self.loaded
        head = FORMATS[got.format].split(" (")[0]
        n = len(got.skipped)
        out = [("read", f"{head}: {len(got.rows):,} measurements, {n:,} row{'' if n == 1 else 's'} skipped")]
        if got.stopped:
            out.append(("stopped", got.stopped))
        out += _listed(
            "skipped",
            got.skipped,
            lambda s: (f"skipped: row {s.line}" + (f" ({shortened(s.id, ID_SHOWN)})" if s.id else ""), s.reason),
        )
        out += _listed("not fitted", self.not_fitted, lambda s: (f"not fitted: {shortened(s.id, ID_SHOWN)}", s.reason))
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
        out += _listed(
            "not predicted", ev.not_predicted, lambda s: (f"not predicted: {shortened(s.id, ID_SHOWN)}", s.reason)
        )
        a, names = ev.assumptions, _refitted(ev)
        for m in ev.metrics():
            out.append((f"{a.name}'s method: {METRIC_NAMES[m]}", _summary_text(ev.summary("predicted", {"metric": m}))))
        if names:
            fit = ", ".join(f"{p} {ev.fitted[p]:g} ({a.name}'s {getattr(a, p):g})" for p in names)
            out.append(("refitted parameters", fit))
            out += [("refit on a bound", text) for text in on_bound(ev.fitted, names)]
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
        elif self.replan_error:
            out.append(("not re-planned", self.replan_error))
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

        def ms(q: Any) -> str:  # 2,000 ms; a target of 1e308 ms as 1e+308 ms, not its 309 digits
            x = to(q, "ms").m
            return f"{x:,.0f} ms" if abs(x) < 1e9 else f"{x:.3g} ms"

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


def on_bound(fitted: dict[str, float], names: Sequence[str]) -> list[str]:
    """A line for each parameter of ``names`` whose fitted value sits on the lowest or highest value of its
    :data:`~llmcourse.validation.held_out.FIT_GRIDS` grid: the rows would have it further out than the grid
    goes, so the value is a bound of the search, not a fit.

    Examples
    --------
    >>> on_bound({"bandwidth_efficiency": 1.0, "step_overhead_ms": 1.75}, ["bandwidth_efficiency", "step_overhead_ms"])
    ['bandwidth_efficiency 1 is the highest value of its grid (0.2 to 1): the rows would have it higher, so it is a bound of the search, not a fit (rows far from the method, or a term the method lacks)']
    """
    out = []
    for p in names:
        grid, v = FIT_GRIDS[p], fitted[p]
        if v in (grid[0], grid[-1]):
            end, way = ("highest", "higher") if v == grid[-1] else ("lowest", "lower")
            out.append(
                f"{p} {v:g} is the {end} value of its grid ({grid[0]:g} to {grid[-1]:g}): the rows would have it "
                f"{way}, so it is a bound of the search, not a fit (rows far from the method, or a term the method lacks)"
            )
    return out


def _refitted(ev: Evidence) -> list[str]:
    """The parameters of :data:`FIT_PARAMETERS` the rows of ``ev`` refitted: those with a metric of their
    :data:`FIT_OBJECTIVES` among the rows' (the others keep the assumptions' values)."""
    have = set(ev.metrics())
    return [p for p in FIT_PARAMETERS if have & set(FIT_OBJECTIVES[p])]


def _replan(loop: Sequence[Measurement], ev: Evidence, brief: Any) -> Replan | None:
    """Plan ``brief`` for the setup with the most rows among ``loop``, before and after the refit (None if the
    refit fitted nothing, or the setup's layout is more than tensor parallelism); an :class:`InputError` where the
    planner cannot plan that setup (its rows not predicted either)."""
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


def _listed(kind: str, items: Sequence[Skipped], row: Any) -> list[tuple[str, str]]:
    """The first :data:`OWN_LISTED` items one by one, then how many more of each kind of reason."""
    out = [row(s) for s in items[:OWN_LISTED]]
    if len(items) > OWN_LISTED:
        counts: dict[str, int] = {}
        for s in items[OWN_LISTED:]:
            counts[reason_kind(s.reason)] = counts.get(reason_kind(s.reason), 0) + 1
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
    loads (offline maximum, a fixed rate) are listed as not fitted (:func:`~llmcourse.validation.validate` predicts those).
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
    return own_replanned(own_fitted(source, bounded, assumptions, given), brief)


def own_fitted(source: Loaded | str | Path, bounded: bool, assumptions: Any, given: dict[str, Any]) -> tuple:
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


def own_replanned(fitted: tuple, brief: Any) -> OwnBenchmark:
    """:func:`own_benchmark` from :func:`own_fitted`'s answer: the brief re-planned, if one is given."""
    got, loop, not_fitted, dropped, ev, why = fitted
    if ev is None:
        return OwnBenchmark(got, None, not_fitted, dropped, why)
    replan = None
    if brief is not None:
        if not isinstance(brief, Brief):
            raise InputError(f"brief must be a llmcourse.Brief (or None); got {type(brief).__name__}.")
        try:
            replan = _replan(loop, ev, brief)
        except InputError as exc:  # a setup the planner cannot take (a tensor-parallel size, a length past the context)
            why = f"the setup with the most rows cannot be planned: {exc}"
            return OwnBenchmark(got, ev, not_fitted, dropped, replan_error=why)
    return OwnBenchmark(got, ev, not_fitted, dropped, replan=replan)
