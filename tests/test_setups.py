"""The replica set-ups the planner keeps (setups._SETUPS): a kept set-up gives what a fresh one gives.

A calculator asks for the same few replicas at every update, so ``replica_model.setup_of`` keeps each set-up (the
layout, the memory, the largest batch, the decode step and prefill as functions of the batch, and the times per
token a batch search has asked) by its inputs. These tests check that keeping changes no figure: a plan or a
replica worked out on kept set-ups equals the one worked out with none kept, whatever was asked before.
"""

from __future__ import annotations

import dataclasses
import sys
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcourse.assumptions import resolve
from llmcourse.catalog import gpus, models
from llmcourse.errors import InputError
from llmcourse.planner.design import Brief, plan
from llmcourse.replica import model as replica_model
from llmcourse.replica import setups
from llmcourse.replica import step as replica_step
from llmcourse.replica.model import replica
from llmcourse.replica.setups import _setup_key
from llmcourse.units import Q_

MODELS = ["Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-72B", "Mixtral-8x7B"]
GPUS = ["H100 SXM", "A100 80GB", "H200"]


def fresh(f):
    """``f()`` with no set-up kept (the planner's own path, uncached), the kept ones put back after."""
    with setups.set_ups_aside():
        return f()


def _outcome(f):
    """What ``f()`` gives: its value, or the type and message of the input error it raises."""
    try:
        return f()
    except InputError as exc:
        return (type(exc), str(exc))


def _brief(prompt, answer, tpot_ms, rate=10.0):
    return Brief(rate, prompt, answer, Q_(2_000, "ms"), Q_(tpot_ms, "ms"))


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    gpu=st.sampled_from(GPUS),
    tp=st.sampled_from([1, 2, 4, 8]),
    prompt=st.integers(100, 6_000),
    answer=st.integers(10, 1_500),
    targets=st.lists(st.floats(5, 200), min_size=2, max_size=4),
    weights=st.sampled_from(["bf16", "fp8", "int4"]),
    rate=st.floats(0.1, 500),
)
def test_a_plan_on_kept_set_ups_is_the_fresh_plan(model, gpu, tp, prompt, answer, targets, weights, rate):
    """Plans against several per-token targets (a slider dragged), one after another on the same kept set-up,
    each equal to the plan worked out with nothing kept (or refused alike)."""
    kw = dict(tensor_parallel=tp, weight_bytes=weights)
    for target in targets:
        brief = _brief(prompt, answer, target, rate)
        kept = _outcome(lambda: plan(model, gpu, brief, **kw))  # noqa: B023
        assert kept == fresh(lambda: _outcome(lambda: plan(model, gpu, brief, **kw)))  # noqa: B023


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from([*MODELS, "Qwen3-30B-A3B"]),
    gpu=st.sampled_from(GPUS),
    tp=st.sampled_from([1, 2, 4]),
    kv=st.sampled_from([2, "fp8", "int8", 1.5]),
    method=st.sampled_from(["course", "envelope", "planner", "capacity", "lab"]),
    lengths=st.sampled_from([(2_000, 300, None), (800, 1_200, None), (None, None, 3_000)]),
    cached=st.sampled_from([0, 0.0, 500]),
    link=st.sampled_from([None, "PCIe 5 x16", "NVLink 4"]),
    batches=st.lists(st.integers(1, 400), min_size=2, max_size=4),
)
def test_a_replica_on_a_kept_set_up_is_the_fresh_replica(model, gpu, tp, kv, method, lengths, cached, link, batches):
    """Replicas of one set-up at several batches (a concurrency slider), each equal to the one worked out with
    nothing kept: across kv precisions, methods, prompt and answer or a context alone, cached prompt tokens, links."""
    prompt, answer, context = lengths
    kw = dict(tensor_parallel=tp, kv_bytes=kv, assumptions=method, link=link, cached_prompt_tokens=cached)
    kw |= dict(prompt_tokens=prompt, answer_tokens=answer) if context is None else dict(context_tokens=context)
    for batch in batches:
        kept = _outcome(lambda: replica(model, gpu, batch=batch, **kw))  # noqa: B023
        assert kept == fresh(lambda: _outcome(lambda: replica(model, gpu, batch=batch, **kw)))  # noqa: B023


def test_the_set_up_is_kept_and_asked_again(monkeypatch):
    """The second of two equal calls finds the first's set-up (the tests above compare figures; this, that they
    compared a kept set-up, not two fresh ones)."""
    kw = dict(tensor_parallel=2, prompt_tokens=3_000, answer_tokens=500, weight_bytes="fp8")
    made = []

    class Counting(replica_model.ReplicaSetup):
        def __init__(self, *args):
            made.append(args)
            super().__init__(*args)

    def run():  # (within fresh: no set-up kept from before)
        monkeypatch.setattr(replica_model, "ReplicaSetup", Counting)
        try:
            return [replica("Llama-3.1-70B", "H100 SXM", batch=b, **kw) for b in (7, 40, 7)]
        finally:
            monkeypatch.undo()

    first, second, again = fresh(run)
    assert len(made) == 1 and first == again
    assert second == fresh(lambda: replica("Llama-3.1-70B", "H100 SXM", batch=40, **kw))


