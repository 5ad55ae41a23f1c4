"""Exercises for *Batching* (``book/08_batching.md``): throughput, cost and the limits of a batch.

``batching_ex2``, ``batching_ex4`` and ``batching_ex6`` follow the chapter's exercises of the same labels (their
numeric part); the chapter's ``batching_ex1``, ``_ex3`` and ``_ex5`` are a derivation and open questions.
``batching_ex7`` .. ``batching_ex10`` are extra, on the interactive lab's set-up.
"""

from __future__ import annotations

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import define, pick

EXERCISES: list = []

LAB = dict(model="Llama-3.1-8B", gpu="H100 SXM", prompt=256, answer=64, batch=64, price=3.0)


def _vary_lab(r):
    return dict(
        model=pick(r, ("Llama-3.1-8B", "Qwen2.5-7B")),
        gpu=pick(r, ("H100 SXM", "H200 SXM", "A100 SXM 80GB")),
        prompt=pick(r, (128, 256, 512)),
        answer=pick(r, (32, 64, 128)),
        batch=pick(r, (16, 32, 64)),
        price=pick(r, (2.0, 2.5, 3.0, 4.0)),
    )


def _cycle(v, batch=None):
    return lc.request_cycle(
        v["model"],
        v["gpu"],
        batch=batch or v["batch"],
        prompt_tokens=v["prompt"],
        answer_tokens=v["answer"],
        price_per_hour=Q_(v["price"], "USD/hour"),
    )


_LAB = (
    "An interactive lab serves {model} (BF16) on one {gpu} at ${price} per GPU-hour. Requests have {prompt} "
    "prompt tokens and {answer} answer tokens; decode reads each KV cache at the average context (prompt + "
    "answer / 2), at 70% of peak bandwidth and 50% of peak FLOP/s; prefill runs at 50% of peak FLOP/s. "
)
_STEP = (
    "Bytes per step = weights + batch x KV per token x (prompt + answer / 2).",
    "Step time = the slower of bytes / (0.7 x bandwidth) and batch x 2 x parameters / (0.5 x peak FLOP/s).",
)
_COST = (
    "Time of a cycle = prefill of the batch + {answer} decode steps.",
    "Cost per million = price per hour x cycle time / (batch x {answer} tokens) x 10^6.",
)


def _no_crossover(v):
    m, g = lc.models[v["model"]], lc.gpus[v["gpu"]]
    per_seq_compute = lc.FORMULAS["decode_compute_time"](
        batch=1,
        n_gpus=1,
        flops_per_token=lc.FORMULAS["decode_flops_per_token"](
            flops_per_param=Q_(2, "FLOP"), active_params=m.active_params
        ),
        peak_flops=g.peak_flops("bf16"),
        compute_efficiency=0.5,
    )
    per_token_read = lc.FORMULAS["weight_read_time"](
        weights=lc.kv_bytes_per_token(m), n_gpus=1, bandwidth=g.bandwidth, bandwidth_efficiency=0.7
    )
    return (per_seq_compute / per_token_read).to("")


define(
    EXERCISES,
    "batching_ex2",
    "The context where the crossover disappears",
    "{model} (BF16) decodes on one {gpu} at 70% of peak bandwidth and 50% of peak FLOP/s, 2 FLOPs per parameter "
    "only. Beyond what average context does one sequence's KV read take longer than its FLOPs, so that decode "
    "never becomes compute-bound however large the batch?",
    "",
    dict(model="Llama-3.1-8B", gpu="H100 SXM"),
    lambda r: dict(
        model=pick(r, ("Llama-3.1-8B", "Qwen2.5-7B", "Llama-3.1-70B")),
        gpu=pick(r, ("H100 SXM", "H200 SXM", "A100 SXM 80GB", "B200")),
    ),
    _no_crossover,
    (
        "One sequence's compute time: 2 x parameters / (0.5 x peak FLOP/s).",
        "Its KV read: context x KV per token / (0.7 x bandwidth). Set them equal and solve for the context.",
    ),
    bare_ok=True,
    kv=True,
)


def _prefill_share(v):
    c = _cycle(v)
    return (1 - c.decode_only_cost_per_million / c.cost_per_million_output_tokens).to("")


define(
    EXERCISES,
    "batching_ex4",
    "How much of the cost is prefill",
    _LAB + "With {batch} requests served together (prefill all, then {answer} decode steps), what fraction of the "
    "cost per million output tokens is the prefill time?",
    "",
    LAB,
    _vary_lab,
    _prefill_share,
    (*_COST, "Fraction = prefill time / (prefill time + {answer} x step time)."),
    bare_ok=True,
    tolerance=0.02,
)


def _largest_batch(v):
    def fast(b):
        s = lc.decode_step(v["model"], v["gpu"], batch=b, context_tokens=v["context"])
        return s.tokens_per_s_per_user >= Q_(v["speed"], "1/s")

    lo, hi = 0, 4_096
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fast(mid) else (lo, mid - 1)
    return lo


define(
    EXERCISES,
    "batching_ex6",
    "The largest batch at a speed target",
    "{model} (BF16) runs on one {gpu} at a {context}-token context (70% of peak bandwidth, 50% of peak FLOP/s). "
    "What is the largest batch that keeps each user at {speed} tokens per second or more?",
    "",
    dict(model="Qwen3-30B-A3B", gpu="H100 SXM", context=2_304, speed=50),
    lambda r: dict(
        model=pick(r, ("Qwen3-30B-A3B", "Llama-3.1-8B", "Qwen2.5-7B")),
        gpu=pick(r, ("H100 SXM", "H200 SXM")),
        context=pick(r, (1_024, 2_304)),
        speed=pick(r, (30, 50, 80)),
    ),
    _largest_batch,
    (
        "The step time must stay at or below 1 / {speed} s.",
        "lc.decode_step(...) for growing batches: the largest whose tokens_per_s_per_user is still {speed} or more.",
    ),
    integer=True,
    bare_ok=True,
)

define(
    EXERCISES,
    "batching_ex7",
    "Step time of a full batch",
    _LAB + "With {batch} requests decoding together, how long is one decode step?",
    "ms",
    LAB,
    _vary_lab,
    lambda v: _cycle(v).decode.step_time,
    _STEP,
)

define(
    EXERCISES,
    "batching_ex8",
    "Throughput of the batch",
    _LAB + "With {batch} requests decoding together, how many output tokens per second does the GPU produce while "
    "decoding?",
    "1/s",
    LAB,
    _vary_lab,
    lambda v: _cycle(v).throughput,
    (*_STEP, "Throughput = batch / step time."),
)

define(
    EXERCISES,
    "batching_ex9",
    "Cost per million tokens, one user",
    _LAB + "Serving one request at a time (prefill, then {answer} decode steps), what does a million output tokens "
    "cost?",
    "USD",
    LAB,
    _vary_lab,
    lambda v: _cycle(v, 1).cost_per_million_output_tokens,
    _COST + _STEP,
    tolerance=0.02,
)

define(
    EXERCISES,
    "batching_ex10",
    "Cost per million tokens, batched",
    _LAB + "Serving {batch} requests together (prefill all, then {answer} decode steps), what does a million output "
    "tokens cost?",
    "USD",
    LAB,
    _vary_lab,
    lambda v: _cycle(v).cost_per_million_output_tokens,
    _COST + _STEP,
    tolerance=0.02,
    mistakes=lambda v: [
        (
            (_cycle(v).decode_only_cost_per_million / _cycle(v).cost_per_million_output_tokens).m,
            "that counts decode time only: the prefill time is paid for too",
        )
    ],
)
