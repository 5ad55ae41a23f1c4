"""Exercises for *Queueing* (``book/10_queueing.md``): the closed forms behind the simulation.

``queueing_ex7`` .. ``queueing_ex11`` are a generic first-come-first-served single server with Poisson arrivals and
exponential service (M/M/1: one request served at a time, as a single-threaded service runs; not an LLM replica, which
serves a batch at once and is closer to M/G/c with c the batch, see the chapter's derivation): utilisation
rho = lambda / mu, mean time in system W = 1 / (mu - lambda), and Little's law N = lambda W.
``queueing_ex3`` and ``queueing_ex4`` follow the chapter's exercises of those labels (the replica's capacity
and the load on another GPU, from :mod:`llmcourse.simulator`); the chapter's others run its simulator and are
open questions. ``queueing_ex7`` .. ``queueing_ex12`` are the M/M/1 closed forms, registered by
:mod:`llmcourse.simulator` with :func:`llmcourse.formulas.formula` (section *10_queueing*). The replica's
numbers are the course's method (the package's default assumptions).
"""

from __future__ import annotations

from functools import lru_cache

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import FLOOR, define, pick
from llmcourse.formulas import FORMULAS
from llmcourse.simulator import Scheduler, build_replica, simulate  # also registers the M/M/1 formulas used below

EXERCISES: list = []

_COURSE = lc.resolve()


def _capacity(model, gpu, prompt, answer):
    return build_replica(model, gpu, prompt_tokens=prompt, answer_tokens=answer).capacity(prompt, answer)


_REPLICA = (
    "A replica of {model} (BF16) on one {gpu} runs at "
    f"{_COURSE.bandwidth_efficiency:.0%} of peak bandwidth and {_COURSE.compute_efficiency:.0%} of peak FLOP/s "
    f"with {_COURSE.memory_fraction:.0%} of memory usable (the course's method), under vLLM. Every request is "
    "{prompt} prompt + {answer} answer tokens. The engine admits requests on the KV blocks in use (at most 256): "
    "conversations started at different times each hold their prompt and a uniform share of their answer, so B of "
    "them hold on average B x KV per token x (prompt + answer / 2), with a spread of KV per token x answer x "
    f"sqrt(B / 12), and B is the largest whose mean plus {_COURSE.admission_spreads:g} spreads fits beside the "
    "weights. Each engine step decodes one token of every running request; a request that takes a finished one's "
    "place has its whole prompt put into the next step beside the decode tokens (it fits in the step's "
    "8,192-token budget), and the other steps decode alone. Over an answer's steps each of the B requests lets in "
    "one new prompt, so a share min(1, B / answer) of the steps carry one (at a share of 1, every step carries "
    "B x prompt / answer prompt tokens). Each step reads the weights once: its weight matmuls take the slower of "
    "one weight read and all its tokens' 2 FLOPs per parameter, its attention the slower of the running requests' "
    "KV (read at the average context, prompt + answer / 2) and its prompt tokens' causal attention FLOPs, and it "
    "pays a fixed "
    f"{_COURSE.step_overhead_ms:g} ms on top (launches, scheduling) and a floor of {FLOOR} for each of the model's "
    "layers. "
)
_CAP_HINTS = (
    "Batch: the largest B (at most 256) with B x KV per token x (prompt + answer / 2) + "
    f"{_COURSE.admission_spreads:g} x KV per token x answer x sqrt(B / 12) <= free KV memory "
    "(lc.FORMULAS['kv_in_use']).",
    "A step with c prompt tokens (c = {prompt} for a whole prompt, 0 for a step that decodes alone): matmuls "
    "max(weights / bandwidth, (B + c) x 2 x parameters / FLOP/s), attention max(B x KV at the average context / "
    "bandwidth, c x 2 x layers x heads x head dim x {prompt} / FLOP/s), + "
    f"{_COURSE.step_overhead_ms:g} ms + layers x {FLOOR} (lc.FORMULAS['mixed_step_time'], "
    "lc.FORMULAS['layer_floor_time']).",
    "Share of steps with a prompt: min(1, B / {answer}) (lc.FORMULAS['prompt_step_share']); mean step = share x the "
    "step with a prompt + (1 - share) x the step alone (lc.FORMULAS['chunked_mean_step']). At a share of 1, the "
    "step instead carries c = B x {prompt} / {answer} prompt tokens.",
    "Each step finishes B output tokens: requests per second = B / (mean step x {answer}).",
)

