"""Figures of the chapter *Speculative decoding*: the speed-up against the batch for several draft lengths,
where each crosses 1 marked."""

from __future__ import annotations

from typing import Any

import numpy as np

from llmcourse.planner.speculation import crossover_batch
from llmcourse.plots import finish, new_figure
from llmcourse.replica.speculative import Speculation, speculative_memory, speculative_step

__all__ = ["speedup_against_batch"]


def speedup_against_batch(
    model: str,
    gpu: str,
    speculation: Speculation,
    *,
    context_tokens: float,
    draft_lengths: tuple[int, ...] = (1, 2, 3, 4, 5, 6),
    max_batch: int = 1_024,
    **kw: Any,
) -> Any:
    """Speed-up over plain decode (per user and per GPU: the batch is the same) against the batch, one line per
    draft length (the rest of ``speculation`` kept), from :func:`llmcourse.replica.speculative.speculative_step`. Each
    line's crossover (the first batch where speculation costs throughput) is marked and named in the legend,
    and the batches beyond what fits in memory with the draft (at the draft length of ``speculation``) are
    shaded."""
    bs = np.unique(np.geomspace(1, max_batch, 40).astype(int))
    _fig, ax = new_figure()
    ax.axhline(1, color="black", lw=0.8)
    colours = iter(("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666"))
    for k in draft_lengths:
        spec = speculation.with_(draft_tokens=k)
        s = [
            speculative_step(model, gpu, spec, batch=int(b), context_tokens=context_tokens, check_memory=False, **kw)
            for b in bs
        ]
        colour = next(colours)
        x = crossover_batch(model, gpu, spec, context_tokens=context_tokens, top=max_batch, **kw)
        label = f"k = {k}: " + (f"costs throughput from {x:,}" if x is not None else "pays throughout")
        ax.plot(bs, [p.speedup for p in s], color=colour, label=label)
        if x is not None:
            ax.plot([x], [1], "o", color=colour)
    fit = speculative_memory(model, gpu, speculation, context_tokens=context_tokens, **kw).max_batch
    if fit < max_batch:
        shade = f"beyond memory with the draft (k = {speculation.draft_tokens})"
        ax.axvspan(max(fit, 1), max_batch, color="grey", alpha=0.15, label=shade)
    ax.set_xscale("log")
    ax.set_xlabel("concurrent requests (batch)")
    ax.set_ylabel("speed-up over plain decode (x)")
    ax.set_title(f"{model} on {gpu}, {speculation.kind}, acceptance {speculation.acceptance:g}", fontsize=10)
    ax.legend(loc="lower left", fontsize=7)
    return finish(ax, "Speed-up of speculative decoding over plain decode against the number of concurrent requests.")
