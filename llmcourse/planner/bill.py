"""The whole bill of a replica or a fleet: energy per token, tokens per megawatt, owning vs renting, and an API.

Chapter *Sizing the fleet* (``book/09_fleet.md``, section "The whole bill"). Every throughput comes from the
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
from llmcourse.formulas import checked
from llmcourse.planner.serving import Fleet
from llmcourse.replica.model import Replica, cost_per_million
from llmcourse.units import HOURS_PER_MONTH, Q_, as_quantity, parsed_unit, plain_number, to

__all__ = ["Bill", "bill", "default_cost"]

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
    """Check the prices of ``_GIVEN_UNITS`` before :func:`~llmcourse.formulas.checked` does, so that a bare
    number is answered with the unit a price list gives (write Q_(0.08, 'USD/kWh')), not the SI one."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Bill:
        for name, unit in _GIVEN_UNITS.items():
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
    electricity_price: Any = None,
    pue: float | None = None,
    gpu_price: Any = None,
    server_price: Any = None,
    price_per_hour: Any = None,
    api: Cost | str | None = None,
    api_price_per_million: Any = None,
    api_input_price_per_million: Any = None,
    gpu_power: Any = None,
    assumptions: Assumptions | str | None = None,
) -> Bill:
    """The whole bill of ``rep`` (or of ``fleet``, a fleet of such replicas) busy ``utilisation`` of the time.

    ``years`` (of depreciation), and the power model (idle and full-load shares of the GPU's rated power, the
    server's share) come from ``assumptions`` (by default the replica's own); ``electricity_price`` (USD/kWh)
    and ``pue`` default to the rows of ``costs.csv`` marked as defaults; ``gpu_price`` and ``server_price`` (per
    GPU, USD) to ``hardware_prices.csv``; ``price_per_hour`` (renting) to the replica's price;
    ``gpu_power`` (W) to the catalog's rated power. The API is ``api`` (a row of ``costs.csv``, or its name), or
    the prices ``api_price_per_million`` (USD per million output tokens) and ``api_input_price_per_million``
    (per million input tokens; 0 if not given: the output price is then all-in), or by default the API row of
    ``costs.csv`` for the model that is cheapest per output token at the replica's lengths, if any. The
    comparison puts the API's input tokens on its output tokens (formula ``api_price_per_output_token``). ``own``
    picks what :attr:`Bill.cost_per_million` and :attr:`Bill.cheaper` compare with the API: owning (True) or
    renting.

    Examples
    --------
    >>> import llmcourse as lc
    >>> rep = lc.replica("Llama-3.1-8B", "H100 SXM", batch=64, prompt_tokens=1_000, answer_tokens=300)
    >>> b = bill(rep, utilisation=1, own=False)
    >>> round(b.site_power.to("W").m)  # (700 + 0.5 x 700) x 1.58
    1659
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
    x = rep.throughput
    n = rep.n_gpus
    replicas, total = 1, n
    if fleet is not None:
        if not isinstance(fleet, Fleet):
            raise InputError("fleet must be a Fleet of replicas like rep: build one with llmcourse.fleet(demand, rep).")
        if not math.isclose(to(fleet.throughput_per_replica, _PER_S).m, to(x, _PER_S).m, rel_tol=1e-9):
            raise InputError("fleet was sized for another replica: build it with llmcourse.fleet(demand, rep).")
        replicas, total = fleet.replicas, fleet.gpus
    # the site
    elec, site = default_cost("electricity"), default_cost("pue")
    price_e = elec.value if electricity_price is None else electricity_price
    pue_value = float(site.value.m) if pue is None else pue
    elec_name = elec.name if electricity_price is None or price_e == elec.value else "given"
    pue_name = site.name if pue is None or pue_value == site.value.m else "given"
    # the GPU
    if gpu_power is None:
        try:
            gpu_power = gpus[rep.gpu].power
        except UnknownNameError:
            gpu_power = None
        if gpu_power is None:
            raise InputError(f"{rep.gpu} has no rated power in the catalog: pass gpu_power=Q_(700, 'W').")
    tdp = as_quantity(gpu_power, "W", "gpu_power")
    plain_number(tdp.magnitude, "gpu_power")
    power = dict(
        gpu_power=tdp,
        gpu_idle_power_fraction=a.gpu_idle_power_fraction,
        gpu_load_power_fraction=a.gpu_load_power_fraction,
    )
    draw = to(F["gpu_power_draw"](utilisation=u, **power), _W)

    def site_at(p_gpu: pint.Quantity) -> pint.Quantity:
        return F["site_power"](gpu_draw=p_gpu, gpu_power=tdp, host_power_fraction=a.host_power_fraction, pue=pue_value)

    site_w = to(site_at(draw), _W)
    site_full = to(site_at(F["gpu_power_draw"](utilisation=1, **power)), _W)
    per_tok = F["energy_per_token"](n_gpus=n, site_power=site_w, throughput=x, utilisation=u)
    eff = F["token_efficiency"](n_gpus=n, site_power=site_w, throughput=x, utilisation=u)
    per_mw = int(F["gpus_in_power_budget"](power_budget=_MW, site_power=site_full).m)
    energy_month = to(F["site_energy"](gpus=total, site_power=site_w, hours=HOURS_PER_MONTH), _MWH)

    def per_million(price: pint.Quantity) -> pint.Quantity:
        full = cost_per_million(price, x, n)
        return to(F["cost_at_utilisation"](cost_full=full, utilisation=u), _USD)

    def monthly(price: pint.Quantity) -> pint.Quantity:
        return to(F["fleet_cost"](gpus=total, price=price, hours=HOURS_PER_MONTH), _USD)

    out: dict[str, Any] = {}
    # renting
    rent = rep.price_per_hour if price_per_hour is None else price_per_hour
    if rent is not None:
        rent = to(rent, _USD_H)
        out.update(rent_price_per_hour=rent, rent_cost_per_million=per_million(rent), monthly_rent=monthly(rent))
    elif not own:
        raise InputError(f"{rep.gpu} has no rental price in the catalog: pass price_per_hour=Q_(2.5, 'USD/hour').")
    # owning
    hw = hardware_prices.get(rep.gpu)
    c_gpu = gpu_price if gpu_price is not None else (hw.gpu_price if hw is not None else None)
    c_srv = server_price if server_price is not None else (hw.server_price if hw is not None else None)
    if c_gpu is None and own:
        raise InputError(
            f"{rep.gpu} has no purchase price in hardware_prices.csv: pass gpu_price=Q_(30_000, 'USD') "
            "(and server_price=), or own=False to rent."
        )
    # n_years * 12 * HOURS_PER_MONTH: a year of 12 always-on months (8,760 hours), as the fleet chapter bills
    life = times(HOURS_PER_MONTH, n_years * 12)
    hardware = dict(gpu_price=c_gpu, server_price=c_srv if c_srv is not None else _NO_USD, service_life=life)
    if c_gpu is not None:
        capital = to(F["capital_rate"](**hardware), _USD_H)
        electricity = to(F["electricity_rate"](electricity_price=price_e, site_power=site_w), _USD_H)
        owning = to(F["owning_price"](electricity_price=price_e, site_power=site_w, **hardware), _USD_H)
        out.update(
            gpu_price=hardware["gpu_price"],
            server_price=hardware["server_price"],
            capital_per_hour=capital,
            electricity_per_hour=electricity,
            own_price_per_hour=owning,
            own_cost_per_million=per_million(owning),
            electricity_cost_per_million=per_million(electricity),
            monthly_own=monthly(owning),
        )
    # the API
    api_name = "given"
    if api is not None:
        if api_price_per_million is not None or api_input_price_per_million is not None:
            raise InputError(
                "give the API either as api= (a row of costs.csv) or as api_price_per_million= (and "
                "api_input_price_per_million=), not both."
            )
        row = costs[api]
        if row.kind != "api":
            raise InputError(
                f"api={row.name!r} is a {row.kind} row of costs.csv: name an api row, such as 'DeepInfra 70B'."
            )
        api_price_per_million, api_input_price_per_million, api_name = row.value, row.input_value, row.name
    elif api_price_per_million is None:
        if api_input_price_per_million is not None:
            raise InputError("api_input_price_per_million needs api_price_per_million= (the output price) beside it.")
        found = _api_rows(rep)
        if found:
            api_price_per_million, api_input_price_per_million, api_name = (
                found[0].value,
                found[0].input_value,
                found[0].name,
            )
    p_out = _usd_or_none(api_price_per_million, "api_price_per_million")
    p_in = _usd_or_none(api_input_price_per_million, "api_input_price_per_million", allow_zero=True)
    if p_out is not None:
        p_in = _NO_USD if p_in is None else to(p_in, _USD)
        per_token = _api_per_output_token(p_out, p_in, rep)

        def at_most_one(name: str, **values: Any) -> float | None:
            try:
                share = float(F[name](throughput=x, n_gpus=n, api_price=per_token, **values).m)
            except InputError:  # no finite break-even: the API is cheaper than the electricity alone
                return None
            return share if 0 < share <= 1 else None

        out.update(
            api_price_per_million=to(times(per_token, _MILLION), _USD),
            api_output_price_per_million=to(p_out, _USD),
            api_input_price_per_million=p_in,
            api_name=api_name,
        )
        if rent is not None:
            out["break_even_rented"] = at_most_one("break_even_utilisation_rented", price=rent)
        if c_gpu is not None:
            out["break_even_owned"] = at_most_one(
                "break_even_utilisation_owned",
                electricity_price=price_e,
                pue=pue_value,
                host_power_fraction=a.host_power_fraction,
                **power,
                **hardware,
            )
    return Bill(
        model=rep.model,
        gpu=rep.gpu,
        n_gpus=n,
        replicas=replicas,
        gpus=total,
        utilisation=u,
        own=own,
        throughput=x,
        tokens_per_s=to(times(times(x, u), replicas), _PER_S),
        gpu_power=tdp,
        gpu_draw=draw,
        site_power=site_w,
        site_power_full=site_full,
        energy_per_million=to(times(per_tok, _MILLION), _KWH),
        token_efficiency=to(eff, _PER_J),
        gpus_per_megawatt=per_mw,
        years=n_years,
        electricity_price=to(price_e, _USD_KWH),
        electricity_name=elec_name,
        pue=pue_value,
        pue_name=pue_name,
        monthly_energy=energy_month,
        assumptions=a,
        **out,
    )
