"""Exercises for *The KV cache* (``book/03_kv_cache.md``): bytes per token, per conversation, batch.

``kv_cache_ex1`` .. ``kv_cache_ex6`` follow the chapter's exercises of the same labels (the numeric part of each).
"""

from __future__ import annotations

import math

import llmcourse as lc
from llmcourse.exercises._common import COURSE, GQA_MODELS, Story, define, pct, pick, pool, whole

EXERCISES: list = []

#: The share of memory a server may use, by the course's method (the default of these estimates).
_USABLE = pct(COURSE.memory_fraction)

#: Models with full attention (no sliding window, no latent cache), one of each KV shape of the catalog's.
_SHAPES = (
    "Llama-3.1-8B",
    "Qwen2.5-7B",
    "Llama-2-7B",
    "Llama-2-13B",
    "Llama-3.1-70B",
    "Qwen2.5-72B",
    "Llama-3.1-405B",
    "Qwen3-30B-A3B",
    "Qwen3-235B-A22B",
)

_PER_TOKEN = (
    "KV per token = 2 (keys and values) x layers x KV heads x head dim x bytes per value.",
    "Read lc.models['{model}'].layers, .kv_heads and .head_dim: the KV heads, not the query heads, and never the "
    "hidden size.",
)


def _gb(q):
    return f"{q.to('GB').m:.4g} GB"


def _kib(q):
    return f"{q.to('KiB').m:.4g} KiB"


#: The longest conversation a story speaks of: 8,192 tokens, or the model's context window where that is shorter.
_WINDOW = 8_192


def _figures(v):
    """The catalog figures a story states beside its givens (see :class:`~llmcourse.exercises._common.Story`): the
    model's shape and KV bytes per token in BF16, the GPUs' memory and what the weights leave of it."""
    m = lc.models[v["model"]]
    out = {k: f"{getattr(m, k):,}" for k in ("layers", "kv_heads", "head_dim", "hidden")}
    out["window"] = f"{min(_WINDOW, m.max_position or _WINDOW):,}"
    out["kv_token"] = _kib(lc.kv_bytes_per_token(m))
    out["kv_bytes"] = f"{lc.kv_bytes_per_token(m).to('B').m:,.0f}"
    if "gpu" in v:
        n = whole(v.get("n", 1))
        usable, weights = lc.usable_memory(v["gpu"], n), lc.weight_bytes(m, v.get("precision", "bf16"))
        out |= dict(memory=_gb(lc.gpus[v["gpu"]].memory), usable=_gb(usable), weights=_gb(weights))
        out |= dict(free=_gb(usable - weights), gpus=f"one {v['gpu']}" if n == 1 else f"{n:,} x {v['gpu']}")
    if "precision" in v:
        out["name"] = v["precision"].upper()
    return out


def _heads(v):
    m = lc.models[v["model"]]
    if m.heads == m.kv_heads:
        return []
    return [(m.heads / m.kv_heads, "did you use the query heads instead of the KV heads?")]


define(
    EXERCISES,
    "kv_cache_ex1",
    "KV bytes per token",
    Story(
        "A writing assistant serves {model} ({layers} layers, {kv_heads} KV heads, a head dimension of {head_dim}) "
        "with {kv} KV cache, for conversations of up to {window} tokens. How many bytes of KV cache does one token of "
        "context take?",
        _figures,
    ),
    "KiB",
    dict(model="Llama-3.1-70B", kv="a BF16"),
    lambda r: dict(model=pick(r, _SHAPES), kv=pick(r, ("a BF16", "an FP8", "an FP32", "an INT4"))),
    lambda v: lc.kv_bytes_per_token(v["model"], v["kv"].split()[-1].lower()),
    _PER_TOKEN,
    kv=True,
    mistakes=_heads,
    followup="How much does one conversation of that length hold?",
)


@pool
def _TOTAL():
    """(model, GPU): BF16 weights that leave at least 2 GB of the GPU's usable memory for the cache."""
    for model in ("Llama-3.1-8B", "Qwen2.5-7B", "Llama-2-7B", "Llama-2-13B"):
        for gpu in ("H100 SXM", "H200 SXM", "B200", "MI300X", "MI325X", "A100 SXM 80GB", "A100 SXM 40GB", "L40S", "L4"):
            if (lc.usable_memory(gpu) - lc.weight_bytes(model)).to("GB").m >= 2:
                yield model, gpu


define(
    EXERCISES,
    "kv_cache_ex2",
    "Tokens of cache that fit",
    Story(
        "{model} ({weights} of BF16 weights, {kv_token} of BF16 KV cache per token) runs on one {gpu} ({memory}, "
        f"{_USABLE} usable). How many tokens of KV cache fit in total, across all conversations?",
        _figures,
    ),
    "",
    dict(model="Llama-3.1-8B", gpu="H100 SXM"),
    lambda r: dict(zip(("model", "gpu"), pick(r, _TOTAL()), strict=True)),
    lambda v: ((lc.usable_memory(v["gpu"]) - lc.weight_bytes(v["model"])) / lc.kv_bytes_per_token(v["model"])).to(""),
    (f"Free memory = {COURSE.memory_fraction:g} x GPU memory - weights.", "Tokens = free memory / KV bytes per token."),
    bare_ok=True,
    kv=True,
    mistakes=_heads,
)

