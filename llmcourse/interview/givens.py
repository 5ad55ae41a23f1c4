"""What the interview questions' variants draw from: the catalog's models and GPUs that fit each question's setting,
and the loads, so that every variant's prose holds as written (the fixes it names, the GPUs it splits over).

Each list is computed from the catalog (:mod:`llmcourse.catalog`) and the replica model (which model fits on how many
of which GPU), never typed: a model or GPU added to the catalog joins the draws where it fits. The worked answers of
:mod:`llmcourse.interview.worked` and :mod:`llmcourse.interview.worked_chains` draw from them with
:func:`llmcourse.interview.figures.draw`.

Examples
--------
>>> "Llama-3.1-70B" in GQA_MODELS and "DeepSeek-V3" not in GQA_MODELS
True
>>> fits_words(0), fits_words(1), fits_words(15)
('none fits', 'one fits', '15 fit')
>>> book_only(0), book_only(3)
(", the source's figure", '')
"""

from __future__ import annotations

import functools
from typing import Any

from llmcourse.assumptions import resolve
from llmcourse.catalog import gpus, models
from llmcourse.interview.figures import ENVELOPE, LAB, draw, seed004_model
from llmcourse.replica.memory import gpus_for_weights, kv_bytes_per_token, max_batch, usable_memory, weight_bytes

__all__ = [
    "ANSWERS",
    "ANSWER_CHARS",
    "BILLIONS",
    "CHAT_ANSWERS",
    "CHAT_PROMPTS",
    "CONTEXTS",
    "FLEET_RPS",
    "GQA70_CONTEXTS",
    "GQA70_GPUS",
    "GQA_CONTEXTS",
    "GQA_MODELS",
    "KV_FORMULA_MODELS",
    "KV_PER_VALUE_WORDS",
    "KV_PRECISIONS",
    "KV_WORDS",
    "LONG",
    "LONG_ANSWERS",
    "LONG_PROMPTS",
    "PER_DAY",
    "PER_GPU",
    "PRICES",
    "PROMPTS",
    "SHORT_PROMPTS",
    "batch64_pairs",
    "billion_setup",
    "book_only",
    "fits_words",
    "fleet350_rps",
    "fp8_pairs",
    "gpu_words",
    "gqa70_setup",
    "gqa_setups",
    "long_pairs",
    "one_gpu_models",
    "one_gpu_setups",
    "smaller_models",
    "tp2_pairs",
    "tp2_setup",
    "two_gpu_setups",
    "weights_fit_setups",
]


#: Dense models of full attention in every layer, grouped-query attention, a window of 32K tokens or more, whose KV
#: cache is linear in the context and whose hidden size is their query heads times the head dimension (the L4 questions' formula holds as written).
GQA_MODELS = tuple(
    name
    for name, m in models.items()
    if m.kv_heads < m.heads
    and (m.max_position or 0) >= 32_768
    and m.active_params == m.params
    and m.hidden == m.heads * m.head_dim
    and kv_bytes_per_token(m).to("B").m == 2 * m.layers * m.kv_heads * m.head_dim * 2
)
#: Requests a day the traffic questions' variants draw from.
PER_DAY = (50_000, 100_000, 200_000, 300_000, 500_000, 1_000_000, 2_000_000, 5_000_000)
#: Prompt and answer lengths the L4 variants draw from.
PROMPTS, ANSWERS = (500, 1_000, 1_500, 2_000, 3_000, 4_000, 6_000, 8_000), (100, 200, 300, 400, 600, 800, 1_000)
#: The long contexts (2^n tokens, named "32K" and so on) the variants draw from.
LONG = (4_096, 8_192, 16_384, 32_768)


def book_only(variant: int, words: str = ", the source's figure") -> str:
    """Words that hold only for the book's givens (variant 0): ``words`` there, nothing for another draw."""
    return words if variant == 0 else ""


def two_gpu_setups() -> tuple[tuple[str, str], ...]:
    """(model, GPU) pairs whose BF16 weights need exactly two GPUs by the back-of-the-envelope method's memory: the
    single-stream question's setting (the weights split over two GPUs that read their halves at once)."""
    out = []
    for name in GQA_MODELS:
        for gpu in gpus:
            if gpus_for_weights(name, gpu, "bf16", assumptions=ENVELOPE) == 2:
                out.append((name, gpu))
    return tuple(out)


