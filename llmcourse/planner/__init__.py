"""Planning on the replica model: the design planner (:func:`plan`), the serving figures and the fleet; in their own
modules, the chapters' planners built on them (``bill``, ``disagg``, ``levers``, ``memory``, ``moe``,
``roofline``, ``batching``, ``speculation``, ``sources``). Every serving figure comes from
:func:`llmcourse.replica.replica`.
"""

from llmcourse.planner.design import (
    Brief,
    Plan,
    plan,
)
from llmcourse.planner.serving import (
    ComputeBudget,
    Fleet,
    PrefillPool,
    RequestCycle,
    ServingPlan,
    Traffic,
    compute_budget,
    fleet,
    prefill_pool,
    request_cycle,
    serving_plan,
    traffic,
)

__all__ = [
    "Brief",
    "ComputeBudget",
    "Fleet",
    "Plan",
    "PrefillPool",
    "RequestCycle",
    "ServingPlan",
    "Traffic",
    "compute_budget",
    "fleet",
    "plan",
    "prefill_pool",
    "request_cycle",
    "serving_plan",
    "traffic",
]
