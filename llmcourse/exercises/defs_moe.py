"""Exercises for *Mixture-of-experts routing* (``book/07_moe.md``): experts touched and bytes per step.

``moe_ex1`` .. ``moe_ex3``, ``moe_ex5`` and ``moe_ex6`` follow the chapter's exercises of the same labels (their
numeric part; ``moe_ex3`` is skewed routing, checked with :func:`llmcourse.planner.moe.fraction_touched_skewed`); the
chapter's ``moe_ex4`` (a simulation's variance) is an open question and has no auto-checked version.
``moe_ex7`` .. ``moe_ex9`` are extra. The step times are the course's method (the default); the stories state its
efficiencies, formatted from ``lc.resolve()``.
"""

from __future__ import annotations

import llmcourse as lc
from llmcourse.exercises._common import COURSE, FLOOR, define, pct, pick
from llmcourse.planner.moe import fraction_touched_skewed, hot_cold_pick_probabilities

EXERCISES: list = []

#: The course's decode efficiencies, as the stories state them.
_ETAS = f"{pct(COURSE.bandwidth_efficiency)} of peak bandwidth, {pct(COURSE.compute_efficiency)} of peak FLOP/s"

_MOE = ("Qwen3-30B-A3B", "Qwen3-235B-A22B", "Mixtral-8x7B", "DeepSeek-V3", "gpt-oss-120b")
_PHI = (
    "Each token picks k of E experts: the chance that a given expert is not picked by one token is 1 - k/E.",
    "With {batch} independent tokens: touched = 1 - (1 - k/E)^{batch}; k and E are "
    "lc.models['{model}'].experts_per_token and .experts.",
)


def _experts(v: dict) -> dict:
    """The variant with its model's routed experts and picks per token, as the story prints them (display keys:
    the answers read the catalog)."""
    m = lc.models[v["model"]]
    return v | dict(experts=m.experts, k=m.experts_per_token)


def _phi(model, batch):
    m = lc.models[model]
    return lc.FORMULAS["moe_fraction_touched"](experts_per_token=m.experts_per_token, experts=m.experts, batch=batch)


define(
    EXERCISES,
    "moe_ex1",
    "Routing with replacement",
    "Suppose each of a token's {k} picks were independent and uniform over all {experts} experts (with "
    "replacement, so a token may pick the same expert twice). At a batch of {batch}, what fraction of the experts "
    "is touched?",
    "",
    dict(experts=8, k=2, batch=1),
    lambda r: dict(experts=pick(r, (8, 16, 32, 64, 128, 256)), k=pick(r, (1, 2, 4, 6, 8)), batch=pick(r, range(1, 17))),
    lambda v: lc.FORMULAS["moe_fraction_touched"](experts_per_token=1, experts=v["experts"], batch=v["k"] * v["batch"]),
    (
        "Now there are {k} x {batch} independent picks, each missing a given expert with probability 1 - 1/{experts}.",
        "Touched = 1 - (1 - 1/{experts})^({k} x {batch}).",
    ),
    bare_ok=True,
    followup="Derive this fraction for routing with replacement in general, as {eq}`eq-moe-phi` is derived for "
    "distinct picks. Which is larger, with or without replacement, and by how much here?",
)

define(
    EXERCISES,
    "moe_ex2",
    "Experts a batch touches",
    "A chat app decodes {batch} users together on {model}, which routes each token to {k} of its {experts} "
    "experts. Under uniform, independent routing, what fraction of the routed experts does one step read (on "
    "average)?",
    "",
    _experts(dict(model="gpt-oss-120b", batch=16)),
    lambda r: _experts(dict(model=pick(r, _MOE), batch=pick(r, range(1, 129)))),
    lambda v: _phi(v["model"], v["batch"]),
    _PHI,
    bare_ok=True,
    mistakes=lambda v: [
        (
            min(1.0, v["batch"] * lc.models[v["model"]].experts_per_token / lc.models[v["model"]].experts)
            / _phi(v["model"], v["batch"]).m,
            "batch x k/E counts an expert twice when two tokens pick it",
        )
    ],
    followup="What is it at a batch of one and of sixty-four, and how many bytes of weights does a step read at "
    "each of the three batches, with the weights as the checkpoint stores them (the experts in MXFP4, 4.25 bits a "
    "weight with their scales; attention, embeddings and output head in BF16)?",
)


