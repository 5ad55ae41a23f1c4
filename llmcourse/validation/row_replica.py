"""The one replica model of a measured row: its GPUs, precisions, lengths, engine and layout as
:func:`~llmcourse.replica.model.replica_setup` takes them (:func:`replica_keywords`), the replica a prediction runs
(:func:`setup_replica`), and the rows whose runs set their engine's memory share by hand (:func:`hand_set_share`).
:mod:`llmcourse.validation.prediction` predicts from it."""

from __future__ import annotations

from typing import Any

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.replica.model import Replica, replica_setup
from llmcourse.replica.scheduler import engine_name, scheduler_of
from llmcourse.validation.llama_bench import is_llama_bench_load
from llmcourse.validation.measured import Measurement, layout_gap, layout_keywords

__all__ = [
    "NO_CAP",
    "SEPARATE_PREFILL_ENGINES",
    "SHARE_SETTING_ENGINES",
    "hand_set_share",
    "holds",
    "replica_keywords",
    "row_engine",
    "separate_prefill",
    "setup_replica",
    "whole_memory",
]


#: The cap on running requests of a published table's maximum-throughput run: none (the run set its engine's cap to
#: what fits, as such benchmarks do), only the KV cache decides; on vLLM, its step budget (vLLM refuses a cap above it).
NO_CAP = 1_000_000


def row_engine(row: Measurement) -> str | None:
    """The engine a row ran on, as :mod:`llmcourse.replica.scheduler` names it (None: one it does not know, run as
    the default engine)."""
    try:
        return engine_name(row.engine.split(" ")[0])
    except (InputError, UnknownNameError):  # "-", a fork or an engine the catalog lacks: the default engine
        return None


def replica_keywords(row: Measurement, a: Assumptions) -> dict[str, Any]:
    """The keywords of :func:`~llmcourse.replica.model.replica_setup` for a row: its GPUs, precisions, lengths,
    engine and layout, and the engine's cap on running requests where the row's load sets it."""
    gap = layout_gap(row)
    if gap is not None:
        raise InputError(f"row {row.id}: {gap}")
    kw = dict(
        tensor_parallel=row.tp, prompt_tokens=row.isl, answer_tokens=row.osl, weight_bytes=row.weights,
        kv_bytes=row.kv, assumptions=a, engine=row_engine(row), **layout_keywords(row),
    )  # fmt: skip
    # the run's launcher set it (inferred: an SGLang server with --enable-mixed-chunk)
    if row.mixed_prefill is not None:
        kw["mixed_prefill"] = row.mixed_prefill
    if kw["engine"] == "llama.cpp" and is_llama_bench_load(row.load):
        kw["max_running"] = 1  # llama-bench runs one sequence: one sliding window, not llama-server's four slots'
    if row.load_kind != "concurrency":  # a published maximum ran the engine at what fits (its cap set for the run)
        # vLLM will not start with more running requests than its step budget (max_num_seqs <= max_num_batched_tokens)
        default = scheduler_of(kw["engine"], row.gpu)
        kw["max_running"] = default.token_budget if default.engine == "vLLM" else NO_CAP
    return kw


def holds(top: Replica) -> bool:
    """Whether a replica's largest batch is at least one request (its weights and one request fit)."""
    return top.step is not None and top.max_batch >= 1


def setup_replica(row: Measurement, a: Assumptions) -> tuple[Any, Replica]:
    """The one replica model of a row: its GPUs, precisions, lengths and engine; a batch of 1 at a fixed
    request rate, the concurrency in a closed loop (or, when more requests are in flight than the engine runs at
    once, what it runs: the rest wait, :func:`running`), otherwise the largest batch that fits; the whole memory
    where the run must have set its engine's share by hand (:func:`hand_set_share`). Refused only when one request
    alone cannot fit."""
    batch = {"online_rate": 1, "concurrency": row.concurrency}.get(row.load_kind)
    kw = replica_keywords(row, a)
    setup = replica_setup(row.model, row.gpu, **kw)
    top = setup.at(None)
    if not holds(top):
        setup, top = _lent_whole(row, a, kw) or (setup, top)
    if not holds(top):
        raise InputError(f"row {row.id}: {top.reason}")
    r = setup.at(None if batch is None else min(batch, top.max_batch))
    if not r.fits:
        raise InputError(f"row {row.id}: {r.reason}")
    return setup, r


