"""The worked answers of the 2026 staples (``llmcourse/data/interview/08_staples.md``).

One function for each question of the data file, registered under its id
(:func:`~llmcourse.interview.questions.register_worked`): serving a 405B dense model over two nodes (tensor and
pipeline parallelism, :mod:`llmcourse.replica.parallel`), DeepSeek-V3 with data-parallel attention and wide expert
parallelism, the time to first token (prefix caching, the prefill-to-decode handoff), long contexts by layer type,
checkpoint precisions (MXFP4, NVFP4 as W4A4 or W4A16, FP8), speculative decoding, multi-LoRA serving, Blackwell,
NVL72 and AMD, RL rollouts, collectives at decode sizes, and four design briefs planned with
:func:`~llmcourse.planner.design.plan`.

Each numeric function takes ``variant`` (0: the book's givens) and draws its givens with
:func:`~llmcourse.interview.figures.draw`; the steps of a chain draw with the same names, so every step sees the
same model, GPU and load for a variant, and change one given.

Examples
--------
>>> from llmcourse.interview import QUESTIONS
>>> a, b = (QUESTIONS[q].numbers(3)["per_gpu"] for q in ("s405_fp8", "s405_bf16"))
>>> a > b
True
"""

from __future__ import annotations

import functools
import math
from typing import Any

from llmcourse.assumptions import resolve
from llmcourse.catalog import gpus, links, models
from llmcourse.formulas import FORMULAS as F
from llmcourse.interview.figures import COURSE, draw, pct, per_s
from llmcourse.interview.givens import gpu_words
from llmcourse.interview.questions import register_worked
from llmcourse.planner.design import Brief, plan
from llmcourse.planner.disagg import kv_handoff
from llmcourse.planner.speculation import crossover_batch
from llmcourse.replica.attention import kv_held_si, kv_read_si
from llmcourse.replica.memory import (
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_batch,
    usable_memory,
    weight_bytes,
)
from llmcourse.replica.model import replica
from llmcourse.replica.parallel import allreduce_seconds, dispatch_gpus, layout, time_per_token_parts
from llmcourse.replica.prefilling import prefill
from llmcourse.replica.speculative import Speculation, speculative_step
from llmcourse.units import Q_

__all__ = ["DENSE", "LENGTHS_ANSWER", "LENGTHS_PROMPT"]

#: Prompt and answer lengths the variants draw from.
LENGTHS_PROMPT = (500, 1_000, 1_500, 2_000, 3_000, 4_000, 6_000, 8_000)
LENGTHS_ANSWER = (200, 300, 400, 600, 800, 1_000)
#: Dense models with a window of 32K tokens or more.
DENSE = ("Llama-3.1-8B", "Qwen2.5-7B", "Qwen3-8B", "Qwen3-14B", "Qwen3-32B", "Llama-3.1-70B", "Qwen2.5-72B")


def _fewest(model: str, gpu: str, tokens: float, weights: Any, at_least: int = 4) -> int:
    """The fewest GPUs (1, 2, 4, 8) of ``gpu`` whose memory holds ``model``'s weights and ``at_least`` sequences of
    ``tokens``."""
    return next(
        (n for n in (1, 2, 4, 8) if max_batch(model, gpu, tokens, n_gpus=n, weight_bytes=weights) >= at_least), 8
    )


def _ms(x: Any) -> Any:
    return x.to("ms")


# --- a 405B dense model over two nodes -------------------------------------------------------------------------------
def _s405(variant: int, weights: str, tp: int, pp: int, gpu: str | None = None) -> dict[str, Any]:
    # Hopper only: an A100 has no FP8 arithmetic, so FP8 there only stores the weights, and once a new prompt's
    # matmuls set its steps a GPU makes about as many tokens in BF16 over two nodes as in FP8 on one (within 1%,
    # either way): the chain's "FP8 not allowed" step would not move the figure per GPU
    g = draw(
        variant,
        gpu=("H100 SXM", ("H100 SXM",)),
        prompt=(2_000, LENGTHS_PROMPT),
        answer=(400, LENGTHS_ANSWER),
    )
    on = gpu or g["gpu"]
    r = replica(
        "Llama-3.1-405B",
        on,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        weight_bytes=weights,
        prompt_tokens=g["prompt"],
        answer_tokens=g["answer"],
    )
    parts = time_per_token_parts(r)
    return g | dict(
        on=on,
        n=r.n_gpus,
        tp=tp,
        pp=pp,
        w=r.weights.to("GB"),
        w_gpu=(r.weights / r.n_gpus).to("GB"),
        mem=gpus[on].memory,
        batch=r.batch,
        tpot=_ms(r.tpot),
        user=per_s(r.tokens_per_s_per_user),
        x=per_s(r.throughput),
        per_gpu=per_s(r.throughput) / r.n_gpus,
        comm=parts["communication"],
        link=r.layout.link.name,
        node_link=(r.layout.node_link or r.layout.link).name,
    )


