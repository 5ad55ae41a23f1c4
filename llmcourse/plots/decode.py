"""Figures of the chapter *Decode: paced by memory, until the batch is large*: the roofline with decode and prefill marked."""

from __future__ import annotations

from typing import Any

import numpy as np

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.planner.roofline import attainable_flops, decode_point, prefill_point, ridge_intensity
from llmcourse.plots import finish, new_figure
from llmcourse.replica.step import matmul_precision
from llmcourse.units import Q_

__all__ = ["roofline"]


def roofline(
    model: str,
    gpu: str,
    *,
    context_tokens: float = 2_304,
    batches: tuple[int, ...] = (1, 64),
    prompt_tokens: float = 2_048,
    weight_bytes: Any = None,
    assumptions: Assumptions | str | None = None,
) -> Any:
    """Attainable FLOP/s against arithmetic intensity at the efficiencies of ``assumptions`` (the
    course's by default), with decode steps at ``batches`` and one prefill of ``prompt_tokens``
    marked where they sit."""
    a = resolve(assumptions)
    eff = dict(compute_precision=matmul_precision(weight_bytes, gpu, a, model), assumptions=a)
    _fig, ax = new_figure()
    xs = np.logspace(-1, 4.2, 200)
    ys = [attainable_flops(gpu, Q_(x, "FLOP/B"), **eff).to("TFLOP/s").m for x in xs]
    label = f"roofline ({a.bandwidth_efficiency:.0%} bandwidth, {a.compute_efficiency:.0%} compute)"
    ax.loglog(xs, ys, color="black", label=label)
    ridge = ridge_intensity(gpu, **eff).m
    ax.axvline(ridge, ls=":", color="grey")
    ax.annotate(f"ridge {ridge:,.0f} FLOP/B", (ridge, ys[0]), textcoords="offset points", xytext=(4, 4), color="grey")
    common = dict(weight_bytes=weight_bytes, assumptions=a)
    points = [decode_point(model, gpu, batch=b, context_tokens=context_tokens, **common) for b in batches]
    points.append(prefill_point(model, gpu, prompt_tokens, **common))
    for p, colour in zip(points, ["crimson", "darkorange", "royalblue", "green"], strict=False):
        x, y = p.intensity.m, p.achieved.to("TFLOP/s").m
        ax.plot([x], [y], "o", color=colour, zorder=5)
        ax.annotate(
            f"{p.label}\n{x:,.0f} FLOP/B, {y:,.0f} TFLOP/s",
            (x, y),
            textcoords="offset points",
            xytext=(-6, -30) if x > ridge else (6, -22),  # right of the ridge: the label to the left of its point
            ha="right" if x > ridge else "left",
            color=colour,
            fontsize=8,
        )
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax.set_ylabel("attainable FLOP/s (TFLOP/s)")
    ax.set_title(f"{model} on {gpu}, {label}")  # in the title: a legend would cover the points on a phone
    return finish(
        ax,
        "A roofline (log-log): attainable FLOP/s against arithmetic intensity, with decode steps and a prefill marked where they sit.",
    )
