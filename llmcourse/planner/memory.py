"""The memory side of a replica, as the chapters and their calculators show it: whether the weights
fit (chapter *Weights*), the KV cache and the batch it allows (*The KV cache*), and a model rebuilt
with fewer KV heads (*Grouped-query attention*). Each result is built from the planner's functions
(:func:`llmcourse.usable_memory`, :func:`llmcourse.max_batch`, :func:`llmcourse.gpus_for_weights`,
...) and knows how to show itself as rows of a table; the calculators in :mod:`llmcourse.widgets`
only read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model, gpus, models
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import checked
from llmcourse.replica.memory import (
    gpus_for_weights,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_batch,
    usable_memory,
    weight_bytes,
)
from llmcourse.units import fmt, to

__all__ = [
    "GQAPoint",
    "KVPlan",
    "WeightFit",
    "gqa_point",
    "hidden_size_kv_bytes_per_token",
    "kv_head_options",
    "kv_plan",
    "paged_context",
    "weight_fit",
    "without_gqa",
]


@dataclass(frozen=True)
class WeightFit:
    """Whether a model's weights fit in the usable memory of some GPUs, under some assumptions."""

    model: Model
    gpu: GPU
    n_gpus: int
    precision: str
    assumptions: Assumptions
    weights: pint.Quantity
    usable: pint.Quantity
    total: pint.Quantity
    gpus_needed: int
    tensor_parallel: int

    @property
    def fits(self) -> bool:
        return bool(self.weights <= self.usable)

    @property
    def free(self) -> pint.Quantity:
        """Usable memory left for the KV cache (negative when the weights do not fit)."""
        return to(self.usable - self.weights, "GB")

    def rows(self) -> list[tuple[str, str]]:
        a = self.assumptions
        per_gpu = fmt(self.total / self.n_gpus, a.memory_unit)
        return [
            ("weights", fmt(self.weights, "GB")),
            (f"usable memory ({self.n_gpus} x {per_gpu} x {a.memory_fraction:.0%})", fmt(self.usable, "GB")),
            ("weights fit", "yes" if self.fits else "no"),
            (
                "left for the KV cache" if self.fits else "short by",
                fmt(abs(self.free), "GB") if self.free.m else "0 GB",
            ),
            ("fewest GPUs whose usable memory holds the weights", str(self.gpus_needed)),
            ("tensor-parallel GPUs (a power of two)", str(self.tensor_parallel)),
        ]


@checked
def weight_fit(
    model: Model | str,
    precision: Any = "bf16",
    gpu: GPU | str = "H100 SXM",
    n_gpus: int = 1,
    *,
    assumptions: Assumptions | str | None = None,
) -> WeightFit:
    """Weights, usable memory and the GPU counts for one model, precision and GPU, under
    ``assumptions`` (the course's by default).

    Examples
    --------
    >>> f = weight_fit("Qwen2.5-72B", "bf16", "H100 SXM", 2)
    >>> f.fits, fmt(f.weights, "GB", 4), fmt(f.usable, "GB", 4), f.gpus_needed, f.tensor_parallel
    (False, '145.4 GB', '144.0 GB', 3, 4)
    >>> gib = resolve().replace(memory_unit="GiB")
    >>> f = weight_fit("Qwen2.5-72B", "bf16", "H100 SXM", 2, assumptions=gib)
    >>> f.fits, fmt(f.usable, "GB", 4), fmt(f.free, "GB", 2)
    (True, '154.6 GB', '9.2 GB')
    """
    m = model if isinstance(model, Model) else models[model]
    g = gpu if isinstance(gpu, GPU) else gpus[gpu]
    a = resolve(assumptions)
    wb = weight_bytes(m, precision)
    mem = usable_memory(g, n_gpus, weights=wb, assumptions=a)
    total = usable_memory(g, n_gpus, weights=wb, assumptions=a.replace(memory_rule="total", memory_fraction=1.0))
    need = gpus_for_weights(m, g, precision, a, power_of_two=False)
    return WeightFit(
        m,
        g,
        int(n_gpus),
        str(precision),
        a,
        to(wb, "GB"),
        to(mem, "GB"),
        to(total, "GB"),
        need,
        gpus_for_weights(m, g, precision, a),
    )


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


@checked
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
    return int(
        F["paged_context"](prompt_tokens=prompt_tokens, answer_tokens=answer_tokens, block_tokens=block_tokens).m
    )


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
        return to(self.usable - self.weights, "GB")

    def rows(self) -> list[tuple[str, str]]:
        rows = [
            (
                "attention",
                f"{self.model.attention} ({self.model.heads} query heads, {self.model.kv_heads} KV heads)"
                if self.model.attention != "MLA"
                else "MLA (a compressed latent per layer)",
            ),
            ("KV per token", f"{fmt(self.kv_per_token, 'KiB')} ({to(self.kv_per_token, 'B').m:,.0f} B)"),
            ("KV per sequence", f"{fmt(self.kv_per_sequence, 'GB')} ({fmt(self.kv_per_sequence, 'GiB')})"),
            ("weights", fmt(self.weights, "GB")),
            ("usable memory", fmt(self.usable, "GB")),
        ]
        if self.batch == 0 and self.free.m <= 0:
            return [*rows, ("sequences that fit", "0: the weights alone do not fit")]
        return [*rows, ("free for the KV cache", fmt(self.free, "GB")), ("sequences that fit", f"{self.batch:,}")]


@checked
def kv_plan(
    model: Model | str,
    context: int,
    gpu: GPU | str = "H100 SXM",
    n_gpus: int = 1,
    kv_precision: Any = "bf16",
    weight_precision: Any = "bf16",
    *,
    assumptions: Assumptions | str | None = None,
) -> KVPlan:
    """KV per token and per sequence, and the batch that fits, for one model and context, under
    ``assumptions`` (the course's by default).

    Examples
    --------
    >>> p = kv_plan("Llama-3.1-8B", 2_048 + 512)
    >>> fmt(p.kv_per_token, "KiB"), p.batch
    ('128 KiB', 166)
    """
    m = model if isinstance(model, Model) else models[model]
    g = gpu if isinstance(gpu, GPU) else gpus[gpu]
    a = resolve(assumptions)
    w = weight_bytes(m, weight_precision)
    return KVPlan(
        m,
        g,
        int(n_gpus),
        int(context),
        kv_bytes_per_token(m, kv_precision),
        kv_bytes_per_sequence(m, context, kv_precision),
        to(w, "GB"),
        to(usable_memory(g, n_gpus, weights=w, assumptions=a), "GB"),
        max_batch(
            m,
            g,
            context,
            n_gpus=n_gpus,
            weight_bytes=weight_precision,
            kv_bytes=kv_precision,
            assumptions=a,
        ),
    )


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


@checked
def gqa_point(
    model: Model | str,
    kv_heads: int,
    context: int = 33_280,
    gpu: GPU | str = "H100 SXM",
    *,
    assumptions: Assumptions | str | None = None,
) -> GQAPoint:
    """KV cache and batch of ``model`` rebuilt with ``kv_heads`` KV heads, on one GPU in BF16, the
    batch under ``assumptions`` (the course's by default).

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
    a = resolve(assumptions)
    return GQAPoint(
        m,
        orig,
        g,
        int(context),
        kv_bytes_per_token(m),
        kv_bytes_per_token(mha),
        kv_bytes_per_sequence(m, context),
        max_batch(m, g, context, assumptions=a),
        max_batch(mha, g, context, assumptions=a),
    )
