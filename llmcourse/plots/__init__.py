"""Figures for the chapters: thin over the planner, axes always labelled with units.

Chapter figures live in the submodules (``llmcourse.plots.<topic>``); this module holds the
shared style helpers.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt

__all__ = ["mark_point", "new_figure"]


def new_figure(width: float = 6.4, height: float = 3.6) -> tuple[Any, Any]:
    """A figure and axes in the book's style."""
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    ax.grid(True, alpha=0.3)
    return fig, ax


def mark_point(ax: Any, x: float, y: float, label: str) -> None:
    """Mark and label the point the text talks about."""
    ax.plot([x], [y], "o", color="crimson", zorder=5)
    ax.annotate(label, (x, y), textcoords="offset points", xytext=(8, 8), color="crimson")
