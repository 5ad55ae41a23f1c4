"""The worked answers of the operations questions (``llmcourse/data/interview/07_operations.md``): queueing and p99,
routers, goodput and SLOs, disaggregation, benchmarking and validation, the energy bill, cold starts, batch against
online traffic, reliability, prefix caching and KV offload.

Every function takes ``variant`` (0: the book's givens) and draws its setup with :func:`ops_setup` (the same names,
so every step of a chain sees the same model, GPU and load for a variant), then changes one given. The figures come
from the replica model (:func:`llmcourse.replica.replica`), the queueing simulator (:func:`llmcourse.simulator.simulate`,
a fixed seed: the same variant gives the same run), the planner (:func:`llmcourse.planner.plan`,
:func:`llmcourse.planner.disagg.disaggregated`, :func:`llmcourse.planner.bill.bill`) and the shipped validation bands
(:func:`llmcourse.bands.band_for`).

The givens a question states (a storage rate, a ramp, a think time, a host memory) are module constants here, named
in its prompt: they are the question's, not modelling constants of the course.

Examples
--------
>>> from llmcourse.interview import QUESTIONS
>>> calm, busy = (QUESTIONS[q].numbers(3)["p99"] for q in ("q_calm", "q_busy"))
>>> busy > calm
True
"""

from __future__ import annotations

import math
from typing import Any

from llmcourse.bands import band_for
from llmcourse.catalog import gpus
from llmcourse.formulas import FORMULAS as F
from llmcourse.interview.figures import PEAK_FACTOR, draw, per_s
from llmcourse.interview.questions import register_worked
from llmcourse.interview.templates import num
from llmcourse.interview.worked_chains import CHAIN_GPUS, CHAIN_MODELS
from llmcourse.planner.bill import Site, bill
from llmcourse.planner.design import Brief, plan
from llmcourse.planner.disagg import compare, kv_handoff
from llmcourse.planner.serving import fleet
from llmcourse.replica.memory import kv_bytes_per_sequence, max_batch, weight_bytes
from llmcourse.replica.model import replica
from llmcourse.simulator import Fleet, build_replica, simulate
from llmcourse.units import Q_

__all__ = ["HOST_LINKS", "OFFLOAD_MODELS", "ops_setup"]

#: The link a GPU's KV cache crosses to the host's memory (offload and swap), by GPU: PCIe 5 x16 on H100/H200/B200 and
#: MI300X/MI325X boards, PCIe 4 x16 on the A100 and the L40S.
HOST_LINKS = {g: "PCIe 4 x16" if g in ("A100 SXM 80GB", "L40S") else "PCIe 5 x16" for g in CHAIN_GPUS}
#: The offload chain's models: a window of 128K tokens, so a context four times the longest drawn still fits.
OFFLOAD_MODELS = ("Llama-3.1-8B", "Llama-3.1-70B", "Gemma-3-27B")
#: The requests each simulation of a question runs (a fixed seed: the same variant gives the same run).
_SIM_REQUESTS = 3_000


def ops_setup(variant: int) -> dict[str, Any]:
    """The operations questions' givens for ``variant``: a model, a GPU, the fewest GPUs per replica (1, 2, 4, 8)
    that hold the FP8 weights and 16 conversations of 8,192 tokens, the lengths and a load.

    Examples
    --------
    >>> g = ops_setup(0)
    >>> g["model"], g["gpu"], g["n"], g["prompt"], g["answer"]
    ('Llama-3.1-70B', 'H100 SXM', 2, 2000, 400)
    """
    g = draw(
        variant,
        model=("Llama-3.1-70B", CHAIN_MODELS),
        gpu=("H100 SXM", CHAIN_GPUS),
        prompt=(2_000, (500, 1_000, 1_500, 2_000, 3_000, 4_000)),
        answer=(400, (150, 200, 300, 400, 600)),
        load=(0.5, (0.4, 0.45, 0.5, 0.55, 0.6)),
        replicas=(4, (2, 3, 4, 6, 8)),
        daily=(20_000_000, (2_000_000, 5_000_000, 10_000_000, 20_000_000, 50_000_000, 100_000_000)),
        util=(0.6, (0.4, 0.5, 0.6, 0.7, 0.8)),
        conc=(16, (4, 8, 16, 32)),
        context=(16_384, (4_096, 8_192, 16_384, 32_768)),
        storage=(2, (1, 2, 3, 5)),
        scale=(6.5, (4.5, 6.5, 9.5, 14.5, 22.5)),
    )
    g["n"] = next(n for n in (1, 2, 4, 8) if max_batch(g["model"], g["gpu"], 8_192, n_gpus=n, weight_bytes="fp8") >= 16)
    return g


