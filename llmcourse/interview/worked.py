"""The worked answers of the interview chapter's bank (``book/14_interview_questions.md``): L4, L5 and Staff+.

One function for each question of ``llmcourse/data/interview/01_l4.md``, ``02_l5.md`` and
``03_staff.md``, registered under the question's id (:func:`~llmcourse.interview.questions.register_worked`):
it computes every number of the question's answers with the planner and returns them by the names its
templates use. A question that reproduces a source text's worked example computes it under that
source's assumptions (``"envelope"``, ``"lab"``, ``"capacity"``, see :mod:`llmcourse.assumptions`);
where the source's method leaves out something that changes the answer (prefill, the bandwidth real
kernels reach), the worked answer gives the course's figure beside it, computed with the default. An
answer that builds on another question's numbers calls that question's function.

Examples
--------
>>> from llmcourse.interview import QUESTIONS
>>> QUESTIONS["kv_per_token"].numbers()["kv72"]
<Quantity(320.0, 'kibibyte')>
"""

from __future__ import annotations

import functools
from typing import Any

import pint

from llmcourse.assumptions import resolve
from llmcourse.catalog import bytes_per_value, gpus, models
from llmcourse.formulas import FORMULAS as F
from llmcourse.interview.figures import (
    CAPACITY,
    COURSE,
    ENVELOPE,
    LAB,
    PEAK_FACTOR,
    draw,
    pct,
    per_gpu_rate,
    per_s,
    read_time,
    seed004_model,
)
from llmcourse.interview.givens import (
    ANSWERS,
    CHAT_ANSWERS,
    CHAT_PROMPTS,
    CONTEXTS,
    GQA_MODELS,
    KV_WORDS,
    LONG,
    LONG_ANSWERS,
    LONG_PROMPTS,
    PER_DAY,
    PRICES,
    PROMPTS,
    SHORT_PROMPTS,
    batch64_pairs,
    billion_setup,
    book_only,
    fits_words,
    fleet350_rps,
    fp8_pairs,
    gqa70_setup,
    gqa_setups,
    long_pairs,
    one_gpu_models,
    one_gpu_setups,
    tp2_setup,
    two_gpu_setups,
)
from llmcourse.interview.questions import register_worked
from llmcourse.interview.templates import num
from llmcourse.planner.roofline import weight_read_ceiling
from llmcourse.planner.serving import compute_budget, fleet, prefill_pool, request_cycle, serving_plan, traffic
from llmcourse.replica.memory import (
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_batch,
    usable_memory,
    weight_bytes,
)
from llmcourse.replica.model import replica
from llmcourse.replica.prefilling import prefill
from llmcourse.replica.step import decode_step, matmul_precision
from llmcourse.units import HOURS_PER_MONTH, Q_
from llmcourse.validation.measured import measurements

__all__ = ["MIN_REPLICAS"]

#: Replicas a service runs at the least, so that one failure or deployment does not take it down
#: (the back-of-the-envelope method's "at least two replicas").
MIN_REPLICAS = 2


# --- L4: one number, right, with its unit ------------------------------------------------------------------
@register_worked("kv_context")
def _kv_context(variant: int = 0) -> dict[str, Any]:
    g = draw(
        variant, model=("Qwen2.5-72B", GQA_MODELS), prompt=(2_000, PROMPTS), answer=(300, ANSWERS), long=(32_768, LONG)
    )
    ctx, long_ctx = g["prompt"] + g["answer"], g["long"]
    short = kv_bytes_per_sequence(g["model"], ctx).to("GB")
    long = kv_bytes_per_sequence(g["model"], long_ctx)
    use = usable_memory("H100 SXM", assumptions=ENVELOPE).to("GB")
    return dict(
        model=g["model"],
        prompt=g["prompt"],
        answer=g["answer"],
        ctx=ctx,
        long=long_ctx,
        long_k=f"{long_ctx // 1024}K",
        src=book_only(variant),
        kvtok=kv_bytes_per_token(g["model"]).to("KiB"),
        kv2300=short,
        kv32k=long.to("GiB"),
        kv32k_gb=long.to("GB"),
        usable=use,
        share32k=float((long / use).to("").m * 100),
    )


@register_worked("traffic")
def _traffic(variant: int = 0) -> dict[str, Any]:
    g = draw(variant, per_day=(200_000, PER_DAY), prompt=(2_000, PROMPTS), answer=(300, ANSWERS))
    daily = Q_(g["per_day"], "1/day")
    t = traffic(daily, g["prompt"], g["answer"], peak_factor=PEAK_FACTOR)
    avg = traffic(daily, g["prompt"], g["answer"]).request_rate
    return dict(
        per_day=g["per_day"],
        prompt=g["prompt"],
        answer=g["answer"],
        avg=float(avg.to("1/s").m),
        rps=float(t.request_rate.to("1/s").m),
        tin=float(t.input_tokens_per_s.to("1/s").m),
        tout=float(t.output_tokens_per_s.to("1/s").m),
    )


