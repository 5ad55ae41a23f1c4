"""The calculator of the chapter *Decode is memory-bound* (``book/05_decode.md``)."""

from __future__ import annotations

import ipywidgets as w

from llmcourse.planner import decode_step, usable_memory, weight_bytes
from llmcourse.roofline import arithmetic_intensity, ridge_intensity
from llmcourse.units import fmt
from llmcourse.widgets import (
    Calculator,
    float_slider,
    gpu_dropdown,
    int_box,
    int_slider,
    model_dropdown,
    precision_dropdown,
)

__all__ = ["decode_calculator"]


def _rows(
    model: str,
    gpu: str,
    precision: str,
    batch: int,
    context: int,
    n_gpus: int,
    bandwidth_efficiency: float,
    compute_efficiency: float,
    attention_flops: bool,
) -> list[tuple[str, str]]:
    s = decode_step(
        model,
        gpu,
        batch=batch,
        context_tokens=context,
        n_gpus=n_gpus,
        weight_bytes=precision,
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
        attention_flops=attention_flops,
    )
    mem = usable_memory(gpu, n_gpus)
    need = weight_bytes(model, precision) + s.kv_read
    i = arithmetic_intensity(s.flops, s.weights_read + s.kv_read)
    ridge = ridge_intensity(gpu, bandwidth_efficiency=bandwidth_efficiency, compute_efficiency=compute_efficiency)
    return [
        ("weights read per step", fmt(s.weights_read, "GB")),
        ("KV cache read per step", fmt(s.kv_read, "GB")),
        ("FLOPs per step", fmt(s.flops, "GFLOP")),
        ("memory time", fmt(s.memory_time, "ms")),
        ("compute time", fmt(s.compute_time, "ms")),
        ("step time (time per output token)", f"{fmt(s.step_time, 'ms')} ({s.bound}-bound)"),
        ("tok/s per user", f"{s.tokens_per_s_per_user.m:,.0f}"),
        ("tok/s in all", f"{s.throughput.m:,.0f}"),
        ("intensity (ridge point)", f"{fmt(i, 'FLOP/B')} ({fmt(ridge, 'FLOP/B')})"),
        ("fits in memory", f"{'yes' if need <= mem else 'no'}: {fmt(need, 'GB')} of {fmt(mem, 'GB')} usable"),
    ]


def decode_calculator(
    model: str = "Llama-3.1-8B",
    gpu: str = "H100 SXM",
    precision: str = "bf16",
    batch: int = 1,
    context: int = 2_304,
    n_gpus: int = 1,
) -> Calculator:
    """Model, GPU, precision, batch and context -> one decode step's bytes, FLOPs and time.

    Examples
    --------
    >>> c = decode_calculator()
    >>> dict(c.rows)["step time (time per output token)"]
    '6.98 ms (memory-bound)'
    >>> dict(c.set(gpu="L4").rows)["step time (time per output token)"]
    '77.9 ms (memory-bound)'
    """
    return Calculator(
        _rows,
        {
            "model": model_dropdown(model),
            "gpu": gpu_dropdown(gpu),
            "precision": precision_dropdown(precision),
            "batch": int_slider(batch, 1, 1024, description="Batch (sequences)"),
            "context": int_box(context, "Context tokens per sequence"),
            "n_gpus": int_slider(n_gpus, 1, 8, description="GPUs"),
            "bandwidth_efficiency": float_slider(0.7, 0.1, 1.0, 0.05, "Bandwidth efficiency"),
            "compute_efficiency": float_slider(0.5, 0.1, 1.0, 0.05, "Compute efficiency"),
            "attention_flops": w.Checkbox(value=False, description="Count attention FLOPs"),
        },
        title="One decode step",
    )
