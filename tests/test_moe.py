"""MoE routing: the closed form against a seeded Monte Carlo run, edge cases, and the expert split."""

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS
from llmcourse.planner.moe import (
    derive_fraction_touched,
    expert_split,
    fraction_touched,
    fraction_touched_skewed,
    hot_cold_pick_probabilities,
    simulate_fraction_touched,
    simulate_fraction_touched_skewed,
)


@pytest.mark.parametrize(("experts", "k", "batch"), [(128, 8, 32), (8, 2, 4), (256, 8, 64), (8, 2, 16), (64, 6, 3)])
def test_monte_carlo_agrees_with_closed_form(experts, k, batch):
    """The seeded simulation's mean is within 4 standard errors of 1 - (1 - k/E)^B."""
    sim = simulate_fraction_touched(experts, k, batch, trials=2_000, seed=7)
    expected = 1 - (1 - k / experts) ** batch  # hand formula, typed independently of the package
    assert sim.agrees_with(expected)
    assert abs(sim.mean - expected) < 0.01


def test_qwen3_batch_32_fraction():
    """32 tokens each picking 8 of 128 experts touch 1 - (15/16)^32 = 0.8732 of them (hand arithmetic)."""
    assert fraction_touched(128, 8, 32) == pytest.approx(0.87321, abs=1e-5)


def test_batch_one_touches_k_over_e():
    """A single token touches exactly k/E of the experts, in the formula and in every simulated trial."""
    assert fraction_touched(256, 8, 1) == pytest.approx(8 / 256)
    sim = simulate_fraction_touched(256, 8, 1, trials=50)
    assert sim.mean == pytest.approx(8 / 256) and sim.std_error == 0


def test_k_equal_e_touches_everything():
    """When every token uses every expert, the fraction is 1 at any batch."""
    assert fraction_touched(8, 8, 1) == 1.0 and fraction_touched(8, 8, 50) == 1.0
    assert simulate_fraction_touched(8, 8, 5, trials=20).mean == 1.0


def test_simulation_is_seeded():
    """The same seed gives the same numbers; another seed gives other numbers."""
    a = simulate_fraction_touched(64, 4, 8, trials=200, seed=3)
    b = simulate_fraction_touched(64, 4, 8, trials=200, seed=3)
    c = simulate_fraction_touched(64, 4, 8, trials=200, seed=4)
    assert a == b and a.mean != c.mean


def test_sympy_derivation_matches_registered_formula():
    """C(E-1,k-1)/C(E,k) simplifies to k/E and the derived phi is the registered formula."""
    d = derive_fraction_touched()
    assert str(d["p_pick"]) == "k/E"
    assert sp.simplify(d["phi"] - FORMULAS["moe_fraction_touched"].expr) == 0


@settings(max_examples=40, deadline=None)
@given(e=st.integers(1, 300), k=st.integers(1, 300), b=st.integers(1, 400))
def test_fraction_is_a_probability_growing_with_batch(e, k, b):
    """0 < phi <= 1, and one more token never lowers it."""
    k = min(k, e)
    phi = fraction_touched(e, k, b)
    assert 0 < phi <= 1
    assert fraction_touched(e, k, b + 1) >= phi


@pytest.mark.parametrize(
    "bad",
    [
        dict(experts=8, k=9, batch=1),
        dict(experts=8, k=2, batch=0),
        dict(experts=8, k=2, batch=1.5),
        dict(experts=0, k=1, batch=1),
    ],
)
def test_bad_routing_is_refused(bad):
    """k > E, a zero or fractional batch, and no experts are input errors."""
    with pytest.raises(InputError):
        fraction_touched(**bad)


def test_qwen3_expert_split():
    """Qwen3-30B-A3B in BF16: 61 GB stored (seed 001), about 3.1 GB of it shared."""
    s = expert_split("Qwen3-30B-A3B")
    assert s.total.to("GB").m == pytest.approx(61, abs=0.5)
    assert s.shared.to("GB").m == pytest.approx(3.08, abs=0.01)
    assert (s.shared + s.experts).to("GB").m == pytest.approx(s.total.to("GB").m)


def test_dense_model_has_no_expert_split():
    """Asking a dense model for its experts is an input error that says why."""
    with pytest.raises(InputError, match="dense"):
        expert_split("Llama-3.1-8B")


