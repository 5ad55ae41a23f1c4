"""The calculator of the chapter *Disaggregated serving* (``book/10b_disaggregation.md``).

A brief (rate, prompt, answer, the two targets), a model, a GPU and the replica shapes -> the
aggregated plan (:func:`llmcourse.planner.design.plan`) beside a prefill pool and a decode pool sized for
the same targets (:func:`llmcourse.planner.disagg.compare`): each one's GPUs and times, the pieces of the
disaggregated time to first token (the wait for a prefill replica, the prefill, the KV hand-off over
the link between the pools), and which needs fewer GPUs. The aggregated plan is cached on its inputs,
so moving a control of the disaggregated side alone re-sizes only the pools.
"""

from __future__ import annotations

import functools
from typing import Any

import ipywidgets as w

from llmcourse.catalog import links
from llmcourse.planner.design import Brief, plan
from llmcourse.planner.disagg import COMPARE_RUN, Comparison, disaggregated
from llmcourse.units import Q_, parsed_unit
from llmcourse.widgets import (
    Calculator,
    float_slider,
    gpu_dropdown,
    int_box,
    int_slider,
    model_dropdown,
    precision_dropdown,
    preset_dropdown,
)
from llmcourse.widgets.design_review import brief_controls

__all__ = ["DISAGG_BRIEF", "disagg_calculator"]

_SCALE_OUT = "scale-out (between nodes)"
_MS = parsed_unit("ms")[0]  # parsed once: pint parses a unit string anew each time


@functools.lru_cache(maxsize=64)
def _plan(model: str, gpu: str, given: tuple, tensor_parallel: int, precision: str, method: str) -> Any:
    return plan(
        model, gpu, _brief(given), tensor_parallel=tensor_parallel, weight_bytes=precision, assumptions=method,
        simulation=COMPARE_RUN,
    )  # fmt: skip


def _brief(given: tuple) -> Brief:
    """A brief from (rate, prompt, answer, TTFT target in ms, TPOT target in ms), its first token's target at p99:
    both deployments' first tokens queued and read at the same percentile, as :func:`compare` reads them."""
    rate, prompt, answer, ttft_ms, tpot_ms = given
    return Brief(rate, prompt, answer, Q_(ttft_ms, _MS), Q_(tpot_ms, _MS), ttft_percentile=99)


#: The brief the calculator starts at (the chapter's): 20 requests/s of 2,000 prompt and 300 answer tokens, a first
#: token within 600 ms and a token every 40 ms.
DISAGG_BRIEF = Brief(20.0, 2_000, 300, Q_(600, _MS), Q_(40, _MS))


def disagg_calculator(
    model: str = "Llama-3.1-70B",
    gpu: str = "H100 SXM",
    brief: Brief = DISAGG_BRIEF,
    tensor_parallel: int = 4,
    prefill_tensor_parallel: int = 4,
    decode_tensor_parallel: int = 4,
    link: str = _SCALE_OUT,
    precision: str = "fp8",
    method: str = "course",
) -> Calculator:
    """Aggregated against disaggregated for one brief: the GPUs each needs to meet both targets (the controls start
    at ``brief``'s rate, lengths and targets; both first tokens queued and read at p99).

    Examples
    --------
    >>> c = disagg_calculator()
    >>> rows = dict(c.rows)
    >>> rows["fewer GPUs"], rows["GPUs"], rows["aggregated"].split(";")[0]
    ('a tie: 16 GPUs each (aggregated, the simpler system)', '16', '16 GPUs (4 x TP4)')
    >>> dict(c.set(link="NVLink 4").rows)["at the brief's prompt: KV hand-off"]
    '0.5 ms over NVLink 4'
    >>> c.set(prefill_tensor_parallel=3).error[:40]
    'tensor_parallel=3 does not divide Llama-'
    """
    rate, prompt, answer, ttft_ms, tpot_ms = brief_controls(brief)

    def compute(**v: Any) -> Comparison:
        given = (v["requests_per_second"], v["prompt_tokens"], v["answer_tokens"], v["ttft_ms"], v["tpot_ms"])
        agg = _plan(v["model"], v["gpu"], given, v["tensor_parallel"], v["precision"], v["method"])
        dis = disaggregated(
            v["model"],
            v["gpu"],
            agg.brief,  # the brief of these inputs (the plan's own, built once from them)
            prefill_tensor_parallel=v["prefill_tensor_parallel"],
            decode_tensor_parallel=v["decode_tensor_parallel"],
            link=None if v["link"] == _SCALE_OUT else v["link"],
            weight_bytes=v["precision"],
            assumptions=v["method"],
        )  # its prefill queue simulated on COMPARE_RUN, as the aggregated plan's queue is
        return Comparison(agg, dis)

    return Calculator(
        compute,
        {
            "model": model_dropdown(model),
            "gpu": gpu_dropdown(gpu),
            "requests_per_second": float_slider(rate, 0.5, 200.0, 0.5, description="Requests/s"),
            "prompt_tokens": int_box(prompt, "Prompt (tokens)"),
            "answer_tokens": int_box(answer, "Answer (tokens)"),
            "ttft_ms": int_box(round(ttft_ms), "TTFT target (ms)"),
            "tpot_ms": int_box(round(tpot_ms), "TPOT target (ms)"),
            "tensor_parallel": int_slider(tensor_parallel, 1, 8, description="Aggregated TP"),
            "prefill_tensor_parallel": int_slider(prefill_tensor_parallel, 1, 8, description="Prefill TP"),
            "decode_tensor_parallel": int_slider(decode_tensor_parallel, 1, 8, description="Decode TP"),
            "link": w.Dropdown(options=[_SCALE_OUT, *links], value=link, description="Pools' link"),
            "precision": precision_dropdown(precision, "Weights", ("bf16", "fp8", "fp4")),
            "method": preset_dropdown(method),
        },
        title="Disaggregated serving: aggregated vs prefill + decode pools",
    )
