"""The calculator of the chapter *Batching* (``book/08_batching.md``).

The cycle (prefill the batch's prompts, then decode its answers) and the crossover come from the
planner and the roofline under the method chosen (an assumptions preset, the course's by default).
"""

from __future__ import annotations

from functools import lru_cache

import ipywidgets as w

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.planner.roofline import crossover_batch, first_compute_bound_from
from llmcourse.planner.serving import request_cycle
from llmcourse.replica.step import matmul_precision
from llmcourse.units import Q_, fmt, parsed_unit
from llmcourse.widgets import (
    Calculator,
    float_slider,
    gpu_dropdown,
    int_box,
    int_slider,
    model_dropdown,
    preset_dropdown,
)

__all__ = ["batching_calculator"]

_USD_H = parsed_unit("USD/hour")[0]  # parsed once: pint parses a unit string anew each time


@lru_cache(maxsize=32)
def _method(method: str, attention_flops: bool) -> Assumptions:
    """The method with the decode attention FLOPs counted or not (the same for every update that keeps both)."""
    return resolve(method).replace(decode_attention_flops=attention_flops)


def _rows(
    model: str,
    gpu: str,
    prompt_tokens: int,
    answer_tokens: int,
    batch: int,
    price: float,
    method: str,
    attention_flops: bool,
) -> list[tuple[str, str]]:
    a = _method(method, attention_flops)
    c = request_cycle(
        model,
        gpu,
        batch=batch,
        prompt_tokens=prompt_tokens,
        answer_tokens=answer_tokens,
        price_per_hour=Q_(price, _USD_H),
        assumptions=a,
    )
    s = c.decode
    ctx = c.replica.kv_read_tokens  # the context the method reads KV at
    roof = dict(
        context_tokens=ctx,
        attention_flops=a.decode_attention_flops,
        compute_precision=matmul_precision(2, gpu, a),
        assumptions=a,
    )
    x = crossover_batch(model, gpu, **roof)
    first = first_compute_bound_from(x)  # first_compute_bound_batch(model, gpu, **roof), from the same crossover
    cross = "none: KV reads grow faster than compute" if x is None else f"{x:,.1f} (compute-bound from {first:,})"
    return [
        ("KV read at (tokens per sequence)", f"{ctx:,.0f}"),
        ("step time (time per output token)", f"{fmt(s.step_time, 'ms')} ({s.bound}-bound)"),
        ("tok/s per user", f"{s.tokens_per_s_per_user.m:,.0f}"),
        ("tok/s in all, decode steps only", f"{s.throughput.m:,.0f}"),
        ("prefill of the whole batch", fmt(c.prefill.time, "ms")),
        ("tok/s in all, prefill + decode", f"{c.end_to_end_throughput.m:,.0f}"),
        (
            "$ per million output tokens",
            f"{c.cost_per_million_output_tokens.m:.2f} (decode only: {c.decode_only_cost_per_million.m:.2f})",
        ),
        ("crossover batch", cross),
    ]


def batching_calculator(
    model: str = "Llama-3.1-8B",
    gpu: str = "H100 SXM",
    prompt_tokens: int = 256,
    answer_tokens: int = 64,
    batch: int = 1,
    price: float = 3.0,
    method: str = "course",
    attention_flops: bool = True,
) -> Calculator:
    """Model, GPU, request shape, batch and method -> step time, throughput, cost and the crossover.
    ``attention_flops`` counts the decode attention FLOPs on top of the method (as the lab's
    crossover does).

    Examples
    --------
    >>> c = batching_calculator()
    >>> dict(c.rows)["$ per million output tokens"]
    '7.28 (decode only: 7.17)'
    >>> dict(c.set(batch=64).rows)["tok/s in all, decode steps only"]
    '6,656'
    """
    return Calculator(
        _rows,
        {
            "model": model_dropdown(model),
            "gpu": gpu_dropdown(gpu),
            "prompt_tokens": int_box(prompt_tokens, "Prompt tokens"),
            "answer_tokens": int_box(answer_tokens, "Answer tokens"),
            "batch": int_slider(batch, 1, 1024, description="Concurrent requests"),
            "price": float_slider(price, 0.5, 10.0, 0.25, "$ per GPU-hour"),
            "method": preset_dropdown(method),
            "attention_flops": w.Checkbox(value=attention_flops, description="Count decode attention FLOPs"),
        },
        title="Batching: speed, throughput and cost",
    )
