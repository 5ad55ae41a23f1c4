"""Figures of the chapter *Queueing: what the averages hide*."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt

from llmcourse.queueing import PERCENTILES, ClosedForm, SimResult

__all__ = ["percentiles_vs_load"]


def percentiles_vs_load(sweep: list[tuple[SimResult, ClosedForm]], *, knee_load: float | None = None) -> Any:
    """TTFT and TPOT percentiles (simulated) against load, the closed form dashed, the knee marked."""
    _fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.8), layout="constrained")
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
    return axes
