"""Figures of the chapter *Batching*: step time and throughput against batch, crossover marked."""

from __future__ import annotations

from typing import Any

import numpy as np

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.planner.roofline import crossover_batch
from llmcourse.plots import finish, new_figure
from llmcourse.replica.model import replica
from llmcourse.replica.step import matmul_precision

__all__ = ["step_and_throughput"]


def step_and_throughput(
    model: str,
    gpu: str,
    *,
    prompt_tokens: float = 256,
    answer_tokens: float = 64,
    max_batch: int = 1_024,
    attention_flops: bool = True,
    assumptions: Assumptions | str | None = None,
    per_op: bool = True,
) -> Any:
    """Decode step time (left axis) and output tokens/s (right axis) against the batch, from the replica
    model under ``assumptions`` (the course's by default: KV read at the average context prompt +
    answer/2, the slower-of-totals step rule);
    ``per_op`` adds the step time by the per-operation sum (``step_rule="sum"``) as a dashed line. The
    crossover batch of the slower-of-totals rule, if there is one, is a dashed vertical line."""
    a = resolve(assumptions).replace(decode_attention_flops=attention_flops)
    bs = np.unique(np.geomspace(1, max_batch, 80).astype(int))

    def step(b: int, rule: Assumptions) -> Any:
        r = replica(model, gpu, batch=b, prompt_tokens=prompt_tokens, answer_tokens=answer_tokens, assumptions=rule)
        return r.step

    steps = [step(int(b), a) for b in bs]
    # the context the method reads KV at
    ctx = replica(
        model, gpu, batch=1, prompt_tokens=prompt_tokens, answer_tokens=answer_tokens, assumptions=a
    ).kv_read_tokens
    _fig, ax = new_figure()
    ax.plot(bs, [s.step_time.to("ms").m for s in steps], color="crimson", label="step time")
    ax.plot(bs, [s.memory_time.to("ms").m for s in steps], ":", color="crimson", alpha=0.6, label="memory time")
    ax.plot(bs, [s.compute_time.to("ms").m for s in steps], ":", color="grey", label="compute time")
    if per_op and a.step_rule != "sum":
        summed = a.replace(step_rule="sum")
        per = [step(int(b), summed) for b in bs]
        ax.plot(bs, [s.step_time.to("ms").m for s in per], "--", color="darkred", label="step time, per-op sum")
    ax.set_xscale("log")
    ax.set_xlabel("concurrent requests (batch)")
    ax.set_ylabel("time per output token (ms)", color="crimson")
    ax2 = ax.twinx()
    ax2.plot(bs, [s.throughput.m for s in steps], color="royalblue", label="throughput")
    ax2.set_ylabel("output tokens/s, whole batch", color="royalblue")
    x = crossover_batch(
        model,
        gpu,
        context_tokens=ctx,
        attention_flops=a.decode_attention_flops,
        compute_precision=matmul_precision(2, gpu, a),
        assumptions=a,
    )
    if x is not None and x <= max_batch:
        ax.axvline(x, ls="--", color="black")
        ax.annotate(f"crossover {x:,.1f}", (x, ax.get_ylim()[1] * 0.9), textcoords="offset points", xytext=(-70, 0))
    ax.set_title(f"{model} on {gpu}, {prompt_tokens:,.0f} in / {answer_tokens:,.0f} out")
    ax.legend(loc="upper left", fontsize=8)
    return finish(
        ax,
        "Time per output token (left axis) and the whole batch's output tokens per second (right axis) against the number of concurrent requests.",
    )
