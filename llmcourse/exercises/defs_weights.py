"""Exercises for *Weights* (``book/02_weights.md``): bytes of weights and GPUs to hold them.

``weights_ex1`` .. ``weights_ex6`` follow the chapter's exercises of the same labels (the numeric part of each).
"""

from __future__ import annotations

import math

import llmcourse as lc
from llmcourse.exercises._common import COURSE, Story, define, fp8_ok, pct, pick, pool

EXERCISES: list = []

#: The share of memory a server may use, by the course's method (the default of these estimates).
_USABLE = pct(COURSE.memory_fraction)

_BYTES = (
    "Bytes of weights = parameters x bytes per parameter.",
    "lc.models['{model}'].params; {precision} stores lc.PRECISIONS['{precision}'] bytes per weight.",
)


def _not_bf16(v):
    b = lc.PRECISIONS[v["precision"]]
    return [(2 / b, "did you use 2 bytes per weight (BF16) instead of the precision given?")] if b != 2 else []


def _figures(v):
    """The catalog figures a story states beside its givens: the model's parameters and heads, the GPU's memory,
    the precision's name (see :class:`~llmcourse.exercises._common.Story`)."""
    out = {}
    if "model" in v:
        m = lc.models[v["model"]]
        out |= dict(params=f"{m.params / 1e9:.4g} billion", heads=f"{m.heads:,}", kv_heads=f"{m.kv_heads:,}")
    if "gpu" in v:
        out["memory"] = f"{lc.gpus[v['gpu']].memory.to('GB').m:.4g} GB"
    if "precision" in v:
        out["name"] = v["precision"].upper()
    return out


def _left(v):
    return lc.usable_memory(v["gpu"], v.get("n", 1)) - lc.weight_bytes(v["model"], v["precision"])


define(
    EXERCISES,
    "weights_ex1",
    "Weights of a small model",
    Story(
        "A note-taking app runs {model} ({params} parameters) in {name}. How many GB do its weights take?",
        _figures,
    ),
    "GB",
    dict(model="Qwen2.5-7B", precision="bf16"),
    lambda r: dict(
        model=pick(r, _SMALL),
        precision=pick(r, ("bf16", "int4", "fp8", "fp32")),
    ),
    lambda v: lc.weight_bytes(v["model"], v["precision"]),
    _BYTES,
    mistakes=_not_bf16,
    followup="And in INT4?",
)

#: Models a single GPU or a small server can hold, by total parameters.
_SMALL = ("Llama-3.1-8B", "Qwen2.5-7B", "Llama-2-7B", "Mistral-7B-v0.1", "Llama-2-13B", "gpt-oss-20b", "Qwen3-30B-A3B")
_MID = ("Llama-3.1-70B", "Qwen2.5-72B", "Llama-2-70B", "Mixtral-8x7B", "gpt-oss-120b", "Qwen3-30B-A3B", "Llama-2-13B")
_BIG_GPUS = ("H100 SXM", "H200 SXM", "B200", "MI300X", "MI325X", "A100 SXM 80GB", "H100 PCIe")


def _usable(gpu, n=1):
    return lc.usable_memory(gpu, n).to("B").m


def _weights(model, precision):
    return lc.weight_bytes(model, precision).to("B").m


@pool
def _FIT():
    """(model, precision, GPU): weights that fill between a quarter and 90% of one big GPU's usable memory."""
    for model in _MID:
        for precision in ("bf16", "fp8", "int4"):
            for gpu in _BIG_GPUS:
                if fp8_ok(precision, gpu) and 0.25 <= _weights(model, precision) / _usable(gpu) <= 0.9:
                    yield model, precision, gpu


define(
    EXERCISES,
    "weights_ex2",
    "Room left on one big GPU",
    Story(
        "An enterprise search product loads {model} ({params} parameters) in {name} on one {gpu} ({memory} of memory, "
        f"{_USABLE} of it usable). How much usable memory is left once the weights are in?",
        _figures,
    ),
    "GB",
    dict(model="Llama-3.1-70B", precision="fp8", gpu="H200 SXM"),
    lambda r: dict(zip(("model", "precision", "gpu"), pick(r, _FIT()), strict=True)),
    _left,
    (f"Left = {COURSE.memory_fraction:g} x lc.gpus['{{gpu}}'].memory - weights.", *_BYTES),
    mistakes=_not_bf16,
    followup="Would the weights fit in BF16?",
)

define(
    EXERCISES,
    "weights_ex3",
    "Usable memory of a server",
    Story(
        f"A server has {{n}} x {{gpu}} ({{memory}} each). The serving engine may use {pct(COURSE.memory_fraction)} of "
        "each GPU's memory, for the weights, its activations and the KV cache. How much memory may it use?",
        _figures,
    ),
    "GB",
    dict(n=4, gpu="L40S"),
    lambda r: dict(
        n=pick(r, (1, 2, 4, 8)),
        gpu=pick(r, ("H100 SXM", "H200 SXM", "B200", "L40S", "MI300X", "MI325X", "L4", "T4", "A100 SXM 40GB")),
    ),
    lambda v: lc.usable_memory(v["gpu"], v["n"]),
    (
        f"Usable memory = GPUs x memory per GPU x {COURSE.memory_fraction:g}.",
        "lc.gpus['{gpu}'].memory is one GPU's memory.",
    ),
)


