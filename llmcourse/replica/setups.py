"""The kept set-ups of replicas and decode steps, by their inputs (most recently used, bounded, thread-safe)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from llmcourse.assumptions import Assumptions
from llmcourse.catalog import Model
from llmcourse.replica.deployment import Deployment, Workload
from llmcourse.units import (
    Q_,
)

#: The replicas (and decode steps) set up, by their kind and inputs (:func:`set_up_key`), the least recently used
#: first: a calculator asks for the same few replicas at every update (the design review's five plans, the many-GPUs
#: chart's bars), and most controls (the request rate, a target, the batch) change none of them. Bounded: the least
#: recently used set-up goes first. Its reads and writes hold :data:`_SETUPS_LOCK` (a set-up itself is made outside
#: it: two threads asking for a new one at once may both make it, and get equal figures).
_SETUPS: dict[tuple, tuple[tuple, Any]] = {}


_SETUPS_KEPT = 256


_SETUPS_LOCK = threading.Lock()


def _setup_key(value: Any) -> Any:
    """``value`` as a part of a :data:`_SETUPS` key: equal keys for inputs that give the same replica, to the same
    floats and types. Numbers with their type (4_000 and 4_000.0 print differently); a quantity of a plain number by
    its magnitude and units (pint hashes a quantity slowly; an array's magnitude is not hashable); a model or
    assumptions by every field with its type (frozen dataclasses of plain fields, so ``Model.with_`` gives an equal
    key; a model's aliases count, though its equality leaves them out; 1 and 1.0 in a field are different keys, as
    such numbers are: a replica holds the model and the assumptions it was set up with, and a caller must get back
    what it gave); a :class:`~llmcourse.replica.deployment.Deployment` or a
    :class:`~llmcourse.replica.deployment.Workload` by the keys of its fields (a workload's but its batch: a set-up
    serves every batch); anything else (a catalog GPU or link: frozen, and slow to hash by value) by identity (the
    inputs are kept beside the set-up, so that an id is not reused while it is kept)."""
    t = type(value)
    if value is None or t is str:
        return value
    if t in (int, float, bool):
        return (t, value)
    if t is Q_ and type(value._magnitude) in (int, float):
        return (Q_, type(value._magnitude), value._magnitude, value._units)
    if t is Model or t is Assumptions:
        fields = tuple(value.__dict__.values())
        return (t, fields, tuple(map(type, fields)))
    if t is Deployment:
        return (t, *map(_setup_key, value.__dict__.values()))
    if t is Workload:
        return (t, *map(_setup_key, (value.prompt_tokens, value.answer_tokens, value.context_tokens,
                                     value.cached_prompt_tokens)))  # fmt: skip
    return (object, id(value))


def set_up_key(kind: Any, inputs: tuple) -> tuple:
    """The :data:`_SETUPS` key of the set-up ``kind`` (a class, or a name) of ``inputs`` (given by position: a
    deployment, a workload, the assumptions, ...)."""
    return (kind, *map(_setup_key, inputs))


def kept_set_up(key: tuple) -> Any:
    """The set-up kept under ``key`` (:func:`set_up_key`), made the most recently used, or None. A caller asks here, and
    if it gets None makes the set-up itself and gives it to :func:`keep_set_up`: the store never calls back into the
    modules that keep their set-ups in it (the same inputs give the kept set-up; an input that is refused is refused
    each time, as no exception is kept). A kept set-up is shared: what it returns must be built anew at each call."""
    with _SETUPS_LOCK:
        got = _SETUPS.pop(key, None)
        if got is None:
            return None
        _SETUPS[key] = got  # the most recently used, last
        return got[1]


def keep_set_up(key: tuple, inputs: tuple, set_up: Any) -> Any:
    """Keep ``set_up`` (of ``inputs``) under ``key``, the least recently used set-up going when the store is full;
    ``set_up`` itself back. The inputs are kept beside it, so that an id in the key is not reused while it is kept."""
    with _SETUPS_LOCK:
        while len(_SETUPS) >= _SETUPS_KEPT:  # the least recently used goes
            _SETUPS.pop(next(iter(_SETUPS)))
        _SETUPS[key] = (inputs, set_up)
    return set_up


@contextlib.contextmanager
def set_ups_aside() -> Iterator[None]:
    """Within the block, no set-up is kept from before and none made in it is kept after: the planner's whole path,
    as a new input takes it (the live warm-up; tests comparing kept set-ups with fresh ones). It swaps the
    process's one store: not for blocks on several threads at once (one would put back another's).

    Examples
    --------
    >>> from llmcourse.replica.model import replica
    >>> with set_ups_aside():
    ...     fresh = replica("Llama-3.1-8B", "H100 SXM", batch=4, prompt_tokens=1_000, answer_tokens=100)
    >>> fresh == replica("Llama-3.1-8B", "H100 SXM", batch=4, prompt_tokens=1_000, answer_tokens=100)
    True
    """
    global _SETUPS
    with _SETUPS_LOCK:
        kept, _SETUPS = _SETUPS, {}
    try:
        yield
    finally:
        with _SETUPS_LOCK:
            _SETUPS = kept