#: The engines whose memory share is a launch setting (vLLM's ``--gpu-memory-utilization``, SGLang's
#: ``--mem-fraction-static``, TensorRT-LLM's ``free_gpu_memory_fraction``); llama.cpp's is not a share (a model
#: that does not fit is partly run on the CPU, another speed altogether).
SHARE_SETTING_ENGINES = ("vLLM", "SGLang", "TensorRT-LLM")


def whole_memory(a: Assumptions) -> Assumptions:
    """The assumptions with all of the GPUs' memory lent to the weights and the KV cache, the datasheet's figure read
    in binary units as engines count memory (a "180 GB" B200 as 180 GiB; its driver reports 183,359 MiB, 179 GiB):
    an upper bound on what a run can lend them, which no engine reaches (activations and CUDA graphs take some)."""
    return a.replace(memory_rule="total", memory_fraction=1.0, memory_unit="GiB")


def hand_set_share(row: Measurement, assumptions: Assumptions | str | None = None) -> bool:
    """Whether ``row`` ran where its engine's default memory share holds less than the row's weights and one
    request, but the GPUs' whole memory holds them: the run must have set the share by hand (a launch setting the
    rows do not record), and :func:`predict` lends the replica the whole memory (:func:`whole_memory`, an upper bound
    on what the run lent: it assumes the share held every request the row kept in flight, where it could). The share
    changes how many requests fit, not a step's time; requests in flight beyond what the whole memory holds wait, as in
    any row. Only under the course's memory rule ``"engine"``, for an engine whose share is a setting
    (:data:`SHARE_SETTING_ENGINES`); False for a row no engine can run (a layout :func:`predict` refuses).

    Examples
    --------
    >>> from llmcourse.validation import measurements
    >>> hand_set_share(measurements()[7])  # it fits under TensorRT-LLM's own rule
    False
    """
    a = resolve(assumptions)
    try:
        kw = replica_keywords(row, a)
        return not holds(replica_setup(row.model, row.gpu, **kw).at(None)) and _lent_whole(row, a, kw) is not None
    except InputError:  # a layout no engine runs (predict says why)
        return False


def _lent_whole(row: Measurement, a: Assumptions, kw: dict[str, Any]) -> tuple[Any, Replica] | None:
    """The row's replica set up with the whole memory (:func:`whole_memory`) and its largest batch, where the row's
    engine's share is a setting (under the memory rule ``"engine"``) and the whole memory holds the weights and one
    request; else None (also where the whole memory's replica is refused). ``kw``: the row's :func:`replica_keywords`."""
    if a.memory_rule != "engine" or scheduler_of(kw["engine"], row.gpu).engine not in SHARE_SETTING_ENGINES:
        return None
    try:
        setup = replica_setup(row.model, row.gpu, **{**kw, "assumptions": whole_memory(a)})
        top = setup.at(None)
    except InputError:
        return None
    return (setup, top) if holds(top) else None


#: The engines that run each prefill batch on its own by default, between decode steps, so that every decoding request
#: waits each prefill whole: a closed loop's waves stay whole (wave share 1, not fitted). SGLang: chunked prefill, but
#: its mixed chunks are off unless ``--enable-mixed-chunk``. vLLM and TensorRT-LLM put prefill chunks into the decode
#: steps (in-flight batching).
SEPARATE_PREFILL_ENGINES = ("SGLang",)


def separate_prefill(row: Measurement) -> bool:
    """Whether a row's engine ran its prefill batches on their own: an engine of :data:`SEPARATE_PREFILL_ENGINES`,
    unless the run mixed prompt chunks into its decode steps (``row.mixed_prefill``)."""
    return row.engine.split(" ")[0] in SEPARATE_PREFILL_ENGINES and row.mixed_prefill is not True
