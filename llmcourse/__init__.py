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

from llmcourse import sources
from llmcourse.assumptions import PRESETS, Assumptions, presets_table, resolve
from llmcourse.bill import Bill, bill
from llmcourse.catalog import GPU, PRECISIONS, Link, Model, costs, gpus, hardware_prices, links, models
from llmcourse.disagg import compare, disaggregated, kv_handoff
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.formulas import FORMULAS, SYMBOLS
from llmcourse.planner import (
    Brief,
    Plan,
    compute_budget,
    cost_per_million,
    decode_step,
    fleet,
    gpus_for_weights,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    kv_copies,
    matmul_precision,
    max_batch,
    plan,
    prefill,
    prefill_pool,
    replica,
    request_cycle,
    serving_plan,
    traffic,
    usable_memory,
    weight_bytes,
    weights_read_per_step,
)
from llmcourse.units import Q_, fmt, ureg

__version__ = "0.1.0"

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
