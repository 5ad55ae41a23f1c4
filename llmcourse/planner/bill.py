"""The whole bill of a replica or a fleet: energy per token, tokens per megawatt, owning vs renting, and an API.

Chapter *What a fleet costs* (``book/09b_fleet_cost.md``). Every throughput comes from the
replica model (:func:`llmcourse.replica.replica`, and :func:`~llmcourse.planner.serving.fleet` for a fleet); the
power model's constants (a GPU's idle and full-load share of its rated power, the server's share, the years
hardware is written off over) are fields of :class:`~llmcourse.assumptions.Assumptions`; the site figures
(electricity price, PUE), the hardware prices and the API prices are sourced, dated rows of
``llmcourse/data/costs.csv`` and ``hardware_prices.csv``; every figure is computed by a formula of
:mod:`llmcourse.formulas.bill` or of the fleet chapter. Standard library only: it runs live in the book.

Examples
--------
>>> import llmcourse as lc
>>> rep = lc.replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=2, batch=64, prompt_tokens=2_000,
...                  answer_tokens=400, weight_bytes="fp8")
>>> b = bill(rep, utilisation=0.3)
>>> round(b.gpu_draw.to("W").m), round(b.site_power.to("W").m, 1)  # 700 x (0.15 + 0.85 x 0.3); + 350, x 1.58
(284, 1000.9)
>>> b.api_name, b.cheaper
('DeepInfra Llama-3.1-70B', 'the API')
>>> bill(rep, utilisation=1.5)
Traceback (most recent call last):
...
llmcourse.errors.InputError: utilisation must be at most 1 (the share of the time the GPUs serve at full load: 0.3 is 30%); got 1.5.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pint

from llmcourse.arith import over, times
from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import Cost, costs, gpus, hardware_prices
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import SYMBOLS, check_value, checked
from llmcourse.planner.serving import Fleet
from llmcourse.replica.model import Replica, cost_per_million
from llmcourse.units import HOURS_PER_MONTH, Q_, as_quantity, parsed_unit, plain_number, to

__all__ = ["Bill", "Site", "bill", "default_cost"]

_W, _KWH, _USD, _USD_H, _PER_S, _PER_J, _MWH, _USD_KWH, _MW_UNIT, _ONE = (
    parsed_unit(u)[0] for u in ("W", "kWh", "USD", "USD/hour", "1/s", "1/J", "MWh", "USD/kWh", "MW", "")
)  # parsed once: a calculator recomputes the bill at every change
_MW = Q_(1, "MW")
_ONE_MWH = Q_(1, "MWh")
_NO_USD = Q_(0, "USD")
_MILLION = 1e6
_WHY_U = " (the share of the time the GPUs serve at full load: 0.3 is 30%)"
#: The units a reader gives the bill's prices in, for the messages that ask for a unit (the symbols' own units
#: are SI: USD/J for electricity_price, USD/s for price_per_hour).
_GIVEN_UNITS = {"electricity_price": "USD/kWh", "price_per_hour": "USD/hour"}


def _in_given_units(fn: Callable[..., Bill]) -> Callable[..., Bill]:
    """Check the prices of ``_GIVEN_UNITS`` that ``fn`` takes before :func:`~llmcourse.formulas.checked` does, so
    that a bare number is answered with the unit a price list gives (write Q_(2.5, 'USD/hour')), not the SI one
    (:class:`Site` does the same for its electricity price)."""
    given = {name: unit for name, unit in _GIVEN_UNITS.items() if name in inspect.signature(fn).parameters}

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Bill:
        for name, unit in given.items():
            if kwargs.get(name) is not None:
                as_quantity(kwargs[name], unit, name)  # the dimension, with the reader's unit in the message
        return fn(*args, **kwargs)

    return wrapper


def default_cost(kind: str) -> Any:
    """The row of ``costs.csv`` marked as the default of ``kind`` (``"electricity"`` or ``"pue"``).

    Examples
    --------
    >>> default_cost("electricity").name, default_cost("pue").value.m
    ('US industrial average', 1.58)
    """
    got = _DEFAULT_ROWS.get(kind)
    if got is not None:
        return got
    found = [c for c in costs.values() if c.kind == kind and c.default]
    if len(found) != 1:
        raise InputError(f"no default {kind!r} row in costs.csv: kinds with a default are 'electricity' and 'pue'.")
    _DEFAULT_ROWS[kind] = found[0]
    return found[0]


#: The default row of each kind, found once: the catalog is read-only (a look-up by name normalises the name,
#: so reading every row of costs.csv at each bill was a tenth of a bill's time).
_DEFAULT_ROWS: dict[str, Cost] = {}


def _api_per_output_token(output: pint.Quantity, input_: pint.Quantity, rep: Replica) -> pint.Quantity:
    """An API's price per output token (USD) from its prices per million output and input tokens, at the
    replica's prompt and answer lengths (formula ``api_price_per_output_token``)."""
    return to(
        F["api_price_per_output_token"](
            api_output_price=over(output, _MILLION),
            api_input_price=over(input_, _MILLION),
            prompt_tokens=rep.prompt_tokens,
            answer_tokens=rep.answer_tokens,
        ),
        _USD,
    )


