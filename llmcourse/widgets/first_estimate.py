"""The calculator of the chapter *A first estimate* (``book/00_first_estimate.md``)."""

from __future__ import annotations

from llmcourse.planner import serving_plan
from llmcourse.units import fmt
from llmcourse.widgets import Calculator, gpu_dropdown, int_box, int_slider, model_dropdown, precision_dropdown

__all__ = ["serving_plan_calculator"]


def _rows(model: str, gpu: str, n_gpus: int, context: int, precision: str) -> list[tuple[str, str]]:
    p = serving_plan(model, gpu, n_gpus, context, weight_bytes=precision)
    if not p.fits:
        return [("fits", "no"), ("why", p.message)]
    return [
        ("weights", fmt(p.weights, "GB")),
        ("KV per conversation", fmt(p.kv_per_sequence, "GB")),
        ("conversations at once", f"{p.batch:,}"),
        ("tok/s per user", f"{p.tokens_per_s_per_user.m:,.0f}"),
        ("tok/s in all", f"{p.output_tokens_per_s.m:,.0f}"),
        ("$ per million output tokens", f"{p.cost_per_million_output_tokens.m:.2f}"),
    ]


def serving_plan_calculator(
    model: str = "Qwen2.5-72B", gpu: str = "H100 SXM", n_gpus: int = 2, context: int = 2_300, precision: str = "fp8"
) -> Calculator:
    """Model, GPU, GPU count, conversation length and precision -> the whole-table plan.

    Examples
    --------
    >>> c = serving_plan_calculator()
    >>> dict(c.rows)["conversations at once"]
    '94'
    >>> dict(c.set(precision="bf16").rows)["fits"]
    'no'
    """
    return Calculator(
        _rows,
        {
            "model": model_dropdown(model),
            "gpu": gpu_dropdown(gpu),
            "n_gpus": int_slider(n_gpus, 1, 8, description="GPUs"),
            "context": int_box(context, "Tokens per conversation"),
            "precision": precision_dropdown(precision),
        },
        title="Serving plan",
    )
