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

import hashlib
import math
import os
import shutil
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pint

__all__ = [
    "BYTE",
    "FLOP",
    "GB",
    "GFLOP",
    "GIB",
    "HOURS_PER_MONTH",
    "MS",
    "PER_S",
    "PFLOP_S",
    "Q_",
    "TFLOP",
    "USD",
    "USD_H",
    "Quantity",
    "S",
    "as_quantity",
    "flag",
    "fmt",
    "in_unit",
    "magnitude_in",
    "ms_text",
    "parsed_unit",
    "percentile_rank",
    "quantity",
    "seed_number",
    "to",
    "ureg",
]


def _definitions_file(text: str) -> Path | None:
    """The registry's definitions written once to a file in the user's cache folder, so that pint's own cache of
    parsed definitions (``cache_folder``, keyed by the file's content and pint's version) spares the parse, most
    of the registry's time; ``None`` where there is no lasting disk (Pyodide) or it cannot be written."""
    if sys.platform == "emscripten" or os.environ.get("LLMCOURSE_UNITS_CACHE", "1") == "0":
        return None
    try:
        import platformdirs  # pint's own dependency, for its cache folder

        digest = hashlib.sha256(f"{pint.__version__}\n{text}".encode()).hexdigest()[:20]
        path = platformdirs.user_cache_path("llmcourse", appauthor=False) / "pint" / f"units-{digest}.txt"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            try:
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, path)  # whole or not at all, whoever writes it at the same time
            finally:
                tmp.unlink(missing_ok=True)
        return path
    except Exception:  # a cache: without it the definitions are parsed as they stand
        return None


def _make_registry() -> pint.UnitRegistry:
    default = Path(pint.__file__).parent / "default_en.txt"
    text = default.read_text(encoding="utf-8")
    marker = "\nbit = []\n"
    if marker not in text:  # pragma: no cover - guards a pint upgrade
        raise RuntimeError("pint's definition of 'bit' changed; update llmcourse/units.py")
    text = text.replace(marker, "\nbit = [information]\n", 1)
    text = text.replace("@import constants_en.txt", (default.parent / "constants_en.txt").read_text(encoding="utf-8"))
    reg = None
    path = _definitions_file(text)
    if path is not None:
        try:
            reg = pint.UnitRegistry(filename=None, autoconvert_offset_to_baseunit=True, cache_folder=path.parent)
            reg.load_definitions(path)
        except Exception:  # a cache file another process is writing, a disk that is full, a broken pickle: parse,
            reg = None  # and drop the cache so that the next import writes it afresh (pint trusts any file it finds)
            shutil.rmtree(path.parent, ignore_errors=True)
    if reg is None:
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


#: The units the estimates convert to most, parsed once (:func:`parsed_unit`): ``to(q, MS)``, ``quantity(x, GB)``
#: and ``q.m_as(PER_S)`` skip pint's parse of a unit string.
MS, S, PER_S, BYTE, GB, GIB, FLOP, GFLOP, TFLOP, PFLOP_S, USD, USD_H = (
    parsed_unit(u)[0]
    for u in ("ms", "s", "1/s", "B", "GB", "GiB", "FLOP", "GFLOP", "TFLOP", "PFLOP/s", "USD", "USD/hour")
)


_new = object.__new__


def quantity(magnitude: float, units: Any) -> pint.Quantity:
    """``Q_(magnitude, units)`` for a plain number and a unit of :data:`ureg` (a ``pint.Unit``, or its
    ``UnitsContainer``), built without pint's checks of what it was given: the hot path of every formula.

    Examples
    --------
    >>> quantity(2.0, parsed_unit("GB")[0]) == Q_(2.0, "GB")
    True
    """
    q = _new(Q_)
    q._magnitude = magnitude
    q._units = units._units if isinstance(units, pint.Unit) else units
    return q


#: Conversion factors between two units of :data:`ureg` (as pint works them out), by unit pair.
_TO: dict[tuple[Any, Any], Any] = {}


def to(value: pint.Quantity, unit: Any) -> pint.Quantity:
    """``value.to(unit)`` with the factor between the two units kept once worked out; the same numbers as
    pint's (the magnitude times pint's own factor, or the magnitude itself in the same unit). ``unit``
    is a ``pint.Unit`` (:func:`parsed_unit`) or a unit string.

    Examples
    --------
    >>> to(Q_(1, "GiB"), parsed_unit("MiB")[0])
    <Quantity(1024.0, 'mebibyte')>
    """
    if type(value) is not Q_:  # another registry's quantity, or anything else with a ``to``
        return value.to(unit)
    if isinstance(unit, pint.Unit):
        dst = unit._units
    elif isinstance(unit, str):
        dst = parsed_unit(unit)[0]._units
    else:  # a quantity or a units container as the unit: pint's own path
        return value.to(unit)
    src = value._units
    if src is dst or src == dst:  # the same container (the common case) needs no comparison
        return quantity(value._magnitude, dst)
    if (src, dst) not in _TO and (ureg._validate_and_extract(src) or ureg._validate_and_extract(dst)):
        return value.to(unit)  # an offset unit (degC): pint's own path
    mag = value._magnitude
    if type(mag) is not float and type(mag) is not int:
        return value.to(unit)
    return quantity(mag * _factor(src, dst), dst)


