"""Figures of the chapter *The KV cache* (``book/03_kv_cache.md``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.plots import finish, mark_point, new_figure
from llmcourse.replica.base import model_of
from llmcourse.replica.memory import kv_bytes_per_sequence, max_batch

__all__ = ["batch_vs_context", "kv_vs_context"]


def batch_vs_context(
    names: Sequence[Any],
    gpu: str = "H100 SXM",
    *,
    n_gpus: int = 1,
    weight_bytes: Any = None,
    min_context: int = 256,
    max_context: int = 131_072,
    mark: tuple[Any, int] | None = None,
    assumptions: Assumptions | str | None = None,
) -> Any:
    """Sequences that fit beside the weights against the context length (log-log), one line per model,
    the usable memory by ``assumptions`` (the course's by default). Each line stops at its model's context limit
    (``max_position``, where it ends in a dot; a model without one runs to ``max_context``): past it the model serves no sequence at all.

    ``mark`` = (model, context) marks one point.
    """
    a = resolve(assumptions)
    fit = dict(n_gpus=n_gpus, weight_bytes=weight_bytes, assumptions=a)
    _fig, ax = new_figure()
    ctx = np.unique(np.geomspace(min_context, max_context, 60).astype(int))
    for n in names:
        m = model_of(n)
        limit = min(m.max_position or max_context, max_context)
        upto = np.append(ctx[ctx < limit], limit)  # no point past the model's context limit
        b = np.array([max_batch(m, gpu, int(c), **fit) for c in upto], dtype=float)
        b[b == 0] = np.nan  # nothing fits: leave a gap on the log axis
        (line,) = ax.plot(upto, b, label=f"{m.name} (to {m.max_position:,})" if limit < max_context else m.name)
        if limit < max_context:
            ax.plot(upto[-1:], b[-1:], "o", color=line.get_color(), ms=4)
    if mark is not None:
        m, c = mark
        b = max_batch(m, gpu, c, **fit)
        mark_point(ax, c, b, f"{b} at {c:,} tokens")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("context per sequence (tokens, log scale)")
    ax.set_ylabel("sequences that fit (log scale)")
    usable = f"{a.memory_fraction:.0%} of memory usable" + (" (read as GiB)" if a.memory_unit == "GiB" else "")
    ax.set_title(f"{n_gpus} x {gpu}, {usable}, BF16 weights and cache", fontsize=10)
    ax.legend(fontsize=8)
    return finish(
        ax, "How many sequences fit in memory as the context per sequence grows, one line per model (log scales)."
    )


def kv_vs_context(
    names: Sequence[Any],
    contexts: Sequence[int] = (1_000, 4_000, 32_000, 128_000),
    memory_line: tuple[str, float] | None = None,
) -> Any:
    """KV cache of one sequence (GB, log scale) at a few context lengths, one bar group per model.

    ``memory_line`` = (label, GB) draws a horizontal reference line, e.g. one GPU's memory.
    """
    _fig, ax = new_figure()
    width = 0.8 / len(names)
    x = np.arange(len(contexts))
    for i, n in enumerate(names):
        label = n if isinstance(n, str) else n.name
        gb = [kv_bytes_per_sequence(n, c).to("GB").m for c in contexts]
        bars = ax.bar(x + i * width, gb, width=width, label=label)
        ax.bar_label(bars, labels=[f"{v:,.3g}" for v in gb], fontsize=7)
    if memory_line is not None:
        ax.axhline(memory_line[1], color="k", ls="--", lw=1)
        ax.text(x[0] - width / 2, memory_line[1] * 1.15, memory_line[0], fontsize=8)
    ax.set_xticks(x + width * (len(names) - 1) / 2, [f"{c:,}" for c in contexts])
    ax.set_yscale("log")
    ax.set_xlabel("context (tokens)")
    ax.set_ylabel("KV cache of one sequence (GB, log scale)")
    ax.legend(fontsize=8)
    return finish(ax, "The KV cache of one sequence at each context length, as bars per model (log scale).")
