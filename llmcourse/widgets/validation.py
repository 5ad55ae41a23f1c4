"""The calculator of the chapter *How good is the estimate?* (``book/12_validation.md``).

Pick a published measurement, slide the two efficiency factors, and see the course's prediction
(:func:`llmcourse.validation.predict`, the course's method with the sliders' efficiencies) beside the
measured value, and the error over all rows at those factors.
"""

from __future__ import annotations

from functools import cache

import ipywidgets as w

from llmcourse.validation import Dataset, dataset, error_stats, predict
from llmcourse.widgets import Calculator, float_slider

__all__ = ["calibration_calculator"]


@cache
def _data() -> Dataset:
    """The rows and their components under the course's method (no fit: the sliders are the calibration)."""
    return dataset()


def _label(v: Dataset, i: int) -> str:
    r = v.rows[i]
    return f"{r.id}: {r.model} on {r.tp} x {r.gpu}, {r.isl}/{r.osl}, {r.load}, {r.metric}"


def _rows(row: str, bandwidth_efficiency: float, compute_efficiency: float) -> list[tuple[str, str]]:
    v = _data()
    r = next(x for x in v.rows if x.id == row)
    p = predict(r, bandwidth_efficiency, compute_efficiency, assumptions=v.assumptions)
    unit = "tok/s" if r.metric == "output_tokens_per_s" else "ms"
    fmt = (lambda x: f"{x:,.0f} {unit}") if unit == "tok/s" else (lambda x: f"{x:.2f} {unit}")
    s = error_stats(v.at(bandwidth_efficiency, compute_efficiency), v.measured, v.ids)
    return [
        ("measured", fmt(r.value)),
        ("predicted", fmt(p.value)),
        ("predicted / measured", f"{p.value / r.value:.2f}"),
        *[(k, val) for k, val in p.rows() if k != "predicted"],
        ("all rows: median error", f"{s.median_factor:.2f}x"),
        ("all rows: worst error", f"{s.worst_factor:.2f}x ({s.worst_id})"),
        ("all rows: share within 2x", f"{s.within_2x:.0%}"),
    ]


def calibration_calculator(
    row: str = "T3", bandwidth_efficiency: float | None = None, compute_efficiency: float | None = None
) -> Calculator:
    """A measured row and two efficiency sliders -> predicted vs measured, and the error over all rows.
    The sliders start at the course's efficiencies unless given.

    Examples
    --------
    >>> c = calibration_calculator()
    >>> dict(c.rows)["measured"]
    '15,245 tok/s'
    >>> dict(c.set(row="T17").rows)["measured"]
    '8.00 ms'
    """
    v = _data()
    a = v.assumptions
    eb = a.bandwidth_efficiency if bandwidth_efficiency is None else bandwidth_efficiency
    ef = a.compute_efficiency if compute_efficiency is None else compute_efficiency
    options = [(_label(v, i), r.id) for i, r in enumerate(v.rows)]
    return Calculator(
        _rows,
        {
            "row": w.Dropdown(options=options, value=row, description="Row", layout=w.Layout(width="95%")),
            "bandwidth_efficiency": float_slider(eb, 0.05, 1.0, 0.01, "bandwidth efficiency"),
            "compute_efficiency": float_slider(ef, 0.05, 1.0, 0.01, "compute efficiency"),
        },
        title="Calibrate against a measurement",
    )
