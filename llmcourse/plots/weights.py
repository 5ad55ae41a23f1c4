"""Figures of the chapter *Weights* (``book/02_weights.md``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llmcourse.planner import usable_memory, weight_bytes
from llmcourse.plots import mark_point, new_figure

__all__ = ["memory_bar", "weights_by_precision"]


def memory_bar(fit: Any, ax: Any = None) -> Any:
    """One bar of a replica's memory: weights, what is left for the KV cache, the reserved share.

    ``fit`` is a :class:`llmcourse.widgets.weights.WeightFit`.
    """
    if ax is None:
        _, ax = new_figure(6.4, 2.4)
    total = (fit.n_gpus * fit.gpu.memory).to("GB").m
    wts, usable = fit.weights.to("GB").m, fit.usable.to("GB").m
    colour = "tab:blue" if fit.fits else "tab:red"
    ax.barh([0], [wts], color=colour, label=f"weights ({fit.precision})")
    if fit.fits:
        ax.barh([0], [usable - wts], left=[wts], color="tab:green", alpha=0.6, label="left for the KV cache")
    ax.barh([0], [total - usable], left=[usable], color="0.8", label="reserved (not usable)")
    ax.axvline(usable, color="k", ls="--", lw=1)
    ax.set_xlim(0, max(total, wts) * 1.05)
    ax.set_yticks([])
    ax.set_xlabel("memory of the replica (GB)")
    ax.set_title(
        f"{fit.model.name} on {fit.n_gpus} x {fit.gpu.name}: {wts:,.1f} of {usable:,.1f} GB usable", fontsize=10
    )
    ax.figure.legend(loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    return ax


def weights_by_precision(
    names: Sequence[str],
    gpu: str = "H100 SXM",
    precisions: Sequence[str] = ("bf16", "fp8", "int4"),
    gpu_counts: Sequence[int] = (1, 2, 4, 8),
    mark: tuple[str, str] | None = None,
) -> Any:
    """Weight bytes of several models at several precisions, against the usable memory of 1, 2, 4, 8 GPUs.

    ``mark`` = (model, precision) marks one bar.
    """
    fig, ax = new_figure(6.4, 1.5 + 0.5 * len(names))
    height = 0.8 / len(precisions)
    for j, p in enumerate(precisions):
        ys = [i + j * height for i in range(len(names))]
        xs = [weight_bytes(n, p).to("GB").m for n in names]
        ax.barh(ys, xs, height=height, label=p.upper())
        if mark is not None and mark[1] == p and mark[0] in names:
            i = list(names).index(mark[0])
            mark_point(ax, xs[i], ys[i], f"{xs[i]:,.1f} GB")
    for n in gpu_counts:
        x = usable_memory(gpu, n).to("GB").m
        ax.axvline(x, color="k", ls=":", lw=1)
        ax.text(x, -0.6, f"{n} GPU{'s' if n > 1 else ''}\n{x:,.0f} GB", ha="center", va="top", fontsize=7)
    ax.set_yticks([i + height * (len(precisions) - 1) / 2 for i in range(len(names))], list(names))
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("weight memory (GB, log scale)")
    ax.set_title(f"dotted lines: usable memory (90%) of {gpu} GPUs", fontsize=9, pad=24)
    fig.legend(loc="outside lower center", ncol=len(precisions), fontsize=8, frameon=False)
    return ax
