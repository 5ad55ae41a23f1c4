"""Timed estimate drills: the widget of the chapter *Drills* (``book/15_drills.md``).

A :class:`Drill` deals a random estimate question drawn from the planner (KV per token, KV for
a context, weights, the largest batch, decode speed, GPUs for a traffic figure), reads a typed
answer with units (``"320 KiB"``, ``"0.75 GB"``, ``"47 tok/s"``, ``"12"``), passes it when it
is within a factor of :data:`FACTOR` (1.5) of the planner's figure, shows that figure and the
time taken, and keeps a score and a streak for the session. The band is tight enough that the
factor-of-two slips the course warns about (keys *and* values, BF16 vs FP8 bytes, per GPU vs per
replica) miss, and names the likely slip; rounding and KiB vs kB pass. A typed answer it cannot
use (no number, no unit where one is needed, the wrong kind of unit) gets a message, never a
traceback, and does not count.

The figures come from the planner under the course's method (``assumptions=None``), except the
single-user decode speed, which asks for the ceiling at the datasheet bandwidth (the
back-of-the-envelope method's, ``"envelope"``) and shows the course's figure beside it.

Driven from code (as the tests do)::

    d = Drill(seed=1)
    d.answer.value = "320 KiB"
    d.check_button.click()      # or d.check()
    d.last.status, d.score, d.streak
    d.next_button.click()       # or d.deal()

Examples
--------
>>> d = Drill(seed=3, kinds=["weights"])
>>> d.problem.kind
'weights'
>>> v = d.check(d.problem.answer_text)
>>> v.status, d.score, d.attempted, d.streak
('correct', 1, 1, 1)
>>> d.deal().kind, d.check("lots").status, d.attempted
('weights', 'invalid', 1)
"""

from __future__ import annotations

import html
import math
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ipywidgets as w
import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import gpus, models
from llmcourse.errors import InputError
from llmcourse.exercises.engine import slip_words
from llmcourse.planner import (
    decode_step,
    fleet,
    gpus_for_weights,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_batch,
    replica,
    traffic,
    weight_bytes,
)
from llmcourse.units import Q_, sig

__all__ = [
    "FACTOR",
    "KINDS",
    "SLIPS_2X",
    "Drill",
    "DrillInputError",
    "Problem",
    "Verdict",
    "deal_problem",
    "read_answer",
    "slip",
    "warmup",
    "warmup_markdown",
    "within",
]

#: The kinds of question a drill deals.
KINDS: tuple[str, ...] = ("kv_per_token", "kv_context", "weights", "max_batch", "decode_speed", "gpus_for_traffic")

#: A pass is an answer within this factor of the planner's figure, either way: wide enough for
#: rounding every given to two figures and for KiB vs kB (1.024x) or GiB vs GB (1.074x), narrow
#: enough that a factor-of-two slip (2x) misses.
FACTOR = 1.5

#: The factor-of-two slips behind a miss of about 2x (``"high"``) or 1/2 (``"low"``), by kind of question.
SLIPS_2X: dict[str, dict[str, str]] = {
    "kv_per_token": {
        "high": "bytes per cached value: BF16 is 2, FP8 is 1?",
        "low": "keys and values: did you count both?",
    },
    "kv_context": {
        "high": "bytes per cached value: BF16 is 2, FP8 is 1?",
        "low": "keys and values: did you count both?",
    },
    "weights": {
        "high": "bytes per parameter: BF16 2, FP8 1, INT4 half a byte?",
        "low": "bytes per parameter: BF16 2, FP8 1, INT4 half a byte?",
    },
    "max_batch": {
        "high": "did you count both keys and values in the KV per token?",
        "low": "the cache fills the memory of every GPU of the replica: per GPU vs per replica?",
    },
    "decode_speed": {
        "high": "bytes per weight: BF16 2, FP8 1, INT4 half a byte?",
        "low": "the GPUs of a tensor-parallel replica read their shares at once: per GPU vs per replica?",
    },
    "gpus_for_traffic": {
        "high": "replicas x GPUs per replica: per GPU vs per replica?",
        "low": "replicas x GPUs per replica: per GPU vs per replica?",
    },
}

