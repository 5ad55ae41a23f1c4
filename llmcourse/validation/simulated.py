"""The simulator against measured closed loops: each measured setup simulated at the concurrencies it was measured
at, beside the measured means and the closed forms (chapter *Queueing*)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from llmcourse.errors import InputError
from llmcourse.simulator import Scheduler, build_replica, simulate
from llmcourse.validation.measured import silicon
from llmcourse.validation.prediction import predict

__all__ = ["MEASURED_CHUNK_TOKENS", "MEASURED_SETUPS", "LoopPoint", "against_measured"]

#: Setups of the measured file with time to first token and time per token at five or six concurrencies each:
#: (model, GPU, engine, weights, tensor-parallel GPUs, prompt tokens, answer tokens). One per engine and GPU kind.
MEASURED_SETUPS = (
    ("Llama-3.1-70B", "H200 SXM", "vLLM", "fp8", 4, 8192, 1024),
    ("Llama-3.1-70B", "H200 SXM", "TensorRT-LLM", "fp8", 8, 1024, 1024),
    ("Llama-3.1-70B", "B200", "TensorRT-LLM", "fp8", 2, 8192, 1024),
)
#: The token budget per iteration the measured engines ran with (vLLM's ``max_num_batched_tokens`` and
#: TensorRT-LLM's ``max_num_tokens``, both 8,192 in the measured configurations' defaults).
MEASURED_CHUNK_TOKENS = 8_192


@dataclass(frozen=True)
class LoopPoint:
    """One concurrency of a measured setup: measured, simulated (mean over the run) and the closed form's (ms)."""

    concurrency: int
    measured_ttft: float
    simulated_ttft: float
    closed_form_ttft: float
    measured_tpot: float
    simulated_tpot: float
    model_tpot: float


def against_measured(
    setup: Sequence[Any], *, chunk_tokens: int | None = MEASURED_CHUNK_TOKENS, seed: int = 0
) -> list[LoopPoint]:
    """Simulate one measured setup (a row of :data:`MEASURED_SETUPS`) at each concurrency it was measured at, as
    a closed loop of fixed lengths, beside the measured means and the closed forms of
    :func:`llmcourse.validation.predict`.

    Examples
    --------
    >>> pts = against_measured(MEASURED_SETUPS[0])
    >>> [p.concurrency for p in pts]
    [4, 8, 16, 32, 64]
    """
    model, gpu, engine, weights, tp, isl, osl = setup
    rows = [
        r
        for r in silicon().rows
        if (r.model, r.gpu, r.engine, r.weights, r.tp, r.isl, r.osl) == (model, gpu, engine, weights, tp, isl, osl)
        and r.pp == r.attention_dp == r.ep == 1
        and r.metric in ("ttft_ms", "tpot_ms")
    ]
    if not rows:
        raise InputError(f"no measured closed-loop rows for {setup!r}: pick one of MEASURED_SETUPS.")
    by: dict[int, dict[str, tuple[float, float]]] = {}
    for r in rows:
        by.setdefault(r.concurrency, {})[r.metric] = (r.value, predict(r).value)
    svc = build_replica(
        model, gpu, prompt_tokens=isl, answer_tokens=osl, n_gpus=tp, weight_bytes=weights, kv_bytes=rows[0].kv
    )
    out = []
    for c in sorted(by):
        if len(by[c]) < 2:
            continue
        run = simulate(
            model,
            gpu,
            concurrency=c,
            prompt_tokens=isl,
            answer_tokens=osl,
            requests=max(400, 10 * c),
            prompt_cv=0,
            answer_cv=0,
            seed=seed,
            scheduler=Scheduler(chunk_tokens=chunk_tokens),
            replica=svc,
        )
        (mt, ct), (mp, pp) = by[c]["ttft_ms"], by[c]["tpot_ms"]
        sim_t = math.fsum(run.ttft_s) / len(run.ttft_s) * 1e3
        sim_p = math.fsum(run.tpot_s) / len(run.tpot_s) * 1e3
        out.append(LoopPoint(c, mt, sim_t, ct, mp, sim_p, pp))
    return out
