"""Exercises for *Disaggregated serving* (``book/10b_disaggregation.md``): the KV hand-off of a prompt over
the link between the pools, the prefill pool's utilisation, the wait for a prefill replica (M/D/c), the
disaggregated time to first token, and the replicas each pool needs for a rate.

``disaggregation_ex1`` .. ``disaggregation_ex6`` follow the chapter's exercises of the same labels. Every figure
a story gives about a link is read from the link catalog, every model figure from the model catalog, and every
method figure (the link efficiency, the headroom, the request overhead) from the course's preset.
"""

from __future__ import annotations

import random

import llmcourse as lc
from llmcourse.exercises._common import COURSE, GQA_MODELS, define, pct, pick
from llmcourse.formulas import FORMULAS as F
from llmcourse.planner.disagg import kv_handoff
from llmcourse.units import Q_

EXERCISES: list = []

#: The method the notebook says these exercises follow (shown above its first exercise).
NOTEBOOK_METHOD = """
**The method.** Every exercise is the course's method; each story gives the link's figures from the catalog
(`lc.links`). `llmcourse.planner.disagg` has the building blocks (`kv_handoff`, `disaggregated`, `compare`) and
`lc.FORMULAS` the formulas (`kv_handoff_time`, `prefill_pool_utilisation`, `mdc_wait`, `disagg_ttft`,
`decode_pool_rate`); the chapter shows how to use them.
"""
#: What a student's own variant changes (the notebook's instructions).
VARIES = "a different model, link, rate or pool"
#: The unit of the example answer in the notebook's instructions.
EXAMPLE_UNIT = "ms"

_LINK_ETA = pct(COURSE.link_efficiency)
_LINKS = ("InfiniBand HDR", "InfiniBand NDR", "InfiniBand XDR", "NVLink 4", "PCIe 5 x16")
_MODELS = GQA_MODELS  # no sliding window: a prompt's whole KV is handed off


def _link_words(name: str) -> dict[str, str]:
    lk = lc.links[name]
    return dict(
        link=lk.name,
        bw=f"{lk.bandwidth.to('GB/s').m:g}",
        alpha=f"{lk.latency.to('us').m:g}",
        t0=f"{lk.base.to('us').m:g}",
    )


# --- 1. the KV hand-off of one prompt ----------------------------------------------------------------------------
_PROMPTS = (500, 1_000, 2_000, 4_000, 8_000, 16_000)


def _random_handoff(r: random.Random) -> dict:
    """A model, a prompt within its positions (Llama 2 holds 4,096), a lane count and a link."""
    model = pick(r, _MODELS)
    most = lc.models[model].max_position or _PROMPTS[-1]
    prompt = pick(r, tuple(p for p in _PROMPTS if p <= most))
    return _handoff_variant(model, prompt, pick(r, (1, 2, 4, 8)), pick(r, _LINKS))


def _handoff_variant(model: str, prompt: int, lanes: int, link: str) -> dict:
    m = lc.models[model]
    return _link_words(link) | dict(
        model=m.name,
        layers=m.layers,
        kv_heads=m.kv_heads,
        head_dim=m.head_dim,
        prompt=prompt,
        lanes=lanes,
        # how the story says it (a display key): one GPU, or several sending at once
        senders="One GPU sends the cache over its link"
        if lanes == 1
        else f"Each of {lanes} GPUs sends its share over its own link at once",
    )


define(
    EXERCISES,
    "disaggregation_ex1",
    "The KV hand-off",
    "A prefill replica of {model} ({layers} layers, {kv_heads} KV heads of {head_dim} values, BF16 KV cache) has "
    "prefilled a prompt of {prompt} tokens and hands its KV cache to a decode replica over {link}: {bw} GB/s per "
    "GPU and direction, a latency of {alpha} µs and a fixed cost of {t0} µs. {senders}, "
    f"at {_LINK_ETA} of the bandwidth (the course's link efficiency). How long does "
    "the hand-off take?",
    "ms",
    _handoff_variant("Llama-3.1-70B", 2_000, 1, "InfiniBand NDR"),
    _random_handoff,
    lambda v: kv_handoff(v["model"], v["prompt"], link=v["link"], kv_lanes=v["lanes"]),
    (
        "KV per token: 2 (keys and values) x layers x KV heads x head dim x 2 bytes; times {prompt} tokens.",
        "t = t0 + alpha + bytes / (lanes x bandwidth x link efficiency).",
    ),
    kv=True,
    mistakes=lambda v: [(v["lanes"], "the lanes send at once: divide the bytes by them")] if v["lanes"] > 1 else [],
)


