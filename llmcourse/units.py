"""One unit registry for the whole course.

Every quantity in ``llmcourse`` is built from :data:`ureg`. The registry is pint's
default one with three changes that make the arithmetic of LLM serving checkable:

* ``bit`` and ``byte`` have their own dimension, ``[information]`` (pint's default
  treats them as dimensionless, so a byte count could be added to a plain number);
* ``FLOP`` is its own dimension, ``[compute]``, so bytes and FLOPs never mix;
* ``USD`` is its own dimension, ``[currency]``.

Token and request *counts* are plain numbers: a rate of tokens is a quantity in
``1/s``, and the display helpers add the word "tok/s" where it helps a reader.

Binary and decimal prefixes are both available and never confused:
``KiB`` is 1,024 bytes, ``kB`` is 1,000 bytes.

Defined in the chapter *Tokens* (``book/01_tokens.md``).

Examples
--------
>>> from llmcourse.units import Q_
>>> Q_(327_680, "B").to("KiB")
<Quantity(320.0, 'kibibyte')>
>>> Q_(72, "GB").to("GiB").m  # doctest: +ELLIPSIS
67.05...
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path
from typing import Any

import pint

__all__ = [
    "HOURS_PER_MONTH",
    "Q_",
    "Quantity",
    "as_quantity",
    "fmt",
    "magnitude_in",
    "parsed_unit",
    "seed_number",
    "ureg",
]


def _make_registry() -> pint.UnitRegistry:
    default = Path(pint.__file__).parent / "default_en.txt"
    text = default.read_text(encoding="utf-8")
    marker = "\nbit = []\n"
    if marker not in text:  # pragma: no cover - guards a pint upgrade
        raise RuntimeError("pint's definition of 'bit' changed; update llmcourse/units.py")
    text = text.replace(marker, "\nbit = [information]\n", 1)
    text = text.replace("@import constants_en.txt", (default.parent / "constants_en.txt").read_text(encoding="utf-8"))
    reg = pint.UnitRegistry(filename=None, autoconvert_offset_to_baseunit=True)
    reg.load_definitions(text.splitlines())
    reg.define("FLOP = [compute] = _ = flop = FLOPs")
    reg.define("USD = [currency] = _ = dollar = usd")
    reg.formatter.default_format = "~P"
    return reg


ureg: pint.UnitRegistry = _make_registry()
Q_ = ureg.Quantity
Quantity = ureg.Quantity
pint.set_application_registry(ureg)

#: Hours in a month of always-on service, as the seed texts count it (365 x 24 / 12 = 730).
HOURS_PER_MONTH = Q_(730, "hour")


@cache
def parsed_unit(unit: str) -> tuple[pint.Unit, Any]:
    """``unit`` parsed once: the registry's unit and its dimensionality (pint re-parses a string at
    every conversion, which was most of a calculator's update time)."""
    target = ureg.Unit(unit)
    return target, ureg.get_dimensionality(target)


def as_quantity(value: object, unit: str, name: str) -> pint.Quantity:
    """Return ``value`` as a quantity with the dimension of ``unit``, or explain what to change.

    A plain number is refused: the message shows how to attach the unit. A quantity of the
    wrong dimension is refused with both dimensions named.

    Examples
    --------
    >>> as_quantity(Q_(80, "GB"), "byte", "memory")
    <Quantity(80, 'gigabyte')>
    >>> as_quantity(80, "byte", "memory")
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: memory needs a unit: write Q_(80, 'byte') (or any unit of [information], such as GB or GiB), not the bare number 80.
    """
    from llmcourse.errors import InputError

    dims = parsed_unit(unit)[1]
    if not isinstance(value, pint.Quantity):
        if isinstance(value, str):
            try:
                value = Q_(value)
            except Exception as exc:  # pint raises several kinds
                raise InputError(f"{name}: could not read {value!r} as a quantity ({exc}).") from None
        else:
            raise InputError(
                f"{name} needs a unit: write Q_({value!r}, {unit!r}) (or any unit of "
                f"{_dim_words(dims)}, such as {_examples(unit)}), not the bare number {value!r}."
            )
    if value.dimensionality != dims:
        raise InputError(
            f"{name} must be in units of {_dim_words(dims)} "
            f"(for example {_examples(unit)}); got {value:~P}, which is {_dim_words(value.dimensionality)}."
        )
    return value


