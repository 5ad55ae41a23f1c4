"""Exercises for *The KV cache* (``book/03_kv_cache.md``): bytes per token, per conversation, batch."""

from __future__ import annotations

import llmcourse as lc
from llmcourse.exercises._common import GQA_MODELS, define, pick

EXERCISES: list = []

_PER_TOKEN = (
    "KV per token = 2 (keys and values) x layers x KV heads x head dim x bytes per value.",
    "Read lc.models['{model}'].layers, .kv_heads and .head_dim: the KV heads, not the query heads, and "
    "never the hidden size.",
)


def _heads(v):
    m = lc.models[v["model"]]
    return (
        [(m.heads / m.kv_heads, "did you use the query heads instead of the KV heads?")]
        if m.heads != m.kv_heads
        else []
    )


define(
    EXERCISES,
    "kv_cache_ex1",
    "KV bytes per token",
    "A writing assistant serves {model} with a BF16 KV cache. How many bytes of KV cache does one token of "
    "context take?",
    "KiB",
    dict(model="Qwen2.5-72B"),
    lambda r: dict(model=pick(r, GQA_MODELS)),
    lambda v: lc.kv_bytes_per_token(v["model"]),
    _PER_TOKEN,
    kv=True,
    mistakes=_heads,
)

define(
    EXERCISES,
    "kv_cache_ex2",
    "KV per token with an 8-bit cache",
    "To fit more users, a team stores {model}'s KV cache in {precision}. How many bytes does one token take now?",
    "KiB",
    dict(model="Llama-3.1-8B", precision="fp8"),
    lambda r: dict(model=pick(r, GQA_MODELS), precision=pick(r, ("fp8", "int8", "bf16"))),
    lambda v: lc.kv_bytes_per_token(v["model"], v["precision"]),
    (*_PER_TOKEN, "{precision} stores lc.PRECISIONS['{precision}'] bytes per value."),
    kv=True,
    mistakes=_heads,
)

define(
    EXERCISES,
    "kv_cache_ex3",
    "One conversation's cache",
    "A support bot on {model} keeps conversations of {context} tokens (prompt and answer). How much BF16 KV "
    "cache does one conversation hold?",
    "GB",
    dict(model="Qwen2.5-72B", context=2_300),
    lambda r: dict(model=pick(r, GQA_MODELS), context=pick(r, (1_200, 2_300, 3_000, 6_000, 10_000))),
    lambda v: lc.kv_bytes_per_sequence(v["model"], v["context"]),
    (*_PER_TOKEN, "KV per conversation = KV per token x {context} tokens."),
    kv=True,
    mistakes=_heads,
)

define(
    EXERCISES,
    "kv_cache_ex4",
    "A long context",
    "A document Q&A product lets {model} read {context}-token contexts. How much BF16 KV cache does one such "
    "sequence hold?",
    "GiB",
    dict(model="Llama-3.1-8B", context=32_768),
    lambda r: dict(
        model=pick(r, ("Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-7B", "Qwen2.5-72B")),
        context=pick(r, (16_384, 32_768, 65_536)),
    ),
    lambda v: lc.kv_bytes_per_sequence(v["model"], v["context"]),
    (*_PER_TOKEN, "Multiply by {context} tokens; 1 GiB = 1,024^3 bytes."),
    kv=True,
    mistakes=_heads,
)

_BATCH = (
    ("Llama-3.1-8B", "H100 SXM"),
    ("Qwen2.5-7B", "H100 SXM"),
    ("Llama-3.1-8B", "L40S"),
    ("Llama-3.1-8B", "A100 SXM 80GB"),
    ("Qwen2.5-7B", "H200 SXM"),
    ("Llama-2-7B", "H100 SXM"),
)

define(
    EXERCISES,
    "kv_cache_ex5",
    "Conversations per GPU",
    "A tutoring app runs {model} (BF16 weights and cache) on one {gpu}, 90% of its memory usable. Each "
    "conversation is a {prompt}-token prompt plus a {answer}-token answer. How many conversations fit at once?",
    "",
    dict(model="Llama-3.1-8B", gpu="H100 SXM", prompt=2_048, answer=512),
    lambda r: dict(
        zip(("model", "gpu"), pick(r, _BATCH), strict=True),
        prompt=pick(r, (1_024, 2_048, 4_096)),
        answer=pick(r, (256, 512, 1_024)),
    ),
    lambda v: lc.max_batch(v["model"], v["gpu"], v["prompt"] + v["answer"]),
    (
        "Free memory = 0.9 x GPU memory - weights.",
        "Batch = free memory / (KV per token x (prompt + answer)), rounded down.",
    ),
    integer=True,
    bare_ok=True,
)

define(
    EXERCISES,
    "kv_cache_ex6",
    "The long tail",
    "A batch on {model} holds {short} conversations of {short_len} tokens and {long} documents of {long_len} "
    "tokens. How much BF16 KV cache does the batch hold in all?",
    "GB",
    dict(model="Llama-3.1-70B", short=60, short_len=2_000, long=4, long_len=30_000),
    lambda r: dict(
        model=pick(r, GQA_MODELS[:4]),
        short=pick(r, (30, 60, 90)),
        short_len=pick(r, (1_500, 2_000)),
        long=pick(r, (2, 4, 6)),
        long_len=pick(r, (20_000, 30_000)),
    ),
    lambda v: (
        v["short"] * lc.kv_bytes_per_sequence(v["model"], v["short_len"])
        + v["long"] * lc.kv_bytes_per_sequence(v["model"], v["long_len"])
    ),
    (*_PER_TOKEN, "Total tokens = {short} x {short_len} + {long} x {long_len}."),
    kv=True,
    mistakes=_heads,
)
