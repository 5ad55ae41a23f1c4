"""Exercises for *Sizing the fleet* (``book/09_fleet.md``): replicas, GPUs, monthly cost, Little's law."""

from __future__ import annotations

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import define, pick

EXERCISES: list = []

DEFAULT = dict(model="Llama-3.1-70B", gpu="H100 SXM", tp=2, batch=64, context=2_400, demand=140_000)
_SETUPS = (
    ("Llama-3.1-70B", "H100 SXM", 2),
    ("Llama-3.1-70B", "H200 SXM", 1),
    ("Qwen2.5-72B", "H100 SXM", 2),
    ("Llama-3.1-70B", "B200", 1),
    ("Qwen2.5-72B", "H200 SXM", 2),
)


def _vary(r):
    model, gpu, tp = pick(r, _SETUPS)
    return dict(
        model=model,
        gpu=gpu,
        tp=tp,
        batch=pick(r, (32, 48, 64)),
        context=pick(r, (1_600, 2_400, 3_200)),
        demand=pick(r, (40_000, 90_000, 140_000, 300_000)),
    )


def _replica(v):
    return lc.replica(v["model"], v["gpu"], tensor_parallel=v["tp"], batch=v["batch"], context_tokens=v["context"])


_STORY = (
    "A public chat product serves {model} with FP8 weights and a BF16 KV cache. One replica is {tp} x {gpu} "
    "(tensor parallel), running a batch of {batch} sequences at an average context of {context} tokens, at "
    "70% of peak bandwidth. "
)
_HINTS = (
    "Bytes per step = weights (1 byte per parameter) + {batch} x KV per sequence.",
    "Step time = bytes per step / ({tp} x 0.7 x lc.gpus['{gpu}'].bandwidth).",
)

define(
    EXERCISES,
    "fleet_ex1",
    "KV cache per sequence",
    _STORY + "How much KV cache does one sequence hold?",
    "GB",
    DEFAULT,
    _vary,
    lambda v: lc.kv_bytes_per_sequence(v["model"], v["context"]),
    ("KV per token x {context} tokens.",),
    kv=True,
)

define(
    EXERCISES,
    "fleet_ex2",
    "Bytes one step reads",
    _STORY + "How many bytes does one decode step read, across the replica?",
    "GB",
    DEFAULT,
    _vary,
    lambda v: _replica(v).step.weights_read + _replica(v).step.kv_read,
    _HINTS[:1],
    kv=True,
)

define(
    EXERCISES,
    "fleet_ex3",
    "Step time of a replica",
    _STORY + "How long is one decode step?",
    "ms",
    DEFAULT,
    _vary,
    lambda v: _replica(v).step.step_time,
    _HINTS,
    mistakes=lambda v: [(v["tp"], "did you use one GPU's bandwidth only?")] if v["tp"] > 1 else [],
)

define(
    EXERCISES,
    "fleet_ex4",
    "Throughput of a replica",
    _STORY + "How many output tokens per second does one replica produce?",
    "1/s",
    DEFAULT,
    _vary,
    lambda v: _replica(v).throughput,
    (*_HINTS, "Throughput = batch / step time."),
)

define(
    EXERCISES,
    "fleet_ex5",
    "Replicas for the demand",
    _STORY + "At peak the product needs {demand} output tokens per second. Each replica keeps 30% of its "
    "throughput back for prefill and bursts. How many replicas are needed?",
    "",
    DEFAULT,
    _vary,
    lambda v: lc.fleet(Q_(v["demand"], "1/s"), _replica(v)).replicas,
    (*_HINTS, "Usable throughput = 0.7 x throughput.", "Replicas = demand / usable throughput, rounded up."),
    integer=True,
    bare_ok=True,
)

define(
    EXERCISES,
    "fleet_ex6",
    "The monthly bill",
    _STORY + "The fleet must serve {demand} output tokens per second with 30% headroom per replica, always on "
    "(730 hours a month), at the GPU's catalog price per hour. What does it cost per month?",
    "USD",
    DEFAULT,
    _vary,
    lambda v: lc.fleet(Q_(v["demand"], "1/s"), _replica(v)).monthly_cost,
    (
        "First the replicas (round up), then GPUs = replicas x {tp}.",
        "Cost = GPUs x lc.gpus['{gpu}'].price_per_hour x 730 hours.",
    ),
    mistakes=lambda v: [(1 / v["tp"], "did you count replicas instead of GPUs?")] if v["tp"] > 1 else [],
)

define(
    EXERCISES,
    "fleet_ex7",
    "Requests in flight",
    "A voice assistant receives {rate} requests per second; each spends {time} s in the system from arrival to "
    "last token. On average, how many requests are in flight?",
    "",
    dict(rate=50, time=12),
    lambda r: dict(rate=pick(r, (5, 20, 50, 120, 400)), time=pick(r, (3, 6.5, 12, 20))),
    lambda v: lc.FORMULAS["littles_law"](request_rate=Q_(v["rate"], "1/s"), time_in_system=Q_(v["time"], "s")),
    ("Little's law: in flight = arrival rate x time in system.",),
    bare_ok=True,
)
