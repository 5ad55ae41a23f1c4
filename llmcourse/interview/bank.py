"""The question bank: every question of ``llmcourse/data/interview/*.md`` with its worked answer.

:data:`QUESTIONS` holds the questions in the order the chapters ask them (the data files' order),
each read by :func:`~llmcourse.interview.questions.load_questions` and paired with the ``worked()``
function that computes its numbers: those of the interview chapter's levels in
:mod:`llmcourse.interview.worked`, the speculative-decoding and many-GPU chapters' in
:mod:`llmcourse.interview.worked_speculative` and :mod:`llmcourse.interview.worked_many_gpus`, the 2026 staples' in
:mod:`llmcourse.interview.worked_staples`. The
format of the data files is in :mod:`llmcourse.interview.questions`.

Defined in the chapters *Interview questions* (``book/14_interview_questions.md``), *Speculative
decoding* and *Many GPUs*.

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

# Importing the worked answers registers each question's worked() function before the bank is read.
from llmcourse.interview import (  # noqa: F401
    worked,
    worked_chains,
    worked_designs,
    worked_many_gpus,
    worked_memory,
    worked_operations,
    worked_speculative,
    worked_staples,
)
from llmcourse.interview.questions import QuestionBank, load_questions

__all__ = ["QUESTIONS"]

#: The question bank, in the order the chapter asks them (the data files' order).
QUESTIONS = QuestionBank(load_questions())
