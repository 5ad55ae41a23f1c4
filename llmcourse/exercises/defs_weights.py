"""Exercises for *Weights* (``book/02_weights.md``): bytes of weights and GPUs to hold them."""

from __future__ import annotations

import llmcourse as lc
from llmcourse.exercises._common import define, pick

EXERCISES: list = []

_PREC = ("bf16", "fp8", "int8", "int4")
_MODELS = ("Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-7B", "Qwen2.5-72B", "Mixtral-8x7B", "Llama-3.1-405B")
_BYTES = (
    "Bytes of weights = parameters x bytes per parameter.",
    "lc.models['{model}'].params; {precision} stores lc.PRECISIONS['{precision}'] bytes per weight.",
)


def _mistakes(v):
    b = lc.PRECISIONS[v["precision"]]
    return [(2 / b, "did you use 2 bytes per weight (BF16) instead of the precision given?")] if b != 2 else []


def _vm(r):
    return dict(model=pick(r, _MODELS), precision=pick(r, _PREC))


define(
    EXERCISES,
    "weights_ex1",
    "A small model in BF16",
    "A note-taking app runs {model} in {precision} on its own GPU. How many bytes are the weights?",
    "GB",
    dict(model="Llama-3.1-8B", precision="bf16"),
    lambda r: dict(model=pick(r, ("Llama-3.1-8B", "Qwen2.5-7B", "Llama-2-7B", "Mistral-7B-v0.1")), precision="bf16"),
    lambda v: lc.weight_bytes(v["model"], v["precision"]),
    _BYTES,
)

define(
    EXERCISES,
    "weights_ex2",
    "A large model",
    "An enterprise search product evaluates {model} in {precision}. How many bytes are its weights?",
    "GB",
    dict(model="Llama-3.1-70B", precision="bf16"),
    _vm,
    lambda v: lc.weight_bytes(v["model"], v["precision"]),
    _BYTES,
    mistakes=_mistakes,
)

define(
    EXERCISES,
    "weights_ex3",
    "Quantized weights, in GiB",
    "To fit a smaller GPU, a team quantizes {model} to {precision}. How big are the weights in binary units (GiB)?",
    "GiB",
    dict(model="Qwen2.5-72B", precision="int4"),
    _vm,
    lambda v: lc.weight_bytes(v["model"], v["precision"]),
    (*_BYTES, "1 GiB = 1,024^3 bytes; 1 GB = 10^9 bytes."),
    mistakes=_mistakes,
)

define(
    EXERCISES,
    "weights_ex4",
    "Usable memory of a server",
    "A server has {n} x {gpu}. The serving engine keeps 10% back for activations and fragmentation. How much "
    "memory may it use?",
    "GB",
    dict(n=2, gpu="H100 SXM"),
    lambda r: dict(n=pick(r, (1, 2, 4, 8)), gpu=pick(r, ("H100 SXM", "H200 SXM", "B200", "L40S", "MI300X", "L4"))),
    lambda v: lc.usable_memory(v["gpu"], v["n"]),
    ("Usable memory = GPUs x memory per GPU x 0.9.", "lc.gpus['{gpu}'].memory is one GPU's memory."),
)

_GPUS_FOR = (
    ("Llama-3.1-405B", "bf16", "H100 SXM"),
    ("Llama-3.1-405B", "fp8", "H100 SXM"),
    ("Llama-3.1-70B", "bf16", "L40S"),
    ("Qwen2.5-72B", "bf16", "A100 SXM 40GB"),
    ("DeepSeek-V3", "fp8", "H200 SXM"),
    ("Llama-3.1-70B", "int4", "L4"),
    ("Mixtral-8x7B", "bf16", "H100 SXM"),
    ("Qwen3-235B-A22B", "bf16", "MI300X"),
)

define(
    EXERCISES,
    "weights_ex5",
    "GPUs just to hold the weights",
    "A research lab wants to serve {model} in {precision} on {gpu}s, using 90% of each GPU's memory. What is the "
    "fewest GPUs whose usable memory holds the weights?",
    "",
    dict(model="Llama-3.1-405B", precision="bf16", gpu="H100 SXM"),
    lambda r: dict(zip(("model", "precision", "gpu"), pick(r, _GPUS_FOR), strict=True)),
    lambda v: lc.FORMULAS["gpus_for_weights"](
        weights=lc.weight_bytes(v["model"], v["precision"]), gpu_memory=lc.gpus[v["gpu"]].memory, usable_fraction=0.9
    ),
    ("Divide the weight bytes by the usable memory of one GPU (90% of it).", "Round up: a part of a GPU is a GPU."),
    integer=True,
    bare_ok=True,
)

_FREE = (
    ("Qwen2.5-72B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-70B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-8B", "bf16", "H100 SXM", 1),
    ("Llama-3.1-70B", "bf16", "H200 SXM", 2),
    ("Qwen2.5-7B", "bf16", "L40S", 1),
    ("Llama-3.1-70B", "int4", "L40S", 1),
)

define(
    EXERCISES,
    "weights_ex6",
    "Room left for the KV cache",
    "A chatbot runs {model} in {precision} on {n} x {gpu} (90% of memory usable). How much memory is left for "
    "the KV cache once the weights are loaded?",
    "GB",
    dict(model="Qwen2.5-72B", precision="fp8", gpu="H100 SXM", n=2),
    lambda r: dict(zip(("model", "precision", "gpu", "n"), pick(r, _FREE), strict=True)),
    lambda v: lc.usable_memory(v["gpu"], v["n"]) - lc.weight_bytes(v["model"], v["precision"]),
    ("Left = usable memory - weights.", "Usable memory = {n} x lc.gpus['{gpu}'].memory x 0.9."),
)
