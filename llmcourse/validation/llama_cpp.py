"""llama.cpp's kernels, fitted in the open on public ``llama-bench`` rows, held out by machine.

The course's engine factors (``bandwidth_efficiency`` 0.7, ``four_bit_bandwidth_factor`` 0.6, ``compute_efficiency``
0.5, ``step_overhead_ms`` 1) were fitted on datacenter engines (vLLM, TensorRT-LLM, SGLang). llama.cpp runs its own
kernels: for one sequence's decode a matrix-vector product per GGUF block type that dequantizes the blocks as it
reads them (``ggml/src/ggml-cuda/mmvq.cu``, ``mul_mat_vec_q``; the Metal backend's ``kernel_mul_mv_*`` kernels), for a
prompt its quantized matrix products (``mmq.cu``; Metal's ``kernel_mul_mm_*``) or cuBLAS for 16-bit weights. This module fits their shares on the public rows of
``llmcourse/data/llama_cpp_public.csv`` (one row per measurement, each with its source), through the package's own
decode step and prefill (:func:`~llmcourse.replica.step.decode_step`, :func:`~llmcourse.replica.prefilling.prefill`)
under the assumptions :func:`~llmcourse.assumptions.for_engine` gives engine ``"llama.cpp"``:

* decode (``tg N``: one sequence, N tokens from an empty context, so its KV is read at N / 2 on average): the share of
  the bandwidth for 8- and 16-bit weights, the share for 4-bit weights, and a fixed time per token;
* prompt processing (``pp N``: N prompt tokens in one pass): the share of the dense 16-bit FLOP/s.

Each is fitted by least squares on ``ln(predicted / measured)`` over a grid (:data:`SHARES`, :data:`OVERHEADS_MS`),
then held out by machine (:func:`held_out`): every machine's rows predicted by a fit that never saw that machine, with
an 80% band of measured / predicted drawn from those held-out rows (:func:`band_of`) and the share of held-out rows
that a band drawn the same way from the other machines covers. The fitted values are the course preset's ``llama_cpp_*`` fields (the chapter *On your
own machine* checks they agree).

Examples
--------
>>> rows = public_rows()
>>> len(rows) >= 40, all(r.source.startswith("https://") for r in rows)
(True, True)
>>> r = rows[0]
>>> r.gpu, r.model, r.gguf, r.test, r.kind, r.tokens
('RTX 3070', 'Llama-3.1-8B', 'q4_k_m', 'tg512', 'decode', 512)
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from llmcourse.assumptions import Assumptions, for_engine, resolve
from llmcourse.catalog import gpus, models
from llmcourse.errors import InputError
from llmcourse.planner.own_machine import ENGINE, gguf_type
from llmcourse.replica.prefilling import prefill
from llmcourse.replica.step import decode_step, read_efficiency
from llmcourse.validation.fit import ErrorStats, error_stats

__all__ = [
    "COLUMNS",
    "OVERHEADS_MS",
    "SHARES",
    "HeldOut",
    "LlamaCppFit",
    "PublicRow",
    "band_of",
    "fit_llama_cpp",
    "from_llama_bench",
    "general",
    "held_out",
    "llama_cpp_band_table",
    "predicted",
    "public_rows",
]

#: The file's columns: the measurement (``gpu``, ``model`` and ``gguf`` as the catalog names them, ``test`` as
#: llama-bench names it, ``t_s`` its tokens per second), what the source called the machine and the model, and where
#: it comes from (``source``: a URL; ``date`` and ``build`` where the source gives them).
COLUMNS = ("id", "gpu", "model", "gguf", "test", "t_s", "machine", "model_as_run", "source", "date", "build", "note")

#: The shares the fit tries (bandwidth or FLOP/s): 0.30 to 1.00 by 0.01.
SHARES = tuple(round(0.30 + 0.01 * k, 2) for k in range(71))

#: The fixed times per decoded token the fit tries: 0 to 2 ms by 0.25 ms.
OVERHEADS_MS = tuple(0.25 * k for k in range(9))

_TEST = re.compile(r"^(tg|pp)(\d+)$")
_LOAD = re.compile(r"^(tg|pp) (\d+)$")  # the load of a llama-bench measurement (not one at a depth)


@dataclass(frozen=True)
class PublicRow:
    """One public llama-bench measurement: ``tokens_per_s`` of test ``test`` (``tg512``: 512 tokens decoded one at a
    time; ``pp512``: a 512-token prompt in one pass) of ``model`` stored as GGUF type ``gguf`` on one ``gpu``."""

    id: str
    gpu: str
    model: str
    gguf: str
    test: str
    tokens_per_s: float
    machine: str
    model_as_run: str
    source: str
    date: str
    build: str
    note: str

    @property
    def kind(self) -> str:
        """``"decode"`` for a ``tg`` test, ``"prefill"`` for a ``pp`` test."""
        return "decode" if self.test.startswith("tg") else "prefill"

    @property
    def tokens(self) -> int:
        """The test's tokens: decoded (``tg``) or in the prompt (``pp``)."""
        return int(self.test[2:])


