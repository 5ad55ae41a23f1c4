"""Figures of the chapter *Decode is memory-bound*: the roofline with decode and prefill marked."""

from __future__ import annotations

from typing import Any

import numpy as np

from llmcourse.plots import new_figure
from llmcourse.roofline import attainable_flops, decode_point, prefill_point, ridge_intensity
from llmcourse.units import Q_

__all__ = ["roofline"]


def roofline(
    model: str,
    gpu: str,
    *,
    context_tokens: float = 2_304,
    batches: tuple[int, ...] = (1, 64),
    prompt_tokens: float = 2_048,
) -> Any:
    """Attainable FLOP/s against arithmetic intensity (0.7 bandwidth, 0.5 compute), with decode
    steps at ``batches`` and one prefill of ``prompt_tokens`` marked where they sit."""
    _fig, ax = new_figure()
    xs = np.logspace(-1, 4.2, 200)
    ys = [attainable_flops(gpu, Q_(x, "FLOP/B")).to("TFLOP/s").m for x in xs]
    ax.loglog(xs, ys, color="black", label="roofline (70% bandwidth, 50% compute)")
    ridge = ridge_intensity(gpu).m
    ax.axvline(ridge, ls=":", color="grey")
    ax.annotate(f"ridge {ridge:,.0f} FLOP/B", (ridge, ys[0]), textcoords="offset points", xytext=(4, 4), color="grey")
    points = [decode_point(model, gpu, batch=b, context_tokens=context_tokens) for b in batches]
    points.append(prefill_point(model, gpu, prompt_tokens))
    for p, colour in zip(points, ["crimson", "darkorange", "royalblue", "green"], strict=False):
        x, y = p.intensity.m, p.achieved.to("TFLOP/s").m
        ax.plot([x], [y], "o", color=colour, zorder=5)
        ax.annotate(
            f"{p.label}\n{x:,.0f} FLOP/B, {y:,.0f} TFLOP/s",
            (x, y),
            textcoords="offset points",
            xytext=(6, -22),
            color=colour,
            fontsize=8,
        )
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax.set_ylabel("attainable FLOP/s (TFLOP/s)")
    ax.set_title(f"{model} on {gpu}")
    ax.legend(loc="upper left", fontsize=8)
    return ax
