"""The calculator of the chapter *Queueing: what the averages hide* (``book/10_queueing.md``)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import ipywidgets as w

from llmcourse.simulator import LENGTH_CV, ClosedForm, Scheduler, ServiceModel, SimResult, at_load, build_replica
from llmcourse.units import fmt
from llmcourse.widgets import Calculator, float_slider, gpu_dropdown, int_box, int_slider, model_dropdown

__all__ = ["queueing_calculator"]


@dataclass(frozen=True)
class _Result:
    sim: SimResult
    closed: ClosedForm

    def rows(self) -> list[tuple[str, str]]:
        c = self.closed
        return [
            ("arrival rate (capacity)", f"{fmt(self.sim.rate, '1/s')} ({fmt(self.sim.rate / self.sim.load, '1/s')})"),
            *self.sim.rows(),
            ("closed form: TTFT / TPOT (batch)", f"{fmt(c.ttft, 'ms')} / {fmt(c.tpot, 'ms')} ({c.batch})"),
        ]


@lru_cache(maxsize=32)
def _replica(model: str, gpu: str, prompt_tokens: int, answer_tokens: int) -> ServiceModel:
    """The service model (the course's method), built once per model, GPU and request shape (moving the load or
    seed reuses it)."""
    return build_replica(model, gpu, prompt_tokens=prompt_tokens, answer_tokens=answer_tokens)


#: The scheduler's choices: whole prompts (decoding stalls), or a token budget per iteration.
CHUNK_OPTIONS = [("whole prompts", 0), *[(f"{t:,} tokens per iteration", t) for t in (256, 512, 1_024, 2_048, 8_192)]]


def _rows(
    model: str,
    gpu: str,
    prompt_tokens: int,
    answer_tokens: int,
    load: float,
    cv: float,
    chunk: int,
    hit_rate: float,
    prefix_tokens: int,
    requests: int,
    seed: int,
) -> _Result:
    rep = _replica(model, gpu, prompt_tokens, answer_tokens)
    sim, closed = at_load(
        rep,
        load,
        prompt_tokens=prompt_tokens,
        answer_tokens=answer_tokens,
        requests=requests,
        seed=seed,
        prompt_cv=cv,
        answer_cv=cv,
        scheduler=Scheduler(
            chunk or None, prefix_hit_rate=hit_rate, prefix_tokens=prefix_tokens if hit_rate > 0 else 0
        ),
    )
    return _Result(sim, closed)


def queueing_calculator(
    model: str = "Llama-3.1-8B",
    gpu: str = "H100 SXM",
    prompt_tokens: int = 2_000,
    answer_tokens: int = 300,
    load: float = 0.8,
    cv: float = LENGTH_CV,
    chunk: int = 8_192,
    hit_rate: float = 0.0,
    prefix_tokens: int = 1_000,
    requests: int = 10_000,
    seed: int = 0,
) -> Calculator:
    """Model, GPU, request shape, load and scheduler (a token budget per iteration, the engines' 8,192 by default, or
    whole prompts; a prefix cache) ->
    simulated TTFT and TPOT percentiles beside the closed form.

    Examples
    --------
    >>> c = queueing_calculator(requests=2_000)
    >>> c.error is None, "TTFT p99" in dict(c.rows)
    (True, True)
    >>> c.set(prompt_tokens=10_000_000).error.startswith("one request of")
    True
    """
    return Calculator(
        _rows,
        {
            "model": model_dropdown(model),
            "gpu": gpu_dropdown(gpu),
            "prompt_tokens": int_box(prompt_tokens, "Mean prompt tokens"),
            "answer_tokens": int_box(answer_tokens, "Mean answer tokens"),
            "load": float_slider(load, 0.05, 1.2, 0.05, "Load (arrivals / capacity)"),
            "cv": float_slider(cv, 0.0, 2.0, 0.1, "Spread of lengths (CV)"),
            "chunk": w.Dropdown(options=CHUNK_OPTIONS, value=chunk, description="Prefill"),
            "hit_rate": float_slider(hit_rate, 0.0, 1.0, 0.05, "Prefix cache hits"),
            "prefix_tokens": int_box(prefix_tokens, "Cached prefix tokens"),
            "requests": int_slider(requests, 1_000, 50_000, 1_000, "Requests simulated"),
            "seed": int_slider(seed, 0, 99, description="Seed"),
        },
        title="One replica under random traffic",
    )
