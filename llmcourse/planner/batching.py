"""Static batching: how much of a batch's slot-steps produce tokens when answers differ in length.

A *static* batch starts ``batch`` requests together and runs until the longest answer is done; a
request that finishes early leaves its slot idle. With answer lengths L independent and uniform on
1..N tokens, the batch runs E[max(L_1..L_n)] steps and each slot produces E[L] tokens, so the fraction
of slot-steps that produce a token is

    u = E[L] / E[max],   E[L] = (N + 1) / 2,   E[max] = sum_{m=1}^{N} [1 - ((m - 1)/N)^n]

(E[max] = sum over m >= 1 of P(max >= m), and P(max < m) = ((m - 1)/N)^n). This is the ratio of the
expectations, the long-run share over many batches; the mean of each batch's own ratio differs
slightly. Continuous batching refills a slot as soon as its request finishes, so (ignoring the gaps
between requests) its slots stay busy. :func:`static_batch_utilisation` works the sum as
E[max] = N - sum_{j=0}^{N-1} (j/N)^n: in exact rational arithmetic while n x N is at most 2^20, and
beyond that in floating point, from the largest term down until the rest cannot change it (relative
error below 1e-11), so a batch of 2,048 with answers up to 8,192 tokens takes milliseconds;
:func:`simulate_static_batch` checks them by a seeded simulation.

Used in the chapter *Batching* (``book/08_batching.md``, exercise ``batching_ex5``).

Examples
--------
>>> static_batch_utilisation(2, 2)  # E[L] = 1.5, E[max] = 1.75
Fraction(6, 7)
>>> round(float(static_batch_utilisation(32, 512)), 4)
0.5161
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from llmcourse.errors import InputError
from llmcourse.units import plain_number, seed_number

__all__ = ["StaticBatchRun", "expected_max_length", "simulate_static_batch", "static_batch_utilisation"]


#: The largest batch and answer length taken (bounds on the input, not modelling constants): past a
#: million, no batch or answer is served, and a simulation would run for hours.
_MOST, _MOST_WHY = 1_000_000, " (no batch or answer is that long)"
#: Up to this n x N the sum is exact (a Fraction of whole numbers); beyond it, floating point.
_EXACT_WORK = 2**20
#: The most answer lengths a simulation draws (trials x batch): about ten seconds of standard-library draws.
_MOST_DRAWS = 10_000_000


def _count(value: Any, name: str) -> int:
    n = int(plain_number(value, name, integer=True, at_least=1, at_most=_MOST, why=_MOST_WHY))
    if n < 1:
        raise InputError(f"{name} must be 1 or more; got {n}.")
    return n


def expected_max_length(batch: int, max_tokens: int) -> Fraction:
    """E[max of ``batch`` answer lengths], each uniform on 1..``max_tokens``, as an exact fraction.

    Examples
    --------
    >>> expected_max_length(1, 4)  # one request: the mean, (1 + 4) / 2
    Fraction(5, 2)
    >>> expected_max_length(2, 2)  # max is 1 only if both are 1 (1/4): 1/4 + 2 x 3/4
    Fraction(7, 4)
    """
    n, big_n = _count(batch, "batch"), _count(max_tokens, "max_tokens")
    if n * big_n <= _EXACT_WORK:  # sum of P(max >= m) = 1 - ((m - 1)/N)^n, as whole numbers over N^n
        return big_n - Fraction(sum(j**n for j in range(big_n)), big_n**n)
    rest = 0.0  # sum of (j/N)^n from j = N - 1 down: the terms fall fast, so stop when they no longer count
    for j in range(big_n - 1, 0, -1):
        term = (j / big_n) ** n
        rest += term
        if term < 1e-17 * rest:
            break
    return Fraction(big_n - rest)


def static_batch_utilisation(batch: int, max_tokens: int) -> Fraction:
    """Fraction of a static batch's slot-steps that produce a token: E[L] / E[max], lengths uniform on 1..N.

    Examples
    --------
    >>> static_batch_utilisation(1, 512)  # a batch of one is never idle
    Fraction(1, 1)
    """
    big_n = _count(max_tokens, "max_tokens")
    return Fraction(big_n + 1, 2) / expected_max_length(batch, big_n)


@dataclass(frozen=True)
class StaticBatchRun:
    """A simulated run of static batches: tokens produced over slot-steps, pooled over all batches."""

    batch: int
    max_tokens: int
    trials: int
    utilisation: float
    mean_steps: float
    std_error_steps: float


def simulate_static_batch(batch: int, max_tokens: int, *, trials: int = 2_000, seed: int = 0) -> StaticBatchRun:
    """Draw ``trials`` static batches of answer lengths uniform on 1..``max_tokens`` (standard-library
    ``random.Random(seed)``) and pool them: tokens produced / (batch x steps run).

    Examples
    --------
    >>> r = simulate_static_batch(32, 512, trials=500, seed=1)
    >>> abs(r.utilisation - float(static_batch_utilisation(32, 512))) < 0.01
    True
    """
    n, big_n, t = _count(batch, "batch"), _count(max_tokens, "max_tokens"), _count(trials, "trials")
    if n * t > _MOST_DRAWS:
        raise InputError(
            f"trials x batch ({t:,} x {n:,}) must be at most {_MOST_DRAWS:,} draws (about ten seconds); "
            "give fewer trials."
        )
    seed_number(seed)
    r = random.Random(seed)
    tokens, steps = 0, []
    for _ in range(t):
        lengths = [r.randint(1, big_n) for _ in range(n)]
        tokens += sum(lengths)
        steps.append(max(lengths))
    se = statistics.stdev(steps) / math.sqrt(t) if t > 1 else float("inf")
    return StaticBatchRun(n, big_n, t, tokens / (n * sum(steps)), statistics.fmean(steps), se)
