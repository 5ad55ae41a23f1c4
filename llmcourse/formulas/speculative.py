"""The formulas of speculative decoding, each written once as a SymPy expression (chapter
*Speculative decoding*, ``book/08b_speculative.md``).

A draft proposes ``k_d`` tokens; the target checks them in one step over ``k_d + 1`` positions per
sequence and keeps the longest accepted prefix plus one token of its own. With each draft token
accepted with probability ``alpha``, independently, the tokens a verification step yields are
``1 + (accepted prefix)``, whose expectation is the geometric sum ``sum_{i=0}^{k_d} alpha^i``:
SymPy's :func:`~sympy.summation` works it out here (it is not typed). The rest follows from the
decode formulas of :mod:`llmcourse.formulas.serving`: the crossover batch (where speculation stops paying)
is solved from ``decode_memory_time``, ``decode_compute_time`` and ``step_with_overhead`` (the verification
pays a decode step's fixed overhead, each draft step a fixed cost of its own) with ``sympy.solve``, and the best
number of draft tokens, where the draft's cost is a fixed share of a memory-bound step, by solving
d S / d k_d = 0 (a Lambert W; :func:`best_draft_tokens_expression`).

The symbols and formulas are registered in :data:`llmcourse.formulas.SYMBOLS` and
:data:`~llmcourse.formulas.FORMULAS` when this module is imported. ``llmcourse.formulas`` imports it
itself, with every topic module, so that the registry does not depend on who imports what first.

Examples
--------
>>> from llmcourse.formulas import FORMULAS
>>> FORMULAS["speculative_expected_tokens"].latex()
'\\\\tau = \\\\frac{1 - \\\\alpha^{k_{d} + 1}}{1 - \\\\alpha}'
>>> round(FORMULAS["speculative_expected_tokens"](acceptance=0.8, draft_tokens=4).m, 4)
3.3616
"""

from __future__ import annotations

import functools

from llmcourse.formulas import serving  # noqa: F401  (the symbols taken by name below are defined there first)
from llmcourse.formulas.core import (
    FORMULAS,
    SYMBOLS,
    defer,
    deferred_getattr,
    derived,
    formula,
    make_symbols,
    section,
    sp,
    symbol,
    symbols,
)

__all__ = ["EXPECTED_TOKENS_SUM", "best_draft_tokens_expression"]
__getattr__ = deferred_getattr(globals())  # the names the sections below define, made on first use

CHAPTER = "08b_speculative"

# --- symbols --------------------------------------------------------------------------------------
acceptance = symbol(
    "acceptance",
    r"\alpha",
    "",
    "chance the target accepts a draft token (per position, independent)",
    allow_zero=True,
    at_most=1,
)
draft_tokens = symbol("draft_tokens", r"k_{d}", "", "tokens the draft proposes per verification step", integer=True)
expected_tokens = symbol(
    "expected_tokens", r"\tau", "", "expected tokens per verification step (the acceptance length)"
)
verify_time = symbol(
    "verify_time", r"t_{ver}", "s", "time of a verification step: the target over k_d + 1 positions per sequence"
)
draft_step_time = symbol(
    "draft_step_time", r"t_{draft}", "s", "time of one draft step (zero for an n-gram lookup)", allow_zero=True
)
cycle_time = symbol(
    "cycle_time", r"t_{cyc}", "s", "time of one speculative cycle: k_d draft steps, then a verification"
)
token_time = symbol("token_time", r"t_{tok}", "s", "time per output token of a sequence, with speculation")
speedup = symbol("speedup", "S", "", "speed-up over plain decode at the same batch (per user and per GPU)")
draft_cost = symbol(
    "draft_cost", r"r_{d}", "", "a draft step's time over the target's decode step time", allow_zero=True
)
draft_bytes_read = symbol("draft_bytes_read", r"W_{draft}", "B", "weight bytes one draft step reads", allow_zero=True)
draft_kv_per_sequence = symbol(
    "draft_kv_per_sequence", r"K_{draft}", "B", "draft KV cache bytes per sequence", allow_zero=True
)
draft_overhead = symbol(
    "draft_overhead",
    r"t_{over,d}",
    "s",
    "fixed time per draft step: a launch-scale cost where the engine runs the draft steps inside its step (the "
    "per-step overhead where each is a step of its own), zero for an n-gram lookup",
    allow_zero=True,
)

step_time, batch, bytes_read, kv_per_sequence = symbols("step_time", "batch", "bytes_read", "kv_per_sequence")

# --- expected tokens per verification step: the geometric sum, worked out by SymPy -----------------


