"""The calculator of the chapter *Sizing the fleet* (``book/09_fleet.md``): the fleet, its bill and an API's price."""

from __future__ import annotations

import ipywidgets as w

from llmcourse.catalog import costs
from llmcourse.formulas import FORMULAS as F
from llmcourse.planner.serving import fleet
from llmcourse.replica.model import cost_per_million, replica
from llmcourse.units import HOURS_PER_MONTH, Q_, fmt, to
from llmcourse.widgets import (
    Calculator,
    float_slider,
    int_box,
    replica_controls,
)

__all__ = ["fleet_calculator"]


#: The API the calculator's price starts at: the catalog's cheapest Llama 3.1 70B row (its input tokens included at
#: the calculator's prompt and answer lengths); the slider tries any other price.
API_DEFAULT = "DeepInfra Llama-3.1-70B"

#: The headroom choices: the method's own, or a share of each replica's throughput kept back.
HEADROOM_OPTIONS = [("as the method says", "method")] + [(f"{k}% kept back", k / 100) for k in range(0, 95, 5)]


def _rows(
    model: str,
    gpu: str,
    tensor_parallel: int,
    batch: int,
    prompt: int,
    answer: int,
    precision: str,
    method: str,
    demand: int,
    headroom: float | str,
    utilisation: float,
    api_price: float,
) -> list[tuple[str, str]]:
    r = replica(
        model,
        gpu,
        tensor_parallel=tensor_parallel,
        batch=batch,
        prompt_tokens=prompt,
        answer_tokens=answer,
        weight_bytes=precision,
        assumptions=method,
    )
    if not r.fits:
        memory = f"{fmt(r.memory_used, 'GB')} of {fmt(r.usable_memory, 'GB')} usable"
        return [
            ("memory check", f"{memory}: does NOT fit: lower the batch or the context, or add GPUs"),
            ("why", r.reason),
        ]
    f = fleet(Q_(demand, "1/s"), r, headroom_fraction=None if headroom == "method" else headroom)
    full = cost_per_million(f.price_per_hour, r.throughput, tensor_parallel)
    at_u = F["cost_at_utilisation"](cost_full=full, utilisation=utilisation)
    served = F["tokens_served"](demand=f.demand, utilisation=utilisation, hours=HOURS_PER_MONTH)
    be = to(F["break_even_price"](cost=f.monthly_cost, tokens_served=served) * 1e6, "USD")
    s = r.step
    charged = f"prefill charged ({r.prefill_share:.0%} of the time)" if r.counts_prefill else "decode only"
    return [
        ("KV per sequence", fmt(r.kv_per_sequence, "GB")),
        ("bytes read per step", fmt(s.weights_read + s.kv_read, "GB")),
        ("memory check", f"{fmt(r.memory_used, 'GB')} of {fmt(r.usable_memory, 'GB')} usable: fits"),
        ("step time", f"{fmt(s.step_time, 'ms')} ({s.bound}-bound; compute alone {fmt(s.compute_time, 'ms')})"),
        ("tok/s per user", f"{r.tokens_per_s_per_user.m:,.0f}"),
        (f"tok/s per replica, {charged} (usable)", f"{r.throughput.m:,.0f} ({f.usable_throughput_per_replica.m:,.0f})"),
        ("headroom kept back", f"{f.headroom_fraction:.0%}"),
        ("replicas (exact)", f"{f.replicas:,} ({f.replicas_exact:,.1f})"),
        ("GPUs", f"{f.gpus:,}"),
        ("monthly cost, always on", f"${to(f.monthly_cost, 'USD').m:,.0f}"),
        ("$ per million output tokens: full load / average", f"${full.m:.2f} / ${to(at_u, 'USD').m:.2f}"),
        (
            "break-even API price per million output tokens",
            f"${be.m:.2f} (API: ${api_price:.2f}; {'self-host' if api_price > be.m else 'buy'} is cheaper)",
        ),
    ]


def fleet_calculator(
    model: str = "Llama-3.1-70B",
    gpu: str = "H100 SXM",
    tensor_parallel: int = 2,
    batch: int = 64,
    prompt: int = 2_000,
    answer: int = 400,
    precision: str = "fp8",
    method: str = "course",
    demand: int = 140_000,
    headroom: float | str = "method",
    utilisation: float = 0.3,
    api_price: float | None = None,
) -> Calculator:
    """Replica shape, method, demand, headroom and utilisation -> replicas, GPUs, monthly cost, break-even.

    Examples
    --------
    >>> c = fleet_calculator(method="capacity")
    >>> dict(c.rows)["GPUs"], dict(c.rows)["monthly cost, always on"]
    ('162', '$295,650')
    >>> c.set(batch=128).error is None, "NOT fit" in dict(c.rows)["memory check"]
    (True, True)
    >>> int(dict(fleet_calculator().rows)["GPUs"]) > 162  # prefill charged
    True
    >>> dict(fleet_calculator().rows)["break-even API price per million output tokens"].split("(")[1]  # $0.40 + $0.13 x 5
    'API: $1.05; buy is cheaper)'
    """
    if api_price is None:  # the catalog's price, input tokens included at this prompt and answer
        row = costs[API_DEFAULT]
        per_token = F["api_price_per_output_token"](
            api_output_price=row.value / 1e6,
            api_input_price=row.input_value / 1e6,
            prompt_tokens=prompt,
            answer_tokens=answer,
        )
        api_price = round(float(to(per_token * 1e6, "USD").m), 2)
    return Calculator(
        _rows,
        {
            **replica_controls(model, gpu, tensor_parallel, batch, prompt, answer, precision, method),
            "demand": int_box(demand, "Peak output tok/s"),
            "headroom": w.Dropdown(options=HEADROOM_OPTIONS, value=headroom, description="Headroom"),
            "utilisation": float_slider(utilisation, 0.05, 1.0, 0.05, "Average utilisation"),
            "api_price": float_slider(api_price, 0.25, 30.0, 0.25, "API $ per M output tokens, input included"),
        },
        title="Fleet: replicas, GPUs and money",
    )
