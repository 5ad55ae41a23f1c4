"""The bill's catalog rows: what a GPU costs to buy (:class:`HardwarePrice`, ``hardware_prices.csv``) and the site's
and market's figures (:class:`Cost`, ``costs.csv``), each with its source and date."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pint

from llmcourse.errors import InputError
from llmcourse.units import Q_, as_quantity, plain_number

__all__ = ["COST_KINDS", "Cost", "HardwarePrice"]


def _positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    return plain_number(value, name, allow_zero=allow_zero)


@dataclass(frozen=True)
class HardwarePrice:
    """What one GPU of a kind costs to buy: the GPU itself and its share of the server around it (host CPUs,
    memory, NICs, chassis), both per GPU, with the source and the date of each figure
    (``llmcourse/data/hardware_prices.csv``; the whole-bill section of the fleet chapter).

    Examples
    --------
    >>> from llmcourse import hardware_prices
    >>> p = hardware_prices["H100"]
    >>> p.name, p.gpu_price, p.server_price
    ('H100 SXM', <Quantity(30000, 'USD')>, <Quantity(9625, 'USD')>)
    >>> HardwarePrice("mine", gpu_price=Q_(-1, "USD"), server_price=Q_(0, "USD"))
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: hardware price 'mine': gpu_price must be greater than zero; got -1.
    """

    name: str
    gpu_price: pint.Quantity
    server_price: pint.Quantity
    source: str = "user-defined"
    as_of: str = ""
    aliases: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        for attr in ("gpu_price", "server_price"):
            try:
                q = as_quantity(getattr(self, attr), "USD", attr)
                _positive(q.magnitude, attr, allow_zero=attr == "server_price")
            except InputError as exc:
                raise InputError(f"hardware price {self.name!r}: {exc}") from None
            object.__setattr__(self, attr, q)


#: The kinds of row of ``costs.csv`` and the unit of each kind's value.
COST_KINDS: dict[str, str] = {"electricity": "USD/kWh", "pue": "", "api": "USD", "rent": "USD/hour"}


@dataclass(frozen=True)
class Cost:
    """One sourced, dated figure of the bill (``llmcourse/data/costs.csv``): an electricity price
    (``kind="electricity"``, USD/kWh), a site's power usage effectiveness (``"pue"``, a plain number, at
    least 1), what renting one GPU costs an hour (``"rent"``, USD/hour, power included; ``model`` names the GPU) or
    an API's prices for a model (``"api"``): ``value``, USD per million output tokens, and
    ``input_value``, USD per million input (prompt) tokens (zero for a price that is all-in per output
    token; only api rows have one). ``default`` marks the row :func:`llmcourse.planner.bill.bill` uses when none
    is given.

    Examples
    --------
    >>> from llmcourse import costs
    >>> costs["US industrial average"].value
    <Quantity(0.0806, 'USD / kilowatt_hour')>
    >>> costs["industry average"].value, costs["DeepInfra 70B"].model
    (<Quantity(1.58, 'dimensionless')>, 'Llama-3.1-70B')
    >>> costs["DeepInfra 70B"].value, costs["DeepInfra 70B"].input_value
    (<Quantity(0.4, 'USD')>, <Quantity(0.13, 'USD')>)
    >>> Cost("site", kind="pue", value=0.9, source="mine")
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: cost 'site': a PUE (site power over IT power) is at least 1; got 0.9.
    """

    name: str
    kind: str
    value: Any
    source: str = "user-defined"
    as_of: str = ""
    model: str = ""
    default: bool = False
    input_value: Any = None
    aliases: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        where = f"cost {self.name!r}"
        if self.kind not in COST_KINDS:
            raise InputError(f"{where}: kind must be one of {', '.join(map(repr, COST_KINDS))}; got {self.kind!r}.")
        unit = COST_KINDS[self.kind]
        try:
            if unit:
                q = as_quantity(self.value, unit, "value")
                _positive(q.magnitude, "value")
            else:
                q = Q_(plain_number(self.value, "value"), "")
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        if self.kind == "pue" and q.m < 1:
            raise InputError(f"{where}: a PUE (site power over IT power) is at least 1; got {q.m:g}.")
        object.__setattr__(self, "value", q)
        if self.kind != "api":
            if self.input_value is not None:
                raise InputError(f"{where}: only an api row has an input_value (a price per million input tokens).")
            return
        try:  # an API's price per million input tokens: none given is an all-in price per output token
            inp = as_quantity(Q_(0, "USD") if self.input_value is None else self.input_value, "USD", "input_value")
            _positive(inp.magnitude, "input_value", allow_zero=True)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None
        object.__setattr__(self, "input_value", inp)
