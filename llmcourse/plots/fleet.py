"""Figures of the chapter *Sizing the fleet*."""

from __future__ import annotations

from typing import Any

import numpy as np
import pint

from llmcourse.formulas import FORMULAS as F
from llmcourse.plots import finish, mark_point, new_figure
from llmcourse.units import Q_

__all__ = ["cost_vs_utilisation", "gpus_vs_throughput"]


def cost_vs_utilisation(cost_full: pint.Quantity, *, mark: float = 0.3, label: str = "") -> Any:
    """Dollars per million output tokens against the fleet's average utilisation; marks ``mark``."""
    us = np.linspace(0.1, 1.0, 91)
    costs = [F["cost_at_utilisation"](cost_full=cost_full, utilisation=u).to("USD").m for u in us]
    _fig, ax = new_figure()
    ax.plot(us * 100, costs)
    ax.axhline(cost_full.to("USD").m, color="grey", ls="--", lw=1)
    ax.set_xlabel("average utilisation of the fleet (%)")
    ax.set_ylabel("$ per million output tokens")
    ax.set_title(label or "GPUs bill by the hour, busy or idle")
    y = F["cost_at_utilisation"](cost_full=cost_full, utilisation=mark).to("USD").m
    mark_point(ax, mark * 100, y, f"${y:.3f} at {mark:.0%} ({1 / mark:.1f}x)")
    return finish(
        ax,
        "Cost per million output tokens against the fleet's average utilisation: GPUs bill by the hour, so the cost falls as one over the utilisation.",
    )


def gpus_vs_throughput(
    demand: pint.Quantity, *, per_gpu: Any = (500, 1_000, 2_000, 4_000, 8_000), mark: float = 2_000
) -> Any:
    """GPUs needed for a token demand against each GPU's throughput (log-log); marks ``mark``."""
    xs = np.geomspace(min(per_gpu), max(per_gpu), 50)
    ys = [F["replicas_needed"](demand=demand, throughput=Q_(x, "1/s")).m for x in xs]
    _fig, ax = new_figure()
    ax.loglog(xs, ys)
    ax.set_xlabel("output tokens per second per GPU")
    ax.set_ylabel("GPUs needed")
    ax.set_title(f"{demand.to('1/s').m / 1e6:.1f} M output tokens per second")
    y = F["replicas_needed"](demand=demand, throughput=Q_(mark, "1/s")).m
    mark_point(ax, mark, y, f"{y:,.0f} GPUs at {mark:,.0f} tok/s")
    return finish(ax, "GPUs needed for the demand against the output tokens per second each GPU serves.")
