"""Figures of the chapter *A first estimate*."""

from __future__ import annotations

from typing import Any

from llmcourse.plots import finish, mark_point, new_figure
from llmcourse.replica.memory import max_batch

__all__ = ["batch_vs_gpus"]


def batch_vs_gpus(model: str, gpu: str, *, context_tokens: float, weight_bytes: Any = None, max_gpus: int = 8) -> Any:
    """Conversations that fit against the number of GPUs; marks two GPUs."""
    ns = list(range(1, max_gpus + 1))
    batches = [max_batch(model, gpu, context_tokens, n_gpus=n, weight_bytes=weight_bytes) for n in ns]
    _fig, ax = new_figure()
    ax.plot(ns, batches, "o-")
    ax.set_xlabel("GPUs holding one copy of the model")
    ax.set_ylabel("conversations that fit (batch)")
    ax.set_title(f"{model} on {gpu}, {context_tokens:,.0f}-token conversations")
    mark_point(ax, 2, batches[1], f"{batches[1]} on 2 GPUs")
    return finish(ax, "Conversations that fit in memory against the number of GPUs holding one copy of the model.")