@section
def _expected() -> None:
    global _i, EXPECTED_TOKENS_SUM, _general, _tau
    # Position i of the draft (i = 1..k_d) is reached only if the i - 1 before it were accepted; the
    # tokens a step yields are 1 (the target's own token) + the accepted prefix, so
    # E[tokens] = sum_{i=0}^{k_d} P(prefix >= i) = sum_{i=0}^{k_d} alpha^i.
    _i = sp.Symbol("i", integer=True, nonnegative=True)
    #: The sum as SymPy returns it: a Piecewise whose first branch is alpha = 1 (k_d + 1 tokens).
    EXPECTED_TOKENS_SUM = derived(
        "speculative_expected_tokens_sum",
        (acceptance, _i, draft_tokens),
        lambda: sp.summation(acceptance**_i, (_i, 0, draft_tokens)),
    )
    _general = [e for e, cond in EXPECTED_TOKENS_SUM.args if cond == sp.true]
    if len(_general) != 1:  # pragma: no cover - guards a change of SymPy's answer
        raise RuntimeError(f"expected one general branch of the geometric sum, got {EXPECTED_TOKENS_SUM}")
    _tau = _general[0]  # (1 - alpha^(k_d + 1)) / (1 - alpha), for alpha < 1
    formula(
        "speculative_expected_tokens",
        "expected_tokens",
        _tau,
        "expected tokens per verification step: the geometric sum of the acceptance",
        CHAPTER,
    )


# --- time and speed -----------------------------------------------------------------------------------


@section
def _speed() -> None:
    global _cycle, _speedup, _speedup_mb
    _cycle = verify_time + draft_tokens * draft_step_time
    formula("speculative_cycle_time", "cycle_time", _cycle, "k_d draft steps, then one verification", CHAPTER)
    formula(
        "speculative_token_time", "token_time", cycle_time / expected_tokens, "time per output token of a user", CHAPTER
    )
    formula(
        "speculative_throughput",
        "throughput",
        batch * expected_tokens / cycle_time,
        "output tokens per second of a batch with speculation",
        CHAPTER,
    )
    _speedup = expected_tokens * step_time / _cycle
    formula(
        "speculative_speedup",
        "speedup",
        _speedup,
        "speed-up over plain decode at the same batch: tau x plain step / (verification + k_d draft steps)",
        CHAPTER,
    )
    # While decode is memory-bound the verification costs what a plain step does (t_ver = t_step: the same
    # bytes, and the same per-step overhead) and a draft step a fixed share of it (t_draft = r_d t_step, its
    # own fixed cost included: a launch-scale cost where the engine runs the draft inside its step, the full
    # per-step overhead where each draft step is a step of its own): the speed-up depends on alpha, k_d and
    # r_d only.
    _speedup_mb = derived(
        "speculative_speedup_memory_bound",
        (_speedup, verify_time, step_time, draft_step_time, draft_cost, expected_tokens, _tau),
        lambda: sp.simplify(_speedup.subs({verify_time: step_time, draft_step_time: draft_cost * step_time})).subs(
            expected_tokens, _tau
        ),
    )
    formula(
        "speculative_speedup_memory_bound",
        "speedup",
        _speedup_mb,
        "speed-up while the verification is memory-bound and a draft step costs r_d of a plain step",
        CHAPTER,
    )


# --- the crossover batch: beyond it speculation costs throughput ------------------------------------