@register_worked("s405_fp8")
def _s405_fp8(variant: int = 0) -> dict[str, Any]:
    return _s405(variant, "fp8", 8, 1)


@register_worked("s405_bf16")
def _s405_bf16(variant: int = 0) -> dict[str, Any]:
    return _s405(variant, "bf16", 8, 2)


@register_worked("s405_tp16")
def _s405_tp16(variant: int = 0) -> dict[str, Any]:
    return _s405(variant, "bf16", 16, 1)


@register_worked("s405_b200")
def _s405_b200(variant: int = 0) -> dict[str, Any]:
    return _s405(variant, "bf16", 8, 1, gpu="B200")


@register_worked("c_pp_tp")
def _c_pp_tp() -> dict[str, Any]:
    pp, tp = _s405(0, "bf16", 8, 2), _s405(0, "bf16", 16, 1)
    return dict(
        c_pp=pp["comm"],
        c_tp=tp["comm"],
        x_pp=pp["per_gpu"],
        x_tp=tp["per_gpu"],
        ib=links[tp["link"]].bandwidth,
        nv=links[pp["node_link"]].bandwidth,
        link=tp["link"],
        nvlink=pp["node_link"],
    )


# --- DeepSeek-V3: MLA, data-parallel attention, wide expert parallelism ---------------------------------------------
_MLA = ("DeepSeek-V3", "GLM-5", "DeepSeek-V3.2", "Kimi-K2.5")
_CONTEXTS = (
    4_096, 6_000, 8_192, 12_000, 16_384, 20_000, 24_000, 28_000, 32_768, 40_000, 48_000, 56_000, 65_536, 80_000,
    100_000, 120_000, 131_072, 150_000,
)  # fmt: skip


@register_worked("ds_mla")
def _ds_mla(variant: int = 0) -> dict[str, Any]:
    g = draw(variant, model=("DeepSeek-V3", _MLA), ctx=(32_768, _CONTEXTS))
    m = models[g["model"]]
    kv, gqa = kv_bytes_per_sequence(m, g["ctx"]), kv_bytes_per_sequence("Llama-3.1-405B", g["ctx"])
    return g | dict(
        kv=kv.to("GB"),
        per_token=kv_bytes_per_token(m).to("KiB"),
        gqa=gqa.to("GB"),
        ratio=float((gqa / kv).to("").m),
        rank=m.kv_lora_rank,
        rope=m.qk_rope_head_dim,
        layers=m.layers,
    )


_DS_GPUS = ("H200 SXM", "B200", "B300", "MI300X", "MI325X", "MI355X")


def _ds(variant: int, dp: int, tp: int) -> dict[str, Any]:
    g = draw(
        variant,
        gpu=("H200 SXM", _DS_GPUS),
        per_gpu=(32, (16, 24, 32, 48, 64, 96)),
        prompt=(2_000, LENGTHS_PROMPT),
        answer=(400, LENGTHS_ANSWER),
    )
    n = dp * tp
    kw = dict(tensor_parallel=tp, data_parallel=dp, prompt_tokens=g["prompt"], answer_tokens=g["answer"])
    full = replica("DeepSeek-V3", g["gpu"], **kw)
    r = replica("DeepSeek-V3", g["gpu"], batch=g["per_gpu"] * n, **kw)
    return g | dict(
        n=n,
        dp=dp,
        fit=full.max_batch,
        kv=full.kv_per_sequence.to("MB"),
        w=full.weights.to("GB"),
        batch=r.batch,
        tpot=_ms(r.tpot),
        comm=time_per_token_parts(r)["communication"],
        dispatch=dispatch_gpus(models["DeepSeek-V3"], r.layout.expert_parallel) if dp > 1 else 8.0,
        link=r.layout.link.name,
        x=per_s(r.throughput),
    )


@register_worked("ds_tp8")
def _ds_tp8(variant: int = 0) -> dict[str, Any]:
    return _ds(variant, 1, 8)


@register_worked("ds_dp8")
def _ds_dp8(variant: int = 0) -> dict[str, Any]:
    return _ds(variant, 8, 1)


@register_worked("ds_dp16")
def _ds_dp16(variant: int = 0) -> dict[str, Any]:
    return _ds(variant, 16, 1)


@register_worked("c_dp_attention")
def _c_dp_attention() -> dict[str, Any]:
    tp, dp = _ds(0, 1, 8), _ds(0, 8, 1)
    return dict(kv_tp=tp["kv"], kv_dp=dp["kv"], fit_tp=tp["fit"], fit_dp=dp["fit"], w_tp=tp["w"], w_dp=dp["w"])