def _skewed(v, per_pick=False):
    """Fraction touched under hot/cold routing; ``per_pick``: the slip of one pick per token (p_i adding to 1)."""
    m = lc.models[v["model"]]
    p = hot_cold_pick_probabilities(m.experts, m.experts_per_token, hot=v["hot"], hot_share=v["hot_percent"] / 100)
    if per_pick:
        p = [x / m.experts_per_token for x in p]
        return sum(1 - (1 - x) ** v["batch"] for x in p) / len(p)  # the slip itself, not a formula of the course
    return fraction_touched_skewed(p, v["batch"])


def _hot_cold(v: dict) -> dict:
    """moe_ex3's variant with its model's experts and the count of cold ones (display keys)."""
    v = _experts(v)
    return v | dict(cold=v["experts"] - v["hot"])


define(
    EXERCISES,
    "moe_ex3",
    "Skewed routing",
    "The router of {model} ({experts} routed experts, {k} per token) is skewed: {hot_percent}% of all expert picks "
    "go to {hot} 'hot' experts (evenly among them) and the rest are spread evenly over the other {cold}. Each token "
    "still picks its {k} distinct experts, and tokens route independently. At a batch of {batch}, what fraction of "
    "the routed experts does one step touch on average?",
    "",
    _hot_cold(dict(model="Qwen3-30B-A3B", hot=16, hot_percent=50, batch=32)),
    lambda r: _hot_cold(
        dict(
            model=pick(r, ("Qwen3-30B-A3B", "Qwen3-235B-A22B", "DeepSeek-V3", "gpt-oss-120b")),
            hot=pick(r, (8, 16, 32)),
            hot_percent=pick(r, (25, 50, 75)),
            batch=pick(r, (8, 16, 32, 64)),
        )
    ),
    _skewed,
    (
        "Find each expert's chance p_i that one token picks it (the p_i add up to k = "
        "lc.models['{model}'].experts_per_token). A hot expert gets k x {hot_percent}% / {hot} picks per token, a "
        "cold one k x (100 - {hot_percent})% / (E - {hot}). For Qwen3-30B-A3B at the book's numbers: hot "
        "p = (8/2)/16 = 1/4, cold p = (8/2)/112 = 1/28.",
        "The batch misses expert i with probability (1 - p_i)^{batch}: touched = (1/E) x sum over the experts of "
        "[1 - (1 - p_i)^{batch}] = [{hot} x (1 - (1 - p_hot)^{batch}) + (E - {hot}) x (1 - (1 - p_cold)^{batch})] / E.",
        "Exact for the average even though one token's picks are not independent of each other: the average "
        "only needs each expert's own chance p_i. Compare with uniform routing, 1 - (1 - k/E)^{batch}: skew "
        "touches fewer experts.",
    ),
    bare_ok=True,
    mistakes=lambda v: [
        (_phi(v["model"], v["batch"]).m / _skewed(v), "that is uniform routing: the hot experts soak up picks"),
        (_skewed(v, per_pick=True) / _skewed(v), "a token makes k picks: the p_i add up to k, not to 1"),
        (1 / _skewed(v), "the cold experts are missed with probability (1 - p_cold)^B, which is not 0"),
    ],
    followup="Compare it with the fraction uniform routing touches at the same batch.",
)


def _step(model, gpu, batch, context):
    return lc.decode_step(model, gpu, batch=batch, context_tokens=context).step_time


