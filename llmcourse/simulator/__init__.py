"""The discrete-event simulation of a replica's queue (continuous batching, chunked prefill, prefix caching), its
closed forms, and sizing a fleet to percentiles."""

from llmcourse.simulator.queueing import (
    LENGTH_CV,
    PERCENTILES,
    ClosedForm,
    PercentileSizing,
    ServiceModel,
    SimResult,
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
    "PERCENTILES",
    "ClosedForm",
    "PercentileSizing",
    "ServiceModel",
    "SimResult",
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
