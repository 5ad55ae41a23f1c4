"""Figures of the chapter *How good is the estimate?* (``book/12_validation.md``)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from llmcourse.plots import finish, new_panels
from llmcourse.validation import METRIC_NAMES, METRICS, Evidence, Validation, family

__all__ = ["ENGINE_COLORS", "evidence_scatter", "predicted_vs_measured", "ratios", "scatter_data"]

_STYLE = {
    "dense": ("o", "tab:blue"),
    "MoE": ("s", "tab:orange"),
    "KV-starved": ("D", "tab:red"),
    "latency": ("^", "tab:green"),
}


def _panel(
    ax: Any, xs: list[float], ys: list[float], fams: list[str], ids: list[str], unit: str, label: set[str]
) -> None:
    lo, hi = min(xs + ys) / 3, max(xs + ys) * 3
    line = np.array([lo, hi])
    ax.fill_between(line, line / 2, line * 2, color="grey", alpha=0.15, label="within 2x")
    ax.plot(line, line, "k-", lw=0.8, label="predicted = measured")
    for fam, (marker, color) in _STYLE.items():
        pts = [(x, y) for x, y, f in zip(xs, ys, fams, strict=True) if f == fam]
        if pts:
            ax.scatter(*zip(*pts, strict=True), marker=marker, color=color, label=fam, zorder=3)
    for x, y, i in zip(xs, ys, ids, strict=True):
        if i in label:
            ax.annotate(i, (x, y), textcoords="offset points", xytext=(5, -10), color="crimson", fontsize=8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    for axis in (ax.xaxis, ax.yaxis):
        if hi / lo < 100:
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.0f}" if x >= 1 else f"{x:g}"))
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(f"measured ({unit})")
    ax.set_ylabel(f"predicted ({unit})")
    ax.grid(True, which="both", alpha=0.3)


def predicted_vs_measured(v: Validation, which: str = "default", *, label_outside: bool = True) -> Any:
    """Predicted against measured on log axes, throughput and latency rows in two panels, with
    the band within a factor of 2 shaded; rows outside the band are labelled.

    ``which`` is ``"default"`` (the validation's assumptions at their own efficiencies: the course's
    method unless :func:`~llmcourse.validation.validate` was given others), ``"calibrated"`` or ``"held_out"``.
    """
    preds = {"default": [p.value for p in v.default], "calibrated": list(v.calibrated), "held_out": list(v.held_out)}[
        which
    ]
    _fig, axes = new_panels(1, 2, width=9.6, height=4.2, gridspec_kw={"width_ratios": [3, 2]})
    for ax, is_tput, unit in ((axes[0], True, "output tok/s"), (axes[1], False, "ms")):
        keep = [i for i, r in enumerate(v.rows) if (r.metric == "output_tokens_per_s") == is_tput]
        xs = [v.rows[i].value for i in keep]
        ys = [preds[i] for i in keep]
        ids = [v.rows[i].id for i in keep]
        out = {i for i, x, y in zip(ids, xs, ys, strict=True) if abs(math.log(y / x)) > math.log(2)}
        _panel(ax, xs, ys, [family(v.rows[i]) for i in keep], ids, unit, out if label_outside else set())
        ax.set_title("throughput rows" if is_tput else "latency rows (ITL, TTFT)")
    axes[0].legend(loc="upper left", fontsize=8)
    lead = "Predicted against measured (log-log) for the throughput rows (left) and the latency rows (right), the diagonal and a band of a factor of 2 drawn."
    return finish(axes, lead)


def _method(v: Validation) -> str:
    """The legend's name of the uncalibrated predictions: the course's method, or the preset's name."""
    return "course's method" if v.assumptions.name == "course" else v.assumptions.name