@register_worked("single_stream")
def _single_stream(variant: int = 0) -> dict[str, Any]:
    if variant == 0:
        m, gpu, what = seed004_model(), "H100 SXM", "A 70B-parameter model"
    else:
        name, gpu = draw(variant, setup=(None, two_gpu_setups()))["setup"]
        m = models[name]
        what = f"{name} ({m.params / 1e9:.3g} billion parameters)"
    g = gpus[gpu]
    one = weight_read_ceiling(m, gpu, assumptions=ENVELOPE)
    two = weight_read_ceiling(m, gpu, n_gpus=2, assumptions=ENVELOPE)
    real = weight_read_ceiling(m, gpu, n_gpus=2, assumptions=COURSE)
    return dict(
        what=what,
        gpu=gpu.split()[0] if variant == 0 else gpu,
        bw=g.bandwidth,
        gpu_mem=g.memory,
        gpu_flops=g.flops,
        billions=m.params / 1e9,
        src=book_only(variant, ": the source's figure"),
        w=one.weights,
        t1=one.step_time,
        t2=two.step_time,
        r1=per_s(one.tokens_per_s_per_user),
        r2=per_s(two.tokens_per_s_per_user),
        r2_70=per_s(real.tokens_per_s_per_user),
        bw_pct=pct(resolve(COURSE).bandwidth_efficiency),
    )


@register_worked("memory_bound")
def _memory_bound(variant: int = 0) -> dict[str, Any]:
    a = resolve(LAB)
    if variant == 0:
        name, gpu, what, ctx = "Llama-3.1-8B", "H100 SXM", "Llama 3.1 8B", 2_304
    else:
        g = draw(variant, setup=(None, one_gpu_setups()), ctx=(None, CONTEXTS))
        (name, gpu), ctx = g["setup"], g["ctx"]
        what = name
    s = decode_step(name, gpu, batch=1, context_tokens=ctx, assumptions=a)
    l4 = decode_step(name, "L4", batch=1, context_tokens=ctx, assumptions=a)
    share = float((gpus["L4"].bandwidth / gpus[gpu].bandwidth).to("").m)
    return dict(
        what=what,
        gpu=gpu.split()[0] if variant == 0 else gpu,
        ctx=ctx,
        bw_tb=gpus[gpu].bandwidth.to("TB/s").m,
        fl_tf=gpus[gpu].flops.to("TFLOP/s").m,
        l4_share="a tenth of" if variant == 0 else f"{share:.2g} times",
        w=s.weights_read,
        kv=s.kv_read.to("GB"),
        flops=s.flops,
        mem=s.memory_time,
        comp=s.compute_time,
        ratio=float((s.memory_time / s.compute_time).to("").m),
        rate=per_s(s.step_time),
        l4=l4.step_time,
        bw_pct=pct(a.bandwidth_efficiency),
        fl_pct=pct(a.compute_efficiency),
        eta_b=a.bandwidth_efficiency,
        eta_c=a.compute_efficiency,
        fpp=a.flops_per_param,
    )


@register_worked("prefill_time")
def _prefill_time(variant: int = 0) -> dict[str, Any]:
    a = resolve(ENVELOPE)
    g = draw(variant, setup=(("Qwen2.5-72B", "H100 SXM"), fp8_pairs()), prompt=(2_000, PROMPTS))
    (name, gpu), prompt = g["setup"], g["prompt"]
    kw = dict(n_gpus=2, weight_bytes="fp8")
    p = prefill(name, gpu, prompt, assumptions=a, **kw)
    course = prefill(name, gpu, prompt, assumptions=COURSE, **kw)
    return dict(
        model=name,
        gpu=gpu.split()[0] if variant == 0 else gpu,
        prompt=prompt,
        prompt_m=str(prompt),
        billions=models[name].params / 1e9,
        gpu_flops=gpus[gpu].flops,
        gpu_tf=gpus[gpu].flops.to("TFLOP/s").m,
        gpu_fp8=gpus[gpu].fp8_flops,
        a_gpu=("An " if gpu[0] in "AEFHILMNORSX" else "A ") + (gpu.split()[0] if variant == 0 else gpu),
        src=book_only(variant, " That is the source's figure, with the matmuls at the BF16 peak."),
        flops=p.flops,
        rate=(p.flops / p.compute_time).to("PFLOP/s"),
        t=p.time.to("s"),
        mem=p.memory_time,
        w=weight_bytes(name, "fp8").to("GB"),
        fl_pct=pct(a.compute_efficiency),
        eta_c=a.compute_efficiency,
        fpp=a.flops_per_param,
        t_course=course.time.to("s"),
        comm_course=course.comm_time,
    )