@section
def _crossover() -> None:
    global _t_mem, _t_comp, _t_over, _with_over, _stepped, _b_real, _verify_compute, _draft_memory, _plain_memory
    global _saved, _spent, _flops_side, _bytes_side, _crossover_parts, _num, _den
    # Solve tau x (plain step) = verification + k_d draft steps for the batch, with the plain step and the
    # draft steps memory-bound and the verification compute-bound (k_d + 1 positions per sequence), each
    # time taken from the decode formulas (FORMULAS["decode_memory_time"], ["decode_compute_time"]) plus the
    # fixed time every decode step pays (FORMULAS["step_with_overhead"]): a cycle pays t_over (with its
    # verification) + k_d t_{over,d} (its draft steps) for tau tokens where plain decode pays tau t_over.
    # Engines run the draft steps inside the verification's engine step, so t_{over,d} is a launch-scale cost
    # and the cycle saves (tau - 1) t_over - k_d t_{over,d}, which raises the crossover batch; where each draft
    # step is a decode step of its own (t_{over,d} = t_over) the cycle loses (k_d + 1 - tau) t_over and the
    # crossover falls; an n-gram lookup (t_{over,d} = 0) gains (tau - 1) t_over.
    _t_mem = FORMULAS["decode_memory_time"].expr
    _t_comp = FORMULAS["decode_compute_time"].expr
    _t_over = SYMBOLS["step_overhead"].sym
    _with_over = FORMULAS["step_with_overhead"].expr  # step_time + step_overhead

    def _stepped(core: sp.Expr, overhead: sp.Symbol = _t_over) -> sp.Expr:
        """A decode step's time: ``core`` plus a per-step overhead, by the decode chapter's formula."""
        return _with_over.subs({step_time: core, _t_over: overhead}, simultaneous=True)

    _b_real = sp.Symbol("B_real", positive=True)
    _verify_compute = _stepped(_t_comp.subs(batch, (draft_tokens + 1) * _b_real))
    _draft_memory = _stepped(
        _t_mem.subs({bytes_read: draft_bytes_read, kv_per_sequence: draft_kv_per_sequence, batch: _b_real}),
        draft_overhead,
    )
    _plain_memory = _stepped(_t_mem.subs(batch, _b_real))
    _saved, _spent = expected_tokens * _plain_memory, _verify_compute + draft_tokens * _draft_memory
    _flops_side = SYMBOLS["peak_flops"].sym * SYMBOLS["compute_efficiency"].sym
    _bytes_side = SYMBOLS["flops_per_token"].sym * SYMBOLS["bandwidth"].sym * SYMBOLS["bandwidth_efficiency"].sym

    def _crossover_parts() -> tuple[sp.Expr, sp.Expr]:
        """The crossover batch's numerator and denominator, each collected for display."""
        roots = sp.solve(sp.Eq(_saved, _spent), _b_real)
        if len(roots) != 1:  # pragma: no cover - guards a change of the decode formulas
            raise RuntimeError(f"expected one crossover batch, got {roots}")
        num, den = sp.fraction(sp.together(roots[0]))
        if num.could_extract_minus_sign():
            num, den = -num, sp.expand(-den)
        return (
            sp.factor_terms(sp.collect(sp.expand(num), [_t_over, draft_overhead], func=sp.factor)),
            sp.collect(sp.expand(den), [_flops_side, _bytes_side], func=sp.factor_terms),
        )

    _num, _den = derived(
        "speculative_crossover_batch",
        (_saved, _spent, _b_real, _t_over, draft_overhead, _flops_side, _bytes_side),
        _crossover_parts,
    )
    formula(
        "speculative_crossover_batch",
        "batch",
        sp.Mul(_num, sp.Pow(_den, -1), evaluate=False),
        "batch beyond which speculation costs throughput (plain step and draft memory-bound, verification compute-bound)",
        CHAPTER,
    )


@functools.cache
def best_draft_tokens_expression() -> sp.Expr:
    """The draft length that maximises the memory-bound speed-up ``tau(alpha, k_d) / (1 + k_d r_d)``,
    solved by SymPy: d S / d k_d = 0 (k_d taken as real) has the root

        k_d* = (1 + W_{-1}(-alpha^{1/r_d - 1} / e)) / ln(alpha) - 1 / r_d,

    with W_{-1} the lower real branch of the Lambert W function. SymPy's ``solve`` returns the principal
    branch W_0, whose root is negative (W_0 > -1 makes the first term negative); the branch W_{-1} < -1
    gives the positive root, where the derivative changes sign from + to - (the maximum). It is real for
    0 < alpha < 1 and 0 < r_d <= 1, and grows without bound as the draft's cost r_d goes to zero.
    Solved on first use (a second or so), not at import: a calculator never needs it.

    The per-step overhead (``step_overhead_ms`` of the assumptions) keeps the form: a memory-bound
    verification pays it as a plain step does, so t_ver = t_step still holds, and r_d is a draft
    step's time *with* its own fixed cost over a plain step's with its overhead (under the course's
    method, 1 ms a step and 0.03 ms a head step, Llama 3.1 8B's EAGLE-3 head at 2,150 tokens costs
    r_d = 0.396 / 7.969 = 0.050 of a plain step; were each draft step to pay the full 1 ms, 1.366 / 7.969 =
    0.171, and the best draft would be shorter).

    Examples
    --------
    >>> k = best_draft_tokens_expression()
    >>> a, r = sp.Symbol(r"\\alpha", positive=True), sp.Symbol("r_{d}", positive=True)
    >>> round(float(k.subs({a: 0.8, r: 0.05})), 2)
    7.86
    """
    make_symbols()  # this module's symbols (acceptance, draft_tokens), if SymPy was not needed before
    k_real = sp.Symbol("k_real", positive=True)
    x = sp.Symbol("x", positive=True)  # x = alpha^(k + 1)
    s = FORMULAS["speculative_speedup_memory_bound"].expr.subs(draft_tokens, k_real)  # the sections run first
    slope = sp.numer(sp.together(sp.diff(s, k_real)))
    in_x = sp.expand(slope.subs(acceptance ** (k_real + 1), x).subs(k_real, sp.log(x) / sp.log(acceptance) - 1))
    roots = sp.solve(in_x, x)
    if len(roots) != 1:  # pragma: no cover - guards a change of SymPy's answer
        raise RuntimeError(f"expected one root of the slope, got {roots}")
    lower = roots[0].replace(sp.LambertW, lambda z, *branch: sp.LambertW(z, -1))
    return sp.simplify(sp.expand_log(sp.log(lower), force=True) / sp.log(acceptance) - 1)


defer(globals())  # the symbols above are made when SymPy is first needed
