"""The discrete-event simulation of a replica's queue (continuous batching, chunked prefill, prefix caching), its
closed forms, and sizing a fleet to percentiles."""

from llmcourse.simulator.queueing import (
    LENGTH_CV,
    MEASURED_SETUPS,
    PERCENTILES,
    ClosedForm,
    LoopPoint,
    PercentileSizing,
    ServiceModel,
    SimResult,
    against_measured,
    at_load,
    build_replica,
    closed_form,
    knee,
    load_sweep,
    percentile,
    percentile_rank,
    simulate,
    size_to_percentiles,
)

__all__ = [
    "LENGTH_CV",
    "MEASURED_SETUPS",
    "PERCENTILES",
    "ClosedForm",
    "LoopPoint",
    "PercentileSizing",
    "ServiceModel",
    "SimResult",
    "against_measured",
    "at_load",
    "build_replica",
    "closed_form",
    "knee",
    "load_sweep",
    "percentile",
    "percentile_rank",
    "simulate",
    "size_to_percentiles",
]
