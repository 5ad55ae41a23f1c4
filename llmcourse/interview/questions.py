"""The interview questions as data: the :class:`Question` type, and the Markdown bank it is read from.

Each :class:`Question` holds a prompt, what a weak, a good and a strong answer sound like
(templates, see :mod:`llmcourse.interview.templates`), and a ``worked()`` function that computes every
number of the strong answer with the planner. :meth:`Question.numbers` returns those values
(quantities, counts) for tests and :meth:`Question.render` fills a template with them, so no number in
an answer is typed by hand.

The questions' text is data: Markdown files in ``llmcourse/data/interview/``, read in file-name
order, which is the bank's order (:func:`load_questions`, parsed with the standard library by
:func:`parse_questions`). A question there reads::

    ## weights_fit
    level: L4 · topic: memory · source: 000 · kind: numeric · key: n16

    ### Do the weights fit?

    #### prompt
    Qwen2.5-72B has {Q72.billions} billion parameters. How many ...

    #### weak
    ...

``## id`` opens a question; the next line gives its ``level`` (a key of :data:`LEVELS`), ``topic``,
``source`` (keys of :data:`SOURCES`, several joined by commas), ``kind`` (one of :data:`KINDS`) and,
where they apply: ``key`` (the figure an answer is graded on: every numeric question and design prompt
has one), ``chain`` and ``step`` (the chain it belongs to and its place there, from 1) and, for a
follow-up (step 2 on), ``moves`` (``moves: gpus up``: which figure the changed given moves, and which
way, against the step before; a test checks it). ``### title`` is its title, and
``#### prompt``, ``weak``, ``good``, ``strong`` and ``answer`` its five templates, each once. Text
before the first question is a note for the reader of the file. The lines of a paragraph are
joined by one space, as Markdown does; paragraphs are kept apart by a blank line. A template's
``{name}`` (``{name:3}``: three significant figures, ``{name.m}``: the number without its unit) is a
number the question's ``worked()`` function returns, ``{H100.bandwidth}`` a catalog entry of
:data:`~llmcourse.interview.templates.CATALOG_NAMES`; literal braces are doubled (``H_{{kv}}``). The
computations stay in Python: each ``worked()`` is registered under its question's id with
:func:`register_worked` (in :mod:`llmcourse.interview.worked` and its siblings, one for each data file
or two), and loading refuses a question without one, a function without its question, an unknown
level or source, and a field that is neither a catalog entry nor a well-formed name; a field the
function does not return is refused, naming the question and the field, when its numbers are
computed.

A ``worked()`` function may take ``variant`` (an int; 0 is the book's givens): it then draws other
models, GPUs and loads from the catalog for that seed (:func:`llmcourse.interview.figures.draw`), and the
question's prompt names its givens by field. :meth:`Question.numbers` passes the variant on; a question
whose function takes none has only the book's variant.

Examples
--------
>>> text = "## q1\\nlevel: L5 · topic: cost · kind: concept\\n\\n### A title\\n" + "".join(
...     f"#### {p}\\n{p}: {{x}} on {{H100.memory}}\\n" for p in PARTS)
>>> [q] = load_questions({"one.md": text}, {"q1": lambda: {"x": 3}})
>>> q.level, q.render("strong")
('L5', 'strong: 3 on 80 GB')
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from llmcourse.errors import InputError, UnknownNameError
from llmcourse.interview.templates import CATALOG_NAMES, check_fields, fields, fill

__all__ = [
    "KINDS",
    "LEVELS",
    "PARTS",
    "SOURCES",
    "Question",
    "QuestionBank",
    "levels_markdown",
    "load_questions",
    "parse_questions",
    "register_worked",
]


#: Interview levels, in order, with what the interviewer listens for at each.
LEVELS: dict[str, str] = {
    "L4": "knows the formulas and gets one number right, with its unit",
    "L5": "chains the numbers into a decision and names the bottleneck",
    "Staff+": "sizes the whole system, states the assumptions, and says which one moves the answer most",
}

#: What a question asks for: a number computed (graded on its ``key`` figure), an explanation, or a design
#: (an open brief, whose key figures are graded too).
KINDS: dict[str, str] = {
    "numeric": "a figure, computed and graded within a factor",
    "concept": "an explanation: the rubric is the grade",
    "design": "an open brief: requirements, estimate, architecture, bottleneck, levers, failure modes",
}

#: The directions a follow-up's ``moves`` may state.
DIRECTIONS = ("up", "down")

#: The texts the questions' figures come from, as the chapter names them.
SOURCES: dict[str, str] = {
    "000": "the back-of-the-envelope method",
    "001": "the interactive lab",
    "002": "the capacity-planning method",
    "004": "the system-design lesson",
    "course": "the course's own arithmetic",
}


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
    worked: Callable[..., dict[str, Any]]
    source: str = SOURCES["course"]
    kind: str = "concept"
    chain: str | None = None
    step: int | None = None
    #: For a follow-up: (figure, "up" or "down") against the step before.
    moves: tuple[str, str] | None = None
    #: The figure an answer is graded on (numeric questions and design prompts).
    key: str | None = None

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise InputError(f"question {self.id!r}: level must be one of {', '.join(LEVELS)}, not {self.level!r}.")
        if self.kind not in KINDS:
            raise InputError(f"question {self.id!r}: kind must be one of {', '.join(KINDS)}, not {self.kind!r}.")
        if self.kind != "concept" and self.key is None:
            raise InputError(
                f"question {self.id!r}: a {self.kind} question names the figure it is graded on (key: ...)."
            )

    @property
    def varies(self) -> bool:
        """Whether the worked function draws variants (takes ``variant``)."""
        try:
            return "variant" in inspect.signature(self.worked).parameters
        except (TypeError, ValueError):  # a builtin such as dict
            return False

    def numbers(self, variant: int = 0) -> dict[str, Any]:
        """Every number of the worked answer for ``variant`` (0: the book's givens), computed now with the planner.

        Refuses (:class:`InputError`) a variant that is not a whole number >= 0, a variant other than 0 for a
        question without variants, and a template field (or the ``key`` or ``moves`` figure) that is neither one
        of the numbers nor a catalog entry."""
        if isinstance(variant, bool) or not isinstance(variant, int) or variant < 0:
            raise InputError(f"question {self.id!r}: variant must be a whole number >= 0, not {variant!r}.")
        if variant and not self.varies:
            raise InputError(f"question {self.id!r} has only the book's variant (0); its worked() takes no variant.")
        vals = self.worked(variant=variant) if self.varies else self.worked()
        missing = sorted(self.fields() - set(vals) - set(CATALOG_NAMES))
        missing += [f for f in (self.key, self.moves[0] if self.moves else None) if f is not None and f not in vals]
        if missing:
            raise InputError(
                f"question {self.id!r}: template field {{{missing[0]}}} is neither a number its worked() function "
                f"returns nor a catalog entry ({', '.join(CATALOG_NAMES)}); it returns {', '.join(sorted(vals))}."
            )
        return vals

    def key_figure(self, variant: int = 0) -> Any:
        """The figure an answer is graded on, for ``variant``."""
        if self.key is None:
            raise InputError(f"question {self.id!r} is a {self.kind} question: it has no figure to grade.")
        return self.numbers(variant)[self.key]

    def fields(self) -> set[str]:
        """Names the templates use (each a key of :meth:`numbers` or of :data:`CATALOG_NAMES`)."""
        names: set[str] = set()
        for text in (self.prompt, self.weak, self.good, self.strong, self.answer):
            names |= fields(text)
        return names

    def render(self, part: str = "answer", values: Mapping[str, Any] | None = None, variant: int = 0) -> str:
        """Fill one template (``"prompt"``, ``"weak"``, ``"good"``, ``"strong"`` or ``"answer"``)."""
        if part not in PARTS:
            raise InputError(f"part must be prompt, weak, good, strong or answer; got {part!r}.")
        vals = self.numbers(variant) if values is None else values
        return fill(getattr(self, part), vals)

    def markdown(self, variant: int = 0) -> dict[str, str]:
        """All five parts rendered with one computation of the numbers."""
        vals = self.numbers(variant)
        return {p: self.render(p, vals) for p in PARTS}


class QuestionBank(Mapping[str, Question]):
    """Questions by id, in the order they were added; an unknown id is an
    :class:`~llmcourse.errors.UnknownNameError` that lists the known ones.

    Examples
    --------
    >>> bank = QuestionBank()
    >>> len(bank), list(bank)
    (0, [])
    """

    def __init__(self, questions: Iterable[Question] = ()) -> None:
        self._q: dict[str, Question] = {}
        for q in questions:
            self.add(q)
        self.chains()  # refuses a chain whose steps are not 1, 2, ... each once

    def chains(self) -> dict[str, list[Question]]:
        """The chains, by id in the order they first appear, each its questions in step order; refuses a chain
        whose steps are not 1, 2, ..., each once, and a first step with ``moves``."""
        out: dict[str, list[Question]] = {}
        for q in self._q.values():
            if q.chain is not None:
                out.setdefault(q.chain, []).append(q)
        for cid, qs in out.items():
            qs.sort(key=lambda q: q.step or 0)
            steps = [q.step for q in qs]
            if steps != list(range(1, len(qs) + 1)):
                raise InputError(f"chain {cid!r}: steps {steps}; number them 1, 2, ... each once.")
        return out

    def add(self, q: Question) -> Question:
        """Add ``q``; refuses a second question with its id."""
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
_WORKED: dict[str, Callable[..., dict[str, Any]]] = {}


def register_worked(qid: str) -> Callable[[Callable[..., dict[str, Any]]], Callable[..., dict[str, Any]]]:
    """A decorator: register the function as the computation (``worked()``) of the data question ``qid``.

    :func:`load_questions` pairs each question of the data files with its function; a second function
    for one id is refused. The bank's functions are in :mod:`llmcourse.interview.worked` and its siblings.
    """

    def deco(fn: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        if qid in _WORKED:
            raise InputError(f"question {qid!r}: two worked() functions")
        _WORKED[qid] = fn
        return fn

    return deco


# --- reading the bank's data files ---------------------------------------------------------------------
_HEADING = re.compile(r"^(#{2,4}) (.*)$")
_ID = re.compile(r"[a-z][a-z0-9_]*")


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


#: The keys of a question's header line, in the order a data file gives them.
_META_KEYS = ("level", "topic", "source", "kind", "key", "chain", "step", "moves")


def _meta(where: str, line: str) -> dict[str, Any]:
    """The ``level: L4 · topic: memory · source: 000 · kind: numeric ...`` line as a dict, or InputError."""
    out: dict[str, Any] = {}
    for item in line.split(" · "):
        key, sep, value = item.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or key not in _META_KEYS or not value or key in out:
            raise InputError(
                f"{where}: the line after the id must read 'level: L4 · topic: ... · source: 000 · kind: numeric' (then key, "
                f"chain, step, moves where they apply), each key once; "
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
    return out | _chain_meta(where, out)


def _chain_meta(where: str, out: dict[str, Any]) -> dict[str, Any]:
    """The header's kind, key, chain, step and moves, checked (InputError naming ``where``)."""
    kind = out.get("kind")
    if kind not in KINDS:
        raise InputError(f"{where}: give its kind, one of {', '.join(KINDS)} ('kind: numeric'); got {kind!r}.")
    if "key" in out and not _ID.fullmatch(out["key"]):
        raise InputError(f"{where}: key {out['key']!r} is not a figure's name (lower case, digits and _).")
    if ("chain" in out) != ("step" in out):
        raise InputError(f"{where}: a question of a chain gives both 'chain: ID' and 'step: N'.")
    meta: dict[str, Any] = {}
    if "chain" in out:
        if not _ID.fullmatch(out["chain"]):
            raise InputError(f"{where}: chain {out['chain']!r}: a chain id is lower case, digits and _.")
        if not out["step"].isdigit() or int(out["step"]) < 1:
            raise InputError(f"{where}: step must be a whole number from 1, not {out['step']!r}.")
        meta["step"] = int(out["step"])
        if (meta["step"] > 1) != ("moves" in out):
            raise InputError(
                f"{where}: a follow-up (step 2 on) says what moves ('moves: gpus up'); a first step does not."
            )
    elif "moves" in out:
        raise InputError(f"{where}: 'moves' belongs to a follow-up of a chain (give chain and step).")
    if "moves" in out:
        figure, _, direction = out["moves"].partition(" ")
        if not _ID.fullmatch(figure) or direction not in DIRECTIONS:
            raise InputError(
                f"{where}: moves must read 'FIGURE up' or 'FIGURE down' (e.g. 'moves: gpus up'), not {out['moves']!r}."
            )
        meta["moves"] = (figure, direction)
    return meta


def parse_questions(text: str, name: str = "<text>") -> list[dict[str, Any]]:
    """The questions of one data file as dicts (id, level, topic, source, title and the five parts).

    Examples
    --------
    >>> text = "## q1\\nlevel: L4 · topic: memory\\n\\n### A title\\n" + "".join(
    ...     f"#### {p}\\n{p} of {{x}}\\n" for p in PARTS)
    >>> text = text.replace("memory", "memory · kind: concept")
    >>> q = parse_questions(text)[0]
    >>> q["id"], q["title"], q["source"], q["answer"]
    ('q1', 'A title', "the course's own arithmetic", 'answer of {x}')
    """
    out: list[dict[str, Any]] = []
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
            check_fields(where, p, q[p])
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
    texts: Mapping[str, str] | None = None, worked: Mapping[str, Callable[..., dict[str, Any]]] | None = None
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
                f"question {q['id']!r} has no worked() function: register one with @register_worked({q['id']!r}) in "
                "llmcourse/interview/worked*.py."
            )
        out.append(Question(worked=fns[q["id"]], **q))
    orphans = [k for k in fns if k not in seen]
    if orphans:
        raise InputError(
            f"worked() function for {orphans[0]!r} has no question in llmcourse/data/interview/: add its '## {orphans[0]}'."
        )
    return out


def levels_markdown(parts: Mapping[str, str]) -> str:
    """Weak, good and strong answers as a Markdown list (``parts`` from :meth:`Question.markdown`).

    Examples
    --------
    >>> print(levels_markdown({"weak": "a guess", "good": "a number", "strong": "a number and why"}))
    - **Weak:** a guess
    - **Good:** a number
    - **Strong:** a number and why
    """
    return "\n".join(f"- **{p.capitalize()}:** {parts[p]}" for p in ("weak", "good", "strong"))
