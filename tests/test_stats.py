"""The shared numerics (llmcourse/stats.py): percentiles with and without weights."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmcourse.errors import InputError
from llmcourse.stats import percentile, percentile_interval, weighted_percentile

values = st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=30)
qs = st.floats(0, 100)


@given(values, qs)
def test_equal_weights_are_numpys_linear_percentile(xs: list[float], q: float) -> None:
    assert weighted_percentile(xs, [1.0] * len(xs), q) == pytest.approx(percentile(xs, q), rel=1e-9, abs=1e-6)


@given(
    st.lists(st.tuples(st.floats(-1e3, 1e3, allow_nan=False), st.floats(0.01, 100)), min_size=1, max_size=30), qs, qs
)
def test_weighted_percentile_lies_between_the_values_and_grows_with_q(pairs, q1: float, q2: float) -> None:
    xs, ws = [x for x, _ in pairs], [w for _, w in pairs]
    lo, hi = sorted((q1, q2))
    a, b = weighted_percentile(xs, ws, lo), weighted_percentile(xs, ws, hi)
    assert min(xs) <= a <= b <= max(xs)
    assert weighted_percentile(xs, [3 * w for w in ws], hi) == pytest.approx(b, rel=1e-9, abs=1e-9)


def test_a_heavier_value_pulls_the_percentile_toward_it() -> None:
    """1, 2, 3 with weights 1, 1, 2: positions (0, 1.5, 3) / 3 of the span, 0%, 50%, 100%; with 3 weighted 2
    the span is 4 - 1.5 = 2.5 and 2 sits at (1 + 0.5 - 0.5) / 2.5 = 40%: the median is 2 + 10/60 of the way to 3."""
    assert weighted_percentile([1, 2, 3], [1, 1, 1], 50) == 2.0
    assert weighted_percentile([1, 2, 3], [1, 1, 2], 50) == pytest.approx(2 + 1 / 6)


@pytest.mark.parametrize(
    ("xs", "ws", "q", "match"),
    [
        ([], [], 50, "at least one"),
        ([1.0, 2.0], [1.0], 50, "as many weights as values"),
        ([1.0, 2.0], [1.0, -1.0], 50, "weights must be greater than zero"),
        ([1.0, float("nan")], [1.0, 1.0], 50, "values"),
        ([1.0, 2.0], [1.0, 1.0], 101, "at most 100"),
        ("12", [1.0, 1.0], 50, "values"),
    ],
)
def test_weighted_percentile_refuses_bad_input(xs, ws, q, match: str) -> None:
    with pytest.raises(InputError, match=match):
        weighted_percentile(xs, ws, q)


@pytest.mark.parametrize(
    ("n", "q", "ranks"),
    [
        # by hand: n p -+ 1.96 sqrt(n p (1 - p)), floored and ceiled, 1-based
        (4_000, 99, (3947, 3973)),  # 3960 -+ 12.33
        (4_000, 50, (1938, 2062)),  # 2000 -+ 61.98
        (1_000, 90, (881, 919)),  # 900 -+ 18.59
    ],
)
def test_percentile_interval_ranks_by_hand(n, q, ranks):
    """The interval's ends are the order statistics of the ranks worked by hand (the values 1..n are their ranks)."""
    xs = [float(i) for i in range(1, n + 1)]
    assert percentile_interval(xs, q) == (float(ranks[0]), float(ranks[1]))


def test_percentile_interval_leaves_an_end_the_sample_cannot_bound_open():
    """200 values cannot bound a p99 from above (rank 201.8), nor 20 values a p5 from below (rank -0.9)."""
    assert percentile_interval([float(i) for i in range(200)], 99)[1] == math.inf
    assert percentile_interval([float(i) for i in range(20)], 5)[0] == -math.inf


@pytest.mark.parametrize("q", [0, 100, -1, 150])
def test_percentile_interval_refuses_a_percentile_outside_0_100(q):
    with pytest.raises(InputError, match="strictly between 0 and 100"):
        percentile_interval([1.0, 2.0], q)
