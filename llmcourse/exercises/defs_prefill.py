"""Exercises for *Prefill is compute-bound* (``book/06_prefill.md``): FLOPs, TTFT, prefill pools.

``prefill_ex1`` .. ``prefill_ex6`` follow the chapter's exercises of the same labels (the numeric part of each).
They use the course's method (the default), except two that redo a source's worked figure under that source's
preset: ``prefill_ex2`` the back-of-the-envelope method's 0.29 s prefill, with FP8 compute
(``assumptions="envelope"``), and ``prefill_ex7`` the capacity-planning method's ~200-GPU prefill pool
(``assumptions="capacity"``). Each story states the efficiencies it uses, formatted from the preset.
"""

from __future__ import annotations

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import CAPACITY, COURSE, ENVELOPE, define, fp8_ok, pct, pick, pool
from llmcourse.units import fmt

EXERCISES: list = []

#: The method the notebook says these exercises follow (shown above its first exercise).
NOTEBOOK_METHOD = """
**The method.** The course's method (the package's default), except exercises 2 and 7, which redo a source's
worked figure under that source's assumptions (the back-of-the-envelope method's prefill, the capacity-planning
method's prefill pool). Each story says which method it uses and states its efficiencies.
"""

_TWO = [(1 / 2, "did you count 2 FLOPs (a multiply and an add) per parameter per token?")]
_PER_PARAM = Q_(COURSE.flops_per_param, "FLOP")
_DENSE = ("Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-7B", "Qwen2.5-72B", "Llama-3.1-405B")
#: Every dense model of the catalog (a mixture of experts' linear term counts only its active parameters).
_ALL_DENSE = (*_DENSE, "Llama-2-7B", "Llama-2-13B", "Llama-2-70B", "Mistral-7B-v0.1")


#: Shares (%) of the linear prefill term the attention term is asked to reach (100: where they are equal).
_SHARES = (10, 20, 25, 40, 50, 75, 100, 150, 200, 250, 300, 400)


def _crossover_prompt(v):
    m = lc.models[v["model"]]
    linear = lc.FORMULAS["prefill_flops_linear"](flops_per_param=_PER_PARAM, params=m.params, prompt_tokens=1)
    per_token_sq = (
        lc.FORMULAS["prefill_flops"](
            flops_per_param=_PER_PARAM,
            params=m.params,
            prompt_tokens=1,
            layers=m.layers,
            heads=m.heads,
            head_dim=m.head_dim,
        )
        - linear
    )  # the attention term at T = 1; it grows as T^2
    return (linear / per_token_sq).to("")


def _model_words(v: dict) -> dict:
    """The variant with the figures prefill_ex1's story prints (display keys: the answer reads the catalog)."""
    m = lc.models[v["model"]]
    reach = "equal" if v["share"] == 100 else f"reach {v['share']}% of"
    return v | dict(
        reach=reach, params=f"{m.params / 1e9:.3g} billion", layers=m.layers, heads=m.heads, head_dim=m.head_dim
    )


define(
    EXERCISES,
    "prefill_ex1",
    "When attention catches up",
    "Prefill's causal attention term, 2 x layers x heads x head dimension x T^2 FLOPs, grows with the square of the "
    "prompt length T; the linear term, 2 x parameters x T, only with T. For {model} ({params} parameters, {layers} "
    "layers, {heads} attention heads of dimension {head_dim}), at what prompt length does the attention term "
    "{reach} the linear term?",
    "",
    _model_words(dict(model="Llama-3.1-8B", share=100)),
    lambda r: _model_words(dict(model=pick(r, _ALL_DENSE), share=pick(r, _SHARES))),
    lambda v: v["share"] / 100 * _crossover_prompt(v),
    (
        "Attention FLOPs = 2 x layers x heads x head dim x T^2; linear FLOPs = 2 x parameters x T.",
        "Set attention = ({share} / 100) x linear: T = ({share} / 100) x parameters / (layers x heads x head dim).",
    ),
    bare_ok=True,
    followup="Show that the two terms are equal at $T_p=P/(L\\,H\\,d_{head})$, and evaluate that length for "
    "Llama 3.1 70B too.",
)


