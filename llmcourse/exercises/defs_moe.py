"""Exercises for *Mixture-of-experts routing* (``book/07_moe.md``): experts touched and bytes per step."""

from __future__ import annotations

import llmcourse as lc
from llmcourse.exercises._common import define, pick

EXERCISES: list = []

_MOE = ("Qwen3-30B-A3B", "Qwen3-235B-A22B", "Mixtral-8x7B", "DeepSeek-V3", "gpt-oss-120b")
_PHI = (
    "Each token picks k of E experts: the chance that a given expert is not picked by one token is 1 - k/E.",
    "With {batch} independent tokens: touched = 1 - (1 - k/E)^{batch}; k and E are "
    "lc.models['{model}'].experts_per_token and .experts.",
)


def _phi(v):
    m = lc.models[v["model"]]
    return lc.FORMULAS["moe_fraction_touched"](
        experts_per_token=m.experts_per_token, experts=m.experts, batch=v["batch"]
    )


define(
    EXERCISES,
    "moe_ex1",
    "Experts one token touches",
    "A chat app decodes one user at a time on {model}. What fraction of the routed experts does one decode step read?",
    "",
    dict(model="Qwen3-30B-A3B", batch=1),
    lambda r: dict(model=pick(r, _MOE), batch=1),
    _phi,
    (*_PHI[:1], "At batch 1 it is just k/E."),
    bare_ok=True,
)

define(
    EXERCISES,
    "moe_ex2",
    "Experts a batch touches",
    "The same app now decodes {batch} users together on {model}. Under uniform, independent routing, what "
    "fraction of the routed experts does one step read (on average)?",
    "",
    dict(model="Qwen3-30B-A3B", batch=32),
    lambda r: dict(model=pick(r, _MOE), batch=pick(r, (4, 8, 16, 32, 64))),
    _phi,
    _PHI,
    bare_ok=True,
    mistakes=lambda v: [
        (
            min(1.0, v["batch"] * lc.models[v["model"]].experts_per_token / lc.models[v["model"]].experts) / _phi(v).m,
            "batch x k/E counts an expert twice when two tokens pick it",
        )
    ],
)

define(
    EXERCISES,
    "moe_ex3",
    "All the weights of a MoE",
    "A team plans to serve {model} in BF16. However few experts a token uses, all must sit in memory. How many "
    "bytes of weights is that?",
    "GB",
    dict(model="Qwen3-30B-A3B"),
    lambda r: dict(model=pick(r, ("Qwen3-30B-A3B", "Mixtral-8x7B", "Qwen3-235B-A22B"))),
    lambda v: lc.weight_bytes(v["model"]),
    ("Weights = total parameters x 2 bytes: total, not active.", "lc.models['{model}'].params."),
    mistakes=lambda v: [
        (
            lc.models[v["model"]].active_params / lc.models[v["model"]].params,
            "that counts the active parameters; memory holds all of them",
        )
    ],
)

_READ = (
    "Bytes read = shared weights + routed-expert weights x the fraction touched.",
    "Shared parameters = params - expert_params (lc.models['{model}'].expert_params); 2 bytes each in BF16.",
)

define(
    EXERCISES,
    "moe_ex4",
    "Bytes read per step at batch 1",
    "A chat app decodes one user at a time on {model} (BF16). How many weight bytes does one decode step read?",
    "GB",
    dict(model="Qwen3-30B-A3B"),
    lambda r: dict(model=pick(r, ("Qwen3-30B-A3B", "Mixtral-8x7B", "Qwen3-235B-A22B"))),
    lambda v: lc.weights_read_per_step(v["model"], 1),
    _READ,
)

_STEP = (
    ("Qwen3-30B-A3B", "H100 SXM"),
    ("Qwen3-30B-A3B", "H200 SXM"),
    ("Mixtral-8x7B", "H200 SXM"),
    ("Qwen3-30B-A3B", "B200"),
    ("Mixtral-8x7B", "MI300X"),
)


def _step(v):
    return lc.decode_step(v["model"], v["gpu"], batch=v["batch"], context_tokens=v["context"])


_STEP_HINTS = (
    *_READ,
    "Add {batch} KV caches at {context} tokens; time = bytes / (0.7 x bandwidth); check the "
    "FLOPs (2 x active parameters per sequence, 0.5 of peak) are not slower.",
)

define(
    EXERCISES,
    "moe_ex5",
    "Step time at batch 1",
    "{model} (BF16) runs on one {gpu} at 70% of peak bandwidth, one user at a time with a {context}-token "
    "context. How long is one decode step?",
    "ms",
    dict(model="Qwen3-30B-A3B", gpu="H100 SXM", batch=1, context=2_048),
    lambda r: dict(zip(("model", "gpu"), pick(r, _STEP), strict=True), batch=1, context=pick(r, (1_024, 2_048, 4_096))),
    lambda v: _step(v).step_time,
    _STEP_HINTS,
    tolerance=0.02,
)

define(
    EXERCISES,
    "moe_ex6",
    "Step time at a larger batch",
    "The same service ({model} on one {gpu}, 70% of peak bandwidth) now decodes {batch} users together, each "
    "at a {context}-token context. How long is one decode step?",
    "ms",
    dict(model="Qwen3-30B-A3B", gpu="H100 SXM", batch=32, context=2_048),
    lambda r: dict(
        zip(("model", "gpu"), pick(r, _STEP), strict=True),
        batch=pick(r, (8, 16, 32)),
        context=pick(r, (1_024, 2_048, 4_096)),
    ),
    lambda v: _step(v).step_time,
    _STEP_HINTS,
    tolerance=0.02,
)
