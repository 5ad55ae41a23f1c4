"""Exercises for *Decode: paced by memory, until the batch is large* (``book/05_decode.md``): bytes per step, step time, tokens/s.

``decode_ex1`` .. ``decode_ex6`` follow the chapter's exercises of the same labels (the numeric part of each).
They are the course's own estimates, under its default method (``lc.resolve()``): the efficiencies the stories
state are formatted from it. ``decode_ex4`` and ``decode_ex7`` are the pure weight-read model (the datasheet
bandwidth, nothing but the weights read), which the stories say outright.
"""

from __future__ import annotations

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import COURSE, ENGINE_ALLREDUCE, FLOOR, define, fp8_ok, pct, pick, pool
from llmcourse.replica.memory import largest_batch
from llmcourse.units import fmt

EXERCISES: list = []

#: The method the notebook says these exercises follow (shown above its first exercise).
NOTEBOOK_METHOD = """
**The method.** Step times follow the course's method (the package's default); exercises 4 and 7 are the pure
weight-read model (the datasheet bandwidth, nothing read but the weights). Each story states its efficiencies.
"""

_SMALL = ("Llama-3.1-8B", "Qwen2.5-7B", "Llama-2-7B")
_GPUS = ("H100 SXM", "H200 SXM", "A100 SXM 80GB", "L40S", "B200", "MI300X")


def _eff(v):
    return [(v["eff"], "did you forget the bandwidth efficiency?")]


def _step(v, **kw):
    """The decode step of the story, at the share of the bandwidth it gives (``eff``): a what-if of the
    assumptions (the course's, or those given)."""
    a = lc.resolve(kw.pop("assumptions", None)).replace(bandwidth_efficiency=v["eff"])
    return lc.decode_step(v["model"], v["gpu"], **({"context_tokens": v["context"], "assumptions": a} | kw))


_STEP_HINTS = (
    "Each step reads all the weights once, plus the sequence's KV cache at {context} tokens.",
    f"Time = bytes read / ({{eff}} x lc.gpus['{{gpu}}'].bandwidth); check that {COURSE.flops_per_param:g} FLOPs per "
    f"parameter at {pct(COURSE.compute_efficiency)} of the BF16 peak is not slower.",
    f"Then add the fixed {COURSE.step_overhead_ms:g} ms of the step and {FLOOR} for each of the model's layers "
    "(lc.resolve().step_overhead_ms, lc.resolve().layer_floor_us, lc.models['{model}'].layers).",
)
#: The course's fixed cost of every decode step (kernel launches, scheduling), as the stories state it.
_OVERHEAD = f"{COURSE.step_overhead_ms:g} ms"
#: The bandwidth efficiencies a student may be given: the course's, and a step below and above it.
_EFFS = tuple(round(COURSE.bandwidth_efficiency + d, 2) for d in (-0.1, 0.0, 0.1))
#: The course's compute efficiency, as the stories state it.
_ETA_F = pct(COURSE.compute_efficiency)


def _billions(model: str) -> str:
    """A model's parameter count as a story prints it: ``"7.6 billion"``."""
    return f"{lc.models[model].params / 1e9:.3g} billion"


def _tbps(gpu: str) -> str:
    """A GPU's datasheet bandwidth as a story prints it: ``"2.039 TB/s"``."""
    return f"{lc.gpus[gpu].bandwidth.to('TB/s').m:g} TB/s"


def _kib(q) -> str:
    """A KV cache per token as a story prints it: ``"56 KiB"``."""
    return f"{q.to('KiB').m:.4g} KiB"


def _words(v: dict) -> dict:
    """The variant with the catalog figures its story prints (display keys: the answers read the catalog)."""
    return v | dict(
        params=_billions(v["model"]),
        bw=_tbps(v["gpu"]),
        kv_token=_kib(lc.kv_bytes_per_token(v["model"])),
        eff_pct=pct(v["eff"]),
    )


def _vary_step(r):
    return _words(
        dict(model=pick(r, _SMALL), gpu=pick(r, _GPUS), context=pick(r, (1_024, 2_300, 4_096)), eff=pick(r, _EFFS))
    )


define(
    EXERCISES,
    "decode_ex1",
    "Step time for one user",
    "A help-desk bot runs {model} in BF16 ({params} parameters) on one {gpu} ({bw}), batch 1, at a {context}-token "
    "context ({kv_token} of KV cache per token). The GPU reaches {eff_pct} of its peak bandwidth, and its matrix "
    f"multiplications {_ETA_F} of the BF16 peak FLOP/s (the course's compute efficiency); like every decode step by "
    f"the course's method, it also costs a fixed {_OVERHEAD} (kernel launches, scheduling) and a floor of {FLOOR} "
    "for each of the model's layers (their kernels' ramp and tail). How long is one decode step?",
    "ms",
    _words(dict(model="Qwen2.5-7B", gpu="A100 SXM 80GB", context=2_300, eff=COURSE.bandwidth_efficiency)),
    _vary_step,
    lambda v: _step(v).step_time,
    _STEP_HINTS,
    mistakes=_eff,
    followup="How many tokens per second does the user get?",
)