# --- 2. the prefill pool's utilisation ---------------------------------------------------------------------------
def _util_vary(r):
    servers = pick(r, (2, 3, 4, 5, 6, 8, 10, 12, 16))
    prefill_ms = pick(r, (40, 60, 80, 100, 120, 150, 200, 250, 300))
    rho = pick(r, range(35, 95, 3)) / 100
    return dict(servers=servers, prefill_ms=prefill_ms, rate=round(rho * servers / (prefill_ms / 1e3), 1))


def _util(v):
    return F["prefill_pool_utilisation"](
        request_rate=Q_(v["rate"], "1/s"), prefill_time=Q_(v["prefill_ms"], "ms"), prefill_servers=v["servers"]
    )


define(
    EXERCISES,
    "disaggregation_ex2",
    "How busy the prefill pool is",
    "A prefill pool has {servers} replicas, each prefilling one prompt at a time in {prefill_ms} ms. Requests "
    "arrive at {rate} per second. What share of the time is a prefill replica busy? (A plain number, e.g. 0.6 for "
    "60%.)",
    "",
    dict(servers=4, prefill_ms=100, rate=28.0),
    _util_vary,
    _util,
    (
        "Each request keeps one replica busy for {prefill_ms} ms.",
        "Busy share = arrivals x prefill time / replicas.",
    ),
    bare_ok=True,
    mistakes=lambda v: [(v["servers"], "the work is shared by the replicas: divide by them")],
)


# --- 3. the wait for a prefill replica (M/D/c) -------------------------------------------------------------------
def _wait_vary(r):
    return dict(
        servers=pick(r, (1, 2, 3, 4, 6, 8)),
        rho=pick(r, range(40, 96, 5)) / 100,
        prefill_ms=pick(r, (50, 80, 100, 150, 200, 300, 400)),
    )


def _wait(v):
    return F["mdc_wait"](
        prefill_utilisation=v["rho"], prefill_servers=v["servers"], prefill_time=Q_(v["prefill_ms"], "ms")
    )


define(
    EXERCISES,
    "disaggregation_ex3",
    "The wait for a prefill replica",
    "Prompts arrive at random (Poisson) at a prefill pool of {servers} replicas that each prefill one prompt in "
    "exactly {prefill_ms} ms; the replicas are busy {rho} of the time. Using Sakasegawa's approximation for the "
    "M/D/c queue, W = rho^(sqrt(2(c + 1)) - 1) / (c (1 - rho)) x t / 2, what is the mean wait before a prefill "
    "starts?",
    "ms",
    dict(servers=4, rho=0.8, prefill_ms=100),
    _wait_vary,
    _wait,
    (
        "The exponent is sqrt(2 x ({servers} + 1)) - 1.",
        "The 1/2 is (c_a^2 + c_s^2) / 2 with c_a^2 = 1 (Poisson) and c_s^2 = 0 (a fixed prefill).",
    ),
    mistakes=lambda v: [(2, "a fixed service time halves the M/M/c wait: keep the 1/2")],
)


# --- 4. the disaggregated time to first token --------------------------------------------------------------------
def _ttft_vary(r):
    return dict(
        overhead=pick(r, (10, 20, 30, 50)),
        servers=pick(r, (2, 4, 6, 8)),
        rho=pick(r, range(40, 91, 5)) / 100,
        prefill_ms=pick(r, (60, 100, 150, 250, 400)),
        handoff_ms=pick(r, (1, 2, 4, 8, 16, 33)),
    )


