"""What a wrong answer gets: the slips of its kind, then its direction and rough size.

An answer's *kind* is the expected answer's dimension (:func:`kind_of`: bytes, bandwidth, time, rate,
money, a count, FLOPs, ...), and each kind invites its own slips (:data:`SLIPS`: KiB vs kB and bits vs
bytes for bytes, ms vs s for a time, per second vs per minute for a rate, per token vs per million for
money, a percentage for a count). :func:`diagnose` gives the direction and a coarse size of an answer
``ratio`` times the right one (:func:`size_words`, never the exact ratio, nor a slip's exact factor) and names
the slip it fits, if one does; :func:`diagnosis` adds the hint that follows that slip (which units to compare);
:func:`slip_words` is the slip alone, shared by the exercise checker and the interview drills.

A slip is named only when the ratio matches its factor within the exercise's tolerance and is nearer that
factor than the right answer. The binary vs decimal prefix slips (KiB vs kB, MiB vs MB, ..., factors within 10%
of 1), when the answer and the expected one are written in the same family of prefixes, are named only in the
direction that slip goes: an answer in KiB 2.4% above an expected one in KiB was divided by 1,000 where 1,024 was
due (KiB vs kB); 2.4% below it is a near miss. In GB, the slip gives a smaller number (divided by 2^30).

Examples
--------
>>> from llmcourse.units import Q_
>>> diagnose(1 / 1.024, kind_of(Q_(320, "KiB")), 0.01)
'too small, but within 10% (KiB vs kB?)'
>>> diagnose(0.975, "bytes", 0.01, given=Q_(312, "KiB"), expected=Q_(320, "KiB"))
'too small, but within 10%'
>>> diagnose(1.024, "bytes", 0.01, given=Q_(327.68, "KiB"), expected=Q_(320, "KiB"))
'too large, but within 10% (KiB vs kB?)'
>>> diagnose(3.2, "bytes", 0.01)
'about 3x too large'
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pint

__all__ = ["SLIPS", "diagnose", "diagnosis", "kind_of", "prefix_family", "size_words", "slip_hint", "slip_words"]

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


#: The binary vs decimal prefix slips (factors within 10% of 1): named only across families (see :func:`diagnose`).
_FAMILY_SLIPS = frozenset(words for _, words in _BYTE_SLIPS[:4])
_BINARY = ("kibi", "mebi", "gibi", "tebi", "pebi", "exbi")
_DECIMAL = ("kilo", "mega", "giga", "tera", "peta", "exa")


def _prefix_power(quantity: pint.Quantity | None) -> int | None:
    """The power of 1,000 (or 1,024) of a quantity's byte or bit prefix: 1 for kB or KiB, 2 for MB or MiB, ...;
    None without one."""
    try:
        names = [str(name) for name, _ in quantity.unit_items()]
    except Exception:
        return None
    for name in names:
        stem = name.removesuffix("byte") if name.endswith("byte") else name.removesuffix("bit")
        for family in (_BINARY, _DECIMAL):
            if stem in family:
                return family.index(stem) + 1
    return None


def prefix_family(quantity: pint.Quantity | None) -> str | None:
    """``"binary"`` when a quantity's byte or bit units all have binary prefixes (KiB, MiB, ...), ``"decimal"`` when
    they all have decimal ones (kB, MB, ...), None otherwise (plain bytes, a mix, no bytes at all).

    Examples
    --------
    >>> from llmcourse.units import Q_
    >>> prefix_family(Q_(1, "KiB")), prefix_family(Q_(1, "GB/s")), prefix_family(Q_(1, "B")), prefix_family(Q_(1, "s"))
    ('binary', 'decimal', None, None)
    """
    if quantity is None:
        return None
    try:
        names = [str(name) for name, _ in quantity.unit_items()]
    except Exception:
        return None
    found = set()
    for name in names:
        stem = name.removesuffix("byte") if name.endswith("byte") else name.removesuffix("bit")
        if stem == name:
            continue
        found.add("binary" if stem in _BINARY else "decimal" if stem in _DECIMAL else None)
    return found.pop() if len(found) == 1 else None


#: What to compare after each slip: the hint that follows it (units, or the step it names).
_HINTS: dict[str, str] = {
    "KiB vs kB?": "compare the units: 1 KiB = 1,024 bytes, 1 kB = 1,000 bytes; is your number in the unit you wrote?",
    "MiB vs MB?": "compare the units: 1 MiB = 1,024 x 1,024 = 1,048,576 bytes, 1 MB = 1,000,000 bytes.",
    "GiB vs GB?": "compare the units: 1 GiB = 1,024^3 = 1,073,741,824 bytes, 1 GB = 10^9 bytes.",
    "TiB vs TB?": "compare the units: 1 TiB = 1,024^4 bytes, 1 TB = 10^12 bytes.",
    "bits vs bytes?": "compare the units: 1 byte (B) = 8 bits (b); a precision in bits is a size in bytes / 8.",
    "bits vs bytes, and a unit prefix?": "compare the units: 1 byte (B) = 8 bits (b), and k = 1,000, M = 10^6, G = 10^9.",
    "KiB vs kB, and a unit prefix?": "compare the units: 1 KiB = 1,024 bytes, 1 MiB = 1,024 KiB, and k = 1,000.",
    _PREFIX: "compare the prefixes: k = 10^3, M = 10^6, G = 10^9, T = 10^12; is your number in the unit you wrote?",
    _ANY_PREFIX: "compare the prefixes: k = 10^3, M = 10^6, G = 10^9, and 1 s = 1,000 ms.",
    "check the unit prefix: ms vs s?": "compare the units: 1 s = 1,000 ms; is your number in the unit you wrote?",
    "check the unit prefix: µs vs s?": "compare the units: 1 s = 1,000,000 µs.",
    "check the unit prefix: ns vs s?": "compare the units: 1 s = 10^9 ns.",
    "seconds vs minutes?": "compare the units: 1 minute = 60 s.",
    "seconds vs hours?": "compare the units: 1 hour = 3,600 s.",
    "seconds vs days?": "compare the units: 1 day = 86,400 s.",
    "ms vs minutes?": "compare the units: 1 minute = 60,000 ms.",
    "per second vs per minute?": "compare the units: a rate per minute is 60 times the same rate per second.",
    "per second vs per hour?": "compare the units: a rate per hour is 3,600 times the same rate per second.",
    "per second vs per day?": "compare the units: a rate per day is 86,400 times the same rate per second.",
    "per minute vs per hour?": "compare the units: a rate per hour is 60 times the same rate per minute.",
    "per hour vs per month (730 hours)?": "compare the units: a month of serving is 730 hours.",
    "per hour vs per day?": "compare the units: a day is 24 hours.",
    "per day vs per month?": "compare the units: a month is about 30 days.",
    "dollars vs cents?": "compare the units: 1 dollar = 100 cents.",
    "a fraction vs a percentage?": "compare: a fraction of 0.25 is 25%; give the answer in the form the exercise asks.",
}


def slip_hint(words: str) -> str:
    """The hint that follows a slip named by ``words`` (from :data:`SLIPS` or an exercise's own): which units to
    compare, or for an exercise's own slip, the step to look at again.

    Examples
    --------
    >>> slip_hint("KiB vs kB?")
    'Your answer looks like a slip (KiB vs kB?): compare the units: 1 KiB = 1,024 bytes, 1 kB = 1,000 bytes; is your number in the unit you wrote?'
    """
    compare = _HINTS.get(words)
    if compare is None:
        compare = "look again at the step it names." if words.endswith("?") else "compare the units it names."
    return f"Your answer looks like a slip ({words}): {compare}"


def _fits(ratio: float, factor: float, tol: float) -> bool:
    """Whether ``ratio`` matches ``factor`` within ``tol`` and lies nearer that factor than the right answer (1)."""
    return abs(ratio / factor - 1) <= tol and abs(math.log(ratio / factor)) < abs(math.log(ratio)) / 2


def diagnosis(
    ratio: float,
    kind: str,
    tolerance: float,
    specific: Iterable[tuple[float, str]] = (),
    *,
    given: pint.Quantity | None = None,
    expected: pint.Quantity | None = None,
) -> tuple[str, str | None]:
    """Words for an answer ``ratio`` times the expected one, and the hint that follows a slip named (None if no
    slip is named). The words are the direction and a coarse size (:func:`size_words`, never the exact ratio nor
    a slip's exact factor), with the slip the ratio fits, if one does: a known slip of this exercise
    (``specific``: (factor, words) pairs, each slip giving ``factor`` times the answer, in that direction only),
    else one of the answer's ``kind`` (a key of :data:`SLIPS`). A slip fits when the ratio matches its factor
    within ``tolerance`` (at least 0.2%) and lies nearer that factor than 1; where ``given`` and ``expected`` are
    written in one family of prefixes (:func:`prefix_family`), a binary vs decimal prefix slip is named only in the
    direction the other family's arithmetic goes (a larger number in a binary unit, a smaller one in a decimal).

    Examples
    --------
    >>> diagnosis(8.0, "bytes", 0.01)
    ('about 8x too large (bits vs bytes?)', 'Your answer looks like a slip (bits vs bytes?): compare the units: 1 byte (B) = 8 bits (b); a precision in bits is a size in bytes / 8.')
    >>> diagnosis(1.3, "bytes", 0.01)
    ('too large by 10% to 50%', None)
    """
    if not ratio > 0 or not math.isfinite(ratio):
        return "the sign or the value is off: the answer is a positive quantity", None
    tol = max(tolerance, 0.002)
    size = size_words(ratio)
    for factor, words in specific:  # a specific slip gives factor x the answer, in that direction only
        if factor > 0 and abs(factor - 1) >= 2 * tol and _fits(ratio, factor, tol):
            return f"{size} ({words})", slip_hint(words)
    same_family = prefix_family(given) is not None and prefix_family(given) == prefix_family(expected)
    family = prefix_family(expected) if same_family else None
    power = _prefix_power(expected) if family is not None else None
    for factor, words in SLIPS[kind]:
        if family is not None and words in _FAMILY_SLIPS:
            # one family of prefixes: the slip is the other family's arithmetic under this family's unit, at this
            # unit's prefix (dividing by 1,000s for a binary unit gives a larger number, by 1,024s for a decimal
            # unit a smaller one)
            up = max(factor, 1 / factor)
            if power is None or round(math.log(up) / math.log(1.024)) != power:
                continue
            if _fits(ratio, up if family == "binary" else 1 / up, tol):
                return f"{size} ({words})", slip_hint(words)
            continue
        if any(_fits(ratio, f, tol) for f in (factor, 1 / factor)):
            return f"{size} ({words})", slip_hint(words)
    return size, None


def diagnose(
    ratio: float,
    kind: str,
    tolerance: float,
    specific: Iterable[tuple[float, str]] = (),
    *,
    given: pint.Quantity | None = None,
    expected: pint.Quantity | None = None,
) -> str:
    """The words of :func:`diagnosis`: the direction, a coarse size and the slip the ratio fits, if one does.

    Examples
    --------
    >>> diagnose(0.5, "bytes", 0.01, [(0.5, "did you count keys and values?")])
    'about 2x too small (did you count keys and values?)'
    >>> diagnose(60, "rate", 0.01), diagnose(-1, "time", 0.01)
    ('about 60x too large (per second vs per minute?)', 'the sign or the value is off: the answer is a positive quantity')
    """
    return diagnosis(ratio, kind, tolerance, specific, given=given, expected=expected)[0]
