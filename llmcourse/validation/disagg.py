"""The measured disaggregated rows (aiconfigurator's silicon file), and the disaggregated model's prediction of
each: the check of :mod:`llmcourse.planner.disagg` on measurements (chapter *Disaggregated serving*)."""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import Link, gpus, models
from llmcourse.errors import InputError
from llmcourse.planner.disagg import kv_handoff, kv_lanes, need_fit, pool_link, rho_f, ttft_f, wait_f, wave_f
from llmcourse.replica import replica
from llmcourse.units import Q_, parsed_unit, to
from llmcourse.validation import cells as c
from llmcourse.validation import measured as v
from llmcourse.validation.client import CLIENT_MODEL, client_wave_share
from llmcourse.validation.copies import Copies, decimals, first_of

__all__ = ["DisaggRow", "RowPrediction", "measured_factors", "measured_rows", "predict_row"]

_MS, _S = (parsed_unit(u)[0] for u in ("ms", "s"))


# --- the measured disaggregated rows ---------------------------------------------------------------
@dataclass(frozen=True)
class DisaggRow:
    """One disaggregated row of aiconfigurator's silicon file: ``concurrency`` requests in flight
    over ``prefill_workers`` prefill replicas and ``decode_workers`` decode replicas."""

    id: str
    model: str
    gpu: str
    engine: str
    weights: str
    kv: str
    isl: int
    osl: int
    concurrency: int
    prefill_workers: int
    prefill_tp: int
    prefill_dp: int
    prefill_ep: int
    prefill_batch: int
    decode_workers: int
    decode_tp: int
    decode_dp: int
    decode_ep: int
    decode_batch: int
    ttft_ms: float
    tpot_ms: float


_ROWS: tuple[tuple[DisaggRow, ...], tuple[tuple[str, str], ...]] | None = None


def measured_rows() -> tuple[tuple[DisaggRow, ...], tuple[tuple[str, str], ...]]:
    """The disaggregated rows of ``llmcourse/data/aiconfigurator-silicon.csv`` the catalog can
    express, and (id, reason) for the others (cached). Rows that do not give the pools' worker
    counts and batches are left out: the split of the load over the pools is then unknown.
    The columns are read by :mod:`llmcourse.validation.measured`'s cell readers (the same names, precisions
    and KV rule as its aggregated rows)."""
    global _ROWS
    if _ROWS is not None:
        return _ROWS

    rows, skipped = [], []
    seen = Copies()  # a row, its id and times blanked -> the first copy of its run (runs repeat)
    for line, r in enumerate(v.aiconfigurator_records(), start=2):
        if (r.get("mode") or "").strip() != "disagg":
            continue
        rid = r["id"]
        try:
            model, gpu = c.model_name(c.cell(r, "model_path")), c.gpu_name(c.cell(r, "system"))
            isl, osl = c.whole(r, "isl"), c.whole(r, "osl")
            c.context_gap(model, isl, osl)
            if not (r.get("prefill_num_workers") or "").strip() or not (r.get("decode_batch_size") or "").strip():
                raise c.RowError("the pools' worker counts and batches are not given")
            concurrency = v.silicon_concurrency(r)
            if concurrency is None:
                raise c.RowError("no silicon_concurrency in silicon_data_source")
            weights, _ = v.aic_weights(r, model)
            engine = c.cell(r, "backend").lower()
            kv = v.aic_kv(engine, weights)
            moe = models[model].is_moe
            side = {}
            for s in ("prefill", "decode"):
                ep = c.whole(r, f"{s}_moe_ep_size", 1) if moe else 1
                side[s] = dict(
                    workers=c.whole(r, f"{s}_num_workers"),
                    tp=c.whole(r, f"{s}_tp_size"),
                    dp=c.whole(r, f"{s}_attention_dp_size", 1),
                    ep=ep,
                    batch=c.whole(r, f"{s}_batch_size"),
                )
                if c.whole(r, f"{s}_pp_size", 1) > 1:
                    raise c.RowError(f"{s} pipeline parallelism is not expressed here")
            row = DisaggRow(
                id=rid, model=model, gpu=gpu, engine=v.engine_name(engine, r.get("backend_version") or ""),
                weights=weights, kv=kv, isl=isl, osl=osl, concurrency=concurrency,
                **{f"{s}_{k}": x for s, d in side.items() for k, x in d.items() if k != "workers"},
                prefill_workers=side["prefill"]["workers"], decode_workers=side["decode"]["workers"],
                ttft_ms=c.number(r, "silicon_ttft_ms"), tpot_ms=c.number(r, "silicon_tpot_ms"),
            )  # fmt: skip
            places = tuple(decimals(c.cell(r, k)) for k in ("silicon_ttft_ms", "silicon_tpot_ms"))
            setup = dataclasses.replace(row, id="", ttft_ms=0.0, tpot_ms=0.0)  # a run's copies agree to their digits
            first_of(seen, setup, (row.ttft_ms, row.tpot_ms), places, line, rid)
            rows.append(row)
        except (c.RowError, InputError) as exc:
            skipped.append((rid, str(exc)))
    _ROWS = (tuple(rows), tuple(skipped))
    return _ROWS


