"""Figures of the chapter *Prefill is compute-bound*: time to first token against prompt length."""

from __future__ import annotations

from typing import Any

import numpy as np

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.plots import finish, mark_point, new_figure
from llmcourse.replica.prefilling import prefill
from llmcourse.replica.step import matmul_precision

__all__ = ["ttft_vs_prompt"]


def ttft_vs_prompt(
    model: str,
    gpu: str,
    *,
    max_tokens: int = 32_768,
    mark: int = 2_048,
    weight_bytes: Any = None,
    assumptions: Assumptions | str | None = None,
) -> Any:
    """Prefill time of one prompt against its length, with and without the causal attention term,
    under ``assumptions`` (the course's by default)."""
    a = resolve(assumptions)
    common = dict(weight_bytes=weight_bytes, assumptions=a)
    ts = np.unique(np.linspace(128, max_tokens, 120).astype(int))
    with_att = [prefill(model, gpu, t, attention=True, **common).time.to("ms").m for t in ts]
    without = [prefill(model, gpu, t, attention=False, **common).time.to("ms").m for t in ts]
    _fig, ax = new_figure()
    ax.plot(ts, with_att, label="2 FLOPs/parameter + causal attention")
    ax.plot(ts, without, "--", label="2 FLOPs/parameter only")
    y = prefill(model, gpu, mark, attention=True, **common).time.to("ms").m
    mark_point(ax, mark, y, f"{mark:,} tokens: {y:.0f} ms")
    ax.set_xlabel("prompt tokens")
    ax.set_ylabel("time to first token (ms)")
    peak = matmul_precision(weight_bytes, gpu, a, model).upper()
    ax.set_title(f"{model} on {gpu}, one prompt, {a.compute_efficiency:.0%} of the {peak} peak")
    ax.legend(fontsize=8)
    return finish(ax, "Time to first token against the prompt's length, with and without the causal attention term.")
