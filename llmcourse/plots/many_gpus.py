"""Figures and measured rows of the chapter *Many GPUs* (``book/08c_many_gpus.md``).

The measured rows are Llama-3.1-70B's aggregated rows of ``llmcourse/data/aiconfigurator-silicon.csv``
(NVIDIA's aiconfigurator silicon sample: TensorRT-LLM and vLLM on H100, H200 and B200, tensor-parallel
1 to 8, FP8 and FP4 weights), read with the standard library's ``csv`` module; every prediction is
:func:`llmcourse.replica.replica`'s time per output token for the same deployment and load.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pint

from llmcourse.assumptions import resolve
from llmcourse.catalog import gpus
from llmcourse.plots import finish, new_figure, new_panels
from llmcourse.replica.model import replica
from llmcourse.units import Q_
from llmcourse.validation.measured import aiconfigurator_records, silicon_concurrency

__all__ = [
    "ENGINES",
    "ErrorSummary",
    "MeasuredRow",
    "error_summary",
    "llama70_measured",
    "predicted_tpot",
    "tpot_against_concurrency",
    "tpot_against_tp",
]

MODEL = "Llama-3.1-70B"
#: The engines of the file, as the chapter names them.
ENGINES = {"trtllm": "TensorRT-LLM", "vllm": "vLLM", "sglang": "SGLang"}


@dataclass(frozen=True)
class MeasuredRow:
    """One measured time per output token of Llama-3.1-70B at a concurrency (one aggregated row)."""

    id: str
    gpu: str
    engine: str
    precision: str
    tensor_parallel: int
    concurrency: int
    prompt_tokens: int
    answer_tokens: int
    tpot: pint.Quantity

    @property
    def family(self) -> str:
        return f"{self.gpu}, {self.engine}, {self.precision.upper()}"


def _concurrency(row: dict[str, str]) -> int:
    c = silicon_concurrency(row)
    return c if c is not None else int(row["batch_size"]) * int(row["attention_dp_size"] or 1)


def llama70_measured(concurrency: int | None = 4) -> list[MeasuredRow]:
    """The measured Llama-3.1-70B rows of the silicon file (aggregated serving, one replica,
    tensor parallelism only), at ``concurrency`` requests in flight (every concurrency with None).

    Examples
    --------
    >>> rows = llama70_measured()
    >>> len(rows), sorted({r.gpu for r in rows}), sorted({r.tensor_parallel for r in rows})
    (81, ['B200', 'H100 SXM', 'H200 SXM'], [1, 2, 4, 8])
    """
    out = []
    for r in aiconfigurator_records():
        if not r["model_path"].endswith(MODEL) or r["mode"] != "agg":
            continue
        if int(r["pp_size"] or 1) != 1 or int(r["attention_dp_size"] or 1) != 1:
            continue
        c = _concurrency(r)
        if concurrency is not None and c != concurrency:
            continue
        out.append(
            MeasuredRow(
                id=r["id"],
                gpu=gpus[r["system"]].name,
                engine=ENGINES.get(r["backend"], r["backend"]),
                precision=r["precision"],
                tensor_parallel=int(r["tp_size"]),
                concurrency=c,
                prompt_tokens=int(r["isl"]),
                answer_tokens=int(r["osl"]),
                tpot=Q_(float(r["silicon_tpot_ms"]), "ms"),
            )
        )
    return out


def predicted_tpot(row: MeasuredRow, assumptions: Any = None) -> pint.Quantity:
    """The replica model's time per output token for a measured row's deployment and load.

    Examples
    --------
    >>> row = next(r for r in llama70_measured() if r.gpu == "B200" and r.tensor_parallel == 8
    ...            and r.engine == "TensorRT-LLM" and r.precision == "fp8" and r.answer_tokens == 8_192)
    >>> round(predicted_tpot(row).to("ms").m, 2), round(row.tpot.to("ms").m, 2)
    (5.5, 5.81)
    """
    rep = replica(
        MODEL,
        row.gpu,
        tensor_parallel=row.tensor_parallel,
        batch=row.concurrency,
        prompt_tokens=row.prompt_tokens,
        answer_tokens=row.answer_tokens,
        weight_bytes=row.precision,
        assumptions=assumptions,
    )
    return rep.tpot.to("ms")


@dataclass(frozen=True)
class ErrorSummary:
    """How far a method's predictions are from the measured rows: the factor measured / predicted."""

    method: str
    factors: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.factors)

    @property
    def worst(self) -> float:
        """The largest factor either way (2 means one row is off by 2x, too fast or too slow)."""
        return math.exp(max(abs(math.log(f)) for f in self.factors))

    def within(self, factor: float) -> int:
        return sum(1 / factor <= f <= factor for f in self.factors)


def error_summary(rows: Sequence[MeasuredRow], assumptions: Any = None, method: str | None = None) -> ErrorSummary:
    """Measured over predicted time per token for each row, under ``assumptions``.

    Examples
    --------
    >>> s = error_summary(llama70_measured())
    >>> len(s.factors), s.within(1.25)
    (81, 77)
    """
    a = resolve(assumptions)
    return ErrorSummary(method or a.name, tuple((r.tpot / predicted_tpot(r, a)).to("").m for r in rows))


