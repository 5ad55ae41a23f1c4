"""Reference solutions, written as a student would: catalog look-ups and formulas, step by step.

Kept apart from the student notebooks, from the exercise definitions and from the installed package (this file
lives under ``tests/``; it was ``llmcourse/exercises/solutions.py``): each solution works from
the exercise's givens (its variant) with :data:`llmcourse.FORMULAS` and the planner, never with the
exercise's own ``answer`` function. The tests check every solution against :func:`check` for the
book's variant and for random seeds.

A solution reads the method's figures (the share of memory, the efficiencies, the headroom) from the preset its
exercise's story names, as a student reads a given: ``CAPACITY.bandwidth_efficiency`` where the story says "as
the capacity-planning method does", ``COURSE`` where it says "the course's".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import llmcourse as lc
from llmcourse import FORMULAS as F
from llmcourse import Q_

__all__ = ["SOLUTIONS", "solve"]

SOLUTIONS: dict[str, Callable[[dict[str, Any]], Any]] = {}

COURSE = lc.resolve()  # the course's method: the default of every estimate
ENVELOPE = lc.resolve("envelope")  # the back-of-the-envelope method (the first-estimate chapter's table)
LAB = lc.resolve("lab")  # the interactive lab
CAPACITY = lc.resolve("capacity")  # the capacity-planning method (the fleet chapters' decode-only first cut)
TWO_FLOP = Q_(COURSE.flops_per_param, "FLOP")  # a multiply and an add per parameter per token


def solution(exercise_id: str) -> Callable:
    def add(fn: Callable) -> Callable:
        SOLUTIONS[exercise_id] = fn
        return fn

    return add


def solve(exercise_id: str, variant: dict[str, Any]) -> Any:
    """The reference answer to ``exercise_id`` for these givens."""
    return SOLUTIONS[exercise_id](variant)


def _m(name):
    return lc.models[name]


def _g(name):
    return lc.gpus[name]


def _b(precision):
    return Q_(lc.PRECISIONS[precision], "B")


def _kv_tok(model, bytes_=2):
    m = _m(model) if isinstance(model, str) else model
    return 2 * m.layers * m.kv_heads * m.head_dim * Q_(bytes_, "B")


def _usable(gpu, n=1, frac=None):
    return n * _g(gpu).memory * (COURSE.memory_fraction if frac is None else frac)


# --- first estimate -----------------------------------------------------------------------------------
def _fe_batch(v):
    free = _usable(v["gpu"], v["n_gpus"], ENVELOPE.memory_fraction) - _m(v["model"]).params * _b(v["precision"])
    return math.floor((free / (_kv_tok(v["model"]) * v["context"])).to("").m)


def _fe_step(v):
    # the back-of-the-envelope method: the whole KV cache at the datasheet bandwidth, FLOPs at the BF16 peak
    m, g = _m(v["model"]), _g(v["gpu"])
    batch = _fe_batch(v)
    total = m.params * _b(v["precision"]) + batch * _kv_tok(m) * v["context"]
    memory = total / (v["n_gpus"] * ENVELOPE.bandwidth_efficiency * g.bandwidth)
    compute = batch * TWO_FLOP * m.params / (v["n_gpus"] * ENVELOPE.compute_efficiency * g.peak_flops("bf16"))
    return max(memory.to("ms"), compute.to("ms"))


solution("first_estimate_ex1")(lambda v: _m(v["model"]).params * _b(v["precision"]))
solution("first_estimate_ex2")(lambda v: _usable(v["gpu"], v["n_gpus"], ENVELOPE.memory_fraction))
solution("first_estimate_ex3")(lambda v: _kv_tok(v["model"]) * v["context"])
solution("first_estimate_ex4")(_fe_batch)
solution("first_estimate_ex5")(_fe_step)
solution("first_estimate_ex6")(lambda v: _fe_batch(v) / _fe_step(v))


@solution("first_estimate_ex7")
def _fe_cost(v):
    tokens_per_hour = (_fe_batch(v) / _fe_step(v)) * Q_(1, "hour")
    return (v["n_gpus"] * _g(v["gpu"]).price_per_hour * Q_(1, "hour") / tokens_per_hour * 1e6).to("USD")


# --- tokens ----------------------------------------------------------------------------------------------
def _peak(v):
    return Q_(v["per_day"], "1/day") * v["peak"]


solution("tokens_ex1")(lambda v: _peak(v) * v["answer"])
solution("tokens_ex2")(lambda v: (_peak(v) * v["prompt"]) / (_peak(v) * v["answer"]))
solution("tokens_ex3")(lambda v: v["chars"] / v["cpt"])
solution("tokens_ex4")(lambda v: v["tokens"] / Q_(v["rate"], "1/s"))
solution("tokens_ex5")(lambda v: Q_(v["rps"], "1/s") * (v["chars"] / v["cpt"]))
solution("tokens_ex6")(lambda v: Q_(v["per_hour"], "1/hour") * v["answer"])

# --- weights ---------------------------------------------------------------------------------------------
solution("weights_ex1")(lambda v: _m(v["model"]).params * _b(v["precision"]))
solution("weights_ex2")(lambda v: _usable(v["gpu"]) - _m(v["model"]).params * _b(v["precision"]))
solution("weights_ex3")(lambda v: _usable(v["gpu"], v["n"]))
solution("weights_ex4")(lambda v: math.ceil((_m(v["model"]).params * _b(v["precision"]) / _usable(v["gpu"])).to("").m))
solution("weights_ex5")(lambda v: _usable(v["gpu"]) - _m(v["model"]).params * _b(v["precision"]))
solution("weights_ex6")(lambda v: (_usable(v["gpu"]) / (v["billions"] * 1e9)).to("B"))

# --- KV cache ----------------------------------------------------------------------------------------------
solution("kv_cache_ex1")(lambda v: _kv_tok(v["model"], lc.PRECISIONS[v["kv"].split()[-1].lower()]))  # "an FP8"
solution("kv_cache_ex2")(lambda v: (_usable(v["gpu"]) - _m(v["model"]).params * Q_(2, "B")) / _kv_tok(v["model"]))
solution("kv_cache_ex3")(lambda v: (v["context"] * _kv_tok(v["model"])).to("GB"))
solution("kv_cache_ex4")(lambda v: 2 * _m(v["model"]).layers * _m(v["model"]).hidden * Q_(2, "B") * v["context"])


def _free(v):
    return _usable(v["gpu"], v["n"]) - _m(v["model"]).params * _b(v["precision"])


@solution("kv_cache_ex5")
def _paged_batch(v):
    held = -(-(v["prompt"] + v["answer"] // 2) // v["block"]) * v["block"]  # whole blocks
    return math.floor((_free(v) / (_kv_tok(v["model"]) * held)).to("").m)


solution("kv_cache_ex6")(
    lambda v: math.floor(
        ((_free(v) - v["docs"] * v["doc_len"] * _kv_tok(v["model"])) / (v["context"] * _kv_tok(v["model"]))).to("").m
    )
)

# --- GQA -----------------------------------------------------------------------------------------------------
solution("gqa_ex1")(lambda v: _kv_tok(v["model"], lc.PRECISIONS[v["kv"].lower()]))
_CACHES = {  # the precisions of the two caches, as gqa_ex2's story says them: (MHA model's, GQA model's)
    "BF16 both": (2, 2),
    "the MHA model's in BF16, the GQA model's in FP8": (2, 1),
    "the MHA model's in FP8, the GQA model's in BF16": (1, 2),
}
solution("gqa_ex2")(lambda v: _kv_tok(v["small"], _CACHES[v["kv"]][0]) / _kv_tok(v["large"], _CACHES[v["kv"]][1]))


@solution("gqa_ex3")
def _gqa_fit(v):
    free = 2 * Q_(80, "GB") - v["billions"] * 1e9 * Q_(2, "B")
    per_seq = 2 * v["layers"] * v["kv_heads"] * 128 * Q_(2, "B") * v["context"]
    return math.floor((free / per_seq).to("").m)


solution("gqa_ex4")(lambda v: _kv_tok(v["model"], lc.PRECISIONS[v["kv"].lower()]))
solution("gqa_ex5")(lambda v: v["layers"] * (v["rank"] + v["rope"]) * Q_(2, "B"))


@solution("gqa_ex6")
def _gqa_heads(v):
    m = _m(v["model"])
    budget = (_usable(v["gpu"]) - m.params * Q_(2, "B")) / v["users"]
    most = (budget / (2 * m.layers * m.head_dim * Q_(2, "B") * v["context"])).to("").m
    heads = max(h for h in range(1, m.heads + 1) if m.heads % h == 0 and h <= most)
    kv_token = 2 * m.layers * heads * m.head_dim * Q_(2, "B")
    return math.floor(((_usable(v["gpu"]) - m.params * Q_(2, "B")) / (kv_token * v["context"])).to("").m)


solution("gqa_ex7")(
    lambda v: 2 * _m(v["model"]).layers * 1 * _m(v["model"]).head_dim * Q_(lc.PRECISIONS[v["kv"].lower()], "B")
)
solution("gqa_ex8")(
    lambda v: math.floor(
        (
            (_usable(v["gpu"]) - _m(v["model"]).params * Q_(2, "B"))
            / (2 * _m(v["model"]).layers * _m(v["model"]).heads * _m(v["model"]).head_dim * Q_(2, "B") * v["context"])
        )
        .to("")
        .m
    )
)


# --- decode ---------------------------------------------------------------------------------------------------
def _dec_time(model, gpu, context, eff, bytes_per_weight=2.0, batch=1, n=1, peak="bf16"):
    # the course's step: the slower of the bytes at ``eff`` x bandwidth and the FLOPs at its compute efficiency
    m, g = _m(model), _g(gpu)
    mem = (m.params * Q_(bytes_per_weight, "B") + batch * _kv_tok(m) * context) / (n * eff * g.bandwidth)
    comp = batch * TWO_FLOP * m.params / (n * COURSE.compute_efficiency * g.peak_flops(peak))
    return max(mem.to("ms"), comp.to("ms"))


def _course_allreduce(link, n, message_bytes):
    """One all-reduce as the course's stories state it (the engines' kernels): on a link whose GPUs read each other's
    memory the least of the ring, the one-shot and the two-shot (:func:`_engine_allreduce`), else the ring; s."""
    if lc.links[link].peer_kernels:
        return _engine_allreduce(link, n, message_bytes)
    return _ring_allreduce(link, n, message_bytes)


def _floor_ms(model):
    """The layers' floor of one forward pass: layers x the course's 23 us, in ms."""
    return Q_(_m(model).layers * COURSE.layer_floor_us / 1e3, "ms")


def _tp_allreduces(model, gpu, n, tokens):
    """On n GPUs of a dense model (tensor parallel), two all-reduces per layer of ``tokens`` tokens' activations
    on the GPUs' link (the engines' kernels); none on one GPU."""
    if n == 1:
        return Q_(0, "ms")
    m = _m(model)
    message = tokens * m.hidden * COURSE.activation_bytes  # bytes
    return Q_(2 * m.layers * _course_allreduce(_g(gpu).link, n, message), "s").to("ms")


def _course_extras(model, gpu, n=1, tokens=1):
    """The course's terms of a decode step beyond its reads and FLOPs: the fixed overhead of every step, the floor of
    the model's layers, and the all-reduces of the step's ``tokens`` sequences on n GPUs."""
    return Q_(COURSE.step_overhead_ms, "ms") + _floor_ms(model) + _tp_allreduces(model, gpu, n, tokens)


solution("decode_ex1")(
    lambda v: _dec_time(v["model"], v["gpu"], v["context"], v["eff"]) + _course_extras(v["model"], v["gpu"])
)
_STORED = {  # decode_ex2: the story's precisions, (bytes per weight, bytes per cached value)
    "BF16": (2, 2),
    "FP8 with a BF16 KV cache": (1, 2),
    "BF16 with an FP8 KV cache": (2, 1),
    "INT4 with a BF16 KV cache": (0.5, 2),
}
solution("decode_ex2")(
    lambda v: (
        _m(v["model"]).params * _STORED[v["precision"]][0] / (_kv_tok(v["model"], _STORED[v["precision"]][1]).to("B").m)
    )
)
solution("decode_ex3")(
    lambda v: (
        _dec_time(v["model"], v["gpu"], v["context"], v["eff"], lc.PRECISIONS["int4"] + 2 / v["group"])
        + _course_extras(v["model"], v["gpu"])
    )
)
solution("decode_ex4")(
    lambda v: (Q_(v["target"], "1/s") * _m(v["model"]).params * _b(v["precision"]) / _g(v["gpu"]).bandwidth).to("")
)
solution("decode_ex5")(
    lambda v: (
        COURSE.bandwidth_efficiency
        * _g(v["gpu"]).bandwidth
        * TWO_FLOP
        / (COURSE.compute_efficiency * _g(v["gpu"]).peak_flops("bf16") * _b(v["precision"]))
    ).to("")
)


@solution("decode_ex6")
def _dec_batch(v):
    # the largest B with step(B) <= 1 / speed. The step is (W + B K) / bw + overhead + the all-reduces, whose time
    # is a fixed part (t0 and the ring steps) plus B x a part per sequence (its bytes): solved for B in closed
    # form, then checked for compute, whose peak is the weights' precision where the GPU has one (FP8 on an H100)
    m, g, n = _m(v["model"]), _g(v["gpu"]), v["n"]
    eff = COURSE.bandwidth_efficiency
    peak = "fp8" if v["precision"] == "fp8" and g.fp8_flops is not None else "bf16"
    t_max = (1 / Q_(v["speed"], "1/s")).to("ms")
    bw = n * eff * g.bandwidth
    fixed = _course_extras(m.name, g.name, n, tokens=0)  # the overhead and the collectives' latency
    per_seq = _course_extras(m.name, g.name, n, tokens=1) - fixed  # one sequence's activations more
    room = t_max - fixed - m.params * _b(v["precision"]) / bw
    b = math.floor((room / (_kv_tok(m) * v["context"] / bw + per_seq)).to("").m)
    bytes_per_weight = lc.PRECISIONS[v["precision"]]

    def step(b):
        return _dec_time(m.name, g.name, v["context"], eff, bytes_per_weight, b, n, peak) + _course_extras(
            m.name, g.name, n, b
        )

    while b > 0 and step(b) > t_max:
        b -= 1
    while step(b + 1) <= t_max:  # the engines' kernel changes with the message: the closed form may land short
        b += 1
    return b


solution("decode_ex7")(lambda v: v["n"] * _g(v["gpu"]).bandwidth / lc.weight_bytes(v["model"]))


# --- prefill ----------------------------------------------------------------------------------------------------
def _pre_flops(model, prompt, attention=True):
    m = _m(model)
    kw = dict(flops_per_param=TWO_FLOP, params=m.active_params, prompt_tokens=prompt)
    if not attention:
        return F["prefill_flops_linear"](**kw)
    return F["prefill_flops"](**kw, layers=m.layers, heads=m.heads, head_dim=m.head_dim)


def _pre_time(model, gpu, prompt, prompts=1, a=COURSE):
    # BF16 weights: the prefill's FLOPs (with the attention term) at the BF16 peak, or one read of the weights
    g = _g(gpu)
    comp = prompts * _pre_flops(model, prompt) / (a.compute_efficiency * g.peak_flops("bf16"))
    return max(comp.to("s"), (lc.weight_bytes(model) / (a.bandwidth_efficiency * g.bandwidth)).to("s"))


solution("prefill_ex1")(
    lambda v: (
        v["share"]
        / 100
        * _m(v["model"]).params
        / (_m(v["model"]).layers * _m(v["model"]).heads * _m(v["model"]).head_dim)
    )
)


@solution("prefill_ex2")
def _ttft(v):
    g = _g(v["gpu"])
    # the back-of-the-envelope method's prefill (no attention term, the datasheet bandwidth), with FP8 compute
    comp = _pre_flops(v["model"], v["prompt"], attention=False) / (
        v["n"] * ENVELOPE.compute_efficiency * g.peak_flops("fp8")
    )
    mem = lc.weight_bytes(v["model"], v["precision"]) / (v["n"] * ENVELOPE.bandwidth_efficiency * g.bandwidth)
    return max(comp.to("s"), mem.to("s"))


_PREFILL_WEIGHTS = {"BF16": 2, "INT4 weights, BF16 compute": 0.5}  # prefill_ex3: bytes per weight
solution("prefill_ex3")(
    lambda v: (
        Q_(_PREFILL_WEIGHTS[v["precision"]], "B")
        / (COURSE.bandwidth_efficiency * _g(v["gpu"]).bandwidth)
        / (TWO_FLOP / (COURSE.compute_efficiency * _g(v["gpu"]).peak_flops("bf16")))
    ).to("")
)
solution("prefill_ex4")(
    lambda v: math.ceil(
        (
            Q_(v["rate"] * (1 - v["hit_pct"] / 100), "1/s")
            * TWO_FLOP
            * _m(v["model"]).params
            / (COURSE.compute_efficiency * _g(v["gpu"]).flops)
        )
        .to("")
        .m
    )
)
solution("prefill_ex5")(lambda v: _pre_time(v["model"], v["gpu"], v["prompt"]) * (v["users"] + 1) / 2)
solution("prefill_ex6")(lambda v: _pre_time(v["model"], v["gpu"], v["prompt"]))
solution("prefill_ex7")(
    lambda v: math.ceil(
        (
            Q_(v["rate"], "1/s")
            * TWO_FLOP
            * _m(v["model"]).active_params
            / (CAPACITY.compute_efficiency * _g(v["gpu"]).flops)
        )
        .to("")
        .m
    )
)


# --- MoE -----------------------------------------------------------------------------------------------------------
def _touched(model, batch):
    m = _m(model)
    return 1 - (1 - m.experts_per_token / m.experts) ** batch


def _read(model, batch):
    m = _m(model)
    return Q_(2, "B") * ((m.params - m.expert_params) + m.expert_params * _touched(model, batch))


def _any_step(model, gpu, batch, context, a=COURSE):
    # a BF16 decode step under the efficiencies of ``a`` (the course's, or the lab's)
    m, g = _m(model), _g(gpu)
    weights = _read(model, batch) if m.is_moe else m.params * Q_(2, "B")
    mem = (weights + batch * _kv_tok(m) * context) / (a.bandwidth_efficiency * g.bandwidth)
    comp = batch * TWO_FLOP * m.active_params / (a.compute_efficiency * g.peak_flops("bf16"))
    return max(mem.to("ms"), comp.to("ms"))


solution("moe_ex1")(lambda v: 1 - (1 - 1 / v["experts"]) ** (v["k"] * v["batch"]))
solution("moe_ex2")(lambda v: _touched(v["model"], v["batch"]))


@solution("moe_ex3")
def _moe_skewed(v):
    # hot: k x share / hot picks per token each; cold: k x (1 - share) / (E - hot); miss chance (1 - p)^B
    e, k, h, share = _m(v["model"]).experts, _m(v["model"]).experts_per_token, v["hot"], v["hot_percent"] / 100
    p_hot, p_cold = k * share / h, k * (1 - share) / (e - h)
    return (h * (1 - (1 - p_hot) ** v["batch"]) + (e - h) * (1 - (1 - p_cold) ** v["batch"])) / e


@solution("moe_ex5")
def _moe_against_dense(v):
    # each step by hand, plus the course's fixed step overhead and each model's layers' floor (one GPU: no
    # collectives)
    moe = _any_step(v["model"], v["gpu"], v["batch"], v["context"]) + _course_extras(v["model"], v["gpu"])
    return moe / (_any_step(v["dense"], v["gpu"], v["batch"], v["context"]) + _course_extras(v["dense"], v["gpu"]))


solution("moe_ex6")(lambda v: _touched(v["model"], v["batch"]))
solution("moe_ex7")(lambda v: _m(v["model"]).params * Q_(lc.PRECISIONS[v["precision"].lower()], "B"))
solution("moe_ex8")(lambda v: _read(v["model"], 1) * lc.PRECISIONS[v["precision"].lower()] / 2)  # _read: BF16
solution("moe_ex9")(
    lambda v: _any_step(v["model"], v["gpu"], v["batch"], v["context"]) + _course_extras(v["model"], v["gpu"])
)


# --- batching ----------------------------------------------------------------------------------------------------
def _lab_step(v, batch):
    return _any_step(v["model"], v["gpu"], batch, v["prompt"] + v["answer"] / 2, LAB)


def _lab_prefill(v, batch):
    return _pre_time(v["model"], v["gpu"], v["prompt"], prompts=batch, a=LAB)


def _lab_cost(v, batch):
    cycle = _lab_prefill(v, batch) + v["answer"] * _lab_step(v, batch)
    return (Q_(v["price"], "USD/hour") * cycle / (batch * v["answer"]) * 1e6).to("USD")


solution("batching_ex2")(
    lambda v: (
        TWO_FLOP
        * _m(v["model"]).params
        / (COURSE.compute_efficiency * _g(v["gpu"]).peak_flops("bf16"))
        / (_kv_tok(v["model"]) / (COURSE.bandwidth_efficiency * _g(v["gpu"]).bandwidth))
    ).to("")
)


@solution("batching_ex3")
def _kv_vs_compute(v):
    g = _g(v["gpu"])
    kv_read = _kv_tok(v["model"]) * (v["prompt"] + v["answer"] / 2) / (COURSE.bandwidth_efficiency * g.bandwidth)
    compute = TWO_FLOP * _m(v["model"]).params / (COURSE.compute_efficiency * g.peak_flops("bf16"))
    return (kv_read / compute).to("")


@solution("batching_ex4")
def _share(v):
    pre = _lab_prefill(v, v["batch"])
    return (pre / (pre + v["answer"] * _lab_step(v, v["batch"]))).to("")


@solution("batching_ex5")
def _static_batch(v):
    n, big_n = v["batch"], v["longest"]
    e_max = sum(1 - ((m - 1) / big_n) ** n for m in range(1, big_n + 1))  # P(max >= m), summed
    return (big_n + 1) / 2 / e_max


@solution("batching_ex6")
def _batch_at_speed(v):
    # memory side in closed form, then step down while the slower of the two misses the target; every step also
    # costs the course's fixed overhead (one GPU: no all-reduces)
    m, g = _m(v["model"]), _g(v["gpu"])
    overhead = _course_extras(v["model"], v["gpu"])
    t_max = 1 / Q_(v["speed"], "1/s") - overhead
    kv_seq = _kv_tok(m) * v["context"]
    if m.is_moe:  # the experts read depend on the batch: start from all of them being read
        b = math.floor(((t_max * COURSE.bandwidth_efficiency * g.bandwidth - _read(v["model"], 1)) / kv_seq).to("").m)
    else:
        b = math.floor(((t_max * COURSE.bandwidth_efficiency * g.bandwidth - m.params * Q_(2, "B")) / kv_seq).to("").m)
    while b > 0 and _any_step(v["model"], v["gpu"], b, v["context"]) > t_max:
        b -= 1
    return b


solution("batching_ex7")(lambda v: _lab_step(v, v["batch"]))
solution("batching_ex8")(lambda v: v["batch"] / _lab_step(v, v["batch"]))
solution("batching_ex9")(lambda v: _lab_cost(v, 1))
solution("batching_ex10")(lambda v: _lab_cost(v, v["batch"]))


# --- fleet -----------------------------------------------------------------------------------------------------------
def _fleet_step(v):
    # the capacity-planning method: every conversation's whole KV cache and the weights at its bandwidth share
    m, g = _m(v["model"]), _g(v["gpu"])
    total = m.params * _b(v["precision"]) + v["batch"] * _kv_tok(m) * v["context"]
    return total / (v["tp"] * CAPACITY.bandwidth_efficiency * g.bandwidth)


def _replicas(v):
    usable = (1 - v["headroom_pct"] / 100) * v["batch"] / _fleet_step(v)
    return math.ceil((Q_(v["demand"], "1/s") / usable).to("").m)


solution("fleet_ex1")(lambda v: _replicas(v) * v["tp"])
solution("fleet_ex2")(lambda v: _replicas(v) * v["tp"])
solution("fleet_ex3")(lambda v: math.ceil(v["demand"] / v["per_gpu"]))
solution("fleet_ex4")(
    lambda v: (
        _replicas(v)
        * v["tp"]
        * _g(v["gpu"]).price_per_hour
        * Q_(730, "hour")
        / (Q_(v["demand"], "1/s") * v["util_pct"] / 100 * Q_(730, "hour"))
        * 1e6
    ).to("USD")
)
solution("fleet_ex5")(lambda v: _m(v["model"]).params * _b(v["precision"]) / Q_(v["rate"], "GB/s"))
solution("fleet_ex6")(lambda v: v["requests"] * v["context"] * _kv_tok(v["model"]))
solution("fleet_ex7")(_fleet_step)
solution("fleet_ex8")(_replicas)
solution("fleet_ex9")(lambda v: _replicas(v) * v["tp"] * _g(v["gpu"]).price_per_hour * Q_(730, "hour"))
solution("fleet_ex10")(lambda v: v["rate"] * v["time"])


# the whole bill, by hand with the course's power model (its shares of the rated power, as the stories state them)
def _bill_site_power(v):
    tdp, idle, load = _g(v["gpu"]).power, COURSE.gpu_idle_power_fraction, COURSE.gpu_load_power_fraction
    draw = tdp * (idle + (load - idle) * v["util_pct"] / 100)
    return (draw + COURSE.host_power_fraction * tdp) * v["pue"]


def _time_per_million(v):
    # the replica averages tokens x utilisation per second, and draws its site power all that time
    return Q_(1e6 / (v["tokens"] * v["util_pct"] / 100), "s")


solution("fleet_ex11")(
    lambda v: (v["n"] * _bill_site_power(v) * _time_per_million(v) * Q_(v["cents"] / 100, "USD/kWh")).to("USD")
)


@solution("fleet_ex12")
def _bill_owning(v):
    hw = lc.hardware_prices[v["gpu"]]
    hardware = (hw.gpu_price + hw.server_price) / Q_(v["years"] * 8_760, "hour")
    electricity = _bill_site_power(v) * Q_(v["cents"] / 100, "USD/kWh")
    return (v["n"] * (hardware + electricity) * _time_per_million(v)).to("USD")


solution("fleet_ex13")(
    lambda v: (v["n"] * _g(v["gpu"]).price_per_hour / Q_(v["tokens"], "1/s") / (Q_(v["api"], "USD") / 1e6)).to("")
)


# --- queueing ------------------------------------------------------------------------------------------------------------
def _replica_rps(model, gpu, prompt, answer):
    # the course's replica under vLLM: the batch admitted on the KV blocks in use (B conversations hold on average
    # B x (prompt + answer/2) tokens of KV, spread answer x sqrt(B/12); the mean plus 2 spreads must fit, at most 256
    # and never fewer than fit at their final length), then the engine's steps: each decodes B tokens; a new prompt
    # goes whole into one step (the story's prompts fit beside the decode tokens) and the other steps decode alone,
    # B prompts over an answer's steps: a share min(1, B / answer) of the steps carry one (formula prompt_step_share),
    # the mean step that share of the step with a prompt and the rest of the step alone (formula chunked_mean_step;
    # a share of 1: every step carries B x prompt / answer prompt tokens). Each step: the weights read once, the
    # running requests' KV read at the average context against the prompt tokens' causal attention
    # (2 x layers x heads x head dim x prompt FLOPs each on average), plus the fixed overhead (one GPU: no
    # collectives). B tokens a step.
    m, g = _m(model), _g(gpu)
    kv = _kv_tok(m).to("B").m
    free = (_usable(gpu) - m.params * Q_(2, "B")).to("B").m

    def held(b):
        return min(b * kv * (prompt + answer), b * kv * (prompt + answer / 2) + 2 * kv * answer * math.sqrt(b / 12))

    batch = min(256, max(b for b in range(1, 2_000) if held(b) <= free))
    assert batch + batch * prompt / answer <= 8_192 and prompt <= 8_192 - batch  # the budget does not bind
    bw = COURSE.bandwidth_efficiency * g.bandwidth.to("B/s").m
    flops = COURSE.compute_efficiency * g.peak_flops("bf16").to("FLOP/s").m

    def step(chunk):  # seconds of a step of the batch's decode tokens and `chunk` prompt tokens
        matmuls = max(m.params * 2 / bw, (batch + chunk) * 2 * m.params / flops)
        attention = max(
            batch * kv * (prompt + answer / 2) / bw, chunk * 2 * m.layers * m.heads * m.head_dim * prompt / flops
        )
        return matmuls + attention + COURSE.step_overhead_ms / 1e3 + _floor_ms(model).to("s").m

    share = min(1.0, batch / answer)
    mean = step(batch * prompt / answer) if share >= 1 else share * step(prompt) + (1 - share) * step(0)
    return Q_(batch / (mean * answer), "1/s")


solution("queueing_ex3")(lambda v: _replica_rps(v["model"], v["gpu"], v["prompt"], v["answer"]))
solution("queueing_ex4")(
    lambda v: (
        v["load"]
        * _replica_rps(v["model"], v["gpu"], v["prompt"], v["answer"])
        / _replica_rps(v["model"], v["other"], v["prompt"], v["answer"])
    )
)


@solution("queueing_ex13")
def _chunks_alone(v):
    # each iteration: the slower of its chunk's compute (at the whole prompt's compute per token) and a weight read,
    # plus the engine's fixed cost of a step (the course's 1 ms: an iteration is an engine step like any other)
    per_token = lc.prefill(v["model"], v["gpu"], v["prompt"]).compute_time / v["prompt"]
    read = lc.prefill(v["model"], v["gpu"], 1).memory_time
    full, last = divmod(v["prompt"], v["chunk"])
    sizes = [v["chunk"]] * full + ([last] if last else [])
    step = Q_(lc.resolve("course").step_overhead_ms, "ms") + _floor_ms(v["model"])  # and the layers' floor
    return sum((max((c * per_token).to("ms"), read.to("ms")) + step for c in sizes), Q_(0, "ms"))


@solution("queueing_ex14")
def _fit_prefix(v):
    m = _m(v["model"])
    kv_tokens = math.floor(((_usable(v["gpu"]) - m.params * Q_(2, "B")) / _kv_tok(m)).to("").m)
    return (kv_tokens - v["prefix"]) // (v["prompt"] - v["prefix"] + v["answer"])


solution("queueing_ex15")(lambda v: math.ceil(v["prompt"] / (v["chunk"] - v["running"])))
solution("queueing_ex7")(lambda v: v["lam"] / v["mu"])
solution("queueing_ex8")(lambda v: 1 / Q_(v["mu"] - v["lam"], "1/s"))
solution("queueing_ex9")(lambda v: v["lam"] / (v["mu"] - v["lam"]))
solution("queueing_ex10")(lambda v: 1 / (1 - v["lam"] / v["mu"]))
solution("queueing_ex11")(lambda v: Q_(v["mu"], "1/s") - 1 / Q_(v["target"], "s"))
solution("queueing_ex12")(lambda v: v["inflight"] / Q_(v["rate"], "1/s"))


# --- disaggregation ------------------------------------------------------------------------------------------------
def _sakasegawa(v):
    # M/D/c: rho^(sqrt(2(c+1)) - 1) / (c (1 - rho)) x (1 + 0) / 2 x t (Poisson arrivals, a fixed prefill)
    c, rho = v["servers"], v["rho"]
    return rho ** (math.sqrt(2 * (c + 1)) - 1) / (c * (1 - rho)) * Q_(v["prefill_ms"], "ms") / 2


def _handoff(v):
    m, lk = _m(v["model"]), lc.links[v["link"]]
    kv = 2 * m.layers * m.kv_heads * m.head_dim * Q_(2, "B") * v["prompt"]  # keys and values, BF16
    return lk.base + lk.latency + kv / (v["lanes"] * lk.bandwidth * COURSE.link_efficiency)


solution("disaggregation_ex1")(_handoff)
solution("disaggregation_ex2")(lambda v: v["rate"] * v["prefill_ms"] / 1e3 / v["servers"])
solution("disaggregation_ex3")(_sakasegawa)
solution("disaggregation_ex4")(lambda v: Q_(v["overhead"] + v["prefill_ms"] + v["handoff_ms"], "ms") + _sakasegawa(v))
solution("disaggregation_ex5")(lambda v: math.ceil(v["rate"] * COURSE.headroom * v["prefill_ms"] / 1e3 - 1e-9))
solution("disaggregation_ex6")(
    lambda v: math.ceil(v["rate"] * COURSE.headroom * v["answer"] * v["step_ms"] / 1e3 / v["batch"] - 1e-9)
)


# --- design review: the document assistant ---------------------------------------------------------------
def _docs(v, tpot=None, gpu="H100 SXM", tp=2, **kw):
    brief = lc.Brief(Q_(v["rps"], "1/s"), v["prompt"], v["answer"], Q_(v["ttft"], "ms"), Q_(tpot or v["tpot"], "ms"))
    return lc.plan("Llama-3.1-70B", gpu, brief, weight_bytes="fp8", tensor_parallel=tp, **kw)


solution("design_review_ex1")(lambda v: _docs(v, gpu="H200 SXM", tp=1, price_per_hour=Q_(v["price"], "USD/hour")).gpus)
solution("design_review_ex2")(lambda v: _docs(v, tpot=v["tight"]).gpus)


@solution("design_review_ex3")
def _dr_prefix(v):
    # Llama 3.1 70B in FP8 (KV in BF16) on two H100s under vLLM (8,192 tokens a step). The batch is admitted on the
    # full prompt's KV (the cached prefix is held), then the plan's search: the largest admitted batch whose time per
    # token meets the per-token target. Every step decodes B tokens; a new prompt's uncached part goes whole into one
    # step (it fits beside the decode tokens), attending to its whole prompt (the causal term at the prompt's end less
    # that at the cached prefix's) and reading the cached prefix's KV once; the other steps decode alone. A user's
    # steps see the other B - 1 requests' prompts, a share (B - 1) / answer (formula prompt_step_share); the
    # replica's all B of them; the mean step is that share of the step with a prompt and the rest of the step alone
    # (formula chunked_mean_step; a share of 1: every step carries B x new / answer tokens). Each step: the requests'
    # KV read at the average context; the FP8 weights read once; 1 ms, the layers' floor and the all-reduces of the
    # step's tokens.
    m, g = _m("Llama-3.1-70B"), _g("H100 SXM")
    prompt, answer = v["prompt"], v["answer"]
    cached = prompt * v["hit_pct"] / 100
    new = prompt - cached
    kv, weights = _kv_tok(m).to("B").m, m.params * 1.0
    most = min(1_024, _admitted((_usable("H100 SXM", 2) - Q_(weights, "B")).to("B").m, kv, prompt, answer))
    bw = 2 * COURSE.bandwidth_efficiency * g.bandwidth.to("B/s").m
    fp8 = 2 * COURSE.compute_efficiency * g.peak_flops("fp8").to("FLOP/s").m
    causal = 2 * m.layers * m.heads * m.head_dim

    def step(b, chunk):  # seconds of a step of b decode tokens and `chunk` of the prompts' new tokens
        assert b + b * new / answer <= 8_192 and new <= 8_192 - b  # the budget does not bind; one chunk a prompt
        matmuls = max(weights / bw, (b + chunk) * 2 * m.params / fp8)
        reads = b * kv * (prompt + answer / 2) + chunk / new * kv * cached
        attention = max(reads / bw, chunk * causal * (prompt**2 - cached**2) / new / fp8)
        allreduces = 2 * m.layers * _course_allreduce(g.link, 2, (b + chunk) * m.hidden * 2)
        return matmuls + attention + COURSE.step_overhead_ms / 1e3 + _floor_ms(m.name).to("s").m + allreduces

    def mean(b, prompts):  # the mean step of a batch of b when `prompts` prompts come in over an answer
        share = min(1.0, prompts / answer)
        if b / answer >= 1:  # prompts in every step: each carries an even share of them
            return step(b, b * new / answer)
        return share * step(b, new) + (1 - share) * step(b, 0)

    ok = [b for b in range(1, most + 1) if mean(b, b - 1) * 1e3 <= v["tpot"]]
    b = max(ok) if ok else 1
    per_replica = b / (answer * mean(b, b))  # requests per second: b tokens a step
    return math.ceil(v["rps"] * COURSE.headroom / per_replica) * 2


# --- design review ---------------------------------------------------------------------------------------------------------
def _review(v):
    brief = lc.Brief(Q_(v["rps"], "1/s"), v["prompt"], v["answer"], Q_(v["ttft"] / 1000, "s"), Q_(v["tpot"], "ms"))
    return lc.plan(lc.models[v["model"]], lc.gpus[v["gpu"]], brief)


solution("design_review_ex7")(lambda v: _kv_tok(v["model"]) * (v["prompt"] + v["answer"]))


def _admitted(free, kv, prompt, answer):
    """The batch vLLM admits on the KV blocks in use: B staggered conversations hold B x kv x (prompt + answer/2) on
    average (each its prompt and a uniform share of its answer) with a spread kv x answer x sqrt(B/12); the largest
    B whose mean plus 2 spreads (never more than all at their final length) fits in ``free`` bytes."""

    def held(b):
        return min(b * kv * (prompt + answer), b * kv * (prompt + answer / 2) + 2 * kv * answer * math.sqrt(b / 12))

    b = 0
    while held(b + 1) <= free:
        b += 1
    return b


@solution("design_review_ex8")
def _dr_admitted(v):
    # BF16 weights on one GPU; no more than vLLM's cap on running requests, which the story states (the engine's
    # defaults: 1,024 on a GPU of 70 GiB or more that is not an A100, else 256)
    free = (_usable(v["gpu"]) - lc.weight_bytes(v["model"])).to("B").m
    big = _g(v["gpu"]).memory.to("GiB").m >= 70 and not v["gpu"].startswith("A100")
    return min(1_024 if big else 256, _admitted(free, _kv_tok(v["model"]).to("B").m, v["prompt"], v["answer"]))


@solution("design_review_ex9")
def _dr_ttft(v):
    # the course's fixed time per request, then the engine steps that carry the new prompt beside the plan's other
    # B - 1 requests' decode tokens (B is the story's given: the plan's batch). A step leaves budget - (B - 1) tokens
    # for the prompt (vLLM: 8,192 on a GPU of 70 GiB or more that is not an A100, else 2,048); each chunk attends to
    # the prompt up to its end (the causal term 2 x layers x heads x head dim x t^2 at its end less at its start) and
    # reads its earlier tokens' KV; the running requests' KV is read at the average context. BF16 on one GPU.
    m, g = _m(v["model"]), _g(v["gpu"])
    p, others = v["prompt"], _review(v).batch - 1
    big = g.memory.to("GiB").m >= 70 and not v["gpu"].startswith("A100")
    room = (8_192 if big else 2_048) - others
    kv, w = _kv_tok(m).to("B").m, lc.weight_bytes(m).to("B").m
    bw = COURSE.bandwidth_efficiency * g.bandwidth.to("B/s").m
    flops = COURSE.compute_efficiency * g.peak_flops("bf16").to("FLOP/s").m
    causal = 2 * m.layers * m.heads * m.head_dim
    total, start = COURSE.request_overhead_ms / 1e3, 0
    while start < p:
        k = min(room, p - start)
        matmuls = max(w / bw, (others + k) * 2 * m.params / flops)
        reads = (others * kv * (p + v["answer"] / 2) + kv * start) / bw
        attention = max(reads, causal * ((start + k) ** 2 - start**2) / flops)
        total += matmuls + attention + COURSE.step_overhead_ms / 1e3 + _floor_ms(m.name).to("s").m
        start += k
    return Q_(total, "s").to("ms")


solution("design_review_ex10")(lambda v: _review(v).gpus)


@solution("design_review_ex11")
def _dr_inflight(v):
    p = _review(v)
    return v["rps"] * (p.ttft + v["answer"] * p.tpot).to("s").m


@solution("design_review_ex12")
def _dr_cost(v):
    p = _review(v)
    per_hour = p.gpus * _g(v["gpu"]).price_per_hour
    tokens_per_hour = Q_(v["rps"], "1/s") * v["answer"]
    return (per_hour / tokens_per_hour * 1e6).to("USD")


@solution("design_review_ex13")
def _dr_cost_req(v):
    p = _review(v)
    return (p.gpus * _g(v["gpu"]).price_per_hour / Q_(v["rps"], "1/s") * 1000).to("USD")


# --- speculative decoding ----------------------------------------------------------------------------------------
def _spec_tau(alpha, k):
    """1 + alpha + ... + alpha^k: the accepted prefix plus the target's own token."""
    return sum(alpha**i for i in range(k + 1))


