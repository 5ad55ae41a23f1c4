"""The measured rows: the published tables shipped with the package, and the readers of measured files.

* :func:`measurements` - the rows of ``llmcourse/data/measurements.csv``, each with its source.
* :func:`load_measurements`, :func:`parse_measurements` - a measured file, or text, in any of :data:`FORMATS` (the
  course's CSV, aiconfigurator's silicon CSV, the JSON of ``vllm bench serve``): the rows the course can express
  and, row by row, why not the others (:class:`Loaded`, :class:`Skipped`); :func:`silicon` - the aiconfigurator
  rows shipped with the package; :func:`course_csv` writes rows back in the course's format.
* a file is read within the bounds of :mod:`~llmcourse.validation.bounded`, and each cell by the readers of
  :mod:`~llmcourse.validation.cells` (which also say how a file's text is shown, and check the keywords that fill
  what a file does not say).
* :func:`layout_gap` - whether the one replica model can express a row's parallel layout yet.
* the aiconfigurator cell readers (:func:`aic_weights`, :func:`aic_kv`, :func:`first_of`) raise
  :class:`~llmcourse.validation.cells.RowError` with the reason a row cannot be expressed. The disaggregated rows of :func:`llmcourse.validation.disagg.measured_rows` are read by
  the same ones, from the one reader of the shipped aiconfigurator file (:func:`aiconfigurator_records`,
  :func:`silicon_concurrency`).

The data file keeps every column of the published table (``id``, ``source``, ``gpu``, ``n_gpus``,
``tp``, ``model``, ``weights``, ``kv``, ``engine``, ``isl``, ``osl``, ``load``, ``metric``, ``value``,
``unit``, ``notes``) with each source written out in full, and adds ``load_kind``
(``offline_max``; ``online_unbounded`` for "QPS INF"; ``online_rate`` for a fixed rate) and
``request_rate_per_s``. Rows T25 and T26 are the times to first token given in the notes of
T17 and T19 (same runs). GPU and model names resolve in the catalog ("H200", "Mistral-7B" and
"Llama-3.3-70B" are aliases).

Examples
--------
>>> rows = measurements()
>>> len(rows), rows[0].id, rows[0].model
(26, 'T1', 'Llama-3.1-8B')
"""

from __future__ import annotations

import csv
import functools
import inspect
import io
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from llmcourse.bands import METRICS
from llmcourse.catalog import models
from llmcourse.errors import InputError
from llmcourse.replica.model import replica
from llmcourse.validation import bounded
from llmcourse.validation.aic_layouts import (
    MIXED_CHUNK_NOTE,
    NAMED_LAYOUT,
    aic_layout,
    generator_mixed_chunk,
    named_layout,
    unsquared,
)
from llmcourse.validation.bench_exports import (
    is_aiperf,
    is_aiperf_csv,
    is_guidellm,
    read_aiperf,
    read_aiperf_csv,
    read_guidellm,
)
from llmcourse.validation.bounded import BoundedRows, BoundedText, json_records, open_text
from llmcourse.validation.cells import (
    ID_SHOWN,
    MOST_WHOLE,
    RowError,
    cell,
    check_given,
    context_gap,
    engine_name,
    escaped,
    gpu_name,
    model_name,
    number,
    one_line,
    precision_name,
    shortened,
    shown,
    whole,
)
from llmcourse.validation.copies import RELAYOUT_REASON, REPEAT_REASON, Copies, decimals, first_of, kept_once
from llmcourse.validation.llama_bench import LLAMA_BENCH_KEYS, is_llama_bench, read_llama_bench
from llmcourse.validation.twins import SILICON_CONCURRENCY, TWIN_REASON, disaggregated_twins

#: How a row loaded the replica: the largest batch (offline, or online with no rate limit), a fixed
#: request rate, or a closed loop of ``concurrency`` requests in flight (a benchmark's concurrency).
LOAD_KINDS = ("offline_max", "online_unbounded", "online_rate", "concurrency")


@dataclass(frozen=True)
class Measurement:
    """One published measurement (a row of ``measurements.csv``)."""

    id: str
    source: str
    gpu: str
    n_gpus: int
    tp: int
    model: str
    weights: str
    kv: str
    engine: str
    isl: int
    osl: int
    load: str
    load_kind: str
    metric: str
    value: float
    unit: str
    notes: str = ""
    concurrency: int | None = None
    pp: int = 1
    attention_dp: int = 1
    ep: int = 1
    #: Whether the run mixed prompt chunks into its decode steps, where the row's source suggests its launcher set that
    #: (an inference: :func:`~llmcourse.validation.aic_layouts.generator_mixed_chunk`); None: the engine's default
    mixed_prefill: bool | None = None

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise InputError(f"row {self.id}: metric {self.metric!r} unknown; use one of {', '.join(METRICS)}.")
        if self.load_kind not in LOAD_KINDS:
            raise InputError(
                f"row {self.id}: load_kind {self.load_kind!r} unknown; use one of {', '.join(LOAD_KINDS)}."
            )
        for name in ("tp", "pp", "attention_dp", "ep"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"row {self.id}: {name} must be a whole number of at least 1; got {v!r}.")
        if self.n_gpus != self.tp * self.pp * self.attention_dp:
            raise InputError(
                f"row {self.id}: n_gpus ({self.n_gpus}) must equal tp x pp x attention_dp "
                f"({self.tp} x {self.pp} x {self.attention_dp}) (one replica per row)."
            )
        if self.load_kind == "concurrency":
            c = self.concurrency
            if isinstance(c, bool) or not isinstance(c, int) or c < 1:
                raise InputError(
                    f"row {self.id}: a closed-loop row needs a concurrency of at least 1 request in flight; got {c!r}."
                )