def ratios(v: Validation) -> Any:
    """Predicted / measured for every row: by the validation's assumptions (the course's method unless
    others were given), calibrated and held out."""
    _fig, ax = new_panels(1, 1, width=9.6, height=3.8)
    x = np.arange(len(v.rows))
    series = (
        (_method(v), [p.value for p in v.default], "o"),
        ("calibrated", list(v.calibrated), "x"),
        ("held out (leave one out)", list(v.held_out), "+"),
    )
    ax.axhspan(0.5, 2.0, color="grey", alpha=0.15, label="within 2x")
    ax.axhline(1.0, color="k", lw=0.8)
    for (name, preds, marker), dx in zip(series, (-0.2, 0.0, 0.2), strict=True):
        r = [p / row.value for p, row in zip(preds, v.rows, strict=True)]
        ax.plot(x + dx, r, marker, linestyle="none", label=name)
    ax.set_yscale("log")
    ax.set_yticks([0.1, 0.25, 0.5, 1, 2, 4])
    ax.yaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xticks(x, [r.id for r in v.rows], rotation=90, fontsize=8)
    ax.set_ylabel("predicted / measured")
    ax.set_xlabel("row of the measurements table")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncols=4, loc="upper left")
    return finish(
        ax,
        "Predicted over measured for every row of the measurements table (log scale), the band within a factor of 2 shaded.",
    )


#: The colour of each engine in :func:`evidence_scatter` (another engine gets grey).
ENGINE_COLORS = {"TensorRT-LLM": "tab:green", "vLLM": "tab:blue", "SGLang": "tab:orange"}


def scatter_data(ev: Evidence, metric: str, which: str = "predicted") -> dict[str, tuple[list[float], list[float]]]:
    """What :func:`evidence_scatter` draws for one metric: engine -> (measured, predicted), in the metric's
    unit, in row order (``which`` as :meth:`~llmcourse.validation.Evidence.predictions` takes)."""
    preds = ev.predictions(which)
    out: dict[str, tuple[list[float], list[float]]] = {}
    for row, f, p in zip(ev.rows, ev.facets, preds, strict=True):
        if f["metric"] == metric:
            xs, ys = out.setdefault(f["engine"], ([], []))
            xs.append(row.value)
            ys.append(p)
    return dict(sorted(out.items()))


def evidence_scatter(
    ev: Evidence,
    which: str = "predicted",
    metrics: tuple[str, ...] = ("tpot_ms", "ttft_ms"),
    *,
    mark: dict[str, tuple[float, float, str]] | None = None,
) -> Any:
    """Predicted against measured on log-log axes, one panel per metric, the points coloured by engine,
    the diagonal and the lines of a factor of 2 either way drawn. ``mark`` (metric -> (measured,
    predicted, label)) rings and labels the point the text discusses."""
    _fig, axes = new_panels(1, len(metrics), width=5.2 * len(metrics), height=4.6, squeeze=False)
    for ax, metric in zip(axes[0], metrics, strict=True):
        data = scatter_data(ev, metric, which)
        every = [v for xs, ys in data.values() for v in xs + ys]
        lo, hi = min(every) / 1.5, max(every) * 1.5
        line = np.array([lo, hi])
        ax.plot(line, line, "k-", lw=0.8, label="predicted = measured")
        for k, style in ((2.0, "--"), (0.5, "--")):
            ax.plot(line, line * k, "k" + style, lw=0.8, label="a factor of 2 either way" if k == 2 else None)
        for engine, (xs, ys) in data.items():
            ax.scatter(
                xs, ys, s=6, alpha=0.45, color=ENGINE_COLORS.get(engine, "grey"), label=f"{engine} ({len(xs):,})"
            )
        if mark and metric in mark:
            x, y, text = mark[metric]
            ax.scatter([x], [y], s=120, facecolors="none", edgecolors="crimson", lw=1.5, zorder=4)
            ax.annotate(
                text, (x, y), textcoords="offset points", xytext=(-10, 12), ha="right", color="crimson", fontsize=8
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
            axis.set_minor_formatter(NullFormatter())
        unit = METRICS[metric]
        ax.set_xlabel(f"measured {METRIC_NAMES[metric]} ({unit})")
        ax.set_ylabel(f"predicted {METRIC_NAMES[metric]} ({unit})")
        ax.set_title(f"{METRIC_NAMES[metric]}, {sum(len(xs) for xs, _ in data.values()):,} rows")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(loc="upper left", fontsize=8, markerscale=2)
    lead = "Predicted against measured (log-log), one panel per metric, one colour per engine, the diagonal and a factor of 2 either way drawn."
    return finish(axes[0], lead)
