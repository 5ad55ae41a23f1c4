"""The worked answers of the chains (``llmcourse/data/interview/06_chains.md``): one setup, one given changed a step.

A chain is a first question and its follow-ups, each changing one given of the step before ("now the prompts are
32K", "FP8 is not allowed", "traffic triples at peak"); the data file's ``moves`` says which figure moves and which
way, and a test checks it for every variant. Each function here takes ``variant`` (0: the book's givens) and draws
the chain's setup with :func:`_setup` (the same names, so every step of a chain sees the same model, GPU and load
for a variant), then changes its given.

The chains that continue a question of the earlier files (``fleet350``: roofline_fleet; ``billion``: huge_fleet;
``gqa70``: kv_limit) change a given of that question's book setup; ``gqa70`` draws its variants as kv_limit does
(:func:`llmcourse.interview.givens.gqa70_setup`), ``fleet350`` draws its peak rate
(:func:`llmcourse.interview.givens.fleet350_rps`), ``billion`` its requests, answers and per-GPU rate
(:func:`llmcourse.interview.givens.billion_setup`).

Examples
--------
>>> from llmcourse.interview import QUESTIONS
>>> a, b = (QUESTIONS[q].numbers(5)["batch"] for q in ("fit_base", "fit_32k"))
>>> a > b
True
"""

from __future__ import annotations

from typing import Any

from llmcourse.assumptions import resolve
from llmcourse.catalog import gpus, models
from llmcourse.formulas import FORMULAS as F
from llmcourse.interview.figures import COURSE, PEAK_FACTOR, draw, per_gpu_rate, per_s, seed004_model
from llmcourse.interview.givens import billion_setup, fits_words, fleet350_rps, gqa70_setup
from llmcourse.interview.questions import register_worked
from llmcourse.interview.templates import num
from llmcourse.interview.worked import CHAT_USER_RATE, batch_for_user_rate
from llmcourse.planner.design import Brief, plan
from llmcourse.planner.serving import fleet, traffic
from llmcourse.replica.memory import kv_bytes_per_sequence, kv_bytes_per_token, max_batch, usable_memory
from llmcourse.replica.model import replica
from llmcourse.units import Q_

__all__ = ["CHAIN_GPUS", "CHAIN_MODELS", "LONG_MODELS"]

#: The models and GPUs a chain's variants draw from (dense models, so one figure per setup; GPUs with the memory
#: for a 70B model on eight of them).
CHAIN_MODELS = ("Llama-3.1-8B", "Qwen2.5-7B", "Mistral-7B-v0.1", "Qwen3-32B", "Llama-3.1-70B", "Qwen2.5-72B")
#: The models of the long-context chain: a window of 128K tokens or more.
LONG_MODELS = ("Llama-3.1-8B", "Llama-3.1-70B", "Llama-3.1-405B", "DeepSeek-V3", "gpt-oss-120b")
CHAIN_GPUS = ("H100 SXM", "H200 SXM", "B200", "A100 SXM 80GB", "MI300X", "MI325X", "H100 PCIe", "L40S")

#: The longest prompt a chain's follow-up asks for ("now the prompts are 30K", within every chain model's window):
#: the setup's GPUs must hold a few such conversations in BF16.
_LONGEST = 30_000


def _setup(variant: int) -> dict[str, Any]:
    """The chain's givens for ``variant``: a model, a GPU, the fewest GPUs per replica (1, 2, 4, 8) that hold the
    weights in BF16 and four conversations of the longest prompt, the lengths and the load."""
    g = draw(
        variant,
        model=("Llama-3.1-70B", CHAIN_MODELS),
        gpu=("H100 SXM", CHAIN_GPUS),
        prompt=(2_000, (500, 1_000, 1_500, 2_000, 2_500, 3_000, 4_000, 6_000)),
        answer=(400, (200, 300, 400, 600, 800)),
        rps=(100, (20, 50, 100, 200, 400, 800)),
        long=(_LONGEST, (12_000, 16_000, 20_000, 24_000, _LONGEST)),
    )
    g["n"] = next(
        n
        for n in (1, 2, 4, 8)
        if max_batch(g["model"], g["gpu"], _LONGEST + g["answer"], n_gpus=n, weight_bytes="bf16") >= 4
    )
    return g


def _rep(g: dict[str, Any], **change: Any) -> Any:
    """The replica of the setup ``g`` at full load by the course's method, with ``change`` (prompt, answer,
    weights, kv, batch, cached) applied."""
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


def _givens(g: dict[str, Any]) -> dict[str, Any]:
    return {k: g[k] for k in ("model", "gpu", "n", "prompt", "answer", "rps", "long")}


