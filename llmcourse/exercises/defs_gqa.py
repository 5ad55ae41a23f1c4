"""Exercises for *Grouped-query attention* (``book/04_gqa.md``): MHA, GQA, MQA and MLA caches.

``gqa_ex1`` .. ``gqa_ex6`` follow the chapter's exercises of the same labels (the numeric part of each);
``gqa_ex7`` and ``gqa_ex8`` are extra.
"""

from __future__ import annotations

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import COURSE, Story, define, pct, pick, pool

EXERCISES: list = []

#: The share of memory a server may use, by the course's method (the default of these estimates).
_USABLE = pct(COURSE.memory_fraction)

_GQA = (
    "Llama-3.1-8B",
    "Llama-3.1-70B",
    "Qwen2.5-7B",
    "Qwen2.5-72B",
    "Mistral-7B-v0.1",
    "Mixtral-8x7B",
    "Llama-3.1-405B",
    "Qwen3-30B-A3B",
    "Qwen3-235B-A22B",
    "gpt-oss-120b",
    "gpt-oss-20b",
)
#: Precisions a variant's KV cache may use (named as a story prints them).
_KV = ("BF16", "FP8", "FP32", "INT4")
_PER_TOKEN = ("KV per token = 2 (keys and values) x layers x KV heads x head dim x 2 bytes.",)
_PER_TOKEN_KV = (
    "KV per token = 2 (keys and values) x layers x KV heads x head dim x bytes per {kv} value "
    "(lc.PRECISIONS: 2 for BF16, 1 for FP8).",
)


def _shape(name, prefix=""):
    """A catalog model's shape, as a story states it (keys named with ``prefix``)."""
    m = lc.models[name]
    return {f"{prefix}{k}": f"{getattr(m, k):,}" for k in ("layers", "hidden", "heads", "kv_heads", "head_dim")}


def _figures(v):
    """The catalog figures a story states beside its givens (see :class:`~llmcourse.exercises._common.Story`): the
    models' shapes, the GPU's memory and the model's BF16 weights."""
    out = {}
    if "model" in v:
        out |= _shape(v["model"])
    if "small" in v:
        out |= _shape(v["small"], "small_") | _shape(v["large"], "large_")
    if "gpu" in v:
        out["memory"] = f"{lc.gpus[v['gpu']].memory.to('GB').m:.4g} GB"
        out["weights"] = f"{lc.weight_bytes(v['model']).to('GB').m:.4g} GB"
    return out


def _kv_slip(v):
    b = lc.PRECISIONS[v["kv"].lower()]
    return [(2 / b, "did you count 2 bytes a value (BF16) instead of the cache's precision?")] if b != 2 else []


def _heads(v):
    m = lc.models[v["model"]]
    return (
        [(m.heads / m.kv_heads, "did you use the query heads instead of the KV heads?")]
        if m.heads != m.kv_heads
        else []
    )


define(
    EXERCISES,
    "gqa_ex1",
    "KV per token with grouped heads",
    Story(
        "{model} has {layers} layers, {heads} query heads and {kv_heads} KV heads, each as wide as its config's "
        "head_dim; every key/value head serves a group of query heads. How many bytes of {kv} KV cache does one token "
        "take?",
        _figures,
    ),
    "KiB",
    dict(model="Mistral-7B-v0.1", kv="BF16"),
    lambda r: dict(model=pick(r, _GQA), kv=pick(r, _KV)),
    lambda v: lc.kv_bytes_per_token(v["model"], v["kv"].lower()),
    (*_PER_TOKEN_KV, "lc.models['{model}'].layers, .kv_heads, .head_dim."),
    kv=True,
    mistakes=lambda v: [*_heads(v), *_kv_slip(v)],
    followup="What is the group size?",
)

#: The two caches' precisions, as the story says them: (MHA model's, GQA model's).
_KV_PAIRS = {
    "BF16 both": ("bf16", "bf16"),
    "the MHA model's in BF16, the GQA model's in FP8": ("bf16", "fp8"),
    "the MHA model's in FP8, the GQA model's in BF16": ("fp8", "bf16"),
}

define(
    EXERCISES,
    "gqa_ex2",
    "A small MHA model against a large GQA model",
    Story(
        "{small} ({small_layers} layers, {small_kv_heads} KV heads of {small_head_dim}) has one KV head per query "
        "head; {large} ({large_layers} layers, {large_kv_heads} KV heads of {large_head_dim}) shares its KV heads. How "
        "many times as much KV cache per token as {large} does {small} keep ({kv})?",
        _figures,
    ),
    "",
    dict(small="Llama-2-7B", large="Llama-2-70B", kv="BF16 both"),
    lambda r: dict(
        small=pick(r, ("Llama-2-7B", "Llama-2-13B")),
        large=pick(r, _GQA),
        kv=pick(r, tuple(_KV_PAIRS)),
    ),
    lambda v: (
        lc.kv_bytes_per_token(v["small"], _KV_PAIRS[v["kv"]][0])
        / lc.kv_bytes_per_token(v["large"], _KV_PAIRS[v["kv"]][1])
    ).to(""),
    (*_PER_TOKEN, "Divide the two per-token figures: layers and KV heads both matter."),
    bare_ok=True,
    followup="Why does the smaller model cache more?",
)