# --- L5: chain numbers into a decision ------------------------------------------------------------------------
@register_worked("max_batch")
def _max_batch(variant: int = 0) -> dict[str, Any]:
    a = resolve(ENVELOPE)
    g = tp2_setup(variant)
    model, gpu = g["model"], g["gpu"]
    p = serving_plan(model, gpu, 2, g["ctx"], weight_bytes="fp8", assumptions=a)
    c = replica(model, gpu, tensor_parallel=2, prompt_tokens=g["prompt"], answer_tokens=g["answer"], weight_bytes="fp8")
    return dict(
        model=model,
        gpu=g["gpu_name"],
        prompt=g["prompt"],
        answer=g["answer"],
        ctx=g["ctx"],
        gpu_mem_m=gpus[gpu].memory.to("GB").m,
        kvtok=kv_bytes_per_token(model).to("KiB"),
        mem=p.usable_memory,
        mem_pct=pct(a.memory_fraction),
        mem_frac=a.memory_fraction,
        w=p.weights,
        free=(p.usable_memory - p.weights).to("GB"),
        kv=p.kv_per_sequence,
        batch=p.batch,
        user=per_s(p.tokens_per_s_per_user),
        read=(p.weights + p.batch * p.kv_per_sequence).to("GB"),
        user_step=per_s(c.step.tokens_per_s_per_user),
        user_course=per_s(c.tokens_per_s_per_user),
        bw_pct=pct(c.assumptions.bandwidth_efficiency),
        o=c.step.overhead_time,
        comm=c.step.comm_time,
        b_course=c.batch,
        others=c.batch - 1,
    )


@register_worked("full_gpu_step")
def _full_gpu_step() -> dict[str, Any]:
    a = resolve(ENVELOPE)
    mem = usable_memory("H100 SXM", assumptions=a).to("GB")
    step = read_time(mem, "H100 SXM", assumptions=a)
    course = read_time(mem, "H100 SXM", assumptions=COURSE)
    p7 = serving_plan("Qwen2.5-7B", "H100 SXM", 1, 2_300, assumptions=a)
    p72 = serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8", assumptions=a)
    return dict(
        mem=mem,
        mem_frac=a.memory_fraction,
        step=step,
        rate=per_s(step),
        b7=p7.batch,
        b72=p72.batch,
        u7=per_s(p7.tokens_per_s_per_user),
        u72=per_s(p72.tokens_per_s_per_user),
        h200=read_time(usable_memory("H200 SXM", assumptions=a), "H200 SXM", assumptions=a),
        b200=read_time(usable_memory("B200", assumptions=a), "B200", assumptions=a),
        step_course=course,
        rate_course=per_s(course),
        bw_pct=pct(resolve(COURSE).bandwidth_efficiency),
    )


@register_worked("batching")
def _batching() -> dict[str, Any]:
    m = seed004_model()
    c = {b: weight_read_ceiling(m, "H100 SXM", batch=b, assumptions=ENVELOPE) for b in (1, 8, 32, 128, 256)}
    x = {f"x{b}": round(per_s(c[b].throughput)) for b in (8, 32, 128, 256)}
    whole = resolve().replace(memory_fraction=1)  # the source counts all 160 GB as usable
    b = max_batch(m, "H100 SXM", 4_000, n_gpus=2, assumptions=whole)
    return dict(
        w=c[1].weights, t=c[1].step_time, r1=per_s(c[1].tokens_per_s_per_user), x1=per_s(c[1].throughput), b=b, **x
    )


@register_worked("kv_limit")
def _kv_limit(variant: int = 0) -> dict[str, Any]:
    g = gqa70_setup(variant)
    m = seed004_model()
    mha = m.with_(kv_heads=m.heads)
    every = dict(n_gpus=2, assumptions=g["every"])
    b_mha = max_batch(mha, g["gpu"], g["base"], **every)
    return dict(
        gpu_mem=g["gpu_mem"],
        base=g["base"],
        total=g["total"],
        mha_fit=fits_words(b_mha),
        mha_tok=kv_bytes_per_token(mha).to("MB"),
        mha_seq=kv_bytes_per_sequence(mha, g["base"]).to("GB"),
        gqa_tok=kv_bytes_per_token(m).to("MB"),
        gqa_kib=kv_bytes_per_token(m).to("KiB"),
        gqa_seq=kv_bytes_per_sequence(m, g["base"]).to("GB"),
        w=g["w"],
        free=g["free"],
        b_gqa=max_batch(m, g["gpu"], g["base"], **every),
        b_mha=b_mha,
    )


@register_worked("long_context")
def _long_context(variant: int = 0) -> dict[str, Any]:
    g = draw(
        variant,
        setup=(("Llama-3.1-8B", "H100 SXM"), long_pairs()),
        short=(2_048, SHORT_PROMPTS),
        long=(32_768, LONG_PROMPTS),
        answer=(512, LONG_ANSWERS),
    )
    (model, gpu), answer = g["setup"], g["answer"]
    short = replica(model, gpu, prompt_tokens=g["short"], answer_tokens=answer)
    long = replica(model, gpu, prompt_tokens=g["long"], answer_tokens=answer)
    # source 001's count (the lab's preset): every slot holds its full length, the static worst case; the course
    # admits on the KV blocks in use, so it fits more
    static = max_batch(model, gpu, g["short"] + answer, assumptions=resolve(LAB))
    return dict(
        model="Llama 3.1 8B" if variant == 0 else model,
        gpu=gpu.split()[0] if variant == 0 else gpu,
        price=gpus[gpu].price_per_hour,
        answer=answer,
        short=g["short"],
        long=g["long"],
        short_ctx=g["short"] + answer,
        long_ctx=g["long"] + answer,
        short_k=f"{g['short'] // 1024}K",
        long_k=f"{g['long'] // 1024}K",
        kvtok=kv_bytes_per_token(model).to("KiB"),
        b_static=static,
        kv32k=kv_bytes_per_sequence(model, g["long"]).to("GiB"),
        kv_short=short.kv_per_sequence,
        kv_long=long.kv_per_sequence,
        b_short=short.batch,
        b_long=long.batch,
        x_short=per_s(short.throughput),
        x_long=per_s(long.throughput),
        c_short=short.cost_per_million_output_tokens,
        c_long=long.cost_per_million_output_tokens,
        ratio=float((long.cost_per_million_output_tokens / short.cost_per_million_output_tokens).to("").m),
        share_short=pct(short.prefill_share),
        share_long=pct(long.prefill_share),
    )


