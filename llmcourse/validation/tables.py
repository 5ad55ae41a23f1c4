"""The chapter's tables: the evidence's errors and fitted parameters, families side by side, and what a change
of method does, as rows of text and as Markdown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llmcourse.assumptions import MEANING, Assumptions, resolve
from llmcourse.bands import METRIC_NAMES, MIN_BAND_ROWS, SETUP_ROWS, gpus_band, in_reading_order
from llmcourse.errors import InputError
from llmcourse.formulas import scalar
from llmcourse.validation.client import CLIENT_MODEL, CLIENT_MODELS
from llmcourse.validation.held_out import (
    FIT_OBJECTIVES,
    FIT_PARAMETERS,
    SUMMARY_HEAD,
    ClientAlternative,
    Coverage,
    Evidence,
    Summary,
    summarize,
)
from llmcourse.validation.prediction import config_key, predict

_request_time_s = scalar("closed_loop_request_time", "ttft", "answer_tokens", "time_per_token")


def _evidence_groups(ev: Evidence, facet: str, metric: str) -> list[str]:
    """The values of ``facet`` among the rows of ``metric``."""
    return sorted({f[facet] for f in ev.facets if f["metric"] == metric})


def held_out_table(ev: Evidence, metric: str) -> list[list[str]]:
    """One row per set of predictions (the assumptions' own, calibrated on every row, and each hold-out)
    of ``metric``: the :class:`Summary` cells and the worst group of at least :data:`MIN_BAND_ROWS` rows
    (by median factor: the group held out, or the model for the first two)."""
    out = []
    for which in ("predicted", "calibrated", *(f"held_out_{k}" for k in ev.held_out)):
        facet = which.removeprefix("held_out_") if which.startswith("held_out_") else "model"
        groups = []
        for g in _evidence_groups(ev, facet, metric):
            s = ev.summary(which, {"metric": metric, facet: g})
            if s.n >= MIN_BAND_ROWS:
                groups.append((s.median_factor, g, s.n))
        worst = max(groups) if groups else None
        cell = f"{facet} {worst[1]}: {worst[0]:.2f} ({worst[2]:,} rows)" if worst else "-"
        out.append([which.replace("_", " "), *ev.summary(which, {"metric": metric}).cells(), cell])
    return out


def held_out_markdown(ev: Evidence, metric: str) -> str:
    """:func:`held_out_table` as Markdown."""
    head = ["predictions", *SUMMARY_HEAD, f"worst group of {MIN_BAND_ROWS}+ rows (median factor)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in held_out_table(ev, metric)])


def parameters_table(ev: Evidence) -> list[list[str]]:
    """One row per parameter of :data:`FIT_PARAMETERS`: its meaning, the metric it is fitted on
    (:data:`FIT_OBJECTIVES`; "held" at the assumptions' value when none), the assumptions' value, the
    value fitted on every row, and the range of the values fitted with each model, GPU or engine held out."""

    out = []
    for p in FIT_PARAMETERS:
        on = ", ".join(f"`{m}`" for m in FIT_OBJECTIVES[p]) or "held"
        row = [f"`{p}`", MEANING[p], on, f"{getattr(ev.assumptions, p):g}", f"{ev.fitted[p]:g}"]
        for kind in ev.fold_fits:
            vals = [f[p] for f in ev.fold_fits[kind].values()]
            row.append(f"{min(vals):g} to {max(vals):g}" if min(vals) != max(vals) else f"{vals[0]:g}")
        out.append(row)
    return out


def parameters_markdown(ev: Evidence) -> str:
    """:func:`parameters_table` as Markdown."""
    head = ["parameter", "meaning", "fitted on", f"{ev.assumptions.name}'s", "fitted on all rows"]
    head += [f"fitted without each {k}" for k in ev.fold_fits]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in parameters_table(ev)])


def end_to_end(ev: Evidence, which: str = "predicted") -> Summary:
    """The :class:`Summary` of each request's end-to-end time (formula ``closed_loop_request_time``: the
    time to first token, then ``osl - 1`` times the time per output token), over the configurations
    measured in both metrics (rows whose ids differ only in the part after the last ``:``).

    Examples
    --------
    >>> from llmcourse.validation import evidence, silicon
    >>> stems = sorted({r.id.rsplit(":", 1)[0] for r in silicon().rows if r.model == "Llama-3.1-70B"})[:3]
    >>> rows = [r for r in silicon().rows if r.id.rsplit(":", 1)[0] in stems]
    >>> len(rows), end_to_end(evidence(rows, hold_out=())).n
    (6, 3)
    """
    preds = ev.predictions(which)
    by: dict[str, dict[str, tuple[float, float, int]]] = {}
    for row, p in zip(ev.rows, preds, strict=True):
        if row.metric in ("tpot_ms", "ttft_ms"):
            by.setdefault(row.id.rsplit(":", 1)[0], {})[row.metric] = (row.value, p, row.osl)
    pred, meas = [], []
    for pair in by.values():
        if len(pair) == 2:
            (mt, pt, osl), (mf, pf, _) = pair["tpot_ms"], pair["ttft_ms"]
            pred.append(_request_time_s(pf, osl, pt))
            meas.append(_request_time_s(mf, osl, mt))
    if not pred:
        raise InputError("no configuration is measured in both time to first token and time per output token.")
    return summarize(pred, meas)


def grid_markdown(ev: Evidence, metric: str, rows: str, cols: str, which: str = "predicted") -> str:
    """A Markdown table of one metric: the median measured / predicted of each family of two facets
    (``rows`` down, ``cols`` across), with its row count; a dash where no row was measured.

    Examples
    --------
    >>> from llmcourse.validation import evidence, silicon
    >>> stems = sorted({r.id.rsplit(":", 1)[0] for r in silicon().rows if r.model == "Llama-3.1-70B"})[:3]
    >>> ev = evidence([r for r in silicon().rows if r.id.rsplit(":", 1)[0] in stems], hold_out=())
    >>> print(grid_markdown(ev, "tpot_ms", "engine", "concurrency_band").splitlines()[0])
    | engine \\ concurrency_band | 65-256 |
    """
    down = in_reading_order(rows, {f[rows] for f in ev.facets if f["metric"] == metric})
    across = in_reading_order(cols, {f[cols] for f in ev.facets if f["metric"] == metric})
    lines = [f"| {rows} \\ {cols} | " + " | ".join(across) + " |", "|" + "---|" * (len(across) + 1)]
    for d in down:
        cells = []
        for c in across:
            fam = {"metric": metric, rows: d, cols: c}
            cells.append(
                f"{ev.summary(which, fam).median_ratio:.2f} ({len(ev.indices(fam)):,})" if ev.indices(fam) else "-"
            )
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bands_markdown(table: dict[str, Any], *, models: bool = False) -> str:
    """The families of a table of bands (:func:`~llmcourse.validation.band_table`, :func:`~llmcourse.bands.shipped_bands`) as Markdown: the
    row count, the setups' (where the table counts them) and the 10th, 50th and 90th percentiles of measured /
    predicted; the families of kinds of model (metric, architecture, GPU generation), or with ``models`` those of
    each measured model."""
    lo, hi = table["percentiles"]
    setups = all("setups" in f for f in table["families"].values())
    # the percentiles of measured / predicted (the prose says so), short so that narrow columns do not break words
    head = ["family", "rows", *(["setups"] if setups else []), f"{lo}th", "median", f"{hi}th"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, f in table["families"].items():
        if ("/model=" in key) != models:
            continue
        name = " / ".join([METRIC_NAMES[key.split("/")[0]], *key.replace("model=", "").split("/")[1:]])
        counts = f"{f['n']:,} | {f['setups']}" if setups else f"{f['n']:,}"
        lines.append(f"| {name} | {counts} | {f['low']:.2f} | {f['median']:.2f} | {f['high']:.2f} |")
    return "\n".join(lines)


def compare_methods(
    ev: Evidence, other: Assumptions | str, *, metric: str = "tpot_ms", by: Sequence[str] = ("gpus", "engine")
) -> list[list[str]]:
    """A table of the error of ``ev``'s predictions beside those of ``other`` assumptions, over the
    rows of ``metric``, overall and by family (``"gpus"``: the replica's GPU count, see
    :func:`gpus_band`; or any of :data:`~llmcourse.validation.FACETS`): rows of [family, value, rows, median factor and
    share within 2x under ``other``, then under ``ev``'s assumptions]. Each configuration is
    predicted once under ``other`` (rows that share one share the replica model's call)."""
    b = resolve(other)
    idx = [i for i, r in enumerate(ev.rows) if r.metric == metric]
    if not idx:
        raise InputError(f"no rows of {metric!r} to compare.")
    cache: dict[tuple, float] = {}
    before: dict[int, float] = {}
    for i in idx:
        row = ev.rows[i]
        key = config_key(row)
        if key not in cache:
            cache[key] = predict(row, assumptions=b).value
        before[i] = cache[key]

    def fam(i: int, facet: str) -> str:
        return gpus_band(ev.rows[i].n_gpus) if facet == "gpus" else ev.facets[i][facet]

    def cells(group: list[int]) -> list[str]:
        old = summarize([before[i] for i in group], [ev.rows[i].value for i in group])
        new = summarize([ev.predicted[i] for i in group], [ev.rows[i].value for i in group])
        return [
            f"{len(group):,}",
            f"{old.median_factor:.2f}",
            f"{old.within_2x:.0%}",
            f"{new.median_factor:.2f}",
            f"{new.within_2x:.0%}",
        ]

    out = [["all", "", *cells(idx)]]
    for facet in by:
        for value in sorted({fam(i, facet) for i in idx}, key=lambda v: (len(v), v)):
            out.append([facet, value, *cells([i for i in idx if fam(i, facet) == value])])
    return out


#: Fewest rows of a metric a (model, GPU, engine) group needs to be listed on its own in :func:`groups_table` (the
#: rows at which a setup counts in full in the bands).
MIN_GROUP_ROWS = SETUP_ROWS


def groups_table(ev: Evidence, metric: str, min_rows: int = MIN_GROUP_ROWS) -> list[list[str]]:
    """One row per (model, GPU, engine) group with at least ``min_rows`` rows of ``metric``, worst first:
    the group, its rows, its median measured / predicted and its median factor, each row predicted with the
    parameters fitted without its group (``held_out_group``)."""
    out = []
    for g in _evidence_groups(ev, "group", metric):
        s = ev.summary("held_out_group", {"metric": metric, "group": g})
        if s.n >= min_rows:
            out.append((s.median_factor, [g, f"{s.n:,}", f"{s.median_ratio:.2f}", f"{s.median_factor:.2f}"]))
    return [r for _, r in sorted(out, key=lambda x: -x[0])]


def groups_markdown(ev: Evidence, metric: str, min_rows: int = MIN_GROUP_ROWS) -> str:
    """:func:`groups_table` as Markdown."""
    head = ["model / GPU / engine", "rows", "median measured/predicted", "median factor"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in groups_table(ev, metric, min_rows)])


def coverage_table(cov: dict[str, Coverage], min_rows: int = MIN_GROUP_ROWS) -> list[list[str]]:
    """One row per metric: the held-out rows, the share inside their 80% band pooled over the folds, and the
    spread of the folds' shares (least, quartiles, most, over the folds of at least ``min_rows`` rows)."""
    out = []
    for m, c in cov.items():
        lo, q1, med, q3, hi = c.spread(min_rows)
        n_folds = len(c.fold_shares(min_rows))
        out.append(
            [
                METRIC_NAMES[m],
                f"{c.rows:,}",
                f"{c.share:.0%}",
                f"{n_folds} of {len(c.folds)}",
                f"{q1:.0%} / {med:.0%} / {q3:.0%}",
                f"{lo:.0%} to {hi:.0%}",
            ]
        )
    return out


def coverage_markdown(cov: dict[str, Coverage], min_rows: int = MIN_GROUP_ROWS) -> str:
    """:func:`coverage_table` as Markdown."""
    head = [
        "metric", "held-out rows", "inside the 80% band", f"folds of {min_rows}+ rows",
        "by fold: 25th / median / 75th", "least to most",
    ]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in coverage_table(cov, min_rows)])


