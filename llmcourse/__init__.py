"""llmcourse: back-of-the-envelope capacity planning for serving large language models.

The package behind the course book. Data flows one way: catalogs (``models``, ``gpus``)
and the unit registry feed the SymPy formulas (:mod:`llmcourse.formulas`), the planner
composes them (:mod:`llmcourse.planner`), and widgets, plots and exercise checks call
the planner.

Examples
--------
>>> import llmcourse as lc
>>> lc.kv_bytes_per_token(lc.models["Qwen2.5-72B"]).to("KiB")
<Quantity(320.0, 'kibibyte')>
"""

from __future__ import annotations

from llmcourse.assumptions import PRESETS, Assumptions, presets_table, resolve
from llmcourse.catalog import GPU, PRECISIONS, Link, Model, costs, gpus, hardware_prices, links, models
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.formulas import FORMULAS, SYMBOLS
from llmcourse.planner.bill import Bill, bill
from llmcourse.planner.design import Brief, Plan, plan
from llmcourse.planner.serving import compute_budget, fleet, prefill_pool, request_cycle, serving_plan, traffic
from llmcourse.replica.memory import (
    gpus_for_weights,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    kv_copies,
    max_batch,
    usable_memory,
    weight_bytes,
)
from llmcourse.replica.model import cost_per_million, replica
from llmcourse.replica.prefilling import prefill
from llmcourse.replica.scheduler import EngineSettings
from llmcourse.replica.step import decode_step, matmul_precision, weights_read_per_step
from llmcourse.units import Q_, fmt, ureg

__version__ = "0.1.0"

#: Names imported on first use (PEP 562), from modules that ``import llmcourse`` and ``plan()`` do not need: the
#: sources' figures (read and checked when loaded) and the disaggregation chapter's functions. ``llmcourse.X``
#: and ``from llmcourse import X`` give the same objects as an eager import would.
_LAZY = {
    "sources": ("llmcourse.planner.sources", None),
    "compare": ("llmcourse.planner.disagg", "compare"),
    "disaggregated": ("llmcourse.planner.disagg", "disaggregated"),
    "kv_handoff": ("llmcourse.planner.disagg", "kv_handoff"),
}
#: Submodules an eager import would have left as attributes of the package.
_LAZY_MODULES = {"disagg": "llmcourse.planner.disagg", "sources": "llmcourse.planner.sources"}


def __getattr__(name: str) -> object:
    import importlib

    where = _LAZY.get(name)
    if where is None:
        if name in _LAZY_MODULES:
            return importlib.import_module(_LAZY_MODULES[name])
        raise AttributeError(f"module 'llmcourse' has no attribute {name!r}")
    module = importlib.import_module(where[0])
    value = module if where[1] is None else getattr(module, where[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_LAZY_MODULES} - {"_LAZY", "_LAZY_MODULES", "__getattr__", "__dir__"})


__all__ = [
    "FORMULAS",
    "GPU",
    "PRECISIONS",
    "PRESETS",
    "Q_",
    "SYMBOLS",
    "Assumptions",
    "Bill",
    "Brief",
    "EngineSettings",
    "InputError",
    "Link",
    "Model",
    "Plan",
    "UnknownNameError",
    "bill",
    "compare",
    "compute_budget",
    "cost_per_million",
    "costs",
    "decode_step",
    "disaggregated",
    "fleet",
    "fmt",
    "gpus",
    "gpus_for_weights",
    "hardware_prices",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token",
    "kv_copies",
    "kv_handoff",
    "links",
    "matmul_precision",
    "max_batch",
    "models",
    "plan",
    "prefill",
    "prefill_pool",
    "presets_table",
    "replica",
    "request_cycle",
    "resolve",
    "serving_plan",
    "sources",
    "traffic",
    "ureg",
    "usable_memory",
    "weight_bytes",
    "weights_read_per_step",
]
