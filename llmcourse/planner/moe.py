"""Mixture-of-experts routing: the expected fraction of experts a batch touches, and a check.

With ``batch`` tokens each picking ``k`` of ``E`` experts (uniformly, independently, without
repeats within a token), one token picks a given expert with probability C(E-1, k-1)/C(E, k)
= k/E, so the batch misses it with probability (1 - k/E)^B and touches a fraction

    phi = 1 - (1 - k/E)^B

of the experts on average (``FORMULAS["moe_fraction_touched"]``). :func:`derive_fraction_touched`
derives this in SymPy; :func:`simulate_fraction_touched` checks it by a seeded Monte Carlo run.

Defined in the chapter *Mixture of experts* (``book/07_moe.md``).

Examples
--------
>>> round(fraction_touched(128, 8, 32), 3)
0.873
>>> fraction_touched(8, 2, 1)
0.25
"""

from __future__ import annotations

import math
import random
import statistics
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

import pint

from llmcourse.arith import over, times
from llmcourse.catalog import Model, models
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import SYMBOLS, sp  # sp: SymPy, imported on first use (the derivation below)
from llmcourse.replica.memory import weight_bytes, weight_parts_si, weight_split_si
from llmcourse.units import BYTE, plain_number, quantity, seed_number, to

__all__ = [
    "ExpertSplit",
    "Simulation",
    "derive_fraction_touched",
    "expert_split",
    "fraction_touched",
    "fraction_touched_skewed",
    "hot_cold_pick_probabilities",
    "simulate_fraction_touched",
    "simulate_fraction_touched_skewed",
]


#: The most random draws a routing simulation makes (trials x batch x picks): about ten seconds of the
#: standard library's generator (a bound on the input, not a modelling constant).
_MOST_DRAWS = 10_000_000


def _count(value: Any, name: str) -> int:
    return int(plain_number(value, name, integer=True))


def _draws(trials: int, batch: int, k: int) -> None:
    if trials * batch * k > _MOST_DRAWS:
        raise InputError(
            f"trials x batch x picks ({trials:,} x {batch:,} x {k:,}) must be at most {_MOST_DRAWS:,} draws "
            "(about ten seconds); give fewer trials."
        )


def _routing(experts: Any, k: Any, batch: Any) -> tuple[int, int, int]:
    e, kk, b = _count(experts, "experts"), _count(k, "experts_per_token"), _count(batch, "batch")
    if kk > e:
        raise InputError(f"experts_per_token ({kk}) cannot exceed experts ({e}).")
    return e, kk, b


def fraction_touched(experts: int, k: int, batch: int) -> float:
    """Expected fraction of ``experts`` that ``batch`` tokens touch when each picks ``k`` at random.

    Examples
    --------
    >>> fraction_touched(128, 8, 1)
    0.0625
    >>> fraction_touched(8, 8, 3)
    1.0
    """
    e, kk, b = _routing(experts, k, batch)
    return float(F["moe_fraction_touched"](experts=e, experts_per_token=kk, batch=b).m)


def derive_fraction_touched() -> dict[str, sp.Expr]:
    """The derivation in SymPy: P(a token picks a given expert), P(the batch misses it), E[phi].

    Returns the steps; ``"phi"`` equals ``FORMULAS["moe_fraction_touched"].expr``.

    Examples
    --------
    >>> d = derive_fraction_touched()
    >>> d["p_pick"]
    k/E
    >>> sp.simplify(d["phi"] - F["moe_fraction_touched"].expr)
    0
    """
    e, k, b = SYMBOLS["experts"].sym, SYMBOLS["experts_per_token"].sym, SYMBOLS["batch"].sym
    p_pick = sp.simplify(sp.combsimp(sp.binomial(e - 1, k - 1) / sp.binomial(e, k)))
    p_miss = (1 - p_pick) ** b
    return {"p_pick": p_pick, "p_miss": p_miss, "phi": 1 - p_miss}


@dataclass(frozen=True)
class Simulation:
    """Result of a Monte Carlo routing run: mean fraction touched and its standard error."""

    experts: int
    k: int
    batch: int
    trials: int
    mean: float
    std_error: float

    @classmethod
    def of(cls, experts: int, k: int, batch: int, fractions: list[float]) -> Simulation:
        """The mean of the trials' fractions touched and its standard error."""
        n, mean = len(fractions), statistics.fmean(fractions)
        se = statistics.stdev(fractions, mean) / math.sqrt(n) if n > 1 else float("inf")
        return cls(experts, k, batch, n, mean, se)

    def agrees_with(self, expected: float, sigmas: float = 4.0) -> bool:
        """Whether ``expected`` lies within ``sigmas`` standard errors (plus rounding) of the mean."""
        return abs(self.mean - expected) <= sigmas * self.std_error + 1e-12


