"""Static batches (``llmcourse.planner.batching``) and the auto-checked twins batching_ex3 / batching_ex5, moe_ex3."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
import sympy as sp

import llmcourse as lc
from llmcourse.errors import InputError
from llmcourse.exercises import check, get, reset
from llmcourse.exercises.cli import answer_key
from llmcourse.planner.batching import expected_max_length, simulate_static_batch, static_batch_utilisation
from llmcourse.planner.roofline import crossover_batch


@pytest.fixture(autouse=True)
def _fresh_session():
    reset()
    yield
    reset()


def test_tiny_case_by_hand():
    """Two requests, lengths 1 or 2: max is 1 only for (1, 1), so E[max] = 1/4 + 2 x 3/4 = 7/4; E[L] = 3/2; 6/7."""
    assert expected_max_length(2, 2) == Fraction(7, 4)
    assert static_batch_utilisation(2, 2) == Fraction(6, 7)


def test_enumeration_small_cases():
    """Enumerate every outcome for small batches and lengths; the exact fraction matches."""
    import itertools

    for n, big_n in [(1, 5), (2, 3), (3, 4), (4, 2)]:
        outcomes = list(itertools.product(range(1, big_n + 1), repeat=n))
        e_max = Fraction(sum(max(o) for o in outcomes), len(outcomes))
        e_l = Fraction(big_n + 1, 2)
        assert expected_max_length(n, big_n) == e_max
        assert static_batch_utilisation(n, big_n) == e_l / e_max


def test_closed_form_with_sympy_for_two_requests():
    """For n = 2, sum_{m=1}^{N} [1 - ((m-1)/N)^2] = N - (N-1)(2N-1)/(6N), summed by SymPy."""
    big_n, m = sp.symbols("N m", positive=True, integer=True)
    e_max = sp.simplify(sp.summation(1 - ((m - 1) / big_n) ** 2, (m, 1, big_n)))
    assert sp.simplify(e_max - (big_n - (big_n - 1) * (2 * big_n - 1) / (6 * big_n))) == 0
    for value in (2, 7, 512):
        assert expected_max_length(2, value) == Fraction(str(e_max.subs(big_n, value)))


def test_book_case_32_of_512():
    """E[max] for 32 of 1..512 is near 512 x 32/33 + 1/2 = 496.98 (the integral plus the half-step); E[L] = 256.5."""
    u = static_batch_utilisation(32, 512)
    assert float(expected_max_length(32, 512)) == pytest.approx(512 * 32 / 33 + 0.5, abs=0.05)
    assert float(u) == pytest.approx(256.5 / (512 * 32 / 33 + 0.5), abs=1e-4)
    assert 0.51 < float(u) < 0.52


@pytest.mark.parametrize(("n", "big_n"), [(32, 512), (8, 128), (64, 1_024), (2, 2)])
def test_simulation_agrees(n, big_n):
    """An independent seeded simulation (written here) and the package's agree with the exact ratio."""
    r = random.Random(5)
    tokens = steps = 0
    for _ in range(3_000):
        lengths = [r.randint(1, big_n) for _ in range(n)]
        tokens += sum(lengths)
        steps += max(lengths)
    mine = tokens / (n * steps)
    run = simulate_static_batch(n, big_n, trials=3_000, seed=9)
    exact = float(static_batch_utilisation(n, big_n))
    assert mine == pytest.approx(exact, abs=0.01)
    assert run.utilisation == pytest.approx(exact, abs=0.01)
    assert abs(run.mean_steps - float(expected_max_length(n, big_n))) < 4 * run.std_error_steps + 1e-9


@pytest.mark.parametrize("bad", [(0, 512), (32, 0), (-1, 4), (2.5, 4)])
def test_bad_inputs(bad):
    with pytest.raises(InputError):
        static_batch_utilisation(*bad)


# --- the twins ---------------------------------------------------------------------------------------------------
def test_batching_ex3_book_variant_has_no_crossover():
    """Llama 2 7B on an H100 at 256/64: 288 x 512 KiB = 150,994,944 B over 0.7 x 3.35 TB/s is 64.39 us; 2 x 6.738e9
    FLOP over 0.5 x 989.4 TFLOP/s is 27.24 us; ratio 2.36 > 1, and the roofline finds no crossover."""
    ex = get("batching_ex3")
    g = lc.gpus["H100 SXM"]
    kv_t = 288 * 512 * 1024 / (0.7 * g.bandwidth.to("B/s").m)
    comp_t = 2 * 6.738e9 / (0.5 * g.peak_flops("bf16").to("FLOP/s").m)
    assert kv_t == pytest.approx(64.39e-6, rel=2e-3)
    assert answer_key(ex.id)[0][1].m == pytest.approx(kv_t / comp_t, rel=1e-6)
    assert answer_key(ex.id)[0][1].m > 1
    assert crossover_batch("Llama-2-7B", "H100 SXM", context_tokens=288) is None
    assert crossover_batch("Llama-2-7B", "H100 SXM", context_tokens=288, attention_flops=True) is None


@pytest.mark.parametrize("seed", range(20))
def test_batching_ex3_ratio_decides_the_crossover(seed):
    """For every student's variant, the ratio is above 1 exactly when the chapter's crossover_batch finds none."""
    ex = get("batching_ex3")
    v = ex.variant(seed)
    ratio = answer_key(ex.id, seed)[0][1].m
    if abs(ratio - 1) > 1e-6:
        none = crossover_batch(v["model"], v["gpu"], context_tokens=v["prompt"] + v["answer"] / 2) is None
        assert none == (ratio > 1), (v, ratio)


def test_batching_ex3_feedback():
    """The usual slips get their own words: the inverted ratio, the full context, a GQA-sized cache."""
    right = answer_key("batching_ex3")[0][1].m
    assert "compute over KV read" in check("batching_ex3", 1 / right).message
    assert "prompt + answer / 2" in check("batching_ex3", right * 320 / 288).message
    assert "no GQA" in check("batching_ex3", right / 4).message
    assert check("batching_ex3", right).correct


def test_batching_ex5_book_variant():
    """The default is 32 requests of 1..512 tokens; its answer is the exact ratio, near 0.516."""
    ex = get("batching_ex5")
    assert ex.default == dict(batch=32, longest=512)
    assert answer_key(ex.id)[0][1].m == pytest.approx(256.5 / (512 * 32 / 33 + 0.5), abs=1e-4)
    assert "continuous batching" in check("batching_ex5", 1.0).message
    assert "E[max] steps" in check("batching_ex5", 256.5 / 512).message


def test_moe_ex3_book_variant():
    """Half of the picks on 16 hot experts of Qwen3-30B-A3B at B = 32: 0.7267 (hand value in test_moe), and the
    uniform 0.873 is diagnosed."""
    ex = get("moe_ex3")
    assert answer_key(ex.id)[0][1].m == pytest.approx(0.72672, abs=2e-5)
    assert "uniform routing" in check("moe_ex3", 1 - (15 / 16) ** 32).message
    assert not math.isclose(answer_key(ex.id)[0][1].m, 1 - (15 / 16) ** 32, rel_tol=0.01)