def _rep(g: dict[str, Any], **change: Any) -> Any:
    """The setup's replica (FP8 weights) by the course's method, with ``change`` (prompt, answer, batch, ...)."""
    s = {"prompt": g["prompt"], "answer": g["answer"], "weights": "fp8", "kv": "bf16", "batch": None, "cached": 0}
    s |= change
    return replica(
        g["model"],
        g["gpu"],
        tensor_parallel=g["n"],
        prompt_tokens=s["prompt"],
        answer_tokens=s["answer"],
        weight_bytes=s["weights"],
        kv_bytes=s["kv"],
        batch=s["batch"],
        cached_prompt_tokens=s["cached"],
    )


def _service(g: dict[str, Any], prompt: int | None = None) -> Any:
    return build_replica(
        g["model"],
        g["gpu"],
        prompt_tokens=prompt or g["prompt"],
        answer_tokens=g["answer"],
        n_gpus=g["n"],
        weight_bytes="fp8",
    )


def _basics(g: dict[str, Any]) -> dict[str, Any]:
    return {k: g[k] for k in ("model", "gpu", "n", "prompt", "answer")}


def _ms(x: Any) -> Any:
    return x.to("ms")


# --- queue: one replica as the load rises -----------------------------------------------------------------------------
def _queue(variant: int, load_times: float = 1.0, replicas: int = 1) -> dict[str, Any]:
    g = ops_setup(variant)
    svc = _service(g)
    cap = svc.capacity()
    load = g["load"] * load_times
    rate = cap * load * replicas
    r = simulate(
        g["model"],
        g["gpu"],
        rate=rate,
        prompt_tokens=g["prompt"],
        answer_tokens=g["answer"],
        requests=_SIM_REQUESTS,
        replica=svc,
        fleet=Fleet(replicas) if replicas > 1 else None,
    )
    alone = svc.prefill_time(g["prompt"]) * 1e3 + svc.assumptions.request_overhead_ms
    return _basics(g) | dict(
        cap=per_s(cap),
        rate=per_s(rate),
        load_pct=100 * load,
        p50=_ms(r.ttft["p50"]),
        p99=_ms(r.ttft["p99"]),
        alone=Q_(alone, "ms"),
        tail=float((r.ttft["p99"] / Q_(alone, "ms")).to("").m),
        k=replicas,
    )


@register_worked("q_calm")
def _q_calm(variant: int = 0) -> dict[str, Any]:
    return _queue(variant)


@register_worked("q_busy")
def _q_busy(variant: int = 0) -> dict[str, Any]:
    return _queue(variant, load_times=1.8)


@register_worked("q_two")
def _q_two(variant: int = 0) -> dict[str, Any]:
    return _queue(variant, load_times=1.8 / 2, replicas=2)


# --- router: random against least loaded ------------------------------------------------------------------------------
def _router(variant: int, router: str, surge: float = 1.0) -> dict[str, Any]:
    g = ops_setup(variant)
    svc = _service(g)
    k = g["replicas"]
    rate = svc.capacity() * 0.7 * surge * k
    r = simulate(
        g["model"],
        g["gpu"],
        rate=rate,
        prompt_tokens=g["prompt"],
        answer_tokens=g["answer"],
        requests=_SIM_REQUESTS,
        replica=svc,
        fleet=Fleet(k, router),
    )
    return _basics(g) | dict(
        k=k,
        rate=per_s(rate),
        load_pct=100 * 0.7 * surge,
        p50=_ms(r.ttft["p50"]),
        p99=_ms(r.ttft["p99"]),
        router=router.replace("_", " "),
    )


@register_worked("rt_random")
def _rt_random(variant: int = 0) -> dict[str, Any]:
    return _router(variant, "random")


@register_worked("rt_least")
def _rt_least(variant: int = 0) -> dict[str, Any]:
    return _router(variant, "least_loaded")


@register_worked("rt_surge")
def _rt_surge(variant: int = 0) -> dict[str, Any]:
    return _router(variant, "least_loaded", surge=1.25)


