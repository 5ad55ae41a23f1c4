"""What a wrong answer gets: the slips of its kind, then its direction and rough size.

An answer's *kind* is the expected answer's dimension (:func:`kind_of`: bytes, bandwidth, time, rate,
money, a count, FLOPs, ...), and each kind invites its own slips (:data:`SLIPS`: KiB vs kB and bits vs
bytes for bytes, ms vs s for a time, per second vs per minute for a rate, per token vs per million for
money, a percentage for a count). :func:`diagnose` names the slip behind an answer ``ratio`` times the
right one, else its direction and a coarse size (:func:`size_words`, never the exact ratio);
:func:`slip_words` is the slip alone, shared by the exercise checker and the interview drills.

Examples
--------
>>> from llmcourse.units import Q_
>>> diagnose(1 / 1.024, kind_of(Q_(320, "KiB")), 0.01)
'too small by a factor of 1.024 (KiB vs kB?)'
>>> diagnose(3.2, "bytes", 0.01)
'about 3x too large'
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pint

__all__ = ["SLIPS", "diagnose", "kind_of", "size_words", "slip_words"]

_PREFIX = "check the unit prefix (k, M, G, T)"
_BYTE_SLIPS: list[tuple[float, str]] = [
    (1.024, "KiB vs kB?"),
    (1.024**2, "MiB vs MB?"),
    (1.024**3, "GiB vs GB?"),
    (1.024**4, "TiB vs TB?"),
    (8.0, "bits vs bytes?"),
    (8e3, "bits vs bytes, and a unit prefix?"),
    (1.024e3, "KiB vs kB, and a unit prefix?"),
    (1e3, _PREFIX),
    (1e6, _PREFIX),
    (1e9, _PREFIX),
    (1e12, _PREFIX),
]
#: The slips each kind of answer invites (the kind is the expected answer's dimension).
SLIPS: dict[str, list[tuple[float, str]]] = {
    "bytes": _BYTE_SLIPS,
    "bandwidth": _BYTE_SLIPS,
    "time": [
        (1e3, "check the unit prefix: ms vs s?"),
        (1e6, "check the unit prefix: µs vs s?"),
        (1e9, "check the unit prefix: ns vs s?"),
        (60.0, "seconds vs minutes?"),
        (3600.0, "seconds vs hours?"),
        (86400.0, "seconds vs days?"),
        (6e4, "ms vs minutes?"),
    ],
    "rate": [
        (60.0, "per second vs per minute?"),
        (3600.0, "per second vs per hour?"),
        (86400.0, "per second vs per day?"),
        (1e3, "check the unit prefix: per second vs per millisecond, or thousands?"),
        (1e6, _PREFIX),
    ],
    "money": [
        (1e3, "check the unit prefix: dollars vs thousands of dollars?"),
        (1e6, "per token vs per million tokens (or dollars vs millions)?"),
        (100.0, "dollars vs cents?"),
        (730.0, "per hour vs per month (730 hours)?"),
        (24.0, "per hour vs per day?"),
        (30.0, "per day vs per month?"),
    ],
    "money_rate": [
        (60.0, "per minute vs per hour?"),
        (3600.0, "per second vs per hour?"),
        (730.0, "per hour vs per month (730 hours)?"),
        (24.0, "per hour vs per day?"),
        (1e3, "check the unit prefix: dollars vs thousands of dollars?"),
    ],
    "count": [
        (100.0, "a fraction vs a percentage?"),
        (1e3, "thousands vs units?"),
        (1e6, "millions vs units?"),
    ],
    "flop": [(1e3, _PREFIX), (1e6, _PREFIX), (1e9, _PREFIX), (1e12, _PREFIX), (1e15, _PREFIX)],
    "flop_rate": [(1e3, _PREFIX), (1e6, _PREFIX), (1e9, _PREFIX), (1e12, _PREFIX), (1e15, _PREFIX)],
    "other": [
        (1e3, _PREFIX),
        (1e6, _PREFIX),
        (1e9, _PREFIX),
        (60.0, "seconds vs minutes?"),
        (3600.0, "seconds vs hours?"),
    ],
}
_KINDS = {
    (("[information]", 1),): "bytes",
    (("[information]", 1), ("[time]", -1)): "bandwidth",
    (("[time]", 1),): "time",
    (("[time]", -1),): "rate",
    (("[currency]", 1),): "money",
    (("[currency]", 1), ("[time]", -1)): "money_rate",
    (): "count",
    (("[compute]", 1),): "flop",
    (("[compute]", 1), ("[time]", -1)): "flop_rate",
}


def kind_of(quantity: pint.Quantity) -> str:
    """The kind of an answer, by its dimension: bytes, time, rate, money, count, FLOPs, ... (a key of
    :data:`SLIPS`; ``"other"`` for a dimension none of them has).

    Examples
    --------
    >>> from llmcourse.units import Q_
    >>> kind_of(Q_(320, "KiB")), kind_of(Q_(30, "ms")), kind_of(Q_(2, "USD/hour")), kind_of(Q_(3, ""))
    ('bytes', 'time', 'money_rate', 'count')
    """
    return _KINDS.get(tuple(sorted(dict(quantity.dimensionality).items())), "other")


#: Every kind's slips together: what :func:`slip_words` knows when no kind is given (the drills' list).
_ANY_PREFIX = "check the unit prefix (k, M, G) or ms vs s"
_GENERIC: list[tuple[float, str]] = [
    *_BYTE_SLIPS[:5],
    (1e3, _ANY_PREFIX),
    (1e6, _ANY_PREFIX),
    (1e9, _ANY_PREFIX),
    (1e12, _ANY_PREFIX),
    (1.024e3, "KiB vs kB, and a unit prefix?"),
    (60.0, "per second vs per minute (or s vs min)?"),
    (3600.0, "per second vs per hour (or s vs h)?"),
    (86400.0, "per second vs per day?"),
    (100.0, "a fraction vs a percentage?"),
]


def _slip(ratio: float, tolerance: float, slips: list[tuple[float, str]]) -> tuple[float, str]:
    for factor, words in slips:
        for f in (factor, 1 / factor):
            if abs(ratio / f - 1) <= tolerance:
                return factor, words
    return 1.0, ""


def slip_words(ratio: float, tolerance: float = 0.01, kind: str | None = None) -> str:
    """Words for the common slip behind an answer ``ratio`` times the right one, or ``""``.

    ``kind`` ("bytes", "time", "rate", "money", "count", ...) keeps to the slips of that kind of
    answer; without it every kind's are tried. Shared by the exercise checker and the interview drills.

    Examples
    --------
    >>> slip_words(8.0), slip_words(1 / 1.024), slip_words(3.0)
    ('bits vs bytes?', 'KiB vs kB?', '')
    >>> slip_words(8.0, kind="time"), slip_words(1e3, kind="time")
    ('', 'check the unit prefix: ms vs s?')
    """
    return _slip(ratio, tolerance, SLIPS.get(kind, _GENERIC) if kind else _GENERIC)[1]


def _factor_words(f: float) -> str:
    return f"{f:,.0f}" if f >= 10 and abs(f - round(f)) < 1e-9 * f else f"{f:.4g}"


def size_words(ratio: float) -> str:
    """Direction and a coarse size: "too large by 10% to 50%", "about 3x too small" (one significant
    digit at most, never the exact ratio).

    Examples
    --------
    >>> size_words(1.05), size_words(1.3), size_words(1 / 3.4), size_words(270)
    ('too large, but within 10%', 'too large by 10% to 50%', 'about 3x too small', 'about 300x too large')
    """
    way = "too large" if ratio > 1 else "too small"
    f = ratio if ratio > 1 else 1 / ratio
    if f < 1.1:
        return f"{way}, but within 10%"
    if f < 1.5:
        return f"{way} by 10% to 50%"
    if f >= 1e6:
        return f"{way} by more than a million times"
    scale = 10 ** math.floor(math.log10(f))
    about = round(f / scale) * scale
    return f"about {about:,.0f}x {way}"


def diagnose(ratio: float, kind: str, tolerance: float, specific: Iterable[tuple[float, str]] = ()) -> str:
    """Words for an answer ``ratio`` times the expected one: a known slip of this exercise (``specific``:
    (factor, words) pairs, each slip giving ``factor`` times the answer, in that direction only) or of the
    answer's ``kind`` (a key of :data:`SLIPS`), else the direction and a coarse size. ``tolerance`` (at
    least 0.2%) says how close the ratio must come to a slip's factor.

    Examples
    --------
    >>> diagnose(0.5, "bytes", 0.01, [(0.5, "did you count keys and values?")])
    'too small by a factor of 2 (did you count keys and values?)'
    >>> diagnose(60, "rate", 0.01), diagnose(-1, "time", 0.01)
    ('too large by a factor of 60 (per second vs per minute?)', 'the sign or the value is off: the answer is a positive quantity')
    """
    if ratio <= 0:
        return "the sign or the value is off: the answer is a positive quantity"
    specific = list(specific)
    tol = max(tolerance, 0.002)
    for factor, words in specific:  # a specific slip gives factor x the answer, in that direction only
        if factor > 0 and abs(factor - 1) >= 2 * tol and abs(ratio / factor - 1) <= tol:
            return f"{'too large' if factor > 1 else 'too small'} by a factor of {_factor_words(max(factor, 1 / factor))} ({words})"
    factor, words = _slip(ratio, tol, SLIPS[kind])
    if words:
        return f"{'too large' if ratio > 1 else 'too small'} by a factor of {_factor_words(factor)} ({words})"
    if abs(ratio - 2) <= tol or abs(ratio - 1 / 2) <= tol:
        return f"{'too large' if ratio > 1 else 'too small'} by a factor of 2"
    return size_words(ratio)
