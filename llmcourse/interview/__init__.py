"""The interview track: the question bank with computed weak/good/strong answers, and the numbers sheet."""

from llmcourse.interview.bank import (
    CATALOG_NAMES,
    LEVELS,
    MIN_REPLICAS,
    PARTS,
    QUESTIONS,
    SHEET_GPUS,
    SHEET_MODELS,
    SOURCES,
    Question,
    levels_markdown,
    load_questions,
    num,
    parse_questions,
    sheet,
    sheet_tables,
)

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