# --- little: Little's law on the peak ----------------------------------------------------------------------------------
def _little(variant: int, answer_times: int = 1, peak: float = PEAK_FACTOR) -> dict[str, Any]:
    g = ops_setup(variant)
    answer = g["answer"] * answer_times
    r = _rep(g, answer=answer)
    t_sys = (r.ttft + answer * r.tpot).to("s")
    mean = Q_(g["daily"], "1/day").to("1/s")
    rate = F["peak_request_rate"](daily_rate=mean, peak_factor=peak).to("1/s")
    n_in = float(F["littles_law"](request_rate=rate, time_in_system=t_sys).to("").m)
    n_mean = float(F["littles_law"](request_rate=mean, time_in_system=t_sys).to("").m)
    return _basics(g) | dict(
        daily=g["daily"],
        answer2=answer,
        peak=peak,
        rate=per_s(rate),
        mean_rate=per_s(mean),
        t_sys=t_sys,
        in_flight=math.ceil(n_in),
        in_mean=math.ceil(n_mean),
        batch=r.batch,
        replicas=math.ceil(n_in / r.batch),
        ttft=_ms(r.ttft),
        tpot=_ms(r.tpot),
    )


@register_worked("lit_peak")
def _lit_peak(variant: int = 0) -> dict[str, Any]:
    return _little(variant)


@register_worked("lit_long")
def _lit_long(variant: int = 0) -> dict[str, Any]:
    return _little(variant, answer_times=2)


@register_worked("lit_spiky")
def _lit_spiky(variant: int = 0) -> dict[str, Any]:
    return _little(variant, answer_times=2, peak=5)


# --- disagg: a prefill pool and a decode pool ------------------------------------------------------------------------
#: The disaggregation chain's targets: first token within 1.5 s, a token every 40 ms.
_DG_TTFT, _DG_TPOT = Q_(1_500, "ms"), Q_(40, "ms")


def _unmet_ttft_words(ttft: Any, target: Any, n: int) -> str:
    """A sentence for a sizing whose p99 first token misses ``target`` although the replicas were added until it
    stopped falling (a miss after the sizing means that even a request that never waits is too slow at the p99):
    more replicas of ``n`` GPUs do not help, other levers do. Empty when the target is met."""
    if ttft <= target:
        return ""
    return (
        f" The p99 first token misses the {num(target)} target, and more replicas of {n} GPUs cannot meet it: at the p99 a prompt"
        f" that never waits is already too slow. The levers are replicas of more GPUs each (a shorter prefill), a"
        f" prefix cache for the shared part of the prompts, or a looser target, not more replicas."
    )


def _disagg(variant: int, prompt_times: int = 1, kv: int = 2) -> dict[str, Any]:
    g = ops_setup(variant)
    prompt = g["prompt"] * prompt_times
    rps = round(g["scale"] * 4)
    brief = Brief(rps, prompt, g["answer"], _DG_TTFT, _DG_TPOT)
    # both deployments' first tokens queued and read at p99 (compare()'s default): the pools are compare()'s own
    c = compare(g["model"], g["gpu"], brief, tensor_parallel=g["n"], weight_bytes="fp8", kv_bytes=kv)
    d = c.disaggregated
    return _basics(g) | dict(
        rps=rps,
        prompt2=prompt,
        gpus=d.gpus,
        prefill_gpus=d.prefill.gpus,
        decode_gpus=d.decode.gpus,
        busy_pct=100 * d.utilisation,
        handoff=d.kv_handoff,
        link=d.link.name,
        wait=d.queue_wait,
        pre=d.prefill_time,
        ttft=d.ttft,
        tpot=d.tpot,
        batch=d.batch,
        agg_gpus=c.aggregated.gpus,
        winner=c.winner,
        kv_bytes="FP8" if kv == 1 else "BF16",
        ttft_note=_unmet_ttft_words(d.ttft, _DG_TTFT, d.prefill.gpus_per_replica),
        ttft_target=_DG_TTFT,
        tpot_target=_DG_TPOT,
    )


@register_worked("dg_pools")
def _dg_pools(variant: int = 0) -> dict[str, Any]:
    return _disagg(variant)


@register_worked("dg_long")
def _dg_long(variant: int = 0) -> dict[str, Any]:
    return _disagg(variant, prompt_times=4)