def simulate_fraction_touched(experts: int, k: int, batch: int, *, trials: int = 2_000, seed: int = 0) -> Simulation:
    """Route ``batch`` tokens ``trials`` times, each token picking ``k`` distinct experts uniformly.

    Each token draws its ``k`` experts one at a time without repeats: the ``j``-th draw (from 0) lands
    on an expert the batch has not touched yet with probability (experts untouched and not yet drawn
    by this token) / (E - j). Only that count matters for the fraction touched, so the run tracks the
    count, not the experts' names, and stops a trial early once every expert is touched. It uses the
    standard library's ``random.Random(seed)`` (no numpy, so it runs in the live book too) and is
    seeded, so a chapter's numbers repeat exactly.

    Examples
    --------
    >>> s = simulate_fraction_touched(128, 8, 32, trials=500, seed=1)
    >>> s.agrees_with(fraction_touched(128, 8, 32))
    True
    """
    e, kk, b = _routing(experts, k, batch)
    n = _count(trials, "trials")
    _draws(n, b, kk)
    seed_number(seed)
    draw = random.Random(seed).random
    spans = [e - j for j in range(kk)]  # the j-th draw's choices, E - j (the same ints, worked out once)
    out = []
    for _ in range(n):
        touched = 0
        for _ in range(b):
            untouched = e - touched
            for span in spans:
                if draw() * span < untouched:
                    untouched -= 1
            touched = e - untouched
            if touched == e:
                break
        out.append(touched / e)
    return Simulation.of(e, kk, b, out)


@dataclass(frozen=True)
class ExpertSplit:
    """A MoE model's weight bytes: shared (attention, embeddings, norms, router) and routed experts."""

    model: str
    total: pint.Quantity
    shared: pint.Quantity
    experts: pint.Quantity
    active: pint.Quantity


def expert_split(model: Model | str, bytes_per_param: Any = None) -> ExpertSplit:
    """Split a MoE model's weights into shared and routed-expert bytes, stored at ``bytes_per_param`` (None: the
    model's checkpoint precision, per tensor group; or one precision, or a per-group mapping).

    Examples
    --------
    >>> s = expert_split("Qwen3-30B-A3B")
    >>> round(s.total.to("GB").m, 2), round(s.shared.to("GB").m, 2), round(s.experts.to("GB").m, 2)
    (61.06, 3.08, 57.98)
    >>> s = expert_split("gpt-oss-120b")  # the checkpoint: MXFP4 experts, BF16 attention and embeddings
    >>> round(s.shared.to("GB").m, 2), round(s.experts.to("GB").m, 2)
    (4.68, 60.91)
    """
    m = model if isinstance(model, Model) else models[model]
    if not m.is_moe:
        raise InputError(f"{m.name} is a dense model: every weight is read at every step.")
    if isinstance(weight_split_si(m, bytes_per_param), tuple):  # tensor groups at different precisions
        shared, experts = (quantity(x, BYTE) for x in weight_parts_si(m, bytes_per_param))
        return ExpertSplit(
            model=m.name,
            total=to(shared + experts, "GB"),
            shared=to(shared, "GB"),
            experts=to(experts, "GB"),
            active=to(shared + experts * (m.experts_per_token / m.experts), "GB"),
        )
    total = to(weight_bytes(m, bytes_per_param), "GB")
    per = over(total, m.params)  # pint's arithmetic, on the magnitudes (llmcourse.arith)
    return ExpertSplit(
        model=m.name,
        total=total,
        shared=to(times(per, m.params - m.expert_params), "GB"),
        experts=to(times(per, m.expert_params), "GB"),
        active=to(times(per, m.active_params), "GB"),
    )


# --- Skewed routing: experts picked with unequal probabilities ----------------------------------------
def _pick_probabilities(pick_probabilities: Any) -> list[float]:
    try:
        p = [float(plain_number(x, "pick probability")) for x in pick_probabilities]
    except TypeError:
        raise InputError("pick_probabilities must be a sequence of numbers, one per expert.") from None
    if not p:
        raise InputError("pick_probabilities is empty: give one probability per expert.")
    bad = [x for x in p if not 0.0 <= x <= 1.0]
    if bad:
        raise InputError(f"a pick probability must lie between 0 and 1; got {bad[0]!r}.")
    k = math.fsum(p)
    if abs(k - round(k)) > 1e-9 or round(k) < 1:
        raise InputError(f"the pick probabilities must add up to k, a whole number of picks per token; got {k:.6g}.")
    return p


