"""Exercises for *Decode is memory-bound* (``book/05_decode.md``): bytes per step, step time, tokens/s."""

from __future__ import annotations

import llmcourse as lc
from llmcourse.exercises._common import define, pick

EXERCISES: list = []

_SMALL = ("Llama-3.1-8B", "Qwen2.5-7B", "Llama-2-7B")
_GPUS = ("H100 SXM", "H200 SXM", "A100 SXM 80GB", "L40S", "B200", "MI300X")
DEFAULT = dict(model="Llama-3.1-8B", gpu="H100 SXM", prompt=2_048, answer=256, eff=0.7)


def _vary(r):
    return dict(
        model=pick(r, _SMALL),
        gpu=pick(r, _GPUS),
        prompt=pick(r, (512, 1_024, 2_048, 4_096)),
        answer=pick(r, (128, 256, 512)),
        eff=pick(r, (0.6, 0.7, 0.8)),
    )


def _step(v, **kw):
    kw = {"context_tokens": v["prompt"] + v["answer"], "bandwidth_efficiency": v["eff"]} | kw
    return lc.decode_step(v["model"], v.get("gpu", "H100 SXM"), **kw)


_STORY = (
    "A code-completion service runs {model} (BF16) on one {gpu}, one user at a time. Requests are {prompt} "
    "prompt tokens and {answer} answer tokens; the GPU reaches {eff} of its peak bandwidth. "
)
_HINTS = (
    "Each step reads all the weights once, plus the sequence's KV cache.",
    "Count the KV cache at the full context, {prompt} + {answer} tokens.",
    "Time = bytes read / ({eff} x lc.gpus['{gpu}'].bandwidth).",
)


def _eff(v):
    return [(1 / v["eff"], "did you forget the bandwidth efficiency?")]


define(
    EXERCISES,
    "decode_ex1",
    "One read of the weights",
    "A chatbot runs {model} in BF16 on one {gpu}. At the GPU's full peak bandwidth, how long does one read of "
    "all the weights take? Answer in ms.",
    "ms",
    dict(model="Llama-3.1-8B", gpu="H100 SXM"),
    lambda r: dict(model=pick(r, _SMALL), gpu=pick(r, _GPUS)),
    lambda v: lc.FORMULAS["weight_read_time"](
        weights=lc.weight_bytes(v["model"]), n_gpus=1, bandwidth=lc.gpus[v["gpu"]].bandwidth, bandwidth_efficiency=1.0
    ),
    ("Time = weight bytes / bandwidth.", "lc.weight_bytes('{model}') / lc.gpus['{gpu}'].bandwidth."),
    bare_ok=True,
)

define(
    EXERCISES,
    "decode_ex2",
    "Step time for one user",
    _STORY + "How long is one decode step?",
    "ms",
    DEFAULT,
    _vary,
    lambda v: _step(v).step_time,
    _HINTS,
    mistakes=_eff,
)

define(
    EXERCISES,
    "decode_ex3",
    "Tokens per second for one user",
    _STORY + "How many tokens per second does the user see?",
    "1/s",
    DEFAULT,
    _vary,
    lambda v: _step(v).tokens_per_s_per_user,
    (*_HINTS, "Tokens per second = 1 / step time."),
    mistakes=_eff,
)

define(
    EXERCISES,
    "decode_ex4",
    "Quantized weights decode faster",
    _STORY + "The team quantizes the weights to INT4 (0.5 bytes each; the cache stays BF16). How long is one "
    "decode step now?",
    "ms",
    DEFAULT,
    _vary,
    lambda v: _step(v, weight_bytes="int4").step_time,
    ("Fewer bytes per weight means fewer bytes to read each step.", *_HINTS[1:]),
    mistakes=lambda v: [
        *_eff(v),
        (
            (_step(v).step_time / _step(v, weight_bytes="int4").step_time).m,
            "that is the BF16 step: the weights take 0.5 bytes each now",
        ),
    ],
)

define(
    EXERCISES,
    "decode_ex5",
    "A smaller GPU",
    "A budget tier puts {model} (BF16) on one L4 for single users, at {prompt} + {answer} tokens and {eff} of "
    "peak bandwidth. How long is one decode step?",
    "ms",
    dict(DEFAULT, gpu="L4"),
    lambda r: _vary(r) | {"gpu": "L4"},
    lambda v: _step(v).step_time,
    _HINTS,
    mistakes=_eff,
)

_BIG = (
    ("Llama-3.1-70B", "H100 SXM", 2),
    ("Llama-3.1-70B", "H100 SXM", 4),
    ("Qwen2.5-72B", "H200 SXM", 2),
    ("Llama-3.1-70B", "B200", 1),
    ("Llama-3.1-405B", "H100 SXM", 8),
    ("Llama-3.1-70B", "MI300X", 1),
)

define(
    EXERCISES,
    "decode_ex6",
    "The speed ceiling of a big model",
    "A premium assistant serves {model} in BF16 over {n} x {gpu} (tensor parallel). Even alone, with no KV to "
    "read and at full peak bandwidth, a user cannot get more than some number of tokens per second. What is "
    "that ceiling?",
    "1/s",
    dict(model="Llama-3.1-70B", gpu="H100 SXM", n=2),
    lambda r: dict(zip(("model", "gpu", "n"), pick(r, _BIG), strict=True)),
    lambda v: (
        1
        / lc.FORMULAS["weight_read_time"](
            weights=lc.weight_bytes(v["model"]),
            n_gpus=v["n"],
            bandwidth=lc.gpus[v["gpu"]].bandwidth,
            bandwidth_efficiency=1.0,
        )
    ),
    (
        "Each token needs one read of all the weights.",
        "The {n} GPUs read their shares in parallel: ceiling = {n} x bandwidth / weight bytes.",
    ),
    mistakes=lambda v: [(1 / v["n"], "did you use the bandwidth of one GPU only?")] if v["n"] > 1 else [],
)

define(
    EXERCISES,
    "decode_ex7",
    "Throughput of a full batch",
    _STORY + "Now {batch} users share the GPU, each at the same context. How many output tokens per second does "
    "the GPU produce in all?",
    "1/s",
    dict(DEFAULT, batch=64),
    lambda r: _vary(r) | {"batch": pick(r, (8, 16, 32))},
    lambda v: _step(v, batch=v["batch"]).throughput,
    (
        "Each step still reads the weights once, but now {batch} KV caches.",
        "Throughput = batch / step time; check the FLOPs too: 2 x parameters per sequence at 0.5 of peak.",
    ),
    mistakes=_eff,
)