#: Models with full attention on every layer (no sliding window, no latent cache).
_FULL_ATTENTION = (
    "Llama-3.1-8B",
    "Qwen2.5-7B",
    "Llama-3.1-70B",
    "Qwen2.5-72B",
    "Llama-2-7B",
    "Llama-2-13B",
    "Llama-2-70B",
    "Llama-3.1-405B",
    "Qwen3-30B-A3B",
    "Qwen3-235B-A22B",
    "Mixtral-8x7B",
)
#: How a story states the precisions: (weights', KV cache's).
_STORED = {
    "BF16": ("bf16", "bf16"),
    "FP8 with a BF16 KV cache": ("fp8", "bf16"),
    "BF16 with an FP8 KV cache": ("bf16", "fp8"),
    "INT4 with a BF16 KV cache": ("int4", "bf16"),
}


def _kv_words(v: dict) -> dict:
    """The variant with the model's KV cache per token, at the story's cache precision (a display key)."""
    return v | dict(kv_token=_kib(lc.kv_bytes_per_token(v["model"], _STORED[v["precision"]][1])))


define(
    EXERCISES,
    "decode_ex2",
    "When the cache outweighs the weights",
    "A long-document chat runs {model} in {precision} at batch 1; its KV cache takes {kv_token} per token of "
    "context. At what context length does one step read as many bytes of KV cache as of weights?",
    "",
    _kv_words(dict(model="Llama-3.1-8B", precision="BF16")),
    lambda r: _kv_words(dict(model=pick(r, _FULL_ATTENTION), precision=pick(r, tuple(_STORED)))),
    lambda v: (
        lc.weight_bytes(v["model"], _STORED[v["precision"]][0])
        / lc.kv_bytes_per_token(v["model"], _STORED[v["precision"]][1])
    ).to(""),
    (
        "Context = weight bytes / KV bytes per token.",
        "KV per token = 2 x layers x KV heads x head dim x bytes per cached value.",
    ),
    bare_ok=True,
    kv=True,
    followup="What does that say about long-document chat?",
)


#: The course's method with the stated bandwidth share taken as reached by 4-bit weights too.
_AS_STATED = COURSE.replace(four_bit_bandwidth_factor=1.0)


def _int4(v):
    return lc.PRECISIONS["int4"] + 2 / v["group"]  # bytes per weight: 4 bits plus a 16-bit scale per group


define(
    EXERCISES,
    "decode_ex3",
    "INT4 with group scales",
    "A low-cost chat service quantizes {model} to 4-bit weights with one 16-bit scale per group of {group} weights "
    "(the KV cache stays BF16). On one {gpu} at batch 1, a {context}-token context, {eff_pct} of peak bandwidth (for "
    f"the 4-bit weights too), the course's {_ETA_F} of the BF16 peak FLOP/s, its fixed {_OVERHEAD} per step and its "
    f"floor of {FLOOR} for each of the model's layers, how long is one decode step?",
    "ms",
    _words(dict(model="Llama-3.1-8B", gpu="H100 SXM", context=2_304, eff=COURSE.bandwidth_efficiency, group=64)),
    lambda r: _vary_step(r) | {"group": pick(r, (32, 64, 128))},
    # the story gives the share of the bandwidth reached ({eff}), so the course's 4-bit read factor is not applied
    lambda v: _step(v, weight_bytes=_int4(v), assumptions=_AS_STATED).step_time,
    (
        f"Bytes per weight = {lc.PRECISIONS['int4']:g} + 2 bytes / {{group}} weights.",
        "Fewer bytes per weight means fewer bytes to read each step.",
        *_STEP_HINTS,
    ),
    mistakes=lambda v: [
        *_eff(v),
        (
            (
                _step(v, weight_bytes="int4", assumptions=_AS_STATED).step_time
                / _step(v, weight_bytes=_int4(v), assumptions=_AS_STATED).step_time
            ).m,
            "did you leave out the group scales?",
        ),
    ],
    followup="How much of INT4's speed-up over BF16 does this grouping give back, against bare 4-bit weights and "
    "against a scale per group of twice as many weights?",
)

#: (model, weight precision, GPU) whose weights fit in one GPU's usable memory (the course's share of it): a 70B
#: model in BF16 (141 GB) fits on no single 80 GB or 141 GB GPU, so its one-GPU variants store FP8 weights.
_ONE_GPU = (
    ("Llama-3.1-70B", "fp8", "H100 SXM"),
    ("Qwen2.5-72B", "fp8", "H200 SXM"),
    ("Llama-3.1-70B", "bf16", "B200"),
    ("Llama-3.1-70B", "int4", "L40S"),
    ("Llama-3.1-8B", "bf16", "H100 SXM"),
    ("Llama-3.1-8B", "bf16", "L40S"),
)


