"""Published open-loop rate sweeps with percentiles, beside the simulator's: how far a percentile plan holds.

A closed-loop benchmark's percentiles hide the queue that users would form (coordinated omission, chapter
*Queueing*); an open-loop one sends requests at a rate whether or not the earlier ones have returned, as the
simulator's ``rate=`` does. ``llmcourse/data/open_loop_published.csv`` holds such sweeps, one row per (rate, metric,
percentile), each with the address and commit it was read at. :func:`open_loop_check` simulates every rate of a setup
with the one replica model under the course's method (:func:`~llmcourse.simulator.run.simulate`): as many requests
as the benchmark sent, Poisson arrivals, the mean prompt and answer lengths it reports and their spread (the
coefficients of variation the row gives, from the run's per-request lengths), once per seed. A p99 of 200 requests sits between their second and third slowest, so one seed's is noise: the check
gives the median of the seeds' percentiles and their range beside the measured one. It never reads the measured value
to simulate. A sweep that sends the same prompts at one rate after another to one server is kept at its first rate
only: from the second on, the prompts sit in the engine's prefix cache, which the file does not say how much of.

Examples
--------
>>> rows = open_loop_rows()
>>> len(rows), rows[0].gpu, rows[0].rate_per_s, rows[0].metric, rows[0].statistic
(4, 'A100 SXM 40GB', 1.0, 'ttft_ms', 'p50')
"""

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from llmcourse.assumptions import Assumptions
from llmcourse.catalog import gpus, models
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.simulator.run import simulate
from llmcourse.simulator.service import ServiceModel, build_replica
from llmcourse.units import Q_
from llmcourse.validation.cells import RowError, cell, number, shown, whole

__all__ = ["SEEDS", "OpenLoopCheck", "OpenLoopRow", "open_loop_check", "open_loop_markdown", "open_loop_rows"]

#: The metrics and percentiles a row may give.
OPEN_LOOP_METRICS = ("ttft_ms", "tpot_ms")
OPEN_LOOP_STATISTICS = ("p50", "p95", "p99")
_NAMES = {"ttft_ms": "time to first token", "tpot_ms": "time per output token"}
#: How many seeds :func:`open_loop_check` runs each rate with by default.
SEEDS = 5


@dataclass(frozen=True)
class OpenLoopRow:
    """One published percentile of an open-loop run: ``requests`` requests at ``rate_per_s`` Poisson arrivals a
    second on one replica of ``n_gpus`` GPUs, their mean prompt and answer lengths, and the ``statistic`` (p50, p95,
    p99) of ``metric`` in ms."""

    id: str
    source: str
    gpu: str
    n_gpus: int
    model: str
    weights: str
    engine: str
    requests: int
    prompt_tokens: int
    answer_tokens: int
    prompt_cv: float
    answer_cv: float
    rate_per_s: float
    metric: str
    statistic: str
    value_ms: float


def _named(names: Any, r: dict[str, str], col: str, line: int) -> str:
    """The catalog's name for a row's GPU or model; an unknown one refused with the catalog's "did you mean"."""
    try:
        return names[cell(r, col)].name
    except UnknownNameError as exc:
        raise UnknownNameError(f"open-loop row {line}: {str(exc).split(' Known:')[0]}") from None


def _row(r: dict[str, str], line: int) -> OpenLoopRow:
    """One CSV record, each cell read by :mod:`llmcourse.validation.cells`' readers (a bad one refused with the line
    and the column)."""
    gpu, model = _named(gpus, r, "gpu", line), _named(models, r, "model", line)
    try:
        metric, stat, source = cell(r, "metric"), cell(r, "statistic"), cell(r, "source")
        if metric not in OPEN_LOOP_METRICS:
            raise RowError(f"metric must be one of {', '.join(OPEN_LOOP_METRICS)}; got {shown(metric)!r}")
        if stat not in OPEN_LOOP_STATISTICS:
            raise RowError(f"statistic must be one of {', '.join(OPEN_LOOP_STATISTICS)}; got {shown(stat)!r}")
        if not source.startswith("https://"):
            raise RowError("source must be the https address the row was read at")
        return OpenLoopRow(
            id=(r.get("id") or "").strip() or f"row {line}",
            source=source,
            gpu=gpu,
            n_gpus=whole(r, "n_gpus"),
            model=model,
            weights=(r.get("weights") or "").strip(),
            engine=(r.get("engine") or "").strip(),
            requests=whole(r, "requests"),
            prompt_tokens=whole(r, "prompt_tokens"),
            answer_tokens=whole(r, "answer_tokens"),
            prompt_cv=number(r, "prompt_cv", allow_zero=True),
            answer_cv=number(r, "answer_cv", allow_zero=True),
            rate_per_s=number(r, "rate_per_s"),
            metric=metric,
            statistic=stat,
            value_ms=number(r, "value_ms"),
        )
    except RowError as exc:
        raise InputError(f"open-loop row {line}: {exc}.") from None