def _row(r: dict[str, str], line: int) -> PublicRow:
    """One CSV record as a :class:`PublicRow`, every field checked (a bad one refused, naming the line and field)."""
    where = f"llama_cpp_public.csv line {line}"
    missing = [c for c in COLUMNS if r.get(c) is None]
    if missing:
        raise InputError(f"{where}: no column {missing[0]!r}; the file's columns are {', '.join(COLUMNS)}.")
    if not r["source"].strip().startswith("https://"):
        raise InputError(f"{where}: source must be the URL the measurement was published at; got {r['source']!r}.")
    if not _TEST.match(r["test"].strip()):
        raise InputError(f"{where}: test must be llama-bench's name of a test, tgN or ppN; got {r['test']!r}.")
    try:
        rate = float(r["t_s"])
    except ValueError:
        raise InputError(f"{where}: t_s must be a number of tokens per second; got {r['t_s']!r}.") from None
    if not (math.isfinite(rate) and rate > 0):
        raise InputError(f"{where}: t_s must be above 0; got {r['t_s']!r}.")
    return PublicRow(
        id=r["id"].strip(),
        gpu=gpus[r["gpu"].strip()].name,  # an unknown name gets "did you mean"
        model=models[r["model"].strip()].name,
        gguf=gguf_type(r["gguf"]),
        test=r["test"].strip(),
        tokens_per_s=rate,
        **{c: r[c].strip() for c in ("machine", "model_as_run", "source", "date", "build", "note")},
    )


def public_rows(text: str | None = None) -> list[PublicRow]:
    """The public llama.cpp rows: the shipped ``llama_cpp_public.csv``, or ``text`` in its columns (:data:`COLUMNS`).

    Examples
    --------
    >>> public_rows("id,gpu,model,gguf,test,t_s,machine,model_as_run,source,date,build,note\\n"
    ...             "x,RTX 4090,Llama-3.1-8B,Q4_K_M,tg128,130,,,notes.txt,,,")
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: llama_cpp_public.csv line 2: source must be the URL the measurement was published at; got 'notes.txt'.
    """
    if text is None:
        text = resources.files("llmcourse.data").joinpath("llama_cpp_public.csv").read_text(encoding="utf-8")
    return [_row(r, k + 2) for k, r in enumerate(csv.DictReader(io.StringIO(text)))]


def from_llama_bench(rows: Sequence[Any]) -> list[PublicRow]:
    """Your own ``llama-bench`` results as :class:`PublicRow` rows, to fit with :func:`fit_llama_cpp`: the
    measurements :func:`~llmcourse.validation.parse_measurements` reads from a llama-bench file (its ``tg N`` and
    ``pp N`` tests from an empty context; a test at a depth is left out).

    Examples
    --------
    >>> from llmcourse.validation import parse_measurements
    >>> got = parse_measurements('[{"model_filename": "Llama-3.1-8B-Q4_K_M.gguf", "n_prompt": 512, "n_gen": 0, '
    ...                          '"avg_ts": 1000.0}]', gpu="M3 Max")
    >>> [(r.gpu, r.gguf, r.test, r.tokens_per_s) for r in from_llama_bench(got.rows)]
    [('M3 Max', 'q4_k_m', 'pp512', 1000.0)]
    """
    out = []
    for m in rows:
        test = _LOAD.match(str(getattr(m, "load", "")))
        if test is None or m.metric not in ("tpot_ms", "ttft_ms"):
            continue
        kind, n = test.group(1), int(test.group(2))
        rate = 1000 / m.value if kind == "tg" else 1000 * n / m.value
        out.append(PublicRow(m.id, m.gpu, m.model, gguf_type(m.weights), f"{kind}{n}", rate, m.gpu, m.model,
                             m.source, "", "", "your own llama-bench run"))  # fmt: skip
    return out


#: The memory llama.cpp keeps on each device (:func:`llmcourse.replica.memory.llama_cpp_reserve_gib`): no fitted
#: kernel values, so :func:`general` keeps them.
MEMORY_FIELDS = ("llama_cpp_fit_margin_gib", "llama_cpp_compute_buffer_gib")


