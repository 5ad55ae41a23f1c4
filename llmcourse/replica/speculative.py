"""Speculative decoding and multi-token prediction, in the one replica model.

A cheap *draft* proposes ``k`` tokens; the target model checks all of them in one step over
``k + 1`` positions per sequence, keeps the longest prefix it agrees with and adds one token of its
own. With each draft token accepted with probability ``alpha`` (independently), a verification step
yields on average

    tau = 1 + alpha + ... + alpha^k = (1 - alpha^(k+1)) / (1 - alpha)

tokens (:func:`expected_tokens`; the sum is worked out by SymPy in
:mod:`llmcourse.formulas.speculative`). A cycle costs one verification plus ``k`` draft steps, so the
speed-up over plain decode at the same batch is ``S = tau x t_step / (t_ver + k t_draft)``: per user,
and, since the batch is the same, per GPU.

Every time comes from :func:`llmcourse.replica.step.decode_step`:

* the plain step: ``decode_step(batch=B)``;
* the verification: the same step with the FLOPs (and, for a mixture of experts, the experts
  touched) of ``B (k + 1)`` positions, but the weights read once and the KV cache of ``B``
  sequences: ``decode_step(batch=B (k + 1), kv_bytes=kv_bytes / (k + 1))``, i.e. each of the
  ``B (k + 1)`` rows is charged a ``1 / (k + 1)`` share of its sequence's cache, so the cache read is
  exactly ``B`` sequences' (the step rule, the attention FLOPs at the context, the collectives of
  ``B (k + 1)`` tokens and the per-step overhead are then the planner's own);
* a draft step: ``decode_step`` of the draft model (a smaller model, an EAGLE head or an MTP block,
  :data:`llmcourse.catalog.drafts.KINDS`) at batch ``B``; an n-gram lookup costs no GPU time.

The verification is a decode step and pays the assumptions' fixed per-step overhead (``step_overhead_ms``,
1 ms under the course's method). What a draft step pays besides its reads, FLOPs and (on several GPUs) its
collectives is the assumptions' rule ``speculative_overhead`` (:func:`draft_step_overhead`):

* ``"per_cycle"`` (the course's method, as engines run it): the k draft forwards run inside the same engine
  step as the verification, so the scheduler's overhead is paid once per cycle and each draft step pays a
  launch-scale cost only (``draft_step_overhead_ms`` for an EAGLE head or an MTP block,
  ``draft_model_step_overhead_ms`` for a separate draft model). vLLM V1's ``SpecDecodeBaseProposer.propose``
  (``vllm/v1/spec_decode/eagle.py``; ``EagleProposer`` and ``DraftModelProposer`` in ``draft_model.py`` share it)
  loops over the draft forwards in the model runner's step, each a CUDA-graph replay; SGLang's ``EAGLEWorker``
  (``python/sglang/srt/speculative/eagle_worker.py``) captures its ``speculative_num_steps`` draft forwards in one
  graph (``EAGLEDraftCudaGraphRunner``); TensorRT-LLM's one-model EAGLE-3 and MTP insert the drafter into the
  target's model code and launch the whole drafting loop as a single CUDA graph, while its two-model mode runs
  the draft model's forwards from the executor, one per draft step (the dearer draft-model cost).
* ``"per_step"`` (the sources' presets, whose overhead is 0 anyway): every draft step is a decode step of its
  own and pays the full ``step_overhead_ms``, so a cycle pays it ``k + 1`` times for ``tau`` tokens.

Under ``"per_cycle"`` a cycle pays the overhead once for ``tau`` tokens where plain decode pays it ``tau``
times: speculation saves overhead as well as reads.

While decode is memory-bound the verification costs about what a plain step does and speculation
pays ``tau`` over the draft's cost; once the batch makes the verification compute-bound it pays
``k + 1`` times the FLOPs for ``tau`` tokens, and beyond a crossover batch speculation costs
throughput. The draft's weights and KV cache share the GPUs' memory with the target's
(:func:`speculative_memory`), so fewer sequences fit.

Built on this model, elsewhere: the draft heads and the kinds of draft are catalog data
(:mod:`llmcourse.catalog.drafts`); the published acceptance figures, each with the rate it implies, are
:mod:`llmcourse.replica.acceptance`; the best draft length and the crossover batch (searched, and SymPy's closed
form) are planning decisions (:mod:`llmcourse.planner.speculation`); the seeded Monte-Carlo twin of the
accept/reject loop is :mod:`llmcourse.simulator.speculative`.

Defined in the chapter *Speculative decoding* (``book/08b_speculative.md``).

Examples
--------
>>> expected_tokens(0.8, 4), expected_tokens(0, 4)
(3.3616, 1.0)
>>> s = speculative_step("Llama-3.1-70B", "H100 SXM", Speculation("draft model", 4, 0.8, "Llama-3.1-8B"),
...                      batch=1, context_tokens=2_150, tensor_parallel=2, weight_bytes="fp8")
>>> round(s.speedup, 2), s.verify.bound
(2.08, 'memory')
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass, field
from typing import Any

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model, bytes_per_value, models
from llmcourse.catalog.drafts import KINDS, draft_heads, drafts
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import checked, si
from llmcourse.replica.base import MS_TO_S, gpu_of, model_of
from llmcourse.replica.memory import admission_si, kv_copies_si, kv_sequence_si, usable_si, weights_si
from llmcourse.replica.step import DecodeStep, decode_step, decode_steps
from llmcourse.units import BYTE, GB, S, fmt, in_unit, parsed_unit, plain_number, quantity, to

_MS = parsed_unit("ms")[0]

__all__ = [
    "MAX_DRAFT_TOKENS",
    "Speculation",
    "SpeculativeMemory",
    "SpeculativeStep",
    "acceptance_from_length",
    "acceptance_of",
    "check_speculating_engine",
    "draft_step_overhead",
    "draft_tokens_of",
    "expected_tokens",
    "shared_speculative_step",
    "speculation_of",
    "speculative_cycle",
    "speculative_memory",
    "speculative_step",
]


# --- input checks ------------------------------------------------------------------------------------
def check_speculating_engine(engine: str) -> None:
    """Refuse speculation under an engine the speculative replica does not model: llama.cpp, whose memory (its own
    rule, the window cache its slots share, its slots) is not the speculative replica's, which sizes the target and
    the draft as a datacenter engine holds them.

    Examples
    --------
    >>> check_speculating_engine("vLLM")
    >>> check_speculating_engine("llama.cpp")
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: speculation under llama.cpp is not modelled: the speculative replica sizes its memory as a datacenter engine does, not by llama.cpp's rule, window cache and slots. Leave speculation off (speculation=None) for llama.cpp, or give a datacenter engine (engine="vLLM").
    """
    if engine == "llama.cpp":
        raise InputError(
            "speculation under llama.cpp is not modelled: the speculative replica sizes its memory as a datacenter "
            "engine does, not by llama.cpp's rule, window cache and slots. Leave speculation off (speculation=None) "
            'for llama.cpp, or give a datacenter engine (engine="vLLM").'
        )


def acceptance_of(value: Any) -> float:
    """The per-token acceptance rate ``value`` (alpha) checked: a plain fraction in [0, 1), else an
    :class:`~llmcourse.errors.InputError` that says what to give (the check of every function here that takes an
    acceptance rate, the Monte-Carlo twin's too).

    Examples
    --------
    >>> acceptance_of(0.7), acceptance_of(0)
    (0.7, 0.0)
    >>> acceptance_of(70)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: acceptance (alpha, the chance the target accepts each draft token) must be at least 0 and below 1; got 70. A percentage? Write 0.7 for 70%. At 1 every draft token would be accepted forever; use a measured rate (llmcourse.replica.acceptance.published() lists some).
    """
    what = "acceptance (alpha, the chance the target accepts each draft token)"
    try:
        a = plain_number(value, what, allow_zero=True)
    except InputError as exc:
        raise InputError(f"{exc} Give a fraction in [0, 1), e.g. acceptance=0.7.") from None
    if a >= 1:
        hint = f" A percentage? Write {a / 100:g} for {a:g}%." if 1 < a <= 100 else ""
        raise InputError(
            f"{what} must be at least 0 and below 1; got {value!r}.{hint} At 1 every draft token would be "
            "accepted forever; use a measured rate (llmcourse.replica.acceptance.published() lists some)."
        )
    return a


#: The most draft tokens a verification step may check (a bound on input, far above what engines use).
MAX_DRAFT_TOKENS = 64


def draft_tokens_of(value: Any) -> int:
    """The number of tokens the draft proposes per verification step (k) checked: a whole number from 1 to
    :data:`MAX_DRAFT_TOKENS`, else an :class:`~llmcourse.errors.InputError` that says what to give (the check of
    every function here that takes a draft length, the planner's searches and the Monte-Carlo twin's too).

    Examples
    --------
    >>> draft_tokens_of(4), draft_tokens_of(4.0)
    (4, 4)
    >>> draft_tokens_of(2.5)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: draft_tokens (k, the tokens the draft proposes per verification step) must be a whole number; got 2.5. Round it: draft_tokens=2.
    """
    what = "draft_tokens (k, the tokens the draft proposes per verification step)"
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) > MAX_DRAFT_TOKENS:
        if value < 1:
            raise InputError(f"{what} must be 1 or more; got {value!r}. Try draft_tokens=4.")
        raise InputError(
            f"{what} must be at most {MAX_DRAFT_TOKENS} (engines propose a handful; past that every extra token is "
            f"almost surely rejected); got {value!r}."
        )
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"{what} must be a whole number, 1 or more; got {value!r}. Try draft_tokens=4.")
    if value != int(value):
        raise InputError(
            f"{what} must be a whole number; got {value!r}. Round it: draft_tokens={max(1, round(value))}."
        )
    if value < 1:
        raise InputError(
            f"{what} must be 1 or more; got {value!r}. With no draft tokens there is no speculation: "
            "leave speculation out for plain decode."
        )
    return int(value)


def _bytes_per(value: Any, name: str) -> pint.Quantity:
    """Bytes per value from a precision name, a number of bytes or a byte quantity."""
    if isinstance(value, pint.Quantity):
        q = to(value, "B")
        plain_number(q.m, name)
        return q
    try:
        return quantity(bytes_per_value(value), parsed_unit("B")[0])
    except InputError as exc:
        raise InputError(f"{name}: {exc}") from None


# --- what a deployment speculates with -------------------------------------------------------------------
@dataclass(frozen=True)
class Speculation:
    """Speculative decoding as an option of a deployment: the kind of draft, the tokens it proposes
    per verification step (``draft_tokens``, k) and the chance the target accepts each one
    (``acceptance``, alpha, in [0, 1)).

    ``draft_model`` is the draft: required for ``"draft model"`` (a catalog name such as
    ``"Llama-3.1-8B"``, or a :class:`~llmcourse.catalog.Model`); for ``"eagle head"`` and ``"mtp"``
    it defaults to the head or block :func:`drafts` lists for the target; an ``"ngram"`` lookup has
    none. ``draft_weight_bytes`` is the draft's precision (by default the target's).

    Examples
    --------
    >>> Speculation("eagle head", 4, 0.7).expected_tokens
    2.7731
    >>> Speculation("ngram", 2.5, 0.7)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: draft_tokens (k, the tokens the draft proposes per verification step) must be a whole number; got 2.5. Round it: draft_tokens=2.
    >>> Speculation("eagle", 4, 0.7)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: unknown kind of draft 'eagle'. Did you mean 'eagle head'? Kinds: 'draft model', 'eagle head', 'mtp', 'ngram'.
    """

    kind: str
    draft_tokens: int
    acceptance: float
    draft_model: Model | str | None = None
    draft_weight_bytes: Any = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            close = difflib.get_close_matches(str(self.kind), list(KINDS), n=1, cutoff=0.3)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise InputError(f"unknown kind of draft {self.kind!r}.{hint} Kinds: {', '.join(map(repr, KINDS))}.")
        object.__setattr__(self, "draft_tokens", draft_tokens_of(self.draft_tokens))
        object.__setattr__(self, "acceptance", acceptance_of(self.acceptance))
        if self.kind == "ngram" and self.draft_model is not None:
            raise InputError("an n-gram lookup has no draft model: leave draft_model=None (or pick another kind).")
        if self.kind == "draft model" and self.draft_model is None:
            raise InputError(
                "kind 'draft model' needs draft_model=...: a catalog name such as 'Llama-3.1-8B', or a Model."
            )
        if self.draft_weight_bytes is not None:
            _bytes_per(self.draft_weight_bytes, "draft_weight_bytes")

    @property
    def expected_tokens(self) -> float:
        """Tokens per verification step on average (the acceptance length)."""
        return expected_tokens(self.acceptance, self.draft_tokens)

    def with_(self, **changes: Any) -> Speculation:
        """A copy with some fields changed (checked again)."""
        return dataclasses.replace(self, **changes)

    def label(self) -> str:
        """A short description for tables: ``eagle head, k = 4, alpha = 0.7``."""
        return f"{self.kind}, k = {self.draft_tokens}, alpha = {self.acceptance:g}"

    def draft_for(self, target: Model | str) -> Model | None:
        """The draft model for ``target`` (None for n-gram), checked to be smaller than the target."""
        t = model_of(target)
        if self.kind == "ngram":
            return None
        d = self.draft_model
        if d is None:
            found = [n for n, (kind, tgt) in draft_heads().items() if kind == self.kind and tgt == t.name]
            if not found:
                raise InputError(
                    f"no {self.kind} for {t.name} in llmcourse/data/speculative_drafts.csv: give draft_model=Model(...) "
                    "with its layers and parameters, or use kind 'draft model' or 'ngram'."
                )
            d = found[0]
        if isinstance(d, str):
            rows = draft_heads()
            if d in rows:
                kind, tgt = rows[d]
                if tgt != t.name:
                    raise InputError(f"{d} is a draft for {tgt}, not for {t.name}: pick one made for {t.name}.")
                if kind != self.kind:
                    raise InputError(f"{d} is an {kind}, not a {self.kind}: use Speculation({kind!r}, ...).")
                d = drafts()[d]
            else:
                try:
                    d = models[d]
                except UnknownNameError as exc:
                    raise UnknownNameError(f"{exc} Draft heads: {', '.join(rows)}.") from None
        if not isinstance(d, Model):
            raise InputError(f"draft_model must be a catalog name or a Model; got {type(d).__name__}.")
        if d.params >= t.params:
            raise InputError(
                f"the draft {d.name} ({d.params / 1e9:.3g} B parameters) is not smaller than the target {t.name} "
                f"({t.params / 1e9:.3g} B): a draft must be much cheaper than the model it drafts for. Pick a smaller "
                "draft model, an EAGLE head, the model's MTP block or an n-gram lookup."
            )
        return d


def expected_tokens(acceptance: float, draft_tokens: int) -> float:
    """Expected tokens per verification step, ``(1 - alpha^(k+1)) / (1 - alpha)``: the accepted prefix
    of ``draft_tokens`` draft tokens, each accepted with probability ``acceptance`` (independently),
    plus the target's own token. A plain number, rounded to 12 significant figures.

    Examples
    --------
    >>> expected_tokens(0.8, 4)
    3.3616
    >>> expected_tokens(0, 4)  # nothing accepted: the target's own token only
    1.0
    >>> expected_tokens(1.0, 4)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: acceptance (alpha, the chance the target accepts each draft token) must be at least 0 and below 1; got 1.0. At 1 every draft token would be accepted forever; use a measured rate (llmcourse.replica.acceptance.published() lists some).
    """
    a, k = acceptance_of(acceptance), draft_tokens_of(draft_tokens)
    tau = float(F["speculative_expected_tokens"](acceptance=a, draft_tokens=k).m)
    return float(f"{tau:.12g}")


def acceptance_from_length(length: float, draft_tokens: int) -> float:
    """The per-token acceptance rate whose expected tokens per step is ``length`` (a published
    acceptance length, which counts the target's own token) at ``draft_tokens``: the inverse of
    :func:`expected_tokens`, by bisection (it grows with the rate). This reads a length as if every
    position were accepted with the same chance; real acceptance falls along the draft.

    Examples
    --------
    >>> round(acceptance_from_length(3.3616, 4), 6)
    0.8
    >>> acceptance_from_length(5.2, 4)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: an acceptance length of 5.2 is impossible with 4 draft tokens: it is at least 1 and below 5 (k + 1).
    """
    k = draft_tokens_of(draft_tokens)
    n = plain_number(length, "length (tokens per verification step)")
    if not 1 <= n < k + 1:
        raise InputError(
            f"an acceptance length of {n:g} is impossible with {k} draft tokens: it is at least 1 and below {k + 1} (k + 1)."
        )
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expected_tokens(mid, k) < n else (lo, mid)
    return (lo + hi) / 2


# --- memory: the draft's weights and KV cache beside the target's --------------------------------------------
@dataclass(frozen=True)
class SpeculativeMemory:
    """What the target and its draft hold on the replica's GPUs."""

    weights: pint.Quantity
    draft_weights: pint.Quantity
    kv_per_sequence: pint.Quantity
    draft_kv_per_sequence: pint.Quantity
    usable_memory: pint.Quantity
    max_batch: int
    plain_max_batch: int
    where: str
    #: with admission "blocks": (a conversation's KV on average, what its answer adds), target and draft together,
    #: in bytes, as :func:`~llmcourse.replica.memory.admission_si` admitted the batch on them; None: at the final length
    admitted: tuple[float, float] | None = None
    admission_spreads: float = 0.0

    def kv_in_use(self, batch: int) -> pint.Quantity:
        """The KV cache (target and draft) ``batch`` conversations hold: staggered (formula ``kv_in_use``) when
        admitted on the blocks in use, else all at their final length."""
        final = float(to(self.kv_per_sequence + self.draft_kv_per_sequence, BYTE).m)
        if self.admitted is None:
            return in_unit(batch * final, BYTE, GB)
        mean, growth = self.admitted
        held = F["kv_in_use"].value(batch=batch, kv_per_sequence=final, kv_mean=mean, kv_growth=growth,
                                    admission_spreads=self.admission_spreads)  # fmt: skip
        return in_unit(held, BYTE, GB)

    def draft_memory(self, batch: int) -> pint.Quantity:
        """The draft's weights plus the KV cache of ``batch`` sequences."""
        return to(self.draft_weights + batch * self.draft_kv_per_sequence, "GB")

    def needed(self, batch: int) -> pint.Quantity:
        """Target and draft: weights plus the KV cache of ``batch`` sequences."""
        return (self.weights + self.draft_weights + batch * (self.kv_per_sequence + self.draft_kv_per_sequence)).to(
            "GB"
        )

    def check(self, batch: int) -> None:
        """Raise an :class:`InputError` that says what to change if ``batch`` sequences do not fit."""
        if self.max_batch < batch:
            raise InputError(self.reason(batch))

    def reason(self, batch: int) -> str:
        w, wd = self.weights, self.draft_weights
        if w + wd >= self.usable_memory:
            return (
                f"the weights ({fmt(w, 'GB')}) and the draft's ({fmt(wd, 'GB')}) don't fit in the "
                f"{fmt(self.usable_memory, 'GB')} usable on {self.where}: add GPUs (tensor_parallel), store fewer "
                "bytes per weight, or use a smaller draft (an EAGLE head, MTP or n-gram)."
            )
        return (
            f"a batch of {batch} needs {fmt(self.needed(batch), 'GB')} with the draft ({fmt(wd, 'GB')} of draft "
            f"weights, {fmt(self.draft_kv_per_sequence, 'MB')} of draft KV per sequence) but "
            f"{fmt(self.usable_memory, 'GB')} is usable on {self.where}: at most {self.max_batch} sequences fit "
            f"(without the draft, {self.plain_max_batch}). Lower the batch to {max(self.max_batch, 1)}, shorten the "
            "context, use a smaller draft, or add GPUs."
        )


def _where(g: GPU, tp: int) -> str:
    return f"one {g.name}" if tp == 1 else f"{tp} x {g.name}"


@checked
def speculative_memory(
    model: Model | str,
    gpu: GPU | str,
    speculation: Speculation,
    *,
    context_tokens: float,
    tensor_parallel: int = 1,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
    prompt_tokens: float | None = None,
) -> SpeculativeMemory:
    """The target's and the draft's weights, their KV caches per sequence (sized at
    ``context_tokens`` + k: the draft's tokens sit in the cache until they are checked; each copy a
    tensor-parallel replica keeps counted, :func:`~llmcourse.replica.memory.kv_copies`) and the
    largest batch whose caches fit beside both sets of weights in the usable memory of the
    assumptions, admitted as the plain replica admits it (:func:`~llmcourse.replica.memory.admission_si`: with
    ``prompt_tokens`` given and the assumptions' admission ``"blocks"``, on the KV blocks in use).

    Examples
    --------
    >>> m = speculative_memory("Llama-3.1-70B", "H100 SXM", Speculation("draft model", 4, 0.7, "Llama-3.1-8B"),
    ...                        context_tokens=2_300, tensor_parallel=2, weight_bytes="fp8")
    >>> m.plain_max_batch, m.max_batch, fmt(m.draft_memory(m.max_batch), "GB")
    (97, 61, '26.5 GB')
    """
    m, g = model_of(model), gpu_of(gpu)
    spec = speculation_of(speculation)
    a = resolve(assumptions)
    tp = int(tensor_parallel)
    draft = spec.draft_for(m)
    held = context_tokens + spec.draft_tokens
    # the planner's plain floats in bytes (the formulas by value, as its replica sizes its memory); units at the end
    w = weights_si(m, weight_bytes)
    wd = kd = 0.0
    if draft is not None:
        wd = weights_si(draft, spec.draft_weight_bytes or weight_bytes)
        kd = kv_sequence_si(draft, held, kv_bytes, kv_copies_si(draft, tp, a))
    kv = kv_sequence_si(m, held, kv_bytes, kv_copies_si(m, tp, a))  # each GPU keeps at least one KV head
    both = w + wd
    usable = usable_si(g, tp, a, both)
    kv_plain = kv_sequence_si(m, context_tokens, kv_bytes, kv_copies_si(m, tp, a))
    answer = None if prompt_tokens is None else context_tokens - prompt_tokens

    def kv_at(t: float) -> float:  # target and draft at t tokens, the k drafted tokens held besides
        d = kv_sequence_si(draft, t + spec.draft_tokens, kv_bytes, kv_copies_si(draft, tp, a)) if draft else 0.0
        return kv_sequence_si(m, t + spec.draft_tokens, kv_bytes, kv_copies_si(m, tp, a)) + d

    def plain_at(t: float) -> float:
        return kv_sequence_si(m, t, kv_bytes, kv_copies_si(m, tp, a))

    admitted = admission_si(a, usable, both, kv + kd, kv_at, prompt_tokens, answer)

    return SpeculativeMemory(
        weights=in_unit(w, BYTE, GB),
        draft_weights=in_unit(wd, BYTE, GB),
        kv_per_sequence=in_unit(kv, BYTE, GB),
        draft_kv_per_sequence=in_unit(kd, BYTE, GB),
        usable_memory=in_unit(usable, BYTE, GB),
        max_batch=admitted[0],
        plain_max_batch=admission_si(a, usable_si(g, tp, a, w), w, kv_plain, plain_at, prompt_tokens, answer)[0],
        where=_where(g, tp),
        admitted=admitted[1],
        admission_spreads=a.admission_spreads,
    )


def speculation_of(value: Any) -> Speculation:
    """``value`` checked to be a :class:`Speculation` (the check of every function that takes a deployment's
    draft, the replica model's and the planner's too), else an :class:`~llmcourse.errors.InputError` that shows
    how to make one.

    Examples
    --------
    >>> speculation_of(Speculation("eagle head", 4, 0.7)).draft_tokens
    4
    >>> speculation_of("eagle head")
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: speculation must be a Speculation(kind, draft_tokens, acceptance, draft_model=None), e.g. Speculation('eagle head', 4, 0.7).
    """
    if not isinstance(value, Speculation):
        raise InputError(
            "speculation must be a Speculation(kind, draft_tokens, acceptance, draft_model=None), e.g. "
            "Speculation('eagle head', 4, 0.7)."
        )
    return value


def draft_step_overhead(assumptions: Assumptions | str | None, speculation: Speculation) -> float:
    """The fixed time (ms) each draft step of ``speculation`` pays besides its reads, FLOPs and collectives, by the
    assumptions' rule ``speculative_overhead``: ``"per_step"``, the per-step overhead of a decode step
    (``step_overhead_ms``); ``"per_cycle"``, the launch-scale cost of a draft step run inside the engine's step
    (``draft_step_overhead_ms`` for an EAGLE head or an MTP block, ``draft_model_step_overhead_ms`` for a separate
    draft model). An n-gram lookup runs no step on the GPU: 0 either way.

    Examples
    --------
    >>> head, draft = Speculation("eagle head", 3, 0.75), Speculation("draft model", 3, 0.75, "Llama-3.1-8B")
    >>> draft_step_overhead("course", head), draft_step_overhead("course", draft)
    (0.03, 0.1)
    >>> draft_step_overhead(resolve().replace(speculative_overhead="per_step"), head)  # the full 1 ms a step
    1.0
    >>> draft_step_overhead("course", Speculation("ngram", 3, 0.6)), draft_step_overhead("lab", head)
    (0.0, 0.0)
    """
    a, spec = resolve(assumptions), speculation_of(speculation)
    if spec.kind == "ngram":
        return 0.0
    if a.speculative_overhead == "per_step":
        return a.step_overhead_ms
    return a.draft_model_step_overhead_ms if spec.kind == "draft model" else a.draft_step_overhead_ms


def _draft_assumptions(a: Assumptions, spec: Speculation) -> Assumptions:
    """The assumptions a draft step is timed under: ``a`` with its per-step overhead set to the draft step's
    (:func:`draft_step_overhead`), so that the draft's :class:`~llmcourse.replica.step.DecodeStep` carries it as
    its ``overhead_time``."""
    return a.replace(step_overhead_ms=draft_step_overhead(a, spec))


# --- the speculative step ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpeculativeStep:
    """One speculative cycle of a batch: ``k`` draft steps, then a verification over ``k + 1`` positions
    per sequence, against the plain decode step of the same batch.

    ``verify`` is a :class:`~llmcourse.replica.step.DecodeStep` whose ``batch`` counts positions
    (``batch x (k + 1)``); ``draft`` is one draft step (None for n-gram).
    """

    speculation: Speculation
    batch: int
    context_tokens: float
    plain: DecodeStep
    verify: DecodeStep
    draft: DecodeStep | None
    expected_tokens: float
    draft_step_time: pint.Quantity
    cycle_time: pint.Quantity
    time_per_token: pint.Quantity
    throughput: pint.Quantity
    speedup: float
    memory: SpeculativeMemory = field(repr=False)

    @property
    def tokens_per_s_per_user(self) -> pint.Quantity:
        """Output tokens per second each user sees."""
        return to(1 / self.time_per_token, "1/s")

    @property
    def plain_throughput(self) -> pint.Quantity:
        """Output tokens per second of the same batch without speculation."""
        return self.plain.throughput

    @property
    def pays(self) -> bool:
        """Whether speculation is faster than plain decode at this batch (speed-up above 1)."""
        return self.speedup > 1

    def per_token_step(self) -> DecodeStep:
        """The cycle as an average decode step per output token: every time, byte and FLOP of the cycle
        (verification + k draft steps) over the expected tokens, ``step_time`` the time per output token;
        the collectives and the fixed overhead too (the verification's and each draft step's,
        :func:`draft_step_overhead`). It is what :func:`speculative_replica` puts in place of a replica's decode step."""
        k, tau = self.speculation.draft_tokens, self.expected_tokens
        d = self.draft

        def per_token(attr: str) -> pint.Quantity:
            mine = getattr(self.verify, attr)
            if mine is None:  # a step built without it (not by decode_step): nothing to add
                mine = quantity(0.0, parsed_unit("ms")[0])
            theirs = getattr(d, attr) if d is not None else None
            total = mine + (k * theirs if theirs is not None else 0 * mine)
            return total / tau

        return DecodeStep(
            batch=self.batch,
            weights_read=to(per_token("weights_read"), "GB"),
            kv_read=to(per_token("kv_read"), "GB"),
            flops=to(per_token("flops"), "GFLOP"),
            memory_time=to(per_token("memory_time"), "ms"),
            compute_time=to(per_token("compute_time"), "ms"),
            step_time=to(self.time_per_token, "ms"),
            fraction_of_experts=self.verify.fraction_of_experts,
            kernel_bounds=self.verify.kernel_bounds,
            comm_time=to(per_token("comm_time"), "ms"),
            overhead_time=to(per_token("overhead_time"), "ms"),
            layout=self.verify.layout,
        )

    def rows(self) -> list[tuple[str, str]]:
        """(label, value) rows for a table."""
        ms = lambda q: fmt(q, "ms")  # noqa: E731
        draft = (
            "none (a lookup)" if self.draft is None else f"{ms(self.draft_step_time)} x {self.speculation.draft_tokens}"
        )
        return [
            ("expected tokens per verification step", f"{self.expected_tokens:.3f}"),
            ("plain decode step", f"{ms(self.plain.step_time)} ({self.plain.bound}-bound)"),
            ("verification step", f"{ms(self.verify.step_time)} ({self.verify.bound}-bound)"),
            ("draft steps", draft),
            ("time per output token", f"{ms(self.time_per_token)} (plain {ms(self.plain.step_time)})"),
            (
                "tok/s per user",
                f"{self.tokens_per_s_per_user.m:,.0f} (plain {self.plain.tokens_per_s_per_user.m:,.0f})",
            ),
            ("tok/s in all", f"{self.throughput.m:,.0f} (plain {self.plain_throughput.m:,.0f})"),
            ("speed-up", f"{self.speedup:.2f}x"),
        ]


@dataclass(frozen=True)
class _StepTime:
    """A decode step's time alone (what the speed-up asks of it), for a search over the batch."""

    step_time: pint.Quantity


def speculative_cycle(
    m: Model,
    g: GPU,
    spec: Speculation,
    mem: SpeculativeMemory,
    *,
    batch: int,
    context_tokens: float,
    tp: int,
    weight_bytes: Any,
    kv_bytes: Any,
    a: Assumptions,
    steps: dict[str, Any] | None = None,
    speedup_only: bool = False,
) -> SpeculativeStep | float:
    """The speculative cycle of ``batch`` sequences for checked inputs (the catalog's ``m`` and ``g``, ``tp`` GPUs,
    the resolved assumptions ``a``, the draft's memory ``mem``: :func:`speculative_memory` of the same arguments),
    whether or not the batch fits (the caller checks): what :func:`speculative_step`, the replica model and the
    planner's crossover search compute. ``steps``: a dict a search over the batch passes to every call, where the
    three decode steps and the expected tokens are set up once (the same steps as decode_step's, by
    :func:`llmcourse.replica.step.decode_steps`); ``speedup_only``: the speed-up alone, a float.

    Examples
    --------
    >>> m, g, spec = model_of("Llama-3.1-8B"), gpu_of("H100 SXM"), Speculation("eagle head", 4, 0.7)
    >>> kw = dict(context_tokens=2_150, tp=1, weight_bytes=2, kv_bytes=2, a=resolve())
    >>> s = speculative_cycle(m, g, spec, speculative_memory(m, g, spec, context_tokens=2_150), batch=1, **kw)
    >>> fast = speculative_cycle(m, g, spec, s.memory, batch=1, **kw, steps={}, speedup_only=True)
    >>> round(s.speedup, 2), fast == s.speedup
    (2.33, True)
    """
    k, b = spec.draft_tokens, int(batch)
    common = dict(context_tokens=context_tokens, n_gpus=tp)

    def step(name: str, model: Any, batch: int, assumptions: Assumptions = a, **kw: Any) -> Any:
        if steps is None:
            return decode_step(model, g, batch=batch, **kw, **common, assumptions=assumptions)
        if name not in steps:
            steps[name] = decode_steps(model, g, **kw, **common, assumptions=assumptions, gives="either")
        if speedup_only:  # the speed-up needs the steps' times alone: DecodeStep.step_time, as decoder sets it
            return _StepTime(in_unit(steps[name](batch, True), S, _MS))
        return steps[name](batch)

    plain = step("plain", m, b, weight_bytes=weight_bytes, kv_bytes=kv_bytes)
    # b (k + 1) positions: their FLOPs and experts; each charged 1/(k + 1) of its sequence's cache (the share is
    # needed only where the verification's steps are set up)
    share = None if steps is not None and "verify" in steps else _bytes_per(kv_bytes, "kv_bytes") / (k + 1)
    verify = step("verify", m, b * (k + 1), weight_bytes=weight_bytes, kv_bytes=share)
    draft_model, wd = spec.draft_for(m), spec.draft_weight_bytes or weight_bytes
    draft = None
    t_draft = quantity(0.0, _MS)
    if draft_model is not None:  # a decode step of the draft, with a draft step's fixed cost (draft_step_overhead)
        a_d = a if steps and "draft" in steps else _draft_assumptions(a, spec)  # set up once in a search
        draft = step("draft", draft_model, b, a_d, weight_bytes=wd, kv_bytes=kv_bytes)
        t_draft = draft.step_time
    if steps is None:
        tau = F["speculative_expected_tokens"](acceptance=spec.acceptance, draft_tokens=k)
    else:  # it does not depend on the batch
        if "tau" not in steps:
            steps["tau"] = F["speculative_expected_tokens"](acceptance=spec.acceptance, draft_tokens=k)
            # the plain float the formulas take for it (formulas.core._plain: a dimensionless quantity's magnitude)
            steps["tau_value"] = si(steps["tau"], "expected_tokens")
        tau = steps["tau"]
    if speedup_only and steps is not None:  # the speed-up's formula by value: the times (ms) in s, as a call converts
        return float(
            F["speculative_speedup"].value(
                expected_tokens=steps["tau_value"],
                step_time=plain.step_time._magnitude * MS_TO_S,
                verify_time=verify.step_time._magnitude * MS_TO_S,
                draft_tokens=k,
                draft_step_time=t_draft._magnitude * MS_TO_S,
            )
        )
    cycle = None
    if not speedup_only:
        cycle = F["speculative_cycle_time"](verify_time=verify.step_time, draft_tokens=k, draft_step_time=t_draft)
    speed = F["speculative_speedup"](
        expected_tokens=tau,
        step_time=plain.step_time,
        verify_time=verify.step_time,
        draft_tokens=k,
        draft_step_time=t_draft,
    )
    if speedup_only:
        return float(to(speed, "").m)
    return SpeculativeStep(
        speculation=spec,
        batch=b,
        context_tokens=float(context_tokens),
        plain=plain,
        verify=verify,
        draft=draft,
        expected_tokens=float(tau.m),
        draft_step_time=to(t_draft, "ms"),
        cycle_time=to(cycle, "ms"),
        time_per_token=to(F["speculative_token_time"](cycle_time=cycle, expected_tokens=tau), "ms"),
        throughput=to(F["speculative_throughput"](batch=b, expected_tokens=tau, cycle_time=cycle), "1/s"),
        speedup=float(to(speed, "").m),
        memory=mem,
    )


@checked
def speculative_step(
    model: Model | str,
    gpu: GPU | str,
    speculation: Speculation,
    *,
    batch: int = 1,
    context_tokens: float,
    tensor_parallel: int = 1,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
    fit_context_tokens: float | None = None,
    check_memory: bool = True,
) -> SpeculativeStep:
    """One speculative cycle of ``batch`` sequences whose KV caches are read at ``context_tokens``,
    against plain decode, all from :func:`~llmcourse.replica.step.decode_step` under ``assumptions`` (the
    course's by default): the time per output token, tokens per second per user and in all, and the
    speed-up. The batch must fit with the draft's weights and KV cache (:func:`speculative_memory`,
    sized at ``fit_context_tokens``, by default ``context_tokens``: the replica model passes the
    final length, prompt + answer); if it does not, an :class:`InputError` says what to change
    (``check_memory=False`` times the batch anyway: a question about speed alone).

    Examples
    --------
    >>> s = speculative_step("Llama-3.1-8B", "H100 SXM", Speculation("eagle head", 4, 0.7), batch=1,
    ...                      context_tokens=2_150)
    >>> round(s.expected_tokens, 4), round(s.speedup, 2), fmt(s.time_per_token, "ms")
    (2.7731, 2.33, '3.74 ms')
    >>> speculative_step("Llama-3.1-70B", "H100 SXM", Speculation("draft model", 4, 0.7, "Llama-3.1-8B"),
    ...                  batch=80, context_tokens=2_300, tensor_parallel=2, weight_bytes="fp8")
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: a batch of 80 needs 163 GB with the draft (8.03 GB of draft weights, 302 MB of draft KV per sequence) but 144 GB is usable on 2 x H100 SXM: at most 61 sequences fit (without the draft, 97). Lower the batch to 61, shorten the context, use a smaller draft, or add GPUs.
    """
    return _speculative_step(
        model, gpu, speculation, batch=batch, context_tokens=context_tokens, tensor_parallel=tensor_parallel,
        weight_bytes=weight_bytes, kv_bytes=kv_bytes, assumptions=assumptions, fit_context_tokens=fit_context_tokens,
        check_memory=check_memory,
    )  # fmt: skip


def _speculative_step(
    model: Model | str,
    gpu: GPU | str,
    speculation: Speculation,
    *,
    batch: int = 1,
    context_tokens: float,
    tensor_parallel: int = 1,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
    fit_context_tokens: float | None = None,
    check_memory: bool = True,
    steps: dict[str, Any] | None = None,
) -> SpeculativeStep:
    """:func:`speculative_step` for checked inputs, its decode steps set up in ``steps`` (see
    :func:`speculative_cycle`) if given (:func:`shared_speculative_step`: with speculative_step's checks)."""
    m, g, spec = model_of(model), gpu_of(gpu), speculation_of(speculation)
    a = resolve(assumptions)
    held = context_tokens if fit_context_tokens is None else plain_number(fit_context_tokens, "fit_context_tokens")
    kw = dict(tensor_parallel=tensor_parallel, weight_bytes=weight_bytes, kv_bytes=kv_bytes, assumptions=a)
    mem = speculative_memory(m, g, spec, context_tokens=held, **kw)
    if check_memory:
        mem.check(int(batch))
    return speculative_cycle(
        m,
        g,
        spec,
        mem,
        batch=batch,
        context_tokens=context_tokens,
        tp=int(tensor_parallel),
        weight_bytes=weight_bytes,
        kv_bytes=kv_bytes,
        a=a,
        steps=steps,
    )


@checked
def shared_speculative_step(
    model: Model | str,
    gpu: GPU | str,
    speculation: Speculation,
    *,
    batch: int = 1,
    context_tokens: float,
    tensor_parallel: int = 1,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
    fit_context_tokens: float | None = None,
    check_memory: bool = True,
    steps: dict[str, Any] | None = None,
) -> SpeculativeStep:
    """:func:`speculative_step`, with its checks, whose decode steps are set up in ``steps`` (a dict, empty at
    first) and kept there for a caller that then searches over the batch with the same arguments: the speculative
    calculator passes the same dict to :func:`llmcourse.planner.speculation.crossover_search`, so the step and the
    crossover share one set-up (see :func:`speculative_cycle`). The same step, to the same floats, as
    :func:`speculative_step`.

    Examples
    --------
    >>> steps = {}
    >>> s = shared_speculative_step("Llama-3.1-8B", "H100 SXM", Speculation("eagle head", 4, 0.7),
    ...                             context_tokens=2_150, steps=steps)
    >>> round(s.speedup, 2), sorted(steps)
    (2.33, ['draft', 'plain', 'tau', 'tau_value', 'verify'])
    """
    return _speculative_step(
        model, gpu, speculation, batch=batch, context_tokens=context_tokens, tensor_parallel=tensor_parallel,
        weight_bytes=weight_bytes, kv_bytes=kv_bytes, assumptions=assumptions, fit_context_tokens=fit_context_tokens,
        check_memory=check_memory, steps=steps,
    )  # fmt: skip