define(
    EXERCISES,
    "queueing_ex3",
    "Capacity of a replica",
    _REPLICA + "How many requests per second can the replica complete at most?",
    "1/s",
    dict(model="Llama-3.1-8B", gpu="H100 SXM", prompt=2_000, answer=600),
    lambda r: dict(
        model=pick(r, ("Llama-3.1-8B", "Qwen2.5-7B")),
        gpu=pick(r, ("H100 SXM", "H200 SXM", "B200")),
        prompt=pick(r, (1_000, 2_000, 4_000)),
        answer=pick(r, (150, 300, 600)),
    ),
    lambda v: _capacity(v["model"], v["gpu"], v["prompt"], v["answer"]),
    _CAP_HINTS,
    tolerance=0.02,
    followup="What time per output token does the chapter's closed form give at 90% of that capacity?",
)

define(
    EXERCISES,
    "queueing_ex4",
    "The same traffic on a faster GPU",
    _REPLICA + "Requests arrive at {load_pct}% of that replica's capacity. Served by the same kind of replica on "
    "one {other} instead, what load (arrival rate / capacity) is that?",
    "",
    dict(model="Llama-3.1-8B", gpu="H100 SXM", prompt=2_000, answer=300, load=0.9, load_pct=90, other="H200 SXM"),
    lambda r: (
        lambda pct: dict(
            model="Llama-3.1-8B",
            gpu="H100 SXM",
            prompt=pick(r, (1_000, 2_000)),
            answer=pick(r, (300, 600)),
            load=pct / 100,
            load_pct=pct,
            other=pick(r, ("H200 SXM", "B200", "MI300X")),
        )
    )(pick(r, (70, 80, 90))),
    lambda v: (
        v["load"]
        * _capacity(v["model"], v["gpu"], v["prompt"], v["answer"])
        / _capacity(v["model"], v["other"], v["prompt"], v["answer"])
    ),
    (
        "Arrival rate = {load} x the capacity of the {gpu} replica.",
        *_CAP_HINTS,
        "Load on the {other} = that rate / the {other} replica's capacity.",
    ),
    bare_ok=True,
    tolerance=0.02,
    followup="What p99 time to first token does the chapter's simulation give the faster GPU at that load?",
)


def _rates(r):
    mu = pick(r, (2, 2.5, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25))
    return dict(mu=mu, lam=round(mu * pick(r, range(30, 98)) / 100, 2))


def _w(v):
    if v["lam"] >= v["mu"]:  # pragma: no cover - the variants keep lambda < mu
        raise ValueError("arrivals at or above the service rate: the queue grows without bound")
    return FORMULAS["mm1_time_in_system"](request_rate=Q_(v["lam"], "1/s"), rps_per_gpu=Q_(v["mu"], "1/s"))


_STORY = (
    "A single server (first come, first served, one request at a time: a generic queue, not a batching LLM "
    "replica) completes requests at {mu} per second on average when busy (exponential service times); requests "
    "arrive at random (Poisson) at {lam} per second. "
)

define(
    EXERCISES,
    "queueing_ex7",
    "Utilisation",
    _STORY + "What fraction of the time is the server busy?",
    "",
    dict(mu=10, lam=8),
    _rates,
    lambda v: FORMULAS["mm1_utilisation"](request_rate=Q_(v["lam"], "1/s"), rps_per_gpu=Q_(v["mu"], "1/s")),
    ("Utilisation = arrival rate / service rate.",),
    bare_ok=True,
)

define(
    EXERCISES,
    "queueing_ex8",
    "Mean time in the system",
    _STORY + "Modelled as an M/M/1 queue, how long does a request spend in the system on average (waiting plus "
    "being served)?",
    "s",
    dict(mu=10, lam=8),
    _rates,
    _w,
    ("For M/M/1: W = 1 / (service rate - arrival rate).",),
    mistakes=lambda v: [((v["mu"] - v["lam"]) / v["mu"], "that is the service time alone: add the wait")],
)