@pytest.mark.parametrize("seed", [-1, 1.5, True, "0"])
def test_simulation_rejects_bad_seed(seed):
    """A seed that is not a whole number 0 or more gets a message saying so."""
    with pytest.raises(InputError, match="seed must be a whole number"):
        simulate_fraction_touched(8, 2, 4, trials=10, seed=seed)


# --- skewed routing (moe_ex3) ------------------------------------------------------------------------------------


def test_skewed_uniform_is_the_uniform_formula():
    """Every p_i = k/E gives 1 - (1 - k/E)^B, typed here by hand."""
    for e, k, b in [(128, 8, 32), (8, 2, 1), (256, 8, 64), (64, 6, 3)]:
        assert fraction_touched_skewed([k / e] * e, b) == pytest.approx(1 - (1 - k / e) ** b, rel=1e-12)
        assert fraction_touched_skewed([k / e] * e, b) == pytest.approx(fraction_touched(e, k, b), rel=1e-12)


def test_hot_cold_probabilities_for_the_book():
    """Half of 8 picks over 16 hot experts: 4/16 = 1/4 each; the other 4 over 112: 1/28 each (hand arithmetic)."""
    p = hot_cold_pick_probabilities(128, 8, hot=16, hot_share=0.5)
    assert p[:16] == [0.25] * 16
    assert p[16:] == pytest.approx([1 / 28] * 112)
    assert sum(p) == pytest.approx(8)


def test_skewed_book_value_by_hand():
    """[16 (1 - (3/4)^32) + 112 (1 - (27/28)^32)] / 128: (3/4)^32 = 1.0045e-4, (27/28)^32 = 0.31230 (log tables):
    (15.9984 + 77.0224) / 128 = 0.72672, well below the uniform 0.8732."""
    got = fraction_touched_skewed(hot_cold_pick_probabilities(128, 8, hot=16, hot_share=0.5), 32)
    assert got == pytest.approx(0.72672, abs=2e-5)
    assert got < fraction_touched(128, 8, 32)


def test_skewed_small_case_enumerated():
    """E = 3, k = 1, p = (1/2, 1/4, 1/4), B = 2: enumerate the 9 pairs of picks, weighting each by its chance."""
    p = [0.5, 0.25, 0.25]
    expect = sum(p[a] * p[b] * len({a, b}) for a in range(3) for b in range(3)) / 3
    assert expect == pytest.approx((0.75 + 2 * 0.4375) / 3)  # 1 - (1/2)^2 and 1 - (3/4)^2, by hand
    assert fraction_touched_skewed(p, 2) == pytest.approx(expect)


@pytest.mark.parametrize(
    ("experts", "k", "hot", "share", "batch"), [(128, 8, 16, 0.5, 32), (128, 4, 8, 0.75, 16), (256, 8, 32, 0.25, 64)]
)
def test_skewed_monte_carlo(experts, k, hot, share, batch):
    """A seeded simulation with distinct picks per token agrees with the sum of the per-expert chances, typed here."""
    p_hot, p_cold = k * share / hot, k * (1 - share) / (experts - hot)
    expected = (hot * (1 - (1 - p_hot) ** batch) + (experts - hot) * (1 - (1 - p_cold) ** batch)) / experts
    sim = simulate_fraction_touched_skewed(
        hot_cold_pick_probabilities(experts, k, hot=hot, hot_share=share), batch, trials=2_000, seed=11
    )
    assert sim.agrees_with(expected)
    assert abs(sim.mean - expected) < 0.01


def test_skewed_simulation_picks_distinct_experts():
    """Batch 1: every trial touches exactly k experts (no expert picked twice by one token)."""
    sim = simulate_fraction_touched_skewed(hot_cold_pick_probabilities(128, 8, hot=16, hot_share=0.5), 1, trials=200)
    assert sim.mean == pytest.approx(8 / 128) and sim.std_error == pytest.approx(0)


@pytest.mark.parametrize(
    "bad",
    [[0.5, 0.7], [1.5, 0.5], [], [-0.5, 1.5]],
)
def test_skewed_refuses_bad_probabilities(bad):
    """Probabilities outside [0, 1], a non-whole number of picks or no experts are refused with an InputError."""
    with pytest.raises(InputError):
        fraction_touched_skewed(bad, 4)


def test_hot_cold_refuses_impossible_split():
    """8 x 0.75 = 6 picks over 4 hot experts would pick one expert twice."""
    with pytest.raises(InputError):
        hot_cold_pick_probabilities(128, 8, hot=4, hot_share=0.75)
