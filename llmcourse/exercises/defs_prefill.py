"""Exercises for *Prefill is compute-bound* (``book/06_prefill.md``): FLOPs, TTFT, prefill pools.

``prefill_ex1`` .. ``prefill_ex6`` follow the chapter's exercises of the same labels (the numeric part of each).
"""

from __future__ import annotations

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import define, pick

EXERCISES: list = []

_TWO = [(0.5, "did you count 2 FLOPs (a multiply and an add) per parameter per token?")]
_DENSE = ("Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-7B", "Qwen2.5-72B", "Llama-3.1-405B")


def _crossover_prompt(v):
    m = lc.models[v["model"]]
    linear = lc.FORMULAS["prefill_flops_linear"](flops_per_param=Q_(2, "FLOP"), params=m.params, prompt_tokens=1)
    per_token_sq = (
        lc.FORMULAS["prefill_flops"](
            flops_per_param=Q_(2, "FLOP"),
            params=m.params,
            prompt_tokens=1,
            layers=m.layers,
            heads=m.heads,
            head_dim=m.head_dim,
        )
        - linear
    )  # the attention term at T = 1; it grows as T^2
    return (linear / per_token_sq).to("")


define(
    EXERCISES,
    "prefill_ex1",
    "When attention catches up",
    "The causal attention term of prefill grows with the square of the prompt. For {model}, at what prompt length "
    "does it equal the 2 x parameters x tokens term?",
    "",
    dict(model="Llama-3.1-8B"),
    lambda r: dict(model=pick(r, _DENSE)),
    _crossover_prompt,
    (
        "Attention FLOPs = 2 x layers x heads x head dim x T^2; linear FLOPs = 2 x parameters x T.",
        "Set them equal: T = parameters / (layers x heads x head dim).",
    ),
    bare_ok=True,
)

_TTFT = (
    ("Qwen2.5-72B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-70B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-70B", "fp8", "H200 SXM", 1),
    ("Qwen2.5-72B", "fp8", "B200", 1),
)

define(
    EXERCISES,
    "prefill_ex2",
    "Prefill with FP8 compute",
    "A RAG assistant runs {model} with FP8 weights on {n} x {gpu} and now also computes in FP8 (twice the BF16 "
    "peak), at 50% of that peak. Prompts are {prompt} tokens. With 2 FLOPs per parameter per token (no attention "
    "term), or one read of the weights at peak bandwidth if that is slower, what is the time to first token?",
    "s",
    dict(model="Qwen2.5-72B", precision="fp8", gpu="H100 SXM", n=2, prompt=2_000),
    lambda r: (
        dict(zip(("model", "precision", "gpu", "n"), pick(r, _TTFT), strict=True))
        | dict(prompt=pick(r, (1_000, 2_000, 4_000, 8_000)))
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
            compute_precision="fp8",
        ).time
    ),
    (
        "FLOPs = 2 x parameters x {prompt}.",
        "Time = FLOPs / ({n} x 0.5 x lc.gpus['{gpu}'].peak_flops('fp8')).",
    ),
    mistakes=lambda v: [
        *_TWO,
        (2.0, "did you use the BF16 peak? FP8 compute doubles it"),
        *([(v["n"], "did you use one GPU's FLOP/s only?")] if v["n"] > 1 else []),
    ],
)


def _memory_bound_below(v):
    p = lc.prefill(v["model"], v["gpu"], 1, attention=False)
    return (p.memory_time / p.compute_time).to("")  # compute time grows linearly from 1 token


define(
    EXERCISES,
    "prefill_ex3",
    "Short prompts are memory-bound",
    "{model} (BF16) prefills on one {gpu} at 50% of peak FLOP/s and 70% of peak bandwidth. Ignoring the "
    "attention term, below what prompt length does the prefill take less compute time than one read of the "
    "weights?",
    "",
    dict(model="Llama-3.1-8B", gpu="H100 SXM"),
    lambda r: dict(model=pick(r, _DENSE[:4]), gpu=pick(r, ("H100 SXM", "L4", "A100 SXM 80GB", "B200", "L40S"))),
    _memory_bound_below,
    (
        "Compute time = 2 x P x T / (0.5 x F); memory time = 2 bytes x P / (0.7 x bandwidth).",
        "Set them equal and solve for T: the parameter count cancels.",
    ),
    bare_ok=True,
    tolerance=0.02,
)


def _pool(v):
    tokens = Q_(v["rate"] * (1 - v["hit"]), "1/s")
    return lc.prefill_pool(tokens, v["model"], v["gpu"]).gpus


