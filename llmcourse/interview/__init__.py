"""The interview track: the question bank with computed weak/good/strong answers, and the numbers sheet.

In rooms: :mod:`~llmcourse.interview.questions` (the :class:`Question` type, reading the Markdown bank),
:mod:`~llmcourse.interview.templates` (numbers written into the answers' prose), the worked answers
(:mod:`~llmcourse.interview.worked`, :mod:`~llmcourse.interview.worked_speculative`,
:mod:`~llmcourse.interview.worked_many_gpus`, on the helpers of :mod:`~llmcourse.interview.figures`),
:mod:`~llmcourse.interview.bank` (:data:`QUESTIONS`, the questions with their worked answers) and
:mod:`~llmcourse.interview.numbers_sheet` (the sheet of numbers).
"""

from llmcourse.interview.bank import QUESTIONS
from llmcourse.interview.numbers_sheet import SHEET_GPUS, SHEET_MODELS, sheet, sheet_tables
from llmcourse.interview.questions import (
    LEVELS,
    PARTS,
    SOURCES,
    Question,
    levels_markdown,
    load_questions,
    parse_questions,
)
from llmcourse.interview.templates import CATALOG_NAMES, num
from llmcourse.interview.worked import MIN_REPLICAS

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
