"""Figures of the chapter *Mixture-of-experts routing*: fraction of experts touched against batch."""

from __future__ import annotations

from typing import Any

from llmcourse.catalog import models
from llmcourse.planner.moe import fraction_touched, simulate_fraction_touched
from llmcourse.plots import finish, new_figure

__all__ = ["fraction_vs_batch"]


def fraction_vs_batch(
    model_names: tuple[str, ...] = ("Mixtral-8x7B", "Qwen3-30B-A3B", "DeepSeek-V3"),
    *,
    max_batch: int = 256,
    simulate: tuple[int, ...] = (1, 4, 16, 64, 256),
    seed: int = 0,
) -> Any:
    """Expected fraction of experts touched (lines) and a seeded simulation (dots) for each model's (E, k)."""
    _fig, ax = new_figure()
    bs = list(range(1, max_batch + 1))
    for name in model_names:
        m = models[name]
        e, k = m.experts, m.experts_per_token
        line = ax.plot(bs, [fraction_touched(e, k, b) for b in bs], label=f"{name}: E={e}, k={k}")[0]
        sims = [simulate_fraction_touched(e, k, b, trials=300, seed=seed).mean for b in simulate]
        ax.plot(simulate, sims, "o", color=line.get_color())
    ax.set_xscale("log")
    ax.set_xlabel("tokens in the decode batch, B")
    ax.set_ylabel("fraction of experts touched per layer")
    ax.set_ylim(0, 1.05)
    ax.set_title("1 - (1 - k/E)^B (lines) and Monte Carlo (dots)")
    ax.legend(fontsize=8)
    return finish(
        ax,
        "The fraction of a layer's experts a decode batch touches against the batch size, the formula as lines and a Monte Carlo draw as dots.",
    )
