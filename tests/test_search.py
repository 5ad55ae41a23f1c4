"""The planner's batch search by interpolation (replica.largest_within) finds the batch a scan of every batch
finds, and the set-up that several callers share (replica.replica_setup) takes replica()'s arguments and gives its
replicas."""

from __future__ import annotations

import inspect
import random

import pytest

from llmcourse.replica.memory import largest_within
from llmcourse.replica.model import replica, replica_setup


def _scan(value, target, top):
    """The largest batch in 1..top whose value is within the target, by trying every batch (0 if none)."""
    return max((b for b in range(1, top + 1) if value(b) <= target), default=0)


@pytest.mark.parametrize("seed", range(40))
def test_largest_within_matches_a_scan(seed):
    rng = random.Random(seed)
    top = rng.choice([1, 2, 3, 7, 64, 300, 4_096])
    fixed, per = rng.uniform(1, 30), rng.uniform(0.001, 2)
    knee, steep = rng.randint(1, top), rng.uniform(1, 20)  # a kink: memory-bound, then compute-bound
    ceil_of = rng.choice([1, 2, 4])  # pipeline stages: a step per micro-batch of ceil(b / stages)

    def value(b):
        n = -(-b // ceil_of)
        return fixed + per * n + (steep * per * (n - knee) if n > knee else 0.0)

    for target in (fixed / 2, fixed + per, value(max(1, top // 3)) + 1e-9, value(top), value(top) * 2):
        assert largest_within(value, target, top) == _scan(value, target, top)


def test_largest_within_asks_few_batches_of_a_line():
    asked = []
    step = lambda b: asked.append(b) or 8.0 + 0.25 * b  # noqa: E731  40 ms at a batch of 128
    assert largest_within(step, 40.0, 2_048) == 128
    assert len(asked) <= 4


def test_replica_setup_takes_replicas_arguments_but_the_batch():
    at = list(inspect.signature(replica_setup).parameters.values())
    whole = [p for p in inspect.signature(replica).parameters.values() if p.name != "batch"]
    assert at == whole


@pytest.mark.parametrize("batch", [None, 1, 17])
def test_replica_setup_gives_replicas_replica(batch):
    kw = dict(tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300, weight_bytes="fp8")
    setup = replica_setup("Llama-3.1-70B", "H100 SXM", **kw)
    assert setup.at(batch) == setup(batch) == replica("Llama-3.1-70B", "H100 SXM", batch=batch, **kw)


def test_replica_setup_takes_replica_s_arguments_but_the_batch():
    """replica.replica_setup (replica()'s set-up, done once for many batches) mirrors replica()'s signature less
    ``batch``, so the same arguments get the same checks: a parameter added to replica() must be added there too."""
    import inspect

    from llmcourse.replica.model import replica, replica_setup

    mine = list(inspect.signature(replica_setup).parameters.values())
    theirs = [p for p in inspect.signature(replica).parameters.values() if p.name != "batch"]
    assert mine == theirs
