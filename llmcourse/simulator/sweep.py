"""Simulations across loads: one replica's tables simulated at a share of its capacity beside the closed form
(:func:`at_load`, the chapter's calculator), a sweep of such loads (:func:`load_sweep`) and its knee."""

from __future__ import annotations

from typing import Any

from llmcourse.catalog import GPU, Model
from llmcourse.errors import InputError
from llmcourse.simulator.closed_forms import ClosedForm, closed_form
from llmcourse.simulator.events import Scheduler
from llmcourse.simulator.run import SimResult, simulate
from llmcourse.simulator.service import ServiceModel, build_replica
from llmcourse.simulator.workload import LENGTH_CV
from llmcourse.units import plain_number

__all__ = ["at_load", "knee", "load_sweep"]


def load_sweep(
    model: Model | str,
    gpu: GPU | str,
    *,
    prompt_tokens: float,
    answer_tokens: float,
    loads: Any = (0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98),
    requests: int = 10_000,
    seed: int = 0,
    prompt_cv: float = LENGTH_CV,
    answer_cv: float = LENGTH_CV,
    **replica_kwargs: Any,
) -> list[tuple[SimResult, ClosedForm]]:
    """Simulate at each load (arrival rate / :meth:`ServiceModel.capacity`) with the same tables and seed."""
    rep = build_replica(model, gpu, prompt_tokens=prompt_tokens, answer_tokens=answer_tokens, **replica_kwargs)
    run = dict(requests=requests, seed=seed, prompt_cv=prompt_cv, answer_cv=answer_cv)
    return [at_load(rep, x, prompt_tokens=prompt_tokens, answer_tokens=answer_tokens, **run) for x in loads]


def at_load(
    rep: ServiceModel,
    load: float,
    *,
    prompt_tokens: float,
    answer_tokens: float,
    requests: int = 10_000,
    seed: int = 0,
    prompt_cv: float = LENGTH_CV,
    answer_cv: float = LENGTH_CV,
    scheduler: Scheduler | None = None,
) -> tuple[SimResult, ClosedForm]:
    """Simulate one replica's tables at ``load`` (arrival rate / :meth:`ServiceModel.capacity`), beside
    the closed form at the same rate: one point of :func:`load_sweep`, and the chapter's calculator
    (``scheduler`` as :func:`~llmcourse.simulator.run.simulate` takes it)."""
    if not isinstance(rep, ServiceModel):
        raise InputError(f"rep must be a ServiceModel: build one with build_replica(...), not {type(rep).__name__}.")
    rate = plain_number(load, "load") * rep.capacity(prompt_tokens, answer_tokens)
    sim = simulate(
        rep.model,
        rep.gpu,
        rate=rate,
        prompt_tokens=prompt_tokens,
        answer_tokens=answer_tokens,
        requests=requests,
        seed=seed,
        prompt_cv=prompt_cv,
        answer_cv=answer_cv,
        scheduler=scheduler,
        replica=rep,
    )
    return sim, closed_form(rep, rate, prompt_tokens, answer_tokens)


def knee(sweep: list[tuple[SimResult, ClosedForm]], factor: float = 5.0) -> float | None:
    """The knee of a sweep (ordered by load): the lowest load at which the simulated p99 TTFT is more
    than ``factor`` times the p99 TTFT at the sweep's lightest load. ``None`` if it never is."""
    f = plain_number(factor, "factor")
    light = sweep[0][0].ttft["p99"]
    for r, _ in sweep:
        if r.ttft["p99"] > f * light:
            return r.load
    return None