def _read_words(v: dict) -> dict:
    """The variant with the figures decode_ex4's story prints (display keys: the answer reads the catalog)."""
    return v | dict(
        stored=v["precision"].upper(),
        weights=fmt(lc.weight_bytes(v["model"], v["precision"]), "GB"),
        bw=_tbps(v["gpu"]),
        kv_token=_kib(lc.kv_bytes_per_token(v["model"])),
        kv_context=4_096,
    )


define(
    EXERCISES,
    "decode_ex4",
    "A batch for a throughput target",
    "A pure weight-read model of decode: {model} with {stored} weights ({weights}) on one {gpu} (they fit in the "
    f"{pct(COURSE.memory_fraction)} of its memory a server may use), each step reading the weights once at the "
    "GPU's full datasheet bandwidth ({bw}) and nothing else: the sequences' KV caches ({kv_token} per token, "
    "{kv_context} tokens each) are left out. What batch gives {target} tokens per second in all?",
    "",
    _read_words(dict(model="Llama-3.1-70B", precision="fp8", gpu="H100 SXM", target=10_000)),
    lambda r: _read_words(
        dict(zip(("model", "precision", "gpu"), pick(r, _ONE_GPU), strict=True))
        | dict(target=pick(r, range(2_000, 40_001, 1_000)))
    ),
    lambda v: (
        Q_(v["target"], "1/s")
        * lc.FORMULAS["weight_read_time"](
            weights=lc.weight_bytes(v["model"], v["precision"]),
            n_gpus=1,
            bandwidth=lc.gpus[v["gpu"]].bandwidth,
            bandwidth_efficiency=1,  # the story's pure weight-read model: the datasheet bandwidth
        )
    ).to(""),
    (
        "Step time = weight bytes / lc.gpus['{gpu}'].bandwidth, whatever the batch.",
        "Tokens/s = batch / step time: solve for the batch.",
    ),
    bare_ok=True,
    tolerance=0.02,
    mistakes=lambda v: (
        [(2 / lc.PRECISIONS[v["precision"]], "did you use 2 bytes per weight (BF16) instead of the precision given?")]
        if lc.PRECISIONS[v["precision"]] != 2
        else []
    ),
    followup="Then add the KV caches: what speed does each user get at that batch, and does the batch fit in memory?",
)


def _ratio(v):
    g = lc.gpus[v["gpu"]]
    f = lc.FORMULAS
    comp = f["decode_compute_time"](
        batch=1,
        n_gpus=1,
        flops_per_token=Q_(COURSE.flops_per_param, "FLOP"),
        peak_flops=g.peak_flops("bf16"),
        compute_efficiency=COURSE.compute_efficiency,
    )
    mem = f["weight_read_time"](
        weights=Q_(lc.PRECISIONS[v["precision"]], "B"),
        n_gpus=1,
        bandwidth=g.bandwidth,
        bandwidth_efficiency=COURSE.bandwidth_efficiency,
    )
    return (comp / mem).to("")


def _stored(v: dict) -> dict:
    """The variant with its weights' precision as a story prints it (``"FP8"``; a display key)."""
    return v | dict(stored=v["precision"].upper())


define(
    EXERCISES,
    "decode_ex5",
    "How far from compute-bound",
    f"A dense model decodes at batch 1 on one {{gpu}} with {{stored}} weights (no KV read), at "
    f"{pct(COURSE.bandwidth_efficiency)} of peak bandwidth and {_ETA_F} of the BF16 peak FLOP/s (the course's "
    "efficiencies). What is the ratio of compute time to memory time per step?",
    "",
    _stored(dict(gpu="H100 SXM", precision="bf16")),
    lambda r: _stored(
        dict(
            zip(
                ("gpu", "precision"),
                pick(r, [(g, p) for g in lc.gpus for p in ("bf16", "fp8", "int4", "fp32") if fp8_ok(p, g)]),
                strict=True,
            )
        )
    ),
    _ratio,
    (
        f"Per parameter: {COURSE.flops_per_param:g} FLOPs at {COURSE.compute_efficiency:g} x peak against b_w bytes at "
        f"{COURSE.bandwidth_efficiency:g} x bandwidth.",
        f"Ratio = {COURSE.bandwidth_efficiency:g} x bandwidth x {COURSE.flops_per_param:g} FLOP / "
        f"({COURSE.compute_efficiency:g} x peak FLOP/s x bytes per weight): the parameter count cancels.",
    ),
    bare_ok=True,
    followup="Show from {eq}`eq-decode-step` that for any dense model at batch 1 this ratio is about "
    "$\\eta_\\beta\\beta\\,c_F/(\\eta_F\\,F\\,b_w)$. Evaluate it for BF16 and INT4 weights on an H100 and on an L4: which "
    "combination comes closest to compute-bound?",
)