def _api_rows(rep: Replica) -> list[Any]:
    """The api rows of ``costs.csv`` for the replica's model, the cheapest per output token (input included) first."""
    found = (c for c in costs.values() if c.kind == "api" and c.model == rep.model)
    return sorted(found, key=lambda c: _api_per_output_token(c.value, c.input_value, rep).m)


@dataclass(frozen=True)
class Bill:
    """What a replica (or a fleet of them) costs in energy and money at an average utilisation.

    Per GPU: ``gpu_draw`` (its average draw), ``site_power`` (with its server share, times PUE). Per output
    token: ``energy_per_million`` (site energy per million tokens), ``token_efficiency`` (tokens per joule, so
    tokens per second per watt). Money per GPU-hour: ``rent_price_per_hour`` (the rental rate, power
    included), ``capital_per_hour`` + ``electricity_per_hour`` = ``own_price_per_hour``; per million output
    tokens at the utilisation: ``rent_cost_per_million``, ``own_cost_per_million`` (of which
    ``electricity_cost_per_million``). ``break_even_owned`` / ``break_even_rented``: the utilisation at which
    owning / renting costs what the API charges (``None``: no utilisation up to 100% does). The API's price,
    ``api_price_per_million``, is per million output tokens with the input tokens included (formula
    ``api_price_per_output_token``: its list prices ``api_output_price_per_million`` and
    ``api_input_price_per_million`` at the replica's prompt and answer lengths). A figure that needs a price the
    catalog lacks is ``None``.
    """

    model: str
    gpu: str
    n_gpus: int
    replicas: int
    gpus: int
    utilisation: float
    own: bool
    throughput: pint.Quantity
    tokens_per_s: pint.Quantity
    gpu_power: pint.Quantity
    gpu_draw: pint.Quantity
    site_power: pint.Quantity
    site_power_full: pint.Quantity
    energy_per_million: pint.Quantity
    token_efficiency: pint.Quantity
    gpus_per_megawatt: int
    years: float
    electricity_price: pint.Quantity
    electricity_name: str
    pue: float
    pue_name: str
    monthly_energy: pint.Quantity
    rent_price_per_hour: pint.Quantity | None = None
    rent_cost_per_million: pint.Quantity | None = None
    gpu_price: pint.Quantity | None = None
    server_price: pint.Quantity | None = None
    capital_per_hour: pint.Quantity | None = None
    electricity_per_hour: pint.Quantity | None = None
    own_price_per_hour: pint.Quantity | None = None
    own_cost_per_million: pint.Quantity | None = None
    electricity_cost_per_million: pint.Quantity | None = None
    monthly_rent: pint.Quantity | None = None
    monthly_own: pint.Quantity | None = None
    api_price_per_million: pint.Quantity | None = None
    api_output_price_per_million: pint.Quantity | None = None
    api_input_price_per_million: pint.Quantity | None = None
    api_name: str = ""
    break_even_rented: float | None = None
    break_even_owned: float | None = None
    assumptions: Assumptions = field(default=None, repr=False)  # type: ignore[assignment]

    @property
    def cost_per_million(self) -> pint.Quantity | None:
        """Dollars per million output tokens at the utilisation, owning (``own=True``) or renting."""
        return self.own_cost_per_million if self.own else self.rent_cost_per_million

    @property
    def break_even(self) -> float | None:
        """The utilisation at which the chosen way (owning or renting) costs what the API charges."""
        return self.break_even_owned if self.own else self.break_even_rented

    @property
    def cheaper(self) -> str | None:
        """``"owning"`` / ``"renting"`` or ``"the API"``: which costs less per token at the utilisation."""
        if self.api_price_per_million is None or self.cost_per_million is None:
            return None
        if self.cost_per_million < self.api_price_per_million:
            return "owning" if self.own else "renting"
        return "the API"

    @property
    def tokens_per_s_per_megawatt(self) -> pint.Quantity:
        """Output tokens per second for each megawatt the site draws at the utilisation."""
        return to(self.token_efficiency * _MW, _PER_S)

    @property
    def tokens_per_megawatt_hour(self) -> float:
        """Output tokens per megawatt-hour of site energy."""
        return float(to(self.token_efficiency * _ONE_MWH, _ONE).m)

    def rows(self) -> list[tuple[str, str]]:
        """(label, text) rows for the calculator."""
        u = f"{self.utilisation:.0%}"

        def usd(q: pint.Quantity | None, digits: int = 2, unit: Any = _USD) -> str:
            return "no price (pass one)" if q is None else f"${q.to(unit).m:,.{digits}f}"

        def share(x: float | None) -> str:
            return "never (up to 100%)" if x is None else f"{x:.0%}"

        a = self.assumptions
        rows = [
            (
                f"GPU draw at {u} busy (idle {a.gpu_idle_power_fraction:.0%}, full load "
                f"{a.gpu_load_power_fraction:.0%} of {to(self.gpu_power, _W).m:,.0f} W)",
                f"{to(self.gpu_draw, _W).m:,.0f} W",
            ),
            (
                f"site power per GPU (server {a.host_power_fraction:.0%} of rated, PUE {self.pue:g}: {self.pue_name})",
                f"{to(self.site_power, _W).m:,.0f} W",
            ),
            ("energy per million output tokens", f"{to(self.energy_per_million, _KWH).m:,.2f} kWh"),
            (
                "output tokens per second per MW of site power (per MWh)",
                f"{self.tokens_per_s_per_megawatt.m:,.0f} ({self.tokens_per_megawatt_hour:,.3g})",
            ),
            ("GPUs a 1 MW site feeds at full load", f"{self.gpus_per_megawatt:,}"),
            (
                "renting: $ per GPU-hour; $ per million output tokens",
                f"{usd(self.rent_price_per_hour, 2, _USD_H)}; {usd(self.rent_cost_per_million)}",
            ),
            (
                f"owning over {self.years:g} years: hardware + electricity per GPU-hour "
                f"(at ${to(self.electricity_price, _USD_KWH).m:.3f}/kWh)",
                "no hardware price (pass gpu_price=)"
                if self.own_price_per_hour is None
                else f"{usd(self.capital_per_hour, 3, _USD_H)} + {usd(self.electricity_per_hour, 3, _USD_H)} = "
                f"{usd(self.own_price_per_hour, 3, _USD_H)}",
            ),
            (
                "owning: $ per million output tokens (of which electricity)",
                f"{usd(self.own_cost_per_million)} ({usd(self.electricity_cost_per_million)})",
            ),
        ]
        if self.api_price_per_million is None:
            rows.append(("API $ per million output tokens", "none in costs.csv for this model: pass one"))
        else:
            rows += [
                (
                    f"API $ per million output tokens, input included ({self.api_name}: "
                    f"{usd(self.api_output_price_per_million, 3)} out, {usd(self.api_input_price_per_million, 3)} in)",
                    usd(self.api_price_per_million),
                ),
                (
                    "break-even utilisation against the API: owning / renting",
                    f"{share(self.break_even_owned)} / {share(self.break_even_rented)}",
                ),
                (f"cheaper at {u}", self.cheaper or "-"),
            ]
        if self.replicas > 1:
            rows += [
                (
                    f"fleet: {self.replicas:,} replicas, {self.gpus:,} GPUs; site power; energy a month",
                    f"{to(self.gpus * self.site_power, _MW_UNIT).m:,.2f} MW; {to(self.monthly_energy, _MWH).m:,.0f} MWh",
                ),
                ("fleet a month: owning / renting", f"{usd(self.monthly_own, 0)} / {usd(self.monthly_rent, 0)}"),
            ]
        return rows


