"""The calculators of the chapter *How good is the estimate?* (``book/12_validation.md``).

* :func:`calibration_calculator`: pick a published measurement, slide the two efficiency factors, and
  see the course's prediction (:func:`llmcourse.validation.predict`, the course's method with the
  sliders' efficiencies) beside the measured value, and the error over all rows at those factors.
* :func:`own_benchmark_calculator`: paste measured rows (the course's CSV, aiconfigurator's CSV or
  ``vllm bench serve --save-result`` JSON) and get the per-row report of what was read and skipped,
  the error of the course's method on them, the parameters refitted on them and the error of the refit
  (:func:`llmcourse.validation.own_benchmark`, what ``python -m llmcourse validate FILE`` prints).
"""

from __future__ import annotations

from functools import cache, lru_cache

import ipywidgets as w

from llmcourse.planner.design import Brief
from llmcourse.units import Q_, parsed_unit
from llmcourse.validation import (
    REPLAN_EXAMPLE,
    Dataset,
    OwnBenchmark,
    dataset,
    error_stats,
    predict,
)
from llmcourse.validation.own import own_fitted, own_replanned
from llmcourse.widgets import Calculator, float_slider, int_box

__all__ = ["EXAMPLE_ROWS", "calibration_calculator", "own_benchmark_calculator"]

_MS = parsed_unit("ms")[0]  # parsed once: pint parses a unit string anew each time


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
    a = v.assumptions.replace(bandwidth_efficiency=bandwidth_efficiency, compute_efficiency=compute_efficiency)
    p = predict(r, assumptions=a)
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


#: The calculator's starting text: ten measured rows of the shipped aiconfigurator file (Llama-3.1-70B,
#: FP8 weights, on two H200s under vLLM, 1,024 tokens in and out; the ``..._agg_1024x1024_c{N}_tp2_ep1_*``
#: rows), written by :func:`llmcourse.validation.course_csv` in the course's format with short ids, and
#: one malformed row to show the per-row report.
EXAMPLE_ROWS = """\
id,gpu,tp,model,weights,kv,engine,isl,osl,load_kind,concurrency,metric,value
c4:tpot,H200 SXM,2,Llama-3.1-70B,fp8,bf16,vLLM,1024,1024,concurrency,4,tpot_ms,13.91
c4:ttft,H200 SXM,2,Llama-3.1-70B,fp8,bf16,vLLM,1024,1024,concurrency,4,ttft_ms,121.29
c8:tpot,H200 SXM,2,Llama-3.1-70B,fp8,bf16,vLLM,1024,1024,concurrency,8,tpot_ms,14.36
c8:ttft,H200 SXM,2,Llama-3.1-70B,fp8,bf16,vLLM,1024,1024,concurrency,8,ttft_ms,154.12
c16:tpot,H200 SXM,2,Llama-3.1-70B,fp8,bf16,vLLM,1024,1024,concurrency,16,tpot_ms,15.65
c16:ttft,H200 SXM,2,Llama-3.1-70B,fp8,bf16,vLLM,1024,1024,concurrency,16,ttft_ms,189.85
c32:tpot,H200 SXM,2,Llama-3.1-70B,fp8,bf16,vLLM,1024,1024,concurrency,32,tpot_ms,20.35
c32:ttft,H200 SXM,2,Llama-3.1-70B,fp8,bf16,vLLM,1024,1024,concurrency,32,ttft_ms,271.56
c64:tpot,H200 SXM,2,Llama-3.1-70B,fp8,bf16,vLLM,1024,1024,concurrency,64,tpot_ms,22.71
c64:ttft,H200 SXM,2,Llama-3.1-70B,fp8,bf16,vLLM,1024,1024,concurrency,64,ttft_ms,417.03
c0:tpot,H200 SXM,2,Llama-3.1-70B,fp8,bf16,vLLM,1024,1024,concurrency,0,tpot_ms,13.5
"""


@lru_cache(maxsize=8)
def _fitted(text: str) -> tuple:
    """The pasted rows read, predicted and refitted (:func:`llmcourse.validation.own_benchmark` before its
    brief): they depend on the text alone, so a change of the brief's controls only re-plans."""
    return own_fitted(text, True, None, {})


def _own(text: str, requests_per_second: int, ttft_ms: int, tpot_ms: int) -> OwnBenchmark:
    brief = Brief(requests_per_second, 1, 1, Q_(ttft_ms, _MS), Q_(tpot_ms, _MS))  # lengths: the setup's
    return own_replanned(_fitted(text), brief)  # own_benchmark(text, bounded=True, brief=brief)


def own_benchmark_calculator(text: str = EXAMPLE_ROWS) -> Calculator:
    """Paste measured rows in any format the package reads -> the per-row report of what was read and
    skipped, the error of the course's method on them, the refitted parameters and the refit's error, and
    a fleet re-planned for the most-measured setup (a brief of the requests per second and the targets
    given) under the course's parameters and the refitted ones.
    Text in no known format (or none) shows one line naming the formats.

    Examples
    --------
    >>> c = own_benchmark_calculator()
    >>> dict(c.rows)["read"]
    "the course's CSV: 10 measurements, 1 row skipped"
    >>> dict(c.rows)["skipped: row 12 (c0:tpot)"]
    "column 'concurrency' must be at least 1 (requests in flight); got 0"
    >>> c.set(text="no table here").error[:80]
    "pasted text: not a format this package reads; it reads the course's CSV (the col"
    """
    box = w.Textarea(
        value=text,
        description="Rows",
        placeholder="paste CSV rows (the course's or aiconfigurator's) or vllm bench serve JSON",
        layout=w.Layout(width="95%", height="14em"),
        continuous_update=False,
    )
    ex = REPLAN_EXAMPLE
    controls = {
        "text": box,
        "requests_per_second": int_box(ex["requests_per_second"], "Requests/s to re-plan"),
        "ttft_ms": int_box(ex["ttft_ms"], "TTFT target (ms)"),
        "tpot_ms": int_box(ex["tpot_ms"], "TPOT target (ms)"),
    }
    return Calculator(_own, controls, title="Your own benchmark")