def _spec_draft(target, kind, draft):
    """The draft's catalog entry: a model of the catalog, or the EAGLE head of the target in the data."""
    from llmcourse.catalog.drafts import drafts

    if kind == "draft model":
        return _m(draft)
    return drafts()[f"EAGLE-3 {target}"] if kind == "eagle head" else None


def _spec_times(gpu, n, precision):
    """Seconds per byte and per FLOP on n GPUs at the course's shares of the peaks, as plain floats."""
    g = _g(gpu)
    per_byte = 1 / (n * COURSE.bandwidth_efficiency * g.bandwidth.to("B/s").m)
    per_flop = 1 / (n * COURSE.compute_efficiency * g.peak_flops(precision).to("FLOP/s").m)
    return per_byte, per_flop


def _spec_allreduces(layers, n, gpu, tokens, hidden):
    """Two all-reduces per layer of the step's tokens' activations on the GPU's link (the engines' kernels; none on
    one GPU), s."""
    if n == 1:
        return 0.0
    return 2 * layers * _course_allreduce(_g(gpu).link, n, tokens * hidden * COURSE.activation_bytes)


def _spec_overhead_ms(kind):
    """The course's fixed time (ms) of a draft step, run inside the verification's engine step (the 1 ms is paid once
    per cycle): a separate draft model's, or an EAGLE head's / an MTP block's."""
    return COURSE.draft_model_step_overhead_ms if kind == "draft model" else COURSE.draft_step_overhead_ms