def test_keys_tell_apart_what_prints_apart():
    """Equal inputs that print differently, or differ where equality does not look, are different keys."""
    assert _setup_key(4_000) != _setup_key(4_000.0) and _setup_key(True) != _setup_key(1)
    assert _setup_key(Q_(2, "USD/hour")) != _setup_key(Q_(2.0, "USD/hour"))
    assert _setup_key(Q_(2.0, "USD/hour")) == _setup_key(Q_(2.0, "USD/hour"))  # two objects, one value
    assert _setup_key(Q_(2.0, "USD/hour")) != _setup_key(Q_(2.0, "USD/minute"))
    m = models["Llama-3.1-8B"]
    assert _setup_key(m) == _setup_key(m.with_(kv_heads=m.kv_heads))  # by value: Model.with_ keeps its set-ups
    assert _setup_key(m) != _setup_key(m.with_(aliases=("another name",)))  # aliases: not in its equality
    a = resolve("course")  # dataclasses.replace keeps the name (Assumptions.replace would name each apart)
    assert _setup_key(dataclasses.replace(a, headroom=2)) != _setup_key(dataclasses.replace(a, headroom=2.0))
    assert _setup_key(dataclasses.replace(a, headroom=2.0)) == _setup_key(dataclasses.replace(a, headroom=2.0))


def test_a_replica_holds_the_assumptions_it_was_given_to_the_types():
    kw = dict(batch=4, prompt_tokens=1_000, answer_tokens=100)
    for first, then in ((2, 2.0), (2.0, 2)):
        replica("Llama-3.1-8B", "H100 SXM", assumptions=dataclasses.replace(resolve("course"), headroom=first), **kw)
        got = replica(
            "Llama-3.1-8B", "H100 SXM", assumptions=dataclasses.replace(resolve("course"), headroom=then), **kw
        )
        assert type(got.assumptions.headroom) is type(then)


def test_a_quantity_of_an_array_is_keyed_by_identity():
    np = pytest.importorskip("numpy")
    price = Q_(np.array(2.0), "USD/hour")
    assert _setup_key(price) == (object, id(price))
    r = replica("Llama-3.1-8B", "H100 SXM", batch=4, prompt_tokens=1_000, answer_tokens=100, price_per_hour=price)
    assert r.price_per_hour.units == price.units and float(r.price_per_hour.magnitude) == 2.0


def test_equal_numbers_of_another_type_give_their_own_replica():
    kw = dict(batch=4, answer_tokens=300)
    for first, then in ((4_000, 4_000.0), (4_000.0, 4_000)):
        replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=first, **kw)
        got = replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=then, **kw)
        want = fresh(lambda: replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=then, **kw))  # noqa: B023
        assert got == want and type(got.prompt_tokens) is type(want.prompt_tokens)


def test_a_refused_input_is_refused_every_time():
    for _ in range(2):
        with pytest.raises(InputError, match="cached_prompt_tokens needs prompt_tokens"):
            replica(
                "Llama-3.1-8B",
                "H100 SXM",
                batch=4,
                context_tokens=4_000,
                cached_prompt_tokens=100,
                assumptions="envelope",
            )
    for _ in range(2):
        with pytest.raises(InputError):
            replica("Llama-3.1-70B", "H100 SXM", batch=4, tensor_parallel=3, prompt_tokens=1_000, answer_tokens=10)


def test_what_a_caller_changes_in_place_does_not_reach_the_next_caller():
    """pint changes a quantity in place (``ito``): each plan and replica from a kept set-up has its own."""
    brief = _brief(2_000, 300, 50)
    first = plan("Llama-3.1-8B", "H100 SXM", brief)
    for q in (first.weights, first.usable_memory, first.kv_per_request, first.replica.weights,
              first.replica.kv_per_sequence):  # fmt: skip
        q.ito("B")  # the same value, in another unit
    first.replica.first_prefill.time.ito("s")
    first.price_per_hour.ito("USD/minute")  # the catalog's price, as the plan was given it
    first.replica.price_per_hour.ito("USD/minute")
    again = plan("Llama-3.1-8B", "H100 SXM", brief)
    assert again.weights.units == Q_(1, "GB").units and again.replica.weights.units == Q_(1, "GB").units
    assert again.replica.first_prefill.time.units == Q_(1, "ms").units
    assert gpus["H100 SXM"].price_per_hour.units == Q_(1, "USD/hour").units
    assert again.price_per_hour.units == again.replica.price_per_hour.units == Q_(1, "USD/hour").units
    assert again == fresh(lambda: plan("Llama-3.1-8B", "H100 SXM", brief))
    kw = dict(batch=4, prompt_tokens=1_000, answer_tokens=100)
    mine = replica("Llama-3.1-8B", "H100 SXM", price_per_hour=Q_(3.0, "USD/hour"), **kw)
    mine.price_per_hour.ito("USD/minute")
    theirs = replica("Llama-3.1-8B", "H100 SXM", price_per_hour=Q_(3.0, "USD/hour"), **kw)  # an equal price: kept
    assert theirs.price_per_hour.units == Q_(1, "USD/hour").units


