"""Exercises for *Sizing the fleet* (``book/09_fleet.md``): replicas, GPUs, monthly cost, Little's law.

``fleet_ex1``, ``_ex2``, ``_ex3``, ``_ex5`` and ``_ex6`` follow the chapter's exercises of the same labels (their
numeric part). ``fleet_ex4`` (the break-even API price at an average utilisation) too.
``fleet_ex7`` .. ``fleet_ex10`` are extra, on the chapter's worked 70B fleet.

The chapter's worked fleet reproduces the capacity-planning method's example (25.8 ms a step, 81 replicas,
~$296K a month), and its exercises vary that fleet, so the replica exercises (``fleet_ex1``, ``_ex2``, ``_ex4``,
``_ex7`` .. ``_ex9``) use that method's preset (``assumptions="capacity"``: decode only, each conversation's KV
read at its full length, 70% / 50%, a share of the throughput kept back for prefill and bursts), and their stories
say so; the chapter's erratum gives the course's fleet beside it.
"""

from __future__ import annotations

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import CAPACITY, define, pct, pick
from llmcourse.units import HOURS_PER_MONTH

EXERCISES: list = []

#: The method of the chapter's worked fleet, and the share of throughput it keeps back, in percent.
METHOD = "capacity"
_HELD_BACK = round(100 * CAPACITY.headroom_fraction)

FLEET = dict(
    model="Llama-3.1-70B",
    precision="fp8",
    gpu="H100 SXM",
    tp=2,
    batch=64,
    context=2_400,
    demand=140_000,
    headroom_pct=_HELD_BACK,
)
_SETUPS = (
    ("Llama-3.1-70B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-70B", "fp8", "H200 SXM", 2),
    ("Qwen2.5-72B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-70B", "fp8", "B200", 1),
    ("Llama-3.1-8B", "bf16", "H100 SXM", 1),
)


def _vary(r):
    return dict(zip(("model", "precision", "gpu", "tp"), pick(r, _SETUPS), strict=True)) | dict(
        batch=pick(r, (24, 32, 40, 48, 56, 64)),
        context=pick(r, range(1_200, 3_201, 100)),
        demand=pick(r, range(20_000, 300_001, 10_000)),
        headroom_pct=pick(r, (20, _HELD_BACK, 50)),
    )


def _replica(v):
    return lc.replica(
        v["model"],
        v["gpu"],
        tensor_parallel=v["tp"],
        batch=v["batch"],
        context_tokens=v["context"],
        weight_bytes=v["precision"],
        assumptions=METHOD,
    )


def _fleet(v):
    return lc.fleet(Q_(v["demand"], "1/s"), _replica(v), headroom_fraction=v["headroom_pct"] / 100)


_STORY = (
    "A public chat product serves {model} with {precision} weights and a BF16 KV cache. One replica is {tp} x {gpu} "
    "(tensor parallel), running a batch of {batch} conversations of {context} tokens. Size it as the chapter's "
    "worked fleet does, by the capacity-planning method: each decode step reads the weights and every "
    f"conversation's whole KV cache at {pct(CAPACITY.bandwidth_efficiency)} of peak bandwidth (or does "
    f"{CAPACITY.flops_per_param:g} FLOPs per parameter per conversation at {pct(CAPACITY.compute_efficiency)} of the "
    "BF16 peak, if slower), and a replica's throughput counts its decode steps only. "
)
_HINTS = (
    f"Bytes per step = weights + {{batch}} x KV per sequence; step time = bytes / ({{tp}} x "
    f"{CAPACITY.bandwidth_efficiency:g} x bandwidth).",
    "Replica throughput = {batch} / step time; usable = (100% - {headroom_pct}%) x that.",
    "Replicas = demand / usable throughput, rounded up; GPUs = replicas x {tp}.",
)

define(
    EXERCISES,
    "fleet_ex1",
    "GPUs for the demand",
    _STORY + "At peak the product needs {demand} output tokens per second, and each replica keeps {headroom_pct}% of "
    "its throughput back for prefill and bursts. How many GPUs does the fleet need?",
    "",
    dict(FLEET, model="Llama-3.1-8B", precision="bf16", tp=1),
    _vary,
    lambda v: _fleet(v).gpus,
    _HINTS,
    integer=True,
    bare_ok=True,
)

define(
    EXERCISES,
    "fleet_ex2",
    "More headroom",
    _STORY + "The product needs {demand} output tokens per second; each replica now keeps {headroom_pct}% of its "
    "throughput back. How many GPUs does the fleet need?",
    "",
    dict(FLEET, headroom_pct=50),
    _vary,
    lambda v: _fleet(v).gpus,
    _HINTS,
    integer=True,
    bare_ok=True,
)

define(
    EXERCISES,
    "fleet_ex3",
    "A fleet at national scale",
    "A national service needs {demand} tokens per second; measurements say one GPU sustains {per_gpu} tokens per "
    "second. How many GPUs?",
    "",
    dict(demand=21_701_250, per_gpu=3_000),
    lambda r: dict(demand=pick(r, range(1_000_000, 30_000_001, 250_000)), per_gpu=pick(r, range(1_000, 6_001, 250))),
    lambda v: lc.FORMULAS["replicas_needed"](demand=Q_(v["demand"], "1/s"), throughput=Q_(v["per_gpu"], "1/s")),
    ("GPUs = demand / tokens per second per GPU, rounded up.",),
    integer=True,
    bare_ok=True,
)