def open_loop_rows(text: str | None = None) -> list[OpenLoopRow]:
    """The published open-loop rows (``llmcourse/data/open_loop_published.csv``, or ``text`` in its columns), each
    checked: a GPU and model of the catalog, positive numbers, a known metric and percentile, an https source.

    Examples
    --------
    >>> head = "id,source,gpu,n_gpus,model,weights,engine,requests,prompt_tokens,answer_tokens,prompt_cv,answer_cv,"
    >>> open_loop_rows(head + "rate_per_s,metric,statistic,value_ms\\nx,https://a,H100 SXM,1,Llama-3.1-8B,bf16,vLLM,200,"
    ...                "100,100,0.5,0.5,-1,ttft_ms,p99,50")
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: open-loop row 2: column 'rate_per_s' must be a number above zero; got -1.
    """
    if text is None:
        text = resources.files("llmcourse.data").joinpath("open_loop_published.csv").read_text(encoding="utf-8")
    rows = [_row(r, line) for line, r in enumerate(csv.DictReader(io.StringIO(text)), start=2)]
    if not rows:
        raise InputError("no open-loop rows: the file holds a header and nothing else.")
    return rows


@dataclass(frozen=True)
class OpenLoopCheck:
    """A published percentile beside the simulated one: the median over the seeds, and the least and most."""

    row: OpenLoopRow
    simulated_ms: float
    least_ms: float
    most_ms: float

    @property
    def ratio(self) -> float:
        """Measured / simulated (above 1: the run was slower than the simulation)."""
        return self.row.value_ms / self.simulated_ms


def open_loop_check(
    rows: Sequence[OpenLoopRow] | None = None, *, seeds: int = SEEDS, assumptions: Assumptions | str | None = None
) -> list[OpenLoopCheck]:
    """Each row's percentile simulated (see the module notes): one replica model per setup, one run per rate and
    seed (``seeds`` seeds, 0 to ``seeds - 1``), under ``assumptions`` (the course's by default).

    Examples
    --------
    >>> c = open_loop_check(open_loop_rows()[:2], seeds=2)
    >>> [x.row.statistic for x in c], all(x.least_ms <= x.simulated_ms <= x.most_ms for x in c)
    (['p50', 'p99'], True)
    """
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
        raise InputError(f"seeds must be a whole number of at least 1; got {seeds!r}.")
    rows = open_loop_rows() if rows is None else list(rows)
    replicas: dict[tuple, ServiceModel] = {}
    runs: dict[tuple, list] = {}
    out = []
    for r in rows:
        setup = (r.model, r.gpu, r.n_gpus, r.weights, r.prompt_tokens, r.answer_tokens)
        spread = dict(prompt_cv=r.prompt_cv, answer_cv=r.answer_cv)
        if setup not in replicas:
            replicas[setup] = build_replica(
                r.model, r.gpu, prompt_tokens=r.prompt_tokens, answer_tokens=r.answer_tokens, n_gpus=r.n_gpus,
                weight_bytes=r.weights or None, assumptions=assumptions,
            )  # fmt: skip
        key = (*setup, r.prompt_cv, r.answer_cv, r.requests, r.rate_per_s)
        if key not in runs:
            rate = Q_(r.rate_per_s, "1/s")
            lengths = dict(prompt_tokens=r.prompt_tokens, answer_tokens=r.answer_tokens, requests=r.requests)
            runs[key] = [
                simulate(r.model, r.gpu, rate=rate, seed=s, replica=replicas[setup], **lengths, **spread)
                for s in range(seeds)
            ]
        got = [(run.ttft if r.metric == "ttft_ms" else run.tpot)[r.statistic].to("ms").m for run in runs[key]]
        out.append(OpenLoopCheck(r, statistics.median(got), min(got), max(got)))
    return out


def open_loop_markdown(checks: Sequence[OpenLoopCheck]) -> str:
    """The checks as a Markdown table: rate, metric, percentile, measured, simulated (median of the seeds, and
    their range), measured / simulated."""
    head = [
        "requests a second",
        "metric",
        "percentile",
        "measured",
        "simulated (range over seeds)",
        "measured / simulated",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in checks:
        r = c.row
        lines.append(
            f"| {r.rate_per_s:g} | {_NAMES[r.metric]} | {r.statistic} | {r.value_ms:.0f} ms | {c.simulated_ms:.0f} ms "
            f"({c.least_ms:.0f} to {c.most_ms:.0f}) | {c.ratio:.2f} |"
        )
    return "\n".join(lines)