@dataclass(frozen=True)
class Site:
    """Where the GPUs run: the price of electricity (USD/kWh) and the power usage effectiveness (PUE: the site's
    power over the IT equipment's, at least 1). ``None`` is the row of ``costs.csv`` marked as the default.

    Examples
    --------
    >>> Site(electricity_price=Q_(0.12, "USD/kWh"), pue=1.3).pue
    1.3
    >>> Site(electricity_price=0.08)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: electricity_price needs a unit: write Q_(0.08, 'USD/kWh') (or any unit of [currency] * [time] ** 2 / [mass] / [length] ** 2, such as USD/kWh), not the bare number 0.08.
    """

    electricity_price: Any = None
    pue: float | None = None

    def __post_init__(self) -> None:
        if self.electricity_price is not None:
            as_quantity(self.electricity_price, _GIVEN_UNITS["electricity_price"], "electricity_price")
            price = check_value(self.electricity_price, SYMBOLS["electricity_price"], "electricity_price")
            object.__setattr__(self, "electricity_price", price)
        if self.pue is not None:
            object.__setattr__(self, "pue", check_value(self.pue, SYMBOLS["pue"], "pue"))


_DEFAULT_SITE = Site()


def _usd_or_none(value: Any, name: str, allow_zero: bool = False) -> pint.Quantity | None:
    if value is None:
        return None
    q = as_quantity(value, "USD", name)
    plain_number(q.magnitude, name, allow_zero=allow_zero)
    return q


