"""The formulas of the whole bill, each written once as a SymPy expression (chapter *What a fleet costs*,
``book/09b_fleet_cost.md``).

A GPU that holds a model draws a share of its rated power (TDP) even when idle, and more in proportion to
how busy it is; the server around it draws a share of the GPU's rated power; the site multiplies the lot by
its power usage effectiveness (PUE). Energy per token is that power over the tokens the GPUs deliver at the
utilisation. Owning a GPU costs its purchase price and its server's share, written off over a service
life, plus the electricity at the site; renting costs the hourly rate (power included). Cost per token at a
utilisation composes the fleet chapter's ``cost_per_token`` and ``cost_at_utilisation``; the utilisation at
which owning (or renting) costs what an API charges is solved from them by SymPy (``break_even_utilisation_*``),
the API's price put per output token with its input tokens included (``api_price_per_output_token``).

The symbols and formulas are registered in :data:`llmcourse.formulas.SYMBOLS` and
:data:`~llmcourse.formulas.FORMULAS` when this module is imported (``llmcourse.formulas`` imports it, with every
topic module, after :mod:`~llmcourse.formulas.core`).

Examples
--------
>>> from llmcourse.formulas import FORMULAS
>>> from llmcourse.units import Q_
>>> FORMULAS["gpu_power_draw"].latex()
'P_{gpu} = P_{TDP} \\\\left(U \\\\left(- f_{idle} + f_{load}\\\\right) + f_{idle}\\\\right)'
>>> FORMULAS["gpu_power_draw"](gpu_power=Q_(700, "W"), gpu_idle_power_fraction=0.15, gpu_load_power_fraction=1,
...                            utilisation=0.5)
<Quantity(402.5, 'watt')>
"""

from __future__ import annotations

from llmcourse.formulas import serving  # noqa: F401  (the symbols taken by name below are defined there first)
from llmcourse.formulas.core import (
    FORMULAS,
    SYMBOLS,
    defer,
    deferred_getattr,
    derived,
    floor,
    formula,
    later,
    section,
    sp,
    symbol,
    symbols,
)

__all__: list[str] = []
__getattr__ = deferred_getattr(globals())  # the names the sections below define, made on first use

CHAPTER = "09b_fleet_cost"

# --- symbols --------------------------------------------------------------------------------------
gpu_power = symbol("gpu_power", r"P_{TDP}", "W", "rated power of one GPU (its TDP, the catalog's power)")
idle_fraction = symbol(
    "gpu_idle_power_fraction",
    r"f_{idle}",
    "",
    "share of its rated power a GPU draws while it holds a model but serves nothing",
    allow_zero=True,
    at_most=1,
)
load_fraction = symbol(
    "gpu_load_power_fraction", r"f_{load}", "", "share of its rated power a GPU draws at full load", at_most=1
)
host_fraction = symbol(
    "host_power_fraction",
    r"f_{host}",
    "",
    "the server's draw per GPU (CPUs, NICs, fans) as a share of the GPU's rated power",
    allow_zero=True,
)
pue = symbol(
    "pue", r"\mathrm{PUE}", "", "power usage effectiveness: site power over IT power (cooling, losses)", at_least=1
)
gpu_draw = symbol("gpu_draw", r"P_{gpu}", "W", "average power one GPU draws at a utilisation")
site_power = symbol("site_power", r"P_{site}", "W", "site power per GPU: the GPU, its share of the server, times PUE")
energy_per_token = symbol("energy_per_token", r"E_{tok}", "J", "site energy per output token")
token_efficiency = symbol(
    "token_efficiency", r"\eta_{tok}", "1/J", "output tokens per unit of site energy (tokens/s per watt)"
)
gpu_price = symbol("gpu_price", r"C_{gpu}", "USD", "purchase price of one GPU")
server_price = symbol(
    "server_price", r"C_{srv}", "USD", "the server's price per GPU (host, NICs, chassis share)", allow_zero=True
)
service_life = symbol("service_life", r"t_{life}", "s", "time owned hardware is written off over (straight line)")
electricity_price = symbol("electricity_price", r"c_{e}", "USD/J", "price of electricity (given per kWh)")
api_output_price = symbol("api_output_price", r"p_{out}", "USD", "an API's list price of one output token")
api_input_price = symbol(
    "api_input_price", r"p_{in}", "USD", "an API's list price of one input (prompt) token", allow_zero=True
)
power_budget = symbol("power_budget", r"P_{max}", "W", "power a site can deliver")
energy = symbol("energy", r"E_{site}", "J", "site energy in the time billed")

_S = later(
    lambda: {
        n: SYMBOLS[n].sym
        for n in (
            "utilisation",
            "n_gpus",
            "throughput",
            "price",
            "api_price",
            "gpus",
            "hours",
            "prompt_tokens",
            "answer_tokens",
        )
    }
)
U, N, X, p, p_api = symbols("utilisation", "n_gpus", "throughput", "price", "api_price")

# --- power and energy -----------------------------------------------------------------------------


