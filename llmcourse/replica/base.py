"""What every part of the replica model shares: units parsed once, the catalog look-ups, plain-number
conversions, the positions and price checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pint

from llmcourse.assumptions import Assumptions
from llmcourse.catalog import GPU, Model, bytes_per_value, gpus, models
from llmcourse.errors import InputError
from llmcourse.units import (
    as_quantity,
    parsed_unit,
    plain_number,
    quantity,
    ureg,
)

B = "B"  # bytes


# units parsed once: pint parses a unit string at every conversion, which was most of a plan's time
_GB = parsed_unit("GB")[0]


_MS = parsed_unit("ms")[0]


_PER_S = parsed_unit("1/s")[0]


_PFLOP_S = parsed_unit("PFLOP/s")[0]


_USD = parsed_unit("USD")[0]


_S = parsed_unit("s")[0]


_TFLOP = parsed_unit("TFLOP")[0]


_USD_H = parsed_unit("USD/hour")[0]


_GFLOP = parsed_unit("GFLOP")[0]


_FLOP = parsed_unit("FLOP")[0]


_B = parsed_unit("B")[0]


_GIB = parsed_unit("GiB")[0]


def _replaced(a: Assumptions, **changes: Any) -> Assumptions:
    """``a.replace(**changes)``, which returns ``a`` itself when every change is None (an override left out), without
    its checks of the field names in that case (the callers here pass their own, known, fields)."""
    for v in changes.values():
        if v is not None:
            return a.replace(**changes)
    return a


def _once(make: Callable[[], Any]) -> Callable[[], Any]:
    """``functools.cache(make)`` for a function of no arguments (its value worked out at the first call, kept;
    an error not kept), without building functools' wrapper (a few microseconds each, three per replica).

    Examples
    --------
    >>> calls = []
    >>> get = _once(lambda: calls.append(1) or len(calls))
    >>> get(), get(), calls
    (1, 1, [1])
    """
    got: list[Any] = []

    def get() -> Any:
        if not got:
            got.append(make())
        return got[0]

    return get


# --- input checking -------------------------------------------------------------------------
def model_of(model: Model | str) -> Model:
    """A :class:`~llmcourse.catalog.Model` from itself or a catalog name ("did you mean" if unknown)."""
    if isinstance(model, Model):
        return model
    return models[model]


def gpu_of(gpu: GPU | str) -> GPU:
    """A :class:`~llmcourse.catalog.GPU` from itself or a catalog name ("did you mean" if unknown)."""
    if isinstance(gpu, GPU):
        return gpu
    return gpus[gpu]


_model, _gpu = model_of, gpu_of


def _bytes(value: Any, name: str) -> pint.Quantity:
    """Bytes per value from a precision name, a plain number of bytes, or a byte quantity."""
    if isinstance(value, pint.Quantity):
        q = as_quantity(value, B, name)
        _number(q.to(B).magnitude, name)
        return q.to(B)
    try:
        return quantity(bytes_per_value(value), _B)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None


_number = plain_number  # the one check of counts and fractions (llmcourse.units)


# --- the internal path: plain floats in the symbols' units (B, FLOP, s), the formulas by value -----------
_S_MS = ureg._get_conversion_factor(_S._units, _MS._units)  # pint's factors, as its conversions use them


_MS_S = ureg._get_conversion_factor(_MS._units, _S._units)


_B_GB = ureg._get_conversion_factor(_B._units, _GB._units)  # in_unit(x, _B, _GB) is quantity(x * _B_GB, _GB)


_FLOP_GFLOP = ureg._get_conversion_factor(_FLOP._units, _GFLOP._units)


_FLOP_TFLOP = ureg._get_conversion_factor(_FLOP._units, _TFLOP._units)


def _check_positions(m: Model, tokens: float, name: str) -> None:
    """Refuse a sequence longer than the model's positions (``max_position``): no deployment of the
    model holds it. The memory arithmetic (:func:`kv_bytes_per_sequence`, :func:`max_batch`) answers
    for any length, as the sources' what-if tables do; the estimates of a deployment check here."""
    if m.max_position is not None and tokens > m.max_position:
        raise InputError(
            f"{name} ({tokens:,.0f} tokens) is beyond the {m.max_position:,} positions of {m.name} (max_position): "
            f"give at most {m.max_position:,} tokens, or a model with a longer context."
        )


def _price(gpu: GPU | str, price_per_hour: Any) -> pint.Quantity:
    """The price given, else the catalog's price of ``gpu`` (a GPU or the name of one)."""
    if price_per_hour is None:
        known = gpu if isinstance(gpu, GPU) else gpus.get(gpu)
        if known is None or known.price_per_hour is None:
            name = gpu.name if isinstance(gpu, GPU) else gpu
            raise InputError(f"{name} has no price in the catalog: pass price_per_hour=Q_(2.5, 'USD/hour').")
        return _own(known.price_per_hour)  # the caller's own: an in-place change must not reach the catalog
    q = as_quantity(price_per_hour, "USD/hour", "price_per_hour")
    _number(q.magnitude, "price_per_hour")
    return q


def _own(q: pint.Quantity) -> pint.Quantity:
    """A new quantity equal to ``q``: a kept set-up's figure given to a caller as its own (pint's in-place
    operations, such as ``ito``, change a quantity, and must not change the next caller's)."""
    return quantity(q._magnitude, q._units)
