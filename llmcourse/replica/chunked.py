"""The steps of an engine that puts each waiting prompt into a step beside its decode tokens, as vLLM and TensorRT-LLM
run them at their default token budget (formulas ``prompt_step_share`` and ``chunked_mean_step``).

vLLM's scheduler (``Scheduler.schedule``, ``vllm/v1/core/sched/scheduler.py``) fills what a step's token budget leaves
beside the running requests' decode tokens with waiting prompts, whole where they fit (``max_num_batched_tokens``,
8,192 on an H100; its ``long_prefill_token_threshold``, 0 by default, does not cap a prompt), and splits one that does
not into chunks of that rest; TensorRT-LLM's in-flight batching does the same up to its ``max_num_tokens``. So a new
prompt goes into one step, or a few, which its FLOPs make compute-bound, and the other steps decode alone: not a little
of every prompt in every step, which only a budget near the batch's decode tokens plus its share of the prompts gives.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llmcourse.formulas import FORMULAS as F

__all__ = ["ChunkedSteps", "StepParts", "chunked_steps", "steady_step", "step_share"]

#: A step's time, its kernels' memory times and compute times (matmuls, attention), in seconds: the decoder's ``mixed``.
StepParts = tuple[float, tuple[float, float], tuple[float, float]]


def step_share(prompts: float, chunks: int, answer_tokens: float, groups: int = 1) -> float:
    """The share of the steps that carry a prompt chunk (formula ``prompt_step_share``) when ``prompts`` new prompts
    come in over an answer's ``answer_tokens`` steps and each takes ``chunks`` steps; 0 when none come in. With
    ``groups`` attention data-parallel groups scheduling their own prompts apart, the share with a chunk on at least
    one of them (formula ``dp_prompt_step_share``; 1 once each group's prompts fill its steps).

    Examples
    --------
    >>> step_share(31, 1, 300), step_share(0, 1, 300), step_share(150, 3, 300)
    (0.10333333333333333, 0.0, 1.0)
    >>> round(step_share(80, 1, 100, groups=8), 3)  # 10% of each group's steps: 1 - 0.9^8 of the replica's
    0.57
    """
    if prompts <= 0:
        return 0.0
    if groups > 1:
        if chunks * prompts >= groups * answer_tokens:
            return 1.0
        return float(F["dp_prompt_step_share"].value(
            chunks_per_prompt=chunks, batch=prompts, answer_tokens=answer_tokens, data_parallel=groups
        ))  # fmt: skip
    return float(F["prompt_step_share"].value(chunks_per_prompt=chunks, batch=prompts, answer_tokens=answer_tokens))


@dataclass(frozen=True)
class ChunkedSteps:
    """The steps of a batch of ``decoding`` requests whose new prompts take steps of their own: the step that decodes
    alone (``decode``) and each step of a prompt's chunks (``chunks``), as :data:`StepParts`. A user's time per token
    is :meth:`mean` over the other ``decoding - 1`` requests' prompts (its own prompt is its first token); the replica's
    steps run all ``decoding`` of them."""

    decoding: float
    answer_tokens: float
    decode: StepParts
    chunks: tuple[StepParts, ...]
    groups: int  # attention data-parallel groups, each scheduling its own prompts
    #: each chunk step's share of the chunk steps (one group: 1 / k each, its prompt's k chunks one after the other)
    weights: tuple[float, ...]

    def share(self, prompts: float) -> float:
        """The share of the steps that carry a chunk when ``prompts`` prompts come in over an answer."""
        return step_share(prompts, len(self.chunks), self.answer_tokens, self.groups)

    def mean(self, prompts: float) -> float:
        """The mean step (s) when ``prompts`` prompts come in over an answer (formula ``chunked_mean_step``)."""
        return F["chunked_mean_step"].value(
            prompt_step_share=self.share(prompts), chunk_step_time=self.chunk_time, step_time=self.decode[0]
        )

    @property
    def chunk_time(self) -> float:
        """The mean time (s) of a prompt's chunk steps, each by its weight."""
        return math.fsum(w * c[0] for w, c in zip(self.weights, self.chunks, strict=True))

    def bounding(self) -> StepParts:
        """The steps that take most of a user's time: the longest chunk step where the chunk steps' share of the time
        is the larger, else the step that decodes alone."""
        share = self.share(self.decoding - 1)
        if share * self.chunk_time > (1 - share) * self.decode[0]:
            return max(self.chunks, key=lambda c: c[0])
        return self.decode


def chunked_steps(
    mixed: Callable[..., StepParts],
    decoding: float,
    chunks: Sequence[tuple[float, float, float]],
    answer_tokens: float,
    groups: int = 1,
) -> ChunkedSteps | None:
    """The :class:`ChunkedSteps` of ``decoding`` requests whose prompts come in ``chunks`` (each: its tokens, its
    attention FLOPs per token, the earlier KV bytes it reads), ``mixed`` the decoder's mixed step; None when the
    replica's prompts need a chunk in every step (the budget then spreads them over all of them: one steady step).
    With ``groups`` attention data-parallel groups, a chunk step carries the chunks of the groups that have one
    (formula ``dp_chunk_groups`` of them, on average), each group's its own and at its own place in its prompt, so the step
    waits for the busiest group, whose chunk is the costliest of the step's: the chunk steps are one for each chunk as
    the costliest (in order of cost), weighted by how often it is (formula ``dp_busiest_chunk_within``), with the mean
    prompt tokens of all the groups in such steps (formula ``dp_chunk_tokens_within``); ``mixed`` takes them with
    ``groups=`` their tokens over the busiest chunk's.

    Examples
    --------
    >>> step = lambda n, c, f, r: (0.01 + 1e-5 * c, (0.01, 0.0), (1e-5 * c, 0.0))
    >>> cs = chunked_steps(step, 32, [(2_000, 0.0, 0.0)], 300)
    >>> round(cs.mean(31) * 1e3, 3), round(cs.mean(32) * 1e3, 3), chunked_steps(step, 32, [(100, 0.0, 0.0)] * 10, 300)
    (12.067, 12.133, None)
    """
    if groups > 1 and len(chunks) * decoding >= groups * answer_tokens:  # each group's prompts fill its steps
        return None
    if groups <= 1 and step_share(decoding, len(chunks), answer_tokens) >= 1:
        return None
    alone = mixed(decoding, 0.0, 0.0, 0.0)
    k = len(chunks)
    if groups <= 1:
        steps = tuple(mixed(decoding, t, f, r) for t, f, r in chunks)
        return ChunkedSteps(decoding, answer_tokens, alone, steps, 1, (1 / k,) * k)
    # by cost, each chunk's step on one group: the busiest group has the costliest of the step's chunks (a late
    # remainder of a long prompt can cost more than its tokens say: it attends to the whole prompt before it)
    ordered = sorted(chunks, key=lambda c: mixed(decoding, c[0], c[1], c[2], groups=1.0)[0])
    within = [math.fsum(c[0] for c in ordered[:i]) for i in range(k + 1)]
    given = dict(chunks_per_prompt=k, batch=decoding, answer_tokens=answer_tokens, data_parallel=groups)
    share = [float(F["dp_busiest_chunk_within"].value(chunks_within=i, **given)) for i in range(k + 1)]
    tokens = [
        float(F["dp_chunk_tokens_within"].value(chunks_within=i, tokens_within=within[i], **given))
        for i in range(k + 1)
    ]
    weights, steps = [], []
    for i, (t, f, r) in enumerate(ordered):
        w = share[i + 1] - share[i]
        if w <= 0:  # a chunk never the largest (one as large is counted instead)
            continue
        g = max(1.0, (tokens[i + 1] - tokens[i]) / w / t)  # the step's tokens over the busiest chunk's: 1 to D
        weights.append(w)
        steps.append(mixed(decoding, g * t, f, g * r, groups=g))
    return ChunkedSteps(decoding, answer_tokens, alone, tuple(steps), groups, tuple(weights))


def steady_step(
    mixed: Callable[..., StepParts],
    decoding: float,
    chunk_tokens: float,
    chunks: Sequence[tuple[float, float, float]],
    groups: int = 1,
) -> StepParts:
    """The step of ``decoding`` requests when the budget spreads their prompts over every step: ``chunk_tokens`` prompt
    tokens a step (formula ``steady_chunk_tokens``), with the prompt's mean attention FLOPs per token and its chunks'
    earlier-KV reads in proportion (``chunks`` as :func:`chunked_steps` takes them).

    Examples
    --------
    >>> step = lambda n, c, f, r: (f, (r, 0.0), (0.0, 0.0))
    >>> steady_step(step, 32, 100.0, [(2_000, 1.0, 0.0), (2_000, 3.0, 8.0)])
    (2.0, (0.2, 0.0), (0.0, 0.0))
    """
    prompt = math.fsum(k for k, _, _ in chunks)
    att = math.fsum(k * f for k, f, _ in chunks) / prompt  # attention FLOPs per prompt token, over the whole prompt
    kv = chunk_tokens / prompt * math.fsum(r for _, _, r in chunks)  # the earlier KV a step's chunks read
    if groups > 1:  # attention data-parallel groups, each prefilling its share of the step's prompt tokens
        return mixed(decoding, chunk_tokens, att, kv, groups=groups)
    return mixed(decoding, chunk_tokens, att, kv)
