"""Figures of the chapter *Tokens* (``book/01_tokens.md``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from llmcourse.formulas import FORMULAS as F
from llmcourse.plots import finish, mark_point, new_figure
from llmcourse.units import Q_

__all__ = ["stream_time"]


def stream_time(
    speeds: Sequence[float] = (20, 50, 100),
    max_tokens: int = 2_000,
    mark: tuple[float, float] | None = (1_250, 50),
    reading_speed: float | None = None,
) -> Any:
    """Seconds to stream an answer against its length, one line per decode speed (tok/s).

    ``mark`` = (tokens, speed) marks one point; ``reading_speed`` (tok/s) adds the time a reader
    needs to read the answer, for comparison.
    """
    _fig, ax = new_figure()
    tokens = np.linspace(1, max_tokens, 200)
    for s in speeds:
        secs = [F["generation_time"](tokens_per_request=t, token_rate=Q_(s, "1/s")).to("s").m for t in tokens]
        ax.plot(tokens, secs, label=f"{s:g} tok/s")
    if reading_speed:
        secs = [
            F["generation_time"](tokens_per_request=t, token_rate=Q_(reading_speed, "1/s")).to("s").m for t in tokens
        ]
        ax.plot(tokens, secs, "k--", lw=1, label=f"reading it ({reading_speed:.1f} tok/s)")
    if mark is not None:
        t, s = mark
        y = F["generation_time"](tokens_per_request=t, token_rate=Q_(s, "1/s")).to("s").m
        mark_point(ax, t, y, f"{y:.0f} s")
    ax.set_xlabel("answer length (tokens)")
    ax.set_ylabel("time to stream the answer (s)")
    ax.set_ylim(0, max_tokens / min(speeds) * 1.05)
    ax.legend(fontsize=8)
    return finish(
        ax, "The time to stream an answer against its length, one line per streaming speed, a reader's pace dashed."
    )