@register_worked("dg_kv8")
def _dg_kv8(variant: int = 0) -> dict[str, Any]:
    return _disagg(variant, prompt_times=4, kv=1)


# --- energy: the bill per million tokens ------------------------------------------------------------------------------
#: The PUE of the energy chain's follow-up: a liquid-cooled site.
_LOW_PUE = 1.1


def _energy(variant: int, util: float | None = None, pue: float | None = None) -> dict[str, Any]:
    g = ops_setup(variant)
    r = _rep(g)
    u = g["util"] if util is None else util
    b = bill(r, utilisation=u, own=False, site=Site(pue=pue) if pue is not None else None)
    return _basics(g) | dict(
        util_pct=100 * u,
        kwh=b.energy_per_million.to("kWh"),
        draw=b.gpu_draw.to("W"),
        site=b.site_power.to("W"),
        pue=b.pue,
        tdp=gpus[g["gpu"]].power,
        x=per_s(r.throughput),
        per_mw=per_s(b.tokens_per_s_per_megawatt),
        per_gpu_mw=b.gpus_per_megawatt,
        elec=(b.energy_per_million * b.electricity_price).to("USD"),
        elec_pct=100 * float((b.energy_per_million * b.electricity_price / b.rent_cost_per_million).to("").m),
        rent=b.rent_cost_per_million.to("USD"),
        idle_pct=100 * r.assumptions.gpu_idle_power_fraction,
    )


@register_worked("en_base")
def _en_base(variant: int = 0) -> dict[str, Any]:
    return _energy(variant)


@register_worked("en_idle")
def _en_idle(variant: int = 0) -> dict[str, Any]:
    return _energy(variant, util=0.2)


@register_worked("en_pue")
def _en_pue(variant: int = 0) -> dict[str, Any]:
    return _energy(variant, util=0.2, pue=_LOW_PUE)


@register_worked("en_megawatt")
def _en_megawatt(variant: int = 0) -> dict[str, Any]:
    return _energy(variant)


# --- cold: a new replica's weights from storage ----------------------------------------------------------------------
#: The cold-start chain's models: the chain models and two that take many GPUs.
_COLD_MODELS = (*CHAIN_MODELS, "Llama-3.1-405B", "DeepSeek-V3")


def _cold(variant: int, precision: str = "bf16", local: bool = False) -> dict[str, Any]:
    g = draw(
        variant,
        model=("Llama-3.1-70B", _COLD_MODELS),
        storage=(2, (1, 2, 3, 5)),
        ramp=(10, (5, 10, 20, 30)),
        nvme=(12, (7, 12, 14, 25)),
    )
    w = weight_bytes(g["model"], precision).to("GB")
    rate = Q_(g["nvme"], "GB/s") if local else Q_(g["storage"], "GB/s")
    t = F["weight_load_time"](weights=w, storage_rate=rate).to("s")
    return g | dict(
        w=w,
        precision=precision.upper(),
        rate=rate,
        load_s=t,
        load_min=t.to("min"),
        extra_pct=g["ramp"] * float(t.to("min").m),
    )


@register_worked("cs_load")
def _cs_load(variant: int = 0) -> dict[str, Any]:
    return _cold(variant)


@register_worked("cs_fp8")
def _cs_fp8(variant: int = 0) -> dict[str, Any]:
    return _cold(variant, "fp8")


@register_worked("cs_local")
def _cs_local(variant: int = 0) -> dict[str, Any]:
    return _cold(variant, "fp8", local=True)


@register_worked("cs_spare")
def _cs_spare(variant: int = 0) -> dict[str, Any]:
    return _cold(variant)


# --- batch: an online fleet against a batch job ------------------------------------------------------------------------
#: The online product's targets: a token every 30 ms, the first within 1 s.
_ONLINE_TPOT, _ONLINE_TTFT = Q_(30, "ms"), Q_(1, "s")


