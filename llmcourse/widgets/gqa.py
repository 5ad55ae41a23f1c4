"""Calculator of the chapter *Grouped-query attention* (``book/04_gqa.md``).

Slide a model's KV heads from its query-head count (MHA) down to 1 (MQA) and watch the KV
cache per token and the number of sequences that fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import pint

from llmcourse.catalog import GPU, Model, gpus, models
from llmcourse.errors import InputError
from llmcourse.planner import kv_bytes_per_sequence, kv_bytes_per_token, max_batch
from llmcourse.units import fmt
from llmcourse.widgets import Calculator, gpu_dropdown, int_box, int_slider, model_dropdown

__all__ = ["GQAPoint", "gqa_calculator", "gqa_point", "hidden_size_kv_bytes_per_token", "kv_head_options"]


def kv_head_options(model: Model | str) -> list[int]:
    """The KV-head counts a model's query heads can be grouped into (the divisors of ``heads``).

    Examples
    --------
    >>> kv_head_options("Llama-3.1-8B")
    [1, 2, 4, 8, 16, 32]
    """
    m = model if isinstance(model, Model) else models[model]
    return [k for k in range(1, m.heads + 1) if m.heads % k == 0]


def hidden_size_kv_bytes_per_token(model: Model | str, kv_bytes: float = 2) -> pint.Quantity:
    """The *wrong* KV per token that many public calculators print: 2 x layers x hidden x bytes.

    It ignores KV heads (right only for MHA) and reads the head size from ``hidden / heads``
    (wrong when the config gives ``head_dim``). Kept here only to show the error.

    Examples
    --------
    >>> hidden_size_kv_bytes_per_token("Llama-3.1-8B").to("KiB")
    <Quantity(512.0, 'kibibyte')>
    """
    m = model if isinstance(model, Model) else models[model]
    return kv_bytes_per_token(m.with_(kv_heads=m.heads, head_dim=m.hidden // m.heads), kv_bytes)


@dataclass(frozen=True)
class GQAPoint:
    """A model with a chosen number of KV heads, and what its cache costs."""

    model: Model
    original: Model
    gpu: GPU
    context: int
    kv_per_token: pint.Quantity
    mha_kv_per_token: pint.Quantity
    kv_per_sequence: pint.Quantity
    batch: int
    mha_batch: int

    @property
    def group(self) -> int:
        """Query heads that share one KV head."""
        return self.model.heads // self.model.kv_heads

    def rows(self) -> list[tuple[str, str]]:
        m = self.model
        return [
            ("attention", f"{m.attention}: {m.heads} query heads, {m.kv_heads} KV heads, {self.group} per group"),
            ("KV per token", f"{fmt(self.kv_per_token, 'KiB')} (MHA: {fmt(self.mha_kv_per_token, 'KiB')})"),
            ("smaller than MHA by", f"{self.mha_kv_per_token.m / self.kv_per_token.m:.0f}x"),
            ("KV per sequence", fmt(self.kv_per_sequence, "GB")),
            ("sequences that fit", f"{self.batch:,} (MHA: {self.mha_batch:,})"),
        ]


def gqa_point(model: Model | str, kv_heads: int, context: int = 33_280, gpu: GPU | str = "H100 SXM") -> GQAPoint:
    """KV cache and batch of ``model`` rebuilt with ``kv_heads`` KV heads, on one GPU in BF16.

    Examples
    --------
    >>> p = gqa_point("Llama-3.1-8B", 8)
    >>> fmt(p.kv_per_token, "KiB"), p.batch, p.mha_batch
    ('128 KiB', 12, 3)
    """
    orig = model if isinstance(model, Model) else models[model]
    if orig.attention == "MLA":
        raise InputError(f"{orig.name} uses MLA: pick a model with MHA, GQA or MQA.")
    g = gpu if isinstance(gpu, GPU) else gpus[gpu]
    m = orig.with_(kv_heads=kv_heads)
    mha = orig.with_(kv_heads=orig.heads)
    return GQAPoint(
        m,
        orig,
        g,
        int(context),
        kv_bytes_per_token(m),
        kv_bytes_per_token(mha),
        kv_bytes_per_sequence(m, context),
        max_batch(m, g, context),
        max_batch(mha, g, context),
    )


def gqa_calculator(
    model: str = "Llama-3.1-8B", kv_heads: int | None = None, context: int = 33_280, gpu: str = "H100 SXM"
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
        gqa_point,
        {
            "model": dropdown,
            "kv_heads": slider,
            "context": int_box(context, "Context (prompt + answer tokens)"),
            "gpu": gpu_dropdown(gpu),
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
