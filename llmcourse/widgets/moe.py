"""The calculator of the chapter *Mixture-of-experts routing* (``book/07_moe.md``)."""

from __future__ import annotations

from llmcourse.catalog import models
from llmcourse.planner.moe import expert_split, fraction_touched, simulate_fraction_touched
from llmcourse.replica.step import decode_step
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

__all__ = ["MOE_MODELS", "moe_calculator"]

#: The catalog's mixture-of-experts models.
MOE_MODELS = [name for name, m in models.items() if m.is_moe]


def _rows(
    model: str, gpu: str, precision: str, batch: int, context: int, n_gpus: int, method: str
) -> list[tuple[str, str]]:
    m = models[model]
    split = expert_split(m, precision)
    phi = fraction_touched(m.experts, m.experts_per_token, batch)
    sim = simulate_fraction_touched(m.experts, m.experts_per_token, batch, trials=400, seed=0)
    simulated = f"simulated {sim.mean:.3f} \u00b1 {sim.std_error:.3f}"
    s = decode_step(
        m, gpu, batch=batch, context_tokens=context, n_gpus=n_gpus, weight_bytes=precision, assumptions=method
    )
    return [
        (
            "weights stored (shared + experts)",
            f"{fmt(split.total, 'GB')} ({fmt(split.shared, 'GB')} + {fmt(split.experts, 'GB')})",
        ),
        ("experts per layer, picked per token", f"{m.experts}, {m.experts_per_token}"),
        ("fraction of experts touched", f"{phi:.3f} ({simulated})"),
        ("weights read per step", fmt(s.weights_read, "GB")),
        ("KV cache read per step", fmt(s.kv_read, "GB")),
        ("memory time, compute time", f"{fmt(s.memory_time, 'ms')}, {fmt(s.compute_time, 'ms')}"),
        ("step time", f"{fmt(s.step_time, 'ms')} ({s.bound}-bound)"),
        ("tok/s per user, in all", f"{s.tokens_per_s_per_user.m:,.0f}, {s.throughput.m:,.0f}"),
    ]


def moe_calculator(
    model: str = "Qwen3-30B-A3B",
    gpu: str = "H100 SXM",
    precision: str = "bf16",
    batch: int = 1,
    context: int = 2_304,
    n_gpus: int = 1,
    method: str = "course",
) -> Calculator:
    """A MoE model, GPU(s), batch and method -> experts touched, bytes read and the decode step.

    Examples
    --------
    >>> c = moe_calculator()
    >>> dict(c.rows)["fraction of experts touched"].split()[0]
    '0.062'
    >>> dict(c.set(batch=32).rows)["step time"]
    '28.1 ms (memory-bound)'
    """
    return Calculator(
        _rows,
        {
            "model": model_dropdown(model, options=MOE_MODELS),
            "gpu": gpu_dropdown(gpu),
            "precision": precision_dropdown(precision),
            "batch": int_slider(batch, 1, 512, description="Batch (tokens)"),
            "context": int_box(context, "Context tokens per sequence"),
            "n_gpus": int_slider(n_gpus, 1, 8, description="GPUs"),
            "method": preset_dropdown(method),
        },
        title="Mixture-of-experts decode step",
    )
