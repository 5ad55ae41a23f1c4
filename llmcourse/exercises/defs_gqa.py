"""Exercises for *Grouped-query attention* (``book/04_gqa.md``): MHA, GQA, MQA and MLA caches."""

from __future__ import annotations

import llmcourse as lc
from llmcourse.exercises._common import define, pick

EXERCISES: list = []

_GQA = ("Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-7B", "Qwen2.5-72B", "Llama-2-70B", "Mixtral-8x7B")


def _mha(name):
    m = lc.models[name]
    return m.with_(kv_heads=m.heads)


define(
    EXERCISES,
    "gqa_ex1",
    "How much GQA saves",
    "{model} shares each key/value head among several query heads. By what factor is its KV cache smaller than "
    "it would be with one KV head per query head (MHA)?",
    "",
    dict(model="Llama-3.1-70B"),
    lambda r: dict(model=pick(r, _GQA)),
    lambda v: (lc.kv_bytes_per_token(_mha(v["model"])) / lc.kv_bytes_per_token(v["model"])).to(""),
    (
        "Only the number of KV heads changes.",
        "Factor = query heads / KV heads (lc.models['{model}'].heads and .kv_heads).",
    ),
    bare_ok=True,
)

define(
    EXERCISES,
    "gqa_ex2",
    "An MHA model's cache",
    "A legacy summariser still runs {model}, which has as many KV heads as query heads. How many bytes of BF16 "
    "KV cache does one token take?",
    "KiB",
    dict(model="Llama-2-7B"),
    lambda r: dict(model=pick(r, ("Llama-2-7B", "Llama-2-13B"))),
    lambda v: lc.kv_bytes_per_token(v["model"]),
    ("KV per token = 2 x layers x KV heads x head dim x 2 bytes.", "Here KV heads = query heads."),
    kv=True,
)

_LONG = (
    ("Llama-3.1-8B", "H100 SXM"),
    ("Llama-3.1-8B", "H200 SXM"),
    ("Qwen2.5-7B", "H100 SXM"),
    ("Llama-3.1-8B", "A100 SXM 80GB"),
    ("Qwen2.5-7B", "B200"),
)

define(
    EXERCISES,
    "gqa_ex3",
    "Long conversations with GQA",
    "A research assistant runs {model} (BF16) on one {gpu} at {context}-token contexts (90% of memory usable). "
    "How many such sequences fit at once?",
    "",
    dict(model="Llama-3.1-8B", gpu="H100 SXM", context=32_768),
    lambda r: dict(zip(("model", "gpu"), pick(r, _LONG), strict=True), context=pick(r, (8_192, 16_384, 32_768))),
    lambda v: lc.max_batch(v["model"], v["gpu"], v["context"]),
    ("Free memory = 0.9 x GPU memory - weights.", "Divide by the KV of one sequence and round down."),
    integer=True,
    bare_ok=True,
)

define(
    EXERCISES,
    "gqa_ex4",
    "The same, without GQA",
    "Suppose {model} had one KV head per query head (MHA) but were otherwise the same. On one {gpu} (90% "
    "usable) at {context}-token contexts, how many sequences would fit?",
    "",
    dict(model="Llama-3.1-8B", gpu="H100 SXM", context=32_768),
    lambda r: dict(zip(("model", "gpu"), pick(r, _LONG), strict=True), context=pick(r, (4_096, 8_192, 16_384))),
    lambda v: lc.max_batch(_mha(v["model"]), v["gpu"], v["context"]),
    (
        "Give the model as many KV heads as query heads: lc.models['{model}'].with_(kv_heads=...).",
        "Then free memory / KV per sequence, rounded down.",
    ),
    integer=True,
    bare_ok=True,
)

define(
    EXERCISES,
    "gqa_ex5",
    "Multi-query attention",
    "An edge deployment considers a variant of {model} with a single KV head (MQA). How many bytes of BF16 KV "
    "cache would one token take?",
    "KiB",
    dict(model="Llama-3.1-8B"),
    lambda r: dict(model=pick(r, _GQA)),
    lambda v: lc.kv_bytes_per_token(lc.models[v["model"]].with_(kv_heads=1)),
    ("KV per token = 2 x layers x 1 x head dim x 2 bytes.",),
    kv=True,
)


def _mla_wrong(v):
    m = lc.models["DeepSeek-V3"]
    full = lc.FORMULAS["kv_bytes_per_token"](
        layers=m.layers, kv_heads=m.heads, head_dim=m.head_dim, kv_bytes=lc.Q_(v["bytes"], "B")
    )
    return [
        (
            (full / lc.kv_bytes_per_token(m, v["bytes"])).to("").m,
            "that is the per-head formula; MLA caches one compressed latent per layer",
        )
    ]


define(
    EXERCISES,
    "gqa_ex6",
    "Multi-head latent attention",
    "A reasoning product serves DeepSeek-V3, which caches per layer one latent of kv_lora_rank values plus the "
    "rotary key of qk_rope_head_dim values, {bytes} bytes each. How many bytes of KV cache per token?",
    "KiB",
    dict(bytes=2),
    lambda r: dict(bytes=pick(r, (1, 2))),
    lambda v: lc.kv_bytes_per_token("DeepSeek-V3", v["bytes"]),
    (
        "KV per token = layers x (kv_lora_rank + qk_rope_head_dim) x bytes: no factor 2, the latent serves both.",
        "lc.models['DeepSeek-V3'].kv_lora_rank and .qk_rope_head_dim.",
    ),
    mistakes=_mla_wrong,
    tolerance=0.01,
)
