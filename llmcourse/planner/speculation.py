"""Planning decisions on the speculating replica: the draft length with the largest speed-up
(:func:`best_draft_tokens`) and the batch beyond which speculation costs throughput, searched on the full model
(:func:`crossover_batch`) and from SymPy's closed form (:func:`crossover_estimate`).

Every speed-up is the replica model's (:func:`llmcourse.replica.speculative.speculative_step`, the cycle
:func:`~llmcourse.replica.speculative.speculative_cycle`): each token more of draft adds ``alpha^k`` to the expected
tokens and costs one draft step, and once the verification is compute-bound it costs ``k + 1`` positions' FLOPs
for ``tau`` tokens, so the speed-up peaks in the draft length and falls with the batch.

Defined in the chapter *Speculative decoding* (``book/08b_speculative.md``).

Examples
--------
>>> spec = Speculation("eagle head", 4, 0.7)
>>> crossover_batch("Llama-3.1-8B", "H100 SXM", spec, context_tokens=288)
171
>>> best_draft_tokens("Llama-3.1-8B", "H100 SXM", spec, context_tokens=288, max_draft_tokens=8).draft_tokens
6
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.replica.base import gpu_of, model_of
from llmcourse.replica.memory import largest_batch
from llmcourse.replica.speculative import (
    Speculation,
    SpeculativeMemory,
    draft_step_overhead,
    draft_tokens_of,
    speculation_of,
    speculative_cycle,
    speculative_memory,
    speculative_step,
)
from llmcourse.replica.step import decode_step, matmul_precision, read_efficiency
from llmcourse.units import parsed_unit, plain_number, quantity, to

__all__ = ["BestDraft", "best_draft_tokens", "crossover_batch", "crossover_estimate", "crossover_search"]


# --- the best draft length ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BestDraft:
    """The draft length with the largest speed-up, and the speed-up of every length tried."""

    draft_tokens: int
    speedup: float
    speedups: dict[int, float]


def best_draft_tokens(
    model: Model | str,
    gpu: GPU | str,
    speculation: Speculation,
    *,
    batch: int = 1,
    context_tokens: float,
    max_draft_tokens: int = 16,
    **kw: Any,
) -> BestDraft:
    """The number of draft tokens (1 .. ``max_draft_tokens``) that maximises the speed-up at this
    batch, by trying each with :func:`speculative_step` (the rest of ``speculation`` kept). Each token
    more adds ``alpha^k`` to the expected tokens, less and less, and costs one draft step (and, once
    the verification is compute-bound, a position's FLOPs): the speed-up rises, peaks, then falls,
    and the peak is where the next token's gain no longer covers its cost. Where the verification is
    memory-bound and a draft step costs a fixed share of a plain step (each with its per-step
    overhead), SymPy solves for the peak
    (:func:`llmcourse.formulas.speculative.best_draft_tokens_expression`).

    Examples
    --------
    >>> b = best_draft_tokens("Llama-3.1-70B", "H100 SXM", Speculation("draft model", 4, 0.8, "Llama-3.1-8B"),
    ...                       context_tokens=2_150, tensor_parallel=2, weight_bytes="fp8")
    >>> b.draft_tokens, round(b.speedup, 2)
    (5, 2.08)
    """
    spec = speculation_of(speculation)
    top = draft_tokens_of(max_draft_tokens)
    speedups = {
        k: speculative_step(
            model, gpu, spec.with_(draft_tokens=k), batch=batch, context_tokens=context_tokens, **kw
        ).speedup
        for k in range(1, top + 1)
    }
    best = max(speedups, key=lambda k: (speedups[k], -k))
    return BestDraft(best, speedups[best], speedups)


# --- the batch where speculation stops paying ----------------------------------------------------------------------
def crossover_batch(
    model: Model | str,
    gpu: GPU | str,
    speculation: Speculation,
    *,
    context_tokens: float,
    top: int | None = None,
    tensor_parallel: int = 1,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
    fit_context_tokens: float | None = None,
) -> int | None:
    """The first batch at which speculation costs throughput (speed-up below 1), searched up to ``top``;
    None if it pays at every batch up to there, 1 if it never pays. By default ``top`` is the largest
    batch that fits with the draft (:func:`speculative_memory`, sized at ``fit_context_tokens``); a
    larger ``top`` asks about speed alone, as if memory allowed those batches. Bisection on the
    speed-up, which falls as the batch grows once the verification turns compute-bound (about
    log2(top) steps).

    Examples
    --------
    >>> crossover_batch("Llama-3.1-8B", "H100 SXM", Speculation("eagle head", 4, 0.7), context_tokens=288)
    171
    """
    m, g, spec = model_of(model), gpu_of(gpu), speculation_of(speculation)
    a = resolve(assumptions)
    held = context_tokens if fit_context_tokens is None else fit_context_tokens
    kw = dict(tensor_parallel=tensor_parallel, weight_bytes=weight_bytes, kv_bytes=kv_bytes, assumptions=a)
    mem = speculative_memory(m, g, spec, context_tokens=held, **kw)
    return crossover_search(m, g, spec, mem, context_tokens, top, tensor_parallel, weight_bytes, kv_bytes, a)


def crossover_search(
    m: Model,
    g: GPU,
    spec: Speculation,
    mem: SpeculativeMemory,
    context_tokens: float,
    top: int | None,
    tensor_parallel: int,
    weight_bytes: Any,
    kv_bytes: Any,
    a: Assumptions,
    steps: dict[str, Any] | None = None,
) -> int | None:
    """:func:`crossover_batch` for inputs already checked (the catalog's model ``m`` and GPU ``g``, a
    :class:`~llmcourse.replica.speculative.Speculation`, the resolved assumptions ``a``) once the memory is known:
    ``mem``, :func:`~llmcourse.replica.speculative.speculative_memory` of the same arguments (a caller that has it
    already, the speculative calculator, passes its own), and the decode steps it set up for the same arguments,
    ``steps`` (:func:`~llmcourse.replica.speculative.shared_speculative_step` fills them; see
    :func:`~llmcourse.replica.speculative.speculative_cycle`). ``top`` None searches up to the largest batch that
    fits with the draft.

    Examples
    --------
    >>> from llmcourse.replica.speculative import shared_speculative_step
    >>> spec, steps = Speculation("eagle head", 4, 0.7), {}
    >>> s = shared_speculative_step("Llama-3.1-8B", "H100 SXM", spec, context_tokens=288, steps=steps)
    >>> crossover_search(model_of("Llama-3.1-8B"), gpu_of("H100 SXM"), spec, s.memory, 288, None, 1, 2, 2,
    ...                  resolve(), steps)
    171
    """
    if top is None:
        mem.check(1)  # nothing fits: say what to change
        top = mem.max_batch
    top = int(plain_number(top, "top", integer=True))
    tp = int(plain_number(tensor_parallel, "tensor_parallel", integer=True))

    steps = {} if steps is None else steps  # the decode steps, set up once for the search

    def pays(b: int) -> bool:
        s = speculative_cycle(
            m,
            g,
            spec,
            mem,
            batch=b,
            context_tokens=context_tokens,
            tp=tp,
            weight_bytes=weight_bytes,
            kv_bytes=kv_bytes,
            a=a,
            steps=steps,
            speedup_only=True,
        )
        return s >= 1  # the step's speed-up

    last = largest_batch(pays, top)
    return None if last >= top else last + 1


def crossover_estimate(
    model: Model | str,
    gpu: GPU | str,
    speculation: Speculation,
    *,
    context_tokens: float,
    tensor_parallel: int = 1,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
) -> float | None:
    """The crossover batch from the closed form ``FORMULAS["speculative_crossover_batch"]`` (SymPy's
    solution of tau x plain step = verification + k draft steps, with the plain step and the draft
    memory-bound, the verification compute-bound, the verification and the plain step paying the
    assumptions' fixed per-step overhead and each draft step its own fixed cost,
    :func:`~llmcourse.replica.speculative.draft_step_overhead`), with the
    figures of a batch-1 decode step of the target and of the draft; None where the formula has no
    positive root. It holds for a dense target under the slower-of-totals step rule, on one GPU or
    without communication (a tensor-parallel replica's collectives, whose time grows with the tokens
    of each step, are not in it), and only where those regimes hold at the root;
    :func:`crossover_batch` searches the full model.

    Examples
    --------
    >>> e = Speculation("eagle head", 4, 0.7)
    >>> round(crossover_estimate("Llama-3.1-8B", "H100 SXM", e, context_tokens=288), 1)
    170.4
    >>> round(crossover_estimate("Llama-3.1-8B", "H100 SXM", e, context_tokens=288,  # without any fixed cost
    ...                          assumptions=resolve().replace(step_overhead_ms=0, draft_step_overhead_ms=0,
    ...                                                        layer_floor_us=0)), 1)
    146.5
    >>> round(crossover_estimate("Llama-3.1-8B", "H100 SXM", e, context_tokens=288,  # each head step pays 1 ms
    ...                          assumptions=resolve().replace(speculative_overhead="per_step")), 1)
    138.0
    >>> round(crossover_estimate("Llama-3.1-8B", "H100 SXM", Speculation("ngram", 3, 0.6), context_tokens=288), 1)
    178.6
    """
    m, g, spec = model_of(model), gpu_of(gpu), speculation_of(speculation)
    a = resolve(assumptions)
    if m.is_moe:
        raise InputError(
            f"{m.name} is a mixture of experts, whose weight reads grow with the batch: the closed form assumes a "
            "dense model. Use crossover_batch(...), which searches the full model."
        )
    kw = dict(context_tokens=context_tokens, n_gpus=tensor_parallel, kv_bytes=kv_bytes, assumptions=a)
    one = decode_step(m, g, batch=1, weight_bytes=weight_bytes, **kw)
    draft = spec.draft_for(m)
    w_d = k_d = quantity(0.0, parsed_unit("B")[0])
    # a draft step's fixed cost by the assumptions' rule (0 for an n-gram lookup, which runs no step on the GPU)
    o_d = quantity(draft_step_overhead(a, spec), parsed_unit("ms")[0])
    if draft is not None:
        d = decode_step(draft, g, batch=1, weight_bytes=spec.draft_weight_bytes or weight_bytes, **kw)
        w_d, k_d = d.weights_read * d.weight_read_scale, d.kv_read  # 4-bit weights: as the step counts them
        o_d = o_d + d.floor_time  # the draft's layers pay their floor too (none in the sources' presets)
    x = F["speculative_crossover_batch"](
        expected_tokens=spec.expected_tokens,
        draft_tokens=spec.draft_tokens,
        bytes_read=one.weights_read * one.weight_read_scale,
        kv_per_sequence=one.kv_read,
        draft_bytes_read=w_d,
        draft_kv_per_sequence=k_d,
        flops_per_token=one.flops,
        n_gpus=tensor_parallel,
        bandwidth=g.bandwidth,
        bandwidth_efficiency=read_efficiency(weight_bytes, a, m),
        peak_flops=g.peak_flops(matmul_precision(weight_bytes, g, a, m)),
        compute_efficiency=a.compute_efficiency,
        step_overhead=one.overhead_time + one.floor_time,
        draft_overhead=o_d,
    )
    value = float(to(x, "").m)
    return value if value > 0 else None
