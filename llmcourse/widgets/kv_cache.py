"""Calculator of the chapter *The KV cache* (``book/03_kv_cache.md``).

Model, context, precisions, GPU -> KV bytes per token and per sequence, and how many
sequences fit beside the weights (reserved for the whole context, or paged).
"""

from __future__ import annotations

from llmcourse.planner.memory import KVPlan, kv_plan, paged_context, without_gqa  # re-exported for old imports
from llmcourse.widgets import (
    Calculator,
    gpu_dropdown,
    int_box,
    int_slider,
    model_dropdown,
    precision_dropdown,
    preset_dropdown,
)

__all__ = ["KVPlan", "kv_calculator", "kv_plan", "paged_context", "without_gqa"]


def _plan(
    model: str, context: int, gpu: str, n_gpus: int, kv_precision: str, weight_precision: str, method: str
) -> KVPlan:
    return kv_plan(model, context, gpu, n_gpus, kv_precision, weight_precision, assumptions=method)


def kv_calculator(
    model: str = "Llama-3.1-8B",
    context: int = 2_560,
    gpu: str = "H100 SXM",
    n_gpus: int = 1,
    kv_precision: str = "bf16",
    weight_precision: str = "bf16",
    method: str = "course",
) -> Calculator:
    """Model, context, GPU(s), KV and weight precision, method -> KV per token, per sequence, max batch.

    Examples
    --------
    >>> c = kv_calculator()
    >>> dict(c.rows)["sequences that fit"]
    '166'
    >>> dict(c.set(model="Qwen2.5-72B", n_gpus=2, context=2_300).rows)["KV per sequence"]
    '0.754 GB (0.702 GiB)'
    """
    return Calculator(
        _plan,
        {
            "model": model_dropdown(model),
            "context": int_box(context, "Context (prompt + answer tokens)"),
            "gpu": gpu_dropdown(gpu),
            "n_gpus": int_slider(n_gpus, 1, 8, description="GPUs"),
            "kv_precision": precision_dropdown(kv_precision, "KV cache", options=("bf16", "fp8")),
            "weight_precision": precision_dropdown(weight_precision, "Weights"),
            "method": preset_dropdown(method),
        },
        title="KV cache and batch",
    )
