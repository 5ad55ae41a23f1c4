"""The calculator of the chapter *Prefill is compute-bound* (``book/06_prefill.md``)."""

from __future__ import annotations

import ipywidgets as w

from llmcourse.planner import prefill
from llmcourse.units import fmt
from llmcourse.widgets import Calculator, float_slider, gpu_dropdown, int_box, int_slider, model_dropdown

__all__ = ["prefill_calculator"]


def _rows(
    model: str, gpu: str, prompt_tokens: int, prompts: int, n_gpus: int, compute_efficiency: float, attention: bool
) -> list[tuple[str, str]]:
    p = prefill(
        model,
        gpu,
        prompt_tokens,
        prompts=prompts,
        n_gpus=n_gpus,
        compute_efficiency=compute_efficiency,
        attention=attention,
    )
    share = (p.attention_flops / p.flops).to("").m if attention else 0.0
    return [
        ("FLOPs", fmt(p.flops, "TFLOP")),
        (
            "of which causal attention",
            f"{fmt(p.attention_flops, 'TFLOP')} ({share:.1%})" if attention else "not counted",
        ),
        ("compute time", fmt(p.compute_time, "ms")),
        ("one read of the weights", fmt(p.memory_time, "ms")),
        ("time to first token (last prompt)", f"{fmt(p.time, 'ms')} ({p.bound}-bound)"),
    ]


def prefill_calculator(
    model: str = "Llama-3.1-8B", gpu: str = "H100 SXM", prompt_tokens: int = 2_048, prompts: int = 1, n_gpus: int = 1
) -> Calculator:
    """Model, GPU, prompt length and prompts processed together -> prefill FLOPs and time.

    Examples
    --------
    >>> c = prefill_calculator()
    >>> dict(c.rows)["time to first token (last prompt)"]
    '68.7 ms (compute-bound)'
    >>> dict(c.set(prompts=64).rows)["time to first token (last prompt)"]
    '4,400 ms (compute-bound)'
    """
    return Calculator(
        _rows,
        {
            "model": model_dropdown(model),
            "gpu": gpu_dropdown(gpu),
            "prompt_tokens": int_box(prompt_tokens, "Prompt tokens"),
            "prompts": int_slider(prompts, 1, 256, description="Prompts together"),
            "n_gpus": int_slider(n_gpus, 1, 8, description="GPUs"),
            "compute_efficiency": float_slider(0.5, 0.1, 1.0, 0.05, "Compute efficiency"),
            "attention": w.Checkbox(value=True, description="Count causal attention FLOPs"),
        },
        title="Prefill",
    )
