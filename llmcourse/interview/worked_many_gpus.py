"""The worked answers of the many-GPU questions (``book/08c_many_gpus.md``).

One function for each question of ``llmcourse/data/interview/05_many_gpus.md``, registered under its
id (:func:`~llmcourse.interview.questions.register_worked`): a replica of Llama 3.1 70B on several GPUs
and its time per token split into parts (:func:`llmcourse.replica.parallel.time_per_token_parts`).

Examples
--------
>>> from llmcourse.interview import QUESTIONS
>>> QUESTIONS["tp8_not_8x"].numbers()["x"] < 8
True
"""

from __future__ import annotations

from typing import Any

from llmcourse.catalog import gpus
from llmcourse.interview.figures import pct
from llmcourse.interview.questions import register_worked
from llmcourse.replica.model import replica
from llmcourse.replica.parallel import allreduce_latency, time_per_token_parts

__all__: list[str] = []


def _many_gpus_parts(gpu: str, n: int, **kw: Any) -> tuple[Any, dict[str, Any]]:
    """A replica of Llama 3.1 70B on ``n`` x ``gpu`` and its time per token split into parts."""
    r = replica("Llama-3.1-70B", gpu, tensor_parallel=n, weight_bytes="fp8", **kw)
    return r, time_per_token_parts(r)


@register_worked("tp8_not_8x")
def _tp8_not_8x() -> dict[str, Any]:
    kw = dict(batch=4, prompt_tokens=1_024, answer_tokens=8_192)
    r1, _ = _many_gpus_parts("B200", 1, **kw)
    r8, p8 = _many_gpus_parts("B200", 8, **kw)
    return dict(
        t1=r1.tpot,
        t8=r8.tpot,
        ideal=(r1.tpot / 8).to("ms"),
        x=float((r1.tpot / r8.tpot).m),
        w8=p8["weight reads"],
        ar=allreduce_latency("Llama-3.1-70B", r8),
        c8=p8["communication"],
        o=p8["overhead"],
        f8=p8["layer floors"],
        sp=p8["shared prefill"],
        bw_pct=pct(r8.assumptions.bandwidth_efficiency),
        bw=gpus["B200"].bandwidth.to("TB/s"),
    )


@register_worked("nvlink_or_pcie")
def _nvlink_or_pcie() -> dict[str, Any]:
    kw = dict(batch=16, prompt_tokens=1_024, answer_tokens=1_024)
    (rs, ps), (rp, pp) = (_many_gpus_parts(g, 4, **kw) for g in ("H100 SXM", "H100 PCIe"))
    return dict(
        t_s=rs.tpot,
        t_p=rp.tpot,
        ratio=float((rp.tpot / rs.tpot).m),
        ar_s=allreduce_latency("Llama-3.1-70B", rs),
        ar_p=allreduce_latency("Llama-3.1-70B", rp),
        c_s=ps["communication"],
        c_p=pp["communication"],
        w_s=ps["weight reads"],
        w_p=pp["weight reads"],
        bw_pct=pct(rs.assumptions.bandwidth_efficiency),
    )
