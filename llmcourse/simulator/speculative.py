"""The Monte-Carlo twin of speculative decoding's accept/reject loop: seeded verification steps whose mean tokens
per step checks the closed form ``(1 - alpha^(k+1)) / (1 - alpha)``
(:func:`llmcourse.replica.speculative.expected_tokens`). Standard library only (``random``, ``statistics``), so it
runs in the browser.

Defined in the chapter *Speculative decoding* (``book/08b_speculative.md``).

Examples
--------
>>> r = simulate(0.8, 4, trials=50_000, seed=3)
>>> r.expected, abs(r.mean_tokens - r.expected) < 4 * r.std_error
(3.3616, True)
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass

from llmcourse.replica.speculative import acceptance_of, draft_tokens_of, expected_tokens
from llmcourse.units import plain_number, seed_number

__all__ = ["SpeculationRun", "simulate"]


@dataclass(frozen=True)
class SpeculationRun:
    """A simulated run of verification steps: the mean tokens per step, its standard error, and how
    many steps yielded 1, 2, ..., k + 1 tokens."""

    acceptance: float
    draft_tokens: int
    trials: int
    mean_tokens: float
    std_error: float
    counts: tuple[int, ...]

    @property
    def expected(self) -> float:
        """The closed form for the same acceptance and draft length."""
        return expected_tokens(self.acceptance, self.draft_tokens)


def simulate(acceptance: float, draft_tokens: int, *, trials: int = 20_000, seed: int = 0) -> SpeculationRun:
    """Run ``trials`` verification steps of the accept/reject loop with ``random.Random(seed)`` (standard
    library only, so it runs in the browser): the target checks the draft's tokens in order, each accepted
    with probability ``acceptance``; the first rejection ends the step, whose tokens are the accepted ones
    plus the target's own (its correction, or a bonus token when all ``draft_tokens`` were accepted).

    Examples
    --------
    >>> r = simulate(0.7, 4, trials=100_000, seed=1)
    >>> abs(r.mean_tokens / r.expected - 1) < 0.01, r.counts[0] + r.counts[-1] < r.trials
    (True, True)
    """
    a, k = acceptance_of(acceptance), draft_tokens_of(draft_tokens)
    n = int(plain_number(trials, "trials", integer=True))
    rng = random.Random(seed_number(seed))
    counts = [0] * (k + 1)
    tokens = []
    for _ in range(n):
        accepted = 0
        while accepted < k and rng.random() < a:
            accepted += 1
        counts[accepted] += 1
        tokens.append(accepted + 1)
    se = statistics.stdev(tokens) / math.sqrt(n) if n > 1 else float("inf")
    return SpeculationRun(a, k, n, statistics.fmean(tokens), se, tuple(counts))