#: Contexts (tokens) the memory-bound question's variants draw from.
CONTEXTS = (512, 1_024, 2_304, 4_096, 8_192, 16_384, 32_768)


def one_gpu_setups() -> tuple[tuple[str, str], ...]:
    """(model, GPU) pairs whose BF16 weights fit on one GPU, and on one L4 (the answer's comparison), by the
    interactive lab's memory (the memory-bound question's setting)."""

    def fits(name: str, gpu: str) -> bool:
        return gpus_for_weights(name, gpu, "bf16", assumptions=LAB, power_of_two=False) == 1

    return tuple((name, gpu) for name in GQA_MODELS if fits(name, "L4") for gpu in gpus if fits(name, gpu))


def fp8_pairs() -> tuple[tuple[str, str], ...]:
    """(model, GPU) pairs for the prefill question: a GPU whose FP8 peak is twice its BF16 peak (as the answer
    says), and a model whose FP8 weights fit on two of them by the back-of-the-envelope method's memory."""
    return tuple(
        (name, gpu)
        for name in GQA_MODELS
        for gpu, g in gpus.items()
        if g.fp8_flops is not None
        and abs(float((g.fp8_flops / g.flops).to("").m) - 2) < 0.01
        and gpus_for_weights(name, gpu, "fp8", assumptions=ENVELOPE) <= 2
    )


@functools.cache
def tp2_pairs(big: bool = False) -> tuple[tuple[str, str], ...]:
    """(model, GPU) pairs for a replica of two GPUs with FP8 weights (the batch and cost questions' setting): a GPU
    with a price in the catalog, on which two hold the weights and 8 conversations of the longest prompt and answer
    drawn, by the back-of-the-envelope method's memory; ``big``: models of 30 billion parameters or more (the cost
    question compares them with a 7B model)."""
    longest = max(PROMPTS) + max(ANSWERS)
    return tuple(
        (name, gpu)
        for name in GQA_MODELS
        if not big or models[name].params >= 30e9
        for gpu, g in gpus.items()
        if g.price_per_hour is not None
        and gpus_for_weights(name, gpu, "fp8", assumptions=ENVELOPE) <= 2
        and max_batch(name, gpu, longest, n_gpus=2, weight_bytes="fp8", assumptions=ENVELOPE) >= 8
    )


def tp2_setup(variant: int, big: bool = False) -> dict[str, Any]:
    g = draw(
        variant, setup=(("Qwen2.5-72B", "H100 SXM"), tp2_pairs(big)), prompt=(2_000, PROMPTS), answer=(300, ANSWERS)
    )
    (g["model"], g["gpu"]), g["ctx"] = g.pop("setup"), g["prompt"] + g["answer"]
    g["gpu_name"] = g["gpu"].split()[0] if variant == 0 else g["gpu"]
    return g


#: The GPUs (80 GB or more: two hold the 70B-class model's BF16 weights) and contexts the ``gqa70`` chain draws from.
GQA70_GPUS = ("H100 SXM", "H20", "Gaudi 3", "H200 SXM", "B200", "GB200", "MI300X", "TPU v7", "MI325X", "B300")
GQA70_CONTEXTS = (2_000, 3_000, 4_000, 6_000, 8_000)


def gqa70_setup(variant: int = 0) -> dict[str, Any]:
    """The ``gqa70`` chain's givens for ``variant`` (kv_limit's setup: the 70B-class model in BF16 on two GPUs, all
    their memory counted as usable, as source 004 counts it), shared by its follow-ups."""
    g = draw(
        variant, gpu=("H100 SXM", GQA70_GPUS), base=(4_000, GQA70_CONTEXTS), long=(32_768, (16_384, 24_576, 32_768))
    )
    every = resolve().replace(memory_fraction=1)  # the source counts all 160 GB as usable
    w = weight_bytes(seed004_model()).to("GB")
    total = usable_memory(g["gpu"], 2, assumptions=every).to("GB")
    return g | dict(
        gpu_name=g["gpu"].split()[0] if variant == 0 else g["gpu"],
        gpu_mem=gpus[g["gpu"]].memory,
        total=total,
        w=w,
        free=(total - w).to("GB"),
        every=every,
    )