define(
    EXERCISES,
    "queueing_ex9",
    "Requests in the system",
    _STORY + "How many requests are in the system on average?",
    "",
    dict(mu=10, lam=8),
    _rates,
    lambda v: lc.FORMULAS["littles_law"](request_rate=Q_(v["lam"], "1/s"), time_in_system=_w(v)),
    ("Little's law: N = arrival rate x mean time in system.", "The M/M/1 time in system is 1 / (mu - lambda)."),
    bare_ok=True,
)

define(
    EXERCISES,
    "queueing_ex10",
    "How much slower near saturation",
    _STORY + "By what factor is the mean time in system longer than the service time alone (1 / service rate)?",
    "",
    dict(mu=10, lam=9.5),
    _rates,
    lambda v: (_w(v) * Q_(v["mu"], "1/s")).to(""),
    ("Divide W = 1 / (mu - lambda) by 1 / mu.", "The result is 1 / (1 - utilisation)."),
    bare_ok=True,
)


def _vary_target(r):
    """A service rate and a latency target that it can meet with room to spare (mu above 1.25 / target)."""
    while True:
        v = dict(mu=pick(r, range(2, 41)), target=pick(r, (0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0)))
        if v["mu"] * v["target"] > 1.25:
            return v


define(
    EXERCISES,
    "queueing_ex11",
    "The highest rate a latency target allows",
    "A single server (first come, first served, one request at a time, with random arrivals and exponential "
    "service times: the M/M/1 queue, not a batching LLM replica) completes {mu} requests per second when busy. "
    "The service promises a mean time in system of at most {target} s. What is the highest arrival rate the "
    "server may take?",
    "1/s",
    dict(mu=10, target=0.5),
    _vary_target,
    lambda v: FORMULAS["mm1_max_rate"](rps_per_gpu=Q_(v["mu"], "1/s"), time_in_system=Q_(v["target"], "s")),
    ("Solve 1 / (mu - lambda) = target for lambda.", "lambda = mu - 1 / target."),
)


def _little_time(v):
    # Little's law solved for the time: the formula gives N for (lambda, W); N is linear in W.
    one_second = lc.FORMULAS["littles_law"](request_rate=Q_(v["rate"], "1/s"), time_in_system=Q_(1, "s")).m
    return Q_(v["inflight"] / one_second, "s")


define(
    EXERCISES,
    "queueing_ex12",
    "Little's law backwards",
    "A dashboard shows {inflight} requests in flight on average while {rate} requests per second arrive. What is "
    "the average time a request spends in the system?",
    "s",
    dict(inflight=300, rate=50),
    lambda r: dict(inflight=pick(r, range(20, 2_001, 10)), rate=pick(r, range(5, 501, 5))),
    _little_time,
    ("Little's law: N = lambda x W, so W = N / lambda.",),
)


# --- schedulers as engines run them: chunked prefill and the prefix cache --------------------------------------------
# queueing_ex13 .. queueing_ex15 follow the chapter's section "Schedulers as engines run them" (auto-checked only; the
# chapter's worked problems 4-6 work the same ideas through).
@lru_cache(maxsize=64)
def _service(model, gpu):
    return build_replica(model, gpu, prompt_tokens=1_000, answer_tokens=100)


def _chunked_alone(v):
    """The simulator's prefill of one prompt alone on an idle replica, in chunks (its TTFT less the overhead)."""
    r = simulate(
        v["model"],
        v["gpu"],
        rate=Q_(1e-3, "1/s"),
        prompt_tokens=v["prompt"],
        answer_tokens=2,
        requests=1,
        prompt_cv=0,
        answer_cv=0,
        scheduler=Scheduler(chunk_tokens=v["chunk"]),
        replica=_service(v["model"], v["gpu"]),
    )
    return r.ttft["p50"] - Q_(_COURSE.request_overhead_ms, "ms")