def _toy(v):
    return lc.Model(
        "given model",
        params=v["billions"] * 1e9,
        layers=v["layers"],
        hidden=v["kv_heads"] * 128 * 8,
        heads=v["kv_heads"] * 8,
        kv_heads=v["kv_heads"],
        head_dim=128,
    )


define(
    EXERCISES,
    "gqa_ex3",
    "Sequences beside the weights",
    "Two 80 GB GPUs (all memory usable) hold a {billions}-billion-parameter model in BF16. The model has {layers} "
    "layers and {kv_heads} KV heads of 128. How many sequences of {context} tokens fit beside the weights?",
    "",
    dict(billions=70, layers=80, kv_heads=8, context=2_000),
    lambda r: dict(
        billions=pick(r, (13, 20, 34, 40, 70)),
        layers=pick(r, (32, 40, 48, 60, 64, 80)),
        kv_heads=pick(r, (4, 8, 16)),
        context=pick(r, range(1_000, 8_001, 500)),
    ),
    lambda v: lc.max_batch(
        _toy(v), "H100 SXM", v["context"], n_gpus=2, assumptions=lc.resolve().replace(memory_fraction=1.0)
    ),
    (
        "Free memory = 2 x 80 GB - parameters x 2 bytes.",
        "KV per sequence = 2 x {layers} x {kv_heads} x 128 x 2 bytes x {context}; divide and round down.",
    ),
    integer=True,
    bare_ok=True,
)