@register_worked("gqa")
def _gqa(variant: int = 0) -> dict[str, Any]:
    a = resolve(LAB)
    gpu, ctx, kv = draw(variant, setup=(("H100 SXM", 32_768, "bf16"), gqa_setups()))["setup"]
    tokens = ctx + 512
    kv2, kv3 = kv_bytes_per_token("Llama-2-7B", kv), kv_bytes_per_token("Llama-3.1-8B", kv)
    return dict(
        gpu=gpu.split()[0] if variant == 0 else gpu,
        gpu_mem=gpus[gpu].memory,
        long_k=f"{ctx // 1024}K",
        tokens=tokens,
        kv_words=KV_WORDS[kv],
        per_value=f"{bytes_per_value(kv):g}",
        kv2=kv2.to("KiB"),
        kv3=kv3.to("KiB"),
        ratio=float((kv2 / kv3).to("").m),
        b2=max_batch("Llama-2-7B", gpu, tokens, kv_bytes=kv, assumptions=a),
        b3=max_batch("Llama-3.1-8B", gpu, tokens, kv_bytes=kv, assumptions=a),
        mem_pct=pct(a.memory_fraction),
    )


def _course_steps(model: str, gpu: str, ctx: int) -> dict[tuple[str, int], Any]:
    """The course's decode step at batch 1 and 64 in BF16, W4A16 (GPTQ: its scales read, its weights widened to BF16
    for the multiply) and FP8 (W8A8, at the FP8 peak)."""
    return {
        (w, b): decode_step(model, gpu, batch=b, context_tokens=ctx, weight_bytes=w)
        for w in ("bf16", "w4a16", "fp8")
        for b in (1, 64)
    }


def _served(model: str, gpu: str, ctx: int) -> dict[str, Any]:
    """The same 64 users served with their new prompts (512-token answers, prompts sized so that the average context
    is ``ctx``), as a serving engine runs them: each prompt goes whole into one of the decode steps, whose matmuls,
    at BF16 for W4A16, set that step; the other steps decode alone."""
    return {
        w: replica(model, gpu, batch=64, prompt_tokens=ctx - 256, answer_tokens=512, weight_bytes=w)
        for w in ("bf16", "w4a16", "fp8")
    }


def _gain(steps: dict[tuple[str, int], Any], w: str, b: int) -> float:
    return float((steps["bf16", b].step_time / steps[w, b].step_time).to("").m)


@functools.cache
def _quantization_setups() -> tuple[tuple[str, str, int], ...]:
    """(model, Hopper GPU, context) where the answer's verdicts hold: FP8 gains at both batches, and served with its
    prompts W4A16 keeps less of its batch-64 gain (still faster than BF16) while FP8 is faster than both (the
    quantization question's setting)."""
    out = []
    for model in one_gpu_models():
        for gpu in ("H100 SXM", "H100 PCIe", "H200 SXM", "H200 NVL", "H20"):
            for ctx in (2_304, 4_096, 8_192):
                steps = _course_steps(model, gpu, ctx)
                if not min(_gain(steps, "fp8", 1), _gain(steps, "fp8", 64)) > 1:
                    continue
                served = {w: r.tpot for w, r in _served(model, gpu, ctx).items()}
                kept = float((served["bf16"] / served["w4a16"]).to("").m)
                if served["fp8"] < min(served["bf16"], served["w4a16"]) and 1 < kept < _gain(steps, "w4a16", 64):
                    out.append((model, gpu, ctx))
    return tuple(out)


@register_worked("quantization")
def _quantization(variant: int = 0) -> dict[str, Any]:
    a = resolve(LAB)
    model, gpu, ctx = draw(variant, setup=(("Llama-3.1-8B", "H100 SXM", 2_304), _quantization_setups()))["setup"]
    kw = dict(batch=1, context_tokens=ctx, assumptions=a)
    s16 = decode_step(model, gpu, **kw)
    s4 = decode_step(model, gpu, weight_bytes="int4", **kw)
    # 4-bit values plus one FP16 scale per group of 128 weights
    scale = Q_(bytes_per_value("int4"), "B") + Q_(bytes_per_value("fp16"), "B") / 128
    s4s = decode_step(model, gpu, weight_bytes=scale, **kw)
    course = _course_steps(model, gpu, ctx)
    served = _served(model, gpu, ctx)
    return dict(
        model="Llama 3.1 8B" if variant == 0 else model,
        gpu=gpu.split()[0] if variant == 0 else gpu,
        bw=gpus[gpu].bandwidth,
        ctx=ctx,
        src=book_only(variant, ', the source\'s "about 1.9 ms"'),
        w16=s16.weights_read,
        w4=s4.weights_read,
        kv=s16.kv_read,
        t16=s16.step_time,
        t4=s4.step_time,
        t4s=s4s.step_time,
        scale=scale,
        bw_pct=pct(a.bandwidth_efficiency),
        eta_b=a.bandwidth_efficiency,
        bw_course=pct(resolve(COURSE).bandwidth_efficiency),
        **{f"c{w}_{b}": course[w, b].step_time for w in ("bf16", "w4a16", "fp8") for b in (1, 64)},
        comp4_64=course["w4a16", 64].compute_time,
        speedup1=_gain(course, "w4a16", 1),
        speedup64=_gain(course, "w4a16", 64),
        fp8_1=_gain(course, "fp8", 1),
        fp8_64=_gain(course, "fp8", 64),
        **{f"s{w}_64": served[w].tpot for w in served},
        served_prompt=ctx - 256,
        served4=float((served["bf16"].tpot / served["w4a16"].tpot).to("").m),
    )


