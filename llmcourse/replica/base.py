"""What every part of the replica model shares: the catalog look-ups, the conversions of plain numbers between
the units (llmcourse.units parses them once), the positions and price checks, a figure given as the caller's own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pint

from llmcourse.assumptions import Assumptions
from llmcourse.catalog import GPU, Model, bytes_per_value, gpus, models
from llmcourse.errors import InputError
from llmcourse.units import BYTE, FLOP, GB, GFLOP, MS, TFLOP, S, as_quantity, plain_number, quantity, ureg

B = "B"  # bytes


def replaced(a: Assumptions, **changes: Any) -> Assumptions:
    """``a.replace(**changes)``, which returns ``a`` itself when every change is None (an override left out), without
    its checks of the field names in that case (the callers here pass their own, known, fields)."""
    for v in changes.values():
        if v is not None:
            return a.replace(**changes)
    return a


def once(make: Callable[[], Any]) -> Callable[[], Any]:
    """``functools.cache(make)`` for a function of no arguments (its value worked out at the first call, kept;
    an error not kept), without building functools' wrapper (a few microseconds each, three per replica).

    Examples
    --------
    >>> calls = []
    >>> get = once(lambda: calls.append(1) or len(calls))
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


def bytes_of(value: Any, name: str) -> pint.Quantity:
    """Bytes per value from a precision name, a plain number of bytes, or a byte quantity."""
    if isinstance(value, pint.Quantity):
        q = as_quantity(value, B, name)
        plain_number(q.to(B).magnitude, name)
        return q.to(B)
    try:
        return quantity(bytes_per_value(value), BYTE)
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None


# --- the internal path: plain floats in the symbols' units (B, FLOP, s), the formulas by value -----------
S_TO_MS = ureg._get_conversion_factor(S._units, MS._units)  # pint's factors, as its conversions use them


MS_TO_S = ureg._get_conversion_factor(MS._units, S._units)


BYTES_TO_GB = ureg._get_conversion_factor(
    BYTE._units, GB._units
)  # in_unit(x, BYTE, GB) is quantity(x * BYTES_TO_GB, GB)


FLOP_TO_GFLOP = ureg._get_conversion_factor(FLOP._units, GFLOP._units)


FLOP_TO_TFLOP = ureg._get_conversion_factor(FLOP._units, TFLOP._units)


def check_positions(m: Model, tokens: float, name: str) -> None:
    """Refuse a sequence longer than the model's positions (``max_position``): no deployment of the
    model holds it. The memory arithmetic (:func:`kv_bytes_per_sequence`, :func:`max_batch`) answers
    for any length, as the sources' what-if tables do; the estimates of a deployment check here.

    Examples
    --------
    >>> check_positions(model_of("Llama-3.1-8B"), 200_000, "prompt_tokens")
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: prompt_tokens (200,000 tokens) is beyond the 131,072 positions of Llama-3.1-8B (max_position): give at most 131,072 tokens, or a model with a longer context.
    """
    if m.max_position is not None and tokens > m.max_position:
        raise InputError(
            f"{name} ({tokens:,.0f} tokens) is beyond the {m.max_position:,} positions of {m.name} (max_position): "
            f"give at most {m.max_position:,} tokens, or a model with a longer context."
        )


#: The most a GPU-hour may be priced at (USD): a bound on what is typed, far above any rental or owned hour (a
#: fleet's bill at a float's largest price is infinite), not a modelling constant.
MOST_PRICE_PER_HOUR = 1e6


def price_of(gpu: GPU | str, price_per_hour: Any) -> pint.Quantity:
    """The price given (checked), else the catalog's price of ``gpu`` (a GPU or the name of one), as the caller's own.

    Examples
    --------
    >>> from llmcourse.units import Q_
    >>> price_of("H100 SXM", None), price_of("H100 SXM", Q_(3, "USD/hour"))
    (<Quantity(2.5, 'USD / hour')>, <Quantity(3, 'USD / hour')>)
    """
    if price_per_hour is None:
        known = gpu if isinstance(gpu, GPU) else gpus.get(gpu)
        if known is None or known.price_per_hour is None:
            name = gpu.name if isinstance(gpu, GPU) else gpu
            raise InputError(f"{name} has no price in the catalog: pass price_per_hour=Q_(2.5, 'USD/hour').")
        return own_quantity(known.price_per_hour)  # the caller's own: an in-place change must not reach the catalog
    q = as_quantity(price_per_hour, "USD/hour", "price_per_hour")
    plain_number(q.magnitude, "price_per_hour")
    plain_number(q.to("USD/hour").magnitude, "price_per_hour", at_most=MOST_PRICE_PER_HOUR, why=" USD per GPU-hour")
    return q


def own_quantity(q: pint.Quantity) -> pint.Quantity:
    """A new quantity equal to ``q``: a kept set-up's figure given to a caller as its own (pint's in-place
    operations, such as ``ito``, change a quantity, and must not change the next caller's).

    Examples
    --------
    >>> from llmcourse.units import Q_
    >>> q = Q_(2.0, "GB")
    >>> mine = own_quantity(q)
    >>> mine.ito("MB")
    >>> q, mine
    (<Quantity(2.0, 'gigabyte')>, <Quantity(2000.0, 'megabyte')>)
    """
    return quantity(q._magnitude, q._units)