def _bugs(v):
    m = lc.models[v["model"]]
    b = v["kv"].lower()
    right = lc.kv_bytes_per_token(m, b)
    hidden = lc.FORMULAS["kv_bytes_per_token"](
        layers=m.layers, kv_heads=1, head_dim=m.hidden, kv_bytes=Q_(lc.PRECISIONS[b], "B")
    )
    small_head = lc.kv_bytes_per_token(m.with_(head_dim=m.hidden // m.heads), b)
    return [
        ((hidden / right).to("").m, "that is the hidden-size formula: it ignores the KV heads"),
        ((small_head / right).to("").m, "the head dimension is head_dim from the config, not hidden / heads"),
    ]


#: Configs where the hidden-size formula, or hidden / heads for the head size, goes wrong.
_CONFIGS = (
    "Qwen3-30B-A3B",
    "Qwen3-235B-A22B",
    "Llama-3.1-8B",
    "Qwen2.5-72B",
    "gpt-oss-120b",
    "gpt-oss-20b",
    "Llama-3.1-405B",
    "Qwen2.5-7B",
)

define(
    EXERCISES,
    "gqa_ex4",
    "The calculator bug",
    Story(
        "{model}'s config gives {layers} layers, hidden size {hidden}, {heads} query heads, {kv_heads} KV heads and "
        "head_dim {head_dim}. Computed correctly, how many bytes of {kv} KV cache does one token take?",
        _figures,
    ),
    "KiB",
    dict(model="Qwen3-30B-A3B", kv="BF16"),
    lambda r: dict(model=pick(r, _CONFIGS), kv=pick(r, _KV)),
    lambda v: lc.kv_bytes_per_token(v["model"], v["kv"].lower()),
    (
        *_PER_TOKEN_KV,
        "Use num_key_value_heads and head_dim (lc.models['{model}'].kv_heads, .head_dim), not the hidden size.",
    ),
    kv=True,
    mistakes=lambda v: [*_bugs(v), *_heads(v), *_kv_slip(v)],
    followup="What do the hidden-size formula (keys and values x layers x hidden size x bytes) and the KV heads with "
    "a head size of hidden / heads give instead?",
)

_MLA = {"DeepSeek-V2-Lite": (27, 512, 64), "DeepSeek-V2": (60, 512, 64), "DeepSeek-V3": (61, 512, 64)}


@pool
def _MLA_DESIGNS():
    """The three DeepSeek models' own shapes, and DeepSeek-style designs of other depths and latent sizes."""
    for name, (layers, rank, rope) in _MLA.items():
        yield dict(name=name, layers=layers, rank=rank, rope=rope)
    for layers in range(16, 97, 4):
        for rank in (256, 384, 512, 768, 1_024):
            for rope in (32, 64):
                yield dict(name="A DeepSeek-style design", layers=layers, rank=rank, rope=rope)


define(
    EXERCISES,
    "gqa_ex5",
    "Multi-head latent attention",
    "{name} uses MLA with {layers} layers, kv_lora_rank {rank} and qk_rope_head_dim {rope}: per layer it caches one "
    "latent plus the rotary key. How many bytes of BF16 cache per token?",
    "KiB",
    dict(name="DeepSeek-V2-Lite", layers=27, rank=512, rope=64),
    lambda r: pick(r, _MLA_DESIGNS()),
    lambda v: lc.FORMULAS["kv_bytes_per_token_mla"](
        layers=v["layers"], kv_lora_rank=v["rank"], rope_dim=v["rope"], kv_bytes=Q_(2, "B")
    ),
    (
        "KV per token = layers x (kv_lora_rank + qk_rope_head_dim) x 2 bytes: no factor 2 for keys and values, the "
        "latent serves both.",
    ),
    mistakes=lambda v: [(2.0, "MLA caches one latent for keys and values: no factor 2")],
)


def _most_kv_heads(v):
    """The largest KV-head count (a divisor of the query heads) whose KV lets ``users`` conversations fit."""
    m = lc.models[v["model"]]
    ok = [
        h
        for h in range(1, m.heads + 1)
        if m.heads % h == 0 and lc.max_batch(m.with_(kv_heads=h), v["gpu"], v["context"]) >= v["users"]
    ]
    return max(ok) if ok else 0


def _served_at_most_heads(v):
    """How many conversations fit with that KV-head count (the answer spreads where the head count cannot)."""
    m = lc.models[v["model"]]
    return lc.max_batch(m.with_(kv_heads=_most_kv_heads(v)), v["gpu"], v["context"])


def _vary_heads(r):
    """Givens for which some KV-head count serves the users (drawn until one does)."""
    while True:
        v = dict(
            model=pick(r, ("Llama-3.1-8B", "Qwen2.5-7B", "Llama-2-13B", "Llama-3.1-70B", "Llama-3.1-405B")),
            users=pick(r, (5, 10, 16, 25, 32, 50, 64, 100)),
            context=pick(r, (4_096, 8_192, 16_384, 33_280, 65_536)),
            gpu=pick(r, ("H100 SXM", "H200 SXM", "B200", "MI300X", "MI325X")),
        )
        if lc.weight_bytes(v["model"]) < lc.usable_memory(v["gpu"]) and _most_kv_heads(v):
            return v


define(
    EXERCISES,
    "gqa_ex6",
    "How many KV heads can we afford",
    Story(
        "A variant of {model} (its {weights} of BF16 weights, {layers} layers, {heads} query heads of {head_dim}) must "
        f"serve at least {{users}} conversations of {{context}} tokens on one {{gpu}} ({{memory}}, {_USABLE} usable), "
        "with a BF16 cache. Give it the largest number of KV heads (a divisor of the query heads) that allows it: how "
        "many conversations of that length does it then fit?",
        _figures,
    ),
    "",
    dict(model="Llama-3.1-8B", users=50, context=33_280, gpu="H100 SXM"),
    _vary_heads,
    _served_at_most_heads,
    (
        f"Budget per conversation = ({COURSE.memory_fraction:g} x memory - weights) / {{users}}.",
        "KV heads <= budget / (2 x layers x head dim x 2 bytes x {context}); take the largest divisor of the query "
        "heads below that.",
        f"With that many KV heads: ({COURSE.memory_fraction:g} x memory - weights) / (KV per token x {{context}}), "
        "rounded down.",
    ),
    integer=True,
    bare_ok=True,
    followup="How many KV heads is that?",
)

define(
    EXERCISES,
    "gqa_ex7",
    "Multi-query attention",
    "An edge deployment considers a variant of {model} with a single KV head (MQA). How many bytes of {kv} KV "
    "cache would one token take?",
    "KiB",
    dict(model="Llama-3.1-8B", kv="BF16"),
    lambda r: dict(model=pick(r, _GQA), kv=pick(r, _KV)),
    lambda v: lc.kv_bytes_per_token(lc.models[v["model"]].with_(kv_heads=1), v["kv"].lower()),
    ("KV per token = 2 x layers x 1 x head dim x bytes per {kv} value (lc.PRECISIONS: 2 for BF16, 1 for FP8).",),
    kv=True,
    mistakes=_kv_slip,
)


@pool
def _LONG():
    """(model, GPU): BF16 weights that leave at least 10 GB of the GPU's usable memory for the MHA cache."""
    for model in ("Llama-3.1-8B", "Qwen2.5-7B"):
        for gpu in ("H100 SXM", "H200 SXM", "B200", "MI300X", "MI325X", "A100 SXM 80GB", "L40S"):
            if (lc.usable_memory(gpu) - lc.weight_bytes(model)).to("GB").m >= 10:
                yield model, gpu


define(
    EXERCISES,
    "gqa_ex8",
    "The same model without GQA",
    f"Suppose {{model}} had one KV head per query head (MHA) but were otherwise the same. On one {{gpu}} (BF16, "
    f"{_USABLE} usable) at {{context}}-token contexts, how many sequences would fit?",
    "",
    dict(model="Llama-3.1-8B", gpu="H100 SXM", context=32_768),
    lambda r: (
        dict(zip(("model", "gpu"), pick(r, _LONG()), strict=True)) | dict(context=pick(r, range(2_048, 16_385, 512)))
    ),
    lambda v: lc.max_batch(lc.models[v["model"]].with_(kv_heads=lc.models[v["model"]].heads), v["gpu"], v["context"]),
    (
        "Give the model as many KV heads as query heads: lc.models['{model}'].with_(kv_heads=...).",
        "Then free memory / KV per sequence, rounded down.",
    ),
    integer=True,
    bare_ok=True,
)
