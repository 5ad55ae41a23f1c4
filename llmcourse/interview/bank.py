"""The interview track: a bank of estimate questions with model answers, and the sheet of numbers.

Each :class:`Question` holds a prompt, what a weak, a good and a strong answer sound like
(templates), and a ``worked()`` function that computes every number of the strong answer with
the planner. :meth:`Question.numbers` returns those values (quantities, counts) for tests and
:meth:`Question.render` fills a template with them, so no number in an answer is typed by hand.

The questions' text is data: Markdown files in ``llmcourse/data/interview/`` (read in file-name
order, which is the bank's order), parsed here with the standard library (:func:`load_questions`).
A question there reads::

    ## weights_fit
    level: L4 · topic: memory · source: 000

    ### Do the weights fit?

    #### prompt
    Qwen2.5-72B has {Q72.billions} billion parameters. How many ...

    #### weak
    ...

``## id`` opens a question; the next line gives its ``level`` (a key of :data:`LEVELS`), ``topic``
and ``source`` (keys of :data:`SOURCES`, several joined by commas); ``### title`` is its title, and
``#### prompt``, ``weak``, ``good``, ``strong`` and ``answer`` its five templates, each once. Text
before the first question is a note for the reader of the file. The lines of a paragraph are
joined by one space, as Markdown does; paragraphs are kept apart by a blank line. A template's
``{name}`` (``{name:3}``: three significant figures, ``{name.m}``: the number without its unit) is a
number the question's ``worked()`` function returns, ``{H100.bandwidth}`` a catalog entry of
:data:`CATALOG_NAMES`; literal braces are doubled (``H_{{kv}}``). The computations stay in Python:
each ``worked()`` is registered under its question's id, and loading refuses a question without
one, a function without its question, an unknown level or source, and a field that is neither a
catalog entry nor a well-formed name; a field the function does not return is refused, naming
the question and the field, when its numbers are computed.

A question that reproduces a source text's worked example computes it under that source's
assumptions (``"envelope"``, ``"lab"``, ``"capacity"``, see :mod:`llmcourse.assumptions`); where
the source's method leaves out something that changes the answer (prefill, the bandwidth real
kernels reach), the worked answer gives the course's figure beside it, computed with the default.

:func:`sheet` computes the one-page sheet of numbers of the chapter *Numbers to know by heart*
from the catalog and the formulas.

Defined in the chapters *Numbers to know by heart* (``book/13_cheat_sheet.md``) and
*Interview questions* (``book/14_interview_questions.md``).

Examples
--------
>>> q = QUESTIONS["kv_per_token"]
>>> q.level, q.numbers()["kv72"]
('L4', <Quantity(320.0, 'kibibyte')>)
>>> q.render("weak")
'"It depends on the model; a few kilobytes per token?"'
>>> len(QUESTIONS) >= 20
True
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model, bytes_per_value, gpus, models
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.formulas import FORMULAS as F
from llmcourse.planner.roofline import decode_flops_per_token, ridge_intensity, weight_read_ceiling
from llmcourse.planner.serving import compute_budget, fleet, prefill_pool, request_cycle, serving_plan, traffic
from llmcourse.replica import speculative, speculative_replica
from llmcourse.replica.memory import (
    gpus_for_weights,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    max_batch,
    usable_memory,
    weight_bytes,
)
from llmcourse.replica.model import cost_per_million, replica
from llmcourse.replica.parallel import allreduce_latency, time_per_token_parts
from llmcourse.replica.prefill import prefill
from llmcourse.replica.step import decode_step, matmul_precision
from llmcourse.units import HOURS_PER_MONTH, Q_, sig

__all__ = [
    "CATALOG_NAMES",
    "LEVELS",
    "MIN_REPLICAS",
    "PARTS",
    "QUESTIONS",
    "SHEET_GPUS",
    "SHEET_MODELS",
    "SOURCES",
    "Question",
    "levels_markdown",
    "load_questions",
    "num",
    "parse_questions",
    "sheet",
    "sheet_tables",
]

#: Interview levels, in order, with what the interviewer listens for at each.
LEVELS: dict[str, str] = {
    "L4": "knows the formulas and gets one number right, with its unit",
    "L5": "chains the numbers into a decision and names the bottleneck",
    "Staff+": "sizes the whole system, states the assumptions, and says which one moves the answer most",
}

_USD, _USD_PER_HOUR = Q_(1, "USD"), Q_(1, "USD/hour")

#: The assumptions the worked answers use (see :mod:`llmcourse.assumptions`): each source's own
#: method where a question reproduces its worked example, the course's (``None``) elsewhere.
ENVELOPE, LAB, CAPACITY, COURSE = "envelope", "lab", "capacity", None

#: The texts the questions' figures come from, as the chapter names them.
SOURCES: dict[str, str] = {
    "000": "the back-of-the-envelope method",
    "001": "the interactive lab",
    "002": "the capacity-planning method",
    "004": "the system-design lesson",
    "course": "the course's own arithmetic",
}

#: Replicas a service runs at the least, so that one failure or deployment does not take it down
#: (the back-of-the-envelope method's "at least two replicas").
MIN_REPLICAS = 2


# --- formatting numbers into answer templates ---------------------------------------------------------
class _Num:
    """A value that formats itself for prose: the format spec is the number of significant figures."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __format__(self, spec: str) -> str:
        return num(self.value, int(spec) if spec else 3)

    def __getattr__(self, name: str) -> _Num:
        if name == "m" and isinstance(self.value, pint.Quantity):  # {H100.bandwidth.m}: the number alone
            return _Num(float(self.value.m))
        if name == "m":  # a plain number for LaTeX: no thousands separator ({L70.hidden.m} is 8192)
            return _Num(_Bare(self.value))
        raise AttributeError(name)


class _Bare(float):
    """A number printed without thousands separators (inside LaTeX a comma adds a space)."""


class _Ref:
    """A catalog entry in a template: ``{H100.bandwidth}`` is '3.35 TB/s', ``{H100.bandwidth.m}`` '3.35',
    ``{Q72.layers}`` '80', ``{Q72.billions}`` '72.7' (parameters in billions)."""

    def __init__(self, entry: Model | GPU) -> None:
        self._entry = entry

    def __getattr__(self, name: str) -> _Num:
        if name == "billions":
            return _Num(self._entry.params / 1e9)
        if name == "active_billions":
            return _Num(self._entry.active_params / 1e9)
        return _Num(getattr(self._entry, name))


#: Short names templates use for catalog entries, so no catalog figure is typed in a question.
CATALOG_NAMES: dict[str, tuple[str, str]] = {
    "H100": ("gpu", "H100 SXM"),
    "H200": ("gpu", "H200 SXM"),
    "L4": ("gpu", "L4"),
    "Q72": ("model", "Qwen2.5-72B"),
    "Q7": ("model", "Qwen2.5-7B"),
    "L8": ("model", "Llama-3.1-8B"),
    "L70": ("model", "Llama-3.1-70B"),
    "L2": ("model", "Llama-2-7B"),
    "Q30": ("model", "Qwen3-30B-A3B"),
}


def _refs() -> dict[str, _Ref]:
    return {k: _Ref(gpus[n] if kind == "gpu" else models[n]) for k, (kind, n) in CATALOG_NAMES.items()}


