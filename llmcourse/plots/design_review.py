"""Figures of the chapter *Design review*."""

from __future__ import annotations

from typing import Any

from llmcourse.planner.design import Plan
from llmcourse.planner.levers import Lever
from llmcourse.plots import finish, new_figure

__all__ = ["lever_bars"]


def lever_bars(base: Plan, levers: list[Lever]) -> Any:
    """GPUs with each lever switched on, beside the baseline (levers that do not fit are left out)."""
    shown = [x for x in levers if x.fits]
    _fig, ax = new_figure()
    names = [x.name for x in shown][::-1]
    gpus = [x.gpus for x in shown][::-1]
    colours = ["tab:green" if x.meets_targets else "tab:red" for x in shown][::-1]
    ax.barh(names, gpus, color=colours)
    if base.fits:
        ax.axvline(base.gpus, color="k", ls="--", lw=1)
        ax.annotate(
            f"baseline {base.gpus:,}",
            (base.gpus, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(4, -12),
            textcoords="offset points",
        )
    ax.set_xlabel("GPUs for the brief (green: targets met)")
    ax.set_title(f"{base.model} on {base.gpu}: one lever at a time")
    return finish(
        ax,
        "GPUs the brief needs with one lever applied at a time, as horizontal bars (green where the targets are met).",
    )