_MARKERS = {"TensorRT-LLM": "o", "vLLM": "s", "SGLang": "^"}


def tpot_against_tp(
    precision: str = "fp8",
    prompt_tokens: int = 1_024,
    answer_tokens: int = 8_192,
    concurrency: int = 4,
    gpu_names: Sequence[str] = ("H100 SXM", "H200 SXM", "B200"),
    free: Any = None,
) -> Any:
    """Time per output token of Llama-3.1-70B against the tensor-parallel degree, one panel per GPU:
    the course's replica model (solid), the GPUs splitting the model for free (dashed: ``free``, the
    course's method without communication and overhead by default), and the measured rows as points
    (one marker per engine). Returns the axes."""
    from llmcourse.widgets.many_gpus import free_split

    free = free_split() if free is None else free
    rows = [
        r
        for r in llama70_measured(concurrency)
        if r.precision == precision and r.prompt_tokens == prompt_tokens and r.answer_tokens == answer_tokens
    ]
    fig, axes = new_panels(1, len(gpu_names), width=9.6, height=3.4, sharey=True)
    for ax, g in zip(axes, gpu_names, strict=True):
        ax.grid(True, alpha=0.3)
        for label, a, style in (("course's model", None, "-"), ("GPUs talking for free", free, "--")):
            ns, ts = [], []
            for n in (1, 2, 4, 8):
                rep = replica(
                    MODEL,
                    g,
                    tensor_parallel=n,
                    batch=concurrency,
                    prompt_tokens=prompt_tokens,
                    answer_tokens=answer_tokens,
                    weight_bytes=precision,
                    assumptions=a,
                )
                if rep.fits:
                    ns.append(n)
                    ts.append(rep.tpot.to("ms").m)
            ax.plot(ns, ts, style, color="#1f77b4" if a is None else "#888888", label=label)
        for engine, marker in _MARKERS.items():
            pts = [(r.tensor_parallel, r.tpot.to("ms").m) for r in rows if r.gpu == g and r.engine == engine]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker, color="crimson", fillstyle="none", label=f"measured, {engine}")
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
        ax.set_title(g, fontsize=10)
        ax.set_xlabel("tensor-parallel degree (GPUs)")
    axes[0].set_ylabel("time per output token (ms)")
    axes[0].set_ylim(bottom=0)
    axes[-1].legend(fontsize=7)
    fig.suptitle(
        f"{MODEL}, {precision.upper()}, {concurrency} requests in flight, {prompt_tokens:,} in / {answer_tokens:,} out",
        fontsize=10,
    )
    lead = "Time per output token against the tensor-parallel degree, one panel per GPU: the course's model, the same with GPUs talking for free, and the measured rows."
    return finish(axes, lead)


def tpot_against_concurrency(
    gpu: str = "B200",
    precision: str = "fp8",
    prompt_tokens: int = 1_024,
    answer_tokens: int = 8_192,
    degrees: Sequence[int] = (2, 8),
    engine: str = "TensorRT-LLM",
) -> Any:
    """Time per output token of Llama-3.1-70B against the concurrency, one line per tensor-parallel
    degree (the course's model), with the measured rows of ``engine`` as points. Returns the axes."""
    rows = [
        r
        for r in llama70_measured(None)
        if r.gpu == gpu
        and r.precision == precision
        and r.engine == engine
        and (r.prompt_tokens, r.answer_tokens) == (prompt_tokens, answer_tokens)
    ]
    _fig, ax = new_figure()
    colours = iter(("#1f77b4", "#d95f02", "#7570b3", "#1b9e77"))
    cs = sorted({r.concurrency for r in rows} | {1, 2})
    for n in degrees:
        colour = next(colours)
        xs, ts = [], []
        for c in cs:
            rep = replica(
                MODEL,
                gpu,
                tensor_parallel=n,
                batch=c,
                prompt_tokens=prompt_tokens,
                answer_tokens=answer_tokens,
                weight_bytes=precision,
            )
            if rep.fits:
                xs.append(c)
                ts.append(rep.tpot.to("ms").m)
        ax.plot(xs, ts, "-", color=colour, label=f"TP{n}, course's model")
        pts = sorted((r.concurrency, r.tpot.to("ms").m) for r in rows if r.tensor_parallel == n)
        if pts:
            ax.plot(*zip(*pts, strict=True), "o", color=colour, fillstyle="none", label=f"TP{n}, measured ({engine})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrency (requests in flight)")
    ax.set_ylabel("time per output token (ms)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"{MODEL} on {gpu}, {precision.upper()}, {prompt_tokens:,} in / {answer_tokens:,} out", fontsize=10)
    ax.legend(fontsize=7)
    lead = "Time per output token against the number of requests in flight, one line per tensor-parallel degree, with the measured rows as points."
    return finish(ax, lead)
