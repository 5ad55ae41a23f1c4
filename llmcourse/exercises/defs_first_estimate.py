"""Exercises for *A first estimate* (``book/00_first_estimate.md``): the whole-table method.

The chapter's table reproduces the back-of-the-envelope method's worked example (Qwen2.5-72B in FP8 on two
H100s: 94 conversations, 4,387 tokens per second, $0.32 per million), so these exercises work under that
method's preset (``assumptions="envelope"``: the datasheet bandwidth, decode only, prefill not charged) and say
so in their stories; the chapter's erratum gives the course's figures beside it.
"""

from __future__ import annotations

import functools

import llmcourse as lc
from llmcourse.exercises._common import ENVELOPE, define, pct, pick

#: The back-of-the-envelope method, whose worked example these exercises reproduce.
METHOD = "envelope"

EXERCISES: list = []

#: The method the notebook says these exercises follow (shown above its first exercise).
NOTEBOOK_METHOD = """
**The method.** These exercises reproduce the chapter's first table, so they follow the back-of-the-envelope
method it comes from: the datasheet bandwidth, and throughput and cost counted from decode steps alone (prefill
is not charged). The chapter's erratum gives the course's figures for the same replica. Each story states the
assumptions it needs.
"""

# The students' setups: a model, its weight precision, then a server (GPU, count) whose memory holds the weights and
# a batch of the longest conversations a variant draws.
_MODELS = (
    "Llama-3.1-8B",
    "Qwen2.5-7B",
    "Llama-2-7B",
    "Llama-2-13B",
    "Llama-3.1-70B",
    "Qwen2.5-72B",
    "Llama-2-70B",
    "Llama-3.1-405B",
)
_PRECISIONS = ("bf16", "fp8", "int4")
_GPUS = ("H100 SXM", "H200 SXM", "B200", "MI300X", "MI325X", "A100 SXM 80GB", "H100 PCIe", "L40S")
_LONGEST = 5_000  # tokens: the longest prompt (4,000) plus the longest answer (1,000) a variant draws
_LEAST_BATCH = 8  # conversations of that length the free memory must hold
DEFAULT = dict(model="Qwen2.5-72B", precision="fp8", gpu="H100 SXM", n_gpus=2, context=2_300, prompt=2_000)


@functools.cache
def _servers(model, precision):
    """(GPU, count) pairs for these weights: the three smallest counts (1, 2, 4 or 8) of each GPU whose usable memory
    holds the weights and a batch of conversations at the longest context; FP8 only where the GPU computes in FP8."""
    weights = lc.weight_bytes(model, precision)
    kv = lc.kv_bytes_per_sequence(model, _LONGEST)
    out = []
    for gpu in _GPUS:
        if precision == "fp8" and lc.matmul_precision("fp8", gpu, "course") != "fp8":
            continue
        counts = [
            n for n in (1, 2, 4, 8) if lc.usable_memory(gpu, n, assumptions=METHOD) - weights >= _LEAST_BATCH * kv
        ]
        out += [(gpu, n) for n in counts[:3]]
    return tuple(out)


def _vary(r):
    servers = ()
    while not servers:
        model, precision = pick(r, _MODELS), pick(r, _PRECISIONS)
        servers = _servers(model, precision)
    gpu, n = pick(r, servers)
    longest = min(_LONGEST, lc.models[model].max_position)  # Llama 2 takes 4,096 positions
    prompt = pick(r, range(1_000, min(4_000, longest - 200) + 1, 100))
    return dict(
        model=model,
        precision=precision,
        gpu=gpu,
        n_gpus=n,
        prompt=prompt,
        context=prompt + pick(r, range(200, min(1_000, longest - prompt) + 1, 50)),
    )


def _plan(v):
    return lc.serving_plan(
        v["model"],
        v["gpu"],
        v["n_gpus"],
        v["context"],
        weight_bytes=v["precision"],
        prompt_tokens=v["prompt"],
        assumptions=METHOD,
    )


_STORY = (
    "A legal-research start-up serves {model} with {precision} weights on {n_gpus} x {gpu}. A typical "
    "conversation holds {context} tokens ({prompt} of them the prompt). "
)
# The back-of-the-envelope method's decode step, in the words of the chapter's table.
_STEP = (
    f"Estimate it as the back-of-the-envelope method does: the server may use {pct(ENVELOPE.memory_fraction)} of "
    "the GPUs' memory and the batch is as many conversations as fit; each decode step reads the weights and "
    f"every conversation's whole KV cache at {pct(ENVELOPE.bandwidth_efficiency)} of the GPUs' datasheet bandwidth, "
    f"and does {ENVELOPE.flops_per_param:g} FLOPs per parameter per conversation at "
    f"{pct(ENVELOPE.compute_efficiency)} of the {ENVELOPE.matmul_precision.upper()} peak FLOP/s; the slower of the "
    "two sets the pace. "
)