# --- time to first token -----------------------------------------------------------------------------------------------
_TT_GPUS = ("H100 SXM", "H200 SXM", "A100 SXM 80GB", "MI300X", "L40S")


def _tt_setup(variant: int) -> dict[str, Any]:
    g = draw(
        variant,
        model=("Llama-3.1-70B", DENSE),
        gpu=("H100 SXM", _TT_GPUS),
        prompt=(16_000, (6_000, 8_000, 12_000, 16_000, 20_000, 24_000, 30_000)),
        share=(75, (50, 60, 75, 80, 90)),
    )
    g["n"] = _fewest(g["model"], g["gpu"], g["prompt"] + 500, "fp8", at_least=1)
    g["cached"] = g["prompt"] * g["share"] // 100
    return g


def _tt(variant: int, cached: bool, gpu: str | None = None) -> dict[str, Any]:
    g = _tt_setup(variant)
    on = gpu or g["gpu"]
    r = replica(
        g["model"],
        on,
        tensor_parallel=g["n"],
        weight_bytes="fp8",
        prompt_tokens=g["prompt"],
        answer_tokens=500,
        batch=1,
        cached_prompt_tokens=g["cached"] if cached else 0,
    )
    return g | dict(
        on=on,
        ttft=_ms(r.ttft),
        pre=_ms(r.first_prefill.time),
        over=Q_(resolve(COURSE).request_overhead_ms, "ms"),
        new=g["prompt"] - (g["cached"] if cached else 0),
    )


@register_worked("tt_cold")
def _tt_cold(variant: int = 0) -> dict[str, Any]:
    return _tt(variant, False)


@register_worked("tt_prefix")
def _tt_prefix(variant: int = 0) -> dict[str, Any]:
    return _tt(variant, True)


@register_worked("tt_b200")
def _tt_b200(variant: int = 0) -> dict[str, Any]:
    return _tt(variant, True, gpu="B200")


@register_worked("tt_handoff")
def _tt_handoff(variant: int = 0) -> dict[str, Any]:
    g = draw(
        variant,
        model=("Llama-3.1-70B", ("Llama-3.1-70B", "Llama-3.1-8B", "Qwen3-32B", "DeepSeek-V3", "gpt-oss-120b")),
        link=("InfiniBand NDR", ("InfiniBand NDR", "InfiniBand XDR", "Ethernet 400G RoCE", "InfiniBand HDR")),
        prompt=(8_000, (2_000, 4_000, 8_000, 16_000, 32_000)),
    )
    t = kv_handoff(g["model"], g["prompt"], link=g["link"])
    return g | dict(
        handoff=t,
        kv=kv_bytes_per_sequence(g["model"], g["prompt"]).to("MB"),
        bw=links[g["link"]].bandwidth,
        eff=pct(resolve(COURSE).link_efficiency),
    )


@register_worked("c_chunk")
def _c_chunk() -> dict[str, Any]:
    a = resolve(COURSE)
    chunk, prompt = a.prefill_chunk_tokens, 32_000
    kw = dict(n_gpus=4, weight_bytes="fp8")
    whole, one = prefill("Llama-3.1-70B", "H100 SXM", prompt, **kw), prefill("Llama-3.1-70B", "H100 SXM", chunk, **kw)
    r = replica(
        "Llama-3.1-70B", "H100 SXM", tensor_parallel=4, weight_bytes="fp8", prompt_tokens=2_000, answer_tokens=400
    )
    return dict(
        chunk=chunk,
        prompt=prompt,
        chunks=math.ceil(prompt / chunk),
        whole=_ms(whole.time),
        one=_ms(one.time),
        step=_ms(r.step.step_time),
        batch=r.batch,
    )


# --- long contexts by layer type ---------------------------------------------------------------------------------------
_LONG = (
    "Llama-3.1-70B",
    "Gemma-3-27B",
    "gpt-oss-120b",
    "Qwen3.5-397B-A17B",
    "DeepSeek-V3.2",
    "GLM-5",
    "Llama-4-Scout-17B-16E",
    "Llama-4-Maverick-17B-128E",
    "Kimi-K2.5",
    "MiniMax-M2.5",
)


def _ctx(variant: int, long: bool, kv: str = "bf16") -> dict[str, Any]:
    g = draw(
        variant,
        model=("Llama-3.1-70B", _LONG),
        base=(32_768, (8_192, 12_000, 16_384, 24_000, 32_768, 48_000, 65_536)),
        factor=(4, (4, 8, 16, 32)),
    )
    m = models[g["model"]]
    window = min(m.max_position, 1_048_576)
    g["long"] = min(window, g["base"] * g["factor"])
    tokens = g["long"] if long else g["base"]
    per_seq = kv_bytes_per_sequence(m, tokens, kv)
    return g | dict(
        tokens=tokens,
        window=window,
        kv=per_seq.to("GB"),
        per_token=(per_seq / tokens).to("KiB"),
        share=pct(float((per_seq / usable_memory("B200")).to("").m)),
        kind=_kind(g["model"]),
    )