def num(value: Any, digits: int = 3, *, escape: bool = True) -> str:
    """A value in prose: quantities with their unit symbol, counts with thousands separators.

    Dollars print as ``\\$1.05`` for MyST Markdown (a bare ``$`` opens math there); pass
    ``escape=False`` for text that is not parsed as Markdown (``{glue:text}``).

    Examples
    --------
    >>> num(Q_(327_680, "B").to("KiB")), num(10_851), num(23.93), num(Q_(0.29431, "s"), 2), num(Q_(80.0, "GB"))
    ('320 KiB', '10,851', '23.9', '0.29 s', '80 GB')
    """
    if isinstance(value, pint.Quantity):
        dollar = "\\$" if escape else "$"  # a bare $ opens math in MyST
        if value.dimensionality == _USD.dimensionality:
            return f"{dollar}{sig(float(value.to('USD').m), digits)}"
        if value.dimensionality == _USD_PER_HOUR.dimensionality:
            return f"{dollar}{float(value.to('USD/hour').m):.2f}/h"
        return f"{_digits(float(value.m), digits)} {value.units:~P}".strip()
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, _Bare):
        return f"{float(value):g}"
    return _digits(float(value), digits)


def _digits(x: float, digits: int) -> str:
    """Whole numbers as they are (80, 989, 10,851); others to ``digits`` significant figures."""
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    text = sig(x, digits)
    return text.rstrip("0").rstrip(".") if "." in text else text


# --- the question type ---------------------------------------------------------------------------------
#: The five templates of a question, in the order a data file gives them.
PARTS: tuple[str, ...] = ("prompt", "weak", "good", "strong", "answer")


@dataclass(frozen=True)
class Question:
    """One interview question with graded model answers.

    ``prompt``, ``weak``, ``good``, ``strong`` and ``answer`` (the worked strong answer, MyST
    Markdown) are templates over the names ``worked()`` returns: ``{kv72}`` or ``{kv72:4}``
    (four significant figures). ``source`` names the source text whose figures the question
    reproduces (a value of :data:`SOURCES`), or says that it is the course's own arithmetic.
    """

    id: str
    level: str
    topic: str
    title: str
    prompt: str
    weak: str
    good: str
    strong: str
    answer: str
    worked: Callable[[], dict[str, Any]]
    source: str = SOURCES["course"]

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise InputError(f"question {self.id!r}: level must be one of {', '.join(LEVELS)}, not {self.level!r}.")

    def numbers(self) -> dict[str, Any]:
        """Every number of the worked answer, computed now with the planner.

        Refuses (:class:`InputError`) a template field that is neither one of them nor a catalog entry."""
        vals = self.worked()
        missing = sorted(self.fields() - set(vals) - set(CATALOG_NAMES))
        if missing:
            raise InputError(
                f"question {self.id!r}: template field {{{missing[0]}}} is neither a number its worked() function "
                f"returns nor a catalog entry ({', '.join(CATALOG_NAMES)}); it returns {', '.join(sorted(vals))}."
            )
        return vals

    def fields(self) -> set[str]:
        """Names the templates use (each a key of :meth:`numbers` or of :data:`CATALOG_NAMES`)."""
        names = set()
        for text in (self.prompt, self.weak, self.good, self.strong, self.answer):
            names |= {f.split(".")[0] for _, f, _, _ in string.Formatter().parse(text) if f}
        return names

    def render(self, part: str = "answer", values: Mapping[str, Any] | None = None) -> str:
        """Fill one template (``"prompt"``, ``"weak"``, ``"good"``, ``"strong"`` or ``"answer"``)."""
        if part not in PARTS:
            raise InputError(f"part must be prompt, weak, good, strong or answer; got {part!r}.")
        vals = self.numbers() if values is None else values
        return getattr(self, part).format_map(_refs() | {k: _Num(v) for k, v in vals.items()})

    def markdown(self) -> dict[str, str]:
        """All five parts rendered with one computation of the numbers."""
        vals = self.numbers()
        return {p: self.render(p, vals) for p in PARTS}


class _Bank(Mapping[str, Question]):
    def __init__(self, questions: Iterable[Question] = ()) -> None:
        self._q: dict[str, Question] = {}
        for q in questions:
            self.add(q)

    def add(self, q: Question) -> Question:
        if q.id in self._q:
            raise InputError(f"question {q.id!r} defined twice")
        self._q[q.id] = q
        return q

    def __getitem__(self, key: str) -> Question:
        try:
            return self._q[key]
        except KeyError:
            raise UnknownNameError(f"no interview question {key!r}; known: {', '.join(self._q)}.") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._q)

    def __len__(self) -> int:
        return len(self._q)


#: Each question's ``worked()`` function, by question id (the text of the question is data).
_WORKED: dict[str, Callable[[], dict[str, Any]]] = {}


