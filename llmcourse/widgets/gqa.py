"""Calculator of the chapter *Grouped-query attention* (``book/04_gqa.md``).

Slide a model's KV heads from its query-head count (MHA) down to 1 (MQA) and watch the KV
cache per token and the number of sequences that fit.
"""

from __future__ import annotations

from llmcourse.catalog import models
from llmcourse.planner.memory import GQAPoint, gqa_point, hidden_size_kv_bytes_per_token, kv_head_options
from llmcourse.widgets import Calculator, gpu_dropdown, int_box, int_slider, model_dropdown, preset_dropdown

__all__ = ["GQAPoint", "gqa_calculator", "gqa_point", "hidden_size_kv_bytes_per_token", "kv_head_options"]


def _point(model: str, kv_heads: int, context: int, gpu: str, method: str) -> GQAPoint:
    return gqa_point(model, kv_heads, context, gpu, assumptions=method)


def gqa_calculator(
    model: str = "Llama-3.1-8B",
    kv_heads: int | None = None,
    context: int = 33_280,
    gpu: str = "H100 SXM",
    method: str = "course",
) -> Calculator:
    """Slide KV heads from the query-head count down to 1; choosing a model resets the slider.

    Examples
    --------
    >>> c = gqa_calculator()
    >>> dict(c.rows)["sequences that fit"]
    '12 (MHA: 3)'
    >>> dict(c.set(kv_heads=1).rows)["smaller than MHA by"]
    '32x'
    """
    names = [n for n in models if models[n].attention != "MLA"]
    orig = models[model]
    slider = int_slider(orig.kv_heads if kv_heads is None else kv_heads, 1, orig.heads, description="KV heads")
    dropdown = model_dropdown(model, options=names)
    calc = Calculator(
        _point,
        {
            "model": dropdown,
            "kv_heads": slider,
            "context": int_box(context, "Context (prompt + answer tokens)"),
            "gpu": gpu_dropdown(gpu),
            "method": preset_dropdown(method),
        },
        title="Share KV heads: GQA and MQA",
    )

    def reset(change: dict) -> None:
        new = models[change["new"]]
        slider.max = max(slider.max, new.heads)
        calc.set(kv_heads=new.kv_heads)
        slider.max = new.heads

    dropdown.observe(reset, names="value")
    return calc