def _share_of_the_time(value: Any) -> float:
    return plain_number(value, "utilisation", at_most=1, why=_WHY_U)


@_in_given_units
@checked
def bill(
    rep: Replica,
    *,
    utilisation: float,
    fleet: Fleet | None = None,
    own: bool = True,
    years: float | None = None,
    site: Site | None = None,
    gpu_price: Any = None,
    server_price: Any = None,
    price_per_hour: Any = None,
    api: Cost | str | None = None,
    gpu_power: Any = None,
    assumptions: Assumptions | str | None = None,
) -> Bill:
    """The whole bill of ``rep`` (or of ``fleet``, a fleet of such replicas) busy ``utilisation`` of the time.

    ``years`` (of depreciation), and the power model (idle and full-load shares of the GPU's rated power, the
    server's share) come from ``assumptions`` (by default the replica's own); the ``site``'s electricity price and
    PUE default to the rows of ``costs.csv`` marked as defaults (:class:`Site`); ``gpu_price`` and ``server_price``
    (per GPU, USD) to ``hardware_prices.csv``; ``price_per_hour`` (renting) to the replica's price; ``gpu_power``
    (W) to the catalog's rated power. The API is ``api``: a row of ``costs.csv`` (or its name), or one written the
    same way (``Cost("my API", kind="api", value=Q_(0.4, "USD"), input_value=Q_(0.13, "USD"))``: USD per million
    output and input tokens, the input 0 if not given, the output price then all-in); by default the API row of
    ``costs.csv`` for the model that is cheapest per output token at the replica's lengths, if any. The comparison
    puts the API's input tokens on its output tokens (formula ``api_price_per_output_token``). ``own`` picks what
    :attr:`Bill.cost_per_million` and :attr:`Bill.cheaper` compare with the API: owning (True) or renting.

    Examples
    --------
    >>> import llmcourse as lc
    >>> rep = lc.replica("Llama-3.1-8B", "H100 SXM", batch=64, prompt_tokens=1_000, answer_tokens=300)
    >>> b = bill(rep, utilisation=1, own=False)
    >>> round(b.site_power.to("W").m)  # (700 + 0.5 x 700) x 1.58
    1659
    >>> bill(rep, utilisation=1, own=False, site=Site(pue=1.1)).site_power.to("W").m  # (700 + 350) x 1.1
    1155.0
    >>> bill(rep, utilisation=0.5, years=0)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: years must be greater than zero; got 0.
    """
    if not isinstance(rep, Replica):
        raise InputError("rep must be a Replica: build one with llmcourse.replica(...).")
    if not rep.fits:
        raise InputError(f"cannot bill a replica that does not fit: {rep.reason}")
    u = _share_of_the_time(utilisation)
    a = rep.assumptions if assumptions is None else resolve(assumptions)
    n_years = a.depreciation_years if years is None else plain_number(years, "years")
    b = _Billing(rep, u, a, fleet, _site_of(site), _rated_power(rep, gpu_power))
    rent = b.renting(price_per_hour, own)
    hardware = b.owning(gpu_price, server_price, n_years, own)
    b.against_the_api(_api_prices(rep, api), rent, hardware)
    return b.bill(own, n_years)