def general(assumptions: Assumptions | str | None = None) -> Assumptions:
    """The assumptions with no llama.cpp kernel values of their own (every ``llama_cpp_*`` field None but the memory
    llama.cpp keeps, :data:`MEMORY_FIELDS`, which are no fitted values): llama.cpp run at the factors fitted
    on the datacenter engines, the course's picture before this fit.

    Examples
    --------
    >>> a = general("course")
    >>> a.llama_cpp_bandwidth_efficiency is None, a.four_bit_bandwidth_factor
    (True, 0.6)
    """
    a = resolve(assumptions)
    none = {
        f.name: None for f in dataclasses.fields(a) if f.name.startswith("llama_cpp_") and f.name not in MEMORY_FIELDS
    }
    return dataclasses.replace(a, **none)


def predicted(row: PublicRow, assumptions: Assumptions | str | None = None) -> float:
    """The tokens per second the package predicts for ``row`` under engine llama.cpp (the assumptions'
    :func:`~llmcourse.assumptions.for_engine`): a ``tg N`` test's decode step of one sequence at an average context of
    N / 2 tokens, a ``pp N`` test's prefill of N tokens.

    Examples
    --------
    >>> r = public_rows()[0]
    >>> round(predicted(r, general("course")), 1), round(predicted(r), 1) > round(predicted(r, general("course")), 1)
    (35.8, True)
    """
    a = for_engine(resolve(assumptions), ENGINE)
    if row.kind == "decode":
        step = decode_step(
            row.model, row.gpu, batch=1, context_tokens=row.tokens / 2, weight_bytes=row.gguf, assumptions=a,
            engine=ENGINE,
        )  # fmt: skip
        return 1 / float(step.step_time.to("s").m)
    return row.tokens / float(
        prefill(row.model, row.gpu, row.tokens, weight_bytes=row.gguf, assumptions=a, engine=ENGINE).time.to("s").m
    )


#: The envelope's assumptions (all of the bandwidth) with half of it for 4-bit weights: what the decode step's own
#: rule (:func:`~llmcourse.replica.step.read_efficiency`) counts as 4-bit reads at under 1.
_HALF_FOR_FOUR_BIT = resolve("envelope").replace(four_bit_bandwidth_factor=0.5)


def _four_bit(row: PublicRow) -> bool:
    """A row whose weights the decode step reads as 4-bit (under 0.75 bytes per weight: Q4_K_M, Q4_0)."""
    return read_efficiency(row.gguf, _HALF_FOR_FOUR_BIT, models[row.model]) < 1


@cache
def _decode_at(row: PublicRow, share: float, overhead_ms: float) -> float:
    """``ln`` of the package's decode tokens per second for ``row`` at one share of the bandwidth (whatever its
    weights) and one fixed time per token, the course's other values as for every engine (:func:`general`)."""
    floor = resolve("course").llama_cpp_layer_floor_us  # held at the course's llama.cpp value: the overhead is fitted
    a = general("course").replace(
        bandwidth_efficiency=share, four_bit_bandwidth_factor=1.0, step_overhead_ms=overhead_ms, layer_floor_us=floor
    )
    return math.log(predicted(row, a))


@cache
def _prefill_at(row: PublicRow, share: float) -> float:
    """``ln`` of the package's prompt tokens per second for ``row`` at one share of the FLOP/s."""
    return math.log(predicted(row, general("course").replace(compute_efficiency=share)))


@dataclass(frozen=True)
class LlamaCppFit:
    """llama.cpp's shares fitted on some rows: decode's share of the bandwidth with 8- and 16-bit weights
    (``bandwidth_efficiency``) and with 4-bit weights (``four_bit_share``), its fixed time per token
    (``step_overhead_ms``), and prompt processing's share of the 16-bit FLOP/s (``compute_efficiency``); the rms of
    ``ln(predicted / measured)`` of each, and the rows fitted."""

    bandwidth_efficiency: float
    four_bit_share: float
    step_overhead_ms: float
    compute_efficiency: float
    decode_rms_log: float
    prefill_rms_log: float
    ids: tuple[str, ...]

    @property
    def four_bit_bandwidth_factor(self) -> float:
        """The 4-bit share as the assumptions hold it: a factor on ``bandwidth_efficiency``."""
        return self.four_bit_share / self.bandwidth_efficiency


def _sse(rows: Sequence[PublicRow], share: float, overhead_ms: float) -> float:
    return sum((_decode_at(r, share, overhead_ms) - math.log(r.tokens_per_s)) ** 2 for r in rows)