def _positions(model):
    """The longest prompt the model takes (its max_position): Llama 2's is 4,096 tokens."""
    return lc.models[model].max_position


def _vary_ttft(r):
    setup = dict(zip(("model", "precision", "gpu", "n"), pick(r, _TTFT()), strict=True))
    return _bf16_words(setup | dict(prompt=pick(r, range(500, min(16_000, _positions(setup["model"])) + 1, 250))))


def _bf16_words(v: dict) -> dict:
    """The variant with the back-of-the-envelope method's prefill at BF16 compute, as the story prints it (a display
    key: the answer computes its own)."""
    p = lc.prefill(
        v["model"], v["gpu"], v["prompt"], n_gpus=v["n"], weight_bytes=v["precision"], assumptions="envelope"
    )
    return v | dict(bf16_time=fmt(p.time, "s", 2))


@pool
def _TTFT():
    """(model, FP8, GPU, count): the two smallest counts of each FP8-capable GPU that hold the FP8 weights."""
    for model in ("Qwen2.5-72B", "Llama-3.1-70B", "Llama-3.1-8B", "Qwen2.5-7B", "Llama-3.1-405B", "Llama-2-70B"):
        for gpu in ("H100 SXM", "H200 SXM", "B200", "MI300X", "H100 PCIe", "L40S"):
            if fp8_ok("fp8", gpu):
                counts = [n for n in (1, 2, 4, 8) if lc.weight_bytes(model, "fp8") < lc.usable_memory(gpu, n)]
                yield from ((model, "fp8", gpu, n) for n in counts[:2])


define(
    EXERCISES,
    "prefill_ex2",
    "Prefill with FP8 compute",
    "A retrieval-augmented (RAG) assistant runs {model} with FP8 weights on {n} x {gpu}, prompts of {prompt} "
    "tokens. The back-of-the-envelope method prefills one in {bf16_time} with BF16 compute; redo it with FP8 compute (twice the "
    f"BF16 peak) at {pct(ENVELOPE.compute_efficiency)} of that peak: "
    f"{ENVELOPE.flops_per_param:g} FLOPs per parameter per token and no attention term, as that method counts "
    f"them, or one read of the weights at {pct(ENVELOPE.bandwidth_efficiency)} of the datasheet bandwidth if that "
    "is slower. What is the time to first token?",
    "s",
    _bf16_words(dict(model="Qwen2.5-72B", precision="fp8", gpu="H100 SXM", n=2, prompt=2_000)),
    _vary_ttft,
    lambda v: (
        lc.prefill(
            v["model"],
            v["gpu"],
            v["prompt"],
            n_gpus=v["n"],
            weight_bytes=v["precision"],
            compute_precision="fp8",
            assumptions="envelope",
        ).time
    ),
    (
        f"FLOPs = {ENVELOPE.flops_per_param:g} x parameters x {{prompt}}.",
        f"Time = FLOPs / ({{n}} x {ENVELOPE.compute_efficiency:g} x lc.gpus['{{gpu}}'].peak_flops('fp8')).",
    ),
    mistakes=lambda v: [
        *_TWO,
        (2.0, "did you use the BF16 peak? FP8 compute doubles it"),
        *([(v["n"], "did you use one GPU's FLOP/s only?")] if v["n"] > 1 else []),
    ],
    followup="Is it still compute-bound?",
)


#: How prefill_ex3's story states the weights' precision, and lc.PRECISIONS' name for it (INT4 weights are
#: multiplied in BF16: lc.matmul_precision("int4", gpu) is "bf16").
_PREFILL_WEIGHTS = {"BF16": "bf16", "INT4 weights, BF16 compute": "int4"}


@pool
def _ONE_GPU_PREFILL():
    """(model, GPU, story precision): the GPUs of the catalog whose usable memory holds the model's weights."""
    for model in _DENSE[:4]:
        for gpu in lc.gpus:
            for said, precision in _PREFILL_WEIGHTS.items():
                if lc.weight_bytes(model, precision) < lc.usable_memory(gpu):
                    yield model, gpu, said


