"""Figures of the chapter *Grouped-query attention* (``book/04_gqa.md``)."""

from __future__ import annotations

from typing import Any

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import models
from llmcourse.planner.memory import kv_head_options
from llmcourse.plots import finish, mark_point, new_figure
from llmcourse.replica.memory import kv_bytes_per_token, max_batch

__all__ = ["kv_heads_sweep"]


def kv_heads_sweep(
    model: str, context: int, gpu: str = "H100 SXM", *, assumptions: Assumptions | str | None = None
) -> Any:
    """KV per token (bars) and sequences that fit (line) for every KV-head count the query heads allow,
    the batch under ``assumptions`` (the course's by default).

    Marks the model's own KV-head count.
    """
    a = resolve(assumptions)
    orig = models[model]
    ks = kv_head_options(orig)
    kib = [kv_bytes_per_token(orig.with_(kv_heads=k)).to("KiB").m for k in ks]
    batch = [max_batch(orig.with_(kv_heads=k), gpu, context, assumptions=a) for k in ks]
    _fig, ax = new_figure()
    pos = list(range(len(ks)))
    ax.bar(pos, kib, color="tab:blue", alpha=0.6)
    ax.set_xticks(pos, [str(k) for k in ks])
    ax.set_xlabel(f"KV heads (of {orig.heads} query heads): 1 is MQA, {orig.heads} is MHA")
    ax.set_ylabel("KV cache per token (KiB)", color="tab:blue")
    ax2 = ax.twinx()
    ax2.plot(pos, batch, "o-", color="tab:orange")
    ax2.set_ylabel(f"sequences that fit at {context:,} tokens", color="tab:orange")
    i = ks.index(orig.kv_heads)
    mark_point(ax2, pos[i], batch[i], f"{orig.kv_heads} KV heads: {batch[i]} fit")
    ax.set_title(f"{model} on one {gpu}, BF16", fontsize=10)
    return finish(
        ax,
        "KV cache per token (left axis) and sequences that fit (right axis) as the number of KV heads goes from one (MQA) to the number of query heads (MHA).",
    )
