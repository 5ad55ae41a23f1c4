"""Exercises for *Tokens* (``book/01_tokens.md``): requests to tokens per second.

The default variants are the chapter's exercises ``tokens_ex1`` .. ``tokens_ex6``.
"""

from __future__ import annotations

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises._common import define, pick

EXERCISES: list = []


def _vary(r):
    return dict(
        per_day=pick(r, range(20_000, 2_000_001, 10_000)),
        prompt=pick(r, range(500, 8_001, 100)),
        answer=pick(r, range(100, 1_001, 25)),
        peak=pick(r, (1.5, 2, 2.5, 3, 3.5, 4, 5)),
    )


def _traffic(v):
    return lc.traffic(Q_(v["per_day"], "1/day"), v["prompt"], v["answer"], peak_factor=v["peak"])


def _peak(v):
    return [(1 / v["peak"], "did you forget the peak factor?")]


define(
    EXERCISES,
    "tokens_ex1",
    "Output tokens per second at the peak",
    "An internal search assistant receives {per_day} requests a day, each with a {prompt}-token prompt and a "
    "{answer}-token answer; the busiest hour is {peak} times the daily average. How many output tokens per "
    "second must it produce at the peak?",
    "1/s",
    dict(per_day=50_000, prompt=1_500, answer=250, peak=4),
    _vary,
    lambda v: _traffic(v).output_tokens_per_s,
    (
        "A day has 86,400 seconds: peak requests/s = {per_day} / 86,400 s x {peak}.",
        "Output tokens/s = peak requests/s x {answer} answer tokens (the prompt does not count here).",
    ),
    mistakes=lambda v: [
        *_peak(v),
        (v["prompt"] / v["answer"], "did you use the prompt length instead of the answer?"),
        ((v["prompt"] + v["answer"]) / v["answer"], "keep input and output apart: answer tokens only"),
    ],
)

define(
    EXERCISES,
    "tokens_ex2",
    "Prompt tokens per answer token",
    "A support assistant receives {per_day} requests a day with {prompt}-token prompts and {answer}-token answers "
    "(peak factor {peak}). At the peak, how many prompt tokens does it read for every answer token it writes?",
    "",
    dict(per_day=200_000, prompt=2_000, answer=300, peak=3),
    _vary,
    lambda v: (_traffic(v).input_tokens_per_s / _traffic(v).output_tokens_per_s).to(""),
    ("Input tokens/s over output tokens/s at the same peak.", "The request rate cancels: it is {prompt} / {answer}."),
    bare_ok=True,
    followup="Give one reason the two rates are planned separately.",
)

define(
    EXERCISES,
    "tokens_ex3",
    "Tokens a retrieval step adds",
    "A retrieval step adds {chars} characters of English documents to every prompt. At {cpt} characters per "
    "token, how many tokens does that add per request?",
    "",
    dict(chars=8_000, cpt=4),
    lambda r: dict(chars=pick(r, range(2_000, 120_001, 1_000)), cpt=pick(r, (3.2, 3.5, 3.8, 4, 4.2))),
    lambda v: lc.FORMULAS["tokens_from_characters"](characters=v["chars"], chars_per_token=v["cpt"]),
    ("Tokens = characters / characters per token.",),
    bare_ok=True,
)

define(
    EXERCISES,
    "tokens_ex4",
    "How long the answer streams",
    "A coding assistant streams a {tokens}-token answer at {rate} tokens per second. How long until the last "
    "token arrives (ignoring the time to the first token)?",
    "s",
    dict(tokens=900, rate=30),
    lambda r: dict(tokens=pick(r, range(200, 3_001, 50)), rate=pick(r, range(15, 151, 5))),
    lambda v: lc.FORMULAS["generation_time"](tokens_per_request=v["tokens"], token_rate=Q_(v["rate"], "1/s")),
    ("Time = tokens / tokens per second.",),
    followup="How long at twice that rate?",
)

define(
    EXERCISES,
    "tokens_ex5",
    "A service at national scale",
    "A national chat service handles {rps} requests per second with answers of {chars} characters ({cpt} "
    "characters per token). How many answer tokens per second is that?",
    "1/s",
    dict(rps=17_361, chars=5_000, cpt=4),
    lambda r: dict(
        rps=pick(r, range(1_000, 40_001, 500)), chars=pick(r, range(1_000, 8_001, 250)), cpt=pick(r, (3.5, 4, 4.2))
    ),
    lambda v: lc.FORMULAS["token_rate"](
        request_rate=Q_(v["rps"], "1/s"),
        tokens_per_request=lc.FORMULAS["tokens_from_characters"](characters=v["chars"], chars_per_token=v["cpt"]),
    ),
    ("Tokens per answer = {chars} / {cpt}.", "Tokens/s = requests/s x tokens per answer."),
    mistakes=lambda v: [(v["cpt"], "did you multiply by the characters instead of the tokens?")],
    followup="How many requests is that per day?",
)

define(
    EXERCISES,
    "tokens_ex6",
    "Peak factor from the busiest hour",
    "A service receives {per_day} requests a day, and its busiest hour brings {per_hour} of them. Each answer is "
    "{answer} tokens. What output token rate must it plan for at the peak?",
    "1/s",
    dict(per_day=1_200_000, per_hour=120_000, answer=400),
    lambda r: (
        lambda d: dict(
            per_day=d, per_hour=int(d / 24 * pick(r, (1.5, 1.8, 2, 2.4, 2.5, 3))), answer=pick(r, range(100, 1_001, 50))
        )
    )(pick(r, range(240_000, 4_800_001, 120_000))),
    lambda v: (
        lc.traffic(
            Q_(v["per_day"], "1/day"),
            1,
            v["answer"],
            peak_factor=(Q_(v["per_hour"], "1/hour") / Q_(v["per_day"], "1/day")).to("").m,
        ).output_tokens_per_s
    ),
    (
        "Peak factor = busiest hour / average hour = {per_hour} / ({per_day} / 24).",
        "At the peak the rate is {per_hour} requests per hour; times {answer} tokens, per second.",
    ),
    mistakes=lambda v: [
        (
            (Q_(v["per_day"], "1/day") / Q_(v["per_hour"], "1/hour")).to("").m,
            "that is the daily average: plan for the busiest hour",
        )
    ],
    followup="What is its peak factor?",
)