def fits_words(n: int) -> str:
    """How many sequences fit, in words: "none fits", "one fits", "15 fit"."""
    return {0: "none fits", 1: "one fits"}.get(n, f"{n:,} fit")


#: Short and long prompts, and answers, the long-context question's variants draw from.
SHORT_PROMPTS, LONG_PROMPTS, LONG_ANSWERS = (1_024, 2_048, 4_096), (16_384, 32_768), (256, 512, 1_024)


@functools.cache
def long_pairs() -> tuple[tuple[str, str], ...]:
    """(model, GPU) pairs for the long-context question: a model whose window holds the longest prompt and answer
    drawn, and a GPU with a price, one of which holds the BF16 weights and four such conversations, by the course's
    memory."""
    longest = max(LONG_PROMPTS) + max(LONG_ANSWERS)
    return tuple(
        (name, gpu)
        for name in GQA_MODELS
        if models[name].max_position >= longest
        for gpu, g in gpus.items()
        if g.price_per_hour is not None
        and gpus_for_weights(name, gpu, "bf16", power_of_two=False) == 1
        and max_batch(name, gpu, longest) >= 4
    )


#: Short chats' lengths and GPU-hour prices the batch-cost question's variants draw from.
CHAT_PROMPTS, CHAT_ANSWERS, PRICES = (128, 256, 512, 1_024), (32, 64, 128, 256), (1, 2, 3, 4, 5)


@functools.cache
def batch64_pairs() -> tuple[tuple[str, str], ...]:
    """(model, GPU) pairs for the batch-cost question: models of 15 billion parameters or fewer, one GPU of which
    holds 64 of the longest short chats drawn, by the interactive lab's memory."""
    longest = max(CHAT_PROMPTS) + max(CHAT_ANSWERS)
    return tuple(
        (name, gpu)
        for name in GQA_MODELS
        if models[name].params <= 15e9
        for gpu in gpus
        if gpus_for_weights(name, gpu, "bf16", assumptions=LAB, power_of_two=False) == 1
        and max_batch(name, gpu, longest, assumptions=LAB) >= 64
    )


#: The chat fleet's peak request rates (requests/s) the ``fleet350`` chain draws from.
FLEET_RPS = tuple(range(100, 2_050, 50))


def fleet350_rps(variant: int = 0) -> int:
    """The ``fleet350`` chain's peak request rate for ``variant`` (roofline_fleet's 350 in the book's), shared by its
    follow-ups (the triple traffic is three times it)."""
    return draw(variant, rps=(350, FLEET_RPS))["rps"]


#: Requests a day (billions), answer lengths (characters) and per-GPU rates (tokens/s) the ``billion`` chain draws; the
#: rates are above what an H100 makes as its share of a 70B FP8 pair (under 2,000 tokens/s at these lengths), so that
#: the chain's last follow-up, which asks for that rate, moves the fleet up.
BILLIONS = (0.5, 1, 1.5, 2, 3, 5)
ANSWER_CHARS = (2_000, 3_000, 4_000, 5_000, 6_000, 8_000)
PER_GPU = (2_000, 2_500, 3_000, 3_500, 4_000, 5_000)


def billion_setup(variant: int = 0) -> dict[str, Any]:
    """The ``billion`` chain's givens for ``variant`` (huge_fleet's: 1.5 billion requests a day, 5,000 characters an
    answer, 2,000 tokens/s a GPU, in the book's), shared by its follow-ups."""
    return draw(variant, bn=(1.5, BILLIONS), chars=(5_000, ANSWER_CHARS), xg=(2_000, PER_GPU))


def one_gpu_models() -> tuple[str, ...]:
    """The models of :data:`GQA_MODELS` whose BF16 weights fit on one L4 by the interactive lab's memory (7-8B)."""
    return tuple(
        name for name in GQA_MODELS if gpus_for_weights(name, "L4", "bf16", assumptions=LAB, power_of_two=False) == 1
    )