def _batch(variant: int, offline: bool = False, prompt_times: int = 1) -> dict[str, Any]:
    g = ops_setup(variant)
    prompt = g["prompt"] * prompt_times
    r = _rep(g, prompt=prompt)
    rps = round(per_s(r.throughput) / g["answer"] * g["scale"], 1)
    p = plan(
        g["model"],
        g["gpu"],
        Brief(rps, prompt, g["answer"], _ONLINE_TTFT, _ONLINE_TPOT),
        tensor_parallel=g["n"],
        weight_bytes="fp8",
    )
    cost = r.cost_per_million_output_tokens if offline else p.cost_per_million_output_tokens
    return _basics(g) | dict(
        rps=rps,
        prompt2=prompt,
        cost=cost.to("USD"),
        online=p.cost_per_million_output_tokens.to("USD"),
        full=r.cost_per_million_output_tokens.to("USD"),
        b_online=p.batch,
        b_full=r.batch,
        tpot_target=_ONLINE_TPOT,
        tpot_full=_ms(r.tpot),
        ratio=float((p.cost_per_million_output_tokens / r.cost_per_million_output_tokens).to("").m),
        price=gpus[g["gpu"]].price_per_hour,
    )


@register_worked("bo_online")
def _bo_online(variant: int = 0) -> dict[str, Any]:
    return _batch(variant)


@register_worked("bo_offline")
def _bo_offline(variant: int = 0) -> dict[str, Any]:
    return _batch(variant, offline=True)


@register_worked("bo_long")
def _bo_long(variant: int = 0) -> dict[str, Any]:
    return _batch(variant, offline=True, prompt_times=4)


# --- rel: N+1, two zones, three zones ---------------------------------------------------------------------------------
def _rel(variant: int, zones: int = 1) -> dict[str, Any]:
    g = ops_setup(variant)
    r = _rep(g)
    x = per_s(r.throughput)
    size = draw(variant, size=(8.5, (4.5, 6.5, 8.5, 11.5, 15.5, 21.5, 30.5, 44.5)))["size"]
    rps = float(f"{x / g['answer'] * size:.2g}")
    demand = F["token_rate"](request_rate=Q_(rps, "1/s"), tokens_per_request=g["answer"]).to("1/s")
    whole = fleet(demand, r)
    if zones == 1:
        reps = whole.replicas + 1
    else:  # each zone carries the peak the others cannot when one zone is down
        share = fleet(demand / (zones - 1), r)
        reps = zones * share.replicas
    return _basics(g) | dict(
        rps=rps,
        demand=per_s(demand),
        x=x,
        h=whole.headroom,
        base=whole.replicas,
        base_gpus=whole.gpus,
        zones=zones,
        replicas=reps,
        gpus=reps * g["n"],
        cost=(reps * g["n"] * gpus[g["gpu"]].price_per_hour * Q_(730, "hour")).to("USD"),
    )


@register_worked("rel_n1")
def _rel_n1(variant: int = 0) -> dict[str, Any]:
    return _rel(variant)


@register_worked("rel_zones")
def _rel_zones(variant: int = 0) -> dict[str, Any]:
    return _rel(variant, zones=2)


@register_worked("rel_three")
def _rel_three(variant: int = 0) -> dict[str, Any]:
    return _rel(variant, zones=3)


@register_worked("rate_limit")
def _rate_limit(variant: int = 0) -> dict[str, Any]:
    g = ops_setup(variant)
    out = _rel(variant)
    tenants = draw(variant, tenants=(50, (20, 50, 100, 200, 500)))["tenants"]
    x = out["x"]
    # every tenant at its limit at once must fit the fleet without the headroom: limit = base replicas x X / tenants
    limit = out["base"] * x * 60 / tenants
    return out | dict(tenants=tenants, limit=limit, capacity=out["base"] * x, answer=g["answer"])


# --- prefix: a cached system prompt -----------------------------------------------------------------------------------
def _prefix(variant: int, cached: bool = False, user_times: int = 1) -> dict[str, Any]:
    g = ops_setup(variant)
    system = draw(variant, system=(1_500, (500, 1_000, 1_500, 3_000, 6_000)))["system"]
    user = g["prompt"] * user_times
    prompt = system + user
    rps = round(g["scale"] * 3)
    p = plan(
        g["model"],
        g["gpu"],
        Brief(rps, prompt, g["answer"], Q_(2, "s"), Q_(50, "ms")),
        tensor_parallel=g["n"],
        weight_bytes="fp8",
        cached_prompt_tokens=system if cached else 0,
    )
    # the first token of a request alone (no queue, no other request's decode tokens in its steps): what the prefix
    # cache changes, whatever batch the plan then runs
    alone = replica(g["model"], g["gpu"], tensor_parallel=g["n"], weight_bytes="fp8", prompt_tokens=prompt,
                    answer_tokens=g["answer"], cached_prompt_tokens=system if cached else 0, batch=1)  # fmt: skip
    return _basics(g) | dict(
        system=system,
        user=user,
        total=prompt,
        rps=rps,
        ttft=_ms(alone.ttft),
        gpus=p.gpus,
        share=100 * system / prompt,
    )