def _kind(name: str) -> str:
    m = models[name]
    if m.linear_layers:
        return "hybrid: linear-attention layers with a fixed state, a few full-attention layers"
    if m.sliding_window:
        return "sliding-window layers beside full-attention layers"
    if m.attention_chunk:
        return "chunked-attention layers beside full-attention layers"
    if getattr(m, "index_topk", None):
        return "MLA with a sparse indexer (the KV of every token held, a few thousand read a step)"
    if m.kv_lora_rank:
        return "multi-head latent attention (one compressed latent per token and layer)"
    return "full attention with grouped-query heads in every layer"


@register_worked("ctx_base")
def _ctx_base(variant: int = 0) -> dict[str, Any]:
    return _ctx(variant, False)


@register_worked("ctx_long")
def _ctx_long(variant: int = 0) -> dict[str, Any]:
    return _ctx(variant, True)


@register_worked("ctx_fp8")
def _ctx_fp8(variant: int = 0) -> dict[str, Any]:
    return _ctx(variant, True, "fp8")


_TYPES = ("Gemma-3-27B", "Qwen3.5-397B-A17B", "gpt-oss-120b", "Llama-4-Scout-17B-16E", "DeepSeek-V3.2")


@register_worked("lc_types")
def _lc_types(variant: int = 0) -> dict[str, Any]:
    g = draw(
        variant,
        model=("Qwen3.5-397B-A17B", _TYPES),
        ctx=(131_072, (8_192, 12_000, 16_384, 20_000, 24_000, 32_768, 48_000, 65_536, 100_000, 131_072)),
    )
    full = kv_bytes_per_sequence("Llama-3.1-70B", g["ctx"])
    kv = kv_bytes_per_sequence(g["model"], g["ctx"])
    return g | dict(full=full.to("GB"), kv=kv.to("GB"), ratio=float((full / kv).to("").m), kind=_kind(g["model"]))


@register_worked("dsa_read")
def _dsa_read(variant: int = 0) -> dict[str, Any]:
    g = draw(variant, model=("DeepSeek-V3.2", ("DeepSeek-V3.2", "GLM-5")), ctx=(131_072, _CONTEXTS))
    m = models[g["model"]]
    held, read = kv_held_si(m, g["ctx"], 2.0), kv_read_si(m, g["ctx"], 2.0)
    return g | dict(
        held=Q_(held, "B").to("MB"),
        read=Q_(read, "B").to("MB"),
        share=pct(read / held),
        topk=m.index_topk,
    )


@register_worked("c_cp")
def _c_cp() -> dict[str, Any]:
    m = "Llama-4-Scout-17B-16E"
    tokens = 1_048_576
    kv = kv_bytes_per_sequence(m, tokens)
    whole = prefill(m, "H200 SXM", tokens, n_gpus=8, weight_bytes="fp8")
    return dict(
        tokens=tokens,
        kv=kv.to("GB"),
        mem=usable_memory("H200 SXM", n_gpus=8).to("GB"),
        w=weight_bytes(m, "fp8").to("GB"),
        pre=whole.time.to("s"),
        kv70=kv_bytes_per_sequence("Llama-3.1-70B", 131_072).to("GB"),
    )