define(
    EXERCISES,
    "queueing_ex13",
    "A prompt in chunks",
    "An idle replica of {model} (BF16) on one {gpu}, the course's method ("
    f"{_COURSE.compute_efficiency:.0%} of the BF16 peak, {_COURSE.bandwidth_efficiency:.0%} of peak bandwidth), "
    "prefills in chunks: each iteration processes at most {chunk} prompt tokens, and takes the slower of its "
    f"chunk's compute and one read of the weights, plus the engine's fixed {_COURSE.step_overhead_ms:g} ms per "
    f"iteration (scheduling and launches) and a floor of {FLOOR} for each of the model's layers. "
    "A prompt of {prompt} tokens arrives alone. How long does its "
    "prefill take, from its first chunk to its first token? (Charge each prompt token at the whole prompt's "
    "compute per token: 2 FLOPs per parameter plus the causal attention term averaged over the prompt.)",
    "ms",
    dict(model="Llama-3.1-8B", gpu="H100 SXM", prompt=6_000, chunk=512),
    lambda r: dict(
        model=pick(r, ("Llama-3.1-8B", "Qwen2.5-7B", "Qwen3-32B")),
        gpu=pick(r, ("H100 SXM", "H200 SXM", "B200")),
        prompt=pick(r, range(1_000, 16_001, 250)),
        # chunks of 512 tokens or more: each full chunk is compute-bound on these models and GPUs, where the
        # statement's charge (the prompt's average compute per token) is the engine step's, attention included
        chunk=pick(r, (512, 768, 1_024, 2_048)),
    ),
    _chunked_alone,
    (
        "Chunks: {prompt} / {chunk}, rounded up; all full except the last.",
        "Compute per token = lc.prefill(model, gpu, {prompt}).compute_time / {prompt}; one read of the weights = "
        "lc.prefill(model, gpu, 1).memory_time.",
        "Each iteration: max(its tokens x compute per token, one read of the weights), plus "
        f"{_COURSE.step_overhead_ms:g} ms + layers x {FLOOR}; add them up.",
    ),
    tolerance=0.02,
)


def _fit_with_prefix(v):
    budget = _service(v["model"], v["gpu"]).kv_budget_tokens
    return (budget - v["prefix"]) // (v["prompt"] - v["prefix"] + v["answer"])


define(
    EXERCISES,
    "queueing_ex14",
    "What a shared prefix frees",
    "A replica of {model} (BF16) on one {gpu}, the course's method ("
    f"{_COURSE.memory_fraction:.0%} of memory usable for weights and KV), serves requests of {{prompt}} prompt + "
    "{answer} answer tokens, whose first {prefix} prompt tokens are the same system prompt for everyone. With a "
    "prefix cache the system prompt's KV is held once, and each request holds KV only for the rest of its prompt "
    "and its answer. How many requests fit in memory at once? (Count each request's KV for its whole answer; "
    "no batch cap.)",
    "",
    dict(model="Llama-3.1-8B", gpu="H100 SXM", prompt=3_000, answer=500, prefix=2_000),
    lambda r: (
        lambda prompt: dict(
            model=pick(r, ("Llama-3.1-8B", "Qwen2.5-7B")),
            gpu=pick(r, ("H100 SXM", "H200 SXM", "A100 SXM 80GB", "L40S")),
            prompt=prompt,
            answer=pick(r, range(100, 1_001, 50)),
            prefix=pick(r, range(500, prompt, 250)),
        )
    )(pick(r, range(1_500, 8_001, 500))),
    _fit_with_prefix,
    (
        "KV tokens that fit = (usable memory - weights) / KV per token, rounded down.",
        "Less the {prefix} tokens of the shared prefix, held once.",
        "Each request holds ({prompt} - {prefix}) + {answer} tokens: divide, round down.",
    ),
    bare_ok=True,
    integer=True,
)

define(
    EXERCISES,
    "queueing_ex15",
    "A budget shared with running answers",
    "An engine gives every iteration a budget of {chunk} tokens: first one token for each of the {running} "
    "answers being decoded, then the rest to prompt chunks. A prompt of {prompt} tokens arrives while the same "
    "{running} answers keep running (no other prompt waits). How many iterations does its prefill take?",
    "",
    dict(chunk=2_048, running=48, prompt=9_000),
    lambda r: (
        lambda chunk: dict(
            chunk=chunk,
            running=pick(r, range(8, min(chunk - 64, 256), 8)),
            prompt=pick(r, range(1_000, 32_001, 500)),
        )
    )(pick(r, (512, 1_024, 2_048, 4_096, 8_192))),
    lambda v: -(-v["prompt"] // (v["chunk"] - v["running"])),
    (
        "Prompt tokens per iteration = {chunk} - {running}.",
        "Iterations = {prompt} / that, rounded up.",
    ),
    bare_ok=True,
    integer=True,
)