@register_worked("batch_cost")
def _batch_cost(variant: int = 0) -> dict[str, Any]:
    g = draw(
        variant,
        setup=(("Llama-3.1-8B", "H100 SXM"), batch64_pairs()),
        prompt=(256, CHAT_PROMPTS),
        answer=(64, CHAT_ANSWERS),
        price=(3, PRICES),
    )
    (model, gpu) = g["setup"]
    out: dict[str, Any] = dict(
        model="Llama 3.1 8B" if variant == 0 else model,
        gpu=gpu.split()[0] if variant == 0 else gpu,
        prompt=g["prompt"],
        answer=g["answer"],
        price=Q_(g["price"], "USD/hour"),
    )
    for b in (1, 64):
        c = request_cycle(
            model,
            gpu,
            batch=b,
            prompt_tokens=g["prompt"],
            answer_tokens=g["answer"],
            price_per_hour=out["price"],
            assumptions=LAB,
        )
        out |= {
            f"t{b}": c.decode.step_time,
            f"x{b}": per_s(c.throughput),  # decode steps only
            f"cd{b}": c.decode_only_cost_per_million,  # the price of those decode-only tokens
            f"xe{b}": per_s(c.end_to_end_throughput),  # prefill and decode: what a GPU-hour buys
            f"c{b}": c.cost_per_million_output_tokens,  # the price of those
        }
    out["fold"] = out["x64"] / out["x1"]
    return out


@register_worked("cost_per_million")
def _cost_per_million(variant: int = 0) -> dict[str, Any]:
    a = resolve(ENVELOPE)
    util = 0.3  # the question's given: the fleet is busy 30% of the hours it is billed
    g = tp2_setup(variant, big=True)
    model, gpu = g["model"], g["gpu"]
    p = serving_plan(model, gpu, 2, g["ctx"], weight_bytes="fp8", assumptions=a)
    p7 = serving_plan("Qwen2.5-7B", gpu, 1, g["ctx"], assumptions=a)
    work = dict(prompt_tokens=g["prompt"], answer_tokens=g["answer"])
    c = replica(model, gpu, tensor_parallel=2, weight_bytes="fp8", assumptions=COURSE, **work)
    c7 = replica("Qwen2.5-7B", gpu, assumptions=COURSE, **work)

    def at_util(cost: pint.Quantity) -> pint.Quantity:
        return F["cost_at_utilisation"](cost_full=cost, utilisation=util).to("USD")

    return dict(
        model=model,
        gpu=g["gpu_name"],
        prompt=g["prompt"],
        answer=g["answer"],
        price=gpus[gpu].price_per_hour,
        price_m=float(gpus[gpu].price_per_hour.to("USD/hour").m),
        x=per_s(p.output_tokens_per_s),
        c=p.cost_per_million_output_tokens,
        c30=at_util(p.cost_per_million_output_tokens),
        x7=per_s(p7.output_tokens_per_s),
        c7=p7.cost_per_million_output_tokens,
        util=util,
        util_pct=pct(util),
        x_course=per_s(c.throughput),
        c_course=c.cost_per_million_output_tokens,
        c30_course=at_util(c.cost_per_million_output_tokens),
        x7_course=per_s(c7.throughput),
        c7_course=c7.cost_per_million_output_tokens,
        ratio7=float((c.cost_per_million_output_tokens / c7.cost_per_million_output_tokens).to("").m),
        share_course=pct(c.prefill_share),
        bw_pct=pct(c.assumptions.bandwidth_efficiency),
        o=c.step.overhead_time,
    )


