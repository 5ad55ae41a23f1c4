"""Errors that tell the user what to change."""

from __future__ import annotations

__all__ = ["MOVED_KEYWORDS", "InputError", "UnknownNameError"]


class InputError(ValueError):
    """A value given to ``llmcourse`` cannot be used; the message says how to fix it."""


class UnknownNameError(KeyError):
    """A catalog name that does not exist; the message suggests the closest names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


#: Keywords the public functions took before the package was built in rooms (December 2026): for each, the functions
#: it left (None: every estimate, as the modelling choices did) and where it went. A call that gives one to such a
#: function is told where it went, not only that the keyword is unexpected (``llmcourse.formulas.checked``).
_PLAN = frozenset({"plan", "lever_plan"})
MOVED_KEYWORDS: dict[str, tuple[frozenset[str] | None, str]] = {
    "bandwidth_efficiency": (
        None,
        "a modelling choice lives in the assumptions: assumptions=resolve('course').replace(bandwidth_efficiency=...)",
    ),
    "compute_efficiency": (
        None,
        "a modelling choice lives in the assumptions: assumptions=resolve('course').replace(compute_efficiency=...)",
    ),
    "usable_fraction": (
        None,
        "the share of memory is the assumptions' memory_fraction: "
        "assumptions=resolve('course').replace(memory_fraction=...)",
    ),
    "memory_reserve": (
        _PLAN,
        "the share of memory held back is 1 - the assumptions' memory_fraction: "
        "assumptions=resolve('course').replace(memory_fraction=1 - reserve)",
    ),
    "headroom": (
        _PLAN,
        "the headroom is the assumptions': assumptions=resolve('course').replace(headroom=...)",
    ),
    "chunk_tokens": (
        _PLAN,
        "a percentile plan's simulation is one object: simulation=SizingRun(chunk_tokens=...) "
        "(llmcourse.simulator.SizingRun)",
    ),
    "prompt_cv": (
        _PLAN,
        "a percentile plan's simulation is one object: simulation=SizingRun(prompt_cv=...)",
    ),
    "answer_cv": (
        _PLAN,
        "a percentile plan's simulation is one object: simulation=SizingRun(answer_cv=...)",
    ),
    "simulated_requests": (
        _PLAN,
        "a percentile plan's simulation is one object: simulation=SizingRun(requests=...)",
    ),
    "seed": (
        _PLAN,
        "a percentile plan's simulation is one object: simulation=SizingRun(seed=...)",
    ),
    "electricity_price": (
        frozenset({"bill"}),
        "the site is one object: site=Site(electricity_price=..., pue=...) (llmcourse.planner.bill.Site)",
    ),
    "pue": (
        frozenset({"bill"}),
        "the site is one object: site=Site(electricity_price=..., pue=...) (llmcourse.planner.bill.Site)",
    ),
    "api_price_per_million": (
        frozenset({"bill"}),
        "an API price is a costs row: api=Cost(kind='api', value=..., input_value=...) "
        "or the name of a row of costs.csv",
    ),
    "api_input_price_per_million": (
        frozenset({"bill"}),
        "an API price is a costs row: api=Cost(kind='api', value=..., input_value=...)",
    ),
    "prefill_data_parallel": (
        frozenset({"disaggregated"}),
        "the pools' MoE layout is one object: moe_layout=MoeLayout(...) (llmcourse.planner.disagg.MoeLayout)",
    ),
    "decode_data_parallel": (
        frozenset({"disaggregated"}),
        "the pools' MoE layout is one object: moe_layout=MoeLayout(...)",
    ),
    "prefill_expert_parallel": (
        frozenset({"disaggregated"}),
        "the pools' MoE layout is one object: moe_layout=MoeLayout(...)",
    ),
    "decode_expert_parallel": (
        frozenset({"disaggregated"}),
        "the pools' MoE layout is one object: moe_layout=MoeLayout(...)",
    ),
}