def _factor(src: Any, dst: Any) -> Any:
    """pint's conversion factor from the units ``src`` to ``dst`` (containers of multiplicative units), kept
    once worked out; a :class:`pint.DimensionalityError` if they are of different kinds."""
    factor = _TO.get((src, dst))
    if factor is None:
        factor = ureg._get_conversion_factor(src, dst)
        if isinstance(factor, pint.DimensionalityError):
            raise factor
        _TO[(src, dst)] = factor
    return factor


def in_unit(x: float, src: pint.Unit, dst: pint.Unit) -> pint.Quantity:
    """``Q_(x, src).to(dst)`` for a plain number ``x`` and two multiplicative units of :data:`ureg`, with
    pint's own factor between them (kept once worked out).

    Examples
    --------
    >>> in_unit(0.0125, parsed_unit("s")[0], parsed_unit("ms")[0])
    <Quantity(12.5, 'millisecond')>
    """
    s, d = src._units, dst._units
    return quantity(x, d) if s == d else quantity(x * _factor(s, d), d)


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
    if isinstance(value, str | bytes):
        raise InputError(
            f"{name} is a quantity, not text: write Q_(80, {unit!r}) (or any unit of {_dim_words(dims)}, "
            f"such as {_examples(unit)}), not {_short(value)}."
        )
    if not isinstance(value, pint.Quantity):
        raise InputError(
            f"{name} needs a unit: write Q_({_short(value)}, {unit!r}) (or any unit of "
            f"{_dim_words(dims)}, such as {_examples(unit)}), not the bare number {_short(value)}."
        )
    if value._REGISTRY is not ureg:  # a quantity of another pint registry: read by its unit's name
        try:
            value = Q_(value.magnitude, str(value.units))
        except Exception:  # pint raises several kinds
            raise InputError(
                f"{name}: {_short(value)} comes from another pint registry and its unit is unknown here; "
                "build it with llmcourse's Q_ (from llmcourse import Q_)."
            ) from None
    if value.dimensionality != dims:
        raise InputError(
            f"{name} must be in units of {_dim_words(dims)} "
            f"(for example {_examples(unit)}); got {value:~P}, which is {_dim_words(value.dimensionality)}."
        )
    return value


def plain_number(
    value: object,
    name: str,
    *,
    integer: bool = False,
    allow_zero: bool = False,
    at_most: float | None = None,
    at_least: float | None = None,
    why: str = "",
) -> float:
    """``value`` as a float, or an :class:`~llmcourse.errors.InputError` that says what to change.

    The one check behind every count and fraction the package takes: refuses booleans (``numpy.bool_``
    too), quantities with a dimension, text (a number given as text, ``"2048"``, is refused with a
    message to pass the number), NaN and infinities, negatives (and zero unless ``allow_zero``),
    fractions where ``integer`` is asked, values below ``at_least`` and above ``at_most`` (``why``
    says why the bound is there).

    Examples
    --------
    >>> plain_number(3, "layers", integer=True)
    3.0
    >>> plain_number(0, "batch")
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: batch must be greater than zero; got 0.
    """
    t = type(value)
    if t is float or (t is int and -_BIG < value < _BIG):  # a plain number: the common case, checked at once
        x = float(value)
        if (
            (0 < x < math.inf if not allow_zero else 0 <= x < math.inf)
            and (not integer or x.is_integer())
            and (at_least is None or x >= at_least)
            and (at_most is None or x <= at_most)
        ):
            return x
    from llmcourse.errors import InputError

    if _is_bool(value):
        raise InputError(f"{name} is a number, not a flag; got {_short(value)}.")
    if isinstance(value, str | bytes):
        try:
            example = f"{float(value):g}"  # the number the text spells, to show how to pass it
        except (ValueError, OverflowError):
            example = "2048"
        raise InputError(f"{name} must be a number, not text: pass {name}={example}, not {name}={_short(value)}.")
    if isinstance(value, pint.Quantity):
        if not value.dimensionless:
            raise InputError(f"{name} is a plain number; got {_short(value)}.")
        value = value.to("").magnitude
    try:
        x = float(value)  # type: ignore[arg-type]
    except OverflowError:
        raise InputError(f"{name} must be a finite number; got one too large for a float.") from None
    except Exception:  # an object that cannot be read as a float, whatever it raises
        raise InputError(f"{name} must be a number, not {_short(value)}.") from None
    if not math.isfinite(x):
        raise InputError(f"{name} must be a finite number, not {_short(value)}.")
    if x < 0 or (x == 0 and not allow_zero):
        raise InputError(
            f"{name} must be {'zero or more' if allow_zero else 'greater than zero'}; got {_short(value)}."
        )
    if integer and x != int(x):
        raise InputError(f"{name} must be a whole number; got {_short(value)}.")
    if at_least is not None and x < at_least:
        raise InputError(f"{name} must be at least {at_least:g}{why}; got {_short(value)}.")
    if at_most is not None and x > at_most:
        raise InputError(f"{name} must be at most {at_most:g}{why}; got {_short(value)}.")
    return x


