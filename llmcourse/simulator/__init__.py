"""The discrete-event simulation of a replica's queue (continuous batching, chunked prefill, prefix caching), its
closed forms, and sizing a fleet to percentiles.

One module per idea, each importing only those before it:

- :mod:`~llmcourse.simulator.service`: one replica's service times, tabulated once from the replica model
  (:func:`build_replica`, a :class:`ServiceModel`);
- :mod:`~llmcourse.simulator.workload`: the requests a run draws (lengths, arrivals, prefix-cache hits, prefill
  costs);
- :mod:`~llmcourse.simulator.events`: the discrete-event engine (admission by KV memory, prefill, decode) and how
  it schedules (:class:`Scheduler`: whole prompts or chunks, a prefix cache);
- :mod:`~llmcourse.simulator.fleet`: a fleet of replicas behind a router (:class:`Fleet`: random, least loaded,
  power of two, prefix-aware, ...);
- :mod:`~llmcourse.simulator.run`: :func:`simulate`, the front door, and what a run measured (:class:`SimResult`);
- :mod:`~llmcourse.simulator.closed_forms`: the averages-only estimate beside a run (:func:`closed_form`);
- :mod:`~llmcourse.simulator.sweep`: runs across loads (:func:`at_load`, :func:`load_sweep`, :func:`knee`);
- :mod:`~llmcourse.simulator.sizing`: the fewest replicas that meet percentile targets
  (:func:`size_to_percentiles`);
- :mod:`~llmcourse.simulator.pool`: a pool of servers that each serve one request at a time, first come first
  served (a disaggregated deployment's prefill pool: :func:`simulate_pool`, the M/D/c queue's waits).
"""

from llmcourse.simulator.closed_forms import ClosedForm, closed_form
from llmcourse.simulator.events import ENGINE_BUDGET, Scheduler
from llmcourse.simulator.fleet import ROUTERS, Fleet
from llmcourse.simulator.pool import PoolRun, simulate_pool
from llmcourse.simulator.run import PERCENTILES, SimResult, simulate
from llmcourse.simulator.service import ServiceModel, build_replica, engine_chunk_tokens
from llmcourse.simulator.sizing import PercentileSizing, SizingRun, size_to_percentiles
from llmcourse.simulator.sweep import at_load, knee, load_sweep
from llmcourse.simulator.workload import LENGTH_CV, prompt_lengths
from llmcourse.stats import percentile
from llmcourse.units import percentile_rank

__all__ = [
    "ENGINE_BUDGET",
    "LENGTH_CV",
    "PERCENTILES",
    "ROUTERS",
    "ClosedForm",
    "Fleet",
    "PercentileSizing",
    "PoolRun",
    "Scheduler",
    "ServiceModel",
    "SimResult",
    "SizingRun",
    "at_load",
    "build_replica",
    "closed_form",
    "engine_chunk_tokens",
    "knee",
    "load_sweep",
    "percentile",
    "percentile_rank",
    "prompt_lengths",
    "simulate",
    "simulate_pool",
    "size_to_percentiles",
]