def _site_of(site: Any) -> tuple[pint.Quantity, str, float, str]:
    """The site's electricity price and its name, its PUE and its name (the default rows' names, else "given")."""
    if site is None:
        site = _DEFAULT_SITE
    elif not isinstance(site, Site):
        raise InputError(
            f"site must be a Site(electricity_price=Q_(0.08, 'USD/kWh'), pue=1.3), or None for the default rows of "
            f"costs.csv; got {type(site).__name__}."
        )
    elec, centre = default_cost("electricity"), default_cost("pue")
    price = elec.value if site.electricity_price is None else site.electricity_price
    pue = float(centre.value.m) if site.pue is None else site.pue
    elec_name = elec.name if site.electricity_price is None or price == elec.value else "given"
    pue_name = centre.name if site.pue is None or pue == centre.value.m else "given"
    return price, elec_name, pue, pue_name


def _rated_power(rep: Replica, gpu_power: Any) -> pint.Quantity:
    """The GPU's rated power: ``gpu_power`` if given, else the catalog's."""
    if gpu_power is None:
        try:
            gpu_power = gpus[rep.gpu].power
        except UnknownNameError:
            gpu_power = None
        if gpu_power is None:
            raise InputError(f"{rep.gpu} has no rated power in the catalog: pass gpu_power=Q_(700, 'W').")
    tdp = as_quantity(gpu_power, "W", "gpu_power")
    plain_number(tdp.magnitude, "gpu_power")
    return tdp


def _api_prices(rep: Replica, api: Any) -> tuple[Any, Any, str]:
    """The API's prices per million output and input tokens and its name: the row ``api`` names (or is), else the
    cheapest API row of ``costs.csv`` for the replica's model at its lengths, else none (None, None, "")."""
    if api is None:
        found = _api_rows(rep)
        return (found[0].value, found[0].input_value, found[0].name) if found else (None, None, "")
    row = costs[api]  # a Cost is itself: the catalog's rows and a reader's own alike
    if row.kind != "api":
        raise InputError(
            f"api={row.name!r} is a {row.kind} row of costs.csv: name an api row, such as 'DeepInfra 70B'."
        )
    return row.value, row.input_value, row.name


