"""Figures of the chapter *Weights* (``book/02_weights.md``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.plots import WIDTH, finish, mark_point, new_figure
from llmcourse.replica.memory import usable_memory, weight_bytes

__all__ = ["weights_by_precision"]

# The calculator's memory bar is drawn without matplotlib, as SVG: llmcourse.widgets.weights.memory_bar_svg.


def weights_by_precision(
    names: Sequence[str],
    gpu: str = "H100 SXM",
    precisions: Sequence[str] = ("bf16", "fp8", "int4"),
    gpu_counts: Sequence[int] = (1, 2, 4, 8),
    mark: tuple[str, str] | None = None,
    assumptions: Assumptions | str | None = None,
) -> Any:
    """Weight bytes of several models at several precisions, against the usable memory of 1, 2, 4, 8 GPUs
    by ``assumptions`` (the course's by default).

    ``mark`` = (model, precision) marks one bar.
    """
    a = resolve(assumptions)
    fig, ax = new_figure(WIDTH, 3.2 + 0.6 * len(names))
    height = 0.8 / len(precisions)
    for j, p in enumerate(precisions):
        ys = [i + j * height for i in range(len(names))]
        xs = [weight_bytes(n, p).to("GB").m for n in names]
        ax.barh(ys, xs, height=height, label=p.upper())
        if mark is not None and mark[1] == p and mark[0] in names:
            i = list(names).index(mark[0])
            mark_point(ax, xs[i], ys[i], f"{xs[i]:,.1f} GB")
    for k, n in enumerate(gpu_counts):
        x = usable_memory(gpu, n, assumptions=a).to("GB").m
        ax.axvline(x, color="k", ls=":", lw=1)
        # staggered in two rows: on a phone-width figure neighbouring lines are closer than their labels are wide
        ax.text(x, -0.5 - 0.55 * (k % 2), f"{n}: {x:,.0f} GB", ha="center", va="top", fontsize=7)
    ax.set_yticks([i + height * (len(precisions) - 1) / 2 for i in range(len(names))], list(names))
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("weight memory (GB, log scale)")
    share = f"{a.memory_fraction:.0%}" + (" of the GiB" if a.memory_unit == "GiB" else "")
    counts = ", ".join(map(str, gpu_counts))
    ax.set_title(f"dotted lines: usable memory (GB, {share}) of {counts} {gpu} GPUs", fontsize=9, pad=44)
    fig.legend(loc="outside lower center", ncol=len(precisions), fontsize=8, frameon=False)
    return finish(
        ax,
        "Weight memory of each model at each precision as bars (log scale), against the usable memory of one or more GPUs as dotted lines.",
    )
