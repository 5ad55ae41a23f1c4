"""The published open-loop rows and the simulator's percentiles beside them (llmcourse.validation.open_loop)."""

from __future__ import annotations

import dataclasses

import pytest

from llmcourse.errors import InputError, UnknownNameError
from llmcourse.validation.open_loop import open_loop_check, open_loop_markdown, open_loop_rows

HEAD = (
    "id,source,gpu,n_gpus,model,weights,engine,requests,prompt_tokens,answer_tokens,prompt_cv,answer_cv,rate_per_s,"
    "metric,statistic,value_ms"
)
GOOD = "x,https://example.org/r,H100 SXM,1,Llama-3.1-8B,bf16,vLLM,200,100,100,0.5,0.7,2,ttft_ms,p99,50"


def test_the_shipped_rows_and_their_mean_lengths() -> None:
    """The sweep's table gives, at 1 request a second, 0.974567 requests served a second and 208.177 output and 416.047
    total tokens a second: (416.047 - 208.177) / 0.974567 = 213.3 prompt tokens and 208.177 / 0.974567 = 213.6 answer
    tokens a request. The rows hold 213 and 213, and p50 and p99 of both metrics at that rate (the later rates are
    not shipped: their prompts were in the prefix cache)."""
    rows = open_loop_rows()
    assert len(rows) == 4 and {r.rate_per_s for r in rows} == {1.0}
    assert {(r.prompt_tokens, r.answer_tokens, r.requests, r.n_gpus) for r in rows} == {(213, 213, 200, 8)}
    assert {(r.prompt_cv, r.answer_cv) for r in rows} == {(1.10, 0.99)}  # the run's own 200 lengths (the note)
    served, out_tps, total_tps = 0.974567, 208.177, 416.047
    assert round((total_tps - out_tps) / served) == 213 and abs(out_tps / served - 213) < 1
    assert {(r.metric, r.statistic) for r in rows} == {(m, s) for m in ("ttft_ms", "tpot_ms") for s in ("p50", "p99")}
    assert all(r.source.startswith("https://github.com/") and r.gpu == "A100 SXM 40GB" for r in rows)


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (("H100 SXM", "H900"), UnknownNameError, "no GPU named 'H900'. Did you mean"),
        (("Llama-3.1-8B", "Llama-9"), UnknownNameError, "no model named 'Llama-9'. Did you mean"),
        ((",p99,", ",p90,"), InputError, "statistic must be one of p50, p95, p99"),
        (("ttft_ms", "e2e_ms"), InputError, "metric must be one of"),
        (("https://example.org/r", "example.org/r"), InputError, "source must be the https address"),
        ((",200,100,100,", ",200.5,100,100,"), InputError, "column 'requests': '200.5' is not a whole number"),
        (
            (",0.5,0.7,", ",-0.5,0.7,"),
            InputError,
            "column 'prompt_cv' must be 0 or a number above zero; got -0.5",
        ),
        (
            (",0.5,0.7,", ",0.5,inf,"),
            InputError,
            "column 'answer_cv' must be 0 or a number above zero; got inf",
        ),
        ((",50", ",nan"), InputError, "column 'value_ms' must be a number above zero; got nan"),
        ((",1,Llama", ",2000,Llama"), InputError, "column 'n_gpus' must be at most 1,024; got 2000"),
    ],
)
def test_a_bad_row_is_refused_with_the_field_named(change: tuple[str, str], error: type, match: str) -> None:
    assert open_loop_rows(f"{HEAD}\n{GOOD}")[0].value_ms == 50.0
    with pytest.raises(error, match=match):
        open_loop_rows(f"{HEAD}\n{GOOD.replace(*change)}")
    with pytest.raises(InputError, match="holds a header and nothing else"):
        open_loop_rows(HEAD + "\n")


def test_the_check_never_reads_the_measured_value() -> None:
    """The same row with its measured value ten times larger, each checked in a run of its own (no simulation
    shared): the same simulated percentile, ten times the ratio; the seeds' median lies between their least and
    most; a table row per check."""
    row = open_loop_rows()[1]  # 1 request a second, first token, p99
    bigger = dataclasses.replace(row, value_ms=row.value_ms * 10)
    (a,), (b,) = open_loop_check([row], seeds=3), open_loop_check([bigger], seeds=3)
    assert a.simulated_ms == b.simulated_ms and b.ratio == pytest.approx(10 * a.ratio)
    assert a.least_ms <= a.simulated_ms <= a.most_ms and a.ratio == pytest.approx(row.value_ms / a.simulated_ms)
    assert len(open_loop_markdown([a, b]).splitlines()) == 4
    for bad in (0, -1, 1.5, True):
        with pytest.raises(InputError, match="seeds must be a whole number"):
            open_loop_check([row], seeds=bad)
