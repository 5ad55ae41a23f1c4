"""The calculator of the chapter *A first estimate* (``book/00_first_estimate.md``)."""

from __future__ import annotations

from llmcourse.bands import band_for, shipped_bands, vendor_factor_row
from llmcourse.planner.serving import serving_plan
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

__all__ = ["serving_plan_calculator"]


def _rows(
    model: str, gpu: str, n_gpus: int, prompt: int, answer: int, precision: str, method: str
) -> list[tuple[str, str]]:
    p = serving_plan(
        model, gpu, n_gpus, prompt + answer, prompt_tokens=prompt, weight_bytes=precision, assumptions=method
    )
    if not p.fits:
        return [("fits", "no"), ("why", p.message)]
    total = "tok/s in all" + (", prefill charged" if p.prefill_counted else ", decode only")
    rows = [
        ("weights", fmt(p.weights, "GB")),
        ("KV per conversation", fmt(p.kv_per_sequence, "GB")),
        ("conversations at once", f"{p.batch:,}"),
        ("tok/s per user", f"{p.tokens_per_s_per_user.m:,.0f}"),
        (total, f"{p.output_tokens_per_s.m:,.0f}"),
        ("time to first token (no queue)", fmt(p.prefill_time, "s")),
    ]
    if p.cost_per_million_output_tokens is not None:
        rows.append(("$ per million output tokens", f"{p.cost_per_million_output_tokens.m:.2f}"))
    if method == shipped_bands()["method"]:  # the measured band of the course's time per token
        band = band_for("tpot_ms", model, gpu, 1 / p.tokens_per_s_per_user)
        rows.append(("time per token, 80% band", band.text("time per token")))
    factor = vendor_factor_row(gpu, 1000 / p.tokens_per_s_per_user.m_as("1/s"), method)  # AMD, Intel, AWS accelerators
    return rows if factor is None else [*rows, factor]


def serving_plan_calculator(
    model: str = "Qwen2.5-72B",
    gpu: str = "H100 SXM",
    n_gpus: int = 2,
    prompt: int = 2_000,
    answer: int = 300,
    precision: str = "fp8",
    method: str = "course",
) -> Calculator:
    """Model, GPU, GPU count, prompt and answer lengths, precision and method -> the whole-table plan.

    Examples
    --------
    >>> c = serving_plan_calculator()
    >>> dict(c.rows)["conversations at once"], dict(c.rows)["tok/s in all, prefill charged"]
    ('100', '1,164')
    >>> dict(c.set(method="envelope").rows)["tok/s in all, decode only"]
    '4,387'
    >>> dict(c.set(precision="bf16").rows)["fits"]
    'no'
    """
    return Calculator(
        _rows,
        {
            "model": model_dropdown(model),
            "gpu": gpu_dropdown(gpu),
            "n_gpus": int_slider(n_gpus, 1, 8, description="GPUs"),
            "prompt": int_box(prompt, "Prompt tokens"),
            "answer": int_box(answer, "Answer tokens"),
            "precision": precision_dropdown(precision),
            "method": preset_dropdown(method),
        },
        title="Serving plan",
    )
