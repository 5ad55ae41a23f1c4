"""Reference solutions, written as a student would: catalog look-ups and formulas, step by step.

Kept apart from the student notebooks and from the exercise definitions: each solution works from
the exercise's givens (its variant) with :data:`llmcourse.FORMULAS` and the planner, never with the
exercise's own ``answer`` function. The tests check every solution against :func:`check` for the
book's variant and for random seeds.
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
TWO_FLOP = Q_(2, "FLOP")


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


def _usable(gpu, n=1, frac=0.9):
    return n * _g(gpu).memory * frac


# --- first estimate -----------------------------------------------------------------------------------
def _fe_batch(v):
    free = _usable(v["gpu"], v["n_gpus"]) - _m(v["model"]).params * _b(v["precision"])
    return math.floor((free / (_kv_tok(v["model"]) * v["context"])).to("").m)


def _fe_step(v):
    m, g = _m(v["model"]), _g(v["gpu"])
    batch = _fe_batch(v)
    total = m.params * _b(v["precision"]) + batch * _kv_tok(m) * v["context"]
    memory = total / (v["n_gpus"] * g.bandwidth)
    compute = batch * TWO_FLOP * m.params / (v["n_gpus"] * 0.5 * g.peak_flops("bf16"))
    return max(memory.to("ms"), compute.to("ms"))


solution("first_estimate_ex1")(lambda v: _m(v["model"]).params * _b(v["precision"]))
solution("first_estimate_ex2")(lambda v: _usable(v["gpu"], v["n_gpus"]))
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
solution("weights_ex2")(lambda v: 0.9 * _g(v["gpu"]).memory - _m(v["model"]).params * _b(v["precision"]))
solution("weights_ex3")(lambda v: _usable(v["gpu"], v["n"]))
solution("weights_ex4")(lambda v: math.ceil((_m(v["model"]).params * _b(v["precision"]) / _usable(v["gpu"])).to("").m))
solution("weights_ex5")(lambda v: 0.9 * _g(v["gpu"]).memory - _m(v["model"]).params * _b(v["precision"]))
solution("weights_ex6")(lambda v: (0.9 * _g(v["gpu"]).memory / (v["billions"] * 1e9)).to("B"))

# --- KV cache ----------------------------------------------------------------------------------------------
solution("kv_cache_ex1")(lambda v: _kv_tok(v["model"]))
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
solution("gqa_ex1")(lambda v: _kv_tok(v["model"]))
solution("gqa_ex2")(lambda v: _kv_tok(v["small"]) / _kv_tok(v["large"]))


@solution("gqa_ex3")
def _gqa_fit(v):
    free = 2 * Q_(80, "GB") - v["billions"] * 1e9 * Q_(2, "B")
    per_seq = 2 * v["layers"] * v["kv_heads"] * 128 * Q_(2, "B") * v["context"]
    return math.floor((free / per_seq).to("").m)


solution("gqa_ex4")(lambda v: _kv_tok(v["model"]))
solution("gqa_ex5")(lambda v: v["layers"] * (v["rank"] + v["rope"]) * Q_(2, "B"))


@solution("gqa_ex6")
def _gqa_heads(v):
    m = _m(v["model"])
    budget = (_usable(v["gpu"]) - m.params * Q_(2, "B")) / v["users"]
    most = (budget / (2 * m.layers * m.head_dim * Q_(2, "B") * v["context"])).to("").m
    divisors = [h for h in range(1, m.heads + 1) if m.heads % h == 0 and h <= most]
    return max(divisors, default=0)


solution("gqa_ex7")(lambda v: 2 * _m(v["model"]).layers * 1 * _m(v["model"]).head_dim * Q_(2, "B"))
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
def _dec_time(model, gpu, context, eff, bytes_per_weight=2.0, batch=1, n=1):
    m, g = _m(model), _g(gpu)
    mem = (m.params * Q_(bytes_per_weight, "B") + batch * _kv_tok(m) * context) / (n * eff * g.bandwidth)
    comp = batch * TWO_FLOP * m.params / (n * 0.5 * g.peak_flops("bf16"))
    return max(mem.to("ms"), comp.to("ms"))


solution("decode_ex1")(lambda v: _dec_time(v["model"], v["gpu"], v["context"], v["eff"]))
solution("decode_ex2")(lambda v: _m(v["model"]).params * 2 / (_kv_tok(v["model"]).to("B").m))
solution("decode_ex3")(lambda v: _dec_time(v["model"], v["gpu"], v["context"], v["eff"], 0.5 + 2 / v["group"]))
solution("decode_ex4")(
    lambda v: (Q_(v["target"], "1/s") * _m(v["model"]).params * Q_(2, "B") / Q_(v["bandwidth"], "TB/s")).to("")
)
solution("decode_ex5")(
    lambda v: (
        0.7 * _g(v["gpu"]).bandwidth * TWO_FLOP / (0.5 * _g(v["gpu"]).peak_flops("bf16") * _b(v["precision"]))
    ).to("")
)


@solution("decode_ex6")
def _dec_batch(v):
    # the largest B with step(B) <= 1 / speed; the memory side solved in closed form, then checked for compute
    m, g = _m(v["model"]), _g(v["gpu"])
    t_max = 1 / Q_(v["speed"], "1/s")
    room = t_max * v["n"] * 0.7 * g.bandwidth - m.params * _b(v["precision"])
    b = math.floor((room / (_kv_tok(m) * v["context"])).to("").m)
    while (
        b > 0 and _dec_time(v["model"], v["gpu"], v["context"], 0.7, lc.PRECISIONS[v["precision"]], b, v["n"]) > t_max
    ):
        b -= 1
    return b


solution("decode_ex7")(lambda v: v["n"] * _g(v["gpu"]).bandwidth / lc.weight_bytes(v["model"]))


# --- prefill ----------------------------------------------------------------------------------------------------
def _pre_flops(model, prompt, attention=True):
    m = _m(model)
    kw = dict(flops_per_param=TWO_FLOP, params=m.active_params, prompt_tokens=prompt)
    if not attention:
        return F["prefill_flops_linear"](**kw)
    return F["prefill_flops"](**kw, layers=m.layers, heads=m.heads, head_dim=m.head_dim)


def _pre_time(model, gpu, prompt, prompts=1):
    g = _g(gpu)
    comp = prompts * _pre_flops(model, prompt) / (0.5 * g.peak_flops("bf16"))
    return max(comp.to("s"), (lc.weight_bytes(model) / (0.7 * g.bandwidth)).to("s"))


solution("prefill_ex1")(
    lambda v: _m(v["model"]).params / (_m(v["model"]).layers * _m(v["model"]).heads * _m(v["model"]).head_dim)
)


@solution("prefill_ex2")
def _ttft(v):
    g = _g(v["gpu"])
    comp = _pre_flops(v["model"], v["prompt"], attention=False) / (v["n"] * 0.5 * g.peak_flops("fp8"))
    mem = lc.weight_bytes(v["model"], v["precision"]) / (v["n"] * g.bandwidth)
    return max(comp.to("s"), mem.to("s"))


solution("prefill_ex3")(
    lambda v: (Q_(2, "B") / (0.7 * _g(v["gpu"]).bandwidth) / (TWO_FLOP / (0.5 * _g(v["gpu"]).peak_flops("bf16")))).to(
        ""
    )
)
solution("prefill_ex4")(
    lambda v: math.ceil(
        (
            Q_(v["rate"] * (1 - v["hit_pct"] / 100), "1/s")
            * TWO_FLOP
            * _m(v["model"]).params
            / (0.5 * _g(v["gpu"]).flops)
        )
        .to("")
        .m
    )
)
solution("prefill_ex5")(lambda v: _pre_time(v["model"], v["gpu"], v["prompt"]) * (v["users"] + 1) / 2)
solution("prefill_ex6")(lambda v: _pre_time(v["model"], v["gpu"], v["prompt"]))
solution("prefill_ex7")(
    lambda v: math.ceil(
        (Q_(v["rate"], "1/s") * TWO_FLOP * _m(v["model"]).active_params / (0.5 * _g(v["gpu"]).flops)).to("").m
    )
)


# --- MoE -----------------------------------------------------------------------------------------------------------
def _touched(model, batch):
    m = _m(model)
    return 1 - (1 - m.experts_per_token / m.experts) ** batch


def _read(model, batch):
    m = _m(model)
    return Q_(2, "B") * ((m.params - m.expert_params) + m.expert_params * _touched(model, batch))


def _any_step(model, gpu, batch, context):
    m, g = _m(model), _g(gpu)
    weights = _read(model, batch) if m.is_moe else m.params * Q_(2, "B")
    mem = (weights + batch * _kv_tok(m) * context) / (0.7 * g.bandwidth)
    comp = batch * TWO_FLOP * m.active_params / (0.5 * g.peak_flops("bf16"))
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
def _moe_slower(v):
    b = 1
    while _any_step(v["model"], v["gpu"], b, v["context"]) <= _any_step(v["dense"], v["gpu"], b, v["context"]):
        b += 1
    return b


solution("moe_ex6")(lambda v: _touched(v["model"], v["batch"]))
solution("moe_ex7")(lambda v: _m(v["model"]).params * Q_(2, "B"))
solution("moe_ex8")(lambda v: _read(v["model"], 1))
solution("moe_ex9")(lambda v: _any_step(v["model"], v["gpu"], v["batch"], v["context"]))


# --- batching ----------------------------------------------------------------------------------------------------
def _lab_step(v, batch):
    return _any_step(v["model"], v["gpu"], batch, v["prompt"] + v["answer"] / 2)


def _lab_prefill(v, batch):
    return _pre_time(v["model"], v["gpu"], v["prompt"], prompts=batch)


def _lab_cost(v, batch):
    cycle = _lab_prefill(v, batch) + v["answer"] * _lab_step(v, batch)
    return (Q_(v["price"], "USD/hour") * cycle / (batch * v["answer"]) * 1e6).to("USD")


solution("batching_ex2")(
    lambda v: (
        TWO_FLOP
        * _m(v["model"]).params
        / (0.5 * _g(v["gpu"]).peak_flops("bf16"))
        / (_kv_tok(v["model"]) / (0.7 * _g(v["gpu"]).bandwidth))
    ).to("")
)


@solution("batching_ex3")
def _kv_vs_compute(v):
    g = _g(v["gpu"])
    kv_read = _kv_tok(v["model"]) * (v["prompt"] + v["answer"] / 2) / (0.7 * g.bandwidth)
    compute = TWO_FLOP * _m(v["model"]).params / (0.5 * g.peak_flops("bf16"))
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
    # memory side in closed form, then step down while the slower of the two misses the target
    m, g = _m(v["model"]), _g(v["gpu"])
    t_max = 1 / Q_(v["speed"], "1/s")
    kv_seq = _kv_tok(m) * v["context"]
    if m.is_moe:  # the experts read depend on the batch: start from all of them being read
        b = math.floor(((t_max * 0.7 * g.bandwidth - _read(v["model"], 1)) / kv_seq).to("").m)
    else:
        b = math.floor(((t_max * 0.7 * g.bandwidth - m.params * Q_(2, "B")) / kv_seq).to("").m)
    while b > 0 and _any_step(v["model"], v["gpu"], b, v["context"]) > t_max:
        b -= 1
    return b


solution("batching_ex7")(lambda v: _lab_step(v, v["batch"]))
solution("batching_ex8")(lambda v: v["batch"] / _lab_step(v, v["batch"]))
solution("batching_ex9")(lambda v: _lab_cost(v, 1))
solution("batching_ex10")(lambda v: _lab_cost(v, v["batch"]))


# --- fleet -----------------------------------------------------------------------------------------------------------
def _fleet_step(v):
    m, g = _m(v["model"]), _g(v["gpu"])
    total = m.params * _b(v["precision"]) + v["batch"] * _kv_tok(m) * v["context"]
    return total / (v["tp"] * 0.7 * g.bandwidth)


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


# --- queueing ------------------------------------------------------------------------------------------------------------
def _replica_rps(model, gpu, prompt, answer):
    m, g = _m(model), _g(gpu)
    free = 0.9 * g.memory - m.params * Q_(2, "B")
    batch = min(256, math.floor((free / (_kv_tok(m) * (prompt + answer))).to("").m))
    step = lc.decode_step(model, gpu, batch=batch, context_tokens=prompt + answer / 2).step_time
    pre = lc.prefill(model, gpu, prompt, attention=False).time
    return 1 / (answer * step / batch + pre)


solution("queueing_ex3")(lambda v: _replica_rps(v["model"], v["gpu"], v["prompt"], v["answer"]))
solution("queueing_ex4")(
    lambda v: (
        v["load"]
        * _replica_rps(v["model"], v["gpu"], v["prompt"], v["answer"])
        / _replica_rps(v["model"], v["other"], v["prompt"], v["answer"])
    )
)
solution("queueing_ex7")(lambda v: v["lam"] / v["mu"])
solution("queueing_ex8")(lambda v: 1 / Q_(v["mu"] - v["lam"], "1/s"))
solution("queueing_ex9")(lambda v: v["lam"] / (v["mu"] - v["lam"]))
solution("queueing_ex10")(lambda v: 1 / (1 - v["lam"] / v["mu"]))
solution("queueing_ex11")(lambda v: Q_(v["mu"], "1/s") - 1 / Q_(v["target"], "s"))
solution("queueing_ex12")(lambda v: v["inflight"] / Q_(v["rate"], "1/s"))


# --- design review: the document assistant ---------------------------------------------------------------
def _docs(v, tpot=None, gpu="H100 SXM", tp=2, **kw):
    brief = lc.Brief(Q_(v["rps"], "1/s"), v["prompt"], v["answer"], Q_(v["ttft"], "ms"), Q_(tpot or v["tpot"], "ms"))
    return lc.plan("Llama-3.1-70B", gpu, brief, weight_bytes="fp8", tensor_parallel=tp, **kw)


solution("design_review_ex1")(lambda v: _docs(v, gpu="H200 SXM", tp=1, price_per_hour=Q_(v["price"], "USD/hour")).gpus)
solution("design_review_ex2")(lambda v: _docs(v, tpot=v["tight"]).gpus)


@solution("design_review_ex3")
def _dr_prefix(v):
    full = _docs(v)  # memory, batch and step of the full prompt
    m, g = _m("Llama-3.1-70B"), _g("H100 SXM")
    computed = v["prompt"] * (1 - v["hit_pct"] / 100)
    ttft = max(
        (TWO_FLOP * m.params * computed / (2 * g.peak_flops("bf16"))).to("s"),
        (m.params * Q_(1, "B") / (2 * g.bandwidth)).to("s"),
    )
    per_replica = 1 / (v["answer"] * full.tpot / full.batch + ttft)
    return math.ceil((Q_(v["rps"], "1/s") * 1.3 / per_replica).to("").m) * 2


# --- design review ---------------------------------------------------------------------------------------------------------
def _review(v):
    brief = lc.Brief(Q_(v["rps"], "1/s"), v["prompt"], v["answer"], Q_(v["ttft"] / 1000, "s"), Q_(v["tpot"], "ms"))
    return lc.plan(lc.models[v["model"]], lc.gpus[v["gpu"]], brief)


solution("design_review_ex7")(lambda v: _kv_tok(v["model"]) * (v["prompt"] + v["answer"]))
solution("design_review_ex8")(
    lambda v: math.floor(
        (
            (0.9 * _g(v["gpu"]).memory - lc.weight_bytes(v["model"]))
            / (_kv_tok(v["model"]) * (v["prompt"] + v["answer"]))
        )
        .to("")
        .m
    )
)


@solution("design_review_ex9")
def _dr_ttft(v):
    m, g = _m(v["model"]), _g(v["gpu"])
    return max(
        (TWO_FLOP * m.params * v["prompt"] / g.peak_flops("bf16")).to("ms"),
        (m.params * Q_(2, "B") / g.bandwidth).to("ms"),
    )


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
