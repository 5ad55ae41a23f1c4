"""THE model of one replica: a model on GPUs serving a batch, and every figure of it.

One floor above the catalog, the formulas and the assumptions; everything above (the planner, the simulator,
validation, widgets, exercises) asks it. Its modules, each building on those before it:

* :mod:`~llmcourse.replica.base` - units parsed once, catalog look-ups, plain-number conversions, checks;
* :mod:`~llmcourse.replica.setups` - the kept set-ups of replicas and decode steps;
* :mod:`~llmcourse.replica.memory` - weights, KV cache, usable memory, the largest batch;
* :mod:`~llmcourse.replica.parallel` - a replica's shape over GPUs and what its GPUs pay to talk;
* :mod:`~llmcourse.replica.step` - the decode step;
* :mod:`~llmcourse.replica.prefill` - prefill;
* :mod:`~llmcourse.replica.speculative` - a draft and its verification cycle;
* :mod:`~llmcourse.replica.acceptance` - the published acceptance figures and the rates they imply;
* :mod:`~llmcourse.replica.model` - :func:`replica`, the one front door (plain or speculative).
"""

from llmcourse.replica.base import (
    gpu_of,
    model_of,
)
from llmcourse.replica.memory import (
    gpus_for_weights,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    kv_copies,
    largest_batch,
    max_batch,
    usable_memory,
    weight_bytes,
)
from llmcourse.replica.model import (
    Replica,
    SpeculativeReplica,
    cost_per_million,
    replica,
    speculative_replica,
)
from llmcourse.replica.parallel import (
    Layout,
    allreduce_latency,
    decode_comm_time,
    layout,
    pipeline_send_time,
    prefill_comm_time,
)
from llmcourse.replica.prefill import (
    Prefill,
    prefill,
)
from llmcourse.replica.speculative import (
    Speculation,
    SpeculativeStep,
    expected_tokens,
    speculative_memory,
    speculative_step,
)
from llmcourse.replica.step import (
    DecodeStep,
    decode_step,
    matmul_precision,
    weights_read_per_step,
)

__all__ = [
    "DecodeStep",
    "Layout",
    "Prefill",
    "Replica",
    "Speculation",
    "SpeculativeReplica",
    "SpeculativeStep",
    "allreduce_latency",
    "cost_per_million",
    "decode_comm_time",
    "decode_step",
    "expected_tokens",
    "gpu_of",
    "gpus_for_weights",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token",
    "kv_copies",
    "largest_batch",
    "layout",
    "matmul_precision",
    "max_batch",
    "model_of",
    "pipeline_send_time",
    "prefill",
    "prefill_comm_time",
    "replica",
    "speculative_memory",
    "speculative_replica",
    "speculative_step",
    "usable_memory",
    "weight_bytes",
    "weights_read_per_step",
]
