"""The calculator of the chapter *Decode: paced by memory, until the batch is large* (``book/05_decode.md``).

Every figure comes from the planner under the method chosen (an assumptions preset, the course's by
default); the step rule and the attention FLOPs can be switched on top of it.
"""

from __future__ import annotations

import ipywidgets as w

from llmcourse.assumptions import resolve
from llmcourse.planner.roofline import arithmetic_intensity, ridge_intensity
from llmcourse.replica.memory import max_batch, usable_memory, weight_bytes
from llmcourse.replica.step import decode_step, matmul_precision
from llmcourse.units import fmt
from llmcourse.widgets import (
    Calculator,
    gpu_dropdown,
    int_box,
    int_slider,
    model_dropdown,
    precision_dropdown,
    preset_dropdown,
)

__all__ = ["decode_calculator"]

#: The step rules the calculator offers (label, ``step_rule``).
STEP_RULES = (("slower of the totals (roofline)", "max"), ("sum of the kernels", "sum"))


def _rows(
    model: str,
    gpu: str,
    precision: str,
    batch: int,
    context: int,
    n_gpus: int,
    method: str,
    step_rule: str,
    attention_flops: bool,
) -> list[tuple[str, str]]:
    a = resolve(method).replace(step_rule=step_rule, decode_attention_flops=attention_flops)
    s = decode_step(
        model, gpu, batch=batch, context_tokens=context, n_gpus=n_gpus, weight_bytes=precision, assumptions=a
    )
    w_bytes = weight_bytes(model, precision)
    mem = usable_memory(gpu, n_gpus, weights=w_bytes, assumptions=a)
    top = max_batch(model, gpu, context, n_gpus=n_gpus, weight_bytes=precision, assumptions=a)
    i = arithmetic_intensity(s.flops, s.weights_read + s.kv_read)
    mm = matmul_precision(precision, gpu, a)
    ridge = ridge_intensity(gpu, compute_precision=mm, assumptions=a)
    bound = f"{s.bound}-bound"
    if a.step_rule == "sum" and s.step_time > s.memory_time:  # a kernel waits on its FLOPs: the matmuls
        bound = "matmuls compute-bound"
    return [
        (
            "method",
            f"{a.bandwidth_efficiency:.0%} of bandwidth, {a.compute_efficiency:.0%} of the {mm.upper()} peak; "
            f"step = {dict((v, k) for k, v in STEP_RULES)[a.step_rule]}",
        ),
        ("weights read per step", fmt(s.weights_read, "GB")),
        ("KV cache read per step", fmt(s.kv_read, "GB")),
        ("FLOPs per step", fmt(s.flops, "GFLOP")),
        ("memory time", fmt(s.memory_time, "ms")),
        ("compute time", fmt(s.compute_time, "ms")),
        ("step time (time per output token)", f"{fmt(s.step_time, 'ms')} ({bound})"),
        ("tok/s per user", f"{s.tokens_per_s_per_user.m:,.0f}"),
        ("tok/s in all", f"{s.throughput.m:,.0f}"),
        ("intensity (ridge point)", f"{fmt(i, 'FLOP/B')} ({fmt(ridge, 'FLOP/B')})"),
        (
            "fits in memory",
            f"{'yes' if 1 <= batch <= top else 'no'}: {fmt(w_bytes + s.kv_read, 'GB')} of {fmt(mem, 'GB')} usable "
            f"(at most {top:,} sequences of {context:,} tokens)",
        ),
    ]


def decode_calculator(
    model: str = "Llama-3.1-8B",
    gpu: str = "H100 SXM",
    precision: str = "bf16",
    batch: int = 1,
    context: int = 2_304,
    n_gpus: int = 1,
    method: str = "course",
    step_rule: str | None = None,
) -> Calculator:
    """Model, GPU, precision, batch, context and method -> one decode step's bytes, FLOPs and time.

    Examples
    --------
    >>> c = decode_calculator()
    >>> dict(c.rows)["step time (time per output token)"]
    '8.71 ms (memory-bound)'
    >>> dict(c.set(gpu="L4").rows)["step time (time per output token)"]
    '79.7 ms (memory-bound)'
    """
    a = resolve(method)
    return Calculator(
        _rows,
        {
            "model": model_dropdown(model),
            "gpu": gpu_dropdown(gpu),
            "precision": precision_dropdown(precision),
            "batch": int_slider(batch, 1, 1024, description="Batch (sequences)"),
            "context": int_box(context, "Context tokens per sequence"),
            "n_gpus": int_slider(n_gpus, 1, 8, description="GPUs"),
            "method": preset_dropdown(method),
            "step_rule": w.Dropdown(options=list(STEP_RULES), value=step_rule or a.step_rule, description="Step"),
            "attention_flops": w.Checkbox(value=a.decode_attention_flops, description="Count attention FLOPs"),
        },
        title="One decode step",
    )
