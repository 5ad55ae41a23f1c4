"""The Monte-Carlo twin of speculative decoding's accept/reject loop: seeded verification steps whose mean tokens
per step checks the closed form ``(1 - alpha^(k+1)) / (1 - alpha)``
(:func:`llmcourse.replica.speculative.expected_tokens`). Standard library only (``random``, ``statistics``), so it
runs in the browser.

Its times are the replica model's: :meth:`SpeculationRun.time_per_token` and :meth:`SpeculationRun.speedup` divide
the cycle time of a :class:`~llmcourse.replica.speculative.SpeculativeStep` (one verification with the per-step
overhead, and k draft steps, each with the draft step's own fixed cost,
:func:`~llmcourse.replica.speculative.draft_step_overhead`) by the simulated tokens per cycle, by the same formula
(``FORMULAS["speculative_token_time"]``): the twin has no cycle time of its own.

Defined in the chapter *Speculative decoding* (``book/08b_speculative.md``).

Examples
--------
>>> r = simulate(0.8, 4, trials=50_000, seed=3)
>>> r.expected, abs(r.mean_tokens - r.expected) < 4 * r.std_error
(3.3616, True)
>>> from llmcourse.replica.speculative import Speculation, speculative_step
>>> step = speculative_step("Llama-3.1-8B", "H100 SXM", Speculation("eagle head", 4, 0.8), context_tokens=2_150)
>>> abs(r.speedup(step) / step.speedup - 1) < 0.01  # the closed form's speed-up, within the run's noise
True
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.replica.speculative import acceptance_of, draft_tokens_of, expected_tokens
from llmcourse.units import plain_number, seed_number, to

if TYPE_CHECKING:
    import pint

    from llmcourse.replica.speculative import SpeculativeStep

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

    def time_per_token(self, step: SpeculativeStep) -> pint.Quantity:
        """The time per output token with the simulated tokens per cycle: ``step``'s cycle time (the replica
        model's, for the same acceptance and draft length) over :attr:`mean_tokens`."""
        spec = step.speculation
        if (spec.acceptance, spec.draft_tokens) != (self.acceptance, self.draft_tokens):
            raise InputError(
                f"the step speculates with alpha = {spec.acceptance:g}, k = {spec.draft_tokens} but the run simulated "
                f"alpha = {self.acceptance:g}, k = {self.draft_tokens}: time a step of the same speculation."
            )
        return to(F["speculative_token_time"](cycle_time=step.cycle_time, expected_tokens=self.mean_tokens), "ms")

    def speedup(self, step: SpeculativeStep) -> float:
        """The speed-up over ``step``'s plain decode step with the simulated tokens per cycle."""
        return float(to(step.plain.step_time / self.time_per_token(step), "").m)


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
