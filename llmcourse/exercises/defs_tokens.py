"""Exercises for *Tokens* (``book/01_tokens.md``): requests to tokens per second."""

from __future__ import annotations

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import define, pick

EXERCISES: list = []

DEFAULT = dict(per_day=200_000, prompt=2_000, answer=300, peak=3)


def _vary(r):
    return dict(
        per_day=pick(r, (50_000, 120_000, 200_000, 500_000, 2_000_000)),
        prompt=pick(r, (800, 1_500, 2_000, 3_500, 6_000)),
        answer=pick(r, (150, 300, 400, 700)),
        peak=pick(r, (2, 2.5, 3, 4)),
    )


def _traffic(v):
    return lc.traffic(Q_(v["per_day"], "1/day"), v["prompt"], v["answer"], peak_factor=v["peak"])


_STORY = (
    "A customer-support assistant gets {per_day} requests a day; the busiest hour runs at {peak} times the "
    "daily average. Each request sends a {prompt}-token prompt and gets a {answer}-token answer. "
)

define(
    EXERCISES,
    "tokens_ex1",
    "Peak requests per second",
    _STORY + "What is the peak request rate?",
    "1/s",
    DEFAULT,
    _vary,
    lambda v: _traffic(v).request_rate,
    ("A day has 86,400 seconds.", "Peak rate = requests per day / 86,400 s x {peak}."),
    mistakes=lambda v: [(1 / v["peak"], "did you forget the peak factor?")],
)

define(
    EXERCISES,
    "tokens_ex2",
    "Input tokens per second at peak",
    _STORY + "How many prompt (input) tokens per second arrive at peak?",
    "1/s",
    DEFAULT,
    _vary,
    lambda v: _traffic(v).input_tokens_per_s,
    ("Start from the peak request rate.", "Input tokens/s = peak requests/s x {prompt} prompt tokens."),
    mistakes=lambda v: [
        (v["answer"] / v["prompt"], "did you use the answer length instead of the prompt?"),
        ((v["prompt"] + v["answer"]) / v["prompt"], "keep input and output apart: prompt only"),
        (1 / v["peak"], "did you forget the peak factor?"),
    ],
)

define(
    EXERCISES,
    "tokens_ex3",
    "Output tokens per second at peak",
    _STORY + "How many answer (output) tokens per second must the system generate at peak?",
    "1/s",
    DEFAULT,
    _vary,
    lambda v: _traffic(v).output_tokens_per_s,
    (
        "Output tokens are the expensive ones: each is a decode step.",
        "Output tokens/s = peak requests/s x {answer} answer tokens.",
    ),
    mistakes=lambda v: [
        (v["prompt"] / v["answer"], "did you use the prompt length instead of the answer?"),
        (1 / v["peak"], "did you forget the peak factor?"),
    ],
)

_DOC = dict(chars=10_000, cpt=4)

define(
    EXERCISES,
    "tokens_ex4",
    "Tokens in a document",
    "A contract-review tool feeds whole documents to the model. One document has {chars} characters of "
    "English; English averages about {cpt} characters per token. How many tokens is the document?",
    "",
    _DOC,
    lambda r: dict(chars=pick(r, (6_000, 10_000, 24_000, 48_000, 120_000)), cpt=pick(r, (3.5, 4, 4.2))),
    lambda v: lc.FORMULAS["tokens_from_characters"](characters=v["chars"], chars_per_token=v["cpt"]),
    ("Tokens = characters / characters per token.",),
    bare_ok=True,
    tolerance=0.02,
)

define(
    EXERCISES,
    "tokens_ex5",
    "How long the answer streams",
    "A coding assistant streams a {tokens}-token answer at {rate} tokens per second per user. How long does the "
    "user watch it arrive (after the first token)?",
    "s",
    dict(tokens=1_250, rate=50),
    lambda r: dict(tokens=pick(r, (300, 800, 1_250, 2_000)), rate=pick(r, (20, 35, 50, 80, 120))),
    lambda v: lc.FORMULAS["generation_time"](tokens_per_request=v["tokens"], token_rate=Q_(v["rate"], "1/s")),
    ("Time = tokens / tokens per second.",),
)

define(
    EXERCISES,
    "tokens_ex6",
    "A service at national scale",
    "A national chat service peaks at {rps} requests per second, with {tokens} tokens per request in and out "
    "together. How many tokens per second is that?",
    "1/s",
    dict(rps=17_361, tokens=1_250),
    lambda r: dict(rps=pick(r, (2_000, 5_500, 17_361, 40_000)), tokens=pick(r, (600, 1_250, 2_500, 4_000))),
    lambda v: lc.FORMULAS["token_rate"](request_rate=Q_(v["rps"], "1/s"), tokens_per_request=v["tokens"]),
    ("Tokens/s = requests/s x tokens per request.", "Q_({rps}, '1/s') * {tokens} does it with units."),
)