def _memory_bound_below(v):
    p = lc.prefill(v["model"], v["gpu"], 1, attention=False, weight_bytes=_PREFILL_WEIGHTS[v["precision"]])
    return (p.memory_time / p.compute_time).to("")  # compute time grows linearly from 1 token


define(
    EXERCISES,
    "prefill_ex3",
    "Short prompts are memory-bound",
    f"{{model}} ({{precision}}) prefills on one {{gpu}} at the course's {pct(COURSE.compute_efficiency)} of peak FLOP/s and "
    f"{pct(COURSE.bandwidth_efficiency)} of peak bandwidth. Ignoring the attention term, below what prompt length "
    "is the prefill memory-bound: its compute time shorter than one read of the weights?",
    "",
    dict(model="Llama-3.1-8B", gpu="H100 SXM", precision="BF16"),
    lambda r: dict(zip(("model", "gpu", "precision"), pick(r, _ONE_GPU_PREFILL()), strict=True)),
    _memory_bound_below,
    (
        f"Compute time = {COURSE.flops_per_param:g} x P x T / ({COURSE.compute_efficiency:g} x F) at the BF16 peak F; "
        f"memory time = bytes per weight x P / ({COURSE.bandwidth_efficiency:g} x bandwidth).",
        "Set them equal and solve for T: the parameter count cancels.",
    ),
    bare_ok=True,
    tolerance=0.02,
    followup="Compare it with the ridge point of {ref}`decode`.",
)


def _pool(v):
    tokens = Q_(v["rate"] * (1 - v["hit"]), "1/s")
    return lc.prefill_pool(tokens, v["model"], v["gpu"]).gpus


define(
    EXERCISES,
    "prefill_ex4",
    "A prefill pool with prefix caching",
    f"A platform prefills {{rate}} prompt tokens per second of {{model}} (BF16) on a pool of {{gpu}}s at the course's "
    f"{pct(COURSE.compute_efficiency)} of their BF16 peak, {COURSE.flops_per_param:g} FLOPs per parameter per "
    "token. Prefix caching serves {hit_pct}% of the prompt tokens from cache. How many GPUs does the pool need?",
    "",
    dict(model="Llama-3.1-70B", rate=700_000, gpu="H100 SXM", hit=0.6, hit_pct=60),
    lambda r: (
        lambda h: dict(
            model=pick(r, ("Llama-3.1-70B", "Llama-3.1-8B", "Qwen2.5-72B")),
            rate=pick(r, (100_000, 350_000, 700_000, 1_500_000)),
            gpu=pick(r, ("H100 SXM", "B200", "MI300X")),
            hit=h / 100,
            hit_pct=h,
        )
    )(pick(r, (0, 30, 50, 60, 80))),
    _pool,
    (
        "Only the tokens that miss the cache are prefilled: {rate} x (1 - {hit}).",
        f"GPUs = tokens/s x {COURSE.flops_per_param:g} x parameters / ({COURSE.compute_efficiency:g} x peak FLOP/s), "
        "rounded up.",
    ),
    integer=True,
    bare_ok=True,
    followup="How many B200s instead?",
)


def _mean_fcfs(v):
    one = lc.prefill(v["model"], v["gpu"], v["prompt"]).time
    n = v["users"]
    return one * sum(range(1, n + 1)) / n  # the i-th prompt waits for i prefills


