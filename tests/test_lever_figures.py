"""The lever ranking's own path through the planner (``llmcourse.planner.design.lever_plan``) gives exactly the fields of
:func:`llmcourse.planner.design.plan` that a ranking reads: one path (``llmcourse.planner.design._planned``), two callers."""

from __future__ import annotations

import pytest

from llmcourse.assumptions import resolve
from llmcourse.planner.design import Brief, lever_plan, plan
from llmcourse.replica.speculative import Speculation
from llmcourse.units import Q_

FIELDS = ("fits", "reason", "gpus", "ttft", "tpot", "cost_per_hour", "meets_targets")

CASES = [
    ("Llama-3.1-70B", "H100 SXM", Brief(20, 4_000, 400, Q_(1, "s"), Q_(40, "ms")), dict(tensor_parallel=2)),
    ("Llama-3.1-70B", "H100 SXM", Brief(20, 4_000, 400, Q_(1, "s"), Q_(40, "ms")), dict(weight_bytes="int4")),
    ("Llama-3.1-8B", "L4", Brief(5, 8_000, 200, Q_(300, "ms"), Q_(20, "ms")), dict(assumptions="planner")),
    ("Llama-3.1-405B", "H100 SXM", Brief(1, 2_000, 300, Q_(1, "s"), Q_(50, "ms")), {}),  # does not fit
    (
        "Qwen3-30B-A3B",
        "H200 SXM",
        Brief(50, 2_000, 300, Q_(1, "s"), Q_(50, "ms")),
        dict(
            cached_prompt_tokens=1_000,
            assumptions=resolve().replace(headroom=1.5),
            price_per_hour=Q_(60, "USD/day"),
        ),
    ),
    (
        "Llama-3.1-70B",
        "H100 SXM",
        Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms")),
        dict(tensor_parallel=2, weight_bytes="fp8", speculation=Speculation("eagle head", 3, 0.6)),
    ),
    ("Llama-3.1-8B", "H100 SXM", Brief(10, 2_000, 300, Q_(300, "ms"), Q_(50, "ms"), ttft_percentile=99), {}),
]


@pytest.mark.parametrize(("model", "gpu", "brief", "kw"), CASES)
def test_lever_plan_reads_what_plan_gives(model: str, gpu: str, brief: Brief, kw: dict) -> None:
    full, figures = plan(model, gpu, brief, **kw), lever_plan(model, gpu, brief, **kw)
    for name in FIELDS:
        got, want = getattr(figures, name), getattr(full, name)
        assert type(got) is type(want) and got == want, name
        if hasattr(want, "units"):
            assert got.units == want.units and got.magnitude == want.magnitude, name


def test_lever_plan_refuses_what_plan_refuses() -> None:
    brief = Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms"))
    for kw in (dict(tensor_parallel=3), dict(assumptions="curse"), dict(weight_bytes="fp3")):
        with pytest.raises(Exception) as want:
            plan("Llama-3.1-70B", "H100 SXM", brief, **kw)
        with pytest.raises(type(want.value)) as got:
            lever_plan("Llama-3.1-70B", "H100 SXM", brief, **kw)
        assert str(got.value) == str(want.value)
