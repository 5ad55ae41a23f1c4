"""Exercises for *Prefill is compute-bound* (``book/06_prefill.md``): FLOPs, TTFT, prefill pools."""

from __future__ import annotations

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import define, pick

EXERCISES: list = []

_SMALL = ("Llama-3.1-8B", "Qwen2.5-7B", "Llama-2-7B")
_GPUS = ("H100 SXM", "H200 SXM", "A100 SXM 80GB", "L40S", "B200")
DEFAULT = dict(model="Llama-3.1-8B", gpu="H100 SXM", prompt=2_048)


def _vary(r):
    return dict(model=pick(r, _SMALL), gpu=pick(r, _GPUS), prompt=pick(r, (512, 1_024, 2_048, 4_096, 8_192)))


_TWO = [(2.0, "did you count 2 FLOPs (a multiply and an add) per parameter per token?")]
_STORY = "A search product summarises pages with {model} (BF16) on one {gpu}. Each prompt is {prompt} tokens. "

define(
    EXERCISES,
    "prefill_ex1",
    "FLOPs of one prompt",
    _STORY + "Ignoring attention, how many FLOPs does prefilling one prompt take?",
    "TFLOP",
    DEFAULT,
    _vary,
    lambda v: lc.FORMULAS["prefill_flops_linear"](
        flops_per_param=Q_(2, "FLOP"), params=lc.models[v["model"]].params, prompt_tokens=v["prompt"]
    ),
    ("FLOPs = 2 x parameters x prompt tokens.",),
    mistakes=lambda v: _TWO,
)

define(
    EXERCISES,
    "prefill_ex2",
    "Prefill compute time with attention",
    _STORY + "The GPU reaches 50% of its BF16 peak. Counting the causal attention term too, how long does the "
    "compute of one prefill take?",
    "ms",
    DEFAULT,
    _vary,
    lambda v: lc.prefill(v["model"], v["gpu"], v["prompt"]).compute_time,
    (
        "FLOPs = 2 x parameters x T + 2 x layers x heads x head dim x T^2 (the causal attention term).",
        "Time = FLOPs / (0.5 x lc.gpus['{gpu}'].peak_flops('bf16')).",
    ),
    mistakes=lambda v: [*_TWO, (2.0, "did you forget the 50% compute efficiency?")],
    tolerance=0.02,
)

define(
    EXERCISES,
    "prefill_ex3",
    "The memory side of prefill",
    _STORY + "Prefill also reads every weight once. At 70% of peak bandwidth, how long does that read take?",
    "ms",
    DEFAULT,
    _vary,
    lambda v: lc.prefill(v["model"], v["gpu"], v["prompt"]).memory_time,
    ("Time = weight bytes / (0.7 x bandwidth).", "Compare it with the compute time: which one sets the TTFT?"),
    mistakes=lambda v: [(0.7, "did you forget the 70% bandwidth efficiency?")],
)

_TTFT = (
    ("Qwen2.5-72B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-70B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-70B", "bf16", "H200 SXM", 2),
    ("Qwen2.5-72B", "bf16", "H100 SXM", 4),
    ("Llama-3.1-8B", "bf16", "L40S", 1),
)

define(
    EXERCISES,
    "prefill_ex4",
    "Time to first token",
    "A RAG assistant runs {model} ({precision} weights) on {n} x {gpu}, at 50% of the BF16 peak FLOP/s. "
    "Prompts are {prompt} tokens. Using 2 FLOPs per parameter per token (no attention term), what is the time "
    "to first token?",
    "s",
    dict(model="Qwen2.5-72B", precision="fp8", gpu="H100 SXM", n=2, prompt=2_000),
    lambda r: dict(
        zip(("model", "precision", "gpu", "n"), pick(r, _TTFT), strict=True),
        prompt=pick(r, (1_000, 2_000, 4_000, 8_000)),
    ),
    lambda v: (
        lc.prefill(
            v["model"],
            v["gpu"],
            v["prompt"],
            n_gpus=v["n"],
            weight_bytes=v["precision"],
            bandwidth_efficiency=1.0,
            attention=False,
        ).time
    ),
    ("FLOPs = 2 x parameters x {prompt}.", "The {n} GPUs share the work: time = FLOPs / ({n} x 0.5 x peak)."),
    mistakes=lambda v: _TWO + ([(v["n"], "did you use one GPU's FLOP/s only?")] if v["n"] > 1 else []),
)

define(
    EXERCISES,
    "prefill_ex5",
    "A burst of prompts",
    _STORY + "A burst of {prompts} prompts arrives at once and is prefilled together at 50% of peak, attention "
    "included. How long until the last of them has its first token?",
    "s",
    dict(DEFAULT, prompts=64),
    lambda r: _vary(r) | {"prompts": pick(r, (8, 16, 32, 64))},
    lambda v: lc.prefill(v["model"], v["gpu"], v["prompt"], prompts=v["prompts"]).time,
    ("The prompts' FLOPs add up: {prompts} x one prompt's FLOPs.", "Time = total FLOPs / (0.5 x peak)."),
    mistakes=lambda v: [*_TWO, (1 / v["prompts"], "that is one prompt: multiply by the {prompts} prompts")],
    tolerance=0.02,
)

define(
    EXERCISES,
    "prefill_ex6",
    "A prefill stream",
    "A platform serving {model} receives {rate} prompt tokens per second in all. At 2 FLOPs per active "
    "parameter per token, what compute rate does prefill need?",
    "PFLOP/s",
    dict(model="Llama-3.1-70B", rate=700_000),
    lambda r: dict(
        model=pick(r, ("Llama-3.1-70B", "Llama-3.1-8B", "Qwen2.5-72B", "Llama-3.1-405B")),
        rate=pick(r, (100_000, 350_000, 700_000, 1_500_000)),
    ),
    lambda v: lc.prefill_pool(Q_(v["rate"], "1/s"), v["model"], "H100 SXM").compute_rate,
    ("FLOP/s = prompt tokens per second x 2 x active parameters.",),
    mistakes=lambda v: _TWO,
)

define(
    EXERCISES,
    "prefill_ex7",
    "GPUs for the prefill stream",
    "The same platform ({model}, {rate} prompt tokens per second) would run prefill alone on {gpu}s at 50% of "
    "their BF16 peak. How many GPUs does that take?",
    "",
    dict(model="Llama-3.1-70B", rate=700_000, gpu="H100 SXM"),
    lambda r: dict(
        model=pick(r, ("Llama-3.1-70B", "Llama-3.1-8B", "Qwen2.5-72B")),
        rate=pick(r, (100_000, 350_000, 700_000, 1_500_000)),
        gpu=pick(r, ("H100 SXM", "B200", "MI300X")),
    ),
    lambda v: lc.prefill_pool(Q_(v["rate"], "1/s"), v["model"], v["gpu"]).gpus,
    ("GPUs = FLOP/s needed / (0.5 x lc.gpus['{gpu}'].peak_flops('bf16')).", "Round up."),
    integer=True,
    bare_ok=True,
)