define(
    EXERCISES,
    "prefill_ex5",
    "A burst, one prompt at a time",
    f"{{users}} users send {{prompt}}-token prompts to {{model}} (BF16, one {{gpu}}, the course's "
    f"{pct(COURSE.compute_efficiency)} of peak FLOP/s, attention term included) at the same instant. Prefill "
    "runs one prompt at a time, first come first served. What is the mean time to first token over the {users} "
    "users?",
    "s",
    dict(model="Llama-3.1-8B", gpu="H100 SXM", prompt=2_048, users=64),
    lambda r: dict(
        model=pick(r, ("Llama-3.1-8B", "Qwen2.5-7B")),
        gpu=pick(r, ("H100 SXM", "H200 SXM", "A100 SXM 80GB")),
        prompt=pick(r, (1_024, 2_048, 4_096)),
        users=pick(r, (16, 32, 64)),
    ),
    _mean_fcfs,
    (
        "The i-th user waits for i prefills of one prompt each.",
        "Mean = one prefill x (1 + 2 + ... + {users}) / {users} = one prefill x ({users} + 1) / 2.",
    ),
    mistakes=lambda v: [(2 * v["users"] / (v["users"] + 1), "that is the longest wait, not the mean")],
    tolerance=0.02,
    followup="What are the shortest, median and longest times to first token, and how do they compare with "
    "prefilling all the prompts together?",
)


@pool
def _ONE_MOE():
    """(mixture of experts, GPU) whose BF16 weights fit in one GPU's usable memory."""
    for model in ("Qwen3-30B-A3B", "Mixtral-8x7B"):
        for gpu in ("H100 SXM", "H200 SXM", "B200", "MI300X", "MI325X", "A100 SXM 80GB"):
            if lc.weight_bytes(model) < lc.usable_memory(gpu):
                yield model, gpu


define(
    EXERCISES,
    "prefill_ex6",
    "Prefill of a mixture of experts",
    f"A search product prefills {{prompt}}-token prompts on {{model}} (BF16) on one {{gpu}}, at the course's "
    f"{pct(COURSE.compute_efficiency)} of peak FLOP/s and {pct(COURSE.bandwidth_efficiency)} of peak bandwidth, "
    "attention term included. How long does one prefill take?",
    "ms",
    dict(model="Qwen3-30B-A3B", gpu="H100 SXM", prompt=2_048),
    lambda r: (
        dict(zip(("model", "gpu"), pick(r, _ONE_MOE()), strict=True)) | dict(prompt=pick(r, range(512, 16_385, 256)))
    ),
    lambda v: lc.prefill(v["model"], v["gpu"], v["prompt"]).time,
    (
        "Use the active parameters in 2 x P x T: each token passes through k experts only.",
        "Compare with one read of all the weights (total parameters x 2 bytes / "
        f"({COURSE.bandwidth_efficiency:g} x bandwidth)); the slower wins.",
    ),
    tolerance=0.02,
    followup="Which parameter count went into $2\\,P\\,T_p$, total or active, and why? Compare with the prefill "
    "of the same prompt on Llama 3.1 8B.",
)

define(
    EXERCISES,
    "prefill_ex7",
    "GPUs for a prefill stream",
    f"A platform serving {{model}} (BF16) would run prefill alone on {{gpu}}s, for {{rate}} prompt tokens per "
    f"second. Count it as the capacity-planning method does: {CAPACITY.flops_per_param:g} FLOPs per active "
    f"parameter per token at {pct(CAPACITY.compute_efficiency)} of the BF16 peak. How many GPUs does that take?",
    "",
    dict(model="Llama-3.1-70B", rate=700_000, gpu="H100 SXM"),
    lambda r: dict(
        model=pick(r, ("Llama-3.1-70B", "Llama-3.1-8B", "Qwen2.5-72B")),
        rate=pick(r, (100_000, 350_000, 700_000, 1_500_000)),
        gpu=pick(r, ("H100 SXM", "B200", "MI300X")),
    ),
    lambda v: lc.prefill_pool(Q_(v["rate"], "1/s"), v["model"], v["gpu"], assumptions="capacity").gpus,
    (
        f"GPUs = tokens/s x {CAPACITY.flops_per_param:g} x active parameters / ({CAPACITY.compute_efficiency:g} x "
        f"lc.gpus['{{gpu}}'].peak_flops('{CAPACITY.matmul_precision}')).",
        "Round up.",
    ),
    integer=True,
    bare_ok=True,
)
