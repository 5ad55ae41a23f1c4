"""Calculators of the chapter *Tokens* (``book/01_tokens.md``).

Traffic in (requests a day, tokens per request, peak factor), tokens per second out; and
an answer's length in characters to tokens and to the time it takes to stream.
"""

from __future__ import annotations

from llmcourse.formulas import FORMULAS as F
from llmcourse.planner.serving import traffic
from llmcourse.units import Q_, sig, to
from llmcourse.widgets import Calculator, float_slider, int_box, int_slider

__all__ = ["answer_time_calculator", "answer_time_rows", "traffic_calculator", "traffic_rows"]


def traffic_rows(
    requests_per_day: int, prompt_tokens: int, answer_tokens: int, peak_factor: float, tpot_tokens_per_s: int
) -> list[tuple[str, str]]:
    """Rows of the traffic calculator: peak requests and tokens per second, and the streaming time.

    Examples
    --------
    >>> dict(traffic_rows(200_000, 2_000, 300, 3, 50))["output tokens/s at peak"]
    '2,083'
    """
    t = traffic(Q_(requests_per_day, "1/day"), prompt_tokens, answer_tokens, peak_factor=peak_factor)
    stream = F["generation_time"](tokens_per_request=answer_tokens, token_rate=Q_(tpot_tokens_per_s, "1/s"))
    return [
        ("average requests/s", sig(to(Q_(requests_per_day, "1/day"), "1/s").m, 3)),
        ("peak requests/s", sig(to(t.request_rate, "1/s").m, 3)),
        ("input tokens/s at peak", f"{to(t.input_tokens_per_s, '1/s').m:,.0f}"),
        ("output tokens/s at peak", f"{to(t.output_tokens_per_s, '1/s').m:,.0f}"),
        ("input : output", f"{t.input_tokens_per_s.m / t.output_tokens_per_s.m:.1f} : 1"),
        ("time to stream one answer", f"{sig(to(stream, 's').m, 3)} s"),
    ]


def traffic_calculator(
    requests_per_day: int = 200_000,
    prompt_tokens: int = 2_000,
    answer_tokens: int = 300,
    peak_factor: float = 3.0,
    tpot_tokens_per_s: int = 50,
) -> Calculator:
    """Requests a day, prompt and answer tokens, peak factor, decode speed -> tokens per second.

    Examples
    --------
    >>> c = traffic_calculator()
    >>> dict(c.rows)["peak requests/s"], dict(c.rows)["input tokens/s at peak"]
    ('6.94', '13,889')
    >>> dict(c.set(peak_factor=1).rows)["output tokens/s at peak"]
    '694'
    """
    return Calculator(
        traffic_rows,
        {
            "requests_per_day": int_box(requests_per_day, "Requests per day"),
            "prompt_tokens": int_box(prompt_tokens, "Prompt tokens"),
            "answer_tokens": int_box(answer_tokens, "Answer tokens"),
            "peak_factor": float_slider(peak_factor, 1.0, 10.0, 0.5, "Peak / average"),
            "tpot_tokens_per_s": int_slider(tpot_tokens_per_s, 5, 200, description="Decode speed per user (tok/s)"),
        },
        title="Traffic in tokens",
    )


def answer_time_rows(characters: int, chars_per_token: float, tokens_per_s: int) -> list[tuple[str, str]]:
    """Rows of the answer-time calculator: tokens in the answer and the time to stream it.

    Examples
    --------
    >>> answer_time_rows(5_000, 4, 50)
    [('tokens in the answer', '1,250'), ('time to stream it', '25.0 s')]
    """
    tokens = F["tokens_from_characters"](characters=characters, chars_per_token=chars_per_token)
    time = F["generation_time"](tokens_per_request=tokens, token_rate=Q_(tokens_per_s, "1/s"))
    return [("tokens in the answer", sig(tokens.m, 4)), ("time to stream it", f"{sig(to(time, 's').m, 3)} s")]


def answer_time_calculator(characters: int = 5_000, chars_per_token: float = 4.0, tokens_per_s: int = 50) -> Calculator:
    """An answer's length in characters and the decode speed -> tokens and seconds to stream it.

    Examples
    --------
    >>> c = answer_time_calculator()
    >>> dict(c.set(tokens_per_s=20).rows)["time to stream it"]
    '62.5 s'
    """
    return Calculator(
        answer_time_rows,
        {
            "characters": int_box(characters, "Answer length (characters)"),
            "chars_per_token": float_slider(chars_per_token, 2.0, 6.0, 0.5, "Characters per token"),
            "tokens_per_s": int_slider(tokens_per_s, 5, 200, description="Decode speed per user (tok/s)"),
        },
        title="How long an answer takes to stream",
    )