def fraction_touched_skewed(pick_probabilities: Any, batch: int) -> float:
    """Expected fraction of the experts that ``batch`` tokens touch when one token picks expert i with
    probability ``pick_probabilities[i]`` (its p_i; a token picks k distinct experts, so the p_i add up to k).

        phi = (1/E) * sum_i [1 - (1 - p_i)^B]

    This is exact for the expectation, whatever the joint law of one token's k picks: a token either
    picks expert i or not (probability p_i), tokens route independently, so the batch misses expert i
    with probability (1 - p_i)^B, and the expected count touched is the sum of those chances
    (linearity of expectation). The picks of one token are *not* independent across experts (k distinct
    experts), which changes the variance of the count but not its mean. With every p_i = k/E it is
    :func:`fraction_touched`; for the same k and E, unequal p_i touch fewer experts on average.

    Examples
    --------
    >>> fraction_touched_skewed([0.25] * 8, 1)  # k = 2 of E = 8, uniform: k/E
    0.25
    >>> round(fraction_touched_skewed(hot_cold_pick_probabilities(128, 8, hot=16, hot_share=0.5), 32), 4)
    0.7267
    """
    p = _pick_probabilities(pick_probabilities)
    b = _count(batch, "batch")
    return math.fsum(1.0 - (1.0 - x) ** b for x in p) / len(p)


def hot_cold_pick_probabilities(experts: int, k: int, *, hot: int, hot_share: float) -> list[float]:
    """Per-token pick probabilities when a share ``hot_share`` of all picks goes to ``hot`` experts.

    Each token makes ``k`` picks; on average ``k * hot_share`` of them land on the hot experts, spread
    evenly, so a hot expert's p = k * hot_share / hot and a cold one's p = k * (1 - hot_share) / (E - hot).

    Examples
    --------
    >>> p = hot_cold_pick_probabilities(128, 8, hot=16, hot_share=0.5)
    >>> p[0], round(p[-1], 6), len(p), round(sum(p), 9)
    (0.25, 0.035714, 128, 8.0)
    """
    e, kk, _ = _routing(experts, k, 1)
    h = _count(hot, "hot")
    s = float(plain_number(hot_share, "hot_share"))
    if not 0 < h < e:
        raise InputError(f"hot must be between 1 and experts - 1 ({e - 1}); got {h}.")
    if not 0.0 <= s <= 1.0:
        raise InputError(f"hot_share must lie between 0 and 1; got {s!r}.")
    p_hot, p_cold = kk * s / h, kk * (1 - s) / (e - h)
    if p_hot > 1 or p_cold > 1:
        raise InputError(
            f"{kk * s:g} picks per token over {h} hot experts (or {kk * (1 - s):g} over {e - h} cold ones) "
            "would pick an expert more than once: a token picks distinct experts."
        )
    return [p_hot] * h + [p_cold] * (e - h)


def simulate_fraction_touched_skewed(
    pick_probabilities: Any, batch: int, *, trials: int = 2_000, seed: int = 0
) -> Simulation:
    """Route ``batch`` tokens ``trials`` times, each token picking k distinct experts, expert i with
    probability p_i (systematic sampling: one uniform u, and the experts whose cumulative-p interval
    holds u, u + 1, ..., u + k - 1; each p_i <= 1 so no expert is picked twice). Standard-library
    ``random.Random(seed)`` only. The result's ``k`` is the sum of the p_i.

    Examples
    --------
    >>> p = hot_cold_pick_probabilities(128, 8, hot=16, hot_share=0.5)
    >>> simulate_fraction_touched_skewed(p, 32, trials=300, seed=1).agrees_with(fraction_touched_skewed(p, 32))
    True
    """
    p = _pick_probabilities(pick_probabilities)
    e, kk, b = len(p), round(math.fsum(p)), _count(batch, "batch")
    n = _count(trials, "trials")
    _draws(n, b, kk)
    seed_number(seed)
    edges, acc = [], 0.0
    for x in p:
        acc += x
        edges.append(acc)
    edges[-1] = float(kk)  # absorb rounding so every u + j < k finds an expert
    draw = random.Random(seed).random
    out = []
    for _ in range(n):
        touched: set[int] = set()
        for _ in range(b):
            u = draw()
            touched.update(bisect_right(edges, u + j) for j in range(kk))
        out.append(len(touched) / e)
    return Simulation.of(e, kk, b, out)