# --- fit: how many conversations at once ---------------------------------------------------------------------------
def _fit(variant: int, **change: Any) -> dict[str, Any]:
    g = _setup(variant)
    r = _rep(g, **change)
    return _givens(g) | dict(
        batch=r.batch,
        w=r.weights,
        kv=r.kv_per_sequence,
        mem=r.usable_memory,
        free=(r.usable_memory - r.weights).to("GB"),
    )


@register_worked("fit_base")
def _fit_base(variant: int = 0) -> dict[str, Any]:
    return _fit(variant)


@register_worked("fit_32k")
def _fit_32k(variant: int = 0) -> dict[str, Any]:
    return _fit(variant, prompt=_setup(variant)["long"])


@register_worked("fit_bf16")
def _fit_bf16(variant: int = 0) -> dict[str, Any]:
    return _fit(variant, prompt=_setup(variant)["long"], weights="bf16")


@register_worked("fit_kv8")
def _fit_kv8(variant: int = 0) -> dict[str, Any]:
    return _fit(variant, prompt=_setup(variant)["long"], weights="bf16", kv="fp8")


# --- speed: one user's tokens per second ---------------------------------------------------------------------------
def _speed(variant: int, **change: Any) -> dict[str, Any]:
    g = _setup(variant)
    r = _rep(g, batch=1, **change)
    return _givens(g) | dict(
        user=per_s(r.tokens_per_s_per_user),
        tpot=r.tpot,
        w=r.weights,
        kv=r.kv_per_sequence,
        bw=gpus[g["gpu"]].bandwidth,
        bw_pct=100 * resolve(COURSE).bandwidth_efficiency,
        o=r.step.overhead_time,
        links="" if g["n"] == 1 else f" and {num(r.step.comm_time, 2)} of all-reduces between the {g['n']} GPUs",
    )


@register_worked("speed_base")
def _speed_base(variant: int = 0) -> dict[str, Any]:
    return _speed(variant)


@register_worked("speed_32k")
def _speed_32k(variant: int = 0) -> dict[str, Any]:
    return _speed(variant, prompt=_setup(variant)["long"])


@register_worked("speed_bf16")
def _speed_bf16(variant: int = 0) -> dict[str, Any]:
    return _speed(variant, prompt=_setup(variant)["long"], weights="bf16")


# --- peak: GPUs for the traffic ------------------------------------------------------------------------------------
def _peak(variant: int, times: float = 1, **change: Any) -> dict[str, Any]:
    g = _setup(variant)
    r = _rep(g, **change)
    answer = change.get("answer", g["answer"])
    demand = F["token_rate"](request_rate=Q_(g["rps"] * times, "1/s"), tokens_per_request=answer).to("1/s")
    f = fleet(demand, r)
    return _givens(g) | dict(
        gpus=f.gpus,
        replicas=f.replicas,
        exact=f.replicas_exact,
        demand=per_s(demand),
        x=per_s(r.throughput),
        h=f.headroom,
        rps3=g["rps"] * times,
        answer2=answer,
        batch=r.batch,
    )


@register_worked("peak_base")
def _peak_base(variant: int = 0) -> dict[str, Any]:
    return _peak(variant)


@register_worked("peak_triple")
def _peak_triple(variant: int = 0) -> dict[str, Any]:
    return _peak(variant, times=3)


@register_worked("peak_long")
def _peak_long(variant: int = 0) -> dict[str, Any]:
    return _peak(variant, times=3, answer=2 * _setup(variant)["answer"])


@register_worked("peak_bf16")
def _peak_bf16(variant: int = 0) -> dict[str, Any]:
    return _peak(variant, times=3, answer=2 * _setup(variant)["answer"], weights="bf16")


# --- cost: a million output tokens ---------------------------------------------------------------------------------
#: The cost chain's givens: the share of the billed hours the fleet is busy, and the batch a latency target caps.
_UTILISATION, _CAPPED_BATCH = 0.3, 8


def _cost(variant: int, util: float = 1.0, **change: Any) -> dict[str, Any]:
    g = _setup(variant)
    r = _rep(g, **change)
    full = r.cost_per_million_output_tokens
    return _givens(g) | dict(
        cost=F["cost_at_utilisation"](cost_full=full, utilisation=util).to("USD"),
        full=full,
        x=per_s(r.throughput),
        batch=r.batch,
        price=gpus[g["gpu"]].price_per_hour,
        util_pct=100 * _UTILISATION,
        cap=_CAPPED_BATCH,
    )


@register_worked("cost_base")
def _cost_base(variant: int = 0) -> dict[str, Any]:
    return _cost(variant)


@register_worked("cost_util")
def _cost_util(variant: int = 0) -> dict[str, Any]:
    return _cost(variant, util=_UTILISATION)


@register_worked("cost_capped")
def _cost_capped(variant: int = 0) -> dict[str, Any]:
    return _cost(variant, util=_UTILISATION, batch=_CAPPED_BATCH)


