"""What the interview track's computed figures share: the sources' assumptions, the system-design
lesson's 70B model, the full-memory read time, and rates and shares as plain numbers for prose.

Used by the worked answers (:mod:`llmcourse.interview.worked` and its siblings) and by the sheet of
numbers (:mod:`llmcourse.interview.numbers_sheet`).

Examples
--------
>>> from llmcourse.units import Q_
>>> per_s(Q_(20, "ms")), pct(0.7)
(50.0, 70.0)
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model, gpus, models
from llmcourse.formulas import FORMULAS as F
from llmcourse.replica.model import replica
from llmcourse.units import Q_

__all__ = [
    "CAPACITY",
    "COURSE",
    "ENVELOPE",
    "LAB",
    "PEAK_FACTOR",
    "draw",
    "pct",
    "per_gpu_rate",
    "per_s",
    "read_time",
    "seed004_model",
]

#: The assumptions the worked answers use (see :mod:`llmcourse.assumptions`): each source's own
#: method where a question reproduces its worked example, the course's (``None``) elsewhere.
ENVELOPE, LAB, CAPACITY, COURSE = "envelope", "lab", "capacity", None

#: The bank's peak hour over the daily mean, a given of its traffic questions (the support assistant's "the
#: peak is three times the average"); a fleet is sized on the peak, with the assumptions' headroom on top.
PEAK_FACTOR = 3


def seed004_model() -> Model:
    """The system-design lesson's "70B-class model": 70 billion parameters, 80 layers, 64 query
    heads, 8 KV heads (source 004).

    Examples
    --------
    >>> m = seed004_model()
    >>> m.name, m.params, m.layers
    ('70B-class', 70000000000.0, 80)
    """
    return models["Llama-3.1-70B"].with_(name="70B-class", params=70e9, active_params=70e9)


def read_time(
    memory: pint.Quantity, gpu: GPU | str, n_gpus: int = 1, *, assumptions: Assumptions | str | None = None
) -> pint.Quantity:
    """Time to read ``memory`` bytes once at the assumptions' share of the bandwidth (the step of a
    GPU whose batch fills its usable memory).

    Examples
    --------
    >>> round(read_time(Q_(67, "GB"), "H100 SXM", assumptions=ENVELOPE).m, 1)
    20.0
    """
    g = gpus[gpu] if isinstance(gpu, str) else gpu
    return F["weight_read_time"](
        weights=memory,
        n_gpus=n_gpus,
        bandwidth=g.bandwidth,
        bandwidth_efficiency=resolve(assumptions).bandwidth_efficiency,
    ).to("ms")


def per_s(rate: pint.Quantity) -> float:
    """A rate (or the inverse of a step time) as a plain number per second.

    Examples
    --------
    >>> per_s(Q_(3, "1/ms")), per_s(Q_(0.5, "s"))
    (3000.0, 2.0)
    """
    q = rate if rate.dimensionality == Q_(1, "1/s").dimensionality else 1 / rate
    return float(q.to("1/s").m)


def pct(share: float) -> float:
    """A share as a percentage for prose (seven tenths -> 70).

    Examples
    --------
    >>> pct(0.25)
    25.0
    """
    return 100 * share


def draw(variant: int, **choices: tuple[Any, Sequence[Any]]) -> dict[str, Any]:
    """The givens of a question's ``variant``: each name's book value for variant 0, else one of its
    alternatives, drawn from the catalog lists given, the same for the same variant and name (so the
    questions of a chain, drawing with the same names, share their givens).

    Examples
    --------
    >>> draw(0, gpu=("H100 SXM", ["H200 SXM", "B200"]))
    {'gpu': 'H100 SXM'}
    >>> draw(7, gpu=("H100 SXM", ["H200 SXM", "B200"])) == draw(7, gpu=("H100 SXM", ["H200 SXM", "B200"]))
    True
    """
    if variant == 0:
        return {k: book for k, (book, _) in choices.items()}
    return {k: random.Random(f"{variant}|{k}").choice(list(alts)) for k, (_, alts) in choices.items()}


def per_gpu_rate(model: str, n_gpus: int, weights: str, prompt_tokens: int, answer_tokens: int) -> float:
    """Answer tokens per second one H100 makes as its share of a replica of ``n_gpus`` at full load, by the
    course's method: what "a GPU makes about 2,000 tokens/s" means for a given model.

    Examples
    --------
    >>> per_gpu_rate("Llama-3.1-8B", 1, "bf16", 1_000, 1_250) > per_gpu_rate("Llama-3.1-70B", 2, "fp8", 1_000, 1_250)
    True
    """
    r = replica(
        model,
        "H100 SXM",
        tensor_parallel=n_gpus,
        weight_bytes=weights,
        prompt_tokens=prompt_tokens,
        answer_tokens=answer_tokens,
        assumptions=COURSE,
    )
    return per_s(r.throughput) / n_gpus
