"""The replica set-ups the planner keeps (planner._SETUPS): a kept set-up gives what a fresh one gives.

A calculator asks for the same few replicas at every update, so ``planner._replica_of`` keeps each set-up (the
layout, the memory, the largest batch, the decode step and prefill as functions of the batch, and the times per
token a batch search has asked) by its inputs. These tests check that keeping changes no figure: a plan or a
replica worked out on kept set-ups equals the one worked out with none kept, whatever was asked before.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcourse import planner
from llmcourse.errors import InputError
from llmcourse.planner import Brief, plan, replica
from llmcourse.units import Q_

MODELS = ["Llama-3.1-8B", "Llama-3.1-70B", "Qwen2.5-72B", "Mixtral-8x7B"]
GPUS = ["H100 SXM", "A100 80GB", "H200"]


@pytest.fixture
def fresh(monkeypatch):
    """A function that runs ``f()`` with no set-up kept before or after (the planner's own path, uncached)."""

    def run(f):
        monkeypatch.setattr(planner, "_SETUPS", {})
        got = f()
        monkeypatch.setattr(planner, "_SETUPS", {})
        return got

    return run


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
    each equal to the plan worked out with nothing kept."""
    kw = dict(tensor_parallel=tp, weight_bytes=weights)
    for target in targets:
        brief = _brief(prompt, answer, target, rate)
        try:
            kept = plan(model, gpu, brief, **kw)
        except InputError:  # a layout that cannot exist (heads not divisible, weights too big): refused alike
            saved = planner._SETUPS
            planner._SETUPS = {}
            try:
                with pytest.raises(InputError):
                    plan(model, gpu, brief, **kw)
            finally:
                planner._SETUPS = saved
            continue
        saved = planner._SETUPS
        planner._SETUPS = {}
        try:
            assert kept == plan(model, gpu, brief, **kw)
        finally:
            planner._SETUPS = saved


@pytest.mark.parametrize("batch", [None, 1, 40, 10_000])
def test_a_kept_replica_is_the_fresh_replica(fresh, batch):
    kw = dict(tensor_parallel=2, prompt_tokens=3_000, answer_tokens=500, weight_bytes="fp8")
    first = replica("Llama-3.1-70B", "H100 SXM", batch=7, **kw)  # sets it up
    assert first == fresh(lambda: replica("Llama-3.1-70B", "H100 SXM", batch=7, **kw))
    assert replica("Llama-3.1-70B", "H100 SXM", batch=batch, **kw) == fresh(
        lambda: replica("Llama-3.1-70B", "H100 SXM", batch=batch, **kw)
    )


def test_equal_numbers_of_another_type_give_their_own_replica(fresh):
    """4,000 and 4,000.0 prompt tokens are equal keys to a dict: each gets the replica its own fresh path gives."""
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


def test_a_plan_carries_its_own_price(fresh):
    """The set-up is kept across prices (no figure but the cost depends on one): each plan's replica has its own."""
    brief = _brief(2_000, 300, 50)
    cheap = plan("Llama-3.1-8B", "H100 SXM", brief, price_per_hour=Q_(1, "USD/hour"))
    dear = plan("Llama-3.1-8B", "H100 SXM", brief, price_per_hour=Q_(4, "USD/hour"))
    assert cheap.replica.price_per_hour == Q_(1, "USD/hour") and dear.replica.price_per_hour == Q_(4, "USD/hour")
    assert dear.cost_per_hour == 4 * cheap.cost_per_hour
    assert dear == fresh(lambda: plan("Llama-3.1-8B", "H100 SXM", brief, price_per_hour=Q_(4, "USD/hour")))
    catalog = plan("Llama-3.1-8B", "H100 SXM", brief)
    assert catalog == fresh(lambda: plan("Llama-3.1-8B", "H100 SXM", brief))


def test_the_set_ups_kept_are_bounded(monkeypatch):
    monkeypatch.setattr(planner, "_SETUPS", {})
    monkeypatch.setattr(planner, "_SETUPS_KEPT", 8)
    for prompt in range(1_000, 1_020):
        replica("Llama-3.1-8B", "H100 SXM", batch=2, prompt_tokens=prompt, answer_tokens=100)
    assert len(planner._SETUPS) == 8
    newest = replica("Llama-3.1-8B", "H100 SXM", batch=2, prompt_tokens=1_019, answer_tokens=100)
    assert len(planner._SETUPS) == 8 and newest.prompt_tokens == 1_019