def _best_share(rows: Sequence[PublicRow], overhead_ms: float) -> tuple[float, float]:
    """(the share of :data:`SHARES` with the least squared log error on ``rows`` at this overhead, that error); no
    rows: (1.0, 0.0), a share nothing constrains."""
    if not rows:
        return 1.0, 0.0
    return min(((s, _sse(rows, s, overhead_ms)) for s in SHARES), key=lambda x: (x[1], x[0]))


def fit_llama_cpp(rows: Sequence[PublicRow] | None = None) -> LlamaCppFit:
    """llama.cpp's shares fitted on ``rows`` (the public rows by default) by least squares on
    ``ln(predicted / measured)`` over :data:`SHARES` and :data:`OVERHEADS_MS`: the decode rows fix the two bandwidth
    shares and the overhead together (for each overhead the best share of each kind of weights, then the overhead
    with the least error), the prompt rows the compute share.

    Examples
    --------
    >>> f = fit_llama_cpp()
    >>> 0.3 <= f.four_bit_share < f.bandwidth_efficiency <= 1, f.step_overhead_ms in OVERHEADS_MS
    (True, True)
    """
    rows = public_rows() if rows is None else list(rows)
    dec = [r for r in rows if r.kind == "decode"]
    pre = [r for r in rows if r.kind == "prefill"]
    if not dec or not pre:
        raise InputError("fit_llama_cpp needs decode (tg) rows and prompt (pp) rows, at least one of each.")
    four = [r for r in dec if _four_bit(r)]
    other = [r for r in dec if not _four_bit(r)]
    best = None
    for o in OVERHEADS_MS:
        (s16, e16), (s4, e4) = _best_share(other, o), _best_share(four, o)
        if best is None or e16 + e4 < best[0]:
            best = (e16 + e4, s16, s4, o)
    assert best is not None
    err, s16, s4, o = best
    c = min(SHARES, key=lambda s: (sum((_prefill_at(r, s) - math.log(r.tokens_per_s)) ** 2 for r in pre), s))
    pre_err = sum((_prefill_at(r, c) - math.log(r.tokens_per_s)) ** 2 for r in pre)
    return LlamaCppFit(
        bandwidth_efficiency=s16,
        four_bit_share=s4,
        step_overhead_ms=o,
        compute_efficiency=c,
        decode_rms_log=math.sqrt(err / len(dec)),
        prefill_rms_log=math.sqrt(pre_err / len(pre)),
        ids=tuple(r.id for r in rows),
    )


def _ln_predicted(row: PublicRow, f: LlamaCppFit) -> float:
    if row.kind == "prefill":
        return _prefill_at(row, f.compute_efficiency)
    return _decode_at(row, f.four_bit_share if _four_bit(row) else f.bandwidth_efficiency, f.step_overhead_ms)


@dataclass(frozen=True)
class HeldOut:
    """One kind of test (``"decode"`` or ``"prefill"``) held out by machine: the error of every row predicted by the
    fit without its machine (:class:`~llmcourse.validation.fit.ErrorStats`), the median of measured / predicted, the
    80% band (:func:`band_of` the measured / predicted of every row held out by machine: a new machine's spread, not
    that of machines the fit saw), and the share of held-out rows inside the band their own fold draws the same way
    from the other machines' rows, each predicted by a fit without both machines (None with fewer than three
    machines: no band is left to draw)."""

    kind: str
    stats: ErrorStats
    median_ratio: float
    band: tuple[float, float]
    coverage: float | None
    machines: int
    folds: dict[str, LlamaCppFit]
    ratios: dict[str, float]


def band_of(ratios: Sequence[float]) -> tuple[float, float]:
    """The 80% band of ``ratios``: their ``floor(0.1 (n + 1))``-th and ``ceil(0.9 (n + 1))``-th smallest, which hold a
    new ratio like them (exchangeable) with a chance of at least 80% (a split-conformal interval); the 10th and 90th
    percentiles of a few dozen ratios hold one less often (of 24, about 74% of the time). The smallest and largest where
    there are too few ratios for that (under 9).

    Examples
    --------
    >>> band_of(range(1, 25))  # 24 ratios: the 2nd and the 23rd, which leave out 4 of 25 places a new one may take
    (2, 23)
    """
    xs = sorted(ratios)
    n = len(xs)
    lo, hi = max(1, math.floor(0.1 * (n + 1))), min(n, math.ceil(0.9 * (n + 1)))
    return xs[lo - 1], xs[hi - 1]


