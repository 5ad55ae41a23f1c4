"""The interview bank with each question's worked numbers computed once per variant in a test process (pytest-xdist
worker), for the test files that ask the same variants (tests/test_interview_practice.py, test_interview.py,
test_interview_operations.py, test_interview_variants_design.py).

The worked numbers of a variant are a function of the variant alone (its givens are drawn from a generator seeded by
the variant's number), and the design and fleet questions' worked() size fleets by simulation (seconds a variant):
the variant test, the bank's report and the chains' follow-ups ask the same variants, and the variant test asks each
three times (markdown, key_figure, answer_text). Every check still runs on the package's own numbers(), markdown(),
key_figure(), answer_text() and report(), each call validating the numbers it is given; each call gets its own copy
of the numbers.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

from llmcourse.interview import QUESTIONS, Question

_WORKED: dict[tuple[str, int], dict[str, Any]] = {}


def kept(q: Question) -> Question:
    """``q`` with its worked() function computed once per variant in this process (a copy of the numbers each call);
    a question without variants as it is."""
    if not q.varies:
        return q

    @functools.wraps(q.worked)  # keeps the signature: `varies` reads its `variant` parameter
    def worked(variant: int = 0) -> dict[str, Any]:
        if (q.id, variant) not in _WORKED:
            _WORKED[q.id, variant] = q.worked(variant=variant)
        return dict(_WORKED[q.id, variant])

    return dataclasses.replace(q, worked=worked)


#: Every question of the bank, by id, each with its worked numbers kept (see :func:`kept`).
BANK: dict[str, Question] = {qid: kept(q) for qid, q in QUESTIONS.items()}