define(
    EXERCISES,
    "first_estimate_ex1",
    "Do the weights fit?",
    _STORY + "How many bytes do the weights take?",
    "GB",
    DEFAULT,
    _vary,
    lambda v: lc.weight_bytes(v["model"], v["precision"]),
    (
        "Weights = parameters x bytes per parameter.",
        "lc.models['{model}'].params gives the parameters; {precision} stores lc.PRECISIONS['{precision}'] bytes each.",
    ),
)

define(
    EXERCISES,
    "first_estimate_ex2",
    "Usable memory",
    _STORY + f"The serving engine may use {pct(ENVELOPE.memory_fraction)} of the GPUs' memory, as the "
    "back-of-the-envelope method plans. How much memory is that?",
    "GB",
    DEFAULT,
    _vary,
    lambda v: lc.usable_memory(v["gpu"], v["n_gpus"], assumptions=METHOD),
    (
        f"Usable memory = GPUs x memory per GPU x {ENVELOPE.memory_fraction:g}.",
        "lc.gpus['{gpu}'].memory is the memory of one GPU.",
    ),
)

define(
    EXERCISES,
    "first_estimate_ex3",
    "KV cache of one conversation",
    _STORY + "How much KV cache (BF16) does one conversation hold?",
    "GB",
    DEFAULT,
    _vary,
    lambda v: lc.kv_bytes_per_sequence(v["model"], v["context"]),
    (
        "KV per token = 2 (keys and values) x layers x KV heads x head dim x 2 bytes.",
        "Multiply the KV per token by the {context} tokens of the conversation.",
    ),
    kv=True,
)

define(
    EXERCISES,
    "first_estimate_ex4",
    "How many conversations at once",
    _STORY + f"The serving engine may use {pct(ENVELOPE.memory_fraction)} of the GPUs' memory, as the "
    "back-of-the-envelope method plans. How many conversations fit in the memory the weights leave free?",
    "",
    DEFAULT,
    _vary,
    lambda v: _plan(v).batch,
    ("Free memory = usable memory - weights.", "Batch = free memory / KV per conversation, rounded down."),
    integer=True,
    bare_ok=True,
)

define(
    EXERCISES,
    "first_estimate_ex5",
    "Time of one decode step",
    _STORY + _STEP + "How long is one step?",
    "ms",
    DEFAULT,
    _vary,
    lambda v: _plan(v).step_time,
    (
        "Bytes per step = weights + batch x KV per conversation at its full {context} tokens.",
        f"Step time = bytes per step / ({{n_gpus}} x {ENVELOPE.bandwidth_efficiency:g} x the bandwidth of one "
        "{gpu}).",
        f"Check the compute: batch x {ENVELOPE.flops_per_param:g} x parameters / ({{n_gpus}} x "
        f"{ENVELOPE.compute_efficiency:g} x lc.gpus['{{gpu}}'].peak_flops('{ENVELOPE.matmul_precision}')).",
    ),
)

define(
    EXERCISES,
    "first_estimate_ex6",
    "Tokens per second, all users",
    _STORY + _STEP + "Counting decode steps only, as the back-of-the-envelope method does (the prefill of the "
    "prompts is not charged), how many output tokens per second do the GPUs produce in all?",
    "1/s",
    DEFAULT,
    _vary,
    lambda v: _plan(v).output_tokens_per_s,
    ("Each step gives every conversation in the batch one token.", "Throughput = batch / step time."),
)

define(
    EXERCISES,
    "first_estimate_ex7",
    "Cost of a million output tokens",
    _STORY + _STEP + "The GPUs cost their catalog price per hour each and run at full load with the full batch, "
    "decoding only (the back-of-the-envelope method does not charge prefill). What does a million output tokens "
    "cost?",
    "USD",
    DEFAULT,
    _vary,
    lambda v: _plan(v).cost_per_million_output_tokens,
    ("Dollars per hour for all GPUs / output tokens per hour.", "lc.gpus['{gpu}'].price_per_hour is the price."),
    tolerance=0.02,
)