def _spec_dense(model, gpu, n, bytes_per_weight, precision, overhead_ms=None):
    """A dense model's decode step on n GPUs: time(batch, positions per sequence, context), the slower of its bytes
    (weights once, the batch's caches) and its FLOPs (2 per parameter per position), plus a fixed time (the course's
    overhead of a step, or ``overhead_ms`` for a draft step), its layers' floor (23 us each) and the all-reduces of
    every position's activations."""
    m = model if not isinstance(model, str) else _m(model)
    per_byte, per_flop = _spec_times(gpu, n, precision)
    weights, kv = m.params * bytes_per_weight, _kv_tok(m).to("B").m
    overhead = (COURSE.step_overhead_ms if overhead_ms is None else overhead_ms) / 1e3
    overhead += m.layers * COURSE.layer_floor_us * 1e-6

    def time(batch, positions, context):
        core = max((weights + batch * kv * context) * per_byte, batch * positions * 2 * m.params * per_flop)
        return core + overhead + _spec_allreduces(m.layers, n, gpu, batch * positions, m.hidden)

    return time


def _spec_speedup(v, batch=1, k=None):
    """tau x plain step / (verification + k draft steps), for the 70B pairs of the exercises (FP8 weights)."""
    k = v["k"] if k is None else k
    target = _spec_dense(v["target"], v["gpu"], v["tp"], 1, "fp8")
    d = _spec_draft(v["target"], v["kind"], v["draft"])
    draft = _spec_dense(d, v["gpu"], v["tp"], 1, "fp8", _spec_overhead_ms(v["kind"]))
    plain, ctx = target(batch, 1, v["context"]), v["context"]
    return _spec_tau(v["alpha"], k) * plain / (target(batch, k + 1, ctx) + k * draft(batch, 1, ctx))


