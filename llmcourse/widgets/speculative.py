"""The calculator of the chapter *Speculative decoding* (``book/08b_speculative.md``).

Model, GPU, kind of draft, acceptance rate, draft length and batch -> time per output token, tokens
per second per user and in all, the speed-up over plain decode, the batch at which speculation stops
paying and the draft's memory, all from :mod:`llmcourse.replica.speculative` and :mod:`llmcourse.planner.speculation`
under the method chosen (an assumptions preset, the course's by default); the accept/reject loop simulated by
:mod:`llmcourse.simulator.speculative`.
"""

from __future__ import annotations

import ipywidgets as w

from llmcourse.assumptions import resolve
from llmcourse.catalog import gpus, models
from llmcourse.catalog.drafts import KINDS
from llmcourse.planner.speculation import crossover_search
from llmcourse.replica.speculative import Speculation, expected_tokens, shared_speculative_step
from llmcourse.simulator.speculative import simulate
from llmcourse.units import fmt
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

__all__ = ["speculative_calculator", "speculative_twin_calculator"]

#: Both calculators' starting scenario: each drafted token accepted with probability 0.7, four drafted per step (a
#: reader's inputs, not modelling constants).
ACCEPTANCE, DRAFT_TOKENS = 0.7, 4


def _rows(
    model: str,
    gpu: str,
    tensor_parallel: int,
    precision: str,
    kind: str,
    draft_model: str,
    acceptance: float,
    draft_tokens: int,
    batch: int,
    context_tokens: int,
    method: str,
) -> list[tuple[str, str]]:
    spec = Speculation(kind, draft_tokens, acceptance, draft_model if kind == "draft model" else None)
    kw = dict(tensor_parallel=tensor_parallel, weight_bytes=precision, assumptions=method)
    steps: dict = {}  # the three decode steps, set up once for the step and the crossover's search
    s = shared_speculative_step(model, gpu, spec, batch=batch, context_tokens=context_tokens, **kw, steps=steps)
    mem = s.memory  # speculative_memory(model, gpu, spec, context_tokens=context_tokens, **kw), as crossover_batch's
    # crossover_batch(model, gpu, spec, context_tokens=context_tokens, **kw), from that memory and those steps
    x = crossover_search(
        models[model], gpus[gpu], spec, mem, context_tokens, None, tensor_parallel, precision, 2, resolve(method), steps
    )
    stops = f"pays at every batch that fits (up to {mem.max_batch:,})" if x is None else f"{x:,}"
    return [
        *s.rows(),
        ("speculation stops paying at batch", stops),
        ("sequences that fit", f"{mem.max_batch:,} with the draft, {mem.plain_max_batch:,} without"),
        ("draft's memory at this batch", fmt(mem.draft_memory(batch), "GB")),
    ]


def speculative_calculator(
    model: str = "Llama-3.1-70B",
    gpu: str = "H100 SXM",
    tensor_parallel: int = 2,
    precision: str = "fp8",
    kind: str = "draft model",
    draft_model: str = "Llama-3.1-8B",
    acceptance: float = ACCEPTANCE,
    draft_tokens: int = DRAFT_TOKENS,
    batch: int = 1,
    context_tokens: int = 2_150,
    method: str = "course",
) -> Calculator:
    """Speculative decoding of one replica: the target on ``tensor_parallel`` GPUs, a draft of a kind
    (the draft model is used only for the kind "draft model"), ``draft_tokens`` proposed per step and
    each accepted with probability ``acceptance``, ``batch`` sequences whose KV caches are read at
    ``context_tokens``.

    Examples
    --------
    >>> c = speculative_calculator()
    >>> dict(c.rows)["speed-up"]
    '1.71x'
    >>> dict(c.set(kind="ngram", acceptance=0.5).rows)["draft steps"]
    'none (a lookup)'
    >>> c.set(kind="draft model", acceptance=0.7, batch=500).error[:34]
    'a batch of 500 needs 573 GB with t'
    """
    return Calculator(
        _rows,
        {
            "model": model_dropdown(model),
            "gpu": gpu_dropdown(gpu),
            "tensor_parallel": int_slider(tensor_parallel, 1, 8, description="GPUs (tensor parallel)"),
            "precision": precision_dropdown(precision, "Weights", ("bf16", "fp8")),
            "kind": w.Dropdown(options=list(KINDS), value=kind, description="Draft"),
            "draft_model": model_dropdown(draft_model, description="Draft model"),
            "acceptance": float_slider(acceptance, 0.0, 0.99, 0.01, "Acceptance rate"),
            "draft_tokens": int_slider(draft_tokens, 1, 8, description="Draft tokens k"),
            "batch": int_slider(batch, 1, 512, description="Concurrent requests"),
            "context_tokens": int_box(context_tokens, "Context (tokens)"),
            "method": preset_dropdown(method),
        },
        title="Speculative decoding: time per token, throughput, speed-up",
    )


def _twin_rows(acceptance: float, draft_tokens: int, trials: int, seed: int) -> list[tuple[str, str]]:
    run = simulate(acceptance, draft_tokens, trials=trials, seed=seed)
    tau = expected_tokens(acceptance, draft_tokens)
    shares = ", ".join(f"{n + 1}: {c / run.trials:.1%}" for n, c in enumerate(run.counts))
    return [
        ("closed form (1 - alpha^(k+1)) / (1 - alpha)", f"{tau:.4f} tokens per step"),
        ("simulated mean", f"{run.mean_tokens:.4f} +/- {run.std_error:.4f} (one standard error)"),
        ("difference", f"{run.mean_tokens / tau - 1:+.2%}"),
        ("steps that yielded 1, 2, ... tokens", shares),
    ]


def speculative_twin_calculator(
    acceptance: float = ACCEPTANCE, draft_tokens: int = DRAFT_TOKENS, trials: int = 20_000, seed: int = 0
) -> Calculator:
    """The Monte-Carlo twin of the accept/reject loop (:func:`llmcourse.simulator.speculative.simulate`, standard
    library only) against the closed form.

    Examples
    --------
    >>> c = speculative_twin_calculator()
    >>> dict(c.rows)["closed form (1 - alpha^(k+1)) / (1 - alpha)"]
    '2.7731 tokens per step'
    >>> abs(float(dict(c.rows)["difference"].rstrip("%"))) < 1
    True
    """
    return Calculator(
        _twin_rows,
        {
            "acceptance": float_slider(acceptance, 0.0, 0.99, 0.01, "Acceptance rate"),
            "draft_tokens": int_slider(draft_tokens, 1, 8, description="Draft tokens k"),
            "trials": int_box(trials, "Verification steps simulated"),
            "seed": int_box(seed, "Seed"),
        },
        title="Speculative decoding: the accept/reject loop, simulated",
    )