def _slower_from(v):
    """Smallest batch at which the MoE model's step is slower than the dense model's (bisection)."""
    lo, hi = 1, 1_024
    while lo < hi:
        mid = (lo + hi) // 2
        slower = _step(v["model"], v["gpu"], mid, v["context"]) > _step(v["dense"], v["gpu"], mid, v["context"])
        lo, hi = (lo, mid) if slower else (mid + 1, hi)
    return lo


def _vary_crossing(r):
    """A dense model, GPU and context where the MoE step does become the slower one below a batch of 1,024 (at
    long contexts the dense model's larger KV cache keeps it the slower at every batch): drawn until it does."""
    while True:
        v = dict(
            model=pick(r, ("Qwen3-30B-A3B", "Mixtral-8x7B", "gpt-oss-20b")),
            dense=pick(r, ("Llama-3.1-8B", "Qwen2.5-7B", "Llama-2-7B", "Llama-2-13B", "Mistral-7B-v0.1")),
            gpu=pick(r, ("H100 SXM", "H200 SXM", "B200", "MI300X", "MI325X", "A100 SXM 80GB")),
            context=pick(r, range(256, 4_097, 128)),
        )
        fits = lc.weight_bytes(v["model"]) < lc.usable_memory(v["gpu"])
        if fits and _step(v["model"], v["gpu"], 1_023, v["context"]) > _step(v["dense"], v["gpu"], 1_023, v["context"]):
            return v


def _vary_step_ratio(r):
    """A crossing pair (the MoE step does become the slower) at a batch from 1 to 256."""
    return dict(_vary_crossing(r), batch=pick(r, (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)))


define(
    EXERCISES,
    "moe_ex5",
    "The MoE step against a dense step",
    "{model} and {dense} both run in BF16 on one {gpu} at a {context}-token context "
    f"(the course's {_ETAS}, {COURSE.step_overhead_ms:g} ms of fixed cost per step, and a floor of {FLOOR} for each "
    "of a model's layers). At a batch of {batch}, "
    "how many times as long as the dense model's decode step does the MoE model's take (below 1 if the MoE step is "
    "the faster)?",
    "",
    dict(model="Qwen3-30B-A3B", dense="Llama-3.1-8B", gpu="H100 SXM", context=2_304, batch=64),
    _vary_step_ratio,
    lambda v: (
        _step(v["model"], v["gpu"], v["batch"], v["context"]) / _step(v["dense"], v["gpu"], v["batch"], v["context"])
    ),
    (
        "The MoE reads its shared weights plus the touched experts; the touched fraction grows with the batch.",
        "Both steps: lc.decode_step(model, gpu, batch={batch}, context_tokens={context}).step_time; divide.",
    ),
    bare_ok=True,
    followup="From what batch on is the MoE model's step the slower one? (The calculator or `lc.decode_step` does "
    "the arithmetic.)",
)