def measurements() -> list[Measurement]:
    """The published measurements shipped with the package, in file order."""
    text = resources.files("llmcourse.data").joinpath("measurements.csv").read_text(encoding="utf-8")
    out = []
    for r in csv.DictReader(text.splitlines()):
        out.append(
            Measurement(
                id=r["id"],
                source=r["source"],
                gpu=r["gpu"],
                n_gpus=int(r["n_gpus"]),
                tp=int(r["tp"]),
                model=r["model"],
                weights=r["weights"],
                kv=r["kv"],
                engine=r["engine"],
                isl=int(r["isl"]),
                osl=int(r["osl"]),
                load=r["load"],
                load_kind=r["load_kind"],
                metric=r["metric"],
                value=float(r["value"]),
                unit=r["unit"],
                notes=r["notes"],
            )
        )
    return out


# --- parallel layouts beyond tensor parallelism -------------------------------------------------
#: The keyword of :func:`llmcourse.replica.model.replica` each parallel layout of a row needs.
LAYOUT_KEYWORDS = {"pp": "pipeline_parallel", "ep": "expert_parallel", "attention_dp": "data_parallel"}


#: The layouts predictions pass to :func:`~llmcourse.replica.model.replica` (the others' rows are skipped
#: with :data:`LAYOUT_REASON`); switch one on here once ``replica()`` has its keyword.
ENABLED_LAYOUTS: frozenset[str] = frozenset({"pp", "ep", "attention_dp"})


LAYOUT_REASON = "needs pipeline/expert/attention-data parallelism"


@functools.cache
def _replica_keywords() -> frozenset[str]:
    return frozenset(inspect.signature(replica).parameters)  # read once: inspect is slow, the signature fixed


def layout_gap(row: Measurement) -> str | None:
    """Why the one replica model cannot express a row's parallel layout yet (``None`` if it can): a
    pipeline, expert or attention-data parallel size above 1 whose layout is not switched on in
    :data:`ENABLED_LAYOUTS`, or whose keyword :func:`~llmcourse.replica.model.replica` lacks.

    Examples
    --------
    >>> import dataclasses
    >>> r = measurements()[0]
    >>> layout_gap(r) is None, layout_gap(dataclasses.replace(r, ep=8))
    (True, None)
    """
    need = [k for k in LAYOUT_KEYWORDS if getattr(row, k) > 1]
    have = _replica_keywords()
    missing = [k for k in need if k not in ENABLED_LAYOUTS or LAYOUT_KEYWORDS[k] not in have]
    if not missing:
        return None
    return f"{LAYOUT_REASON} ({', '.join(f'{k}={getattr(row, k)}' for k in need)})"


def layout_keywords(row: Measurement) -> dict[str, int]:
    """The keywords of :func:`~llmcourse.replica.model.replica` for a row's enabled layouts beyond tensor parallelism;
    with several attention groups the row's expert-parallel degree even at 1 (its experts split tensor-parallel over
    every GPU, as the row says: :func:`~llmcourse.replica.parallel.layout` would otherwise spread them whole).

    Examples
    --------
    >>> import dataclasses
    >>> r = dataclasses.replace(measurements()[0], model="DeepSeek-V3", tp=1, attention_dp=36, n_gpus=36)
    >>> layout_keywords(r)
    {'data_parallel': 36, 'expert_parallel': 1}
    """
    out = {LAYOUT_KEYWORDS[k]: getattr(row, k) for k in sorted(ENABLED_LAYOUTS) if getattr(row, k) > 1}
    if row.attention_dp > 1 and "ep" in ENABLED_LAYOUTS:
        out[LAYOUT_KEYWORDS["ep"]] = row.ep
    return out


# --- reading measured files -----------------------------------------------------------------------
#: The formats :func:`load_measurements` reads, for its messages.
FORMATS = {
    "course": "the course's CSV (the columns of llmcourse/data/measurements.csv: id, gpu, tp, model, weights, kv, "
    "engine, isl, osl, load_kind, metric, value; and concurrency, pp, attention_dp, ep for a closed loop)",
    "aiconfigurator": "aiconfigurator's silicon CSV (model_path, system, backend, isl, osl, tp_size, ..., "
    "silicon_ttft_ms, silicon_tpot_ms)",
    "vllm": "the JSON of `vllm bench serve --save-result` (one result, a list of them, or one per line)",
    "llama-bench": "llama.cpp's `llama-bench -o json` / `-o jsonl` / `-o csv` (model_filename, n_prompt, n_gen, avg_ts)",
    "aiperf": "AIPerf's or GenAI-Perf's profile_export_*.json (time_to_first_token, inter_token_latency, input_config)",
    "aiperf-csv": "AIPerf's or GenAI-Perf's profile_export_*.csv (Metric,avg,...; give --model, --gpu, --concurrency)",
    "guidellm": "GuideLLM's benchmarks JSON (benchmarks with their strategy and metrics)",
}