@pool
def _GPUS_FOR():
    """(model, precision, GPU) whose weights need from 2 to 64 GPUs by the ceiling formula."""
    models = ("Llama-3.1-405B", "DeepSeek-V3", "Qwen3-235B-A22B", "Llama-3.1-70B", "Qwen2.5-72B", "Mixtral-8x7B")
    gpus = ("H100 SXM", "H200 SXM", "B200", "MI300X", "MI325X", "A100 SXM 40GB", "L40S", "L4", "A10G", "T4")
    for model in (*models, "gpt-oss-120b", "Llama-2-70B", "Llama-2-13B"):
        for precision in ("fp32", "bf16", "fp8", "int4"):
            for gpu in gpus:
                if fp8_ok(precision, gpu) and 2 <= math.ceil(_weights(model, precision) / _usable(gpu)) <= 64:
                    yield model, precision, gpu


@pool
def _BY_COUNT():
    """The set-ups of :func:`_GPUS_FOR` grouped by their answer, so that every GPU count is as likely as another."""
    groups = {}
    for model, precision, gpu in _GPUS_FOR():
        n = math.ceil(_weights(model, precision) / _usable(gpu))
        groups.setdefault(n, []).append((model, precision, gpu))
    return [tuple(g) for _, g in sorted(groups.items())]


define(
    EXERCISES,
    "weights_ex4",
    "GPUs just to hold the weights",
    Story(
        "A research lab wants to serve {model} ({params} parameters, {heads} query heads, {kv_heads} KV heads) in "
        f"{{name}} on {{gpu}}s ({{memory}} each, {_USABLE} of it usable). What does the ceiling formula give: the "
        "fewest GPUs whose usable memory holds the weights?",
        _figures,
    ),
    "",
    dict(model="Llama-3.1-405B", precision="bf16", gpu="H100 SXM"),
    lambda r: dict(zip(("model", "precision", "gpu"), pick(r, pick(r, _BY_COUNT())), strict=True)),
    lambda v: lc.FORMULAS["gpus_for_weights"](
        weights=lc.weight_bytes(v["model"], v["precision"]),
        gpu_memory=lc.gpus[v["gpu"]].memory,
        usable_fraction=COURSE.memory_fraction,
    ),
    (
        f"Divide the weight bytes by the usable memory of one GPU ({_USABLE} of it).",
        "Round up: a part of a GPU is a GPU. (Serving engines then round tensor parallelism up to a power of two "
        "within one server, 8 at most, and split the rest as pipeline stages: 16 H100s run as 8 x 2.)",
    ),
    integer=True,
    bare_ok=True,
    followup="How many GPUs will the model actually run on, and how are they split?",
)


@pool
def _SMALL_GPU():
    """(model, precision, GPU): weights that leave at least 1 GB of a small GPU's usable memory free."""
    for model in ("Llama-3.1-8B", "Qwen2.5-7B", "Llama-2-7B", "Mistral-7B-v0.1", "Llama-2-13B", "gpt-oss-20b"):
        for precision in ("bf16", "fp8", "int8", "int4"):
            for gpu in ("L4", "T4", "A10G", "RTX 4090", "A100 SXM 40GB", "L40S"):
                if fp8_ok(precision, gpu) and _usable(gpu) - _weights(model, precision) >= 1e9:
                    yield model, precision, gpu


define(
    EXERCISES,
    "weights_ex5",
    "A model on a small GPU",
    Story(
        "An on-premises assistant runs {model} ({params} parameters) in {name} on one {gpu} ({memory}, "
        f"{_USABLE} usable). Do the weights fit, and how much usable memory is left after them?",
        _figures,
    ),
    "GB",
    dict(model="Llama-2-13B", precision="int8", gpu="L4"),
    lambda r: dict(zip(("model", "precision", "gpu"), pick(r, _SMALL_GPU()), strict=True)),
    _left,
    (f"Left = {COURSE.memory_fraction:g} x lc.gpus['{{gpu}}'].memory - weights.", *_BYTES),
    mistakes=_not_bf16,
)


@pool
def _PER_WEIGHT():
    """(billions of parameters, GPU) for which the answer lies between half a byte and 8 bytes per weight."""
    for gpu in ("T4", "L4", "A10G", "L40S", "A100 SXM 40GB", "RTX 4090", "H100 SXM"):
        for billions in range(1, 81):
            if 0.5 <= _usable(gpu) / (billions * 1e9) <= 8:
                yield billions, gpu


define(
    EXERCISES,
    "weights_ex6",
    "The most bytes per weight that fit",
    Story(
        f"A {{billions}}-billion-parameter model is to run on one {{gpu}} ({{memory}}, {_USABLE} usable). Ignoring "
        "everything but the weights, what is the largest number of bytes per weight that still fits?",
        _figures,
    ),
    "B",
    dict(billions=7, gpu="T4"),
    lambda r: dict(zip(("billions", "gpu"), pick(r, _PER_WEIGHT()), strict=True)),
    lambda v: lc.usable_memory(v["gpu"]) / (v["billions"] * 1e9),
    (
        "Bytes per weight = usable memory / parameters.",
        "Then compare with 4 (FP32), 2 (a 16-bit format: BF16, or FP16 on GPUs such as the T4 that have no BF16), "
        "1 (FP8 or INT8) bytes.",
    ),
    bare_ok=True,
    followup="Which of FP32, FP16 and INT8 fit? (A T4 has no BF16: its 16-bit format is FP16.)",
)
