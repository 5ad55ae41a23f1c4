"""pint's arithmetic on plain magnitudes: a product, quotient, sum, difference or comparison of quantities as
pint works it out (the magnitudes' own float operation, the units kept), without pint's ~20 us of checks per
operation, which were most of a calculator's update once the formulas ran on floats.

Only this registry's quantities with a plain float or int magnitude in multiplicative units (no degC, no
logarithmic units) take the fast path, and a sum, difference or comparison only in the same units; anything
else is pint's own operation. Standard library and the package's units only (it runs in the live book).

Examples
--------
>>> from llmcourse.units import Q_
>>> times(Q_(2.0, "ms"), 3), plus(Q_(1.5, "GB"), Q_(2.5, "GB")), ratio(Q_(1, "GB"), Q_(4, "GB"))
(<Quantity(6.0, 'millisecond')>, <Quantity(4.0, 'gigabyte')>, 0.25)
>>> plus(Q_(1, "s"), Q_(500, "ms"))  # other units: pint's own sum
<Quantity(1.5, 'second')>
"""

from __future__ import annotations

from typing import Any

from llmcourse.units import Q_, quantity, to

_MULTIPLICATIVE: dict[Any, bool] = {}


def _plain_q(q: Any) -> bool:
    """``q`` is this registry's quantity of a plain float or int in multiplicative units."""
    if type(q) is not Q_ or (type(q._magnitude) is not float and type(q._magnitude) is not int):
        return False
    ok = _MULTIPLICATIVE.get(q._units)
    if ok is None:
        ok = _MULTIPLICATIVE[q._units] = not q._get_non_multiplicative_units() and not q._is_logarithmic
    return ok


def _number(x: Any) -> bool:
    return type(x) is float or type(x) is int


def times(q: Any, x: Any) -> Any:
    """``q * x`` (or ``x * q``) for a quantity ``q`` and a plain number ``x``, as pint computes it."""
    if _number(x) and _plain_q(q):
        return quantity(q._magnitude * x, q._units)
    return q * x


def over(q: Any, x: Any) -> Any:
    """``q / x`` for a quantity ``q`` and a plain number ``x``, as pint computes it."""
    if _number(x) and x != 0 and _plain_q(q):
        return quantity(q._magnitude / x, q._units)
    return q / x


def _same(q: Any, r: Any) -> bool:
    return _plain_q(q) and _plain_q(r) and (q._units is r._units or q._units == r._units)


def plus(q: Any, r: Any) -> Any:
    """``q + r`` for two quantities, as pint computes it."""
    if _same(q, r):
        return quantity(q._magnitude + r._magnitude, q._units)
    return q + r


def minus(q: Any, r: Any) -> Any:
    """``q - r`` for two quantities, as pint computes it."""
    if _same(q, r):
        return quantity(q._magnitude - r._magnitude, q._units)
    return q - r


def greater(q: Any, r: Any) -> bool:
    """``q > r`` for two quantities, as pint compares them."""
    if _same(q, r):
        return q._magnitude > r._magnitude
    return bool(q > r)


def at_most(q: Any, r: Any) -> bool:
    """``q <= r`` for two quantities, as pint compares them."""
    if _same(q, r):
        return q._magnitude <= r._magnitude
    return bool(q <= r)


def ratio(q: Any, r: Any) -> float:
    """``float(to(q / r, "").m)``: the plain ratio of two quantities of one kind, as pint works it out."""
    if _same(q, r) and r._magnitude != 0:
        return float(q._magnitude / r._magnitude)
    return float(to(q / r, "").m)


def total(qs: Any) -> Any:
    """``sum(qs)`` of quantities, as pint adds them (from the int 0, left to right)."""
    qs = list(qs)
    if qs and all(_plain_q(q) for q in qs) and all(q._units == qs[0]._units for q in qs):
        m = 0
        for q in qs:
            m = m + q._magnitude
        return quantity(m, qs[0]._units)
    return sum(qs)
