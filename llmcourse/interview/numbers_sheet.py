"""The sheet of numbers of the chapter *Numbers to know by heart* (``book/13_cheat_sheet.md``).

:func:`sheet` computes every number of the one-page sheet from the catalog and the formulas, and
:func:`sheet_tables` writes its tables as Markdown.

Examples
--------
>>> s = sheet()
>>> [row[0] for row in s["gpu_rows"]] == list(SHEET_GPUS)
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import bytes_per_value, gpus, models
from llmcourse.formulas import FORMULAS as F
from llmcourse.interview.figures import ENVELOPE, pct, per_s, read_time, seed004_model
from llmcourse.interview.templates import num
from llmcourse.planner.roofline import decode_flops_per_token, ridge_intensity, weight_read_ceiling
from llmcourse.replica.memory import kv_bytes_per_sequence, kv_bytes_per_token, usable_memory, weight_bytes
from llmcourse.replica.model import cost_per_million
from llmcourse.units import HOURS_PER_MONTH, Q_

__all__ = ["SHEET_GPUS", "SHEET_MODELS", "SHEET_PRECISIONS", "sheet", "sheet_tables"]

#: The weights table's rows: a precision (a catalog name, or a per-group mapping) and its label. Bare INT4 is 4 bits
#: with no scales; a 4-bit checkpoint as shipped stores scales too (AWQ: one 16-bit scale and zero per 128 weights)
#: and keeps its embeddings and output layer in 16 bits, and llama.cpp's Q4_K_M mixes 4- and 6-bit blocks.
SHEET_PRECISIONS: tuple[tuple[Any, str], ...] = (
    ("bf16", "BF16"),
    ("fp8", "FP8"),
    ("int4", "INT4, bare (no scales)"),
    ({"embeddings": "bf16", "unembedding": "bf16", "other": "awq"}, "4-bit as shipped: AWQ, 16-bit embeddings"),
    ("q4_k_m", "4-bit as shipped: GGUF Q4_K_M"),
)

#: Models whose KV per token the sheet lists, and GPUs whose datasheet figures it lists.
SHEET_MODELS = (
    "Llama-3.1-8B",
    "Qwen2.5-7B",
    "Llama-3.1-70B",
    "Qwen2.5-72B",
    "Llama-3.1-405B",
    "Mixtral-8x7B",
    "Qwen3-235B-A22B",
    "DeepSeek-V3",
)
SHEET_GPUS = ("H100 SXM", "H200 SXM", "B200")


def sheet(assumptions: Assumptions | str | None = None) -> dict[str, Any]:
    """Every number of the one-page sheet, computed from the catalog and the formulas.

    Speeds are given twice: at the datasheet bandwidth (the back-of-the-envelope method's ceiling,
    the figure the sources quote) and under ``assumptions`` (the course's method by default).
    Returns a dict of named quantities and counts plus the rows of its tables (``"kv_rows"``,
    ``"gpu_rows"``, ``"weight_rows"``).

    Examples
    --------
    >>> s = sheet()
    >>> round(s["h100_step"].to("ms").m, 2), round(s["h100_step_course"].to("ms").m, 1)
    (21.49, 30.7)
    """
    a, peak = resolve(assumptions), resolve(ENVELOPE)
    out: dict[str, Any] = {"bw_pct": pct(a.bandwidth_efficiency), "fl_pct": pct(a.compute_efficiency)}
    out["kv_rows"] = [
        (
            name,
            models[name].attention,
            kv_bytes_per_token(name).to("KiB"),
            kv_bytes_per_sequence(name, 4_096).to("GB"),
            kv_bytes_per_sequence(name, 131_072).to("GB"),
        )
        for name in SHEET_MODELS
    ]
    out["gpu_rows"] = []
    for name in SHEET_GPUS:
        g = gpus[name]
        step = read_time(usable_memory(g, assumptions=peak), g, assumptions=peak)
        step_a = read_time(usable_memory(g, assumptions=a), g, assumptions=a)
        out["gpu_rows"].append(
            (
                name,
                g.memory,
                g.bandwidth.to("TB/s"),
                g.flops.to("TFLOP/s"),
                g.peak_flops("fp8").to("TFLOP/s"),
                step,
                per_s(step),
                g.price_per_hour,
                step_a,
                per_s(step_a),
            )
        )
    h100 = gpus["H100 SXM"]
    out["h100_usable"] = usable_memory(h100, assumptions=peak).to("GB")
    out["h100_step"] = read_time(out["h100_usable"], h100, assumptions=peak)
    out["h100_step_rate"] = per_s(out["h100_step"])
    out["h100_step_course"] = read_time(usable_memory(h100, assumptions=a), h100, assumptions=a)
    out["h100_step_course_rate"] = per_s(out["h100_step_course"])
    datasheet = resolve().replace(bandwidth_efficiency=1.0, compute_efficiency=1.0)  # the datasheet's peaks
    out["ridge"] = ridge_intensity(h100, assumptions=datasheet)
    out["ridge_course"] = ridge_intensity(h100, assumptions=a)
    out["weight_rows"] = [_weight_row(p, label) for p, label in SHEET_PRECISIONS]
    m70 = seed004_model()  # a round 70 billion parameters
    out["fpp"] = a.flops_per_param
    out["flops_70b"] = decode_flops_per_token(m70, 1, attention_flops=False, assumptions=a)
    out["prefill_70b_2k"] = F["prefill_flops_linear"](
        flops_per_param=Q_(a.flops_per_param, "FLOP"), params=m70.active_params, prompt_tokens=2_000
    ).to("PFLOP")
    out["kv_8b"] = kv_bytes_per_token("Llama-3.1-8B").to("KiB")
    out["kv_70b"] = kv_bytes_per_token("Llama-3.1-70B").to("KiB")
    for key, model, n in (("w70_read", "Llama-3.1-70B", 2), ("w8_read", "Llama-3.1-8B", 1)):
        out[key] = weight_read_ceiling(model, h100, n_gpus=n, assumptions=peak).step_time
        out[f"{key}_course"] = weight_read_ceiling(model, h100, n_gpus=n, assumptions=a).step_time
    ll = F["littles_law"](request_rate=Q_(10, "1/s"), time_in_system=Q_(15, "s"))
    out["little_example"] = float(ll.m)
    out["cost_example"] = cost_per_million(h100.price_per_hour, Q_(1_000, "1/s"))
    out["cost_example_price"] = h100.price_per_hour
    out["day_rate"] = float(Q_(1_000_000, "1/day").to("1/s").m)
    out["month_hours"] = HOURS_PER_MONTH
    out["month_cost"] = F["fleet_cost"](gpus=1, price=h100.price_per_hour, hours=out["month_hours"]).to("USD")
    return out


def _weight_row(p: Any, label: str) -> tuple[Any, ...]:
    """A weights table row: the precision's key (its name, or its label for a per-group mapping), its bytes per
    weight (a mapping's: the 70B model's bytes over its parameters), the three Llama 3.1 sizes, and its label."""
    sizes = [weight_bytes(m, p).to("GB") for m in ("Llama-3.1-8B", "Llama-3.1-70B", "Llama-3.1-405B")]
    per = Q_(bytes_per_value(p), "B") if isinstance(p, str) else (sizes[1] / models["Llama-3.1-70B"].params).to("B")
    return (p if isinstance(p, str) else label, per, *sizes, label)


def sheet_tables(values: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The sheet's tables as Markdown: ``"gpus"``, ``"kv"`` and ``"weights"``.

    Examples
    --------
    >>> sheet_tables()["kv"].splitlines()[0]
    '| model | attention | KV per token (BF16) | one 4,096-token sequence | one 131,072-token sequence |'
    """
    s = sheet() if values is None else values
    pct = f"{num(s['bw_pct'])}%"
    gpu = [
        f"| GPU | memory | bandwidth | BF16 | FP8 | full-memory step (at {pct} / datasheet ceiling) "
        f"| tok/s per user, full (at {pct} / datasheet ceiling) | price (assumed) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    gpu += [
        f"| {n} | {num(m)} | {num(b)} | {num(f, 4)} | {num(f8, 4)} | {num(ta)} / {num(t)} | {num(ra, 2)} / {num(r, 2)} "
        f"| {p.m:.2f} USD/h |"
        for n, m, b, f, f8, t, r, p, ta, ra in s["gpu_rows"]
    ]
    kv = [
        "| model | attention | KV per token (BF16) | one 4,096-token sequence | one 131,072-token sequence |",
        "|---|---|---|---|---|",
    ]
    beyond = [n for n, *_ in s["kv_rows"] if models[n].max_position < 131_072]
    kv += [
        f"| {n} | {a} | {num(k)} | {num(k4)} | {num(k128)}{' (beyond its native context)' if n in beyond else ''} |"
        for n, a, k, k4, k128 in s["kv_rows"]
    ]
    wt = ["| precision | bytes per weight | Llama 3.1 8B | Llama 3.1 70B | Llama 3.1 405B |", "|---|---|---|---|---|"]
    wt += [
        f"| {lab} | {num(b, 3)}{' (70B)' if key == lab else ''} | {num(a)} | {num(c)} | {num(d)} |"
        for key, b, a, c, d, lab in s["weight_rows"]
    ]
    return {"gpus": "\n".join(gpu), "kv": "\n".join(kv), "weights": "\n".join(wt)}
