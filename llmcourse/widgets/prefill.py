"""The calculator of the chapter *Prefill is compute-bound* (``book/06_prefill.md``).

The prefill comes from the planner under the method chosen (an assumptions preset, the course's by
default): its efficiencies, the precision its matmuls run at and whether it counts the causal
attention term.
"""

from __future__ import annotations

from llmcourse.assumptions import resolve
from llmcourse.replica.prefilling import prefill
from llmcourse.replica.step import matmul_precision
from llmcourse.units import fmt, to
from llmcourse.widgets import (
    Calculator,
    gpu_dropdown,
    int_box,
    int_slider,
    model_dropdown,
    precision_dropdown,
    preset_dropdown,
)

__all__ = ["prefill_calculator"]


def _rows(
    model: str, gpu: str, precision: str, prompt_tokens: int, prompts: int, n_gpus: int, method: str
) -> list[tuple[str, str]]:
    a = resolve(method)
    p = prefill(model, gpu, prompt_tokens, prompts=prompts, n_gpus=n_gpus, weight_bytes=precision, assumptions=a)
    counted = a.prefill_attention
    share = to(p.attention_flops / p.flops, "").m if counted else 0.0
    return [
        (
            "method",
            f"{a.compute_efficiency:.0%} of the {matmul_precision(precision, gpu, a).upper()} peak, "
            f"{a.bandwidth_efficiency:.0%} of bandwidth",
        ),
        ("FLOPs", fmt(p.flops, "TFLOP")),
        (
            "of which causal attention",
            f"{fmt(p.attention_flops, 'TFLOP')} ({share:.1%})" if counted else "not counted",
        ),
        ("compute time", fmt(p.compute_time, "ms")),
        ("one read of the weights", fmt(p.memory_time, "ms")),
        ("time to first token (last prompt)", f"{fmt(p.time, 'ms')} ({p.bound}-bound)"),
    ]


def prefill_calculator(
    model: str = "Llama-3.1-8B",
    gpu: str = "H100 SXM",
    prompt_tokens: int = 2_048,
    prompts: int = 1,
    n_gpus: int = 1,
    precision: str = "bf16",
    method: str = "course",
) -> Calculator:
    """Model, GPU, weight precision, prompt length, prompts processed together and method -> prefill
    FLOPs and time.

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
            "precision": precision_dropdown(precision, "Weights"),
            "prompt_tokens": int_box(prompt_tokens, "Prompt tokens"),
            "prompts": int_slider(prompts, 1, 256, description="Prompts together"),
            "n_gpus": int_slider(n_gpus, 1, 8, description="GPUs"),
            "method": preset_dropdown(method),
        },
        title="Prefill",
    )
