"""MoE routing: the closed form against a seeded Monte Carlo run, edge cases, and the expert split."""

import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS
from llmcourse.moe import derive_fraction_touched, expert_split, fraction_touched, simulate_fraction_touched


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
