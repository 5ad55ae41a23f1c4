"""Calculator of the chapter *The KV cache* (``book/03_kv_cache.md``).

Model, context, precisions, GPU -> KV bytes per token and per sequence, and how many
sequences fit beside the weights (reserved for the whole context, or paged).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pint

from llmcourse.catalog import GPU, Model, gpus, models
from llmcourse.errors import InputError
from llmcourse.planner import kv_bytes_per_sequence, kv_bytes_per_token, max_batch, usable_memory, weight_bytes
from llmcourse.units import fmt
from llmcourse.widgets import Calculator, gpu_dropdown, int_box, int_slider, model_dropdown, precision_dropdown

__all__ = ["KVPlan", "kv_calculator", "kv_plan", "paged_context", "without_gqa"]


def without_gqa(model: Model | str) -> Model:
    """The same model with one KV head per query head (plain multi-head attention).

    Examples
    --------
    >>> m = without_gqa("Llama-3.1-70B")
    >>> m.kv_heads, m.head_dim, m.attention
    (64, 128, 'MHA')
    """
    m = model if isinstance(model, Model) else models[model]
    if m.attention == "MLA":
        raise InputError(f"{m.name} uses multi-head latent attention; without_gqa applies to MHA/GQA/MQA models.")
    return m.with_(kv_heads=m.heads, name=f"{m.name} without GQA")


def paged_context(prompt_tokens: float, answer_tokens: float, block_tokens: int = 16) -> int:
    """Tokens a paged cache holds for a conversation on average: prompt plus half the answer, in whole blocks.

    With paging (vLLM's PagedAttention) a conversation holds blocks only for the tokens it has so
    far; over its life it holds the prompt plus, on average, half the answer. The last block is
    partly empty, so the count is rounded up to whole blocks.

    Examples
    --------
    >>> paged_context(2_048, 512)
    2304
    >>> paged_context(2_000, 300)
    2160
    """
    for value, name in ((prompt_tokens, "prompt_tokens"), (answer_tokens, "answer_tokens")):
        if not value > 0 or not math.isfinite(value):
            raise InputError(f"{name} must be a positive number of tokens; got {value!r}.")
    if block_tokens < 1 or block_tokens != int(block_tokens):
        raise InputError(f"block_tokens must be a whole number of tokens, 1 or more; got {block_tokens!r}.")
    return int(math.ceil((prompt_tokens + answer_tokens / 2) / block_tokens) * block_tokens)


@dataclass(frozen=True)
class KVPlan:
    """The KV cache of one model at one context on some GPUs."""

    model: Model
    gpu: GPU
    n_gpus: int
    context: int
    kv_per_token: pint.Quantity
    kv_per_sequence: pint.Quantity
    weights: pint.Quantity
    usable: pint.Quantity
    batch: int

    @property
    def free(self) -> pint.Quantity:
        return (self.usable - self.weights).to("GB")

    def rows(self) -> list[tuple[str, str]]:
        rows = [
            (
                "attention",
                f"{self.model.attention} ({self.model.heads} query heads, {self.model.kv_heads} KV heads)"
                if self.model.attention != "MLA"
                else "MLA (a compressed latent per layer)",
            ),
            ("KV per token", f"{fmt(self.kv_per_token, 'KiB')} ({self.kv_per_token.to('B').m:,.0f} B)"),
            ("KV per sequence", f"{fmt(self.kv_per_sequence, 'GB')} ({fmt(self.kv_per_sequence, 'GiB')})"),
            ("weights", fmt(self.weights, "GB")),
            ("usable memory", fmt(self.usable, "GB")),
        ]
        if self.batch == 0 and self.free.m <= 0:
            return [*rows, ("sequences that fit", "0: the weights alone do not fit")]
        return [*rows, ("free for the KV cache", fmt(self.free, "GB")), ("sequences that fit", f"{self.batch:,}")]


def kv_plan(
    model: Model | str,
    context: int,
    gpu: GPU | str = "H100 SXM",
    n_gpus: int = 1,
    kv_precision: Any = "bf16",
    weight_precision: Any = "bf16",
    usable_fraction: float = 0.9,
) -> KVPlan:
    """KV per token and per sequence, and the batch that fits, for one model and context.

    Examples
    --------
    >>> p = kv_plan("Llama-3.1-8B", 2_048 + 512)
    >>> fmt(p.kv_per_token, "KiB"), p.batch
    ('128 KiB', 166)
    """
    m = model if isinstance(model, Model) else models[model]
    g = gpu if isinstance(gpu, GPU) else gpus[gpu]
    return KVPlan(
        m,
        g,
        int(n_gpus),
        int(context),
        kv_bytes_per_token(m, kv_precision),
        kv_bytes_per_sequence(m, context, kv_precision),
        weight_bytes(m, weight_precision).to("GB"),
        usable_memory(g, n_gpus, usable_fraction).to("GB"),
        max_batch(
            m,
            g,
            context,
            n_gpus=n_gpus,
            weight_bytes=weight_precision,
            kv_bytes=kv_precision,
            usable_fraction=usable_fraction,
        ),
    )


def kv_calculator(
    model: str = "Llama-3.1-8B",
    context: int = 2_560,
    gpu: str = "H100 SXM",
    n_gpus: int = 1,
    kv_precision: str = "bf16",
    weight_precision: str = "bf16",
) -> Calculator:
    """Model, context, GPU(s), KV and weight precision -> KV per token, per sequence, max batch.

    Examples
    --------
    >>> c = kv_calculator()
    >>> dict(c.rows)["sequences that fit"]
    '166'
    >>> dict(c.set(model="Qwen2.5-72B", n_gpus=2, context=2_300).rows)["KV per sequence"]
    '0.754 GB (0.702 GiB)'
    """
    return Calculator(
        kv_plan,
        {
            "model": model_dropdown(model),
            "context": int_box(context, "Context (prompt + answer tokens)"),
            "gpu": gpu_dropdown(gpu),
            "n_gpus": int_slider(n_gpus, 1, 8, description="GPUs"),
            "kv_precision": precision_dropdown(kv_precision, "KV cache", options=("bf16", "fp8")),
            "weight_precision": precision_dropdown(weight_precision, "Weights"),
        },
        title="KV cache and batch",
    )