solution("speculative_ex1")(lambda v: _spec_tau(v["alpha"], v["k"]))
solution("speculative_ex2")(_spec_speedup)
solution("speculative_ex3")(lambda v: max(_spec_speedup(v, k=k) for k in range(1, 17)))  # the best k's speed-up


@solution("speculative_ex4")
def _spec_crossover(v):
    target = _spec_dense("Llama-3.1-8B", v["gpu"], 1, 2, "bf16")
    head = _spec_draft("Llama-3.1-8B", v["kind"], None)
    over = _spec_overhead_ms(v["kind"])
    draft = _spec_dense(head, v["gpu"], 1, 2, "bf16", over) if head is not None else (lambda *_: 0.0)
    k, ctx, tau = v["k"], v["context"], _spec_tau(v["alpha"], v["k"])
    batch = 1
    while tau * target(batch, 1, ctx) >= target(batch, k + 1, ctx) + k * draft(batch, 1, ctx):
        batch += 1
    return batch


@solution("speculative_ex5")
def _spec_memory(v):
    d = _spec_draft(v["target"], v["kind"], v["draft"])
    return (d.params * Q_(1, "B") + v["batch"] * _kv_tok(d) * (v["context"] + v["k"])).to("GB")


@solution("speculative_ex6")
def _spec_mtp(v):
    from llmcourse.catalog.drafts import drafts

    m, mtp = _m("DeepSeek-V3"), drafts()["DeepSeek-V3 MTP"]
    per_byte, per_flop = _spec_times("H200 SXM", 8, "fp8")
    # MLA's latent, 2 bytes a value; every one of the 8 GPUs keeps (and reads) the whole of it
    kv = 8 * F["kv_bytes_per_token_mla"](layers=m.layers, kv_lora_rank=512, rope_dim=64, kv_bytes=Q_(2, "B")).m
    kv_mtp = kv / m.layers  # one MLA layer

    def read(model, tokens):  # FP8 weights: the shared part, and the experts the tokens touch
        touched = 1 - (1 - model.experts_per_token / model.experts) ** tokens
        return (model.params - model.expert_params) + model.expert_params * touched

    b, ctx = v["batch"], v["context"]
    # + the fixed overhead (the verification's 1 ms, the MTP step's launch), + an all-reduce after every layer's
    # attention and MoE over 8 GPUs
    fixed = COURSE.step_overhead_ms / 1e3 + m.layers * COURSE.layer_floor_us * 1e-6  # and the 61 layers' floor
    verify = max((read(m, 2 * b) + b * kv * ctx) * per_byte, 2 * b * 2 * m.active_params * per_flop)
    verify += fixed + _spec_allreduces(m.layers, 8, "H200 SXM", 2 * b, m.hidden)
    draft = max((read(mtp, b) + b * kv_mtp * ctx) * per_byte, b * 2 * mtp.active_params * per_flop)
    draft += _spec_overhead_ms("mtp") / 1e3 + mtp.layers * COURSE.layer_floor_us * 1e-6  # its one layer's floor
    draft += _spec_allreduces(mtp.layers, 8, "H200 SXM", b, mtp.hidden)
    return Q_((1 + v["alpha"]) / (verify + draft), "1/s")