def _ttft(v):
    return F["disagg_ttft"](
        request_overhead=Q_(v["overhead"], "ms"),
        prefill_queue_wait=_wait(v),
        prefill_time=Q_(v["prefill_ms"], "ms"),
        kv_handoff=Q_(v["handoff_ms"], "ms"),
    )


define(
    EXERCISES,
    "disaggregation_ex4",
    "Time to first token, disaggregated",
    "A request spends {overhead} ms in fixed overhead (HTTP, tokenising, scheduling), then waits for one of "
    "{servers} prefill replicas that are busy {rho} of the time and prefill a prompt in exactly {prefill_ms} ms "
    "(Poisson arrivals; take the M/D/c wait by Sakasegawa's approximation, rho^(sqrt(2(c + 1)) - 1) / (c (1 - "
    "rho)) x t / 2), is prefilled, and its KV cache takes {handoff_ms} ms to reach the decode pool. What is its "
    "mean time to first token?",
    "ms",
    dict(overhead=20, servers=4, rho=0.7, prefill_ms=100, handoff_ms=4),
    _ttft_vary,
    _ttft,
    (
        "TTFT = overhead + wait + prefill + hand-off.",
        "The wait: rho^(sqrt(2 x ({servers} + 1)) - 1) / ({servers} x (1 - {rho})) x {prefill_ms} / 2 ms.",
    ),
)


# --- 5. prefill replicas for a rate ------------------------------------------------------------------------------
_H = f"{COURSE.headroom:g}"


def _pre_vary(r):
    return dict(rate=pick(r, (5, 8, 10, 15, 20, 30, 40, 60, 80, 120)), prefill_ms=pick(r, range(40, 420, 20)))


def _pre(v):
    need = F["gpus_for_rate"](
        request_rate=Q_(v["rate"], "1/s"), headroom=COURSE.headroom, rps_per_gpu=1 / Q_(v["prefill_ms"], "ms")
    )
    return int(need.m)


define(
    EXERCISES,
    "disaggregation_ex5",
    "Replicas for the prefill pool",
    "A prefill replica prefills one prompt at a time in {prefill_ms} ms. Requests arrive at {rate} per second, and "
    f"the fleet keeps the course's headroom of {_H}x over the demand. How many prefill replicas does the pool need "
    "(before checking the time to first token)?",
    "",
    dict(rate=20, prefill_ms=100),
    _pre_vary,
    _pre,
    (
        "One replica completes 1 / prefill time prompts per second.",
        f"Replicas = ceil(rate x {_H} / that), a whole number.",
    ),
    integer=True,
    bare_ok=True,
)


# --- 6. decode replicas for a rate -------------------------------------------------------------------------------
def _dec_vary(r):
    return dict(
        rate=pick(r, (5, 10, 20, 40, 80, 150)),
        answer=pick(r, (150, 300, 600, 1_000)),
        batch=pick(r, (16, 32, 64, 96, 128, 192, 256)),
        step_ms=pick(r, (12, 15, 20, 25, 30, 35, 40)),
    )


def _dec(v):
    per = F["decode_pool_rate"](
        replicas=1, batch=v["batch"], answer_tokens=v["answer"], step_time=Q_(v["step_ms"], "ms")
    )
    return int(F["gpus_for_rate"](request_rate=Q_(v["rate"], "1/s"), headroom=COURSE.headroom, rps_per_gpu=per).m)


define(
    EXERCISES,
    "disaggregation_ex6",
    "Replicas for the decode pool",
    "A decode replica runs a batch of {batch} requests, one decode step of {step_ms} ms at a time; each request's "
    "answer is {answer} tokens (its prompt arrives prefilled). Requests arrive at {rate} per second, and the fleet "
    f"keeps the course's headroom of {_H}x. How many decode replicas does the pool need?",
    "",
    dict(rate=20, answer=300, batch=128, step_ms=30),
    _dec_vary,
    _dec,
    (
        "One replica completes batch / (answer x step time) requests per second.",
        f"Replicas = ceil(rate x {_H} / that).",
    ),
    integer=True,
    bare_ok=True,
)