@register_worked("scale_traffic")
def _scale_traffic(variant: int = 0) -> dict[str, Any]:
    load = draw(variant, per_day=(200_000, PER_DAY[2:]), prompt=(2_000, PROMPTS), answer=(300, ANSWERS))
    g = tp2_setup(variant, big=True)
    daily = Q_(load["per_day"], "1/day")
    t = traffic(daily, load["prompt"], load["answer"], peak_factor=PEAK_FACTOR)
    t10 = traffic(10 * daily, load["prompt"], load["answer"], peak_factor=PEAK_FACTOR)
    shape = dict(tensor_parallel=2, weight_bytes="fp8")
    env = replica(g["model"], g["gpu"], context_tokens=load["prompt"] + load["answer"], assumptions=ENVELOPE, **shape)
    course = replica(
        g["model"], g["gpu"], prompt_tokens=load["prompt"], answer_tokens=load["answer"], assumptions=COURSE, **shape
    )
    e1, e10 = fleet(t.output_tokens_per_s, env), fleet(t10.output_tokens_per_s, env)
    c1, c10 = fleet(t.output_tokens_per_s, course), fleet(t10.output_tokens_per_s, course)
    r1, r1c = max(MIN_REPLICAS, e1.replicas), max(MIN_REPLICAS, c1.replicas)
    one = e1.replicas == 1

    def replicas(n: int) -> str:
        return f"{num(n)} replica{'s' * (n != 1)}"

    return dict(
        model=g["model"],
        gpu=g["gpu_name"],
        today=f"one replica covers it, but I run {r1} for redundancy" if one else f"it takes {replicas(r1)}",
        today_n="one replica; two for redundancy," if one else f"{replicas(r1)},",
        replicas10=replicas(e10.replicas),
        replicas10_course=replicas(c10.replicas),
        tout=per_s(t.output_tokens_per_s),
        tout10=per_s(t10.output_tokens_per_s),
        x=per_s(env.throughput),
        exact1=e1.replicas_exact,
        exact=e10.replicas_exact,
        r1=r1,
        g1=r1 * env.tensor_parallel,
        r10=e10.replicas,
        g10=e10.gpus,
        x_course=per_s(course.throughput),
        h_course=c10.headroom,
        exact1_course=c1.replicas_exact,
        r1_course=r1c,
        g1_course=r1c * course.tensor_parallel,
        exact_course=c10.replicas_exact,
        r10_course=c10.replicas,
        g10_course=c10.gpus,
        bw_pct=pct(course.assumptions.bandwidth_efficiency),
        o=course.step.overhead_time,
    )


@register_worked("littles_law")
def _littles_law(variant: int = 0) -> dict[str, Any]:
    g = draw(variant, tokens=(1_250, (500, 750, 1_000, 1_250, 1_500, 2_000)), speed=(50, (20, 30, 40, 50, 60, 80, 100)))
    bn = billion_setup(variant)["bn"]  # the billion-a-day service's traffic, and its fleet sized on the peak
    rate = traffic(Q_(bn * 1e9, "1/day"), 1, 1).request_rate.to("1/s")
    t = F["generation_time"](tokens_per_request=g["tokens"], token_rate=Q_(g["speed"], "1/s")).to("s")
    n = float(F["littles_law"](request_rate=rate, time_in_system=t).m)
    gpus_ = _huge_fleet(variant)["g_peak"]
    return g | dict(
        bn=bn,
        rps=float(rate.m),
        t=t,
        n=n,
        peak=PEAK_FACTOR,
        n_peak=n * PEAK_FACTOR,
        gpus=gpus_,
        per_gpu=n * PEAK_FACTOR / gpus_,
    )


@register_worked("h200")
def _h200(variant: int = 0) -> dict[str, Any]:
    big = tuple(m for m in GQA_MODELS if 60e9 <= models[m].params <= 80e9)  # FP8 on one H200, BF16 on no H100 pair
    g = draw(variant, model=("Llama-3.1-70B", big), prompt=(2_000, PROMPTS), answer=(400, ANSWERS))
    work = dict(prompt_tokens=g["prompt"], answer_tokens=g["answer"], weight_bytes="fp8", assumptions=COURSE)
    a = replica(g["model"], "H100 SXM", tensor_parallel=2, **work)
    b = replica(g["model"], "H200 SXM", **work)
    return g | dict(
        model="Llama 3.1 70B" if variant == 0 else g["model"],
        w=a.weights,
        kv=a.kv_per_sequence,
        mem_h100=a.usable_memory,
        mem_h200=b.usable_memory,
        b_h100=a.batch,
        b_h200=b.batch,
        u_h100=per_s(a.tokens_per_s_per_user),
        u_h200=per_s(b.tokens_per_s_per_user),
        x_h100=per_s(a.throughput),
        x_h200=per_s(b.throughput),
        c_h100=a.cost_per_million_output_tokens,
        c_h200=b.cost_per_million_output_tokens,
        bw_pct=pct(a.assumptions.bandwidth_efficiency),
        o=a.step.overhead_time,
        comm=a.step.comm_time,
        # the cost per million scales with the price: the H200's price at which it matches the pair
        price_ratio=float((gpus["H200 SXM"].price_per_hour / gpus["H100 SXM"].price_per_hour).to("").m),
        breakeven=(
            gpus["H200 SXM"].price_per_hour * a.cost_per_million_output_tokens / b.cost_per_million_output_tokens
        ).to("USD/hour"),
    )


# --- Staff+: the whole system, assumptions stated ---------------------------------------------------------------
#: The chat product's least speed per user, the brief of roofline_fleet and of its chain (``fleet350``).
CHAT_USER_RATE = Q_(30, "1/s")


def batch_for_user_rate(model: str, gpu: Any, target: pint.Quantity, **work: Any) -> Any:
    """The course's replica at the largest batch (of those that fit) whose users each see at least ``target``
    tokens/s; the time per token grows with the batch, so the batches are tried from the largest down."""
    for b in range(replica(model, gpu, **work).batch, 0, -1):
        r = replica(model, gpu, batch=b, **work)
        if r.tokens_per_s_per_user >= target:
            return r
    return r  # not even batch 1 meets it: the answer's user rate says so


