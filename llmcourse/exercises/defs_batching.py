"""Exercises for *Batching* (``book/08_batching.md``): throughput, cost and the limits of a batch."""

from __future__ import annotations

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import define, pick

EXERCISES: list = []

DEFAULT = dict(model="Llama-3.1-8B", gpu="H100 SXM", prompt=256, answer=64, batch=64, price=3.0)


def _vary(r):
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


_STORY = (
    "An interactive lab serves {model} (BF16) on one {gpu} at ${price} per GPU-hour. Requests have {prompt} "
    "prompt tokens and {answer} answer tokens; decode reads each KV cache at the average context "
    "(prompt + answer / 2), at 70% of peak bandwidth and 50% of peak FLOP/s. "
)
_STEP = (
    "Bytes per step = weights + batch x KV per token x (prompt + answer / 2).",
    "Step time = the slower of bytes / (0.7 x bandwidth) and batch x 2 x parameters / (0.5 x peak FLOP/s).",
)

define(
    EXERCISES,
    "batching_ex1",
    "Step time of a full batch",
    _STORY + "With {batch} requests decoding together, how long is one decode step?",
    "ms",
    DEFAULT,
    _vary,
    lambda v: _cycle(v).decode.step_time,
    _STEP,
)

define(
    EXERCISES,
    "batching_ex2",
    "Throughput of the batch",
    _STORY + "With {batch} requests decoding together, how many output tokens per second does the GPU produce "
    "while decoding?",
    "1/s",
    DEFAULT,
    _vary,
    lambda v: _cycle(v).throughput,
    (*_STEP, "Throughput = batch / step time."),
)

_COST = (
    "Time of a cycle = prefill of the batch + {answer} decode steps.",
    "Cost per million = price per hour / (batch x {answer} tokens per cycle x cycles per hour) x 10^6.",
)

define(
    EXERCISES,
    "batching_ex3",
    "Cost per million tokens, one user",
    _STORY + "Serving one request at a time (prefill, then {answer} decode steps), what does a million output "
    "tokens cost?",
    "USD",
    DEFAULT,
    _vary,
    lambda v: _cycle(v, 1).cost_per_million_output_tokens,
    _COST + _STEP,
    tolerance=0.02,
)

define(
    EXERCISES,
    "batching_ex4",
    "Cost per million tokens, batched",
    _STORY + "Serving {batch} requests together (prefill all, then {answer} decode steps), what does a million "
    "output tokens cost?",
    "USD",
    DEFAULT,
    _vary,
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


def _kv(v):
    return lc.decode_step(v["model"], v["gpu"], batch=v["batch"], context_tokens=v["context"]).kv_read


define(
    EXERCISES,
    "batching_ex5",
    "KV read per step with long prompts",
    "A document assistant on {model} (BF16, one {gpu}) decodes {batch} requests whose contexts average "
    "{context} tokens. How many bytes of KV cache does one decode step read?",
    "GB",
    dict(model="Llama-3.1-8B", gpu="H100 SXM", batch=64, context=2_048),
    lambda r: dict(
        model=pick(r, ("Llama-3.1-8B", "Qwen2.5-7B")),
        gpu="H100 SXM",
        batch=pick(r, (32, 64, 96, 144)),
        context=pick(r, (1_024, 2_048, 4_096)),
    ),
    _kv,
    ("KV read = batch x KV per token x context.",),
    kv=True,
)


def _crossover(v):
    """Smallest batch whose decode step is compute-bound (bisection on the planner's decode step)."""
    lo, hi = 1, 65_536
    if lc.decode_step(v["model"], v["gpu"], batch=hi, context_tokens=v["prompt"] + v["answer"] / 2).bound != "compute":
        raise ValueError("no crossover below a batch of 65,536")  # pragma: no cover - the variants avoid it
    while lo < hi:
        mid = (lo + hi) // 2
        s = lc.decode_step(v["model"], v["gpu"], batch=mid, context_tokens=v["prompt"] + v["answer"] / 2)
        lo, hi = (lo, mid) if s.bound == "compute" else (mid + 1, hi)
    return lo


define(
    EXERCISES,
    "batching_ex6",
    "Where compute overtakes memory",
    _STORY + "As the batch grows, at what batch size does the decode step stop being memory-bound and become "
    "compute-bound?",
    "",
    DEFAULT,
    lambda r: _vary(r) | dict(prompt=pick(r, (128, 256)), answer=pick(r, (32, 64))),
    _crossover,
    (
        "Memory time = (weights + B x KV per sequence) / (0.7 x bandwidth); compute time = B x 2 x parameters / "
        "(0.5 x peak).",
        "Set them equal and solve for B; round up to a whole batch.",
    ),
    bare_ok=True,
    tolerance=0.02,
)
