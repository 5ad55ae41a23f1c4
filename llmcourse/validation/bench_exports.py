"""The readers of AIPerf / GenAI-Perf profile exports and of GuideLLM's benchmark JSON, into the fields of the course's
:class:`~llmcourse.validation.measured.Measurement` rows, so that a reader's own benchmark from either tool refits.

**AIPerf and GenAI-Perf** (NVIDIA ai-dynamo/aiperf, ``docs/tutorials/working-with-profile-exports.md``; GenAI-Perf,
triton-inference-server/perf_analyzer ``genai-perf/genai_perf/export_data/json_exporter.py``, which merges the
statistics with the command's arguments under ``input_config``). ``profile_export_aiperf.json`` (or
``profile_export_genai_perf.json``) is one JSON object: each metric an object of statistics (``unit``, ``avg``,
``p50``, ``p99``, ...): ``time_to_first_token`` and ``inter_token_latency`` (ms), ``output_token_throughput``
(tokens/sec), ``input_sequence_length`` and ``output_sequence_length`` (tokens); and ``input_config``, the run's
settings: in AIPerf ``loadgen.concurrency`` or ``loadgen.request_rate``, ``endpoint.model_names`` and
``input.prompt.input_tokens.mean`` / ``output_tokens.mean``; in GenAI-Perf the flat ``concurrency``, ``request_rate``,
``model``, ``synthetic_input_tokens_mean`` and ``output_tokens_mean``. Their ``inter_token_latency`` is, per request,
(request latency - time to first token) / (output tokens - 1): what ``vllm bench serve`` calls TPOT, so it is read as
``tpot_ms``. The CSV (``profile_export_aiperf.csv``, ``profile_export_genai_perf.csv``) has the same statistics, a
row per metric (``Metric,avg,min,max,p1,...``: ``Time to First Token (ms)``, ``Inter Token Latency (ms)``), then a
section ``Metric,Value`` (``Output Token Throughput (tokens/sec)``); it has no settings, so the model, GPU and the
concurrency come from the keywords (``--model``, ``--gpu``, ``--concurrency``).

**GuideLLM** (vllm-project/guidellm, ``docs/guides/outputs.md``; ``src/guidellm/benchmark/schemas/base.py``
``BenchmarkConfig``): ``benchmarks.json`` holds ``benchmarks``, one per load tried; each has its scheduling
``strategy`` (under ``config``, or ``args`` in older files) with ``type_`` ``synchronous`` (one request at a time),
``concurrent`` (``streams`` in flight), ``throughput`` (as many as it can), ``constant`` or ``poisson`` (a ``rate``
per second); and ``metrics``, each a distribution by request status whose ``successful.mean`` is read:
``time_to_first_token_ms``, ``inter_token_latency_ms`` (read as ``tpot_ms``, the same definition as above),
``output_tokens_per_second``, ``prompt_token_count`` and ``output_token_count`` (the lengths).

Each row says how it loaded the server: a closed loop (a concurrency: ``load_kind`` ``concurrency``, what the refit
fits), an open loop at a request rate (``online_rate``; predicted by :func:`~llmcourse.validation.predict`, not
refitted), or every request at once (``online_unbounded``).

Examples
--------
>>> from llmcourse.validation.measured import parse_measurements
>>> text = ('{"time_to_first_token": {"unit": "ms", "avg": 40.0}, "inter_token_latency": {"unit": "ms", "avg": 9.5},'
...         ' "input_sequence_length": {"avg": 1000}, "output_sequence_length": {"avg": 200},'
...         ' "input_config": {"endpoint": {"model_names": ["meta-llama/Llama-3.1-8B-Instruct"]},'
...         ' "loadgen": {"concurrency": 8}}}')
>>> got = parse_measurements(text, gpu="H100")
>>> got.format, [(r.metric, r.value, r.load_kind, r.concurrency) for r in got.rows]
('aiperf', [('ttft_ms', 40.0, 'concurrency', 8), ('tpot_ms', 9.5, 'concurrency', 8)])
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from llmcourse.catalog import models
from llmcourse.errors import InputError
from llmcourse.validation.cells import (
    RowError,
    context_gap,
    engine_name,
    gpu_name,
    model_name,
    number,
    precision_name,
    shortened,
    shown,
    whole,
)

__all__ = ["is_aiperf", "is_aiperf_csv", "is_guidellm", "read_aiperf", "read_aiperf_csv", "read_guidellm"]

#: AIPerf / GenAI-Perf metric keys and the course's metric each is read as.
AIPERF_METRICS = {
    "time_to_first_token": "ttft_ms",
    "inter_token_latency": "tpot_ms",
    "output_token_throughput": "output_tokens_per_s",
}

#: GuideLLM metric keys and the course's metric each is read as.
GUIDELLM_METRICS = {
    "time_to_first_token_ms": "ttft_ms",
    "inter_token_latency_ms": "tpot_ms",
    "output_tokens_per_second": "output_tokens_per_s",
}

#: The units a statistic may carry for each course metric (anything else is refused, naming the unit).
_UNITS = {"ms": ("ms", ""), "1/s": ("tokens/sec", "tokens/s", "tok/s", "per sec", "tokens/second", "")}


def is_aiperf(record: Any) -> bool:
    """Whether a JSON record is an AIPerf or GenAI-Perf profile export (a latency statistic as an object)."""
    return isinstance(record, dict) and any(isinstance(record.get(k), dict) for k in AIPERF_METRICS)


def is_guidellm(record: Any) -> bool:
    """Whether a JSON record is a GuideLLM report (a list under ``benchmarks``)."""
    return isinstance(record, dict) and isinstance(record.get("benchmarks"), list)


def is_aiperf_csv(header: list[str]) -> bool:
    """Whether a CSV header is that of an AIPerf / GenAI-Perf statistics export (``Metric,avg,...``)."""
    return bool(header) and header[0].strip() == "Metric" and "avg" in header


def _dig(r: Any, *path: str) -> Any:
    """The value at ``path`` inside nested JSON objects (None where any step is missing or not an object)."""
    for key in path:
        if not isinstance(r, dict):
            return None
        r = r.get(key)
    return r


def _value(x: Any, what: str) -> float:
    """A positive finite number from a JSON value (a number, or text of one), refused naming ``what``."""
    if isinstance(x, bool | dict | list):
        raise RowError(f"{what} is not a number")
    return number({what: x}, what)


def _stat(rec: dict[str, Any], key: str, unit: str) -> float | None:
    """The mean (``avg``) of an AIPerf statistic, or None if the export lacks it; a unit the course does not read
    there is refused, naming it."""
    s = rec.get(key)
    if s is None:
        return None
    if not isinstance(s, dict):
        raise RowError(f"{key!r} is not an object of statistics (unit, avg, p50, ...)")
    said = str(s.get("unit") or "").strip().lower()
    if said not in _UNITS.get(unit, ("",)) and unit in _UNITS:
        raise RowError(f"{key!r} in {shown(said)}: the course reads it in {unit}")
    return None if s.get("avg") is None else _value(s.get("avg"), f"{key}.avg")


def _load(conc: Any, rate: Any, given: dict[str, Any], flag: str) -> tuple[str, str, int | None]:
    """(load, load_kind, concurrency): an open loop where a finite request rate was set, else a closed loop of the
    concurrency (the file's, else ``given['concurrency']``)."""
    if rate is not None and str(rate).strip().lower() not in ("", "inf", "infinity", "none"):
        r = _value(rate, "request_rate")
        cap = f", at most {whole({'concurrency': conc}, 'concurrency')} in flight" if conc not in (None, "") else ""
        return f"request rate {r:g}/s{cap}", "online_rate", None
    if conc in (None, "") and given.get("concurrency") is not None:
        conc = given["concurrency"]
    if conc in (None, ""):
        raise RowError(f"no concurrency and no request rate: give {flag}")
    c = whole({"concurrency": conc}, "concurrency")
    return f"concurrency {c}", "concurrency", c


def _setup(model_text: Any, gpu_text: Any, given: dict[str, Any]) -> dict[str, Any]:
    """The fields every row of one run shares: model, GPU, tensor parallel size, precisions, engine."""
    if given.get("model"):
        model = given["model"]
    elif model_text in (None, ""):
        raise RowError("no model named: give --model (model= to load_measurements)")
    else:
        model = model_name(str(model_text))
    if given.get("gpu"):
        gpu = given["gpu"]
    elif gpu_text in (None, ""):
        raise RowError("no GPU named: give --gpu H100 (gpu='H100' to load_measurements)")
    else:
        gpu = gpu_name(str(gpu_text))
    tp = given.get("tensor_parallel") or 1
    w = given.get("weights")
    weights = w or models[model].weight_dtype
    kv = given.get("kv") or "bf16"
    return dict(
        gpu=gpu,
        n_gpus=tp,
        tp=tp,
        model=model,
        weights=precision_name(weights, "weights") if w else weights,
        kv=kv,
        engine=engine_name(str(given.get("engine") or "unknown engine")),
        notes="" if w else f"precision not given: the checkpoint's own ({weights})",
    )


def _rows(rid: str, source: str, base: dict[str, Any], values: dict[str, float | None]) -> list[dict[str, Any]]:
    """One row of fields per metric measured (none measured is a :class:`RowError`)."""
    made = [
        dict(
            id=f"{rid}:{m.split('_')[0]}", source=source, metric=m, value=v, unit="1/s" if m[0] == "o" else "ms", **base
        )
        for m, v in values.items()
        if v is not None
    ]
    if not made:
        raise RowError("no time to first token, inter-token latency or output token throughput measured")
    return made


def _lengths(isl: Any, osl: Any, model: str) -> tuple[int, int]:
    """Prompt and answer lengths, rounded to whole tokens (at least 1), checked against the model's context."""
    if isl is None or osl is None:
        raise RowError("no input or output sequence length (the mean tokens of a prompt and of an answer)")
    i, o = (max(1, round(_value(x, n))) for x, n in ((isl, "input_sequence_length"), (osl, "output_sequence_length")))
    context_gap(model, i, o)
    return i, o


def _aiperf_one(rec: dict[str, Any], rid: str, source: str, given: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows of one AIPerf / GenAI-Perf export (an object of statistics, ``input_config`` optional)."""
    cfg = rec.get("input_config") if isinstance(rec.get("input_config"), dict) else {}
    names = _dig(cfg, "endpoint", "model_names") or cfg.get("model")
    model_text = names[0] if isinstance(names, list) and names else names
    gpus = [g.get("gpu_name") for ep in (_dig(rec, "telemetry_data", "endpoints") or {}).values() if isinstance(ep, dict)
            for g in (ep.get("gpus") or {}).values() if isinstance(g, dict)]  # fmt: skip
    base = _setup(model_text, gpus[0] if gpus else None, given)
    conc = _dig(cfg, "loadgen", "concurrency") if "loadgen" in cfg else cfg.get("concurrency")
    rate = _dig(cfg, "loadgen", "request_rate") if "loadgen" in cfg else cfg.get("request_rate")
    load, kind, c = _load(conc, rate, given, "--concurrency")
    isl = _stat(rec, "input_sequence_length", "") or _dig(cfg, "input", "prompt", "input_tokens", "mean")
    osl = _stat(rec, "output_sequence_length", "") or _dig(cfg, "input", "prompt", "output_tokens", "mean")
    isl = isl or cfg.get("synthetic_input_tokens_mean")
    osl = osl or cfg.get("output_tokens_mean")
    i, o = _lengths(isl, osl, base["model"])
    base.update(isl=i, osl=o, load=load, load_kind=kind, concurrency=c)
    values = {m: _stat(rec, k, "1/s" if m[0] == "o" else "ms") for k, m in AIPERF_METRICS.items()}
    return _rows(rid, source, base, values)


def read_aiperf(
    records: Iterable[Any], given: dict[str, Any], fmt: str = "aiperf"
) -> tuple[list[dict[str, Any]], list[tuple[int, str, str]]]:
    """AIPerf or GenAI-Perf profile exports as (rows, skipped), as
    :func:`~llmcourse.validation.llama_bench.read_llama_bench` returns them."""
    rows: list[dict[str, Any]] = []
    skipped: list[tuple[int, str, str]] = []
    for k, rec in enumerate(records):
        line, rid = k + 1, f"{fmt}#{k + 1}"
        try:
            if not is_aiperf(rec):
                raise RowError("not a profile export (no time_to_first_token or inter_token_latency statistics)")
            rows += _aiperf_one(rec, rid, f"{fmt} profile export {line}", given)
        except (RowError, InputError) as exc:
            skipped.append((line, rid, str(exc)))
    return rows, skipped


_UNIT_IN_NAME = re.compile(r"\s*\(([^)]*)\)\s*$")


def read_aiperf_csv(
    records: Iterable[dict[str, str]], given: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[tuple[int, str, str]]]:
    """An AIPerf / GenAI-Perf statistics CSV (its sections read as one export: ``Time to First Token (ms)`` becomes
    ``time_to_first_token`` with unit ``ms``; a ``Metric,Value`` row's value sits under ``avg``)."""
    rec: dict[str, Any] = {}
    for r in records:
        name = str(r.get("Metric") or "").strip()
        found = _UNIT_IN_NAME.search(name)
        key = re.sub(r"\W+", "_", _UNIT_IN_NAME.sub("", name).strip().lower()).strip("_")
        if key and key not in rec:
            rec[key] = {"unit": found.group(1) if found else "", "avg": r.get("avg")}
    if not is_aiperf(rec):
        return [], [(2, "aiperf-csv#1", "no 'Time to First Token (ms)' or 'Inter Token Latency (ms)' row")]
    return read_aiperf([rec], given, "aiperf-csv")


def _strategy_load(strategy: Any, given: dict[str, Any]) -> tuple[str, str, int | None]:
    """(load, load_kind, concurrency) of a GuideLLM scheduling strategy."""
    if not isinstance(strategy, dict):
        raise RowError("no scheduling strategy (config.strategy or args.strategy)")
    kind = str(strategy.get("type_") or strategy.get("type") or "").strip().lower()
    if kind == "synchronous":
        return "synchronous (one request at a time)", "concurrency", 1
    if kind == "concurrent":
        return _load(strategy.get("streams"), None, {}, "the strategy's streams")
    if kind == "throughput":
        return "throughput (every request at once)", "online_unbounded", None
    if kind in ("constant", "poisson", "async"):
        return _load(strategy.get("max_concurrency"), strategy.get("rate"), {}, "the strategy's rate")
    raise RowError(
        f"strategy {shown(kind)!r} unknown; GuideLLM's are synchronous, concurrent, throughput, constant, poisson"
    )


def _mean(metrics: dict[str, Any], key: str) -> float | None:
    """The mean over successful requests of a GuideLLM metric, or None if the benchmark lacks it."""
    if metrics.get(key) is None:
        return None
    x = _dig(metrics, key, "successful", "mean")
    if x is None:
        raise RowError(f"metric {key!r} has no successful.mean")
    if isinstance(x, float) and not math.isfinite(x):
        raise RowError(f"metric {key!r}: successful.mean is {x}")
    return _value(x, f"{key}.successful.mean")


def _guidellm_one(b: Any, report: dict[str, Any], rid: str, source: str, given: dict[str, Any]) -> list[dict]:
    """The rows of one GuideLLM benchmark."""
    if not isinstance(b, dict) or not isinstance(b.get("metrics"), dict):
        raise RowError("not a GuideLLM benchmark (no metrics object)")
    strategy = _dig(b, "config", "strategy") or _dig(b, "args", "strategy")
    model_text = (_dig(b, "config", "backend", "model") or _dig(b, "worker", "backend_model")
                  or _dig(report, "args", "model"))  # fmt: skip
    base = _setup(model_text, None, given)
    load, kind, c = _strategy_load(strategy, given)
    m = b["metrics"]
    i, o = _lengths(_mean(m, "prompt_token_count"), _mean(m, "output_token_count"), base["model"])
    base.update(isl=i, osl=o, load=load, load_kind=kind, concurrency=c)
    return _rows(rid, source, base, {m_: _mean(m, k) for k, m_ in GUIDELLM_METRICS.items()})


def read_guidellm(
    report: dict[str, Any], given: dict[str, Any], most: int
) -> tuple[list[dict[str, Any]], list[tuple[int, str, str]]]:
    """A GuideLLM report's first ``most`` benchmarks as (rows, skipped); a benchmark is numbered from 1."""
    rows: list[dict[str, Any]] = []
    skipped: list[tuple[int, str, str]] = []
    for k, b in enumerate(report["benchmarks"][:most]):
        line, rid = k + 1, f"guidellm#{k + 1}"
        try:
            rows += _guidellm_one(b, report, rid, f"GuideLLM benchmark {line}", given)
        except (RowError, InputError) as exc:
            skipped.append((line, rid, shortened(str(exc), 400)))
    return rows, skipped