def _measured_prefill_row() -> dict[str, Any]:
    """TensorRT-LLM's measured row for Llama 3.1 70B FP8 on two H100s (1,000 in, 1,000 out, offline, as many at once as
    fit) beside the course's replica at its shape, with the prompts charged to the steps and with prefill for free:
    the measurement, not the FLOP budget, is why prefill is charged."""
    row = next(
        r for r in measurements() if (r.gpu, r.tp, r.model, r.weights) == ("H100 SXM", 2, "Llama-3.1-70B", "fp8")
    )
    work = dict(
        tensor_parallel=row.tp, prompt_tokens=row.isl, answer_tokens=row.osl, weight_bytes=row.weights, kv_bytes=row.kv
    )
    free = resolve(COURSE).replace(count_prefill=False, prefill_interference=False)
    return dict(
        row_measured=row.value,
        row_charged=per_s(replica(row.model, row.gpu, assumptions=COURSE, **work).throughput),
        row_free=per_s(replica(row.model, row.gpu, assumptions=free, **work).throughput),
    )


@register_worked("roofline_fleet")
def _roofline_fleet(variant: int = 0) -> dict[str, Any]:
    a, g, prompt, answer = resolve(CAPACITY), gpus["H100 SXM"], 2_000, 400
    rps = fleet350_rps(variant)
    shape = dict(tensor_parallel=2, batch=64, weight_bytes="fp8")
    r = replica("Llama-3.1-70B", g, context_tokens=prompt + answer, assumptions=a, **shape)
    demand = F["token_rate"](request_rate=Q_(rps, "1/s"), tokens_per_request=answer).to("1/s")
    f = fleet(demand, r)
    # does decode's idle compute hold the prefill the capacity method leaves out? (per replica, at the usable rate)
    budget = compute_budget(
        replica("Llama-3.1-70B", g, prompt_tokens=prompt, answer_tokens=answer, assumptions=a, **shape),
        f.usable_throughput_per_replica,
    )
    need, roof, used = budget.prefill, budget.usable, budget.decode
    # the same check with the matmuls at the FP8 peak the model's weights multiply in (the capacity method
    # itself counts BF16 compute)
    a8 = a.replace(matmul_precision="weights")
    budget8 = compute_budget(
        replica("Llama-3.1-70B", g, prompt_tokens=prompt, answer_tokens=answer, assumptions=a8, **shape),
        f.usable_throughput_per_replica,
    )
    # the course's replica: the largest batch that still gives each user the 30 tokens/s the brief asks for (with the
    # prompts in the steps, batch 64 gives 23.0)
    work = dict(tensor_parallel=2, prompt_tokens=prompt, answer_tokens=answer, weight_bytes="fp8", assumptions=COURSE)
    c64 = replica("Llama-3.1-70B", g, batch=64, **work)
    c = batch_for_user_rate("Llama-3.1-70B", g, CHAT_USER_RATE, **work)
    fc = fleet(demand, c)
    return _measured_prefill_row() | dict(
        rps=rps,
        demand=per_s(demand),
        kvtok=kv_bytes_per_token("Llama-3.1-70B").to("KiB"),
        hours=HOURS_PER_MONTH,
        left1=(g.memory - weight_bytes("Llama-3.1-70B", "fp8")).to("GB"),
        w=r.weights,
        kv=r.kv_per_sequence,
        read=(r.step.weights_read + r.step.kv_read).to("GB"),
        step=r.step.step_time,
        comp=r.step.compute_time,
        user=per_s(r.tokens_per_s_per_user),
        x=per_s(r.throughput),
        used=r.memory_used,
        mem=r.usable_memory,
        usable=per_s(f.usable_throughput_per_replica),
        exact=f.replicas_exact,
        replicas=f.replicas,
        gpus=f.gpus,
        cost=f.monthly_cost,
        naive=int(F["replicas_needed"](demand=demand, throughput=r.throughput).m),
        bw_pct=pct(a.bandwidth_efficiency),
        eta_b=a.bandwidth_efficiency,
        hf_pct=pct(a.headroom_fraction),
        need=need,
        roof=roof,
        used_flops=used,
        idle=budget.idle,
        roof8=budget8.usable,
        idle8=budget8.idle,
        fits8="holds" if budget8.prefill_fits else "does not hold",
        x_course=per_s(c.throughput),
        b_course=c.batch,
        user_course=per_s(c.tokens_per_s_per_user),
        user64=per_s(c64.tokens_per_s_per_user),
        share_course=pct(c.prefill_share),
        h_course=fc.headroom,
        replicas_course=fc.replicas,
        gpus_course=fc.gpus,
        cost_course=fc.monthly_cost,
        o=c.step.overhead_time,
    )