@dataclass(frozen=True)
class RowPrediction:
    """A measured row's predicted and measured times (ms), with the pieces of the prediction."""

    row: DisaggRow
    ttft_ms: float
    tpot_ms: float
    prefill_ms: float
    handoff_ms: float
    wait_ms: float
    wave_ms: float
    utilisation: float
    arrivals: str | None = None

    @property
    def ttft_factor(self) -> float:
        """Predicted over measured time to first token."""
        return self.ttft_ms / self.row.ttft_ms

    @property
    def tpot_factor(self) -> float:
        return self.tpot_ms / self.row.tpot_ms


def predict_row(
    row: DisaggRow,
    *,
    link: Link | str | None = None,
    arrivals: str | None = None,
    assumptions: Assumptions | str | None = None,
) -> RowPrediction:
    """Time to first token and time per token of a measured disaggregated row, through the replica
    model and the formulas of this module.

    Decode: each of the row's decode replicas runs its ``decode_batch`` per attention group; the
    time per token is that replica's step (no prefill charged). Prefill: each prefill replica takes
    ``prefill_batch`` prompts per attention group at once, so the pool is ``workers x batch x dp``
    servers of one pass's time. The benchmark is a closed loop of ``concurrency`` requests, so the
    arrival rate is the concurrency over a request's cycle (its time to first token, then
    ``osl - 1`` tokens): the time to first token is the fixed point of the ``disagg_ttft`` formula
    with the M/D/c wait at that rate, found by bisection (the wait grows without end as the
    prefill pool fills, so the root is bracketed). The clients follow the one closed-loop client model
    (:func:`llmcourse.validation.client.client_wave_share`, ``arrivals=None``, the default): the benchmark starts
    its clients together and they come back in waves; a prefill pool runs its prefills on their own, so the wave
    stays whole (share 1) and the wait is at least that of a wave of ``concurrency`` prompts arriving together
    (formula ``wave_wait``) times the share. ``arrivals="waves"`` takes the whole wave whatever the client model,
    ``arrivals="poisson"`` keeps the M/D/c wait alone (clients spread out).

    Examples
    --------
    >>> rows, _ = measured_rows()
    >>> p = predict_row(rows[0])
    >>> p.ttft_ms > p.prefill_ms > 0 and p.tpot_ms > 0
    True
    """
    if arrivals not in (None, "waves", "poisson"):
        raise InputError(
            f"arrivals={arrivals!r}: use None (the client model), 'waves' (a closed loop in step) or 'poisson'."
        )
    a = resolve(assumptions)
    m, g = models[row.model], gpus[row.gpu]
    lk = pool_link(g, link)
    common = dict(prompt_tokens=row.isl, answer_tokens=row.osl, weight_bytes=row.weights, kv_bytes=row.kv)
    k = row.prefill_batch * row.prefill_dp
    pre = replica(
        m, g, tensor_parallel=row.prefill_tp, data_parallel=row.prefill_dp,
        expert_parallel=row.prefill_ep if row.prefill_ep > 1 else None, batch=k, assumptions=a, **common,
    )  # fmt: skip
    need_fit(pre, "prefill", "the row's prefill layout")
    a_dec = a.replace(count_prefill=False, prefill_interference=False)
    dec = replica(
        m, g, tensor_parallel=row.decode_tp, data_parallel=row.decode_dp,
        expert_parallel=row.decode_ep if row.decode_ep > 1 else None,
        batch=row.decode_batch * row.decode_dp, assumptions=a_dec, **common,
    )  # fmt: skip
    need_fit(dec, "decode", "the row's decode layout")
    t_pass = float(to(pre.batch_prefill.time, _S).m)
    tpot = float(to(dec.tpot, _S).m)
    handoff = to(kv_handoff(m, row.isl, link=lk, kv_lanes=kv_lanes(pre, dec), kv_bytes=row.kv, assumptions=a), _S)
    over_s = float(to(Q_(a.request_overhead_ms, _MS), _S).m)

    def ttft_at(wait: float) -> float:
        return ttft_f(over_s, wait, t_pass, float(handoff.m))

    c, n = row.prefill_workers * k, row.concurrency
    rest = (row.osl - 1) * tpot  # the cycle after the first token
    client = {None: CLIENT_MODEL, "waves": "lockstep", "poisson": "spread"}[arrivals]
    share = client_wave_share(True, a.closed_loop_wave_share, client)  # a prefill pool prefills on its own
    wave = share * wave_f(n, c, t_pass) if n > c else 0.0

    def wait(ttft: float) -> float:
        rho = rho_f(n / (ttft + rest), t_pass, c)
        return math.inf if rho >= 1 else max(wave, wait_f(rho, c, t_pass))

    lo = ttft_at(0.0)
    hi = lo + 2 * n * t_pass / c  # there the pool is at most half busy, and the wait is below t_pass / c
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ttft_at(wait(mid)) > mid else (lo, mid)
    ttft = hi
    w = wait(ttft)
    return RowPrediction(
        row=row,
        ttft_ms=ttft * 1e3,
        tpot_ms=tpot * 1e3,
        prefill_ms=t_pass * 1e3,
        handoff_ms=float(handoff.m) * 1e3,
        wait_ms=w * 1e3,
        wave_ms=wave * 1e3,
        utilisation=rho_f(n / (ttft + rest), t_pass, c),
        arrivals=arrivals,
    )