def plain_number(
    value: object, name: str, *, integer: bool = False, allow_zero: bool = False, at_most: float | None = None
) -> float:
    """``value`` as a float, or an :class:`~llmcourse.errors.InputError` that says what to change.

    The one check behind every count and fraction the package takes: refuses booleans, quantities
    with a dimension, text, NaN and infinities, negatives (and zero unless ``allow_zero``),
    fractions where ``integer`` is asked, and values above ``at_most``.

    Examples
    --------
    >>> plain_number(3, "layers", integer=True)
    3.0
    >>> plain_number(0, "batch")
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: batch must be greater than zero; got 0.
    """
    from llmcourse.errors import InputError

    if isinstance(value, bool) or (isinstance(value, pint.Quantity) and not value.dimensionless):
        raise InputError(f"{name} is a plain number; got {value!r}.")
    if isinstance(value, pint.Quantity):
        value = value.to("").magnitude
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, not {value!r}.") from None
    if not math.isfinite(x):
        raise InputError(f"{name} must be a finite number, not {value!r}.")
    if x < 0 or (x == 0 and not allow_zero):
        raise InputError(f"{name} must be {'zero or more' if allow_zero else 'greater than zero'}; got {value!r}.")
    if integer and x != int(x):
        raise InputError(f"{name} must be a whole number; got {value!r}.")
    if at_most is not None and x > at_most:
        raise InputError(f"{name} must be at most {at_most:g}; got {value!r}.")
    return x


def seed_number(seed: object) -> int:
    """``seed`` for a seeded simulation (``random.Random(seed)``): a whole number 0 or more, as an int.

    Examples
    --------
    >>> seed_number(7)
    7
    >>> seed_number(1.5)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: seed must be a whole number 0 or more; got 1.5.
    """
    from llmcourse.errors import InputError

    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"seed must be a whole number 0 or more; got {seed!r}.")
    return seed


def magnitude_in(value: pint.Quantity, unit: str) -> float:
    """The plain number of ``value`` expressed in ``unit``.

    Examples
    --------
    >>> magnitude_in(Q_(1, "GiB"), "MiB")
    1024.0
    """
    return float(value.to(unit).magnitude)


_EXAMPLES = {
    "[information]": "GB or GiB",
    "[information] / [time]": "TB/s or GB/s",
    "[compute] / [time]": "TFLOP/s",
    "[compute]": "FLOP or PFLOP",
    "[time]": "s or ms",
    "1 / [time]": "1/s or 1/day",
    "[currency] / [time]": "USD/hour",
    "[currency]": "USD",
}


def _dim_words(dims: object) -> str:
    text = str(dims)
    return "a plain number (dimensionless)" if text == "dimensionless" else text


def _examples(unit: str) -> str:
    return _EXAMPLES.get(str(ureg.get_dimensionality(unit)), unit)


def fmt(q: pint.Quantity, unit: str | None = None, digits: int = 3) -> str:
    """Format a quantity for prose: ``unit`` if given, else pint's compact choice.

    ``digits`` is the number of significant figures; thousands get separators.

    Examples
    --------
    >>> fmt(Q_(327_680, "B"), "KiB")
    '320 KiB'
    >>> fmt(Q_(0.7536, "GB"), "GB", digits=2)
    '0.75 GB'
    >>> fmt(Q_(4387.2, "1/s"), "1/s", digits=4)
    '4,387 1/s'
    """
    q = q.to(unit) if unit else q.to_compact()
    return f"{sig(q.magnitude, digits)} {q.units:~P}"


def sig(x: float, digits: int = 3) -> str:
    """Round ``x`` to ``digits`` significant figures and add thousands separators.

    Examples
    --------
    >>> sig(20031.4)
    '20,000'
    >>> sig(0.2941, 2)
    '0.29'
    """
    if x == 0 or not math.isfinite(x):
        return str(x)
    decimals = digits - 1 - math.floor(math.log10(abs(x)))
    rounded = round(x, decimals)
    if decimals <= 0:
        return f"{int(rounded):,}"
    return f"{rounded:,.{decimals}f}"