_MODELS = ("Llama-2-7B", "Llama-3.1-8B", "Qwen2.5-7B", "Llama-2-13B", "Mixtral-8x7B", "Llama-3.1-70B", "Qwen2.5-72B")
_GPUS = ("H100 SXM", "H200 SXM", "B200", "A100 SXM 80GB", "L40S")
_CONTEXTS = (2_048, 4_096, 8_192, 32_768, 131_072)
_PRECISIONS = {"bf16": "BF16", "fp8": "FP8", "int4": "INT4"}


class DrillInputError(InputError):
    """A typed answer the drill cannot read; the message says what to type instead."""


@dataclass(frozen=True)
class Problem:
    """One dealt question: the text, the planner's exact figure and how it was computed."""

    kind: str
    text: str
    exact: pint.Quantity
    unit: str
    how: str

    @property
    def answer_text(self) -> str:
        """The exact figure written the way a reader would type it (``"320 KiB"``, ``"47 tok/s"``)."""
        return _show(self.exact, self.unit)


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check: ``"correct"``, ``"wrong"``, ``"invalid"`` (not read; retry) or ``"closed"``."""

    status: str
    message: str
    ratio: float | None = None
    elapsed: float | None = None

    @property
    def counted(self) -> bool:
        """Whether the check counted towards the score (a right or a wrong answer)."""
        return self.status in ("correct", "wrong")


# --- dealing ------------------------------------------------------------------------------------------
def _show(q: pint.Quantity, unit: str) -> str:
    if unit == "tok/s":
        return f"{sig(float(q.to('1/s').m), 3)} tok/s"
    if unit == "":
        return f"{float(q.to('').m):,.0f}"
    return f"{sig(float(q.to(unit).m), 3)} {unit}"


def _shape(name: str) -> str:
    m = models[name]
    if m.attention == "MLA":
        return f"{m.layers} layers, an MLA latent of {m.kv_lora_rank} + {m.qk_rope_head_dim}"
    return f"{m.layers} layers, {m.kv_heads} KV heads of dimension {m.head_dim}"


def _short(x: float) -> str:
    """A number to three figures without trailing zeros (1.3, 90, 1.43)."""
    text = sig(x, 3)
    return text.rstrip("0").rstrip(".") if "." in text else text


def _pct(share: float) -> str:
    """A share as a percentage ("90%")."""
    return _short(100 * share) + "%"


def _kv_per_token(rng: random.Random, a: Assumptions) -> Problem:
    name, prec = rng.choice(_MODELS), rng.choice(("bf16", "fp8"))
    exact = kv_bytes_per_token(name, prec).to("KiB")
    return Problem(
        "kv_per_token",
        f"KV cache per token of {name} ({_shape(name)}), cached in {_PRECISIONS[prec]}?",
        exact,
        "KiB",
        "2 x layers x KV heads x head dimension x bytes per value",
    )


def _kv_context(rng: random.Random, a: Assumptions) -> Problem:
    name, ctx = rng.choice(_MODELS), rng.choice(_CONTEXTS)
    exact = kv_bytes_per_sequence(name, ctx).to("GB")
    return Problem(
        "kv_context",
        f"KV cache of one {ctx:,}-token conversation on {name} ({_shape(name)}), in BF16?",
        exact,
        "GB",
        f"KV per token ({_show(kv_bytes_per_token(name), 'KiB')}) x {ctx:,} tokens",
    )


def _weights(rng: random.Random, a: Assumptions) -> Problem:
    name, prec = rng.choice(_MODELS), rng.choice(tuple(_PRECISIONS))
    params = models[name].params
    exact = weight_bytes(name, prec).to("GB")
    return Problem(
        "weights",
        f"Weights of {name} ({params / 1e9:.1f} billion parameters) in {_PRECISIONS[prec]}?",
        exact,
        "GB",
        "parameters x bytes per parameter",
    )


def _max_batch(rng: random.Random, a: Assumptions) -> Problem:
    while True:
        name, gpu, prec, ctx = (
            rng.choice(_MODELS),
            rng.choice(_GPUS),
            rng.choice(("bf16", "fp8")),
            rng.choice(_CONTEXTS[:4]),
        )
        n = gpus_for_weights(name, gpu, prec, assumptions=a)
        batch = max_batch(name, gpu, ctx, n_gpus=n, weight_bytes=prec, assumptions=a)
        if batch >= 1:
            break
    g = gpus[gpu]
    text = (
        f"How many {ctx:,}-token conversations fit at once: {name} in {_PRECISIONS[prec]} on {n} x {gpu} "
        f"({g.memory.to('GB').m:g} GB each, {_pct(a.memory_fraction)} usable), KV cache in BF16 "
        f"({_show(kv_bytes_per_token(name), 'KiB')} per token)?"
    )
    return Problem(
        "max_batch", text, Q_(batch, ""), "", "(usable memory - weights) / (KV per token x tokens), rounded down"
    )


#: The single-user question asks for the ceiling: the back-of-the-envelope method reads at the datasheet bandwidth.
_CEILING = "envelope"


def _decode_speed(rng: random.Random, a: Assumptions) -> Problem:
    dense = tuple(m for m in _MODELS if not models[m].is_moe)  # a MoE model reads only the experts it uses
    name, gpu, prec = rng.choice(dense), rng.choice(_GPUS), rng.choice(tuple(_PRECISIONS))
    n = gpus_for_weights(name, gpu, prec, assumptions=a)
    kw = dict(batch=1, context_tokens=1_000, n_gpus=n, weight_bytes=prec)
    top = decode_step(name, gpu, assumptions=_CEILING, **kw)
    real = decode_step(name, gpu, assumptions=a, **kw)
    g = gpus[gpu]
    text = (
        f"Fastest single-user decode of {name} in {_PRECISIONS[prec]} on {n} x {gpu} "
        f"({g.bandwidth.to('TB/s').m:g} TB/s each{', tensor parallel' if n > 1 else ''}, at full peak bandwidth), "
        "1,000 tokens of context?"
    )
    return Problem(
        "decode_speed",
        text,
        top.tokens_per_s_per_user,
        "tok/s",
        "GPUs x bandwidth / (weight bytes + KV bytes of the context): the ceiling; at the "
        f"{_pct(a.bandwidth_efficiency)} of the bandwidth real kernels reach it is "
        f"{_show(real.tokens_per_s_per_user, 'tok/s')}",
    )


def _gpus_for_traffic(rng: random.Random, a: Assumptions) -> Problem:
    while True:
        name = rng.choice(("Llama-3.1-8B", "Qwen2.5-7B", "Llama-3.1-70B", "Qwen2.5-72B"))
        prec, gpu = rng.choice(("bf16", "fp8")), rng.choice(("H100 SXM", "H200 SXM", "B200"))
        rate, answer = rng.choice((20, 50, 100, 300, 1_000, 3_000)), rng.choice((200, 300, 500, 1_000))
        n = gpus_for_weights(name, gpu, prec, assumptions=a)
        rep = replica(
            name, gpu, tensor_parallel=n, prompt_tokens=2_000, answer_tokens=answer, weight_bytes=prec, assumptions=a
        )
        if rep.fits:
            break
    f = fleet(traffic(Q_(rate, "1/s"), 2_000, answer).output_tokens_per_s, rep)
    x = _show(rep.throughput, "tok/s")
    spare = "" if f.headroom == 1 else f", sized with {_short(f.headroom)}x headroom"
    text = (
        f"{rate:,} requests/s, each a 2,000-token prompt and a {answer:,}-token answer. One replica of {name} in "
        f"{_PRECISIONS[prec]} on {n} x {gpu} makes {x} at full load"
        f"{', prefill included' if rep.counts_prefill else ''}. How many GPUs{spare}?"
    )
    return Problem(
        "gpus_for_traffic",
        text,
        Q_(f.gpus, ""),
        "",
        f"requests/s x answer tokens{f' x {_short(f.headroom)}' if f.headroom != 1 else ''} / replica tok/s, "
        f"rounded up, times {n} GPU{'s' if n > 1 else ''} per replica",
    )


_DEALERS: dict[str, Callable[[random.Random, Assumptions], Problem]] = {
    "kv_per_token": _kv_per_token,
    "kv_context": _kv_context,
    "weights": _weights,
    "max_batch": _max_batch,
    "decode_speed": _decode_speed,
    "gpus_for_traffic": _gpus_for_traffic,
}


def deal_problem(
    rng: random.Random, kinds: Sequence[str] = KINDS, assumptions: Assumptions | str | None = None
) -> Problem:
    """Draw one problem of one of ``kinds`` with ``rng`` (same state, same problem), its figure
    computed under ``assumptions`` (the course's method by default).

    Examples
    --------
    >>> deal_problem(random.Random(0), ["kv_per_token"]).kind
    'kv_per_token'
    """
    return _DEALERS[rng.choice(list(kinds))](rng, resolve(assumptions))


# --- reading and comparing answers -----------------------------------------------------------------------
_NUMBER = re.compile(r"^[+-]?(\d[\d,_]*\.?\d*|\.\d+)([eE][+-]?\d+)?")
_COUNT_WORDS = re.compile(r"\s*\b(gpus?|sequences?|conversations?|requests?|users?|replicas?)\s*$", re.IGNORECASE)
_TOKENS_PER = re.compile(r"\b(tokens?|toks?)\s*(/|per\s+)", re.IGNORECASE)
_ALLOWED = re.compile(r"^[0-9A-Za-z.,_/ +\-()µ]*$")


def _kind_words(q: pint.Quantity, unit: str) -> str:
    if unit == "":
        return "a plain number (a count)"
    if unit == "tok/s":
        return "a rate in tok/s (1/s)"
    return f"a quantity in units such as {unit}"


def read_answer(text: str, problem: Problem) -> pint.Quantity:
    """The typed answer as a quantity of the right kind for ``problem``, or :class:`DrillInputError`.

    Accepts ``"320 KiB"``, ``"0.75GB"``, ``"1,250"``, ``"47 tok/s"``, ``"162 GPUs"``.

    Examples
    --------
    >>> p = Problem("kv_per_token", "?", Q_(320, "KiB"), "KiB", "")
    >>> read_answer("327,680 B", p)
    <Quantity(327680, 'byte')>
    >>> read_answer("320", p)
    Traceback (most recent call last):
    ...
    llmcourse.widgets.drills.DrillInputError: "320" has no unit: the answer is a quantity in units such as KiB, e.g. 320 KiB.
    """
    example = problem.answer_text if problem.unit == "" else f"{_example_number(problem)} {problem.unit}"
    raw = "" if text is None else str(text).strip()
    if not raw:
        raise DrillInputError(f"type an answer, e.g. {example}.")
    if len(raw) > 60 or not _ALLOWED.match(raw):
        raise DrillInputError(f"could not read {raw!r}: type a number and a unit, e.g. {example}.")
    if not _NUMBER.match(raw):
        raise DrillInputError(f"start with a number, e.g. {example}; got {raw!r}.")
    t = re.sub(r"(?<=\d)[,_](?=\d)", "", raw)
    t = _TOKENS_PER.sub("1/", t)
    t = _COUNT_WORDS.sub("", t)
    try:
        q = Q_(t)
    except Exception:  # pint raises several kinds for gibberish
        raise DrillInputError(f"could not read {raw!r} as a number with a unit; type e.g. {example}.") from None
    if not isinstance(q, pint.Quantity):
        q = Q_(q, "")
    mag = float(q.m)
    if not math.isfinite(mag) or mag <= 0:
        raise DrillInputError(f"the answer must be a positive, finite number; got {raw!r}.")
    need = problem.exact.dimensionality
    if q.dimensionality != need:
        if q.dimensionless:
            raise DrillInputError(f'"{raw}" has no unit: the answer is {_kind_words(q, problem.unit)}, e.g. {example}.')
        raise DrillInputError(
            f'"{raw}" is {q.dimensionality}, the wrong kind of unit: the answer is {_kind_words(q, problem.unit)}, '
            f"e.g. {example}."
        )
    return q


def _example_number(problem: Problem) -> str:
    return "320" if problem.unit == "KiB" else "0.75" if problem.unit == "GB" else "47"


def slip(ratio: float, kind: str | None = None) -> str:
    """The usual slip behind an answer ``ratio`` times the figure, or ``""``: the exercise engine's
    list of common slips, matched within 5% (drill answers are estimates), then the factor-of-two
    slips of the question's ``kind`` (:data:`SLIPS_2X`), matched within 10% (counts are rounded).

    Examples
    --------
    >>> slip(1 / 1000), slip(8.1), slip(3.0)
    ('check the unit prefix (k, M, G) or ms vs s', 'bits vs bytes?', '')
    >>> slip(0.5, "kv_per_token")
    'keys and values: did you count both?'
    """
    words = slip_words(ratio, tolerance=0.05)
    if words or kind not in SLIPS_2X:
        return words
    for side, factor in (("high", 2), ("low", 1 / 2)):
        if abs(ratio / factor - 1) <= 0.1:
            return SLIPS_2X[kind][side]
    return ""


def within(given: pint.Quantity, exact: pint.Quantity, factor: float = FACTOR) -> tuple[bool, float]:
    """Whether ``given`` is within ``factor`` of ``exact`` either way, and the ratio given / exact.

    Examples
    --------
    >>> within(Q_(420, "KiB"), Q_(320, "KiB"))
    (True, 1.3125)
    >>> within(Q_(640, "KiB"), Q_(320, "KiB"))  # forgot nothing, doubled something: a miss
    (False, 2.0)
    """
    ratio = float((given / exact).to("").m)
    return (1 / factor <= ratio <= factor), ratio


# --- the widget ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Attempt:
    """One counted answer: the problem, what was typed, the verdict."""

    problem: Problem
    typed: str
    verdict: Verdict


class Drill:
    """Deals seeded estimate questions, checks typed answers within :data:`FACTOR`, keeps score and streak.

    Parameters
    ----------
    seed : int
        Seeds the dealer: the same seed deals the same questions in the same order.
    kinds : sequence of str
        Which kinds of question to deal (see :data:`KINDS`).
    clock : callable
        Returns seconds; the time per question is the difference between deal and check
        (tests pass a fake clock).
    factor : float
        The tolerance: an answer within this factor of the planner's figure passes.
    assumptions : str or Assumptions, optional
        The method the figures are computed with (the course's by default).
    """

    def __init__(
        self,
        seed: int = 0,
        *,
        kinds: Sequence[str] = KINDS,
        clock: Callable[[], float] = time.monotonic,
        factor: float = FACTOR,
        assumptions: Assumptions | str | None = None,
    ) -> None:
        unknown = [k for k in kinds if k not in _DEALERS]
        if unknown or not kinds:
            raise InputError(f"unknown drill kinds {unknown}; choose from {', '.join(KINDS)}.")
        if not factor > 1:
            raise InputError(f"factor must be greater than 1 (1.5 = within 1.5x either way); got {factor!r}.")
        self.assumptions = resolve(assumptions)
        self.rng = random.Random(seed)
        self.kinds = list(kinds)
        self.clock = clock
        self.factor = factor
        self.score = 0
        self.attempted = 0
        self.streak = 0
        self.best_streak = 0
        self.history: list[Attempt] = []
        self.last: Verdict | None = None
        self.problem: Problem | None = None
        self._dealt_at = 0.0
        self._open = False
        self.question = w.HTML()
        self.answer = w.Text(
            placeholder="e.g. 320 KiB, 0.75 GB, 47 tok/s, 12", description="Answer", continuous_update=False
        )
        self.check_button = w.Button(description="Check", button_style="primary")
        self.next_button = w.Button(description="Next question")
        self.feedback = w.HTML()
        self.scoreboard = w.HTML()
        self.check_button.on_click(lambda _b: self.check())
        self.next_button.on_click(lambda _b: self.deal())
        self.widget = w.VBox(
            [
                w.HTML(f"<b>Estimate drill</b> (within {sig(factor, 2)}x passes)"),
                self.question,
                w.HBox([self.answer, self.check_button, self.next_button]),
                self.feedback,
                self.scoreboard,
            ]
        )
        self.deal()

    def deal(self) -> Problem:
        """Deal the next question, clear the answer box and start its clock."""
        self.problem = deal_problem(self.rng, self.kinds, self.assumptions)
        self._dealt_at = self.clock()
        self._open = True
        self.answer.value = ""
        self.question.value = f"<p>{html.escape(self.problem.text)}</p>"
        self.feedback.value = ""
        self._show_score()
        return self.problem

    def check(self, text: str | None = None) -> Verdict:
        """Check ``text`` (default: the answer box) against the current question; never raises."""
        typed = self.answer.value if text is None else str(text)
        p = self.problem
        if not self._open:
            return self._say(Verdict("closed", "Already checked: press Next question for a new one."))
        try:
            given = read_answer(typed, p)
        except DrillInputError as exc:
            return self._say(Verdict("invalid", f"Not read: {exc} (not counted; try again)"))
        ok, ratio = within(given, p.exact, self.factor)
        elapsed = self.clock() - self._dealt_at
        exact = p.answer_text
        self._open = False
        self.attempted += 1
        if ok:
            self.score += 1
            self.streak += 1
            self.best_streak = max(self.best_streak, self.streak)
            msg = f"Pass: {typed.strip()} is {sig(ratio, 2)}x the planner's {exact} (within {sig(self.factor, 2)}x)."
        else:
            self.streak = 0
            side = "high" if ratio > 1 else "low"
            off = ratio if ratio > 1 else 1 / ratio
            hint = slip(ratio, p.kind)
            msg = f"Miss: {typed.strip()} is {sig(off, 2)}x too {side}{f' ({hint})' if hint else ''}; the planner says {exact}."
        v = Verdict("correct" if ok else "wrong", f"{msg} How: {p.how}. Time: {elapsed:.1f} s.", ratio, elapsed)
        self.history.append(Attempt(p, typed, v))
        return self._say(v)

    def _say(self, v: Verdict) -> Verdict:
        self.last = v
        color = {"correct": "#070", "wrong": "#b00"}.get(v.status, "#a60")
        self.feedback.value = f"<p style='color:{color}'>{html.escape(v.message)}</p>"
        self._show_score()
        return v

    def _show_score(self) -> None:
        self.scoreboard.value = f"<small>{html.escape(self.summary())}</small>"

    def summary(self) -> str:
        """Score, streak and average time so far, in one line."""
        times = [a.verdict.elapsed for a in self.history if a.verdict.elapsed is not None]
        avg = f", {sum(times) / len(times):.1f} s per answer" if times else ""
        return f"score {self.score}/{self.attempted}, streak {self.streak} (best {self.best_streak}){avg}"

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def __repr__(self) -> str:
        return f"<Drill: {self.problem.text if self.problem else ''} | {self.summary()}>"


def warmup(seed: int = 0, kinds: Sequence[str] = KINDS, assumptions: Assumptions | str | None = None) -> list[Problem]:
    """One problem of each kind, dealt from ``seed``: a fixed set to practise on paper.

    Examples
    --------
    >>> [p.kind for p in warmup(0)] == list(KINDS)
    True
    """
    rng = random.Random(seed)
    return [deal_problem(rng, [k], assumptions) for k in kinds]


def warmup_markdown(problems: Sequence[Problem]) -> tuple[str, str]:
    """The questions and the answers of a warm-up set as two numbered Markdown lists."""
    questions = "\n".join(f"{i}. {p.text}" for i, p in enumerate(problems, 1))
    answers = "\n".join(f"{i}. **{p.answer_text}**: {p.how}." for i, p in enumerate(problems, 1))
    return questions, answers