def held_out(rows: Sequence[PublicRow] | None = None) -> dict[str, HeldOut]:
    """Each machine (catalog GPU) held out in turn: the others' rows fitted (:func:`fit_llama_cpp`), its rows
    predicted; the error by kind of test, the 80% band drawn from those held-out ratios (:func:`band_of`), and its
    coverage: each held-out row against the band its own fold draws from the other machines' rows, each predicted by
    a fit without both machines (a band drawn from rows the fit saw would be too narrow for a machine it has not
    seen). With 12 machines the coverage is itself uncertain: which machines were measured moves it by tens of
    points.

    Examples
    --------
    >>> h = held_out()
    >>> sorted(h), h["decode"].machines >= 6, 0 < h["decode"].stats.within_2x <= 1
    (['decode', 'prefill'], True, True)
    """
    rows = public_rows() if rows is None else list(rows)
    machines = sorted({r.gpu for r in rows})
    if len(machines) < 2:
        raise InputError("held_out needs the rows of at least two machines (each is held out in turn).")
    folds = {g: fit_llama_cpp([r for r in rows if r.gpu != g]) for g in machines}
    # a fold's band: the other machines, each held out from a fit without it and the fold's machine (one fit a pair);
    # with two machines no band is left to draw, and the coverage is not measured
    nested = len(machines) >= 3
    pairs = {}
    for i, g in enumerate(machines if nested else ()):
        for h in machines[i + 1 :]:
            try:
                pairs[frozenset((g, h))] = fit_llama_cpp([r for r in rows if r.gpu not in (g, h)])
            except InputError as exc:
                raise InputError(
                    f"held_out measures the band's coverage on fits without two machines at a time; without {g} and "
                    f"{h}: {exc}"
                ) from exc
    out = {}
    for kind in ("decode", "prefill"):
        mine = [r for r in rows if r.kind == kind]
        ratio = {r.id: math.exp(math.log(r.tokens_per_s) - _ln_predicted(r, folds[r.gpu])) for r in mine}
        fold_band = {
            g: band_of(
                [
                    math.exp(math.log(q.tokens_per_s) - _ln_predicted(q, pairs[frozenset((g, q.gpu))]))
                    for q in mine
                    if q.gpu != g
                ]
            )
            for g in ({r.gpu for r in mine} if nested else ())
        }
        inside = sum(fold_band[r.gpu][0] <= ratio[r.id] <= fold_band[r.gpu][1] for r in mine) if nested else 0
        ids = [r.id for r in mine]
        stats = error_stats([1.0] * len(ids), [ratio[i] for i in ids], ids)
        out[kind] = HeldOut(
            kind=kind,
            stats=stats,
            median_ratio=statistics.median(ratio.values()),
            band=band_of(list(ratio.values())),
            coverage=inside / len(mine) if nested else None,
            machines=len({r.gpu for r in mine}),
            folds=folds,
            ratios=ratio,
        )
    return out


def llama_cpp_band_table(rows: Sequence[PublicRow] | None = None) -> dict[str, Any]:
    """The table ``llmcourse/data/llama_cpp_bands.json`` ships (``scripts/make_llama_cpp_bands.py``): for decode and for
    prompt processing, the 80% band of measured / predicted tokens per second on the public rows (:func:`held_out`:
    each row predicted by the fit without its machine, 4 significant digits), the median held out by machine, the rows and machines, and the share
    of held-out rows inside their own fold's band. What an answer for one person's machine shows
    (:func:`llmcourse.bands.llama_cpp_band`).

    Examples
    --------
    >>> t = llama_cpp_band_table()
    >>> sorted(t["kinds"]), t["kinds"]["decode"]["low"] < 1 < t["kinds"]["decode"]["high"]
    (['decode', 'prefill'], True)
    """
    rows = public_rows() if rows is None else list(rows)
    h = held_out(rows)
    return {
        "method": resolve().name,
        "models": sorted({r.model for r in rows}),
        "weights": sorted({r.gguf for r in rows}),
        "gpus": sorted({r.gpu for r in rows}),
        "about": "80% bands of measured / predicted tokens per second of llama.cpp (llama-bench, one sequence) on the "
        "public rows of llmcourse/data/llama_cpp_public.csv, each predicted by the fit without its machine, written by "
        "scripts/make_llama_cpp_bands.py from llmcourse.validation.llama_cpp.held_out().",
        "kinds": {
            kind: {
                "low": float(f"{x.band[0]:.4g}"),
                "high": float(f"{x.band[1]:.4g}"),
                "median_held_out": float(f"{x.median_ratio:.4g}"),
                "rows": x.stats.n,
                "machines": x.machines,
                "coverage": None if x.coverage is None else float(f"{x.coverage:.4g}"),
            }
            for kind, x in h.items()
        },
    }
