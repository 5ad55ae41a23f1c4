"""The whole-bill calculator of the chapter *Sizing the fleet* (``book/09_fleet.md``)."""

from __future__ import annotations

import functools

import ipywidgets as w

from llmcourse.assumptions import resolve
from llmcourse.catalog import Cost, costs
from llmcourse.planner.bill import Bill, Site, bill, default_cost
from llmcourse.planner.serving import fleet
from llmcourse.replica.model import replica
from llmcourse.units import Q_, parsed_unit, to
from llmcourse.widgets import (
    Calculator,
    float_slider,
    int_box,
    replica_controls,
)

__all__ = ["bill_calculator"]

#: The API prices the calculator starts at: the catalog's DeepInfra prices for the chapter's model.
_API_DEFAULT = "DeepInfra Llama-3.1-70B"
_PER_S, _USD_KWH, _USD = (parsed_unit(u)[0] for u in ("1/s", "USD/kWh", "USD"))  # parsed once, not per update


@functools.lru_cache(maxsize=64)
def _replica(*args: object, **kwargs: object) -> object:
    """The replica of the controls' shape, kept while only the bill's inputs (utilisation, site, prices) move: a
    replica is frozen, and building it is most of an update."""
    return replica(*args, **kwargs)


def _compute(
    model: str,
    gpu: str,
    tensor_parallel: int,
    batch: int,
    prompt: int,
    answer: int,
    precision: str,
    method: str,
    utilisation: float,
    own: bool,
    years: float,
    electricity: float,
    pue: float,
    api_price: float,
    api_input: float,
    demand: int,
) -> Bill | list[tuple[str, str]]:
    r = _replica(
        model,
        gpu,
        tensor_parallel=tensor_parallel,
        batch=batch,
        prompt_tokens=prompt,
        answer_tokens=answer,
        weight_bytes=precision,
        assumptions=method,
    )
    if not r.fits:
        return [("memory check", "does NOT fit: lower the batch or the context, or add GPUs"), ("why", r.reason)]
    f = fleet(Q_(demand, _PER_S), r) if demand else None
    return bill(
        r,
        utilisation=utilisation,
        fleet=f,
        own=own,
        years=years,
        site=Site(electricity_price=Q_(electricity, _USD_KWH), pue=pue),
        api=Cost("given", kind="api", value=Q_(api_price, _USD), input_value=Q_(api_input, _USD)),
    )


def bill_calculator(
    model: str = "Llama-3.1-70B",
    gpu: str = "H100 SXM",
    tensor_parallel: int = 2,
    batch: int = 64,
    prompt: int = 2_000,
    answer: int = 400,
    precision: str = "fp8",
    method: str = "course",
    utilisation: float = 0.3,
    own: bool = True,
    demand: int = 0,
) -> Calculator:
    """Replica, utilisation, site and prices -> energy per token, tokens per MW, owning vs renting vs an API.

    The years of depreciation start at the method's, the electricity price and PUE at the default rows of
    ``costs.csv``, the API's prices per million output and input tokens at the catalog's DeepInfra prices for
    Llama 3.1 70B (the bill puts the input tokens on the output tokens at the replica's prompt and answer
    lengths). A peak demand (output tokens per second) above 0 bills the fleet :func:`llmcourse.fleet` sizes
    for it.

    Examples
    --------
    >>> c = bill_calculator()
    >>> dict(c.rows)["GPU draw at 30% busy (idle 15%, full load 100% of 700 W)"]
    '284 W'
    >>> c.set(utilisation=0).error
    'utilisation must be greater than zero; got 0.0.'
    >>> c.set(utilisation=1.0, demand=140_000).error is None and c.result.gpus > 2
    True
    """
    a = resolve(method)
    return Calculator(
        _compute,
        {
            **replica_controls(model, gpu, tensor_parallel, batch, prompt, answer, precision, method),
            "utilisation": float_slider(utilisation, 0.0, 1.0, 0.05, "Average utilisation"),
            "own": w.Dropdown(options=[("own the GPUs", True), ("rent them", False)], value=own, description="GPUs"),
            "years": float_slider(a.depreciation_years, 1.0, 8.0, 0.5, "Years written off over"),
            "electricity": float_slider(
                to(default_cost("electricity").value, "USD/kWh").m, 0.02, 0.40, 0.005, "Electricity $/kWh"
            ),
            "pue": float_slider(default_cost("pue").value.m, 1.0, 2.5, 0.02, "PUE"),
            "api_price": float_slider(to(costs[_API_DEFAULT].value, "USD").m, 0.05, 30.0, 0.05, "API $ per M output"),
            "api_input": float_slider(
                to(costs[_API_DEFAULT].input_value, "USD").m, 0.0, 10.0, 0.01, "API $ per M input"
            ),
            "demand": int_box(demand, "Peak output tok/s (0: one replica)"),
        },
        title="The whole bill: energy, owning, renting, an API",
    )