_BIG = 2**53  # ints whose float is exact


def _is_bool(value: object) -> bool:
    """``bool`` or numpy's ``bool_`` (recognised without importing numpy, which the live book lacks)."""
    t = type(value)
    return isinstance(value, bool) or (t.__module__ == "numpy" and t.__name__ in ("bool", "bool_"))


def _short(value: object) -> str:
    """``repr(value)`` cut to a readable length; an object whose ``repr`` fails is named by its type."""
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not hide the message
        return f"a {type(value).__name__}"
    return text if len(text) <= 60 else text[:57] + "..."


def flag(value: object, name: str) -> bool:
    """``value`` as a flag: ``True``/``False`` (``numpy.bool_`` too); anything else, a truthy string such
    as ``"False"`` or the number 1 included, is refused.

    Examples
    --------
    >>> flag(False, "attention_flops")
    False
    >>> flag("False", "attention_flops")
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: attention_flops is a flag: pass True or False, not 'False'.
    """
    from llmcourse.errors import InputError

    if not _is_bool(value):
        raise InputError(f"{name} is a flag: pass True or False, not {_short(value)}.")
    return bool(value)


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
    q = to(q, unit) if unit else q.to_compact()
    return f"{sig(q.magnitude, digits)} {_unit_text(q)}"


def ms_text(q: pint.Quantity) -> str:
    """A time in milliseconds to one decimal, as a plan prints it (``1e+308 ms``, not 309 digits); a time under
    0.05 ms to two significant digits (a 1 us target reads ``0.001 ms``, not ``0.0 ms``).

    Examples
    --------
    >>> ms_text(Q_(0.0123456, "s")), ms_text(Q_(1234.5, "ms")), ms_text(Q_(1e300, "s"))
    ('12.3 ms', '1,234.5 ms', '1e+303 ms')
    >>> ms_text(Q_(1, "us")), ms_text(Q_(0.04, "ms")), ms_text(Q_(0.05, "ms")), ms_text(Q_(0, "s"))
    ('0.001 ms', '0.04 ms', '0.1 ms', '0.0 ms')
    """
    x = to(q, "ms").m
    if 0 < abs(x) < 0.05:
        return f"{x:.2g} ms"
    return f"{x:,.1f} ms" if abs(x) < 1e9 else f"{x:.3g} ms"


#: The text of a unit as ``fmt`` writes it (``~P``), by this registry's unit: pint formats a unit anew each time.
_UNIT_TEXT: dict[Any, str] = {}


def _unit_text(q: pint.Quantity) -> str:
    if type(q) is not Q_:
        return f"{q.units:~P}"
    text = _UNIT_TEXT.get(q._units)
    if text is None:
        text = _UNIT_TEXT[q._units] = f"{q.units:~P}"
    return text


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


def percentile_rank(q: Any, name: str = "percentile") -> float:
    """``q`` checked as a percentile target: a number strictly between 0 and 100 (p50, p90, p95, p99, ...)."""
    from llmcourse.errors import InputError

    if isinstance(q, pint.Quantity):  # Q_(99, "percent") would read as 0.99: p0.99, the fastest request
        raise InputError(f"{name} is a plain number of percent: write 99 for p99, not {_short(q)}.")
    x = plain_number(q, name, allow_zero=True, at_most=100, why=" (a percentile: 50 for the median, 99 for p99)")
    if not 0 < x < 100:
        raise InputError(
            f"{name} must be strictly between 0 and 100 (50 for the median, 99 for p99); got {x:g}. "
            "0 and 100 are the fastest and the slowest request, which no sizing can promise."
        )
    return x
