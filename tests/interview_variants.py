"""The variant check of tests/test_interview_practice.py, shared with tests/test_interview_variants_design.py, which
holds the design questions whose worked numbers size fleets by simulation.

pytest-xdist's ``--dist loadfile`` runs a file on one worker, so one file with every question's 40 variants was the
run's floor (its simulated questions are most of its time: several seconds a variant). The two simulated design
questions are checked in a file of their own, on the other worker: they are in no chain and, not numeric, not in the
bank's distinct-answer counts, so no test of tests/test_interview_practice.py asks their variants again. The
disaggregation questions (simulated too) stay there: the disaggregation chain's follow-ups and the bank's counts ask
the same variants, which tests/interview_bank.py keeps in the file's process.
"""

from __future__ import annotations

import math

import pint
from interview_bank import BANK

from llmcourse.interview.practice import VARIANTS, answer_text

#: The design questions with variants whose worked numbers size fleets by simulation: their variants are checked in
#: tests/test_interview_variants_design.py, every other question's in tests/test_interview_practice.py.
SIMULATED_DESIGN = ("design_code_disagg", "design_support_p99")


def _dim(x: object) -> object:
    return x.dimensionality if isinstance(x, pint.Quantity) else "count"


def _forms(x: object) -> set[str]:
    from llmcourse.interview import num

    return {num(x, d) for d in (1, 2, 3, 4, 5)}


def check_every_variant(qid: str) -> None:
    """40 variants (20+ distinct key figures for a numeric question): every part renders, the key figure is finite,
    positive, of one dimension, and appears in the worked answer's text as the template writes it (the rubric's number
    is the worked one)."""
    q = BANK[qid]
    if q.key is None:  # a concept question with variants: every part renders for every variant, and they differ
        texts = {q.render("answer", variant=v) for v in range(VARIANTS)}
        assert all(t.strip() for t in texts) and len(texts) > 1, qid
        return
    book = q.key_figure(0)
    seen = set()
    for v in range(VARIANTS):
        parts = q.markdown(v)
        x = q.key_figure(v)
        m = float(x.m if isinstance(x, pint.Quantity) else x)
        assert math.isfinite(m) and m > 0 and _dim(x) == _dim(book)
        shown = " ".join(parts[p] for p in ("good", "strong", "answer"))
        assert any(f in shown for f in {answer_text(q, v)} | _forms(x)), (qid, v, answer_text(q, v))
        seen.add(round(m, 9))
    if q.kind == "numeric":
        assert len(seen) >= 20, (qid, len(seen))
