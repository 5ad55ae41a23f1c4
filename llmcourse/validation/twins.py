"""Aggregated rows of aiconfigurator's silicon file that are a disaggregated run published a second time.

The file merges several publications of the same runs. Some runs appear twice under two ids, identical to the last
digit (:data:`llmcourse.validation.measured.REPEAT_REASON`); others appear once as ``mode`` disagg and once as ``mode``
agg, their times a few percent apart, or measured again on another date at a layout no engine runs aggregated:
:func:`disaggregated_twins` finds both kinds, and :func:`llmcourse.validation.measured.load_measurements` skips the
aggregated copy with :data:`TWIN_REASON` or :data:`REMEASURED_REASON`.
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


#: The reason an aggregated row is the measurement of a disaggregated row published a second time under ``mode`` agg.
TWIN_REASON = (
    "the same run as disaggregated row {line} ({id}): labelled agg, but both of that row's pools have this row's "
    "parallel layout and its two times lie within {tolerance:.0%} of these"
)


#: The reason an aggregated row is a disaggregated deployment measured on another date: its tensor-parallel size divides
#: no model's attention heads as an engine would split them, so no engine ran it aggregated, and a disaggregated row of
#: the same setup has both pools laid out as it is; a deployment measured on two dates may differ by more than
#: :data:`TWIN_TOLERANCE` (its first token most).
REMEASURED_REASON = (
    "the same deployment as disaggregated row {line} ({id}), measured on another date: labelled agg, but its "
    "tensor-parallel {tp} does not divide the model's {heads} attention heads (no engine runs it aggregated), and both "
    "of that row's pools have this row's parallel layout"
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
) -> dict[int, tuple[int, str, bool]]:
    """The aggregated rows of aiconfigurator's file that are a disaggregated row measured once and published twice:
    record ``k`` (its row ``k + 2``) -> (row, id, whether its times are within :data:`TWIN_TOLERANCE`) of its twin. A twin has the same model, GPU, engine, precision,
    lengths and requests in flight, ``mode`` disagg with both pools laid out as the aggregated row is (the same
    ``tp_size``, ``pp_size``, ``attention_dp_size``, ``moe_tp_size``, ``moe_ep_size``), and both times within
    :data:`TWIN_TOLERANCE`. The file's DeepSeek-R1 runs on 12 to 72 GB200s (tensor-parallel sizes such as 36 and 72
    that no engine splits 128 attention heads by) are such rows: the agg row at 2,252 in flight and tp_size 12
    measures 5,397 ms to the first token and 31.48 ms a token, its disagg twin 5,364 and 31.43.

    ``heads`` (a record's model's attention heads, None where unknown) finds the same deployment measured on another
    date (:data:`REMEASURED_REASON`): an aggregated row whose ``tp_size`` does not divide its model's heads, which no
    engine runs aggregated, is the twin of a disaggregated row of the same setup and pools whatever its times. The
    file's agg rows of DeepSeek-R1 on 36 and 72 GB200s (measured 2025-11-17) have disaggregated rows of the same
    names (measured 2025-12-01 and 2025-12-05): a token 0.2% to 21% apart, the first token 10% to 40%.

    Examples
    --------
    >>> agg = {"id": "a", "mode": "agg", "model_path": "m", "system": "gb200", "backend": "trtllm", "isl": "1024",
    ...        "osl": "1024", "tp_size": "12", "moe_tp_size": "12", "moe_ep_size": "1",
    ...        "silicon_data_source": "silicon_concurrency=2252", "silicon_ttft_ms": "5397", "silicon_tpot_ms": "31.48"}
    >>> pools = {f"{p}_{c}": agg[c] for p in ("prefill", "decode") for c in ("tp_size", "moe_tp_size", "moe_ep_size")}
    >>> dis = {**agg, "id": "d", "mode": "disagg", "tp_size": "", "silicon_ttft_ms": "5364",
    ...        "silicon_tpot_ms": "31.43", **pools}
    >>> disaggregated_twins([agg, dis]), disaggregated_twins([agg, {**dis, "decode_tp_size": "8"}])
    ({0: (3, 'd', True)}, {})
    >>> later = {**dis, "silicon_ttft_ms": "7000"}  # measured again: the first token 30% apart
    >>> disaggregated_twins([agg, later]), disaggregated_twins([agg, later], heads=lambda r: 128)
    ({}, {0: (3, 'd', False)})
    >>> disaggregated_twins([agg, later], heads=lambda r: 96)  # 12 divides 96 heads: an engine could run it
    {}
    """
    pools: dict[tuple[str, ...], list[tuple[int, str, tuple[str, ...], tuple[float, float]]]] = {}
    for k, r in enumerate(records):
        setup, times = _aic_setup(r), _times(r)
        lay = _aic_pool(r, "prefill_")
        if (r.get("mode") or "").strip() == "disagg" and setup and times and lay == _aic_pool(r, "decode_"):
            pools.setdefault(setup, []).append((k + 2, (r.get("id") or "").strip(), lay, times))
    out = {}
    for k, r in enumerate(records):
        setup, times = _aic_setup(r), _times(r)
        if (r.get("mode") or "").strip() != "agg" or not setup or not times:
            continue
        uneven = heads is not None and not _divides(r.get("tp_size"), heads(r))
        for line, rid, lay, (ttft, tpot) in pools.get(setup, []):
            close = all(abs(a - b) <= TWIN_TOLERANCE * max(a, b) for a, b in zip(times, (ttft, tpot), strict=True))
            if lay == _aic_pool(r) and (close or uneven):
                out[k] = (line, rid, close)
                if close:
                    break
    return out


def _divides(tp: str | None, heads: int | None) -> bool:
    """Whether a row's ``tp_size`` divides ``heads`` (True where either is unknown: nothing is inferred)."""
    try:
        n = int((tp or "").strip())
    except ValueError:
        return True
    return heads is None or n < 1 or heads % n == 0