DISAGGREGATED_REASON = (
    "disaggregated: separate prefill and decode pools, predicted by llmcourse.planner.disagg (chapter Disaggregated serving) "
    "where the row gives both pools' workers and batches"
)


_COURSE_REQUIRED = ("id", "gpu", "tp", "model", "weights", "kv", "engine", "isl", "osl", "load_kind", "metric", "value")


_AIC_REQUIRED = (
    "id", "backend", "model_path", "system", "mode", "isl", "osl", "tp_size", "pp_size", "attention_dp_size",
    "moe_ep_size", "silicon_ttft_ms", "silicon_tpot_ms",
)  # fmt: skip


@dataclass(frozen=True)
class Skipped:
    """A row of a measured file that the course cannot express, with where it is and why."""

    line: int
    id: str
    reason: str

    def __str__(self) -> str:
        """The row, its id and the reason on one line, the file's text escaped, its line breaks too (:func:`one_line`)."""
        return one_line(
            f"row {self.line}" + (f" ({shortened(self.id, ID_SHOWN)})" if self.id else "") + f": {self.reason}"
        )


@dataclass(frozen=True)
class Loaded:
    """What :func:`load_measurements` read: the rows it can express and, separately, those it cannot."""

    format: str
    rows: tuple[Measurement, ...]
    skipped: tuple[Skipped, ...]
    source: str = ""
    #: Where reading stopped short of the end of the file, the line saying so (:data:`MAX_ROWS`, :data:`MAX_BYTES`).
    stopped: str = ""

    def reasons(self) -> dict[str, int]:
        """How many rows were skipped for each reason (the text before any parenthesis or colon detail)."""
        out: dict[str, int] = {}
        for sk in self.skipped:
            key = sk.reason.split(" (")[0] if sk.reason.startswith(LAYOUT_REASON) else sk.reason
            if sk.reason.startswith(REPEAT_REASON.split(" row ")[0]):
                key = REPEAT_REASON.replace("row {line} ({id})", "an earlier row")
            if sk.reason.startswith(RELAYOUT_REASON.split(" row ")[0]):
                key = RELAYOUT_REASON.split(" row ")[0] + " an earlier row under another layout: one run, kept once"
            if sk.reason.startswith(TWIN_REASON.split(",")[0]):
                key = TWIN_KEY
            out[key] = out.get(key, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def report(self) -> str:
        """One line per skipped row, after a count of what was read."""
        head = f"{self.source or 'input'} ({FORMATS[self.format].split(' (')[0]}): {len(self.rows)} measurements read"
        lines = [escaped(head) + f", {len(self.skipped)} rows skipped", *map(str, self.skipped)]
        return "\n".join(lines + ([escaped(self.stopped)] if self.stopped else []))


def _read_course(
    records: Iterable[dict[str, str]], model_: str | None = None
) -> tuple[list[Measurement], list[Skipped]]:
    """The course's CSV; ``model_`` (a catalog name) in place of each row's model."""
    rows, skipped = [], []
    for k, r in enumerate(records):
        line, rid = k + 2, (r.get("id") or "").strip()
        try:
            for col in _COURSE_REQUIRED:
                if not (col == "model" and model_):
                    cell(r, col)
            metric, kind = cell(r, "metric"), cell(r, "load_kind")
            if metric not in METRICS:
                raise RowError(f"metric {metric!r} unknown; use one of {', '.join(METRICS)}")
            if kind not in LOAD_KINDS:
                raise RowError(f"load_kind {kind!r} unknown; use one of {', '.join(LOAD_KINDS)}")
            model, gpu = model_ or model_name(cell(r, "model")), gpu_name(cell(r, "gpu"))
            tp, pp = whole(r, "tp"), whole(r, "pp", 1)
            dp, ep = whole(r, "attention_dp", 1), whole(r, "ep", 1)
            isl, osl = whole(r, "isl"), whole(r, "osl")
            context_gap(model, isl, osl)
            conc = whole(r, "concurrency") if kind == "concurrency" else None
            m = Measurement(
                id=rid,
                source=(r.get("source") or "").strip(),
                gpu=gpu,
                n_gpus=whole(r, "n_gpus", tp * pp * dp),
                tp=tp,
                model=model,
                weights=precision_name(cell(r, "weights"), "weights"),
                kv=precision_name(cell(r, "kv"), "kv"),
                engine=cell(r, "engine"),
                isl=isl,
                osl=osl,
                load=(r.get("load") or "").strip(),
                load_kind=kind,
                metric=metric,
                value=number(r, "value"),
                unit=(r.get("unit") or "").strip() or METRICS[metric],
                notes=(r.get("notes") or "").strip(),
                concurrency=conc,
                pp=pp,
                attention_dp=dp,
                ep=ep,
            )
            gap = layout_gap(m)
            if gap is not None:
                raise RowError(gap)
            rows.append(m)
        except (RowError, InputError) as exc:
            skipped.append(Skipped(line, rid, str(exc).removeprefix(f"row {rid}: ")))
    return rows, skipped


def silicon_concurrency(record: dict[str, Any]) -> int | None:
    """The requests in flight an aiconfigurator row was measured at: the ``silicon_concurrency=N`` of its
    ``silicon_data_source`` (None where that does not say it; the readers then take the batch).

    Examples
    --------
    >>> silicon_concurrency({"silicon_data_source": "... silicon_concurrency=64"}), silicon_concurrency({})
    (64, None)
    """
    found = SILICON_CONCURRENCY.search(record.get("silicon_data_source") or "")
    return int(found.group(1)) if found else None


def aic_weights(r: dict[str, str], model: str) -> tuple[str, str]:
    """(weights, note) of an aiconfigurator row: the GEMM quantization (the experts' for a MoE model,
    whose weights are mostly experts), else the precision column, else the checkpoint's own."""
    moe = models[model].is_moe
    for col in ("moe_quant_mode", "gemm_quant_mode") if moe else ("gemm_quant_mode",):
        if (r.get(col) or "").strip():
            return precision_name(r[col], col), ""
    if (r.get("precision") or "").strip():
        return precision_name(r["precision"], "precision"), ""
    own = models[model].weight_dtype
    return own, f"precision not given: the checkpoint's own ({own})"


def aic_kv(engine_key: str, weights: str) -> str:
    """The KV-cache precision the course assumes for an aiconfigurator row (the file does not give one):
    FP8 where TensorRT-LLM runs FP8 or FP4 weights, else BF16.
    ``engine_key`` is the row's ``backend`` in lower case. Shared by the aggregated rows here and the
    disaggregated rows of :func:`llmcourse.validation.disagg.measured_rows`."""
    return "fp8" if engine_key == "trtllm" and weights in ("fp8", "fp4") else "bf16"


#: :data:`~llmcourse.validation.twins.TWIN_REASON` as :meth:`Loaded.reasons` counts it (its row and evidence dropped).
TWIN_KEY = (
    "a disaggregated run written as aggregated: a disaggregated row has its setup and both pools its parallel columns, "
    "and the two times agree within 10%, or its tp_size divides none of the model's attention heads"
)


def _heads_of(model: str | None) -> int | None:
    """The attention heads of a row's model (a catalog name, or the file's ``model_path``), None where it is unknown."""
    try:
        return models[model_name(model or "")].heads
    except RowError:
        return None


def _read_aiconfigurator(
    records: Iterable[dict[str, str]], kv: str | None, model_: str | None = None
) -> tuple[list[Measurement], list[Skipped]]:
    """aiconfigurator's silicon CSV; ``kv`` the KV-cache precision of every row (else :func:`aic_kv`), ``model_`` (a
    catalog name) in place of each row's ``model_path``."""
    rows, skipped = [], []
    seen = Copies()  # a row's setup and times -> the first row that had them
    # a run's times -> its copies (GPUs, line, id, rows) that are not repeats of one setup: one run under two layouts
    runs = Copies()
    records = list(records)
    twins = disaggregated_twins(records, heads=lambda r: _heads_of(model_ or r.get("model_path")))
    for k, r in enumerate(records):
        line, rid = k + 2, (r.get("id") or "").strip()
        try:
            for col in _AIC_REQUIRED:
                if col not in r and not (col == "model_path" and model_):
                    raise RowError(f"missing column {col!r}")
            if cell(r, "mode") == "disagg":
                raise RowError(DISAGGREGATED_REASON)
            if k in twins:
                raise RowError(twins[k])
            model, gpu = model_ or model_name(cell(r, "model_path")), gpu_name(cell(r, "system"))
            isl, osl = whole(r, "isl"), whole(r, "osl")
            context_gap(model, isl, osl)
            tp, pp, dp = whole(r, "tp_size"), whole(r, "pp_size", 1), whole(r, "attention_dp_size", 1)
            ep, moe_tp = 1, None
            if models[model].is_moe and (r.get("moe_ep_size") or "").strip() not in ("", "0"):
                ep = whole(r, "moe_ep_size")
            if models[model].is_moe and (r.get("moe_tp_size") or "").strip() not in ("", "0"):
                moe_tp = whole(r, "moe_tp_size")
            engine_key = cell(r, "backend").lower()
            csv_dp = dp  # aiconfigurator's batch_size is per attention group of the row's own columns
            tp, dp, moe_tp, ep, squared = unsquared(tp, dp, moe_tp, ep, r.get("silicon_data_source") or "")
            tp, dp, layout_note = aic_layout(tp, dp, moe_tp, ep)
            layout_note = "; ".join(n for n in (squared, layout_note) if n)
            named = NAMED_LAYOUT.search(rid) if engine_key == "trtllm" else None  # a TensorRT-LLM tp8_ep8 run: 8 GPUs
            if named and tp * dp > int(named.group(1)):
                tp, dp, layout_note = named_layout(tp, dp, int(named.group(1)), named.group(0).strip("_"), layout_note)
            found = SILICON_CONCURRENCY.search(r.get("silicon_data_source") or "")
            if found:
                if len(found.group(1)) > len(str(MOST_WHOLE)):
                    raise RowError(f"silicon_concurrency must be at most {MOST_WHOLE:,}; got {shown(found.group(1))}")
                conc = int(found.group(1))
                if conc < 1:
                    raise RowError(f"silicon_concurrency must be at least 1 request in flight; got {conc}")
            else:
                conc = whole(r, "batch_size") * csv_dp
            weights, note = aic_weights(r, model)
            mixed = generator_mixed_chunk(r)
            note = "; ".join(n for n in (note, layout_note, MIXED_CHUNK_NOTE if mixed else "") if n)
            kv_ = kv or aic_kv(engine_key, weights)
            values = {"ttft_ms": number(r, "silicon_ttft_ms"), "tpot_ms": number(r, "silicon_tpot_ms")}
            base = dict(
                source=f"ai-dynamo/aiconfigurator silicon_sample.csv @095f58a: {rid}",
                gpu=gpu,
                n_gpus=tp * pp * dp,
                tp=tp,
                model=model,
                weights=weights,
                kv=kv_,
                engine=engine_name(engine_key, r.get("backend_version") or ""),
                isl=isl,
                osl=osl,
                load=f"concurrency {conc}",
                load_kind="concurrency",
                unit="ms",
                notes=note,
                concurrency=conc,
                pp=pp,
                attention_dp=dp,
                ep=ep,
                mixed_prefill=True if mixed else None,
            )
            made = [Measurement(id=f"{rid}:{m.split('_')[0]}", metric=m, value=v, **base) for m, v in values.items()]
            gap = layout_gap(made[0])
            if gap is not None:
                raise RowError(gap)
            times = tuple(values.values())
            places = tuple(decimals(cell(r, c)) for c in ("silicon_ttft_ms", "silicon_tpot_ms"))
            first_of(
                seen, tuple(v for key, v in base.items() if key not in ("source", "notes")), times, places, line, rid
            )
            run = (model, gpu, engine_key, weights, isl, osl, conc)
            runs.setdefault(run, times, places, []).append((tp * pp * dp, line, rid, made))
        except (RowError, InputError) as exc:
            skipped.append(Skipped(line, rid, str(exc)))
    kept, left = kept_once(runs.items())
    skipped += [Skipped(line, rid, reason) for line, rid, reason in left]
    skipped.sort(key=lambda sk: sk.line)
    return rows + kept, skipped


def _is_vllm(rec: Any) -> bool:
    return isinstance(rec, dict) and any(k in rec for k in ("mean_tpot_ms", "mean_ttft_ms", "output_throughput"))


def _scalar(r: dict[str, Any], key: str) -> Any:
    """The value of a JSON key (None if absent or empty); an array or object there is a :class:`RowError`."""
    v = r.get(key)
    if isinstance(v, dict | list):
        raise RowError(f"{key!r} is a JSON {'object' if isinstance(v, dict) else 'array'}, not a value")
    return None if v == "" else v


def _read_vllm(records: list[Any], given: dict[str, Any]) -> tuple[list[Measurement], list[Skipped]]:
    """``vllm bench serve --save-result`` results. The JSON names the model, the lengths (through
    its token totals) and the concurrency; the GPU, the tensor-parallel size and the precisions come
    from ``--metadata gpu=... tp=... weights=... kv=...`` keys in the JSON or from the keywords of
    :func:`load_measurements`; the keyword ``model`` (``--model``) names the model in place of the JSON's."""
    rows, skipped = [], []
    metrics = {"mean_ttft_ms": "ttft_ms", "mean_tpot_ms": "tpot_ms", "mean_itl_ms": "itl_ms"}
    keys = {"tensor_parallel": "tp"}  # a keyword under its --metadata key, which the JSON's own overrides
    filled = {keys.get(k, k): v for k, v in given.items() if v is not None and k != "model"}
    for k, rec in enumerate(records):
        line = k + 1
        rid = f"vllm#{line}"
        try:
            if not _is_vllm(rec):
                raise RowError("not a vllm bench serve result (no mean_tpot_ms, mean_ttft_ms or output_throughput)")
            r = {**filled, **rec}

            def pick(*keys: str, r: dict[str, Any] = r) -> Any:
                return next((v for v in (_scalar(r, x) for x in keys) if v is not None), None)

            if given.get("model"):
                model = given["model"]
            else:
                named = pick("model_id", "model")
                if named is None:
                    raise RowError("no model named: give --model (model= to load_measurements)")
                model = model_name(str(named))
            gpu_text = pick("gpu")
            if gpu_text is None:
                raise RowError(
                    "no GPU named: give --gpu H100 (gpu='H100' to load_measurements) or run vllm bench serve with "
                    "--metadata gpu=H100"
                )
            gpu = gpu_name(str(gpu_text))
            rate, conc = pick("request_rate"), _scalar(r, "max_concurrency")
            if conc is None:
                if rate is not None and str(rate) != "inf":
                    raise RowError(
                        f"an open-loop request rate ({shown(str(rate))}/s) without --max-concurrency: the queueing "
                        "simulator predicts that, not this closed-loop model; rerun with --max-concurrency"
                    )
                raise RowError(
                    "no --max-concurrency and an unlimited request rate: a burst of every prompt at once, not a "
                    "steady concurrency; rerun with --max-concurrency"
                )
            conc = whole({"max_concurrency": conc}, "max_concurrency")
            tp_text = pick("tensor_parallel_size", "tensor_parallel", "tp")
            tp = 1 if tp_text is None else whole({"tp": tp_text}, "tp")
            done = number({"completed": _scalar(r, "completed")}, "completed")
            isl, osl = pick("random_input_len", "input_len"), pick("random_output_len", "output_len")
            if isl is None:
                isl = round(number(r, "total_input_tokens") / done)
            if osl is None:
                osl = round(number(r, "total_output_tokens") / done)
            isl, osl = whole({"isl": isl}, "isl"), whole({"osl": osl}, "osl")
            context_gap(model, isl, osl)
            w = pick("weights", "dtype", "quantization")
            weights = precision_name(str(w), "weights") if w is not None else models[model].weight_dtype
            kv_text = str(pick("kv", "kv_cache_dtype") or "auto")
            kv_ = "bf16" if kv_text.lower() == "auto" else precision_name(kv_text, "kv")
            date = pick("date")
            base = dict(
                source=f"vllm bench serve result {line}" + (f" ({shortened(str(date))})" if date else ""),
                gpu=gpu,
                n_gpus=tp,
                tp=tp,
                model=model,
                weights=weights,
                kv=kv_,
                engine=engine_name(
                    shortened(str(pick("engine") or "vllm")), shortened(str(pick("engine_version") or ""))
                ),
                isl=isl,
                osl=osl,
                load=f"concurrency {conc}",
                load_kind="concurrency",
                notes="" if w is not None else f"precision not given: the checkpoint's own ({weights})",
                concurrency=conc,
            )
            made = [
                Measurement(id=f"{rid}:{m.split('_')[0]}", metric=m, value=number(r, key), unit="ms", **base)
                for key, m in metrics.items()
                if _scalar(r, key) is not None
            ]
            if _scalar(r, "output_throughput") is not None:
                made.append(
                    Measurement(
                        id=f"{rid}:throughput",
                        metric="output_tokens_per_s",
                        value=number(r, "output_throughput"),
                        unit="1/s",
                        **base,
                    )
                )
            rows += made
        except (RowError, InputError) as exc:
            skipped.append(Skipped(line, rid, str(exc)))
    return rows, skipped


def _llama_rows(fields: list[dict[str, Any]], skips: list[tuple[int, str, str]]) -> tuple[list[Any], list[Any]]:
    """The rows :func:`~llmcourse.validation.llama_bench.read_llama_bench` read, as :class:`Measurement` and
    :class:`Skipped` (a row the Measurement refuses is skipped with its reason)."""
    rows, skipped = [], [Skipped(*s) for s in skips]
    for f in fields:
        try:
            rows.append(Measurement(**f))
        except InputError as exc:
            skipped.append(Skipped(0, f["id"], str(exc)))
    return rows, skipped


def _exported(recs: list[Any], source: str, given: dict[str, Any]) -> Loaded:
    """The rows of AIPerf / GenAI-Perf profile exports or of a GuideLLM report (its first :data:`MAX_ROWS` benchmarks)."""
    if is_guidellm(recs[0]):
        n = len(recs[0]["benchmarks"])
        rows, skipped = _llama_rows(*read_guidellm(recs[0], given, bounded.MAX_ROWS))
        more = (
            f"{one_line(source)}: read the first {bounded.MAX_ROWS:,} benchmarks; split the file to validate the rest."
        )
        return Loaded("guidellm", tuple(rows), tuple(skipped), source, more if n > bounded.MAX_ROWS else "")
    rows, skipped = _llama_rows(*read_aiperf(recs[: bounded.MAX_ROWS], given))
    more = f"{one_line(source)}: read the first {bounded.MAX_ROWS:,} exports; split the file to validate the rest."
    return Loaded("aiperf", tuple(rows), tuple(skipped), source, more if len(recs) > bounded.MAX_ROWS else "")


def _read_text(text: BoundedText, source: str, given: dict[str, Any]) -> Loaded:
    """The rows of a measured text stream, in whichever of :data:`FORMATS` it is."""
    while True:
        first = text.readline(check=False)
        if not first:
            raise InputError(f"{escaped(source)} is empty: give {', '.join(FORMATS.values())}.")
        if first.strip():
            break
        if text.chars > bounded.MAX_BYTES or text.lines > bounded.MAX_LINES:
            raise InputError(
                f"{escaped(source)} has only blank lines in its first {text.lines:,} lines: give "
                f"{', '.join(FORMATS.values())}."
            )
    first = first.lstrip("\ufeff").lstrip()
    if first[:1] in "[{":
        recs = json_records(first + text.rest(), source)
        if recs and is_llama_bench(recs[0]):
            rows, skipped = _llama_rows(*read_llama_bench(recs[: bounded.MAX_ROWS], given))
            more = (
                f"{one_line(source)}: read the first {bounded.MAX_ROWS:,} results; split the file to validate the rest."
            )
            return Loaded(
                "llama-bench", tuple(rows), tuple(skipped), source, more if len(recs) > bounded.MAX_ROWS else ""
            )
        if recs and (is_aiperf(recs[0]) or is_guidellm(recs[0])):
            return _exported(recs, source, given)
        if recs and _is_vllm(recs[0]):
            more = len(recs) > bounded.MAX_ROWS
            rows, skipped = _read_vllm(recs[: bounded.MAX_ROWS], given)
            stopped = (
                f"{one_line(source)}: read the first {bounded.MAX_ROWS:,} results, the most read from one file; the rest "
                "was not "
                "read: split the file to validate the rest."
            )
            return Loaded("vllm", tuple(rows), tuple(skipped), source, stopped if more else "")
    else:
        text.too_long(first)
        records = BoundedRows(text, first)
        head = set(records.header)
        if head >= LLAMA_BENCH_KEYS:
            rows, skipped = _llama_rows(*read_llama_bench(records, given, first_line=2))
            return Loaded("llama-bench", tuple(rows), tuple(skipped), source, records.stopped())
        if is_aiperf_csv(records.header):
            rows, skipped = _llama_rows(*read_aiperf_csv(records, given))
            return Loaded("aiperf-csv", tuple(rows), tuple(skipped), source, records.stopped())
        if {"silicon_tpot_ms", "model_path"} <= head or {"silicon_ttft_ms", "model_path"} <= head:
            rows, skipped = _read_aiconfigurator(records, given.get("kv"), given.get("model"))
            return Loaded("aiconfigurator", tuple(rows), tuple(skipped), source, records.stopped())
        if {"metric", "value"} <= head:
            rows, skipped = _read_course(records, given.get("model"))
            return Loaded("course", tuple(rows), tuple(skipped), source, records.stopped())
    raise InputError(f"{escaped(source)}: not a format this package reads; it reads {'; '.join(FORMATS.values())}.")


def parse_measurements(
    text: str,
    *,
    source: str = "pasted text",
    gpu: str | None = None,
    tensor_parallel: int | None = None,
    weights: str | None = None,
    kv: str | None = None,
    engine: str | None = None,
    model: str | None = None,
    concurrency: int | None = None,
) -> Loaded:
    """Read measured rows from text in any of :data:`FORMATS` (what the live calculator is pasted).

    The keywords fill what a format does not say: the GPU, tensor-parallel size, precisions and
    engine of a ``vllm bench serve`` result (its ``--metadata`` keys win), and ``kv`` the KV-cache
    precision of aiconfigurator rows, which the file does not give (by default FP8 for TensorRT-LLM
    with FP8 or FP4 weights, whose quantized checkpoints store the cache in FP8, else BF16, the
    engines' default). ``model`` names the model of every row, in place of the file's (a name of the
    catalog, or a Hugging Face id: its organisation, ``-Instruct`` and a quantization suffix are dropped).
    ``concurrency`` gives the requests in flight of an AIPerf / GenAI-Perf CSV, which does not say it.
    Each keyword is checked first (:func:`check_given`).

    At most :data:`MAX_ROWS` rows are read (:attr:`Loaded.stopped` says where reading stopped); a CSV cell longer
    than :data:`MAX_CELL`, a JSON document longer than :data:`MAX_BYTES` or nested deeper than :data:`MAX_DEPTH`
    refuses the text with an :class:`InputError` saying where.

    Examples
    --------
    >>> head = "id,gpu,tp,model,weights,kv,engine,isl,osl,load_kind,concurrency,metric,value"
    >>> got = parse_measurements(head + "\\nA,H100,1,Llama-3.1-8B,bf16,bf16,vLLM,1000,100,concurrency,8,tpot_ms,9.5"
    ...                          "\\nB,H100,1,Llama-3.1-8B,bf16,bf16,vLLM,1000,100,concurrency,0,tpot_ms,9.5")
    >>> got.format, [r.id for r in got.rows], [str(s) for s in got.skipped]
    ('course', ['A'], ["row 3 (B): column 'concurrency' must be at least 1 (requests in flight); got 0"])
    """
    given = check_given(
        dict(
            gpu=gpu,
            tensor_parallel=tensor_parallel,
            weights=weights,
            kv=kv,
            engine=engine,
            model=model,
            concurrency=concurrency,
        )
    )
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{escaped(str(source))} is empty: give {', '.join(FORMATS.values())}.")
    return _read_text(BoundedText(io.StringIO(text, newline=None), source, decoded=False), source, given)


def load_measurements(path: str | Path, **given: Any) -> Loaded:
    """Read a measured file in any of :data:`FORMATS`: the rows the course can express, and each row it
    cannot with its row number and the reason (a missing column, an unknown model or GPU with a
    "did you mean", text where a number belongs, a concurrency of 0, a disaggregated run, a parallel
    layout or an architecture the planner has no term for). See :func:`parse_measurements` for the
    keywords and the limits.

    The file is read as a stream (a CSV row by row, up to :data:`MAX_ROWS` rows), as UTF-8 or as UTF-16 or UTF-32
    with a byte-order mark; a folder, a binary file, text in another encoding (the line of the first byte that is
    not UTF-8 named) or a missing file is refused with an :class:`InputError`.

    Examples
    --------
    >>> got = load_measurements(AICONFIGURATOR)
    >>> got.format, len(got.rows) > 3_000, got.skipped[0].reason.split(" (")[0]
    ('aiconfigurator', True, 'disaggregated: separate prefill and decode pools, predicted by llmcourse.planner.disagg')
    """
    if isinstance(path, str) and not path.strip():
        raise InputError("no path given: give the path to a measured CSV or vllm JSON.")
    if not (isinstance(path, Path) or (isinstance(path, str) and "\n" not in path)):
        raise InputError("load_measurements takes a path; for text, use parse_measurements(text).")
    given = check_given(given)
    p = Path(path)
    try:
        with open_text(p) as stream:
            try:
                return _read_text(BoundedText(stream, p.name, decoded=True), p.name, given)
            except UnicodeDecodeError as exc:  # UTF-16 or UTF-32 (after its byte-order mark) cut short, or broken
                enc = stream.encoding.upper()
                raise InputError(
                    f"{escaped(p.name)}: not valid {enc} text ({exc.reason}; it starts with {enc}'s byte-order mark): "
                    "save the file as UTF-8."
                ) from None
    except OSError as exc:
        raise InputError(f"cannot read {escaped(repr(str(p)))}: {exc.strerror or type(exc).__name__}.") from None


#: The measured rows shipped with the package (ai-dynamo/aiconfigurator, Apache-2.0; see llmcourse/data/README.md).
AICONFIGURATOR = Path(str(resources.files("llmcourse.data").joinpath("aiconfigurator-silicon.csv")))


def aiconfigurator_records() -> list[dict[str, str]]:
    """The rows of the shipped aiconfigurator file (:data:`AICONFIGURATOR`), one dict of its columns per row
    (record ``k`` is the file's row ``k + 2``): the one reader of the file's rows, for the disaggregated rows of
    :func:`llmcourse.validation.disagg.measured_rows` and the figures of :mod:`llmcourse.plots.many_gpus` (the aggregated
    rows are read by :func:`silicon`, through :func:`load_measurements` like any measured file).

    Examples
    --------
    >>> rows = aiconfigurator_records()
    >>> len(rows) > 4_000, rows[0]["id"] == silicon().rows[0].id.split(":")[0]
    (True, True)
    """
    return list(csv.DictReader(AICONFIGURATOR.read_text(encoding="utf-8").splitlines()))


def silicon() -> Loaded:
    """The aiconfigurator rows shipped with the package, read by :func:`load_measurements` (cached)."""
    global _SILICON
    if _SILICON is None:
        _SILICON = load_measurements(AICONFIGURATOR)
    return _SILICON


_SILICON: Loaded | None = None


#: The columns :func:`course_csv` writes (the course's format, closed-loop columns included).
COURSE_COLUMNS = (
    "id", "source", "gpu", "n_gpus", "tp", "pp", "attention_dp", "ep", "model", "weights", "kv", "engine", "isl",
    "osl", "load", "load_kind", "concurrency", "metric", "value", "unit", "notes",
)  # fmt: skip


def course_csv(rows: Iterable[Measurement]) -> str:
    """Measurements as text in the course's CSV format (what :func:`parse_measurements` reads back): a
    way to turn rows of any format read into one file of the course's, and to write an example.

    Examples
    --------
    >>> rows = measurements()[:2]
    >>> text = course_csv(rows)
    >>> text.splitlines()[0].split(",")[:5], [r.id for r in parse_measurements(text).rows]
    (['id', 'source', 'gpu', 'n_gpus', 'tp'], ['T1', 'T2'])
    """
    import io

    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow(COURSE_COLUMNS)
    for r in rows:
        out.writerow(
            [
                "" if getattr(r, c) is None else f"{getattr(r, c):g}" if c == "value" else getattr(r, c)
                for c in COURSE_COLUMNS
            ]
        )
    return buf.getvalue()
