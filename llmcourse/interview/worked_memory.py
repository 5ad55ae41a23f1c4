"""The worked answers of the bank's first two L4 questions (``llmcourse/data/interview/01_l4.md``): do a model's
weights fit, and how many bytes a token of KV cache takes.

Each is registered under its question's id (:func:`~llmcourse.interview.questions.register_worked`) and takes
``variant`` (0: the book's givens, the back-of-the-envelope method's Qwen2.5-72B on H100s and its KV per token);
another variant draws the model and GPU (:func:`llmcourse.interview.givens.weights_fit_setups`) or the two models and
the KV cache's precision (:data:`llmcourse.interview.givens.KV_FORMULA_MODELS`,
:data:`llmcourse.interview.givens.KV_PRECISIONS`).

Examples
--------
>>> from llmcourse.interview import QUESTIONS
>>> QUESTIONS["weights_fit"].numbers()["tp16"], QUESTIONS["kv_per_token"].numbers()["kv72"]
(4, <Quantity(320.0, 'kibibyte')>)
"""

from __future__ import annotations

import math
from typing import Any

from llmcourse.assumptions import resolve
from llmcourse.catalog import bytes_per_value, gpus, models
from llmcourse.interview.figures import ENVELOPE, draw, pct
from llmcourse.interview.givens import (
    KV_FORMULA_MODELS,
    KV_PER_VALUE_WORDS,
    KV_PRECISIONS,
    KV_WORDS,
    gpu_words,
    smaller_models,
    weights_fit_setups,
)
from llmcourse.interview.questions import register_worked
from llmcourse.replica.memory import gpus_for_weights, kv_bytes_per_token, usable_memory, weight_bytes
from llmcourse.units import Q_

__all__: list[str] = []


@register_worked("weights_fit")
def _weights_fit(variant: int = 0) -> dict[str, Any]:
    name, gpu = draw(variant, setup=(("Qwen2.5-72B", "H100 SXM"), weights_fit_setups()))["setup"]
    a, g = resolve(ENVELOPE), gpus[gpu]
    w16, w8 = weight_bytes(name, "bf16").to("GB"), weight_bytes(name, "fp8").to("GB")
    n8 = gpus_for_weights(name, g, "fp8", assumptions=a)
    mem2 = usable_memory(g, n8, assumptions=a).to("GB")
    return dict(
        model=name,
        billions=models[name].params / 1e9,
        gpu=gpu.split()[0] if variant == 0 else gpu,
        gpu_mem=g.memory,
        w16=w16,
        w8=w8,
        good16=gpu_words(math.ceil(float((w16 / g.memory).to("").m))),
        good8=gpu_words(math.ceil(float((w8 / g.memory).to("").m))),
        per_gpu=usable_memory(g, assumptions=a).to("GB"),
        mem_pct=pct(a.memory_fraction),
        reserve_pct=pct(1 - a.memory_fraction),
        n16=gpus_for_weights(name, g, "bf16", assumptions=a, power_of_two=False),
        tp16=gpus_for_weights(name, g, "bf16", assumptions=a),
        n8=n8,
        n8_gpus=gpu_words(n8),
        mem2=mem2,
        free8=(mem2 - w8).to("GB"),
        miss=(w16 - mem2).to("GB"),
    )


@register_worked("kv_per_token")
def _kv_per_token(variant: int = 0) -> dict[str, Any]:
    g = draw(
        variant, big=("Qwen2.5-72B", [n for n in KV_FORMULA_MODELS if smaller_models(n)]), kv=("bf16", KV_PRECISIONS)
    )
    big, kv = g["big"], g["kv"]
    small = draw(variant, small=("Qwen2.5-7B", smaller_models(big)))["small"]
    kv72, kv7 = kv_bytes_per_token(big, kv), kv_bytes_per_token(small, kv)
    m, s = models[big], models[small]
    mha = kv_bytes_per_token(m.with_(kv_heads=m.heads), kv)
    hidden = Q_(2 * m.layers * m.hidden * bytes_per_value(kv), "B")  # the slip: the hidden size for H_kv x d_head
    return dict(
        big=big,
        small=small,
        **{f"{k}_big": getattr(m, k) for k in ("layers", "kv_heads", "head_dim", "hidden")},
        **{f"{k}_small": getattr(s, k) for k in ("layers", "kv_heads", "head_dim")},
        kvd_big=m.kv_heads * m.head_dim,
        kv_words=KV_WORDS[kv],
        per_value=f"{bytes_per_value(kv):g}",
        per_value_words=KV_PER_VALUE_WORDS[kv],
        kv72=kv72.to("KiB"),
        kv7=kv7.to("KiB"),
        b72=int(kv72.to("B").m),
        b7=int(kv7.to("B").m),
        mha72=mha.to("MiB"),
        hid72=hidden.to("MiB"),
        hid_x=float((hidden / kv72).to("").m),
    )