# --- ttft: the first token of one prompt ---------------------------------------------------------------------------
def _ttft(variant: int, **change: Any) -> dict[str, Any]:
    g = _setup(variant)
    r = _rep(g, batch=1, **change)
    return _givens(g) | dict(
        ttft=r.ttft.to("ms"),
        over=Q_(resolve(COURSE).request_overhead_ms, "ms"),
        cached=change.get("cached", 0),
        flops=F["prefill_compute_rate"](
            token_rate=Q_(1, "1/s"), flops_per_param=Q_(2, "FLOP"), params=models[g["model"]].params
        )
        .to("GFLOP/s")
        .m,
    )


@register_worked("ttft_base")
def _ttft_base(variant: int = 0) -> dict[str, Any]:
    return _ttft(variant)


@register_worked("ttft_32k")
def _ttft_32k(variant: int = 0) -> dict[str, Any]:
    return _ttft(variant, prompt=_setup(variant)["long"])


@register_worked("ttft_cached")
def _ttft_cached(variant: int = 0) -> dict[str, Any]:
    long = _setup(variant)["long"]
    return _ttft(variant, prompt=long, cached=long // 2)


# --- kv: the cache of one conversation -----------------------------------------------------------------------------
def _kv(variant: int, tokens: int, kv: str = "bf16") -> dict[str, Any]:
    g = draw(
        variant,
        model=("Llama-3.1-70B", LONG_MODELS),
        gpu=("H100 SXM", CHAIN_GPUS),
        chat=(_CHAT, (2_048, 4_096, _CHAT, 16_384)),
    )
    tokens = g["chat"] if tokens == 0 else tokens
    per_seq = kv_bytes_per_sequence(g["model"], tokens, kv)
    m = models[g["model"]]
    return g | dict(
        kv=per_seq.to("GB"),
        tokens=tokens,
        layers=m.layers,
        share=float((per_seq / usable_memory(g["gpu"])).to("").m) * 100,
    )


#: The kv chain's contexts: a chat, and the long-context window of its follow-up.
_CHAT, _WINDOW = 8_192, 131_072


@register_worked("kv_chat")
def _kv_chat(variant: int = 0) -> dict[str, Any]:
    return _kv(variant, 0)


@register_worked("kv_128k")
def _kv_128k(variant: int = 0) -> dict[str, Any]:
    return _kv(variant, _WINDOW)


@register_worked("kv_128k_fp8")
def _kv_128k_fp8(variant: int = 0) -> dict[str, Any]:
    return _kv(variant, _WINDOW, "fp8")


# --- design: a chat assistant, planned -----------------------------------------------------------------------------
def _design(variant: int, times: float = 1, weights: str = "fp8", prompt: int | None = None) -> dict[str, Any]:
    g = draw(
        variant,
        model=("Llama-3.1-70B", ("Llama-3.1-70B", "Qwen2.5-72B", "Qwen3-32B", "Llama-3.1-8B")),
        gpu=("H100 SXM", ("H100 SXM", "H200 SXM", "B200", "MI300X")),
        users=(10_000_000, (2_000_000, 5_000_000, 10_000_000, 20_000_000, 50_000_000)),
        per_user=(5, (2, 3, 5, 10, 20)),
    )
    p_tok = g_prompt = 2_000 if prompt is None else prompt
    daily = Q_(g["users"] * g["per_user"], "1/day")
    rps = per_s(traffic(daily, p_tok, 400, peak_factor=PEAK_FACTOR * times).request_rate)
    brief = Brief(rps, p_tok, 400, Q_(1_000, "ms"), Q_(50, "ms"))
    p = plan(g["model"], g["gpu"], brief, weight_bytes=weights, tensor_parallel="auto")
    return g | dict(
        rps=rps,
        peak=PEAK_FACTOR,
        prompt=g_prompt,
        gpus=p.gpus,
        tp=p.tensor_parallel,
        batch=p.batch,
        cost=p.cost_per_hour,
        per_million=p.cost_per_million_output_tokens,
        ttft=p.ttft.to("ms"),
        tpot=p.tpot.to("ms"),
        bottleneck=str(p.bottleneck),
        in_flight=p.in_flight,
        kv=p.kv_per_request,
        w=p.weights,
    )


@register_worked("design_chat")
def _design_chat(variant: int = 0) -> dict[str, Any]:
    return _design(variant)


@register_worked("design_chat_bf16")
def _design_chat_bf16(variant: int = 0) -> dict[str, Any]:
    return _design(variant, weights="bf16")


@register_worked("design_chat_rag")
def _design_chat_rag(variant: int = 0) -> dict[str, Any]:
    return _design(variant, weights="bf16", prompt=8_000)


# --- the chains that continue an earlier question (its one variant) -----------------------------------------------
def _fleet350(rps: float, weights: str, tensor_parallel: int = 2, keep_user_rate: bool = True) -> dict[str, Any]:
    """roofline_fleet's replica by the course's method (Llama 3.1 70B on ``tensor_parallel`` H100s, 2,000 + 400
    tokens) at the largest batch that still gives each user the brief's 30 tokens/s (``keep_user_rate``; otherwise at
    the largest batch that fits), and its fleet for ``rps``."""
    work = dict(
        tensor_parallel=tensor_parallel,
        prompt_tokens=2_000,
        answer_tokens=400,
        weight_bytes=weights,
        assumptions=COURSE,
    )
    if keep_user_rate:
        r = batch_for_user_rate("Llama-3.1-70B", "H100 SXM", CHAT_USER_RATE, **work)
    else:
        r = replica("Llama-3.1-70B", "H100 SXM", **work)
    demand = F["token_rate"](request_rate=Q_(rps, "1/s"), tokens_per_request=400).to("1/s")
    f = fleet(demand, r)
    return dict(
        rps=rps,
        target=per_s(CHAT_USER_RATE),
        demand=per_s(demand),
        x_course=per_s(r.throughput),
        gpus_course=f.gpus,
        cost_course=f.monthly_cost,
        user=per_s(r.tokens_per_s_per_user),
        batch=r.batch,
        w=r.weights,
        meets="meets" if r.tokens_per_s_per_user >= CHAT_USER_RATE else "misses",
    )


@register_worked("fleet350_triple")
def _fleet350_triple(variant: int = 0) -> dict[str, Any]:
    return _fleet350(3 * fleet350_rps(variant), "fp8") | dict(rps0=fleet350_rps(variant))


@register_worked("fleet350_bf16")
def _fleet350_bf16(variant: int = 0) -> dict[str, Any]:
    out = _fleet350(3 * fleet350_rps(variant), "bf16", keep_user_rate=False)
    four = _fleet350(3 * fleet350_rps(variant), "bf16", tensor_parallel=4)
    return out | dict(gpus_tp4=four["gpus_course"], user4=four["user"], batch4=four["batch"])


def _billion(variant: int, model_rate: bool) -> dict[str, Any]:
    """huge_fleet's GPUs at the peak with twice its answers' characters (4 a token), at its per-GPU figure or, with
    ``model_rate``, at the rate one H100 makes as its share of a Llama 3.1 70B FP8 pair on those answers."""
    b = billion_setup(variant)
    chars = 2 * b["chars"]
    tok = int(F["tokens_from_characters"](characters=chars, chars_per_token=4).m)
    peak = traffic(Q_(b["bn"] * 1e9, "1/day"), 1, tok, peak_factor=PEAK_FACTOR).output_tokens_per_s
    h = resolve(COURSE).headroom
    per_gpu = per_gpu_rate("Llama-3.1-70B", 2, "fp8", 1_000, tok) if model_rate else b["xg"]
    g = int(F["replicas_needed"](demand=peak * h, throughput=Q_(per_gpu, "1/s")).m)
    return dict(
        bn=b["bn"],
        chars=chars,
        kb=chars // 1_000,
        xg=b["xg"],
        tok=tok,
        demand_peak=per_s(peak),
        headroom=h,
        peak=PEAK_FACTOR,
        g_peak=g,
        per_gpu=per_gpu,
    )


@register_worked("billion_long")
def _billion_long(variant: int = 0) -> dict[str, Any]:
    return _billion(variant, model_rate=False)


@register_worked("billion_70b")
def _billion_70b(variant: int = 0) -> dict[str, Any]:
    return _billion(variant, model_rate=True)


def _gqa70(variant: int, kv: str) -> dict[str, Any]:
    """kv_limit's setup (the 70B-class model on two GPUs, all their memory counted) at the chain's long context."""
    g = gqa70_setup(variant)
    m = seed004_model()
    b = max_batch(m, g["gpu"], g["long"], n_gpus=2, kv_bytes=kv, assumptions=g["every"])
    return dict(
        gpu=g["gpu_name"],
        total=g["total"],
        base=g["base"],
        tokens=g["long"],
        grow=g["long"] / g["base"],
        kvtok=kv_bytes_per_token(m).to("KiB"),
        kv=kv_bytes_per_sequence(m, g["long"], kv).to("GB"),
        b_gqa=b,
        fit=fits_words(b),
        b_base=max_batch(m, g["gpu"], g["base"], n_gpus=2, assumptions=g["every"]),
        w=g["w"],
    )


@register_worked("gqa70_32k")
def _gqa70_32k(variant: int = 0) -> dict[str, Any]:
    return _gqa70(variant, "bf16")


@register_worked("gqa70_kv8")
def _gqa70_kv8(variant: int = 0) -> dict[str, Any]:
    return _gqa70(variant, "fp8")