class _Billing:
    """One bill as it is priced, step by step: the replica's power and energy at the utilisation, then renting,
    owning and the API, each adding its figures (``self.out``) to the :class:`Bill`."""

    def __init__(
        self,
        rep: Replica,
        u: float,
        a: Assumptions,
        fleet: Any,
        site: tuple[pint.Quantity, str, float, str],
        tdp: pint.Quantity,
    ) -> None:
        self.rep, self.u, self.a, self.x, self.n = rep, u, a, rep.throughput, rep.n_gpus
        self.replicas, self.total = _fleet_size(rep, fleet)
        self.price_e, self.elec_name, self.pue, self.pue_name = site
        self.tdp = tdp
        self.power = dict(
            gpu_power=tdp,
            gpu_idle_power_fraction=a.gpu_idle_power_fraction,
            gpu_load_power_fraction=a.gpu_load_power_fraction,
        )
        self.draw = to(F["gpu_power_draw"](utilisation=u, **self.power), _W)
        self.site_w = to(self._site_at(self.draw), _W)
        self.site_full = to(self._site_at(F["gpu_power_draw"](utilisation=1, **self.power)), _W)
        self.out: dict[str, Any] = {}

    def _site_at(self, p_gpu: pint.Quantity) -> pint.Quantity:
        return F["site_power"](
            gpu_draw=p_gpu, gpu_power=self.tdp, host_power_fraction=self.a.host_power_fraction, pue=self.pue
        )

    def per_million(self, price: pint.Quantity) -> pint.Quantity:
        """Dollars per million output tokens at the utilisation, at ``price`` per GPU-hour."""
        full = cost_per_million(price, self.x, self.n)
        return to(F["cost_at_utilisation"](cost_full=full, utilisation=self.u), _USD)

    def monthly(self, price: pint.Quantity) -> pint.Quantity:
        """Dollars a month for every GPU of the fleet at ``price`` per GPU-hour."""
        return to(F["fleet_cost"](gpus=self.total, price=price, hours=HOURS_PER_MONTH), _USD)

    def renting(self, price_per_hour: Any, own: bool) -> pint.Quantity | None:
        """The rental rate (``price_per_hour``, else the replica's), its cost per million tokens and a month."""
        rent = self.rep.price_per_hour if price_per_hour is None else price_per_hour
        if rent is not None:
            rent = to(rent, _USD_H)
            self.out.update(
                rent_price_per_hour=rent, rent_cost_per_million=self.per_million(rent), monthly_rent=self.monthly(rent)
            )
        elif not own:
            raise InputError(
                f"{self.rep.gpu} has no rental price in the catalog: pass price_per_hour=Q_(2.5, 'USD/hour')."
            )
        return rent

    def owning(self, gpu_price: Any, server_price: Any, n_years: float, own: bool) -> dict[str, Any] | None:
        """The hardware (``gpu_price`` and ``server_price``, else ``hardware_prices.csv``'s) written off over
        ``n_years`` plus the electricity: per hour, per million tokens and a month. None without a GPU price."""
        hw = hardware_prices.get(self.rep.gpu)
        c_gpu = gpu_price if gpu_price is not None else (hw.gpu_price if hw is not None else None)
        c_srv = server_price if server_price is not None else (hw.server_price if hw is not None else None)
        if c_gpu is None and own:
            raise InputError(
                f"{self.rep.gpu} has no purchase price in hardware_prices.csv: pass gpu_price=Q_(30_000, 'USD') "
                "(and server_price=), or own=False to rent."
            )
        if c_gpu is None:
            return None
        # n_years * 12 * HOURS_PER_MONTH: a year of 12 always-on months (8,760 hours), as the fleet chapter bills
        life = times(HOURS_PER_MONTH, n_years * 12)
        hardware = dict(gpu_price=c_gpu, server_price=c_srv if c_srv is not None else _NO_USD, service_life=life)
        site = dict(electricity_price=self.price_e, site_power=self.site_w)
        capital = to(F["capital_rate"](**hardware), _USD_H)
        electricity = to(F["electricity_rate"](**site), _USD_H)
        owning = to(F["owning_price"](**site, **hardware), _USD_H)
        self.out.update(
            gpu_price=hardware["gpu_price"],
            server_price=hardware["server_price"],
            capital_per_hour=capital,
            electricity_per_hour=electricity,
            own_price_per_hour=owning,
            own_cost_per_million=self.per_million(owning),
            electricity_cost_per_million=self.per_million(electricity),
            monthly_own=self.monthly(owning),
        )
        return hardware

    def against_the_api(
        self, prices: tuple[Any, Any, str], rent: pint.Quantity | None, hardware: dict[str, Any] | None
    ) -> None:
        """The API's price per million output tokens, its input included, and the utilisations at which renting
        and owning cost what it charges (None: none up to 100%)."""
        p_out = _usd_or_none(prices[0], "api_price_per_million")
        if p_out is None:
            return
        p_in = _usd_or_none(prices[1], "api_input_price_per_million", allow_zero=True)
        p_in = _NO_USD if p_in is None else to(p_in, _USD)
        per_token = _api_per_output_token(p_out, p_in, self.rep)
        self.out.update(
            api_price_per_million=to(times(per_token, _MILLION), _USD),
            api_output_price_per_million=to(p_out, _USD),
            api_input_price_per_million=p_in,
            api_name=prices[2],
        )
        if rent is not None:
            self.out["break_even_rented"] = self._break_even(per_token, "break_even_utilisation_rented", price=rent)
        if hardware is not None:
            self.out["break_even_owned"] = self._break_even(
                per_token,
                "break_even_utilisation_owned",
                electricity_price=self.price_e,
                pue=self.pue,
                host_power_fraction=self.a.host_power_fraction,
                **self.power,
                **hardware,
            )

    def _break_even(self, per_token: pint.Quantity, name: str, **values: Any) -> float | None:
        try:
            share = float(F[name](throughput=self.x, n_gpus=self.n, api_price=per_token, **values).m)
        except InputError:  # no finite break-even: the API is cheaper than the electricity alone
            return None
        return share if 0 < share <= 1 else None

    def bill(self, own: bool, n_years: float) -> Bill:
        x, n, u, site_w = self.x, self.n, self.u, self.site_w
        per_tok = F["energy_per_token"](n_gpus=n, site_power=site_w, throughput=x, utilisation=u)
        eff = F["token_efficiency"](n_gpus=n, site_power=site_w, throughput=x, utilisation=u)
        return Bill(
            model=self.rep.model,
            gpu=self.rep.gpu,
            n_gpus=n,
            replicas=self.replicas,
            gpus=self.total,
            utilisation=u,
            own=own,
            throughput=x,
            tokens_per_s=to(times(times(x, u), self.replicas), _PER_S),
            gpu_power=self.tdp,
            gpu_draw=self.draw,
            site_power=site_w,
            site_power_full=self.site_full,
            energy_per_million=to(times(per_tok, _MILLION), _KWH),
            token_efficiency=to(eff, _PER_J),
            gpus_per_megawatt=int(F["gpus_in_power_budget"](power_budget=_MW, site_power=self.site_full).m),
            years=n_years,
            electricity_price=to(self.price_e, _USD_KWH),
            electricity_name=self.elec_name,
            pue=self.pue,
            pue_name=self.pue_name,
            monthly_energy=to(F["site_energy"](gpus=self.total, site_power=site_w, hours=HOURS_PER_MONTH), _MWH),
            assumptions=self.a,
            **self.out,
        )


def _fleet_size(rep: Replica, fleet: Any) -> tuple[int, int]:
    """(replicas, GPUs) billed: one replica, or ``fleet``'s (sized for ``rep``)."""
    if fleet is None:
        return 1, rep.n_gpus
    if not isinstance(fleet, Fleet):
        raise InputError("fleet must be a Fleet of replicas like rep: build one with llmcourse.fleet(demand, rep).")
    if not math.isclose(to(fleet.throughput_per_replica, _PER_S).m, to(rep.throughput, _PER_S).m, rel_tol=1e-9):
        raise InputError("fleet was sized for another replica: build it with llmcourse.fleet(demand, rep).")
    return fleet.replicas, fleet.gpus
