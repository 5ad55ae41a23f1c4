"""Figures of the chapter *Queueing: what the averages hide*."""

from __future__ import annotations

import math
from typing import Any

from llmcourse.plots import finish, new_panels
from llmcourse.simulator import PERCENTILES, ClosedForm, SimResult
from llmcourse.validation.simulated import LoopPoint

__all__ = ["measured_vs_simulated", "percentiles_vs_load"]


def percentiles_vs_load(sweep: list[tuple[SimResult, ClosedForm]], *, knee_load: float | None = None) -> Any:
    """TTFT and TPOT percentiles (simulated) against load, the closed form dashed, the knee marked."""
    _fig, axes = new_panels(2, 1, height=6.4)  # stacked: each panel reads on a phone
    loads = [r.load * 100 for r, _ in sweep]
    for ax, key, title in ((axes[0], "ttft", "time to first token"), (axes[1], "tpot", "time per output token")):
        for q in PERCENTILES:
            ax.plot(loads, [getattr(r, key)[f"p{q}"].to("ms").m for r, _ in sweep], "o-", ms=3, label=f"p{q}")
        ax.plot(loads, [getattr(c, key).to("ms").m for _, c in sweep], "k--", label="closed form")
        ax.set_yscale("log")
        ax.set_xlabel("load: arrival rate / capacity (%)")
        ax.set_ylabel(f"{title} (ms)")
        ax.grid(True, alpha=0.3, which="both")
        if knee_load is not None:
            ax.axvline(knee_load * 100, color="crimson", lw=1)
            ax.annotate(
                f"knee ({knee_load:.0%})",
                (knee_load * 100, 0.9),
                xycoords=("data", "axes fraction"),
                xytext=(-6, 0),
                textcoords="offset points",
                ha="right",
                color="crimson",
            )
    axes[0].legend(loc="upper left")
    lead = "Simulated percentiles of the time to first token (top) and time per output token (bottom) against load, the closed form dashed (log scale)."
    return finish(axes, lead)


def measured_vs_simulated(curves: dict[str, list[LoopPoint]]) -> Any:
    """Measured time to first token and time per token (points) against concurrency, over the simulated curve
    (solid) and the closed form (dotted), one colour per setup (label: the setup)."""
    from matplotlib.ticker import FuncFormatter, ScalarFormatter

    def few(v: float, _pos: Any) -> str:  # minor log ticks: label 2 and 5 of each decade only, as plain numbers
        lead = round(v / 10 ** math.floor(math.log10(v)), 6) if v > 0 else 0
        return f"{v:g}" if lead in (2, 5) else ""

    fig, axes = new_panels(2, 1, height=7.4)  # stacked: each panel reads on a phone
    panels = (
        (axes[0], "ttft", "closed_form_ttft", "time to first token (ms)"),
        (axes[1], "tpot", "model_tpot", "time per output token (ms)"),
    )
    for k, (label, pts) in enumerate(curves.items()):
        colour = f"C{k}"
        cs = [p.concurrency for p in pts]
        for ax, key, closed, ylabel in panels:
            ax.plot(cs, [getattr(p, f"simulated_{key}") for p in pts], "-", color=colour, label=f"{label}: simulated")
            ax.plot(cs, [getattr(p, closed) for p in pts], ":", color=colour, label=f"{label}: closed form")
            ax.plot(
                cs, [getattr(p, f"measured_{key}") for p in pts], "o", color=colour, ms=5, label=f"{label}: measured"
            )
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            for axis in (ax.xaxis, ax.yaxis):
                axis.set_major_formatter(ScalarFormatter())
            ax.yaxis.set_minor_formatter(FuncFormatter(few))
            ax.set_xlabel("concurrency (requests in flight)")
            ax.set_ylabel(ylabel)
            ax.grid(True, alpha=0.3, which="both")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize=7, frameon=False)
    lead = "Measured time to first token (top) and time per output token (bottom) against concurrency, as points over the simulated curves (solid) and the closed form (dotted), one colour per setup."
    return finish(axes, lead)
