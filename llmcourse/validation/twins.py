"""Aggregated rows of aiconfigurator's silicon file that are a disaggregated run published again.

The file merges several publications of the same runs. Some runs appear twice under two ids, identical to the last
digit (:data:`llmcourse.validation.measured.REPEAT_REASON`); others appear once as ``mode`` disagg and once as ``mode``
agg: :func:`disaggregated_twins` finds the second kind, and :func:`llmcourse.validation.measured.load_measurements`
skips the aggregated copy with :data:`TWIN_REASON`.

The file's wide GB200 runs of DeepSeek-R1 are such rows: InferenceMAX's multinode benchmark workflow
(``.github/workflows/benchmark-multinode-tmpl.yml`` @a8a41b6) writes a disaggregated deployment's GPUs, prefill and
decode together, as ``tp`` (``TP=$gpus EP_SIZE=1 DP_ATTENTION=false``) and uploads its results as ``agg_*.json``, and
its GB200 launchers run only disaggregated jobs
(``runners/launch_gb200-nv.sh``: 4 prefill and 32 decode GPUs are "tp36"). Each such agg row (measured 2025-11-16/17)
has a disaggregated row of the same name, lengths and load (measured 2025-12-01/05).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

#: The requests in flight of an aiconfigurator row, in its ``silicon_data_source``.
SILICON_CONCURRENCY = re.compile(r"silicon_concurrency=(\d+)")


#: How far apart (a share of the larger) an aggregated row's two times may lie from those of its disaggregated twin
#: (:data:`TWIN_REASON`): a run measured twice differs by its noise, a few percent; two different servers rarely agree
#: on both times within a tenth.
TWIN_TOLERANCE = 0.10


#: The reason an aggregated row is a disaggregated run written as aggregated (:func:`disaggregated_twins`), with the
#: evidence that pairs it (:data:`CLOSE_EVIDENCE` or :data:`UNEVEN_EVIDENCE`).
TWIN_REASON = (
    "a disaggregated run written as aggregated, disaggregated row {line} ({id}) measured again: that row's setup and "
    "both pools carry this row's parallel columns, and {evidence}"
)
#: :data:`TWIN_REASON`'s evidence where both times agree.
CLOSE_EVIDENCE = "its two times lie within {tolerance:.0%} of these"
#: :data:`TWIN_REASON`'s evidence where no engine runs the row's layout as one aggregated server.
UNEVEN_EVIDENCE = (
    "this row's tp_size, {tp}, divides none of the model's {heads} attention heads as an engine's tensor parallelism "
    "must (the harness wrote the deployment's GPUs there)"
)


#: The parallel columns of a row of aiconfigurator's file (a disaggregated row's pools prefix them).
_AIC_LAYOUT = ("tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size")


def _aic_pool(r: dict[str, str], prefix: str = "") -> tuple[str, ...]:
    """A row's (or a pool's, ``prefix`` ``"prefill_"`` or ``"decode_"``) parallel columns, an empty one and 0 read as 1."""
    cells = ((r.get(prefix + c) or "").strip() for c in _AIC_LAYOUT)
    return tuple(c if c not in ("", "0") else "1" for c in cells)


def _aic_setup(r: dict[str, str]) -> tuple[str, ...] | None:
    """What an aggregated row and its disaggregated twin share: model, GPU, engine, precision, lengths and the
    requests in flight (None where ``silicon_data_source`` does not say them: no twin is sought)."""
    conc = SILICON_CONCURRENCY.search(r.get("silicon_data_source") or "")
    cols = ("model_path", "system", "backend", "precision", "gemm_quant_mode", "moe_quant_mode", "isl", "osl")
    return (*((r.get(c) or "").strip().lower() for c in cols), conc.group(1)) if conc else None


def _times(r: dict[str, str]) -> tuple[float, float] | None:
    try:
        got = float(r.get("silicon_ttft_ms") or ""), float(r.get("silicon_tpot_ms") or "")
    except ValueError:
        return None
    return got if all(math.isfinite(t) and t > 0 for t in got) else None


def disaggregated_twins(
    records: list[dict[str, str]], heads: Callable[[dict[str, str]], int | None] | None = None
) -> dict[int, str]:
    """The aggregated rows of aiconfigurator's file that are a disaggregated run published again under ``mode`` agg:
    record ``k`` (its row ``k + 2``) -> why it is skipped (:data:`TWIN_REASON`, naming its twin and the evidence). A
    twin has the same model, GPU, engine, precision, lengths and requests in flight, ``mode`` disagg with both pools
    laid out as the aggregated row is (the same ``tp_size``, ``pp_size``, ``attention_dp_size``, ``moe_tp_size``,
    ``moe_ep_size``), and both times within :data:`TWIN_TOLERANCE` (:data:`CLOSE_EVIDENCE`). The file's DeepSeek-R1
    runs on 12 to 72 GB200s (tensor-parallel sizes such as 36 and 72 that no engine splits 128 attention heads by) are
    such rows: the agg row at 2,252 in flight and tp_size 12 measures 5,397 ms to the first token and 31.48 ms a token,
    its disagg twin 5,364 and 31.43.

    ``heads`` (a record's model's attention heads, None where unknown) pairs more: an aggregated row whose ``tp_size``
    does not divide its model's heads, which no engine runs as one aggregated server, is the twin of a disaggregated
    row of the same setup and pools whatever its times (:data:`UNEVEN_EVIDENCE` where they do not agree). The file's
    agg rows of DeepSeek-R1 on 36 and 72 GB200s lie further from their disaggregated rows than the others: a token
    0.2% to 21% apart, the first token 10% to 40% (a share of the larger).

    Examples
    --------
    >>> agg = {"id": "a", "mode": "agg", "model_path": "m", "system": "gb200", "backend": "trtllm", "isl": "1024",
    ...        "osl": "1024", "tp_size": "12", "moe_tp_size": "12", "moe_ep_size": "1",
    ...        "silicon_data_source": "silicon_concurrency=2252", "silicon_ttft_ms": "5397", "silicon_tpot_ms": "31.48"}
    >>> pools = {f"{p}_{c}": agg[c] for p in ("prefill", "decode") for c in ("tp_size", "moe_tp_size", "moe_ep_size")}
    >>> dis = {**agg, "id": "d", "mode": "disagg", "tp_size": "", "silicon_ttft_ms": "5364",
    ...        "silicon_tpot_ms": "31.43", **pools}
    >>> disaggregated_twins([agg, dis])[0].endswith("its two times lie within 10% of these")
    True
    >>> disaggregated_twins([agg, {**dis, "decode_tp_size": "8"}])
    {}
    >>> later = {**dis, "silicon_ttft_ms": "7000"}  # measured again: the first token 30% apart
    >>> disaggregated_twins([agg, later]), disaggregated_twins([agg, later], heads=lambda r: 96)  # 12 divides 96
    ({}, {})
    >>> print(disaggregated_twins([agg, later], heads=lambda r: 128)[0])
    a disaggregated run written as aggregated, disaggregated row 3 (d) measured again: that row's setup and both pools carry this row's parallel columns, and this row's tp_size, 12, divides none of the model's 128 attention heads as an engine's tensor parallelism must (the harness wrote the deployment's GPUs there)
    """
    pools: dict[tuple[str, ...], list[tuple[int, str, tuple[str, ...], tuple[float, float]]]] = {}
    for k, r in enumerate(records):
        setup, times = _aic_setup(r), _times(r)
        lay = _aic_pool(r, "prefill_")
        if (r.get("mode") or "").strip() == "disagg" and setup and times and lay == _aic_pool(r, "decode_"):
            pools.setdefault(setup, []).append((k + 2, (r.get("id") or "").strip(), lay, times))
    out = {}
    close_evidence = CLOSE_EVIDENCE.format(tolerance=TWIN_TOLERANCE)
    for k, r in enumerate(records):
        setup, times = _aic_setup(r), _times(r)
        if (r.get("mode") or "").strip() != "agg" or not setup or not times:
            continue
        n = heads(r) if heads is not None else None
        tp = (r.get("tp_size") or "").strip()
        uneven = UNEVEN_EVIDENCE.format(tp=tp, heads=n) if not _divides(tp, n) else None
        for line, rid, lay, (ttft, tpot) in pools.get(setup, []):
            close = all(abs(a - b) <= TWIN_TOLERANCE * max(a, b) for a, b in zip(times, (ttft, tpot), strict=True))
            if lay == _aic_pool(r) and (close or uneven):
                out[k] = TWIN_REASON.format(line=line, id=rid, evidence=close_evidence if close else uneven)
                if close:
                    break
    return out


def _divides(tp: str, heads: int | None) -> bool:
    """Whether a row's ``tp_size`` divides ``heads`` (True where either is unknown: nothing is inferred)."""
    try:
        n = int(tp)
    except ValueError:
        return True
    return heads is None or n < 1 or heads % n == 0