def test_a_plan_carries_its_own_price():
    """The set-up is kept across prices (no figure but the cost depends on one): each plan's replica has its own."""
    brief = _brief(2_000, 300, 50)
    cheap = plan("Llama-3.1-8B", "H100 SXM", brief, price_per_hour=Q_(1, "USD/hour"))
    dear = plan("Llama-3.1-8B", "H100 SXM", brief, price_per_hour=Q_(4, "USD/hour"))
    assert cheap.replica.price_per_hour == Q_(1, "USD/hour") and dear.replica.price_per_hour == Q_(4, "USD/hour")
    assert dear.cost_per_hour == 4 * cheap.cost_per_hour
    assert dear == fresh(lambda: plan("Llama-3.1-8B", "H100 SXM", brief, price_per_hour=Q_(4, "USD/hour")))
    catalog = plan("Llama-3.1-8B", "H100 SXM", brief)  # after the two above: their set-up, the catalog's price
    assert catalog == fresh(lambda: plan("Llama-3.1-8B", "H100 SXM", brief))


def test_the_set_ups_kept_are_bounded_the_least_recently_used_going_first(monkeypatch):
    monkeypatch.setattr(setups, "_SETUPS", {})
    monkeypatch.setattr(setups, "_SETUPS_KEPT", 8)
    ask = lambda prompt: replica("Llama-3.1-8B", "H100 SXM", batch=2, prompt_tokens=prompt, answer_tokens=100)  # noqa: E731
    ask(999)
    for prompt in range(1_000, 1_020):
        ask(prompt)
        ask(999)  # asked at every step (a calculator's other plan): kept throughout
    assert len(setups._SETUPS) == 8
    assert any(args[1].prompt_tokens == 999 for args, _ in setups._SETUPS.values())  # (deployment, workload, ...)


def test_threads_asking_at_once_get_the_fresh_figures(monkeypatch):
    """Threads racing on the same kept set-ups, switched between as often as the interpreter allows, get the figures
    a fresh set-up gives, and no error."""
    monkeypatch.setattr(setups, "_SETUPS_KEPT", 2)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    want = {p: fresh(lambda p=p: replica("Llama-3.1-8B", "H100 SXM", batch=3, prompt_tokens=p, answer_tokens=50))
            for p in range(500, 510)}  # fmt: skip
    errors, wrong = [], []

    def work():
        try:
            for _ in range(20):
                for p, r in want.items():
                    if replica("Llama-3.1-8B", "H100 SXM", batch=3, prompt_tokens=p, answer_tokens=50) != r:
                        wrong.append(p)
        except Exception as exc:  # what would reach a thread's caller
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == [] and wrong == []


@settings(max_examples=30, deadline=None)
@given(
    model=st.sampled_from([*MODELS, "Qwen3-30B-A3B"]),
    gpu=st.sampled_from(GPUS),
    tp=st.sampled_from([1, 2, 4]),
    kv=st.sampled_from([2, "fp8", 0.4]),
    method=st.sampled_from(["course", "envelope", "lab"]),
    context=st.integers(100, 30_000),
    batches=st.lists(st.integers(1, 300), min_size=2, max_size=4),
)
def test_a_decode_step_on_a_kept_set_up_is_decode_steps(model, gpu, tp, kv, method, context, batches):
    """The decode steps a search asks of a kept set-up (``decode_steps``, as the speculative calculator asks them)
    are decode_step()'s own, each time the same set-up is asked again."""
    kw = dict(context_tokens=context, n_gpus=tp, weight_bytes="fp8", kv_bytes=kv, assumptions=method)
    for batch in batches:
        for _ in range(2):  # the second finds the first's set-up
            got = _outcome(lambda: replica_step.decode_steps(model, gpu, **kw)(batch))  # noqa: B023
            assert got == _outcome(lambda: replica_step.decode_step(model, gpu, batch=batch, **kw))  # noqa: B023


def test_a_kept_set_up_cannot_be_changed_by_a_caller():
    """A set-up is shared by every caller with equal inputs: its public attributes and its base figures are
    read-only, so no caller's change reaches the next caller's replica or plan (the review found max_batch and base
    writable: a later replica() of equal inputs then held batch 3)."""
    from llmcourse.replica import replica_setup

    kw = dict(tensor_parallel=2, prompt_tokens=3_000, answer_tokens=500, weight_bytes="fp8")
    s = replica_setup("Llama-3.1-70B", "H100 SXM", **kw)
    top = s.at(None).batch
    with pytest.raises(AttributeError, match="read-only: a kept set-up is shared"):
        s.max_batch = 3
    with pytest.raises(TypeError):
        s.base["max_batch"] = 3
    assert replica("Llama-3.1-70B", "H100 SXM", **kw).batch == top > 3
