"""The calculator of the chapter *Sizing the fleet* (``book/09_fleet.md``)."""

from __future__ import annotations

from llmcourse.formulas import FORMULAS as F
from llmcourse.planner import cost_per_million, fleet, kv_bytes_per_sequence, replica
from llmcourse.units import HOURS_PER_MONTH, Q_, fmt
from llmcourse.widgets import (
    Calculator,
    float_slider,
    gpu_dropdown,
    int_box,
    int_slider,
    model_dropdown,
    precision_dropdown,
)

__all__ = ["fleet_calculator"]


def _rows(
    model: str,
    gpu: str,
    tensor_parallel: int,
    batch: int,
    context: int,
    precision: str,
    demand: int,
    headroom: float,
    utilisation: float,
    api_price: float,
) -> list[tuple[str, str]]:
    r = replica(
        model, gpu, tensor_parallel=tensor_parallel, batch=batch, context_tokens=context, weight_bytes=precision
    )
    f = fleet(Q_(demand, "1/s"), r, headroom_fraction=headroom)
    full = cost_per_million(f.price_per_hour, r.throughput, tensor_parallel)
    at_u = F["cost_at_utilisation"](cost_full=full, utilisation=utilisation)
    served = F["tokens_served"](demand=f.demand, utilisation=utilisation, hours=HOURS_PER_MONTH)
    be = (F["break_even_price"](cost=f.monthly_cost, tokens_served=served) * 1e6).to("USD")
    s = r.step
    fit = "fits" if r.fits else "does NOT fit: lower the batch or the context, or add GPUs"
    return [
        ("KV per sequence", fmt(kv_bytes_per_sequence(model, context), "GB")),
        ("bytes read per step", fmt(s.weights_read + s.kv_read, "GB")),
        ("memory check", f"{fmt(r.memory_used, 'GB')} of {fmt(r.usable_memory, 'GB')} usable: {fit}"),
        ("step time", f"{fmt(s.step_time, 'ms')} ({s.bound}-bound; compute alone {fmt(s.compute_time, 'ms')})"),
        ("tok/s per user", f"{r.tokens_per_s_per_user.m:,.0f}"),
        ("tok/s per replica (usable)", f"{r.throughput.m:,.0f} ({f.usable_throughput_per_replica.m:,.0f})"),
        ("replicas (exact)", f"{f.replicas:,} ({f.replicas_exact:,.1f})"),
        ("GPUs", f"{f.gpus:,}"),
        ("monthly cost, always on", f"${f.monthly_cost.to('USD').m:,.0f}"),
        ("$ per million output tokens: full load / average", f"${full.m:.2f} / ${at_u.to('USD').m:.2f}"),
        (
            "break-even API price per million output tokens",
            f"${be.m:.2f} (assumed API: ${api_price:.2f}; {'self-host' if api_price > be.m else 'buy'} is cheaper)",
        ),
    ]


def fleet_calculator(
    model: str = "Llama-3.1-70B",
    gpu: str = "H100 SXM",
    tensor_parallel: int = 2,
    batch: int = 64,
    context: int = 2_400,
    precision: str = "fp8",
    demand: int = 140_000,
    headroom: float = 0.3,
    utilisation: float = 0.3,
    api_price: float = 5.0,
) -> Calculator:
    """Replica shape, demand, headroom and utilisation -> replicas, GPUs, monthly cost, break-even.

    Examples
    --------
    >>> c = fleet_calculator()
    >>> dict(c.rows)["GPUs"], dict(c.rows)["monthly cost, always on"]
    ('162', '$295,650')
    >>> c.set(batch=128).error is None, "NOT fit" in dict(c.rows)["memory check"]
    (True, True)
    """
    return Calculator(
        _rows,
        {
            "model": model_dropdown(model),
            "gpu": gpu_dropdown(gpu),
            "tensor_parallel": int_slider(tensor_parallel, 1, 8, description="GPUs per replica (TP)"),
            "batch": int_slider(batch, 1, 512, description="Batch"),
            "context": int_box(context, "Tokens per sequence"),
            "precision": precision_dropdown(precision, "Weights"),
            "demand": int_box(demand, "Peak output tok/s"),
            "headroom": float_slider(headroom, 0.0, 0.9, 0.05, "Headroom kept back"),
            "utilisation": float_slider(utilisation, 0.05, 1.0, 0.05, "Average utilisation"),
            "api_price": float_slider(api_price, 0.25, 30.0, 0.25, "API $ per M output tokens (assumed)"),
        },
        title="Fleet: replicas, GPUs and money",
    )