def client_markdown(alts: Sequence[ClientAlternative]) -> str:
    """The client models side by side (:func:`~llmcourse.validation.client_alternatives`): what each says, the
    time to first token's held-out median measured / predicted and median factor, and its band's coverage; the
    course's (:data:`~llmcourse.validation.client.CLIENT_MODEL`) marked."""
    head = ["client model", "what it says", "median measured/predicted", "median factor", "inside the 80% band"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for a in alts:
        name = f"**{a.client}** (the course's)" if a.client == CLIENT_MODEL else a.client
        lines.append(
            f"| {name} | {CLIENT_MODELS[a.client]} | {a.summary.median_ratio:.2f} | {a.summary.median_factor:.2f} "
            f"| {a.coverage.share:.0%} |"
        )
    return "\n".join(lines)


def lean_summaries(ev: Evidence, subsets: dict[str, Sequence[int]], which: str = "predicted") -> dict[str, Summary]:
    """Named subsets of the evidence's rows (name -> row indices, of one metric each), each with the
    :class:`Summary` of ``which`` predictions over its rows, so a reader sees where the estimate leans one way (a
    median measured / predicted far from 1). An empty subset, or one that mixes metrics, is refused with its name.

    Examples
    --------
    >>> from llmcourse.validation import evidence, silicon
    >>> ev = evidence(silicon().rows[:8], hold_out=())
    >>> tpot = [i for i, f in enumerate(ev.facets) if f["metric"] == "tpot_ms"]
    >>> lean_summaries(ev, {"four rows": tpot})["four rows"].n
    4
    """
    preds, out = ev.predictions(which), {}
    for name, idx in subsets.items():
        if not idx:
            raise InputError(f"the subset {name!r} has no rows.")
        metrics = {ev.facets[i]["metric"] for i in idx}
        if len(metrics) != 1:
            raise InputError(f"the subset {name!r} mixes metrics ({', '.join(sorted(metrics))}): one per subset.")
        out[name] = summarize([preds[i] for i in idx], [ev.rows[i].value for i in idx])
    return out


def lean_table(ev: Evidence, subsets: dict[str, Sequence[int]], which: str = "predicted") -> list[list[str]]:
    """:func:`lean_summaries` as rows of text: the subset's name and its :class:`Summary` cells."""
    return [[name, *s.cells()] for name, s in lean_summaries(ev, subsets, which).items()]


def lean_markdown(ev: Evidence, subsets: dict[str, Sequence[int]], which: str = "predicted") -> str:
    """:func:`lean_table` as Markdown."""
    head = ["rows of", *SUMMARY_HEAD]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in lean_table(ev, subsets, which)])