def _largest_batch(v):
    """Largest batch whose step keeps each user at or above the speed target (bisection on decode_step)."""

    def fast(b):
        s = lc.decode_step(
            v["model"], v["gpu"], batch=b, context_tokens=v["context"], n_gpus=v["n"], weight_bytes=v["precision"]
        )
        return s.tokens_per_s_per_user >= Q_(v["speed"], "1/s")

    return largest_batch(fast, 4_096)


_BIG = (
    ("Llama-3.1-70B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-70B", "bf16", "H200 SXM", 2),
    ("Qwen2.5-72B", "fp8", "H100 SXM", 2),
    ("Llama-3.1-8B", "bf16", "H100 SXM", 1),
)

define(
    EXERCISES,
    "decode_ex6",
    "The largest batch at a speed target",
    "A premium chat runs {model} in {stored} on {n} x {gpu} (tensor parallel), every sequence at a {context}-"
    f"token context, with the course's efficiencies: {pct(COURSE.bandwidth_efficiency)} of peak bandwidth, "
    f"{_ETA_F} of the peak FLOP/s at the weights' precision (FP8 matrix multiplications for FP8 weights on a GPU "
    f"with an FP8 peak, BF16 otherwise), a fixed {_OVERHEAD} per step, a floor of {FLOOR} for each of the model's "
    "layers and, on several GPUs, two all-reduces per layer of the batch's activations over the GPUs' link, "
    f"{ENGINE_ALLREDUCE}. "
    "Leaving memory aside, what is the largest batch that keeps each user at {speed} tokens per second or more?",
    "",
    _stored(dict(model="Llama-3.1-70B", precision="fp8", gpu="H100 SXM", n=2, context=2_304, speed=30)),
    lambda r: _stored(
        dict(zip(("model", "precision", "gpu", "n"), pick(r, _BIG), strict=True))
        | dict(context=pick(r, (1_024, 2_304, 4_096)), speed=pick(r, (20, 30, 40)))
    ),
    _largest_batch,
    (
        "Step time must stay at or below 1 / {speed} s.",
        f"Step = (weights + B x KV per sequence) / ({{n}} x {COURSE.bandwidth_efficiency:g} x bandwidth) + "
        f"{COURSE.step_overhead_ms:g} ms + layers x {FLOOR} + 2 x layers all-reduces of B x hidden x 2 bytes (each "
        "the engines' fastest kernel on lc.links[lc.gpus['{gpu}'].link]): solve for B, round down.",
        "Check the compute time at that batch too: lc.matmul_precision('{precision}', '{gpu}') names the peak.",
    ),
    integer=True,
    bare_ok=True,
    followup="Does that batch fit in memory?",
)


@pool
def _CEILING():
    """(model, GPU, count): the two smallest counts (1, 2, 4 or 8) of each GPU that hold the BF16 weights."""
    for model in ("Llama-3.1-70B", "Qwen2.5-72B", "Llama-2-70B", "Llama-3.1-405B", "Mixtral-8x7B", "Llama-2-13B"):
        for gpu in ("H100 SXM", "H200 SXM", "B200", "MI300X", "MI325X", "A100 SXM 80GB", "H100 PCIe", "L40S"):
            counts = [n for n in (1, 2, 4, 8) if lc.weight_bytes(model) < lc.usable_memory(gpu, n)]
            yield from ((model, gpu, n) for n in counts[:2])


define(
    EXERCISES,
    "decode_ex7",
    "The speed ceiling of a big model",
    "A premium assistant serves {model} in BF16 over {n} x {gpu} (tensor parallel). Even alone, with no KV to "
    "read and at full peak bandwidth, a user cannot get more than some number of tokens per second. What is "
    "that ceiling?",
    "1/s",
    dict(model="Llama-3.1-70B", gpu="H100 SXM", n=2),
    lambda r: dict(zip(("model", "gpu", "n"), pick(r, _CEILING()), strict=True)),
    lambda v: (
        1
        / lc.FORMULAS["weight_read_time"](
            weights=lc.weight_bytes(v["model"]),
            n_gpus=v["n"],
            bandwidth=lc.gpus[v["gpu"]].bandwidth,
            bandwidth_efficiency=1,
        )
    ),
    (
        "Each token needs one read of all the weights.",
        "The {n} GPUs read their shares in parallel: ceiling = {n} x bandwidth / weight bytes.",
    ),
    mistakes=lambda v: [(1 / v["n"], "did you use the bandwidth of one GPU only?")] if v["n"] > 1 else [],
)
