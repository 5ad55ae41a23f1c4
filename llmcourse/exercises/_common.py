"""Shared pieces of the exercise definitions: catalog choices that keep every variant feasible."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from llmcourse.exercises.engine import Exercise, register

#: Dense models with grouped-query attention and no sliding window.
GQA_MODELS = ("Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-7B", "Qwen2.5-72B", "Llama-2-70B", "Llama-3.1-405B")
#: Dense models small enough for one 80 GB GPU in BF16.
SMALL_MODELS = ("Llama-3.1-8B", "Qwen2.5-7B", "Llama-2-7B")
#: Data-centre GPUs with 80 GB or more.
BIG_GPUS = ("H100 SXM", "H200 SXM", "B200", "MI300X", "A100 SXM 80GB")
CONTEXTS = (1_024, 2_048, 2_300, 3_000, 4_096, 8_192)


def pick(r: random.Random, options: Any) -> Any:
    """One of ``options`` (a sequence), drawn with ``r``."""
    return r.choice(list(options))


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