define(
    EXERCISES,
    "kv_cache_ex3",
    "KB or KiB?",
    Story(
        "A support bot on {model} keeps conversations of {context} tokens; its BF16 KV cache takes {kv_bytes} bytes "
        "per token (mind the prefix: a KiB is 1,024 bytes, a kB 1,000). How many GB of cache does one conversation "
        "hold?",
        _figures,
    ),
    "GB",
    dict(model="Qwen2.5-72B", context=2_400),
    lambda r: dict(model=pick(r, GQA_MODELS), context=pick(r, range(1_000, 12_001, 100))),
    lambda v: lc.kv_bytes_per_sequence(v["model"], v["context"]),
    (*_PER_TOKEN, "KV per conversation = KV per token x {context} tokens; 1 KiB = 1,024 bytes."),
    kv=True,
    mistakes=_heads,
    followup="A text wrote the per-token figure as {glue:text}`kv_err_src_tok` KB and the conversation as "
    "{glue:text}`kv_err_src` GB. Work the conversation out with that figure read as kB and as KiB: which did the "
    "text use?",
)


def _mha(v):
    m = lc.models[v["model"]]
    return m.with_(kv_heads=m.heads)


define(
    EXERCISES,
    "kv_cache_ex4",
    "A model without GQA",
    Story(
        "A legacy model without grouped-query attention (one KV head per query head) has {layers} layers and a model "
        "dimension of {hidden}, the shape of {model}, and caches in BF16. How much KV cache does one {context}-token "
        "conversation need?",
        _figures,
    ),
    "GB",
    dict(model="Llama-2-70B", context=16_000),
    lambda r: dict(
        model=pick(r, ("Llama-2-70B", "Llama-3.1-8B", "Qwen2.5-72B", "Qwen2.5-7B", "Llama-3.1-405B")),
        context=pick(r, range(2_000, 32_001, 1_000)),
    ),
    lambda v: lc.kv_bytes_per_sequence(_mha(v), v["context"]),
    (
        "With one KV head per query head, KV heads x head dim = the model dimension (lc.models['{model}'].hidden).",
        "KV per conversation = 2 x layers x model dimension x 2 bytes x {context}.",
    ),
    kv=True,
)

_PAIRS = (
    ("Qwen2.5-72B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-70B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-70B", "bf16", "H200 SXM", 2),
    ("Llama-3.1-8B", "bf16", "H100 SXM", 1),
)


def _vary_pair(r):
    return dict(zip(("model", "precision", "gpu", "n"), pick(r, _PAIRS), strict=True))


def _batch(v, tokens):
    return lc.max_batch(v["model"], v["gpu"], tokens, n_gpus=v["n"], weight_bytes=v["precision"])


def _tail_figures(v):
    """A long-tail story's figures, and the batch when every conversation is an ordinary one."""
    given = dict(model=v["model"], precision=v["precision"], gpu=v["gpu"], n=whole(v["n"]))
    docs = whole(v["docs"])
    bring = "one user brings" if docs == 1 else f"{docs:,} users each bring"
    return _figures(v) | dict(alone=f"{_batch(given, whole(v['context'])):,}", bring=bring)


def _paged(v):
    """Tokens held on average: prompt plus half the answer, rounded up to whole blocks."""
    return math.ceil((v["prompt"] + v["answer"] / 2) / v["block"]) * v["block"]


define(
    EXERCISES,
    "kv_cache_ex5",
    "Average occupancy with paged allocation",
    Story(
        "With paged allocation in blocks of {block} tokens, a conversation holds on average over its life its prompt "
        "plus half its answer, rounded up to whole blocks. A chatbot runs {model} in {name} with a BF16 cache on "
        "{gpus} ({weights} of weights, {usable} usable, {kv_token} of cache per token); conversations are {prompt} "
        "prompt + {answer} answer tokens. How many conversations fit at that average occupancy?",
        _figures,
    ),
    "",
    dict(model="Qwen2.5-72B", precision="fp8", gpu="H100 SXM", n=2, prompt=2_000, answer=300, block=16),
    lambda r: (
        _vary_pair(r)
        | dict(prompt=pick(r, (1_000, 2_000, 4_000)), answer=pick(r, (300, 600, 1_000)), block=pick(r, (16, 32)))
    ),
    lambda v: _batch(v, _paged(v)),
    (
        "Average tokens held = {prompt} + {answer} / 2, rounded up to a multiple of {block}.",
        "Batch = free memory / (KV per token x that), rounded down.",
    ),
    integer=True,
    bare_ok=True,
    followup="How many fit if each conversation reserves all its tokens instead?",
)


def _tail(v):
    docs = v["docs"] * lc.kv_bytes_per_sequence(v["model"], v["doc_len"])
    return lc.FORMULAS["max_batch"](
        usable_memory=lc.usable_memory(v["gpu"], v["n"]),
        weights=lc.weight_bytes(v["model"], v["precision"]) + docs,
        kv_per_sequence=lc.kv_bytes_per_sequence(v["model"], v["context"]),
    )


define(
    EXERCISES,
    "kv_cache_ex6",
    "The long tail",
    Story(
        "A chatbot runs {model} in {name} with a BF16 cache on {gpus} ({free} free beside the weights, {kv_token} of "
        "cache per token): it fits {alone} conversations of {context} tokens. If {bring} a {doc_len}-token document, "
        "how many ordinary conversations still fit?",
        _tail_figures,
    ),
    "",
    dict(model="Qwen2.5-72B", precision="fp8", gpu="H100 SXM", n=2, context=2_300, docs=2, doc_len=30_000),
    lambda r: (
        _vary_pair(r)
        | dict(context=pick(r, (1_500, 2_300)), docs=pick(r, (1, 2, 3)), doc_len=pick(r, (20_000, 30_000)))
    ),
    _tail,
    (
        "Free memory = usable memory - weights; take the documents' KV out first.",
        "Then divide what is left by one ordinary conversation's KV and round down.",
    ),
    integer=True,
    bare_ok=True,
)