@solution("speculative_ex8")
def _spec_alpha(v):
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _spec_tau(mid, v["k"]) < v["length"] else (lo, mid)
    return lo


# --- many GPUs -----------------------------------------------------------------------------------------------------
def _link(name, n=0):
    """(bandwidth in B/s, latency per ring step in s, fixed cost per collective in s) of a catalog link for a group
    of ``n`` GPUs: on a fully connected board (Infinity Fabric, Gaudi 3's ports) a group smaller than the board has
    n - 1 of each GPU's domain - 1 links, the bandwidth times (n - 1) / (domain - 1)."""
    lk = lc.links[name]
    bw = lk.bandwidth.to("B/s").m
    if lk.mesh and 1 < n < lk.domain:
        bw = bw * (n - 1) / (lk.domain - 1)
    return bw, lk.latency.to("s").m, lk.base.to("s").m


def _ring_allreduce(link, n, message_bytes):
    """t0 + 2(N - 1) alpha + 2(N - 1)/N x bytes / (eta x bandwidth), in seconds."""
    bw, alpha, t0 = _link(link, n)
    steps = 2 * (n - 1)
    return t0 + steps * alpha + steps / n * message_bytes / (COURSE.link_efficiency * bw)


def _engine_allreduce(link, n, message_bytes):
    """The engines' all-reduce on a link whose GPUs read each other's memory (NVLink): the least of the ring, the
    one-shot (t0,e + alpha + (N - 1) x bytes / (eta x bandwidth)) and the two-shot (2 (t0,e + alpha) + 2(N - 1)/N x
    bytes / (eta x bandwidth)), t0,e the course's 3.5 us kernel cost; in seconds."""
    bw, alpha, _ = _link(link, n)
    t0e, eta = COURSE.engine_allreduce_us * 1e-6, COURSE.link_efficiency
    one = t0e + alpha + (n - 1) * message_bytes / (eta * bw)
    two = 2 * (t0e + alpha) + 2 * (n - 1) / n * message_bytes / (eta * bw)
    return min(_ring_allreduce(link, n, message_bytes), one, two)