# --- checkpoint precisions -----------------------------------------------------------------------------------------------
@functools.cache
def _gptoss_setups() -> tuple[tuple[str, str, int, int], ...]:
    """(model, GPU, prompt, answer) for the MXFP4 checkpoint question: a model whose checkpoint keeps its experts in
    MXFP4, a GPU rented by the hour (a price in the catalog) that holds it with two conversations at least, and a batch
    that memory sets (halving the lengths lets more in; not the engine's cap on running requests, vLLM's
    max_num_seqs)."""
    out = []
    for name, m in models.items():
        if (m.checkpoint or {}).get("experts") != "mxfp4":
            continue
        for gpu, g in gpus.items():
            if g.price_per_hour is None or g.unified_memory:
                continue
            for p in LENGTHS_PROMPT:
                for a in LENGTHS_ANSWER:
                    b = replica(name, gpu, prompt_tokens=p, answer_tokens=a).batch
                    if b >= 2 and replica(name, gpu, prompt_tokens=p // 2, answer_tokens=a // 2).batch > b:
                        out.append((name, gpu, p, a))
    return tuple(out)


@register_worked("pr_gptoss")
def _pr_gptoss(variant: int = 0) -> dict[str, Any]:
    m, gpu, p, a = draw(variant, setup=(("gpt-oss-120b", "H100 SXM", 2_000, 400), _gptoss_setups()))["setup"]
    r = replica(m, gpu, prompt_tokens=p, answer_tokens=a)
    w16 = weight_bytes(m, "bf16").to("GB")
    return dict(
        model=m,
        billions=models[m].params / 1e9,
        gpu=gpu.split()[0] if variant == 0 else gpu,
        prompt=p,
        answer=a,
        w=weight_bytes(m).to("GB"),
        w16=w16,
        naive16=gpu_words(math.ceil(float((w16 / gpus[gpu].memory).to("").m))),
        mem=gpus[gpu].memory,
        batch=r.batch,
        bits=8 * 0.53125,  # MXFP4: 4 bits and one 8-bit scale per 32 values (OCP Microscaling)
    )


def _fp4_setup(variant: int) -> dict[str, Any]:
    g = draw(
        variant,
        model=("Llama-3.1-70B", ("Llama-3.1-70B", "Qwen2.5-72B", "Qwen3-32B", "Llama-3.1-8B", "Qwen3-14B")),
        batch=(64, (48, 64, 96, 128, 160, 192, 256)),
        prompt=(2_000, LENGTHS_PROMPT[:6]),
        answer=(400, LENGTHS_ANSWER),
    )
    tokens = g["prompt"] + g["answer"]
    g["n"] = next(
        n for n in (1, 2, 4, 8) if max_batch(g["model"], "H100 SXM", tokens, n_gpus=n, weight_bytes="fp8") >= g["batch"]
    )
    return g


def _fp4(variant: int, weights: str, gpu: str = "B200") -> dict[str, Any]:
    g = _fp4_setup(variant)
    r = replica(
        g["model"],
        gpu,
        tensor_parallel=g["n"],
        weight_bytes=weights,
        prompt_tokens=g["prompt"],
        answer_tokens=g["answer"],
        batch=g["batch"],
    )
    s = r.step
    return g | dict(
        on=gpu,
        x=per_s(r.throughput),
        tpot=_ms(r.tpot),
        mem_t=_ms(s.memory_time),
        comp_t=_ms(s.compute_time),
        matmul=r.matmul,
        w=r.weights.to("GB"),
        peak=_peak(gpu, r.matmul),
    )


def _peak(gpu: str, matmul: str) -> Any:
    g = gpus[gpu]
    return {"fp4": g.fp4_flops, "fp8": g.fp8_flops}.get(matmul) or g.flops


@register_worked("fp4_w4a16")
def _fp4_w4a16(variant: int = 0) -> dict[str, Any]:
    return _fp4(variant, "w4a16")


@register_worked("fp4_w4a4")
def _fp4_w4a4(variant: int = 0) -> dict[str, Any]:
    out, fp8 = _fp4(variant, "nvfp4"), _fp4(variant, "fp8")
    faster = out["x"] > fp8["x"]
    return out | dict(
        x8=fp8["x"],
        mem8=fp8["mem_t"],
        vs8="faster" if faster else "slower",
        why8=(
            "the weight bytes halve and the FP4 peak doubles the FP8 one"
            if faster
            else "the step's memory time is mostly the BF16 KV cache, which 4-bit weights do not shrink, and 4-bit "
            "kernels reach a smaller share of the bandwidth"
        ),
    )


@register_worked("fp4_h100")
def _fp4_h100(variant: int = 0) -> dict[str, Any]:
    return _fp4(variant, "nvfp4", gpu="H100 SXM")


@register_worked("fp4_fp8")
def _fp4_fp8(variant: int = 0) -> dict[str, Any]:
    return _fp4(variant, "fp8", gpu="H100 SXM")


# --- speculative decoding ---------------------------------------------------------------------------------------------
def _sp(variant: int, batch: bool, drop: float = 0.0) -> dict[str, Any]:
    g = draw(
        variant,
        model=("Llama-3.1-70B", ("Llama-3.1-70B",)),
        gpu=("H100 SXM", ("H100 SXM", "H200 SXM", "B200", "MI300X", "A100 SXM 80GB")),
        k=(3, (2, 3, 4, 5)),
        alpha=(0.8, (0.7, 0.75, 0.8, 0.85)),
        b=(128, (128, 160, 192, 256)),
    )
    n = _fewest(g["model"], g["gpu"], 2_400, "fp8", at_least=g["b"] + 8)
    alpha = round(g["alpha"] - drop, 2)
    spec = Speculation("eagle head", g["k"], alpha)
    s = speculative_step(
        g["model"],
        g["gpu"],
        spec,
        batch=g["b"] if batch else 1,
        context_tokens=2_200,
        tensor_parallel=n,
        weight_bytes="fp8",
    )
    return g | dict(
        n=n,
        a=alpha,
        tau=s.expected_tokens,
        speedup=s.speedup,
        plain=_ms(s.plain.step_time),
        verify=_ms(s.verify.step_time),
        cycle=_ms(s.cycle_time),
        bound="compute" if s.verify.compute_time > s.verify.memory_time else "memory",
    )


@register_worked("sp_b1")
def _sp_b1(variant: int = 0) -> dict[str, Any]:
    return _sp(variant, False)


@register_worked("sp_batch")
def _sp_batch(variant: int = 0) -> dict[str, Any]:
    return _sp(variant, True)


@register_worked("sp_alpha")
def _sp_alpha(variant: int = 0) -> dict[str, Any]:
    return _sp(variant, True, drop=0.2)


@register_worked("sp_cross")
def _sp_cross(variant: int = 0) -> dict[str, Any]:
    g = draw(
        variant,
        gpu=("H100 SXM", ("H100 SXM", "H200 SXM", "B200", "MI300X", "A100 SXM 80GB")),
        k=(4, (2, 3, 4, 5, 6)),
        alpha=(0.7, (0.6, 0.65, 0.7, 0.75, 0.8)),
        ctx=(288, (288, 512, 1_024)),
    )
    spec = Speculation("eagle head", g["k"], g["alpha"])
    cross = crossover_batch("Llama-3.1-8B", g["gpu"], spec, context_tokens=g["ctx"], top=4_096)
    return g | dict(cross=cross if cross is not None else 4_096, found=cross is not None, tau=spec.expected_tokens)


#: The most adapters the multi-LoRA chain holds on the GPUs at once, and the models it serves them on.
_LORA_MOST = 64
_LORA_MODELS = ("Llama-3.1-8B", "Qwen2.5-7B", "Qwen3-8B", "Mistral-7B-v0.1", "Qwen3-14B", "Qwen3-32B", "Phi-4")


# --- multi-LoRA serving ------------------------------------------------------------------------------------------------
def _lora(variant: int, times: int = 1, resident: int = 8) -> dict[str, Any]:
    g = draw(
        variant,
        model=("Llama-3.1-8B", _LORA_MODELS),
        gpu=("H100 SXM", ("H100 SXM", "H200 SXM", "A100 SXM 80GB", "L40S", "B200")),
        rank=(16, (8, 16, 32, 64)),
        prompt=(2_000, LENGTHS_PROMPT[:5]),
    )
    m = models[g["model"]]
    rank = g["rank"] * times
    w, kv = weight_bytes(m, "bf16"), kv_bytes_per_sequence(m, g["prompt"] + 400)

    def adapter_of(r: int) -> Any:
        params = F["lora_adapter_params"].value(
            layers=m.layers,
            lora_rank=r,
            hidden=m.hidden,
            heads=m.heads,
            head_dim=m.head_dim,
            kv_heads=m.kv_heads,
            intermediate=m.intermediate,
        )
        return params, F["weight_bytes"](params=params, weight_bytes_per_param=Q_(2, "B")).to("MB")

    def batch_on(n: int, held: Any) -> int:
        mem = usable_memory(g["gpu"], n_gpus=n)
        return int(F["max_batch"](usable_memory=mem, weights=w + held, kv_per_sequence=kv).m) if mem > w + held else 0

    # the fewest GPUs that hold the chain's largest case (the most adapters at four times the rank) and 16 sequences
    most = _LORA_MOST * adapter_of(4 * g["rank"])[1]
    n = next((k for k in (1, 2, 4, 8) if batch_on(k, most) >= 16), 8)
    params, adapter = adapter_of(rank)
    batch = batch_on(n, resident * adapter)
    return g | dict(
        n=n,
        r=rank,
        params=params,
        adapter=adapter,
        share=pct(params / m.params),
        resident=resident,
        all_adapters=(resident * adapter).to("GB"),
        w=w.to("GB"),
        batch=batch,
        kv=kv.to("MB"),
    )


@register_worked("lo_bytes")
def _lo_bytes(variant: int = 0) -> dict[str, Any]:
    return _lora(variant)


@register_worked("lo_rank")
def _lo_rank(variant: int = 0) -> dict[str, Any]:
    return _lora(variant, times=4)


@register_worked("lo_many")
def _lo_many(variant: int = 0) -> dict[str, Any]:
    return _lora(variant, times=4, resident=_LORA_MOST)


# --- Blackwell, NVL72, AMD ----------------------------------------------------------------------------------------------
def _nv(variant: int, gpu: str | None = None, load: int = 1) -> dict[str, Any]:
    g = draw(
        variant,
        model=("DeepSeek-V3", ("DeepSeek-V3", "Kimi-K2.5", "DeepSeek-V3.2")),
        ep=(16, (16, 32)),
        per_gpu=(32, (8, 16, 24, 32, 48)),
        prompt=(2_000, LENGTHS_PROMPT[:6]),
        answer=(400, LENGTHS_ANSWER),
    )
    on = gpu or "H200 SXM"
    r = replica(
        g["model"],
        on,
        data_parallel=g["ep"],
        batch=g["per_gpu"] * g["ep"] * load,
        prompt_tokens=g["prompt"],
        answer_tokens=g["answer"],
    )
    parts = time_per_token_parts(r)
    return g | dict(
        on=on,
        tpot=_ms(r.tpot),
        comm=parts["communication"],
        batch=r.batch,
        link=r.layout.link.name,
        per_gpu3=g["per_gpu"] * load,
        dispatch=dispatch_gpus(models[g["model"]], g["ep"]),
    )


@register_worked("nv_h200")
def _nv_h200(variant: int = 0) -> dict[str, Any]:
    return _nv(variant)


@register_worked("nv_gb200")
def _nv_gb200(variant: int = 0) -> dict[str, Any]:
    return _nv(variant, "GB200")


@register_worked("nv_peak")
def _nv_peak(variant: int = 0) -> dict[str, Any]:
    return _nv(variant, "GB200", load=3)


@register_worked("amd_node")
def _amd_node(variant: int = 0) -> dict[str, Any]:
    g = draw(
        variant,
        model=("Llama-3.1-405B", ("Llama-3.1-405B", "DeepSeek-V3", "Qwen3-235B-A22B", "Mistral-Large-2407")),
        gpu=("MI355X", ("MI355X", "MI325X", "MI300X", "B200", "B300", "H200 SXM")),
        prompt=(2_000, LENGTHS_PROMPT),
        answer=(400, LENGTHS_ANSWER),
    )
    tokens = g["prompt"] + g["answer"]
    return g | dict(
        batch=max_batch(g["model"], g["gpu"], tokens, n_gpus=8, weight_bytes="fp8"),
        mem=gpus[g["gpu"]].memory,
        w=weight_bytes(g["model"], "fp8").to("GB"),
        kv=kv_bytes_per_sequence(g["model"], tokens).to("MB"),
        node=usable_memory(g["gpu"], n_gpus=8).to("GB"),
    )


# --- RL rollouts ---------------------------------------------------------------------------------------------------------
def _rl(variant: int, shared: bool = False, times: int = 1) -> dict[str, Any]:
    g = draw(
        variant,
        model=("Qwen3-32B", ("Qwen3-8B", "Qwen3-14B", "Qwen3-32B", "Llama-3.1-8B", "Llama-3.1-70B")),
        gpu=("H100 SXM", ("H100 SXM", "H200 SXM", "B200", "MI300X")),
        prompts=(512, (256, 512, 1_024)),
        samples=(16, (8, 16, 32)),
        prompt=(1_000, (500, 1_000, 1_500, 2_000)),
        answer=(8_000, (4_000, 6_000, 8_000, 12_000)),
    )
    answer = g["answer"] * times
    n = _fewest(g["model"], g["gpu"], g["prompt"] + 2 * g["answer"], "bf16", at_least=8)
    cached = g["prompt"] * (g["samples"] - 1) / g["samples"] if shared else 0
    r = replica(
        g["model"],
        g["gpu"],
        tensor_parallel=n,
        weight_bytes="bf16",
        prompt_tokens=g["prompt"],
        answer_tokens=answer,
        cached_prompt_tokens=cached,
    )
    tokens = g["prompts"] * g["samples"] * answer
    seconds = F["generation_time"](tokens_per_request=tokens, token_rate=r.throughput).to("s")
    return g | dict(
        n=n,
        answer2=answer,
        cached=cached,
        tokens=tokens,
        x=per_s(r.throughput),
        batch=r.batch,
        hours=(seconds * n).to("hour").m,
        prefilled=g["prompt"] - cached,  # prompt tokens each sample prefills itself
        wall=seconds.to("min"),
        prefill_pct=pct(r.prefill_share or 0.0),
    )


@register_worked("rl_base")
def _rl_base(variant: int = 0) -> dict[str, Any]:
    return _rl(variant)


@register_worked("rl_prefix")
def _rl_prefix(variant: int = 0) -> dict[str, Any]:
    return _rl(variant, shared=True)


@register_worked("rl_long")
def _rl_long(variant: int = 0) -> dict[str, Any]:
    return _rl(variant, shared=True, times=2)


@register_worked("c_structured")
def _c_structured() -> dict[str, Any]:
    r = replica("Llama-3.1-8B", "H100 SXM", batch=64, prompt_tokens=1_000, answer_tokens=300, weight_bytes="fp8")
    return dict(step=_ms(r.step.step_time), batch=r.batch, per_seq=(r.step.step_time / r.batch).to("us"))


# --- collectives at decode sizes -------------------------------------------------------------------------------------------
#: Models of distinct hidden sizes (the message of an all-reduce is tokens x hidden x 2 bytes).
_AR_MODELS = (
    "Llama-3.1-70B", "Llama-3.1-405B", "Llama-3.1-8B", "Mistral-Large-2407", "Mistral-Small-24B", "Gemma-3-27B",
)  # fmt: skip


def _ar(variant: int, n: int, prefill_chunk: bool = False) -> dict[str, Any]:
    g = draw(
        variant,
        model=("Llama-3.1-70B", _AR_MODELS),
        gpu=("H100 SXM", ("H100 SXM", "H200 SXM", "B200", "B300")),
        b=(32, (1, 4, 8, 16, 32, 64, 128)),
        chunk=(8_192, (2_048, 4_096, 8_192, 16_384)),
    )
    m = models[g["model"]]
    a = resolve(COURSE).replace(allreduce_algorithm="engine")
    lay = layout(g["model"], g["gpu"], tensor_parallel=n)
    step_tokens = g["chunk"] if prefill_chunk else g["b"]
    msg = F["activation_message"].value(step_tokens=step_tokens, hidden=m.hidden, activation_bytes=a.activation_bytes)
    name, best = allreduce_seconds(lay, n, msg, a)
    ring = allreduce_seconds(lay, n, msg, a.replace(allreduce_algorithm="ring"))[1]
    return g | dict(
        n=n,
        tokens=step_tokens,
        msg=Q_(msg, "B").to("KiB"),
        algo=name,
        best=Q_(best, "s").to("us"),
        ring=Q_(ring, "s").to("us"),
        x=ring / best,
        link=lay.link.name,
        layers=m.layers,
    )


@register_worked("ar_decode")
def _ar_decode(variant: int = 0) -> dict[str, Any]:
    return _ar(variant, 8)


@register_worked("ar_nodes")
def _ar_nodes(variant: int = 0) -> dict[str, Any]:
    return _ar(variant, 16)


@register_worked("ar_prefill")
def _ar_prefill(variant: int = 0) -> dict[str, Any]:
    return _ar(variant, 16, prefill_chunk=True)


# --- design briefs --------------------------------------------------------------------------------------------------------
def _design(model: str, gpu: str, brief: Brief, **kw: Any) -> dict[str, Any]:
    p = plan(model, gpu, brief, tensor_parallel="auto", **kw)
    return dict(
        gpus=p.gpus,
        tp=p.tensor_parallel,
        batch=p.batch,
        ttft=_ms(p.ttft),
        tpot=_ms(p.tpot),
        cost=p.cost_per_hour,
        per_million=p.cost_per_million_output_tokens,
        bottleneck=str(p.bottleneck),
        w=p.weights.to("GB"),
        kv=p.kv_per_request.to("GB"),
        replicas=p.gpus // p.tensor_parallel,
    )


@register_worked("d_405")
def _d_405(variant: int = 0) -> dict[str, Any]:
    g = draw(variant, gpu=("H100 SXM", ("H100 SXM", "H200 SXM", "B200")), rps=(20, (5, 10, 20, 40, 80)))
    brief = Brief(g["rps"], 3_000, 500, Q_(2_000, "ms"), Q_(60, "ms"))
    return g | _design("Llama-3.1-405B", g["gpu"], brief, weight_bytes="fp8")


@register_worked("d_dsv3")
def _d_dsv3(variant: int = 0) -> dict[str, Any]:
    g = draw(variant, gpu=("H200 SXM", ("H200 SXM", "B200")), rps=(50, (20, 50, 100, 200, 400)))
    brief = Brief(g["rps"], 2_000, 600, Q_(2_000, "ms"), Q_(60, "ms"))
    return g | _design("DeepSeek-V3", g["gpu"], brief)


@register_worked("d_longdoc")
def _d_longdoc(variant: int = 0) -> dict[str, Any]:
    g = draw(variant, gpu=("H200 SXM", ("H200 SXM", "B200", "H100 SXM")), rps=(4, (2, 4, 8, 16)))
    brief = Brief(g["rps"], 100_000, 500, Q_(20_000, "ms"), Q_(80, "ms"))
    hit = 80_000
    out = _design("Llama-3.1-70B", g["gpu"], brief, weight_bytes="fp8", kv_bytes="fp8", cached_prompt_tokens=hit)
    return g | out | dict(hit=hit)


@register_worked("d_rl")
def _d_rl(variant: int = 0) -> dict[str, Any]:
    g = draw(variant, gpu=("H100 SXM", ("H100 SXM", "H200 SXM", "B200")), rps=(8, (4, 8, 16, 32)))
    brief = Brief(g["rps"], 1_000, 8_000, Q_(30_000, "ms"), Q_(100, "ms"))
    return g | _design("Qwen3-32B", g["gpu"], brief, weight_bytes="bf16")