define(
    EXERCISES,
    "prefill_ex4",
    "A prefill pool with prefix caching",
    "A platform prefills {rate} prompt tokens per second of {model} on a pool of {gpu}s at 50% of their BF16 "
    "peak, 2 FLOPs per parameter per token. Prefix caching serves {hit_pct}% of the prompt tokens from cache. "
    "How many GPUs does the pool need?",
    "",
    dict(model="Llama-3.1-70B", rate=700_000, gpu="H100 SXM", hit=0.6, hit_pct=60),
    lambda r: (
        lambda h: dict(
            model=pick(r, ("Llama-3.1-70B", "Llama-3.1-8B", "Qwen2.5-72B")),
            rate=pick(r, (100_000, 350_000, 700_000, 1_500_000)),
            gpu=pick(r, ("H100 SXM", "B200", "MI300X")),
            hit=h / 100,
            hit_pct=h,
        )
    )(pick(r, (0, 30, 50, 60, 80))),
    _pool,
    (
        "Only the tokens that miss the cache are prefilled: {rate} x (1 - {hit}).",
        "GPUs = tokens/s x 2 x parameters / (0.5 x peak FLOP/s), rounded up.",
    ),
    integer=True,
    bare_ok=True,
)


def _mean_fcfs(v):
    one = lc.prefill(v["model"], v["gpu"], v["prompt"]).time
    n = v["users"]
    return one * sum(range(1, n + 1)) / n  # the i-th prompt waits for i prefills


define(
    EXERCISES,
    "prefill_ex5",
    "A burst, one prompt at a time",
    "{users} users send {prompt}-token prompts to {model} (BF16, one {gpu}, 50% of peak FLOP/s, attention term "
    "included) at the same instant. Prefill runs one prompt at a time, first come first served. What is the mean "
    "time to first token over the {users} users?",
    "s",
    dict(model="Llama-3.1-8B", gpu="H100 SXM", prompt=2_048, users=64),
    lambda r: dict(
        model=pick(r, ("Llama-3.1-8B", "Qwen2.5-7B")),
        gpu=pick(r, ("H100 SXM", "H200 SXM", "A100 SXM 80GB")),
        prompt=pick(r, (1_024, 2_048, 4_096)),
        users=pick(r, (16, 32, 64)),
    ),
    _mean_fcfs,
    (
        "The i-th user waits for i prefills of one prompt each.",
        "Mean = one prefill x (1 + 2 + ... + {users}) / {users} = one prefill x ({users} + 1) / 2.",
    ),
    mistakes=lambda v: [(2 * v["users"] / (v["users"] + 1), "that is the longest wait, not the mean")],
    tolerance=0.02,
)

define(
    EXERCISES,
    "prefill_ex6",
    "Prefill of a mixture of experts",
    "A search product prefills {prompt}-token prompts on {model} (BF16) on one {gpu}, at 50% of peak FLOP/s and 70% "
    "of peak bandwidth, attention term included. How long does one prefill take?",
    "ms",
    dict(model="Qwen3-30B-A3B", gpu="H100 SXM", prompt=2_048),
    lambda r: dict(
        model=pick(r, ("Qwen3-30B-A3B", "Mixtral-8x7B")),
        gpu=pick(r, ("H100 SXM", "H200 SXM", "B200")),
        prompt=pick(r, (1_024, 2_048, 4_096, 8_192)),
    ),
    lambda v: lc.prefill(v["model"], v["gpu"], v["prompt"]).time,
    (
        "Use the active parameters in 2 x P x T: each token passes through k experts only.",
        "Compare with one read of all the weights (total parameters x 2 bytes / (0.7 x bandwidth)); the slower wins.",
    ),
    tolerance=0.02,
)

define(
    EXERCISES,
    "prefill_ex7",
    "GPUs for a prefill stream",
    "A platform serving {model} would run prefill alone on {gpu}s at 50% of their BF16 peak, for {rate} prompt "
    "tokens per second (2 FLOPs per active parameter per token). How many GPUs does that take?",
    "",
    dict(model="Llama-3.1-70B", rate=700_000, gpu="H100 SXM"),
    lambda r: dict(
        model=pick(r, ("Llama-3.1-70B", "Llama-3.1-8B", "Qwen2.5-72B")),
        rate=pick(r, (100_000, 350_000, 700_000, 1_500_000)),
        gpu=pick(r, ("H100 SXM", "B200", "MI300X")),
    ),
    lambda v: lc.prefill_pool(Q_(v["rate"], "1/s"), v["model"], v["gpu"]).gpus,
    ("GPUs = tokens/s x 2 x active parameters / (0.5 x lc.gpus['{gpu}'].peak_flops('bf16')).", "Round up."),
    integer=True,
    bare_ok=True,
)
