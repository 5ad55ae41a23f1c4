"""The worked answers of the many-GPU questions (``book/08c_many_gpus.md``).

One function for each question of ``llmcourse/data/interview/05_many_gpus.md``, registered under its
id (:func:`~llmcourse.interview.questions.register_worked`): a replica of Llama 3.1 70B on several GPUs
and its time per token split into parts (:func:`llmcourse.replica.parallel.time_per_token_parts`). Each takes
``variant`` (0: the book's givens) and draws the requests in flight and the lengths for another.

Examples
--------
>>> from llmcourse.interview import QUESTIONS
>>> QUESTIONS["tp8_not_8x"].numbers()["x"] < 8
True
"""

from __future__ import annotations

from typing import Any

from llmcourse.catalog import gpus, models
from llmcourse.interview.figures import draw, pct
from llmcourse.interview.questions import register_worked
from llmcourse.replica.memory import weight_bytes
from llmcourse.replica.model import replica
from llmcourse.replica.parallel import allreduce_latency, time_per_token_parts

__all__ = ["ANSWERS", "BATCHES", "PROMPTS"]


def _many_gpus_parts(gpu: str, n: int, **kw: Any) -> tuple[Any, dict[str, Any]]:
    """A replica of Llama 3.1 70B on ``n`` x ``gpu`` and its time per token split into parts."""
    r = replica(_MODEL, gpu, tensor_parallel=n, weight_bytes="fp8", **kw)
    return r, time_per_token_parts(r)


#: The loads the variants draw from: requests in flight, prompt and answer lengths (decode's all-reduces stay small
#: messages, latency-bound, at these batches).
BATCHES, PROMPTS, ANSWERS = (
    (2, 4, 6, 8, 12, 16, 24),
    (256, 512, 1_024, 2_048, 4_096),
    (256, 512, 1_024, 2_048, 4_096, 8_192),
)
_MODEL = "Llama-3.1-70B"


def _shape() -> dict[str, Any]:
    """The model's figures the answers name: its FP8 weights, all-reduces a step (two a layer), hidden size."""
    m = models[_MODEL]
    return dict(w_all=weight_bytes(_MODEL, "fp8").to("GB"), n_ar=2 * m.layers, layers=m.layers, hidden=m.hidden)


@register_worked("tp8_not_8x")
def _tp8_not_8x(variant: int = 0) -> dict[str, Any]:
    g = draw(variant, batch=(4, BATCHES[:5]), prompt=(1_024, PROMPTS), answer=(8_192, ANSWERS))
    kw = dict(batch=g["batch"], prompt_tokens=g["prompt"], answer_tokens=g["answer"])
    r1, _ = _many_gpus_parts("B200", 1, **kw)
    r8, p8 = _many_gpus_parts("B200", 8, **kw)
    return (
        g
        | _shape()
        | dict(
            t1=r1.tpot,
            t8=r8.tpot,
            ideal=(r1.tpot / 8).to("ms"),
            x=float((r1.tpot / r8.tpot).m),
            w8=p8["weight reads"],
            ar=allreduce_latency(_MODEL, r8),
            c8=p8["communication"],
            o=p8["overhead"],
            f8=p8["layer floors"],
            sp=p8["shared prefill"],
            bw_pct=pct(r8.assumptions.bandwidth_efficiency),
            bw=gpus["B200"].bandwidth.to("TB/s"),
        )
    )


@register_worked("nvlink_or_pcie")
def _nvlink_or_pcie(variant: int = 0) -> dict[str, Any]:
    g = draw(variant, batch=(16, BATCHES), prompt=(1_024, PROMPTS), answer=(1_024, ANSWERS))
    kw = dict(batch=g["batch"], prompt_tokens=g["prompt"], answer_tokens=g["answer"])
    (rs, ps), (rp, pp) = (_many_gpus_parts(gpu, 4, **kw) for gpu in ("H100 SXM", "H100 PCIe"))
    return (
        g
        | _shape()
        | dict(
            t_s=rs.tpot,
            t_p=rp.tpot,
            ratio=float((rp.tpot / rs.tpot).m),
            ar_s=allreduce_latency(_MODEL, rs),
            ar_p=allreduce_latency(_MODEL, rp),
            c_s=ps["communication"],
            c_p=pp["communication"],
            w_s=ps["weight reads"],
            w_p=pp["weight reads"],
            bw_pct=pct(rs.assumptions.bandwidth_efficiency),
        )
    )
