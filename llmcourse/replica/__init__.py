"""THE model of one replica: a model on GPUs serving a batch, and every figure of it.

One floor above the catalog, the formulas and the assumptions; everything above (the planner, the simulator,
validation, widgets, exercises) asks it. Its modules, each building on those before it:

* :mod:`~llmcourse.replica.base` - catalog look-ups, plain-number conversions, checks, a figure of one's own;
* :mod:`~llmcourse.replica.deployment` - a :class:`Deployment` (what runs where) and a :class:`Workload` (what it
  serves): the two objects the edge builds from its keywords and everything inside takes;
* :mod:`~llmcourse.replica.setups` - the kept set-ups of replicas and decode steps;
* :mod:`~llmcourse.replica.memory` - weights, KV cache, usable memory, the largest batch;
* :mod:`~llmcourse.replica.parallel` - a replica's shape over GPUs and what its GPUs pay to talk;
* :mod:`~llmcourse.replica.step` - the decode step;
* :mod:`~llmcourse.replica.prefilling` - prefill;
* :mod:`~llmcourse.replica.speculative` - a draft and its verification cycle;
* :mod:`~llmcourse.replica.acceptance` - the published acceptance figures and the rates they imply;
* :mod:`~llmcourse.replica.model` - :func:`replica`, the one front door (plain or speculative), and the set-up of
  a replica at every batch (:class:`ReplicaSetup`: :func:`replica_setup` from replica()'s keywords, :func:`setup_of`
  from the objects), the float fast paths a batch search and the live calculators ask.
"""

from llmcourse.replica.base import (
    check_positions,
    gpu_of,
    model_of,
    own_quantity,
    price_of,
)
from llmcourse.replica.deployment import Deployment, Workload
from llmcourse.replica.memory import (
    check_weights_fit,
    gpus_for_weights,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    kv_copies,
    largest_batch,
    largest_within,
    max_batch,
    usable_memory,
    weight_bytes,
)
from llmcourse.replica.model import (
    Replica,
    ReplicaSetup,
    SpeculativeReplica,
    SpeculativeSetup,
    cost_per_million,
    replica,
    replica_setup,
    setup_of,
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
from llmcourse.replica.prefilling import (
    Prefill,
    prefill,
)
from llmcourse.replica.scheduler import EngineSettings
from llmcourse.replica.setups import set_ups_aside
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
    decode_steps,
    matmul_precision,
    weights_read_per_step,
)

__all__ = [
    "DecodeStep",
    "Deployment",
    "EngineSettings",
    "Layout",
    "Prefill",
    "Replica",
    "ReplicaSetup",
    "Speculation",
    "SpeculativeReplica",
    "SpeculativeSetup",
    "SpeculativeStep",
    "Workload",
    "allreduce_latency",
    "check_positions",
    "check_weights_fit",
    "cost_per_million",
    "decode_comm_time",
    "decode_step",
    "decode_steps",
    "expected_tokens",
    "gpu_of",
    "gpus_for_weights",
    "kv_bytes_per_sequence",
    "kv_bytes_per_token",
    "kv_copies",
    "largest_batch",
    "largest_within",
    "layout",
    "matmul_precision",
    "max_batch",
    "model_of",
    "own_quantity",
    "pipeline_send_time",
    "prefill",
    "prefill_comm_time",
    "price_of",
    "replica",
    "replica_setup",
    "set_ups_aside",
    "setup_of",
    "speculative_memory",
    "speculative_replica",
    "speculative_step",
    "usable_memory",
    "weight_bytes",
    "weights_read_per_step",
]