@section
def _power() -> None:
    global _draw, _site, _energy_tok
    # The GPU idles at f_idle of its rated power and draws f_load of it at full load, in proportion to the
    # utilisation between the two; the server draws f_host of the GPU's rated power whether busy or idle.
    _draw = gpu_power * (idle_fraction + (load_fraction - idle_fraction) * U)
    formula(
        "gpu_power_draw",
        "gpu_draw",
        _draw,
        "a GPU's average draw: idle share plus the rest in proportion to use",
        CHAPTER,
    )
    _site = pue * (gpu_draw + host_fraction * gpu_power)
    formula("site_power", "site_power", _site, "site power per GPU: (GPU + its server share) x PUE", CHAPTER)
    _energy_tok = N * site_power / (X * U)
    formula(
        "energy_per_token",
        "energy_per_token",
        _energy_tok,
        "site energy per output token: the replica's N GPUs' site power over the tokens it delivers at U",
        CHAPTER,
    )
    formula(
        "token_efficiency",
        "token_efficiency",
        X * U / (N * site_power),
        "output tokens per joule of site energy (tokens per second per watt)",
        CHAPTER,
    )
    formula(
        "site_energy",
        "energy",
        SYMBOLS["gpus"].sym * site_power * SYMBOLS["hours"].sym,
        "site energy of G GPUs",
        CHAPTER,
    )
    formula(
        "gpus_in_power_budget",
        "gpus",
        floor(power_budget / site_power),
        "GPUs a site's power can feed at a site power per GPU",
        CHAPTER,
    )


# --- owning --------------------------------------------------------------------------------------


@section
def _owning() -> None:
    global _capital, _electricity, _own
    _capital = (gpu_price + server_price) / service_life
    _electricity = electricity_price * site_power
    formula("capital_rate", "price", _capital, "owned hardware written off per unit time, per GPU", CHAPTER)
    formula("electricity_rate", "price", _electricity, "electricity per unit time, per GPU at its site power", CHAPTER)
    _own = _capital + _electricity
    formula(
        "owning_price", "price", _own, "owning one GPU per unit time: hardware written off plus electricity", CHAPTER
    )


# --- what an API charges per output token ----------------------------------------------------------


@section
def _api_price() -> None:
    # An API bills a request's prompt tokens at p_in and its answer tokens at p_out; a self-hosted replica's cost is
    # per output token, so the API's price is put per output token too: the request's T_p prompt tokens are shared
    # over its T_a answer tokens.
    formula(
        "api_price_per_output_token",
        "api_price",
        api_output_price + api_input_price * _S["prompt_tokens"] / _S["answer_tokens"],
        "an API's price per output token, its input tokens included: the prompt's T_p tokens shared over T_a answer tokens",
        CHAPTER,
    )


# --- break-even utilisations: cost per token at U (fleet chapter) = the API's price per token, for U -----


@section
def _break_even() -> None:
    global _per_token, _u_real, _solve_for_utilisation, _own_at_u, _owned_parts, _num, _den
    _per_token = FORMULAS["cost_at_utilisation"].expr.subs(SYMBOLS["cost_full"].sym, FORMULAS["cost_per_token"].expr)
    _u_real = sp.Symbol("U_real", real=True)  # a real unknown: SymPy keeps the root whatever its sign

    def _solve_for_utilisation(price_expr: sp.Expr) -> sp.Expr:
        """U at which ``price_expr`` (a GPU's price per unit time, perhaps depending on U) makes a token cost p_api."""
        lhs = _per_token.subs(p, price_expr).subs(U, _u_real)
        roots = sp.solve(sp.Eq(lhs, p_api), _u_real)
        if len(roots) != 1:  # pragma: no cover - guards a change of the expressions above
            raise RuntimeError(f"expected one break-even utilisation, got {roots}")
        return sp.factor_terms(sp.together(roots[0]))

    formula(
        "break_even_utilisation_rented",
        "utilisation",
        derived("break_even_utilisation_rented", (_per_token, p, U, _u_real, p_api), lambda: _solve_for_utilisation(p)),
        "utilisation at which rented GPUs cost per token what an API charges",
        CHAPTER,
    )
    _own_at_u = _own.subs(site_power, _site).subs(gpu_draw, _draw)

    def _owned_parts() -> tuple[sp.Expr, sp.Expr]:
        """The owned break-even utilisation's numerator and denominator, shown per unit time: N (hardware written off +
        idle and server electricity) over (what the API pays for the tokens at full load - the electricity that full
        load adds)."""
        num, den = sp.fraction(sp.together(_solve_for_utilisation(_own_at_u)))
        return tuple(sp.collect(sp.expand(e / service_life), [electricity_price], func=sp.factor) for e in (num, den))

    _num, _den = derived(
        "break_even_utilisation_owned",
        (_per_token, p, U, _u_real, p_api, _own_at_u, service_life, electricity_price),
        _owned_parts,
    )
    formula(
        "break_even_utilisation_owned",
        "utilisation",
        sp.Mul(_num, sp.Pow(_den, -1), evaluate=False),
        "utilisation at which owned GPUs (hardware written off plus electricity) cost per token what an API charges",
        CHAPTER,
    )


defer(globals())  # the symbols above are made when SymPy is first needed
