"""Small shared numerics, in the standard library only (the live book has no numpy).

* :func:`percentile` - the ``q``-th percentile of values, as numpy's default method computes it;
  :func:`sorted_percentile` the same of values already sorted (what a simulator's many percentiles of one run
  share: one sort).

The simulator (:mod:`llmcourse.simulator`) and the validation's bands use them; a ground floor, so that neither
imports the other for its numerics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from llmcourse.errors import InputError
from llmcourse.units import plain_number

__all__ = ["percentile", "sorted_percentile"]


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
    a, b, t = float(xs[lo]), float(xs[hi]), pos - lo
    # numpy's lerp: from the nearer end, so a percentile never leaves [a, b] by rounding
    return a + (b - a) * t if t < 0.5 else b - (b - a) * (1 - t)