def _worked(qid: str) -> Callable[[Callable[[], dict[str, Any]]], Callable[[], dict[str, Any]]]:
    """Register ``fn`` as the computation of the data question ``qid``."""

    def deco(fn: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
        if qid in _WORKED:
            raise InputError(f"question {qid!r}: two worked() functions")
        _WORKED[qid] = fn
        return fn

    return deco


# --- reading the bank's data files ---------------------------------------------------------------------
_HEADING = re.compile(r"^(#{2,4}) (.*)$")
_ID = re.compile(r"[a-z][a-z0-9_]*")
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _paragraphs(lines: list[str]) -> str:
    """A template's lines as text: a paragraph's lines joined by a space, paragraphs by a blank line."""
    paras, cur = [], []
    for line in [*lines, ""]:
        if line.strip():
            cur.append(line.strip())
        elif cur:
            paras.append(" ".join(cur))
            cur = []
    return "\n\n".join(paras)


def _check_fields(where: str, part: str, text: str) -> None:
    """Refuse a template field that cannot be filled: bad braces, a format other than a digit count,
    an attribute other than ``.m`` on a number, or a catalog entry's unknown attribute."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise InputError(f"{where}, {part}: {exc} (write a literal brace twice: {{{{ or }}}}).") from None
    refs = _refs()
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not _FIELD.fullmatch(name) or conversion or (spec and not spec.isdigit()):
            raise InputError(
                f"{where}, {part}: field {{{name}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}} "
                "is not a name with an optional digit count ({name} or {name:3})."
            )
        head, *attrs = name.split(".")
        if head in refs:
            if not attrs:
                raise InputError(f"{where}, {part}: field {{{name}}} names a catalog entry; give one of its figures.")
            try:
                getattr(getattr(refs[head], attrs[0]), ".".join(attrs[1:]) or "value")
            except AttributeError:
                raise InputError(
                    f"{where}, {part}: field {{{name}}}: {CATALOG_NAMES[head][1]} has no {attrs[0]!r}."
                ) from None
        elif attrs not in ([], ["m"]):
            raise InputError(f"{where}, {part}: field {{{name}}}: a number takes no attribute but .m.")


def _meta(where: str, line: str) -> dict[str, str]:
    """The ``level: L4 · topic: memory · source: 000`` line as a dict, or InputError."""
    out: dict[str, str] = {}
    for item in line.split(" · "):
        key, sep, value = item.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or key not in ("level", "topic", "source") or not value or key in out:
            raise InputError(
                f"{where}: the line after the id must read 'level: L4 · topic: ... · source: 000', each key once; "
                f"got {line!r}."
            )
        out[key] = value
    if "level" not in out or "topic" not in out:
        raise InputError(f"{where}: give the question's level and topic ('level: L4 · topic: memory').")
    codes = [c.strip() for c in out.get("source", "course").split(",")]
    unknown = [c for c in codes if c not in SOURCES]
    if unknown:
        raise InputError(f"{where}: unknown source {unknown[0]!r}; known: {', '.join(SOURCES)}.")
    out["source"] = " and ".join(SOURCES[c] for c in codes)
    return out


def parse_questions(text: str, name: str = "<text>") -> list[dict[str, str]]:
    """The questions of one data file as dicts (id, level, topic, source, title and the five parts).

    Examples
    --------
    >>> text = "## q1\\nlevel: L4 · topic: memory\\n\\n### A title\\n" + "".join(
    ...     f"#### {p}\\n{p} of {{x}}\\n" for p in PARTS)
    >>> q = parse_questions(text)[0]
    >>> q["id"], q["title"], q["source"], q["answer"]
    ('q1', 'A title', "the course's own arithmetic", 'answer of {x}')
    """
    out: list[dict[str, str]] = []
    cur: dict[str, Any] | None = None
    part: str | None = None

    def close() -> None:
        if cur is None:
            return
        where = f"{name}: question {cur['id']!r}"
        if "title" not in cur:
            raise InputError(f"{where}: no '### title' line.")
        missing = [p for p in PARTS if p not in cur["parts"]]
        if missing:
            raise InputError(f"{where}: no '#### {missing[0]}' part (each question has {', '.join(PARTS)}).")
        q = {k: v for k, v in cur.items() if k not in ("parts", "lineno")}
        for p in PARTS:
            q[p] = _paragraphs(cur["parts"][p])
            if not q[p]:
                raise InputError(f"{where}: the '{p}' part is empty.")
            _check_fields(where, p, q[p])
        out.append(q)

    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line, lineno = lines[i], i + 1
        i += 1
        m = _HEADING.match(line)
        if m is None:
            if part is not None and cur is not None:
                cur["parts"][part].append(line)
            elif cur is not None and line.strip():
                raise InputError(
                    f"{name}:{lineno}: question {cur['id']!r}: text {line.strip()[:40]!r} before its first part."
                )
            continue
        depth, head = len(m.group(1)), m.group(2).strip()
        if depth == 2:
            close()
            if not _ID.fullmatch(head):
                raise InputError(f"{name}:{lineno}: '## {head}': a question id is lower case, digits and _.")
            while i < len(lines) and not lines[i].strip():
                i += 1
            meta = _meta(f"{name}:{i + 1}: question {head!r}", lines[i] if i < len(lines) else "")
            i += 1
            cur, part = {"id": head, **meta, "parts": {}, "lineno": lineno}, None
        elif cur is None:
            raise InputError(f"{name}:{lineno}: '{line}' comes before the first '## id'.")
        elif depth == 3:
            if "title" in cur or part is not None:
                raise InputError(f"{name}:{lineno}: question {cur['id']!r}: one '### title', before the parts.")
            cur["title"] = head
        else:
            if head not in PARTS or head in cur["parts"]:
                raise InputError(
                    f"{name}:{lineno}: question {cur['id']!r}: '#### {head}': the parts are {', '.join(PARTS)}, each once."
                )
            if "title" not in cur:
                raise InputError(f"{name}:{lineno}: question {cur['id']!r}: the '### title' comes before the parts.")
            part = head
            cur["parts"][part] = []
    close()
    return out


def load_questions(
    texts: Mapping[str, str] | None = None, worked: Mapping[str, Callable[[], dict[str, Any]]] | None = None
) -> list[Question]:
    """The bank's questions from its data files (``texts``: file name -> text, read in name order; by
    default ``llmcourse/data/interview/*.md``), each with its ``worked()`` function (by default the
    registered ones). Refuses a question without a function and a function without a question.

    Examples
    --------
    >>> [q.id for q in load_questions()][:3]
    ['weights_fit', 'kv_per_token', 'kv_context']
    """
    if texts is None:
        folder = resources.files("llmcourse.data").joinpath("interview")
        texts = {f.name: f.read_text(encoding="utf-8") for f in folder.iterdir() if f.name.endswith(".md")}
    fns = _WORKED if worked is None else worked
    found = [q for name in sorted(texts) for q in parse_questions(texts[name], name)]
    out, seen = [], set()
    for q in found:
        if q["id"] in seen:
            raise InputError(f"question {q['id']!r} is defined twice in the data files.")
        seen.add(q["id"])
        if q["id"] not in fns:
            raise InputError(
                f"question {q['id']!r} has no worked() function: register one with @_worked({q['id']!r}) in "
                "llmcourse/interview.py."
            )
        out.append(Question(worked=fns[q["id"]], **q))
    orphans = [k for k in fns if k not in seen]
    if orphans:
        raise InputError(
            f"worked() function for {orphans[0]!r} has no question in llmcourse/data/interview/: add its '## {orphans[0]}'."
        )
    return out


def _seed004_model() -> Model:
    """The system-design lesson's "70B-class model": 70 billion parameters, 80 layers, 64 query
    heads, 8 KV heads (source 004)."""
    return models["Llama-3.1-70B"].with_(name="70B-class", params=70e9, active_params=70e9)


def _read_time(
    memory: pint.Quantity, gpu: GPU | str, n_gpus: int = 1, *, assumptions: Assumptions | str | None = None
) -> pint.Quantity:
    """Time to read ``memory`` bytes once at the assumptions' share of the bandwidth (the step of a
    GPU whose batch fills its usable memory)."""
    g = gpus[gpu] if isinstance(gpu, str) else gpu
    return F["weight_read_time"](
        weights=memory,
        n_gpus=n_gpus,
        bandwidth=g.bandwidth,
        bandwidth_efficiency=resolve(assumptions).bandwidth_efficiency,
    ).to("ms")


def _per_s(rate: pint.Quantity) -> float:
    """A rate (or the inverse of a step time) as a plain number per second."""
    q = rate if rate.dimensionality == Q_(1, "1/s").dimensionality else 1 / rate
    return float(q.to("1/s").m)


def _pct(share: float) -> float:
    """A share as a percentage for prose (seven tenths -> 70)."""
    return 100 * share


# --- L4: one number, right, with its unit ------------------------------------------------------------------
@_worked("weights_fit")
def _weights_fit() -> dict[str, Any]:
    a, g = resolve(ENVELOPE), gpus["H100 SXM"]
    w16, w8 = weight_bytes("Qwen2.5-72B", "bf16").to("GB"), weight_bytes("Qwen2.5-72B", "fp8").to("GB")
    mem2 = usable_memory(g, 2, assumptions=a).to("GB")
    return dict(
        w16=w16,
        w8=w8,
        per_gpu=usable_memory(g, assumptions=a).to("GB"),
        mem_pct=_pct(a.memory_fraction),
        reserve_pct=_pct(1 - a.memory_fraction),
        n16=gpus_for_weights("Qwen2.5-72B", g, "bf16", assumptions=a, power_of_two=False),
        tp16=gpus_for_weights("Qwen2.5-72B", g, "bf16", assumptions=a),
        n8=gpus_for_weights("Qwen2.5-72B", g, "fp8", assumptions=a),
        mem2=mem2,
        miss=(w16 - mem2).to("GB"),
    )


@_worked("kv_per_token")
def _kv_per_token() -> dict[str, Any]:
    kv72, kv7 = kv_bytes_per_token("Qwen2.5-72B"), kv_bytes_per_token("Qwen2.5-7B")
    m = models["Qwen2.5-72B"]
    mha = kv_bytes_per_token(m.with_(kv_heads=m.heads))
    return dict(
        kv72=kv72.to("KiB"), kv7=kv7.to("KiB"), b72=int(kv72.to("B").m), b7=int(kv7.to("B").m), mha72=mha.to("MiB")
    )


@_worked("kv_context")
def _kv_context() -> dict[str, Any]:
    short = kv_bytes_per_sequence("Qwen2.5-72B", 2_300).to("GB")
    long = kv_bytes_per_sequence("Qwen2.5-72B", 32_768)
    use = usable_memory("H100 SXM", assumptions=ENVELOPE).to("GB")
    return dict(
        kvtok=kv_bytes_per_token("Qwen2.5-72B").to("KiB"),
        kv2300=short,
        kv32k=long.to("GiB"),
        kv32k_gb=long.to("GB"),
        usable=use,
        share32k=float((long / use).to("").m * 100),
    )


@_worked("traffic")
def _traffic() -> dict[str, Any]:
    t = traffic(Q_(200_000, "1/day"), 2_000, 300, peak_factor=3)
    avg = traffic(Q_(200_000, "1/day"), 2_000, 300).request_rate
    return dict(
        avg=float(avg.to("1/s").m),
        rps=float(t.request_rate.to("1/s").m),
        tin=float(t.input_tokens_per_s.to("1/s").m),
        tout=float(t.output_tokens_per_s.to("1/s").m),
    )


@_worked("single_stream")
def _single_stream() -> dict[str, Any]:
    m = _seed004_model()
    one = weight_read_ceiling(m, "H100 SXM", assumptions=ENVELOPE)
    two = weight_read_ceiling(m, "H100 SXM", n_gpus=2, assumptions=ENVELOPE)
    real = weight_read_ceiling(m, "H100 SXM", n_gpus=2, assumptions=COURSE)
    return dict(
        w=one.weights,
        t1=one.step_time,
        t2=two.step_time,
        r1=_per_s(one.tokens_per_s_per_user),
        r2=_per_s(two.tokens_per_s_per_user),
        r2_70=_per_s(real.tokens_per_s_per_user),
        bw_pct=_pct(resolve(COURSE).bandwidth_efficiency),
    )


@_worked("memory_bound")
def _memory_bound() -> dict[str, Any]:
    a = resolve(LAB)
    s = decode_step("Llama-3.1-8B", "H100 SXM", batch=1, context_tokens=2_304, assumptions=a)
    l4 = decode_step("Llama-3.1-8B", "L4", batch=1, context_tokens=2_304, assumptions=a)
    return dict(
        w=s.weights_read,
        kv=s.kv_read.to("GB"),
        flops=s.flops,
        mem=s.memory_time,
        comp=s.compute_time,
        ratio=float((s.memory_time / s.compute_time).to("").m),
        rate=_per_s(s.step_time),
        l4=l4.step_time,
        bw_pct=_pct(a.bandwidth_efficiency),
        fl_pct=_pct(a.compute_efficiency),
        eta_b=a.bandwidth_efficiency,
        eta_c=a.compute_efficiency,
        fpp=a.flops_per_param,
    )


@_worked("prefill_time")
def _prefill_time() -> dict[str, Any]:
    a = resolve(ENVELOPE)
    kw = dict(n_gpus=2, weight_bytes="fp8")
    p = prefill("Qwen2.5-72B", "H100 SXM", 2_000, assumptions=a, **kw)
    course = prefill("Qwen2.5-72B", "H100 SXM", 2_000, assumptions=COURSE, **kw)
    return dict(
        flops=p.flops,
        rate=(p.flops / p.compute_time).to("PFLOP/s"),
        t=p.time.to("s"),
        mem=p.memory_time,
        w=weight_bytes("Qwen2.5-72B", "fp8").to("GB"),
        fl_pct=_pct(a.compute_efficiency),
        eta_c=a.compute_efficiency,
        fpp=a.flops_per_param,
        t_course=course.time.to("s"),
        comm_course=course.comm_time,
    )


# --- L5: chain numbers into a decision ------------------------------------------------------------------------
@_worked("max_batch")
def _max_batch() -> dict[str, Any]:
    a = resolve(ENVELOPE)
    p = serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8", assumptions=a)
    c = replica(
        "Qwen2.5-72B", "H100 SXM", tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300, weight_bytes="fp8"
    )
    return dict(
        kvtok=kv_bytes_per_token("Qwen2.5-72B").to("KiB"),
        mem=p.usable_memory,
        mem_pct=_pct(a.memory_fraction),
        mem_frac=a.memory_fraction,
        w=p.weights,
        free=(p.usable_memory - p.weights).to("GB"),
        kv=p.kv_per_sequence,
        batch=p.batch,
        user=_per_s(p.tokens_per_s_per_user),
        read=(p.weights + p.batch * p.kv_per_sequence).to("GB"),
        user_step=_per_s(c.step.tokens_per_s_per_user),
        user_course=_per_s(c.tokens_per_s_per_user),
        bw_pct=_pct(c.assumptions.bandwidth_efficiency),
        o=c.step.overhead_time,
        comm=c.step.comm_time,
        others=c.batch - 1,
    )


@_worked("full_gpu_step")
def _full_gpu_step() -> dict[str, Any]:
    a = resolve(ENVELOPE)
    mem = usable_memory("H100 SXM", assumptions=a).to("GB")
    step = _read_time(mem, "H100 SXM", assumptions=a)
    course = _read_time(mem, "H100 SXM", assumptions=COURSE)
    p7 = serving_plan("Qwen2.5-7B", "H100 SXM", 1, 2_300, assumptions=a)
    p72 = serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8", assumptions=a)
    return dict(
        mem=mem,
        mem_frac=a.memory_fraction,
        step=step,
        rate=_per_s(step),
        b7=p7.batch,
        b72=p72.batch,
        u7=_per_s(p7.tokens_per_s_per_user),
        u72=_per_s(p72.tokens_per_s_per_user),
        h200=_read_time(usable_memory("H200 SXM", assumptions=a), "H200 SXM", assumptions=a),
        b200=_read_time(usable_memory("B200", assumptions=a), "B200", assumptions=a),
        step_course=course,
        rate_course=_per_s(course),
        bw_pct=_pct(resolve(COURSE).bandwidth_efficiency),
    )


@_worked("batching")
def _batching() -> dict[str, Any]:
    m = _seed004_model()
    c = {b: weight_read_ceiling(m, "H100 SXM", batch=b, assumptions=ENVELOPE) for b in (1, 8, 32, 128, 256)}
    x = {f"x{b}": round(_per_s(c[b].throughput)) for b in (8, 32, 128, 256)}
    whole = resolve().replace(memory_fraction=1)  # the source counts all 160 GB as usable
    b = max_batch(m, "H100 SXM", 4_000, n_gpus=2, assumptions=whole)
    return dict(
        w=c[1].weights, t=c[1].step_time, r1=_per_s(c[1].tokens_per_s_per_user), x1=_per_s(c[1].throughput), b=b, **x
    )


@_worked("kv_limit")
def _kv_limit() -> dict[str, Any]:
    m = _seed004_model()
    mha = m.with_(kv_heads=m.heads)
    w = weight_bytes(m).to("GB")
    every = dict(n_gpus=2, assumptions=resolve().replace(memory_fraction=1))  # the source counts all 160 GB as usable
    return dict(
        mha_tok=kv_bytes_per_token(mha).to("MB"),
        mha_seq=kv_bytes_per_sequence(mha, 4_000).to("GB"),
        gqa_tok=kv_bytes_per_token(m).to("MB"),
        gqa_kib=kv_bytes_per_token(m).to("KiB"),
        gqa_seq=kv_bytes_per_sequence(m, 4_000).to("GB"),
        w=w,
        free=(usable_memory("H100 SXM", 2, assumptions=every["assumptions"]) - w).to("GB"),
        b_gqa=max_batch(m, "H100 SXM", 4_000, **every),
        b_mha=max_batch(mha, "H100 SXM", 4_000, **every),
    )


@_worked("long_context")
def _long_context() -> dict[str, Any]:
    short = replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=2_048, answer_tokens=512)
    long = replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=32_768, answer_tokens=512)
    return dict(
        kvtok=kv_bytes_per_token("Llama-3.1-8B").to("KiB"),
        kv32k=kv_bytes_per_sequence("Llama-3.1-8B", 32_768).to("GiB"),
        kv_short=short.kv_per_sequence,
        kv_long=long.kv_per_sequence,
        b_short=short.batch,
        b_long=long.batch,
        x_short=_per_s(short.throughput),
        x_long=_per_s(long.throughput),
        c_short=short.cost_per_million_output_tokens,
        c_long=long.cost_per_million_output_tokens,
        ratio=float((long.cost_per_million_output_tokens / short.cost_per_million_output_tokens).to("").m),
        share_short=_pct(short.prefill_share),
        share_long=_pct(long.prefill_share),
    )


@_worked("gqa")
def _gqa() -> dict[str, Any]:
    a = resolve(LAB)
    kv2, kv3 = kv_bytes_per_token("Llama-2-7B"), kv_bytes_per_token("Llama-3.1-8B")
    return dict(
        kv2=kv2.to("KiB"),
        kv3=kv3.to("KiB"),
        ratio=float((kv2 / kv3).to("").m),
        b2=max_batch("Llama-2-7B", "H100 SXM", 33_280, assumptions=a),
        b3=max_batch("Llama-3.1-8B", "H100 SXM", 33_280, assumptions=a),
        mem_pct=_pct(a.memory_fraction),
    )


@_worked("quantization")
def _quantization() -> dict[str, Any]:
    a = resolve(LAB)
    kw = dict(batch=1, context_tokens=2_304, assumptions=a)
    s16 = decode_step("Llama-3.1-8B", "H100 SXM", **kw)
    s4 = decode_step("Llama-3.1-8B", "H100 SXM", weight_bytes="int4", **kw)
    # 4-bit values plus one FP16 scale per group of 128 weights
    scale = Q_(bytes_per_value("int4"), "B") + Q_(bytes_per_value("fp16"), "B") / 128
    s4s = decode_step("Llama-3.1-8B", "H100 SXM", weight_bytes=scale, **kw)
    return dict(
        w16=s16.weights_read,
        w4=s4.weights_read,
        kv=s16.kv_read,
        t16=s16.step_time,
        t4=s4.step_time,
        t4s=s4s.step_time,
        scale=scale,
        bw_pct=_pct(a.bandwidth_efficiency),
        eta_b=a.bandwidth_efficiency,
    )


@_worked("batch_cost")
def _batch_cost() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for b in (1, 64):
        c = request_cycle(
            "Llama-3.1-8B",
            "H100 SXM",
            batch=b,
            prompt_tokens=256,
            answer_tokens=64,
            price_per_hour=Q_(3, "USD/hour"),
            assumptions=LAB,
        )
        out |= {f"t{b}": c.decode.step_time, f"x{b}": _per_s(c.throughput), f"c{b}": c.cost_per_million_output_tokens}
    return out


@_worked("cost_per_million")
def _cost_per_million() -> dict[str, Any]:
    a = resolve(ENVELOPE)
    util = 0.3  # the question's given: the fleet is busy 30% of the hours it is billed
    p = serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8", assumptions=a)
    p7 = serving_plan("Qwen2.5-7B", "H100 SXM", 1, 2_300, assumptions=a)
    work = dict(prompt_tokens=2_000, answer_tokens=300)
    c = replica("Qwen2.5-72B", "H100 SXM", tensor_parallel=2, weight_bytes="fp8", assumptions=COURSE, **work)
    c7 = replica("Qwen2.5-7B", "H100 SXM", assumptions=COURSE, **work)

    def at_util(cost: pint.Quantity) -> pint.Quantity:
        return F["cost_at_utilisation"](cost_full=cost, utilisation=util).to("USD")

    return dict(
        x=_per_s(p.output_tokens_per_s),
        c=p.cost_per_million_output_tokens,
        c30=at_util(p.cost_per_million_output_tokens),
        x7=_per_s(p7.output_tokens_per_s),
        c7=p7.cost_per_million_output_tokens,
        util=util,
        util_pct=_pct(util),
        x_course=_per_s(c.throughput),
        c_course=c.cost_per_million_output_tokens,
        c30_course=at_util(c.cost_per_million_output_tokens),
        x7_course=_per_s(c7.throughput),
        c7_course=c7.cost_per_million_output_tokens,
        ratio7=float((c.cost_per_million_output_tokens / c7.cost_per_million_output_tokens).to("").m),
        share_course=_pct(c.prefill_share),
        bw_pct=_pct(c.assumptions.bandwidth_efficiency),
        o=c.step.overhead_time,
    )


@_worked("scale_traffic")
def _scale_traffic() -> dict[str, Any]:
    t = traffic(Q_(200_000, "1/day"), 2_000, 300, peak_factor=3)
    t10 = traffic(Q_(2_000_000, "1/day"), 2_000, 300, peak_factor=3)
    shape = dict(tensor_parallel=2, weight_bytes="fp8")
    env = replica("Qwen2.5-72B", "H100 SXM", context_tokens=2_300, assumptions=ENVELOPE, **shape)
    course = replica("Qwen2.5-72B", "H100 SXM", prompt_tokens=2_000, answer_tokens=300, assumptions=COURSE, **shape)
    e1, e10 = fleet(t.output_tokens_per_s, env), fleet(t10.output_tokens_per_s, env)
    c1, c10 = fleet(t.output_tokens_per_s, course), fleet(t10.output_tokens_per_s, course)
    r1, r1c = max(MIN_REPLICAS, e1.replicas), max(MIN_REPLICAS, c1.replicas)
    return dict(
        tout=_per_s(t.output_tokens_per_s),
        tout10=_per_s(t10.output_tokens_per_s),
        x=_per_s(env.throughput),
        exact1=e1.replicas_exact,
        exact=e10.replicas_exact,
        r1=r1,
        g1=r1 * env.tensor_parallel,
        r10=e10.replicas,
        g10=e10.gpus,
        x_course=_per_s(course.throughput),
        h_course=c10.headroom,
        exact1_course=c1.replicas_exact,
        r1_course=r1c,
        g1_course=r1c * course.tensor_parallel,
        exact_course=c10.replicas_exact,
        r10_course=c10.replicas,
        g10_course=c10.gpus,
        bw_pct=_pct(course.assumptions.bandwidth_efficiency),
        o=course.step.overhead_time,
    )


@_worked("littles_law")
def _littles_law() -> dict[str, Any]:
    rate = traffic(Q_(1.5e9, "1/day"), 1, 1).request_rate.to("1/s")
    t = F["generation_time"](tokens_per_request=1_250, token_rate=Q_(50, "1/s")).to("s")
    n = float(F["littles_law"](request_rate=rate, time_in_system=t).m)
    g = QUESTIONS["huge_fleet"].numbers()["g2000"]
    return dict(rps=float(rate.m), t=t, n=n, gpus=g, per_gpu=n / g)


@_worked("h200")
def _h200() -> dict[str, Any]:
    work = dict(prompt_tokens=2_000, answer_tokens=400, weight_bytes="fp8", assumptions=COURSE)
    a = replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=2, **work)
    b = replica("Llama-3.1-70B", "H200 SXM", **work)
    return dict(
        w=a.weights,
        kv=a.kv_per_sequence,
        mem_h100=a.usable_memory,
        mem_h200=b.usable_memory,
        b_h100=a.batch,
        b_h200=b.batch,
        u_h100=_per_s(a.tokens_per_s_per_user),
        u_h200=_per_s(b.tokens_per_s_per_user),
        x_h100=_per_s(a.throughput),
        x_h200=_per_s(b.throughput),
        c_h100=a.cost_per_million_output_tokens,
        c_h200=b.cost_per_million_output_tokens,
        bw_pct=_pct(a.assumptions.bandwidth_efficiency),
        o=a.step.overhead_time,
        comm=a.step.comm_time,
    )


# --- Staff+: the whole system, assumptions stated ---------------------------------------------------------------
@_worked("roofline_fleet")
def _roofline_fleet() -> dict[str, Any]:
    a, g, prompt, answer = resolve(CAPACITY), gpus["H100 SXM"], 2_000, 400
    shape = dict(tensor_parallel=2, batch=64, weight_bytes="fp8")
    r = replica("Llama-3.1-70B", g, context_tokens=prompt + answer, assumptions=a, **shape)
    demand = F["token_rate"](request_rate=Q_(350, "1/s"), tokens_per_request=answer).to("1/s")
    f = fleet(demand, r)
    # does decode's idle compute hold the prefill the capacity method leaves out? (per replica, at the usable rate)
    budget = compute_budget(
        replica("Llama-3.1-70B", g, prompt_tokens=prompt, answer_tokens=answer, assumptions=a, **shape),
        f.usable_throughput_per_replica,
    )
    need, roof, used = budget.prefill, budget.usable, budget.decode
    c = replica("Llama-3.1-70B", g, prompt_tokens=prompt, answer_tokens=answer, assumptions=COURSE, **shape)
    fc = fleet(demand, c)
    return dict(
        demand=_per_s(demand),
        kvtok=kv_bytes_per_token("Llama-3.1-70B").to("KiB"),
        hours=HOURS_PER_MONTH,
        left1=(g.memory - weight_bytes("Llama-3.1-70B", "fp8")).to("GB"),
        w=r.weights,
        kv=r.kv_per_sequence,
        read=(r.step.weights_read + r.step.kv_read).to("GB"),
        step=r.step.step_time,
        comp=r.step.compute_time,
        user=_per_s(r.tokens_per_s_per_user),
        x=_per_s(r.throughput),
        used=r.memory_used,
        mem=r.usable_memory,
        usable=_per_s(f.usable_throughput_per_replica),
        exact=f.replicas_exact,
        replicas=f.replicas,
        gpus=f.gpus,
        cost=f.monthly_cost,
        naive=int(F["replicas_needed"](demand=demand, throughput=r.throughput).m),
        bw_pct=_pct(a.bandwidth_efficiency),
        eta_b=a.bandwidth_efficiency,
        hf_pct=_pct(a.headroom_fraction),
        need=need,
        roof=roof,
        used_flops=used,
        idle=budget.idle,
        x_course=_per_s(c.throughput),
        share_course=_pct(c.prefill_share),
        h_course=fc.headroom,
        replicas_course=fc.replicas,
        gpus_course=fc.gpus,
        cost_course=fc.monthly_cost,
        o=c.step.overhead_time,
    )


@_worked("prefill_pool")
def _prefill_pool() -> dict[str, Any]:
    a, g = resolve(CAPACITY), gpus["H100 SXM"]
    p = prefill_pool(Q_(700_000, "1/s"), "Llama-3.1-70B", g, assumptions=a)
    half = prefill_pool(Q_(350_000, "1/s"), "Llama-3.1-70B", g, assumptions=a)
    fl = QUESTIONS["roofline_fleet"].numbers()
    return dict(
        rate=p.compute_rate,
        gpus=p.gpus,
        gpus_cached=half.gpus,
        per_gpu=(g.peak_flops(matmul_precision(2, g, a)) * a.compute_efficiency).to("PFLOP/s"),
        fl_pct=_pct(a.compute_efficiency),
        fpp=a.flops_per_param,
        gpus_capacity=fl["gpus"],
        **{k: fl[k] for k in ("hf_pct", "need", "idle", "roof", "used_flops", "usable", "gpus_course")},
    )


@_worked("huge_fleet")
def _huge_fleet() -> dict[str, Any]:
    tok = int(F["tokens_from_characters"](characters=5_000, chars_per_token=4).m)
    t = traffic(Q_(1.5e9, "1/day"), 1, tok)
    g = {
        f"g{x}": int(F["replicas_needed"](demand=t.output_tokens_per_s, throughput=Q_(x, "1/s")).m)
        for x in (1_000, 2_000, 4_000)
    }
    return dict(rps=float(t.request_rate.to("1/s").m), tok=tok, demand=float(t.output_tokens_per_s.to("1/s").m), **g)


@_worked("moe")
def _moe() -> dict[str, Any]:
    kw = dict(context_tokens=2_304, assumptions=LAB)
    s1 = decode_step("Qwen3-30B-A3B", "H100 SXM", batch=1, **kw)
    s32 = decode_step("Qwen3-30B-A3B", "H100 SXM", batch=32, **kw)
    s8 = decode_step("Llama-3.1-8B", "H100 SXM", batch=1, **kw)
    return dict(
        w=weight_bytes("Qwen3-30B-A3B").to("GB"),
        w1=s1.weights_read,
        w32=s32.weights_read,
        t1=s1.step_time,
        t32=s32.step_time,
        t8=s8.step_time,
        phi=100 * s32.fraction_of_experts,
    )


@_worked("pushback")
def _pushback() -> dict[str, Any]:
    a, b = QUESTIONS["kv_limit"].numbers(), QUESTIONS["single_stream"].numbers()
    return {k: a[k] for k in ("mha_seq", "gqa_seq", "b_gqa", "b_mha")} | {k: b[k] for k in ("w", "r1", "r2")}


# --- speculative decoding (book/08b_speculative.md) ---------------------------------------------------------------
def _spec() -> Any:
    """The speculative-decoding module."""
    return speculative


@_worked("spec_expected")
def _spec_expected() -> dict[str, Any]:
    sp = _spec()
    spec = sp.Speculation("draft model", 4, 0.8, "Llama-3.1-8B")
    s = sp.speculative_step(
        "Llama-3.1-70B", "H100 SXM", spec, context_tokens=2_000 + 300 / 2, tensor_parallel=2, weight_bytes="fp8"
    )
    return dict(
        k=spec.draft_tokens,
        alpha=spec.acceptance,
        positions=spec.draft_tokens + 1,
        tau=s.expected_tokens,
        w70=weight_bytes("Llama-3.1-70B", "fp8").to("GB"),
        bw_pct=_pct(resolve(COURSE).bandwidth_efficiency),
        plain=s.plain.step_time,
        plain_read=s.plain.memory_time,
        plain_comm=s.plain.comm_time,
        over=s.plain.overhead_time,
        verify=s.verify.step_time,
        draft=s.draft_step_time,
        draft_read=s.draft.memory_time,
        draft_comm=s.draft.comm_time,
        cycle=s.cycle_time,
        per_token=s.time_per_token,
        speedup=s.speedup,
        user_plain=_per_s(s.plain.tokens_per_s_per_user),
        user_spec=_per_s(s.tokens_per_s_per_user),
    )


@_worked("spec_crossover")
def _spec_crossover() -> dict[str, Any]:
    sp = _spec()
    spec, ctx, batch = sp.Speculation("eagle head", 4, 0.7), 288, 200
    s = sp.speculative_step("Llama-3.1-8B", "H100 SXM", spec, batch=batch, context_tokens=ctx)
    return dict(
        ctx=ctx,
        k=spec.draft_tokens,
        alpha=spec.acceptance,
        positions=spec.draft_tokens + 1,
        batch=batch,
        tau=s.expected_tokens,
        cross=sp.crossover_batch("Llama-3.1-8B", "H100 SXM", spec, context_tokens=ctx),
        estimate=sp.crossover_estimate("Llama-3.1-8B", "H100 SXM", spec, context_tokens=ctx),
        speedup=s.speedup,
        x=_per_s(s.throughput),
        x_plain=_per_s(s.plain_throughput),
        plain=s.plain.step_time,
        verify=s.verify.step_time,
        draft=s.draft_step_time,
        over=s.plain.overhead_time,
        fit_long=sp.speculative_memory("Llama-3.1-8B", "H100 SXM", spec, context_tokens=2_150).max_batch,
    )


@_worked("spec_mtp")
def _spec_mtp() -> dict[str, Any]:
    sp = _spec()
    spec = sp.Speculation("mtp", 1, 0.85)
    kw = dict(context_tokens=2_150, tensor_parallel=8, weight_bytes="fp8")
    one, full = (sp.speculative_step("DeepSeek-V3", "H200 SXM", spec, batch=b, **kw) for b in (1, 256))
    row = next(r for r in sp.published("mtp", figure="speedup") if r.target == "DeepSeek-V3")
    return dict(
        alpha=spec.acceptance,
        tau=one.expected_tokens,
        s1=one.speedup,
        s256=full.speedup,
        w_plain1=one.plain.weights_read,
        w_ver1=one.verify.weights_read,
        w_mtp1=one.draft.weights_read,
        t_plain1=one.plain.step_time,
        fixed1=one.plain.overhead_time + one.plain.comm_time,
        t_ver1=one.verify.step_time,
        t_mtp1=one.draft_step_time,
        w_plain256=full.plain.weights_read,
        published=row.value,
    )


@_worked("spec_fleet")
def _spec_fleet() -> dict[str, Any]:
    sp = _spec()
    kw = dict(tensor_parallel=2, prompt_tokens=2_000, answer_tokens=300, weight_bytes="fp8")
    draft, head = sp.Speculation("draft model", 4, 0.7, "Llama-3.1-8B"), sp.Speculation("eagle head", 4, 0.7)
    reps = {
        "plain": replica("Llama-3.1-70B", "H100 SXM", **kw),
        "draft": speculative_replica("Llama-3.1-70B", "H100 SXM", draft, **kw),
        "head": speculative_replica("Llama-3.1-70B", "H100 SXM", head, **kw),
    }
    demand = Q_(10_000, "1/s")
    out: dict[str, Any] = dict(
        k=head.draft_tokens,
        alpha=head.acceptance,
        headroom=resolve(COURSE).headroom,
        mem=reps["plain"].usable_memory,
        w70=reps["plain"].weights,
    )
    for key, r in reps.items():
        out |= {
            f"b_{key}": r.batch,
            f"u_{key}": _per_s(r.tokens_per_s_per_user),
            f"t_{key}": r.tpot,
            f"x_{key}": _per_s(r.throughput),
            f"g_{key}": fleet(demand, r).gpus,
            f"c_{key}": r.cost_per_million_output_tokens,
        }
    for key, spec in (("draft", draft), ("head", head)):
        m = sp.speculative_memory(
            "Llama-3.1-70B", "H100 SXM", spec, context_tokens=2_300, tensor_parallel=2, weight_bytes="fp8"
        )
        out |= {f"w_{key}": m.draft_weights, f"kv_{key}": m.draft_kv_per_sequence.to("MB")}
    return out


# --- many GPUs (book/08c_many_gpus.md) -----------------------------------------------------------------------------
def _many_gpus_parts(gpu: str, n: int, **kw: Any) -> tuple[Any, dict[str, Any]]:
    """A replica of Llama 3.1 70B on ``n`` x ``gpu`` and its time per token split into parts."""
    r = replica("Llama-3.1-70B", gpu, tensor_parallel=n, weight_bytes="fp8", **kw)
    return r, time_per_token_parts(r)


@_worked("tp8_not_8x")
def _tp8_not_8x() -> dict[str, Any]:
    kw = dict(batch=4, prompt_tokens=1_024, answer_tokens=8_192)
    r1, _ = _many_gpus_parts("B200", 1, **kw)
    r8, p8 = _many_gpus_parts("B200", 8, **kw)
    return dict(
        t1=r1.tpot,
        t8=r8.tpot,
        ideal=(r1.tpot / 8).to("ms"),
        x=float((r1.tpot / r8.tpot).m),
        w8=p8["weight reads"],
        ar=allreduce_latency("Llama-3.1-70B", r8),
        c8=p8["communication"],
        o=p8["overhead"],
        sp=p8["shared prefill"],
        bw_pct=_pct(r8.assumptions.bandwidth_efficiency),
        bw=gpus["B200"].bandwidth.to("TB/s"),
    )


@_worked("nvlink_or_pcie")
def _nvlink_or_pcie() -> dict[str, Any]:
    kw = dict(batch=16, prompt_tokens=1_024, answer_tokens=1_024)
    (rs, ps), (rp, pp) = (_many_gpus_parts(g, 4, **kw) for g in ("H100 SXM", "H100 PCIe"))
    return dict(
        t_s=rs.tpot,
        t_p=rp.tpot,
        ratio=float((rp.tpot / rs.tpot).m),
        ar_s=allreduce_latency("Llama-3.1-70B", rs),
        ar_p=allreduce_latency("Llama-3.1-70B", rp),
        c_s=ps["communication"],
        c_p=pp["communication"],
        w_s=ps["weight reads"],
        w_p=pp["weight reads"],
        bw_pct=_pct(rs.assumptions.bandwidth_efficiency),
    )


#: The question bank, in the order the chapter asks them (the data files' order).
QUESTIONS = _Bank(load_questions())


# --- the sheet of numbers ---------------------------------------------------------------------------------------
#: Models whose KV per token the sheet lists, and GPUs whose datasheet figures it lists.
SHEET_MODELS = (
    "Llama-3.1-8B",
    "Qwen2.5-7B",
    "Llama-3.1-70B",
    "Qwen2.5-72B",
    "Llama-3.1-405B",
    "Mixtral-8x7B",
    "Qwen3-235B-A22B",
    "DeepSeek-V3",
)
SHEET_GPUS = ("H100 SXM", "H200 SXM", "B200")


def sheet(assumptions: Assumptions | str | None = None) -> dict[str, Any]:
    """Every number of the one-page sheet, computed from the catalog and the formulas.

    Speeds are given twice: at the datasheet bandwidth (the back-of-the-envelope method's ceiling,
    the figure the sources quote) and under ``assumptions`` (the course's method by default).
    Returns a dict of named quantities and counts plus the rows of its tables (``"kv_rows"``,
    ``"gpu_rows"``, ``"weight_rows"``).

    Examples
    --------
    >>> s = sheet()
    >>> round(s["h100_step"].to("ms").m, 2), round(s["h100_step_course"].to("ms").m, 1)
    (21.49, 30.7)
    """
    a, peak = resolve(assumptions), resolve(ENVELOPE)
    out: dict[str, Any] = {"bw_pct": _pct(a.bandwidth_efficiency), "fl_pct": _pct(a.compute_efficiency)}
    out["kv_rows"] = [
        (
            name,
            models[name].attention,
            kv_bytes_per_token(name).to("KiB"),
            kv_bytes_per_sequence(name, 4_096).to("GB"),
            kv_bytes_per_sequence(name, 131_072).to("GB"),
        )
        for name in SHEET_MODELS
    ]
    out["gpu_rows"] = []
    for name in SHEET_GPUS:
        g = gpus[name]
        step = _read_time(usable_memory(g, assumptions=peak), g, assumptions=peak)
        step_a = _read_time(usable_memory(g, assumptions=a), g, assumptions=a)
        out["gpu_rows"].append(
            (
                name,
                g.memory,
                g.bandwidth.to("TB/s"),
                g.flops.to("TFLOP/s"),
                g.peak_flops("fp8").to("TFLOP/s"),
                step,
                _per_s(step),
                g.price_per_hour,
                step_a,
                _per_s(step_a),
            )
        )
    h100 = gpus["H100 SXM"]
    out["h100_usable"] = usable_memory(h100, assumptions=peak).to("GB")
    out["h100_step"] = _read_time(out["h100_usable"], h100, assumptions=peak)
    out["h100_step_rate"] = _per_s(out["h100_step"])
    out["h100_step_course"] = _read_time(usable_memory(h100, assumptions=a), h100, assumptions=a)
    out["h100_step_course_rate"] = _per_s(out["h100_step_course"])
    datasheet = resolve().replace(bandwidth_efficiency=1.0, compute_efficiency=1.0)  # the datasheet's peaks
    out["ridge"] = ridge_intensity(h100, assumptions=datasheet)
    out["ridge_course"] = ridge_intensity(h100, assumptions=a)
    out["weight_rows"] = [
        (
            p,
            Q_(bytes_per_value(p), "B"),
            weight_bytes("Llama-3.1-8B", p).to("GB"),
            weight_bytes("Llama-3.1-70B", p).to("GB"),
            weight_bytes("Llama-3.1-405B", p).to("GB"),
        )
        for p in ("bf16", "fp8", "int4")
    ]
    m70 = _seed004_model()  # a round 70 billion parameters
    out["fpp"] = a.flops_per_param
    out["flops_70b"] = decode_flops_per_token(m70, 1, attention_flops=False, assumptions=a)
    out["prefill_70b_2k"] = F["prefill_flops_linear"](
        flops_per_param=Q_(a.flops_per_param, "FLOP"), params=m70.active_params, prompt_tokens=2_000
    ).to("PFLOP")
    out["kv_8b"] = kv_bytes_per_token("Llama-3.1-8B").to("KiB")
    out["kv_70b"] = kv_bytes_per_token("Llama-3.1-70B").to("KiB")
    for key, model, n in (("w70_read", "Llama-3.1-70B", 2), ("w8_read", "Llama-3.1-8B", 1)):
        out[key] = weight_read_ceiling(model, h100, n_gpus=n, assumptions=peak).step_time
        out[f"{key}_course"] = weight_read_ceiling(model, h100, n_gpus=n, assumptions=a).step_time
    ll = F["littles_law"](request_rate=Q_(10, "1/s"), time_in_system=Q_(15, "s"))
    out["little_example"] = float(ll.m)
    out["cost_example"] = cost_per_million(h100.price_per_hour, Q_(1_000, "1/s"))
    out["cost_example_price"] = h100.price_per_hour
    out["day_rate"] = float(Q_(1_000_000, "1/day").to("1/s").m)
    out["month_hours"] = HOURS_PER_MONTH
    out["month_cost"] = F["fleet_cost"](gpus=1, price=h100.price_per_hour, hours=out["month_hours"]).to("USD")
    return out


def sheet_tables(values: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The sheet's tables as Markdown: ``"gpus"``, ``"kv"`` and ``"weights"``.

    Examples
    --------
    >>> sheet_tables()["kv"].splitlines()[0]
    '| model | attention | KV per token (BF16) | one 4,096-token sequence | one 131,072-token sequence |'
    """
    s = sheet() if values is None else values
    pct = f"{num(s['bw_pct'])}%"
    gpu = [
        f"| GPU | memory | bandwidth | BF16 | FP8 | full-memory step (datasheet / {pct}) "
        f"| tok/s per user, full (datasheet / {pct}) | price (assumed) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    gpu += [
        f"| {n} | {num(m)} | {num(b)} | {num(f, 4)} | {num(f8, 4)} | {num(t)} / {num(ta)} | {num(r, 2)} / {num(ra, 2)} "
        f"| {p.m:.2f} USD/h |"
        for n, m, b, f, f8, t, r, p, ta, ra in s["gpu_rows"]
    ]
    kv = [
        "| model | attention | KV per token (BF16) | one 4,096-token sequence | one 131,072-token sequence |",
        "|---|---|---|---|---|",
    ]
    kv += [f"| {n} | {a} | {num(k)} | {num(k4)} | {num(k128)} |" for n, a, k, k4, k128 in s["kv_rows"]]
    wt = ["| precision | bytes per weight | Llama 3.1 8B | Llama 3.1 70B | Llama 3.1 405B |", "|---|---|---|---|---|"]
    wt += [f"| {p.upper()} | {num(b)} | {num(a)} | {num(c)} | {num(d)} |" for p, b, a, c, d in s["weight_rows"]]
    return {"gpus": "\n".join(gpu), "kv": "\n".join(kv), "weights": "\n".join(wt)}


def levels_markdown(parts: Mapping[str, str]) -> str:
    """Weak, good and strong answers as a Markdown list (``parts`` from :meth:`Question.markdown`)."""
    return "\n".join(f"- **{p.capitalize()}:** {parts[p]}" for p in ("weak", "good", "strong"))