@solution("many_gpus_ex1")
def _mg_allreduce(v):
    message = v["batch"] * v["hidden"] * COURSE.activation_bytes
    return Q_(2 * v["layers"] * _ring_allreduce(v["link"], v["n"], message), "s").to("ms")


@solution("many_gpus_ex2")
def _mg_kv(v):
    m = _m(v["model"])
    if m.attention == "MLA":  # the latent and the RoPE key, per layer, stored whole on every GPU
        per_token = m.layers * (m.kv_lora_rank + m.qk_rope_head_dim) * 2
        copies = v["n"]
    else:
        per_token = _kv_tok(m).to("B").m
        copies = max(1, v["n"] / m.kv_heads)
    return Q_(per_token * v["context"] * v["seqs"] * copies / v["n"], "B").to("GB")


solution("many_gpus_ex3")(lambda v: (v["stages"] - 1) / (v["micro"] + v["stages"] - 1))


@solution("many_gpus_ex4")
def _mg_ep(v):
    per_copy = v["hidden"] * v["act"]  # one token's activations to one expert
    leaving = v["k"] * (v["ep"] - 1) / v["ep"]  # the copies whose expert is on another GPU
    return Q_(2 * v["moe_layers"] * leaving * per_copy, "B").to("KiB")


def _mg_memory_time(model, gpu, n, weight_bytes, kv_bytes):
    return (weight_bytes + kv_bytes) / (n * COURSE.bandwidth_efficiency * _g(gpu).bandwidth.to("B/s").m)


