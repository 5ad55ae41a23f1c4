"""Published AMD, Intel and AWS rows, kept aside: how far the course's method lands on accelerators it was not
fitted on.

The course's engine factors were fitted on NVIDIA GPUs (the aiconfigurator rows, TensorRT-LLM's tables). The file
``llmcourse/data/vendor_published.csv`` holds rows the vendors, a cloud and a third party published for AMD Instinct
MI300X (vLLM, SGLang), Intel Gaudi 3 (Intel's Gaudi software) and AWS Trainium2 (the Neuron SDK's NxD Inference),
one row per measurement, each with the address it was read at, and, as a control, the third party's NVIDIA H200
rows of the same harness (:func:`same_harness`).
Every row is a batch that starts together: ``batch`` prompts of ``isl`` tokens, each answered with ``osl`` tokens (a
latency benchmark's static batch, or a throughput benchmark that sends its prompts at once with the engine's cap on
running sequences at least their number). Its measurement is the output tokens per second of the run, or the seconds
the whole batch took.

:func:`predicted` gives the course's output tokens per second for a row from the one replica model
(:func:`~llmcourse.replica.model.replica`): the largest batch up to the row's that fits (the rest run in a later
wave), its prompts prefilled together, then ``osl`` decode steps at the average context (formula
``cycle_throughput``). It never reads the measured value. :func:`vendor_held_out` compares the two per vendor, and
holds each group of rows out in turn (:func:`held_out_factor`): a vendor factor (the median measured / predicted of
the vendor's other groups) is fitted without the group and applied to it, with the 80% band of the other groups'
ratios and its coverage of the held-out rows. :func:`same_harness` sets each MI300X row beside the H200 row of the
same harness, model, engine, lengths and batch: what the course misses on both cancels, and what is left is the
GPU's own. Nothing here changes the course's assumptions.

Examples
--------
>>> rows = vendor_rows()
>>> sorted({r.vendor for r in rows}), all(r.source.startswith("https://") for r in rows)
(['AMD', 'AWS', 'Intel', 'NVIDIA'], True)
>>> r = rows[0]
>>> r.gpu, r.model, r.batch, r.metric
('MI300X', 'Llama-3.1-70B', 3200, 'output_tokens_per_s')
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.bands import BAND_PERCENTILES
from llmcourse.catalog import gpus, models
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.formulas import FORMULAS
from llmcourse.replica.memory import weight_bytes
from llmcourse.replica.model import replica
from llmcourse.replica.scheduler import engine_name, scheduler_of
from llmcourse.stats import percentile
from llmcourse.validation.fit import ErrorStats, error_stats

__all__ = [
    "COLUMNS",
    "VENDOR_METRICS",
    "HeldOutFactor",
    "VendorHeldOut",
    "VendorRow",
    "held_out_factor",
    "predicted",
    "same_harness",
    "vendor_factor_table",
    "vendor_held_out",
    "vendor_rows",
]

#: The file's columns: the run (``gpu``, ``model`` as the catalog names them, ``n_gpus`` of which ``tp`` in tensor
#: parallel, precisions, engine as published, prompt and answer tokens, ``batch``), the measurement (``metric``,
#: ``value``), and where it comes from (``source``: a URL; ``as_of``: the date or release; ``model_as_run``: the
#: checkpoint the source named; ``note``: what the row assumes).
COLUMNS = (
    "id", "vendor", "gpu", "n_gpus", "tp", "model", "weights", "kv", "engine", "isl", "osl", "batch", "metric",
    "value", "source", "as_of", "model_as_run", "note",
)  # fmt: skip

#: What a row measures: the run's output tokens per second, or the seconds its whole batch took.
VENDOR_METRICS = ("output_tokens_per_s", "batch_latency_s")

#: The vendors a row may name (no row of Google's TPUs was read yet).
_VENDORS = ("AMD", "AWS", "Google", "Intel", "NVIDIA")
_FILE = "vendor_published.csv"


@dataclass(frozen=True)
class VendorRow:
    """One published measurement on an AMD, Intel or AWS accelerator, or an NVIDIA control of the same harness (a row of
    ``vendor_published.csv``)."""

    id: str
    vendor: str
    gpu: str
    n_gpus: int
    tp: int
    model: str
    weights: str
    kv: str
    engine: str
    isl: int
    osl: int
    batch: int
    metric: str
    value: float
    source: str
    as_of: str
    model_as_run: str
    note: str

    @property
    def tokens_per_s(self) -> float:
        """The measured output tokens per second (a batch's seconds turned into its ``batch x osl`` tokens' rate)."""
        if self.metric == "batch_latency_s":
            return self.batch * self.osl / self.value
        return self.value

    @property
    def group(self) -> str:
        """The group held out together: the same source, model, GPU count and engine."""
        engine = self.engine.split(" ")[0]
        return f"{self.vendor} {self.model} on {self.n_gpus} {self.gpu}, {engine} ({self.source.split('/')[2]})"


def _whole(r: dict[str, str], name: str, where: str) -> int:
    text = r[name].strip()
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"{where}: {name} must be a whole number of at least 1; got {r[name]!r}.")
    return int(text)


def _row(r: dict[str, str], line: int) -> VendorRow:
    """One CSV record as a :class:`VendorRow`, every field checked (a bad one refused, naming the line and field)."""
    where = f"{_FILE} line {line}"
    missing = [c for c in COLUMNS if r.get(c) is None]
    if missing:
        raise InputError(f"{where}: no column {missing[0]!r}; the file's columns are {', '.join(COLUMNS)}.")
    if not r["id"].strip():
        raise InputError(f"{where}: id is empty; give each row an id of its own.")
    if r["vendor"].strip() not in _VENDORS:
        raise InputError(f"{where}: vendor must be one of {', '.join(_VENDORS)}; got {r['vendor']!r}.")
    if not r["source"].strip().startswith("https://"):
        raise InputError(f"{where}: source must be the URL the measurement was published at; got {r['source']!r}.")
    if r["metric"].strip() not in VENDOR_METRICS:
        raise InputError(f"{where}: metric must be one of {', '.join(VENDOR_METRICS)}; got {r['metric']!r}.")
    try:
        value = float(r["value"])
    except ValueError:
        raise InputError(f"{where}: value must be a number; got {r['value']!r}.") from None
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"{where}: value must be above 0; got {r['value']!r}.")
    n_gpus, tp = _whole(r, "n_gpus", where), _whole(r, "tp", where)
    if n_gpus != tp:
        raise InputError(f"{where}: n_gpus ({n_gpus}) must equal tp ({tp}): one replica in tensor parallel per row.")
    try:
        gpu, model = gpus[r["gpu"].strip()].name, models[r["model"].strip()].name
        for name in ("weights", "kv"):
            weight_bytes(model, r[name].strip())
    except (InputError, UnknownNameError) as e:
        raise InputError(f"{where}: {e}") from None
    return VendorRow(
        id=r["id"].strip(), vendor=r["vendor"].strip(), gpu=gpu, n_gpus=n_gpus, tp=tp, model=model,
        weights=r["weights"].strip(), kv=r["kv"].strip(), engine=r["engine"].strip(), isl=_whole(r, "isl", where),
        osl=_whole(r, "osl", where), batch=_whole(r, "batch", where), metric=r["metric"].strip(), value=value,
        **{c: r[c].strip() for c in ("source", "as_of", "model_as_run", "note")},
    )  # fmt: skip


def vendor_rows(text: str | None = None) -> list[VendorRow]:
    """The published AMD, Intel and AWS rows: the shipped ``vendor_published.csv``, or ``text`` in its columns
    (:data:`COLUMNS`). A bad row is refused with the line and the field to change; so is an id used twice.

    Examples
    --------
    >>> head = ",".join(COLUMNS) + "\\n"
    >>> vendor_rows(head + "a,AMD,MI300X,8,8,Llama-3.1-70B,fp8,fp8,vLLM,128,128,4,tokens,10,https://x,,,")
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: vendor_published.csv line 2: metric must be one of output_tokens_per_s, batch_latency_s; got 'tokens'.
    """
    if text is None:
        text = resources.files("llmcourse.data").joinpath(_FILE).read_text(encoding="utf-8")
    rows, seen = [], {}
    for k, r in enumerate(csv.DictReader(io.StringIO(text))):
        row = _row(r, k + 2)
        if row.id in seen:
            raise InputError(f"{_FILE} line {k + 2}: id {row.id!r} is already the id of line {seen[row.id]}.")
        seen[row.id] = k + 2
        rows.append(row)
    return rows


def predicted(row: VendorRow, assumptions: Assumptions | str | None = None) -> float:
    """The output tokens per second the course's method predicts for ``row`` (never reading its value): the replica
    of the row's GPUs, precisions and lengths runs the largest batch up to ``row.batch`` that fits, prefills its
    prompts together and decodes ``osl`` steps (formula ``cycle_throughput``). Refused (``InputError``) when one
    request alone does not fit.

    Examples
    --------
    >>> r = next(r for r in vendor_rows() if r.model == "Llama-3.1-8B" and r.isl == r.osl == 2048)
    >>> r.gpu, r.batch, predicted(r) > 0
    ('Gaudi 3', 364, True)
    """
    try:
        engine = engine_name(row.engine.split(" ")[0])
    except (InputError, UnknownNameError):  # an engine the scheduler does not know (Intel's, AWS's): the default's
        engine = None
    # the run capped its running requests at its batch; vLLM starts only with a step budget at least that cap
    default = scheduler_of(engine, row.gpu)
    budget = row.batch if default.engine == "vLLM" and row.batch > default.token_budget else None
    rep = replica(
        row.model, row.gpu, tensor_parallel=row.tp, prompt_tokens=row.isl, answer_tokens=row.osl,
        weight_bytes=row.weights, kv_bytes=row.kv, engine=engine, max_running=row.batch, max_batched_tokens=budget,
        assumptions=resolve(assumptions),
    )  # fmt: skip
    if not rep.fits or rep.step is None or rep.batch_prefill is None:
        raise InputError(f"row {row.id}: {rep.reason}")
    x = FORMULAS["cycle_throughput"](
        batch=rep.batch, answer_tokens=row.osl, step_time=rep.step.step_time, prefill_time=rep.batch_prefill.time
    )
    return float(x.m_as("1/s"))


@dataclass(frozen=True)
class HeldOutFactor:
    """Each group held out in turn: the factor fitted without it (``factors``, the median measured / predicted of the
    other groups' rows), its rows' error once divided by that factor (``stats``), and the share of its rows inside
    the 80% band drawn from the other groups' ratios (``coverage``)."""

    stats: ErrorStats
    factors: dict[str, float]
    coverage: float
    ratios: dict[str, float]


def held_out_factor(ratios: Sequence[float], groups: Sequence[str], ids: Sequence[str]) -> HeldOutFactor:
    """Hold each group out in turn: its factor is the median of the other groups' ``ratios`` (measured / predicted),
    its rows' ratios are divided by it, and its rows are checked against the other groups' 10th to 90th percentile
    of ratio (divided by the same factor).

    Examples
    --------
    >>> h = held_out_factor([2.0, 2.0, 4.0, 4.0], ["a", "a", "b", "b"], ["1", "2", "3", "4"])
    >>> h.factors, round(h.stats.median_factor, 3), h.coverage
    ({'a': 4.0, 'b': 2.0}, 2.0, 0.0)
    """
    if not (len(ratios) == len(groups) == len(ids)) or len(set(groups)) < 2:
        raise InputError("held_out_factor needs one ratio, group and id per row, and at least two groups.")
    if any(not (math.isfinite(r) and r > 0) for r in ratios):
        raise InputError("held_out_factor needs ratios (measured / predicted) that are finite and above 0.")
    factors, out, inside = {}, {}, 0
    for g in dict.fromkeys(groups):
        others = [r for r, h in zip(ratios, groups, strict=True) if h != g]
        k = math.exp(statistics.median(math.log(r) for r in others))
        factors[g] = k
        lo, hi = percentile(others, 10) / k, percentile(others, 90) / k
        for r, h, i in zip(ratios, groups, ids, strict=True):
            if h == g:
                out[i] = r / k
                inside += lo <= r / k <= hi
    stats = error_stats([1.0] * len(ids), [out[i] for i in ids], list(ids))
    return HeldOutFactor(stats=stats, factors=factors, coverage=inside / len(ids), ratios=out)


@dataclass(frozen=True)
class VendorHeldOut:
    """One vendor's rows: the course's method as it stands (``raw``, and the median measured / predicted
    ``median_ratio``: below 1, the estimate is too fast; ``ratios``, measured / predicted output tokens per second by
    row id), and each group held out with a vendor factor fitted on the others (``held``)."""

    vendor: str
    gpus: tuple[str, ...]
    groups: int
    raw: ErrorStats
    median_ratio: float
    held: HeldOutFactor
    not_predicted: dict[str, str]
    ratios: dict[str, float]
    #: the least and the most of the predicted rows' batches (empty when none was predicted)
    batches: tuple[int, ...] = ()


def vendor_held_out(
    rows: Sequence[VendorRow] | None = None, assumptions: Assumptions | str | None = None
) -> dict[str, VendorHeldOut]:
    """Per vendor, how far the course's method lands on its published rows, and held out group by group
    (:attr:`VendorRow.group`) with a vendor factor (:func:`held_out_factor`). A row the replica model refuses is
    listed in ``not_predicted`` with the reason, not counted.

    Examples
    --------
    >>> h = vendor_held_out()
    >>> sorted(h), h["Intel"].gpus, h["AMD"].groups >= 2
    (['AMD', 'AWS', 'Intel', 'NVIDIA'], ('Gaudi 3',), True)
    """
    rows = vendor_rows() if rows is None else list(rows)
    out = {}
    for vendor in dict.fromkeys(r.vendor for r in rows):
        mine, refused, ratio = [r for r in rows if r.vendor == vendor], {}, {}
        for r in mine:
            try:
                ratio[r.id] = r.tokens_per_s / predicted(r, assumptions)
            except InputError as e:
                refused[r.id] = str(e)
        kept = [r for r in mine if r.id in ratio]
        ids = [r.id for r in kept]
        out[vendor] = VendorHeldOut(
            vendor=vendor,
            gpus=tuple(dict.fromkeys(r.gpu for r in kept)),
            groups=len({r.group for r in kept}),
            raw=error_stats([1.0] * len(ids), [ratio[i] for i in ids], ids),
            median_ratio=statistics.median(ratio.values()),
            held=held_out_factor([ratio[i] for i in ids], [r.group for r in kept], ids),
            not_predicted=refused,
            ratios=ratio,
            batches=(min(r.batch for r in kept), max(r.batch for r in kept)) if kept else (),
        )
    return out


def same_harness(
    held: dict[str, VendorHeldOut] | None = None,
    rows: Sequence[VendorRow] | None = None,
    gpu: str = "MI300X",
    control: str = "H200 SXM",
) -> list[tuple[str, str, float]]:
    """Each ``gpu`` row beside the ``control`` row of the same source, model, engine, GPU count, lengths and batch:
    (the row's id, the control's id, its measured / predicted over the control's). The course's misses that both
    share (the model, the harness, the engine) cancel in the quotient; what is left is the GPU's own.

    Examples
    --------
    >>> pairs = same_harness()
    >>> len(pairs) >= 8, all(a.startswith("dstack-amd") and b.startswith("dstack-nv") for a, b, _ in pairs)
    (True, True)
    """
    rows = vendor_rows() if rows is None else list(rows)
    held = vendor_held_out(rows) if held is None else held
    ratio = {i: r for h in held.values() for i, r in h.ratios.items()}

    def key(r: VendorRow) -> tuple:
        return (r.source, r.model, r.engine, r.n_gpus, r.isl, r.osl, r.batch, r.metric)

    controls = {key(r): r.id for r in rows if r.gpu == control and r.id in ratio}
    return [
        (r.id, controls[key(r)], ratio[r.id] / ratio[controls[key(r)]])
        for r in rows
        if r.gpu == gpu and r.id in ratio and key(r) in controls
    ]


def _sig4(x: float) -> float:
    return float(f"{x:.4g}")


def vendor_factor_table(held: dict[str, VendorHeldOut] | None = None) -> dict:
    """The vendor factors that ``llmcourse/data/vendor_factors.json`` holds (``scripts/make_vendor_factors.py``
    writes it; a test checks the shipped file equals it), from :func:`vendor_held_out` under the course's method.

    One decision, for every vendor but NVIDIA (whose answers carry the bands of the NVIDIA rows): the factor is the
    median measured / predicted output tokens per second of all the vendor's published rows (the geometric median,
    as :func:`held_out_factor` fits it fold by fold), its 80% band the 10th to 90th percentile of those ratios, and
    its error is the one measured held out by group (``held_out``: each group's rows divided by the factor of the
    other groups; ``coverage``: the share of a group's rows inside the other groups' band). The rows are
    throughput runs, so the factor is one of output tokens per second (a time per token is divided by it); the
    rows measure no time to first token. Also the least and most of the ratios and the batches the rows ran at
    (what an answer says where the rows are too few for a factor: :data:`~llmcourse.bands.MIN_VENDOR_GROUPS`).
    Each row counts once (the bands of the NVIDIA rows count each setup once): a vendor's groups are a handful of
    harnesses, too few for a percentile over groups. 4 significant digits.

    Examples
    --------
    >>> t = vendor_factor_table()
    >>> sorted(t["vendors"]), t["metric"], t["vendors"]["Intel"]["gpus"]
    (['AMD', 'AWS', 'Intel'], 'output_tokens_per_s', ['Gaudi 3'])
    >>> a = t["vendors"]["AMD"]
    >>> a["low"] <= a["median"] <= a["high"], a["n"] == len(vendor_held_out()["AMD"].ratios)
    (True, True)
    """
    held = vendor_held_out() if held is None else held
    out = {}
    for vendor, h in held.items():
        if vendor == "NVIDIA":  # the control rows of the DeepSeek-R1 harness, not a factor of NVIDIA's answers
            continue
        ratios = list(h.ratios.values())
        fs = h.held.factors.values()
        out[vendor] = {
            "gpus": list(h.gpus),
            "n": len(ratios),
            "groups": h.groups,
            "batches": list(h.batches),
            "median": _sig4(math.exp(statistics.median(math.log(r) for r in ratios))),
            "least": _sig4(min(ratios)),
            "most": _sig4(max(ratios)),
            "low": _sig4(percentile(ratios, BAND_PERCENTILES[0])),
            "high": _sig4(percentile(ratios, BAND_PERCENTILES[1])),
            "held_out": {
                "median_factor": _sig4(h.held.stats.median_factor),
                "within_2x": _sig4(h.held.stats.within_2x),
                "coverage": _sig4(h.held.coverage),
                "factors": [_sig4(min(fs)), _sig4(max(fs))],
            },
        }
    return {
        "about": f"vendor factors (median measured / predicted output tokens per second) and their 80% bands, "
        f"from the published rows of llmcourse/data/{_FILE}, written by scripts/make_vendor_factors.py from "
        "llmcourse.validation.vendors.vendor_factor_table(); a test checks this file against it.",
        "method": resolve(None).name,
        "metric": "output_tokens_per_s",
        "percentiles": list(BAND_PERCENTILES),
        "vendors": out,
    }