def _within_2x(factors: Sequence[float]) -> float:
    return sum(1 for f in factors if 0.5 <= f <= 2) / len(factors)


def measured_factors(
    rows: Sequence[DisaggRow] | None = None,
    *,
    arrivals: str | None = None,
    assumptions: Assumptions | str | None = None,
) -> list[tuple[str, int, float, float, float, float]]:
    """By GPU, then all rows: (GPU, rows, median predicted/measured time to first token, share of
    those within 2x, the same two for the time per token). Rows whose layout does not fit are left
    out (:func:`measured_rows` gives the rest).

    Examples
    --------
    >>> table = measured_factors()
    >>> table[-1][0], table[-1][1] > 100
    ('all', True)
    """
    rows = measured_rows()[0] if rows is None else rows
    preds = []
    for r in rows:
        try:
            preds.append(predict_row(r, arrivals=arrivals, assumptions=assumptions))
        except InputError:
            continue
    out = []
    by_gpu: dict[str, list[RowPrediction]] = {}
    for p in preds:
        by_gpu.setdefault(p.row.gpu, []).append(p)
    for name, ps in [*sorted(by_gpu.items()), ("all", preds)]:
        ft, fp = [p.ttft_factor for p in ps], [p.tpot_factor for p in ps]
        out.append(
            (name, len(ps), statistics.median(ft), _within_2x(ft), statistics.median(fp), _within_2x(fp))
        )  # fmt: skip
    return out