#: The KV-cache precisions the KV questions' variants draw from: BF16 (the engines' default, "auto"), FP8 (vLLM,
#: SGLang ``--kv-cache-dtype fp8``; TensorRT-LLM ``KvCacheConfig(dtype="fp8")``) and NVFP4, 4-bit values with one FP8
#: scale per 16 (TensorRT-LLM ``KvCacheConfig(dtype="nvfp4")``, SGLang ``fp4_e2m1``): bytes a value by
#: :func:`llmcourse.catalog.bytes_per_value`.
KV_PRECISIONS = ("bf16", "fp8", "nvfp4")
#: The KV precisions as the questions name them.
KV_WORDS = {"bf16": "BF16", "fp8": "FP8", "nvfp4": "NVFP4 (4-bit values with one 8-bit scale per 16)"}
#: A value's bytes in each KV precision, as a candidate says it.
KV_PER_VALUE_WORDS = {"bf16": "two bytes", "fp8": "one byte", "nvfp4": "0.5625 bytes"}


def gpu_words(n: int) -> str:
    """A GPU count in words: "one GPU", "two GPUs", "12 GPUs"."""
    words = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
    return f"{words[n - 1] if 1 <= n <= 9 else f'{n:,}'} GPU{'' if n == 1 else 's'}"


#: Models of grouped-query attention whose KV bytes a token are 2 x layers x KV heads x head dim x bytes, and whose
#: hidden size is more than their KV heads times the head dimension (the KV-per-token question's formula holds as
#: written, and its "hidden size in place of the KV heads" slip overcounts), dense or mixture-of-experts.
KV_FORMULA_MODELS = tuple(
    name
    for name, m in models.items()
    if m.kv_heads < m.heads
    and m.hidden > m.kv_heads * m.head_dim
    and kv_bytes_per_token(m).to("B").m == 2 * m.layers * m.kv_heads * m.head_dim * 2
)


def smaller_models(name: str) -> tuple[str, ...]:
    """The models of :data:`KV_FORMULA_MODELS` with fewer parameters than ``name`` (the KV-per-token question's
    second model)."""
    return tuple(b for b in KV_FORMULA_MODELS if models[b].params < models[name].params)


@functools.cache
def weights_fit_setups() -> tuple[tuple[str, str], ...]:
    """(model, GPU) pairs for the weights question (any model of the catalog, every weight at the precision asked), by
    the back-of-the-envelope method's memory: the BF16 weights need
    a power of two GPUs that splits the model's heads, more than the FP8 weights need (one node's eight at most), and
    the FP8 count's usable memory misses the BF16 weights (the answer's "the BF16 weights miss by"); the GPUs rented by
    the hour (a price in the catalog) with FP8 arithmetic, not a laptop's unified memory."""
    out = []
    for name in models:
        w16 = weight_bytes(name, "bf16")
        for gpu, g in gpus.items():
            if g.unified_memory or g.price_per_hour is None or g.fp8_flops is None:
                continue
            tp16 = gpus_for_weights(name, gpu, "bf16", assumptions=ENVELOPE)
            n8 = gpus_for_weights(name, gpu, "fp8", assumptions=ENVELOPE)
            if n8 < tp16 <= 8 and models[name].heads % tp16 == 0 and usable_memory(gpu, n8, assumptions=ENVELOPE) < w16:
                out.append((name, gpu))
    return tuple(out)


#: The conversations' contexts (2^n tokens, before the answer) the grouped-query question's variants draw from, up to
#: Llama 3.1's 128K window.
GQA_CONTEXTS = (8_192, 16_384, 32_768, 65_536, 131_072)


@functools.cache
def gqa_setups() -> tuple[tuple[str, int, str], ...]:
    """(GPU, context, KV precision) for the grouped-query question (Llama 2 7B against Llama 3.1 8B, 512 answer tokens,
    by the interactive lab's memory): a GPU rented by the hour (a price in the catalog) on which one conversation of
    Llama 2 7B at least two fit (so each count reads "N conversations")."""
    return tuple(
        (gpu, ctx, kv)
        for gpu, g in gpus.items()
        if g.price_per_hour is not None and not g.unified_memory
        for ctx in GQA_CONTEXTS
        for kv in KV_PRECISIONS
        if max_batch("Llama-2-7B", gpu, ctx + 512, kv_bytes=kv, assumptions=LAB) >= 2
    )