@register_worked("px_base")
def _px_base(variant: int = 0) -> dict[str, Any]:
    return _prefix(variant)


@register_worked("px_cached")
def _px_cached(variant: int = 0) -> dict[str, Any]:
    return _prefix(variant, cached=True)


@register_worked("px_long")
def _px_long(variant: int = 0) -> dict[str, Any]:
    return _prefix(variant, cached=True, user_times=3)


# --- offload: swap a conversation's KV to the host, or recompute it ----------------------------------------------------
def _offload(variant: int, context_times: int = 1, kv: int = 2) -> dict[str, Any]:
    g = ops_setup(variant) | draw(
        variant,
        model=("Llama-3.1-70B", OFFLOAD_MODELS),
        context=(16_384, (3_000, 4_096, 6_000, 8_192, 10_000, 12_288, 16_384, 20_000, 24_576, 32_768)),
    )
    g["n"] = next(n for n in (1, 2, 4, 8) if max_batch(g["model"], g["gpu"], 8_192, n_gpus=n, weight_bytes="fp8") >= 16)
    tokens = g["context"] * context_times
    link = HOST_LINKS[g["gpu"]]
    per_seq = kv_bytes_per_sequence(g["model"], tokens, kv).to("GB")
    swap = kv_handoff(g["model"], tokens, link=link, kv_lanes=g["n"], kv_bytes=kv).to("ms")
    svc = _service(g, prompt=min(tokens, 8_192))
    redo = Q_(svc.prefill_time(tokens) * 1e3, "ms")
    host = draw(variant, host=(1_024, (256, 512, 768, 1_024, 1_536, 2_048)))["host"]
    return _basics(g) | dict(
        tokens=tokens,
        kv=per_seq,
        kv_bytes="FP8" if kv == 1 else "BF16",
        swap_ms=swap,
        redo=redo,
        faster="swapping" if swap < redo else "recomputing",
        ratio=float((redo / swap).to("").m),
        link=link,
        host=host,
        parked=int(Q_(host, "GB") / per_seq),
    )


@register_worked("ko_swap")
def _ko_swap(variant: int = 0) -> dict[str, Any]:
    return _offload(variant)


@register_worked("ko_long")
def _ko_long(variant: int = 0) -> dict[str, Any]:
    return _offload(variant, context_times=4)


@register_worked("ko_fp8")
def _ko_fp8(variant: int = 0) -> dict[str, Any]:
    return _offload(variant, context_times=4, kv=1)


@register_worked("ko_host")
def _ko_host(variant: int = 0) -> dict[str, Any]:
    return _offload(variant)


# --- goodput: the share of requests within the SLO --------------------------------------------------------------------
def _goodput(variant: int, busy: bool = False, loose: bool = False) -> dict[str, Any]:
    g = ops_setup(variant)
    svc = _service(g)
    cap = svc.capacity()

    def run(load: float) -> Any:
        return simulate(
            g["model"],
            g["gpu"],
            rate=cap * load,
            prompt_tokens=g["prompt"],
            answer_tokens=g["answer"],
            requests=_SIM_REQUESTS,
            replica=svc,
        )

    base = run(g["load"])
    slo_ms = math.ceil(base.at("ttft", 90).to("ms").m / 10) * 10  # the product's target: the calm p90, to 10 ms
    slo = slo_ms * (2 if loose else 1)
    load = 0.9 if busy else g["load"]
    r = base if not busy else run(load)
    good = sum(t * 1e3 <= slo for t in r.ttft_s) / len(r.ttft_s)
    rate = per_s(cap * load)
    return _basics(g) | dict(
        slo=Q_(slo, "ms"),
        load_pct=100 * load,
        rate=rate,
        good_pct=100 * good,
        goodput=rate * good,
        p99=_ms(r.ttft["p99"]),
    )


@register_worked("gp_base")
def _gp_base(variant: int = 0) -> dict[str, Any]:
    return _goodput(variant)


