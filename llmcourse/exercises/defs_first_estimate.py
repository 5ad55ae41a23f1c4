"""Exercises for *A first estimate* (``book/00_first_estimate.md``): the whole-table method."""

from __future__ import annotations

import llmcourse as lc
from llmcourse.exercises._common import define, pick

EXERCISES: list = []

# (model, weight precision, GPU, GPUs): combinations whose weights leave room for a batch.
_SETUPS = (
    ("Qwen2.5-72B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-70B", "fp8", "H100 SXM", 2),
    ("Qwen2.5-72B", "bf16", "H100 SXM", 4),
    ("Llama-3.1-70B", "bf16", "H200 SXM", 2),
    ("Qwen2.5-72B", "fp8", "H200 SXM", 1),
    ("Llama-3.1-70B", "fp8", "B200", 1),
    ("Llama-3.1-8B", "bf16", "H100 SXM", 1),
    ("Qwen2.5-7B", "bf16", "A100 SXM 80GB", 1),
)
DEFAULT = dict(model="Qwen2.5-72B", precision="fp8", gpu="H100 SXM", n_gpus=2, context=2_300, prompt=2_000)


def _vary(r):
    model, precision, gpu, n = pick(r, _SETUPS)
    prompt = pick(r, (1_000, 1_500, 2_000, 3_000, 4_000))
    return dict(
        model=model,
        precision=precision,
        gpu=gpu,
        n_gpus=n,
        prompt=prompt,
        context=prompt + pick(r, (200, 300, 500, 800)),
    )


def _plan(v):
    return lc.serving_plan(
        v["model"], v["gpu"], v["n_gpus"], v["context"], weight_bytes=v["precision"], prompt_tokens=v["prompt"]
    )


_STORY = (
    "A legal-research start-up serves {model} with {precision} weights on {n_gpus} x {gpu}. A typical "
    "conversation holds {context} tokens ({prompt} of them the prompt). "
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
    _STORY + "The serving engine may use 90% of the GPUs' memory. How much memory is that?",
    "GB",
    DEFAULT,
    _vary,
    lambda v: lc.usable_memory(v["gpu"], v["n_gpus"]),
    ("Usable memory = GPUs x memory per GPU x 0.9.", "lc.gpus['{gpu}'].memory is the memory of one GPU."),
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
    _STORY + "How many conversations fit in the memory the weights leave free?",
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
    _STORY + "With the batch full, each decode step reads the weights and every conversation's KV cache at "
    "the GPUs' peak bandwidth, and does 2 FLOPs per parameter per conversation at 50% of the BF16 peak "
    "FLOP/s; the slower of the two sets the pace. How long is one step?",
    "ms",
    DEFAULT,
    _vary,
    lambda v: _plan(v).step_time,
    (
        "Bytes per step = weights + batch x KV per conversation.",
        "Step time = bytes per step / ({n_gpus} x the bandwidth of one {gpu}).",
        "Check the compute: batch x 2 x parameters / ({n_gpus} x 0.5 x lc.gpus['{gpu}'].peak_flops('bf16')).",
    ),
)

define(
    EXERCISES,
    "first_estimate_ex6",
    "Tokens per second, all users",
    _STORY + "With the full batch (each step timed as the slower of reading the bytes at peak bandwidth and "
    "doing the FLOPs at 50% of peak), how many output tokens per second do the GPUs produce in all?",
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
    _STORY + "The GPUs cost their catalog price per hour each and run at full load with the full batch (steps "
    "timed as above: bytes at peak bandwidth or FLOPs at 50% of peak, whichever is slower). What does a "
    "million output tokens cost?",
    "USD",
    DEFAULT,
    _vary,
    lambda v: _plan(v).cost_per_million_output_tokens,
    ("Dollars per hour for all GPUs / output tokens per hour.", "lc.gpus['{gpu}'].price_per_hour is the price."),
    tolerance=0.02,
)