@register_worked("prefill_pool")
def _prefill_pool(variant: int = 0) -> dict[str, Any]:
    a, g = resolve(CAPACITY), gpus["H100 SXM"]
    fl = _roofline_fleet(variant)  # the same chat product: its peak requests times its 2,000-token prompts
    ptok = fl["rps"] * 2_000
    full, halved = Q_(ptok, "1/s"), Q_(ptok / 2, "1/s")
    p = prefill_pool(full, "Llama-3.1-70B", g, assumptions=a)
    half = prefill_pool(halved, "Llama-3.1-70B", g, assumptions=a)
    a8 = a.replace(matmul_precision="weights")  # the FP8 model's matmuls at the FP8 peak
    p8 = prefill_pool(full, "Llama-3.1-70B", g, weight_bytes="fp8", assumptions=a8)
    half8 = prefill_pool(halved, "Llama-3.1-70B", g, weight_bytes="fp8", assumptions=a8)
    return dict(
        ptok=ptok,
        ptok_tex=f"{ptok:,}".replace(",", "{,}"),
        gpus_fp8=p8.gpus,
        gpus_cached8=half8.gpus,
        per_gpu8=(g.peak_flops(matmul_precision("fp8", g, a8)) * a.compute_efficiency).to("PFLOP/s"),
        rate=p.compute_rate,
        gpus=p.gpus,
        gpus_cached=half.gpus,
        per_gpu=(g.peak_flops(matmul_precision(2, g, a)) * a.compute_efficiency).to("PFLOP/s"),
        fl_pct=pct(a.compute_efficiency),
        fpp=a.flops_per_param,
        gpus_capacity=fl["gpus"],
        **{
            k: fl[k]
            for k in (
                "hf_pct",
                "need",
                "idle",
                "roof",
                "used_flops",
                "usable",
                "gpus_course",
                "idle8",
                "fits8",
                "row_measured",
                "row_charged",
                "row_free",
            )
        },
    )


@register_worked("huge_fleet")
def _huge_fleet(variant: int = 0) -> dict[str, Any]:
    b = billion_setup(variant)
    daily = Q_(b["bn"] * 1e9, "1/day")
    tok = int(F["tokens_from_characters"](characters=b["chars"], chars_per_token=4).m)
    t = traffic(daily, 1, tok)
    g = {
        f"g{x}": int(F["replicas_needed"](demand=t.output_tokens_per_s, throughput=Q_(x, "1/s")).m)
        for x in (1_000, 2_000, 4_000)
    }
    # sized on the peak hour, with the course's headroom: a fleet sized on the daily mean queues every afternoon
    h = resolve(COURSE).headroom
    peak = traffic(daily, 1, tok, peak_factor=PEAK_FACTOR).output_tokens_per_s
    g_peak = int(F["replicas_needed"](demand=peak * h, throughput=Q_(b["xg"], "1/s")).m)
    # whose tokens/s? one H100's share of a replica at full load, answers of `tok` tokens; the prompt is not
    # given: the answer states 1,000 tokens
    prompt = 1_000
    x8, x70 = per_gpu_rate("Llama-3.1-8B", 1, "bf16", prompt, tok), per_gpu_rate("Llama-3.1-70B", 2, "fp8", prompt, tok)
    g70 = int(F["replicas_needed"](demand=peak * h, throughput=Q_(x70, "1/s")).m)
    return dict(
        bn=b["bn"],
        chars=b["chars"],
        kb=b["chars"] // 1_000,
        xg=b["xg"],
        g_x=int(F["replicas_needed"](demand=t.output_tokens_per_s, throughput=Q_(b["xg"], "1/s")).m),
        rps=float(t.request_rate.to("1/s").m),
        tok=tok,
        demand=float(t.output_tokens_per_s.to("1/s").m),
        peak=PEAK_FACTOR,
        demand_peak=float(peak.to("1/s").m),
        headroom=h,
        g_peak=g_peak,
        x8=x8,
        x70=x70,
        g70=g70,
        prompt=prompt,
        **g,
    )


@register_worked("moe")
def _moe(variant: int = 0) -> dict[str, Any]:
    g = draw(
        variant,
        gpu=("H100 SXM", ("H100 SXM", "H200 SXM", "B200", "MI300X", "MI325X", "A100 SXM 80GB", "H20", "B300")),
        ctx=(2_304, CONTEXTS[:6]),
        batch=(32, (8, 16, 24, 32, 48, 64)),
    )
    kw = dict(context_tokens=g["ctx"], assumptions=LAB)
    s1 = decode_step("Qwen3-30B-A3B", g["gpu"], batch=1, **kw)
    s32 = decode_step("Qwen3-30B-A3B", g["gpu"], batch=g["batch"], **kw)
    s8 = decode_step("Llama-3.1-8B", g["gpu"], batch=1, **kw)
    return g | dict(
        gpu=g["gpu"].split()[0] if variant == 0 else g["gpu"],
        w=weight_bytes("Qwen3-30B-A3B").to("GB"),
        w1=s1.weights_read,
        w32=s32.weights_read,
        t1=s1.step_time,
        t32=s32.step_time,
        t8=s8.step_time,
        phi=100 * s32.fraction_of_experts,
    )


@register_worked("pushback")
def _pushback() -> dict[str, Any]:
    a, b = _kv_limit(), _single_stream()
    return {k: a[k] for k in ("mha_seq", "gqa_seq", "b_gqa", "b_mha")} | {k: b[k] for k in ("w", "r1", "r2")}
