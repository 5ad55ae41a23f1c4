"""Small shared numerics, in the standard library only (the live book has no numpy).

* :func:`percentile` - the ``q``-th percentile of values, as numpy's default method computes it;
  :func:`sorted_percentile` the same of values already sorted (what a simulator's many percentiles of one run
  share: one sort); :func:`weighted_percentile` the same with a weight on each value (the validation's bands:
  each measured setup counts once, however many rows it has); :func:`percentile_interval` how far a percentile of
  a sample could be from the percentile of what it was drawn from (order statistics).

The simulator (:mod:`llmcourse.simulator`) and the validation's bands use them; a ground floor, so that neither
imports the other for its numerics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from llmcourse.errors import InputError
from llmcourse.units import plain_number

__all__ = ["percentile", "percentile_interval", "sorted_percentile", "weighted_percentile"]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of ``values`` by linear interpolation between the two nearest ranks
    (numpy's default ``"linear"`` method): position ``(n - 1) * q / 100`` on the sorted values.

    Examples
    --------
    >>> percentile([4, 1, 3, 2], 50), round(percentile([1, 2, 3, 4], 99), 12), percentile([7], 95)
    (2.5, 3.97, 7.0)
    """
    q = plain_number(q, "q (the percentile)", allow_zero=True, at_most=100)
    try:
        xs = [_finite(x) for x in values]
    except TypeError:
        raise InputError(f"values must be a sequence of numbers; got {type(values).__name__}.") from None
    if not xs:
        raise InputError("the percentile of no values is undefined.")
    return sorted_percentile(sorted(xs), q)


def _finite(x: Any) -> float:
    """A finite number of any sign (refused otherwise, as the number helpers say)."""
    if isinstance(x, float) and math.isfinite(x):
        return x
    if isinstance(x, int) and not isinstance(x, bool) and -(2**1000) < x < 0:
        return float(x)
    return plain_number(x, "values", allow_zero=True)


def sorted_percentile(xs: Sequence[float], q: float) -> float:
    """:func:`percentile` of values already sorted in increasing order, ``q`` from 0 to 100 unchecked.

    Examples
    --------
    >>> sorted_percentile([1.0, 2.0, 3.0, 4.0], 50), sorted_percentile([1.0, 2.0, 3.0, 4.0], 100)
    (2.5, 4.0)
    """
    pos = q / 100 * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return _lerp(float(xs[lo]), float(xs[hi]), pos - lo)


def percentile_interval(xs: Sequence[float], q: float, z: float = 1.96) -> tuple[float, float]:
    """A distribution-free interval for the ``q``-th percentile (0 < q < 100) of what the values already sorted in
    increasing order ``xs`` were drawn from, at about 95% (``z`` 1.96): the order statistics of 1-based ranks
    ``floor(n p - h)`` and ``ceil(n p + h)``, ``h = z sqrt(n p (1 - p))`` (the binomial count of values below the
    percentile, in its normal approximation). A rank past the sample leaves that end open (``-inf`` or ``inf``): a
    run too short to bound the percentile there, not its smallest or largest value. It takes the values as
    independent draws; the requests of one simulated queue are not (a burst delays its neighbours), so compare
    runs with other seeds too.

    Examples
    --------
    >>> xs = [float(i) for i in range(1, 1001)]  # 1..1000: the p99 is 990.01, about 10 values above it
    >>> percentile_interval(xs, 99)
    (983.0, 997.0)
    >>> percentile_interval([float(i) for i in range(1, 101)], 99)  # 100 values: nothing bounds the p99 above
    (97.0, inf)
    >>> percentile_interval([], 50)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: the percentile interval of no values is undefined.
    """
    if not 0 < q < 100:
        raise InputError(f"q must be strictly between 0 and 100 for a percentile interval; got {q!r}.")
    n, p = len(xs), q / 100
    if n == 0:
        raise InputError("the percentile interval of no values is undefined.")
    half = z * math.sqrt(n * p * (1 - p))
    lo, hi = math.floor(n * p - half), math.ceil(n * p + half)
    return (float(xs[lo - 1]) if lo >= 1 else -math.inf), (float(xs[hi - 1]) if hi <= n else math.inf)


def _lerp(a: float, b: float, t: float) -> float:
    """numpy's lerp from ``a`` to ``b`` at ``t`` in [0, 1]: from the nearer end, so a percentile never leaves [a, b] by
    rounding."""
    return a + (b - a) * t if t < 0.5 else b - (b - a) * (1 - t)


def weighted_percentile(values: Sequence[float], weights: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of ``values`` when each counts with its weight: the values sorted, value ``i`` placed
    at the middle of its share of the cumulative weight, ``S_i - w_i / 2``, the positions rescaled so that the least
    value lies at 0 and the greatest at 100, and linear interpolation between them. With equal weights this is
    :func:`percentile` (numpy's default method). Weights are shares, not counts of copies: the least and greatest
    values stay pinned at 0 and 100 whatever their weight, so a value of weight 3 is not three copies of it (the
    validation's bands weigh each row at most 1/20 of a family that holds several setups, where the pinning moves only
    the outermost percentiles, not the 10th and 90th).

    Examples
    --------
    >>> weighted_percentile([4, 1, 3, 2], [1, 1, 1, 1], 50) == percentile([4, 1, 3, 2], 50)
    True
    >>> # two setups, one of three rows near 1 and one of a single row at 2: counting each setup once (weights 1/3
    >>> # and 1) moves the 90th percentile toward the lone setup's row
    >>> xs = [1.0, 1.1, 0.9, 2.0]
    >>> round(weighted_percentile(xs, [1 / 3, 1 / 3, 1 / 3, 1.0], 90), 3), round(percentile(xs, 90), 3)
    (1.82, 1.73)
    >>> weighted_percentile([1.0, 2.0], [1, 0], 50)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: weights must be greater than zero; got 0.
    """
    q = plain_number(q, "q (the percentile)", allow_zero=True, at_most=100)
    try:
        xs = [_finite(x) for x in values]
        ws = [plain_number(w, "weights") for w in weights]
    except TypeError:
        raise InputError("values and weights must be sequences of numbers.") from None
    if not xs or len(xs) != len(ws):
        raise InputError(
            f"weighted_percentile needs as many weights as values, at least one; got {len(xs)} and {len(ws)}."
        )
    pairs = sorted(zip(xs, ws, strict=True))
    if len(pairs) == 1:
        return pairs[0][0]
    first, last = pairs[0][1], pairs[-1][1]
    span = sum(ws) - (first + last) / 2
    pos, cum = [], 0.0
    for _, w in pairs:
        pos.append(100 * (cum + w / 2 - first / 2) / span)
        cum += w
    i = next((k for k in range(1, len(pos)) if pos[k] >= q), len(pos) - 1)
    (p0, a), (p1, b) = (pos[i - 1], pairs[i - 1][0]), (pos[i], pairs[i][0])
    return _lerp(a, b, 0.0 if p1 == p0 else min(max((q - p0) / (p1 - p0), 0.0), 1.0))