def _break_even(v):
    f = lc.FORMULAS
    served = f["tokens_served"](demand=Q_(v["demand"], "1/s"), utilisation=v["util_pct"] / 100, hours=HOURS_PER_MONTH)
    return f["break_even_price"](cost=_fleet(v).monthly_cost, tokens_served=served) * 1e6


define(
    EXERCISES,
    "fleet_ex4",
    "Build or buy",
    _STORY + "The fleet is sized for a peak of {demand} output tokens per second with {headroom_pct}% headroom per "
    "replica, runs always on (730 hours a month) at the GPU's catalog price, and averages {util_pct}% of the peak "
    "demand over the month. At what API price per million output tokens would buying cost the same?",
    "USD",
    FLEET | dict(util_pct=60),
    lambda r: _vary(r) | dict(util_pct=pick(r, (30, 45, 60))),
    _break_even,
    (
        *_HINTS,
        "Monthly cost = GPUs x price per hour x 730 h.",
        "Tokens served = {demand} per s x {util_pct}% x 730 h; price per million = cost / tokens x 10^6.",
    ),
    tolerance=0.02,
    mistakes=lambda v: [(v["util_pct"] / 100, "did you divide by the peak demand instead of the average?")],
)

define(
    EXERCISES,
    "fleet_ex5",
    "Loading the weights of a new replica",
    "An autoscaler starts a new replica of {model} with {precision} weights, read at {rate} GB/s. How long does "
    "loading the weights take?",
    "s",
    dict(model="Llama-3.1-405B", precision="fp8", rate=2),
    lambda r: dict(
        model=pick(
            r, ("Llama-3.1-405B", "Llama-3.1-70B", "DeepSeek-V3", "Qwen3-235B-A22B", "Qwen2.5-72B", "gpt-oss-120b")
        ),
        precision=pick(r, ("fp8", "bf16", "int4")),
        rate=pick(r, (1, 1.5, 2, 3, 5, 8, 10, 12.5, 20, 25, 40)),
    ),
    lambda v: lc.FORMULAS["weight_read_time"](
        weights=lc.weight_bytes(v["model"], v["precision"]),
        n_gpus=1,
        bandwidth=Q_(v["rate"], "GB/s"),
        bandwidth_efficiency=1,
    ),
    ("Time = weight bytes / read rate.",),
)


def _vary_kv(r):
    """A replica, a request count and a length whose KV cache fits beside the weights (drawn again until it does)."""
    while True:
        v = dict(zip(("model", "precision", "gpu", "tp"), pick(r, _SETUPS), strict=True)) | dict(
            requests=pick(r, range(8, 129, 4)), context=pick(r, range(1_000, 16_001, 500))
        )
        top = lc.max_batch(v["model"], v["gpu"], v["context"], n_gpus=v["tp"], weight_bytes=v["precision"])
        if top >= v["requests"]:
            return v


define(
    EXERCISES,
    "fleet_ex6",
    "KV of a replica full of long documents",
    "A replica of {model} ({precision} weights, BF16 cache) on {tp} x {gpu} runs {requests} requests, each a "
    "{context}-token document conversation. How much KV cache does it hold?",
    "GB",
    dict(model="Llama-3.1-70B", precision="fp8", gpu="H100 SXM", tp=2, requests=40, context=5_000),
    _vary_kv,
    lambda v: v["requests"] * lc.kv_bytes_per_sequence(v["model"], v["context"]),
    ("KV = requests x context x KV per token.",),
    kv=True,
)

define(
    EXERCISES,
    "fleet_ex7",
    "Step time of a replica",
    _STORY + "How long is one decode step?",
    "ms",
    FLEET,
    _vary,
    lambda v: _replica(v).step.step_time,
    _HINTS[:1],
    mistakes=lambda v: [(v["tp"], "did you use one GPU's bandwidth only?")] if v["tp"] > 1 else [],
)

define(
    EXERCISES,
    "fleet_ex8",
    "Replicas for the demand",
    _STORY + "At peak the product needs {demand} output tokens per second. Each replica keeps {headroom_pct}% of its "
    "throughput back for prefill and bursts. How many replicas are needed?",
    "",
    FLEET,
    _vary,
    lambda v: _fleet(v).replicas,
    _HINTS,
    integer=True,
    bare_ok=True,
)

define(
    EXERCISES,
    "fleet_ex9",
    "The monthly bill",
    _STORY + "The fleet must serve {demand} output tokens per second with {headroom_pct}% headroom per replica, "
    "always on (730 hours a month), at the GPU's catalog price per hour. What does it cost per month?",
    "USD",
    FLEET,
    _vary,
    lambda v: _fleet(v).monthly_cost,
    (*_HINTS, "Cost = GPUs x lc.gpus['{gpu}'].price_per_hour x 730 hours."),
    mistakes=lambda v: [(1 / v["tp"], "did you count replicas instead of GPUs?")] if v["tp"] > 1 else [],
)

define(
    EXERCISES,
    "fleet_ex10",
    "Requests in flight",
    "A voice assistant receives {rate} requests per second; each spends {time} s in the system from arrival to "
    "last token. On average, how many requests are in flight?",
    "",
    dict(rate=50, time=12),
    lambda r: dict(rate=pick(r, range(5, 501, 5)), time=pick(r, (2, 3, 4.5, 6.5, 8, 10, 12, 15, 20, 30))),
    lambda v: lc.FORMULAS["littles_law"](request_rate=Q_(v["rate"], "1/s"), time_in_system=Q_(v["time"], "s")),
    ("Little's law: in flight = arrival rate x time in system.",),
    bare_ok=True,
)