@register_worked("gp_busy")
def _gp_busy(variant: int = 0) -> dict[str, Any]:
    return _goodput(variant, busy=True)


@register_worked("gp_loose")
def _gp_loose(variant: int = 0) -> dict[str, Any]:
    return _goodput(variant, busy=True, loose=True)


# --- bench: a closed-loop benchmark ------------------------------------------------------------------------------------
#: The think time of the benchmark chain's follow-up: each client waits 2 s before its next request.
_THINK = Q_(2, "s")


def _bench(variant: int, conc_times: int = 1, think: bool = False) -> dict[str, Any]:
    g = ops_setup(variant)
    c = g["conc"] * conc_times
    r = _rep(g, batch=c)
    t_req = F["closed_loop_request_time"](answer_tokens=g["answer"], time_per_token=r.tpot, ttft=r.ttft).to("s")
    wait = _THINK if think else Q_(0, "s")
    x = c * g["answer"] / (t_req + wait)
    return _basics(g) | dict(
        c=c,
        ttft=_ms(r.ttft),
        tpot=_ms(r.tpot),
        t_req=t_req,
        think=_THINK,
        x=per_s(x),
        rps=per_s(c / (t_req + wait)),
    )


@register_worked("bm_closed")
def _bm_closed(variant: int = 0) -> dict[str, Any]:
    return _bench(variant)


@register_worked("bm_conc")
def _bm_conc(variant: int = 0) -> dict[str, Any]:
    return _bench(variant, conc_times=4)


@register_worked("bm_think")
def _bm_think(variant: int = 0) -> dict[str, Any]:
    return _bench(variant, conc_times=4, think=True)


@register_worked("bm_omission")
def _bm_omission(variant: int = 0) -> dict[str, Any]:
    """A closed loop's throughput offered as an open Poisson stream to the same replica: the open loop's p99."""
    g = ops_setup(variant)
    svc = _service(g)
    c = g["conc"] * 4
    closed = simulate(
        g["model"],
        g["gpu"],
        concurrency=c,
        prompt_tokens=g["prompt"],
        answer_tokens=g["answer"],
        requests=_SIM_REQUESTS,
        replica=svc,
    )
    rate = closed.request_throughput
    opened = simulate(
        g["model"],
        g["gpu"],
        rate=rate,
        prompt_tokens=g["prompt"],
        answer_tokens=g["answer"],
        requests=_SIM_REQUESTS,
        replica=svc,
    )
    return _basics(g) | dict(
        c=c,
        rps=per_s(rate),
        load_pct=100 * opened.load,
        closed99=_ms(closed.ttft["p99"]),
        open99=_ms(opened.ttft["p99"]),
        ratio=float((opened.ttft["p99"] / closed.ttft["p99"]).to("").m),
    )


# --- validation: the band on a prediction ------------------------------------------------------------------------------
@register_worked("val_band")
def _val_band(variant: int = 0) -> dict[str, Any]:
    g = ops_setup(variant)
    r = _rep(g, batch=g["conc"])
    tpot = r.tpot.to("ms").m
    b = band_for("tpot_ms", g["model"], g["gpu"], tpot)
    return _basics(g) | dict(
        c=g["conc"],
        tpot=Q_(tpot, "ms"),
        low=Q_(b.low, "ms"),
        high=Q_(b.high, "ms"),
        family=b.family,
        rows=b.n,
    )


# --- concepts ----------------------------------------------------------------------------------------------------------
@register_worked("c_omission")
def _c_omission(variant: int = 0) -> dict[str, Any]:
    return _bm_omission(variant)


@register_worked("c_kv_routing")
def _c_kv_routing(variant: int = 0) -> dict[str, Any]:
    return _prefix(variant) | {"ttft_cached": _prefix(variant, cached=True)["ttft"]}


@register_worked("c_preemption")
def _c_preemption(variant: int = 0) -> dict[str, Any]:
    return _offload(variant)


@register_worked("c_goodput")
def _c_goodput(variant: int = 0) -> dict[str, Any]:
    calm, busy = _goodput(variant), _goodput(variant, busy=True)
    return dict(
        slo=calm["slo"],
        calm_pct=calm["good_pct"],
        busy_pct=busy["good_pct"],
        calm_rate=calm["rate"],
        busy_rate=busy["rate"],
        calm_good=calm["goodput"],
        busy_good=busy["goodput"],
    )
