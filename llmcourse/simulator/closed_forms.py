"""The averages-only estimate beside a simulation: the time to first token of a request alone, and the time per
token at the batch Little's law puts in flight.

The single-server queue's closed forms the chapter and its exercises use (M/M/1: utilisation, mean time in the
system, the highest rate for a mean-time target) are registered with every other formula in
:mod:`llmcourse.formulas` (``mm1_utilisation``, ``mm1_time_in_system``, ``mm1_max_rate``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pint

from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import SYMBOLS, check_value
from llmcourse.replica.memory import max_batch
from llmcourse.simulator.service import ServiceModel
from llmcourse.units import Q_, as_quantity, plain_number, to

__all__ = ["ClosedForm", "closed_form"]


@dataclass(frozen=True)
class ClosedForm:
    """The averages-only estimate at an arrival rate: the request's overhead and its prefill alone, and the batch
    Little's law gives."""

    rate: pint.Quantity
    batch: int
    ttft: pint.Quantity
    tpot: pint.Quantity


def closed_form(rep: ServiceModel, rate: pint.Quantity, prompt_tokens: float, answer_tokens: float) -> ClosedForm:
    """TTFT = the request's fixed overhead, then one prompt's prefill (``FORMULAS["first_token_time"]``; under the
    course's method the engine's steps of a lone prompt, :meth:`ServiceModel.first_token_time`); TPOT =
    the step time at the batch in flight by Little's law, B = rate x (prefill + answer x step(B)) (the time a
    request spends on the engine: its fixed overhead is spent before it), found by fixed-point iteration and
    capped by memory.

    Examples
    --------
    >>> from llmcourse.simulator.service import build_replica
    >>> rep = build_replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=2_000, answer_tokens=300)
    >>> c = closed_form(rep, Q_(0.001, "1/s"), 2_000, 300)
    >>> c.batch, round(c.tpot.to("ms").m, 2) == round(rep.step_time(1) * 1e3, 2)
    (1, True)
    """
    if not isinstance(rep, ServiceModel):
        raise InputError(f"rep must be a ServiceModel: build one with build_replica(...), not {type(rep).__name__}.")
    lam = to(as_quantity(rate, "1/s", "rate"), "1/s")
    plain_number(lam.m, "rate")
    prompt_tokens = check_value(prompt_tokens, SYMBOLS["prompt_tokens"], "prompt_tokens")
    answer_tokens = check_value(answer_tokens, SYMBOLS["answer_tokens"], "answer_tokens")
    if rep.blocks and (prompt_tokens, answer_tokens) == (rep.prompt_tokens, rep.answer_tokens):
        fit = rep.running_cap  # the replica's admitted batch on the KV blocks in use
    else:
        fit = max_batch(
            rep.model,
            rep.gpu,
            prompt_tokens + answer_tokens,
            n_gpus=rep.n_gpus,
            weight_bytes=rep.weight_bytes,
            kv_bytes=rep.kv_bytes,
            assumptions=rep.assumptions,
        )
    top = min(rep.batch_cap, max(1, fit))
    pre = Q_(rep.first_token_time(prompt_tokens), "s")  # the engine's steps of a lone prompt (or its whole prefill)
    b = 1
    for _ in range(50):
        in_sys = F["littles_law"](request_rate=lam, time_in_system=pre + answer_tokens * Q_(rep.step_time(b), "s")).m
        nb = min(top, max(1, math.ceil(in_sys)))
        if nb == b:
            break
        b = nb
    ttft = F["first_token_time"](request_overhead=Q_(rep.assumptions.request_overhead_ms, "ms"), prefill_time=pre)
    return ClosedForm(rate=lam, batch=b, ttft=to(ttft, "ms"), tpot=Q_(rep.step_time(b) * 1e3, "ms"))
