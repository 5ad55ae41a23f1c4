"""Shared pieces of the exercise definitions: catalog choices that keep every variant feasible, and the
methods' assumptions as a story states them.

Every figure an exercise's story gives about a method (a share of memory, of the bandwidth, of the FLOP/s, a
headroom) is formatted from the preset the exercise's answer uses, never typed: ``pct(lc.resolve("capacity")
.headroom_fraction)`` is "30%".
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Iterable
from typing import Any

import llmcourse as lc
from llmcourse.exercises.engine import Exercise, register

#: The methods the exercises use: the course's (the default of every estimate) and the sources' presets that an
#: exercise reproducing a source's worked example names.
COURSE = lc.resolve()
ENVELOPE = lc.resolve("envelope")
LAB = lc.resolve("lab")
CAPACITY = lc.resolve("capacity")

#: Dense models with grouped-query attention and no sliding window.
GQA_MODELS = ("Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-7B", "Qwen2.5-72B", "Llama-2-70B", "Llama-3.1-405B")
#: Dense models small enough for one 80 GB GPU in BF16.
SMALL_MODELS = ("Llama-3.1-8B", "Qwen2.5-7B", "Llama-2-7B")
#: Data-centre GPUs with 80 GB or more.
BIG_GPUS = ("H100 SXM", "H200 SXM", "B200", "MI300X", "A100 SXM 80GB")
CONTEXTS = (1_024, 2_048, 2_300, 3_000, 4_096, 8_192)


def pct(share: float) -> str:
    """A share as a story prints it: ``pct(0.25)`` is ``"25%"``."""
    return f"{share:.0%}"


#: The course's floor of each layer's kernels in a forward pass, as the stories state it (``layer_floor_us``,
#: formula ``layer_floor_time``).
FLOOR = f"{COURSE.layer_floor_us:g} µs"
#: The course's all-reduce, as the stories state it: what the engines run (chapter Many GPUs,
#: ``replica.parallel.allreduce_seconds``).
ENGINE_ALLREDUCE = (
    "each the engines' fastest kernel (chapter *Many GPUs*): on a link whose GPUs read each other's memory "
    "(NVLink, Infinity Fabric: lc.links[...].peer_kernels) the least of the one-shot "
    f"({COURSE.engine_allreduce_us:g} µs + one link latency + (N - 1) x the message over the link), the two-shot "
    f"(2 x ({COURSE.engine_allreduce_us:g} µs + one latency) + 2(N - 1)/N x the message) and the ring, on other "
    f"links the ring, the bytes at {pct(COURSE.link_efficiency)} of the link"
)


def pick(r: random.Random, options: Any) -> Any:
    """One of ``options`` (a sequence), drawn with ``r``."""
    return r.choice(options if isinstance(options, range | tuple | list) else list(options))


def fp8_ok(precision: str, gpu: str) -> bool:
    """Whether a variant may store weights in ``precision`` on ``gpu``: FP8 only where the GPU computes in FP8."""
    return precision != "fp8" or lc.matmul_precision("fp8", gpu, COURSE) == "fp8"


def pool(build: Callable[[], Iterable[Any]]) -> Callable[[], tuple[Any, ...]]:
    """A pool of variant choices built from the catalog on first use (not at import), then kept: ``pick(r,
    SETUPS())``. Building it from the catalog and a fit rule keeps every choice physically possible."""
    return functools.cache(lambda: tuple(build()))


class Story(str):
    """A story that also states catalog figures of its givens: ``Story(template, figures)`` formats ``template``
    over the variant's keys and the keys that ``figures(givens)`` adds (a model's parameters, a GPU's memory), so
    that every variant's story gives its own model's and GPU's figures while the variant holds only what is drawn.
    ``figures`` gets the givens as the story shows them: names as they are, numbers as printed (``"2,400"``).

    Examples
    --------
    >>> s = Story("One {gpu} has {memory}.", lambda v: dict(memory=f"{lc.gpus[v['gpu']].memory:~P}"))
    >>> s.format(gpu="L4")
    'One L4 has 24 GB.'
    """

    figures: Callable[[dict[str, Any]], dict[str, Any]]

    def __new__(cls, template: str, figures: Callable[[dict[str, Any]], dict[str, Any]]) -> Story:
        story = super().__new__(cls, template)
        story.figures = figures
        return story

    def format(self, *args: Any, **givens: Any) -> str:  # type: ignore[override]
        return str.format(self, *args, **(self.figures(givens) | givens))  # a given drawn wins over a figure


def whole(shown: Any) -> int:
    """A whole number as a story shows it (``"2,400"``) or as drawn (``2400``), back as an int (for :class:`Story`)."""
    return int(str(shown).replace(",", ""))


def define(
    items: list[Exercise],
    id: str,
    title: str,
    story: str,
    unit: str,
    default: dict[str, Any],
    vary: Callable[[random.Random], dict[str, Any]],
    answer: Callable[[dict[str, Any]], Any],
    hints: tuple[str, ...],
    **kw: Any,
) -> Exercise:
    """Build an exercise, register it and add it to the chapter's list."""
    ex = Exercise(
        id=id, title=title, story=story, unit=unit, default=default, vary=vary, answer=answer, hints=hints, **kw
    )
    register(ex)
    items.append(ex)
    return ex