@solution("many_gpus_ex5")
def _mg_overhead(v):
    m = _m(v["model"])
    weights = m.params * lc.PRECISIONS[v["precision"]]
    memory = _mg_memory_time(m, v["gpu"], 1, weights, _kv_tok(m).to("B").m * v["context"])
    precision = "fp8" if v["precision"] == "fp8" and _g(v["gpu"]).fp8_flops is not None else "bf16"
    compute = 2 * m.params / (COURSE.compute_efficiency * _g(v["gpu"]).peak_flops(precision).to("FLOP/s").m)
    overhead = COURSE.step_overhead_ms / 1e3
    floor = m.layers * COURSE.layer_floor_us * 1e-6  # each layer's kernels' floor, as the story says
    return overhead / (max(memory, compute) + overhead + floor)


@solution("many_gpus_ex6")
def _mg_tpot(v):
    # vLLM's steps: each decodes every request's token; a new prompt goes whole into one step beside them (the story
    # keeps the budget from binding and each prompt whole in one step, no earlier KV to read), the other steps decode
    # alone, the FP8 weights read once a step. A user's token comes once a step; over its answer each of the other
    # c - 1 requests lets in one prompt, so a share (c - 1) / answer of its steps carry one (formula
    # prompt_step_share) and its time per token is the mean step (formula chunked_mean_step). A prompt token's
    # attention is the causal term of its prompt's FLOPs (2 x layers x heads x head dim x prompt^2) over its tokens.
    m, g, n, c = _m("Llama-3.1-70B"), _g(v["gpu"]), v["n"], v["c"]
    p, a = v["prompt"], v["answer"]
    assert c * (p + a) / a <= v["budget"] and p <= v["budget"] - c  # as the story says
    weights = m.params * 1  # FP8
    bw = n * COURSE.bandwidth_efficiency * g.bandwidth.to("B/s").m
    fp8 = n * COURSE.compute_efficiency * g.peak_flops("fp8").to("FLOP/s").m
    kv = _kv_tok(m).to("B").m * (p + a / 2)  # one request's cache at the average context (n <= 8 KV heads: 1 copy)

    def allreduces(t):  # two per layer, each of the step's tokens' activations, by the engines' faster kernel
        return 0.0 if n == 1 else 2 * m.layers * _engine_allreduce(g.link, n, t * m.hidden * 2)

    def step(chunk):  # seconds of a step of the c decode tokens and `chunk` prompt tokens (0 or a whole prompt)
        tokens = c + chunk
        matmuls = max(weights / bw, tokens * 2 * m.params / fp8)
        attention = max(c * kv / bw, chunk * 2 * m.layers * m.heads * m.head_dim * p / fp8)
        floor = m.layers * COURSE.layer_floor_us * 1e-6  # the 80 layers' floor
        return matmuls + attention + COURSE.step_overhead_ms / 1e3 + floor + allreduces(tokens)

    share = min(1.0, (c - 1) / a)
    return Q_(share * step(p) + (1 - share) * step(0), "s").to("ms")