def _spread(v: dict) -> dict:
    """moe_ex6's variant with its model's experts and their count on each GPU (display keys)."""
    v = _experts(v)
    return v | dict(per_gpu=v["experts"] // v["n_gpus"])


define(
    EXERCISES,
    "moe_ex6",
    "Expert parallelism",
    "Expert parallelism puts different experts on different GPUs: {model} ({experts} routed experts, {k} per "
    "token) is spread over {n_gpus} GPUs, {per_gpu} routed experts on each. At a batch of {batch} with uniform "
    "routing, what fraction of each GPU's experts does a step touch on average?",
    "",
    _spread(dict(model="DeepSeek-V3", n_gpus=8, batch=8)),
    lambda r: _spread(
        dict(
            model=pick(r, ("DeepSeek-V3", "Qwen3-235B-A22B", "Qwen3-30B-A3B", "gpt-oss-120b")),
            n_gpus=pick(r, (4, 8, 16)),
            batch=pick(r, range(1, 129)),
        )
    ),
    lambda v: _phi(v["model"], v["batch"]),
    (
        "Each expert is touched with the same probability wherever it lives.",
        "So each GPU sees the global fraction: 1 - (1 - k/E)^{batch}.",
    ),
    bare_ok=True,
    mistakes=lambda v: [(1 / v["n_gpus"], "the fraction of one GPU's experts does not shrink with the GPU count")],
    followup="Why does the slowest GPU, not the average, set the step time?",
)

#: Every mixture of experts of the catalog, and the weight precisions a variant may store them in.
_ALL_MOE = (*_MOE, "gpt-oss-20b")
_PRECISIONS = ("BF16", "FP8", "INT4", "FP32")


def _not_bf16(v):
    b = lc.PRECISIONS[v["precision"].lower()]
    return [(2 / b, "did you use 2 bytes per weight (BF16) instead of the precision given?")] if b != 2 else []


define(
    EXERCISES,
    "moe_ex7",
    "All the weights of a MoE",
    "A team plans to serve {model} in {precision}. However few experts a token uses, all must sit in memory. How many "
    "bytes of weights is that?",
    "GB",
    dict(model="Qwen3-30B-A3B", precision="BF16"),
    lambda r: dict(model=pick(r, _ALL_MOE), precision=pick(r, _PRECISIONS)),
    lambda v: lc.weight_bytes(v["model"], v["precision"].lower()),
    (
        "Weights = total parameters x bytes per weight ({precision}): total, not active.",
        "lc.models['{model}'].params.",
    ),
    mistakes=lambda v: [
        (
            lc.models[v["model"]].active_params / lc.models[v["model"]].params,
            "that counts the active parameters; memory holds all of them",
        ),
        *_not_bf16(v),
    ],
)

_READ = (
    "Bytes read = shared weights + routed-expert weights x the fraction touched.",
    "Shared parameters = params - expert_params (lc.models['{model}'].expert_params); 2 bytes each in BF16.",
)

define(
    EXERCISES,
    "moe_ex8",
    "Bytes read per step at batch 1",
    "A chat app decodes one user at a time on {model} ({precision}). How many weight bytes does one decode step read?",
    "GB",
    dict(model="Qwen3-30B-A3B", precision="BF16"),
    lambda r: dict(model=pick(r, _ALL_MOE), precision=pick(r, _PRECISIONS)),
    lambda v: lc.weights_read_per_step(v["model"], 1, v["precision"].lower()),
    (
        "Bytes read = shared weights + routed-expert weights x the fraction touched.",
        "Shared parameters = params - expert_params (lc.models['{model}'].expert_params); bytes per weight in "
        "{precision}: lc.PRECISIONS.",
    ),
    mistakes=_not_bf16,
)

_STEP = (
    ("Qwen3-30B-A3B", "H100 SXM"),
    ("Qwen3-30B-A3B", "H200 SXM"),
    ("Mixtral-8x7B", "H200 SXM"),
    ("Qwen3-30B-A3B", "B200"),
    ("Mixtral-8x7B", "MI300X"),
)

define(
    EXERCISES,
    "moe_ex9",
    "Step time at a larger batch",
    f"{{model}} (BF16) runs on one {{gpu}} at the course's {_ETAS}, {COURSE.step_overhead_ms:g} ms of fixed cost per "
    f"step and a floor of {FLOOR} for each of its layers, decoding {{batch}} users together, each at a "
    "{context}-token context. How long is one decode step?",
    "ms",
    dict(model="Qwen3-30B-A3B", gpu="H100 SXM", batch=32, context=2_048),
    lambda r: (
        dict(zip(("model", "gpu"), pick(r, _STEP), strict=True))
        | dict(batch=pick(r, (1, 8, 16, 32)), context=pick(r, (1_024, 2_048, 4_096)))
    ),
    lambda v: _step(v["model"], v["gpu"], v["batch"], v["context"]),
    (
        *_READ,
        f"Add {{batch}} KV caches at {{context}} tokens; time = bytes / ({COURSE.bandwidth_efficiency:g} x bandwidth).",
        f"Then add the fixed {COURSE.step_overhead_ms:g} ms of the step and layers x {FLOOR}.",
    ),
    tolerance=0.02,
)
