"""The calculator of the chapter *Many GPUs* (``book/08c_many_gpus.md``).

Model, GPU, link, tensor-parallel degree (and expert-parallel degree for a mixture of experts),
precision, concurrency and request lengths -> the time per output token split into what it is
spent on (weight reads, KV reads, compute, communication, overhead, the other requests' prefills),
from :func:`llmcourse.replica.replica` and :func:`llmcourse.replica.parallel.time_per_token_parts`, with a
stacked bar of the same split on 1, 2, 4 and 8 GPUs. The bar is plain SVG text, so it draws the same
in the book's snapshot and in the live (Pyodide) calculator, which has no matplotlib.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import ipywidgets as w

from llmcourse.arith import ratio, total
from llmcourse.assumptions import resolve
from llmcourse.catalog import links, models
from llmcourse.errors import InputError
from llmcourse.formulas import SYMBOLS, check_value
from llmcourse.replica.memory import kv_copies
from llmcourse.replica.model import Replica, ReplicaSetup, replica, replica_setup
from llmcourse.replica.parallel import allreduce_latency, time_per_token_parts
from llmcourse.units import fmt, parsed_unit, quantity, to
from llmcourse.widgets import (
    Calculator,
    gpu_dropdown,
    int_box,
    int_slider,
    model_dropdown,
    precision_dropdown,
    preset_dropdown,
)
from llmcourse.widgets.weights import ticks

__all__ = [
    "PARTS",
    "ManyGpus",
    "allreduce_latency",
    "expert_load_imbalance",
    "free_split",
    "many_gpus",
    "many_gpus_calculator",
    "parts_against_n",
    "parts_bar_svg",
]

#: The parts of a time per token, in the order they stack, with their colours.
PARTS = {
    "weight reads": "#1f77b4",
    "KV reads": "#2ca02c",
    "compute": "#ff7f0e",
    "communication": "#d62728",
    "layer floors": "#bcbd22",
    "overhead": "#7f7f7f",
    "shared prefill": "#9467bd",
}
#: The tensor-parallel degrees the bar compares.
DEGREES = (1, 2, 4, 8)
_OWN = "the GPU's own"
_MS = parsed_unit("ms")[0]


def free_split(assumptions: Any = None) -> Any:
    """The assumptions with the GPUs talking for free, no fixed cost per step and no floor per layer: what a
    roofline that splits the model N ways for nothing predicts (the sources' methods do this).

    Examples
    --------
    >>> a = free_split()
    >>> a.communication, a.step_overhead_ms, a.layer_floor_us, a.bandwidth_efficiency == resolve().bandwidth_efficiency
    (False, 0.0, 0.0, True)
    """
    a = resolve(assumptions)
    got = _FREE.get(id(a))
    if got is not None and got[0] is a:
        return got[1]
    free = a.replace(communication=False, step_overhead_ms=0.0, layer_floor_us=0.0)
    if len(_FREE) < 256:  # the presets and a few of a reader's own
        _FREE[id(a)] = (a, free)
    return free


#: free_split's answer for each assumptions object, by its id (the object kept beside, to check): the same copy,
#: made (and checked, and named) once.
_FREE: dict[int, tuple[Any, Any]] = {}


def _shape(model: str, n: int, ep: int, link: str | None) -> dict[str, Any]:
    shape: dict[str, Any] = dict(tensor_parallel=n, link=link or None)
    if models[model].is_moe and ep > 1:
        shape["expert_parallel"] = min(ep, n)
    return shape


def _replica(model: str, gpu: str, n: int, ep: int, link: str | None, **kw: Any) -> Replica:
    return replica(model, gpu, **_shape(model, n, ep, link), **kw)


def _free_tpot(model: str, gpu: str, n: int, ep: int, link: str | None, batch: int, **kw: Any) -> Any:
    """``_replica(model, gpu, n, ep, link, batch=batch, **kw).tpot`` (a replica that fits), by replica()'s own
    path: its time per token alone, without building the replica's step and prefills."""
    at = replica_setup(model, gpu, **_shape(model, n, ep, link), **kw)
    if not isinstance(at, ReplicaSetup) or at.unfit is not None:  # a speculative replica, or one that cannot serve
        return at(batch).tpot
    return quantity(at.tpot_ms(check_value(batch, SYMBOLS["batch"], "batch")), _MS)


def expert_load_imbalance(pick_probabilities: Sequence[float], expert_parallel: int) -> float:
    """How much more work the busiest GPU gets than the average one when the experts are split over
    ``expert_parallel`` GPUs in order (experts 0 .. E/N - 1 on the first, and so on) and a token picks
    expert i with probability ``pick_probabilities[i]`` (the MoE chapter's skewed routing,
    :func:`llmcourse.planner.moe.hot_cold_pick_probabilities`): a GPU's expected tokens are the sum of its
    experts' probabilities, and every all-to-all waits for the busiest GPU. 1 with uniform routing.

    Examples
    --------
    >>> from llmcourse.planner.moe import hot_cold_pick_probabilities
    >>> expert_load_imbalance([8 / 256] * 256, 8)
    1.0
    >>> round(expert_load_imbalance(hot_cold_pick_probabilities(256, 8, hot=16, hot_share=0.5), 8), 2)
    4.27
    """
    p = [float(x) for x in pick_probabilities]
    n = int(expert_parallel)
    if n < 1 or len(p) % n:
        raise InputError(f"expert_parallel={expert_parallel} must divide the {len(p)} experts.")
    per = len(p) // n
    loads = [sum(p[i * per : (i + 1) * per]) for i in range(n)]
    return max(loads) / (sum(loads) / n)


def parts_against_n(
    model: str,
    gpu: str,
    *,
    degrees: Sequence[int] = DEGREES,
    expert_parallel: int = 1,
    link: str | None = None,
    **kw: Any,
) -> list[tuple[int, dict[str, Any] | None, str]]:
    """(GPUs, the parts of the time per token or None, why not) for each tensor-parallel degree:
    the same replica as :func:`llmcourse.replica.replica` with ``**kw`` (batch, lengths,
    precision, assumptions), the experts of a MoE model split ``min(expert_parallel, N)`` ways.

    Examples
    --------
    >>> rows = parts_against_n("Llama-3.1-70B", "H100 SXM", batch=4, prompt_tokens=1_024, answer_tokens=8_192,
    ...                        weight_bytes="fp8")
    >>> [(n, None if p is None else round(sum(p.values()).to("ms").m, 1)) for n, p, _ in rows]
    [(1, None), (2, 20.1), (4, 11.9), (8, 7.9)]
    """
    return _parts_against_n(model, gpu, degrees, expert_parallel, link, {}, kw)


def _parts_against_n(
    model: str,
    gpu: str,
    degrees: Sequence[int],
    expert_parallel: int,
    link: str | None,
    known: dict[int, Replica],
    kw: dict[str, Any],
) -> list[tuple[int, dict[str, Any] | None, str]]:
    """:func:`parts_against_n`, with the replicas of ``known`` degrees already worked out by the caller (the
    same :func:`_replica` call: :func:`many_gpus`'s own replica is one of the bars)."""
    out: list[tuple[int, dict[str, Any] | None, str]] = []
    for n in degrees:
        try:
            rep = known[n] if n in known else _replica(model, gpu, n, expert_parallel, link, **kw)
        except InputError as exc:
            out.append((n, None, str(exc)))
            continue
        if not rep.fits:
            out.append((n, None, rep.reason))
            continue
        out.append((n, time_per_token_parts(rep), "fits"))
    return out


def parts_bar_svg(
    bars: Sequence[tuple[int, dict[str, Any] | None, str]],
    title: str = "",
    width: int = 640,
    highlight: int | None = None,
) -> str:
    """The time per token on each number of GPUs as a stacked bar (one bar per degree, the parts in
    the order of :data:`PARTS`), y axis in ms; a degree that does not fit shows why, briefly.

    Examples
    --------
    >>> bars = parts_against_n("Llama-3.1-8B", "H100 SXM", batch=1, prompt_tokens=1_000, answer_tokens=200)
    >>> svg = parts_bar_svg(bars, "Llama-3.1-8B")
    >>> svg.startswith("<svg") and svg.count('data-part="communication"') == 3
    True
    """
    height, left, right, top, bottom = 300, 52, 150, 30, 44
    plot_h, plot_w = height - top - bottom, width - left - right
    totals = [to(total(p.values()), "ms").m for _, p, _ in bars if p is not None]
    y_max = max(totals, default=1.0) * 1.12 or 1.0
    y = lambda ms: top + plot_h * (1 - ms / y_max)  # noqa: E731
    slot = plot_w / max(len(bars), 1)
    bar_w = slot * 0.55
    label = html.escape(title)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="llmcourse-parts-bar" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{label}" font-family="sans-serif">',
        f'<text x="{left + plot_w / 2:.1f}" y="16" text-anchor="middle" font-size="13">{label}</text>',
        f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="#555"/>',
        f'<line x1="{left}" x2="{left + plot_w}" y1="{top + plot_h}" y2="{top + plot_h}" stroke="#555"/>',
    ]
    for t in ticks(y_max):
        out.append(f'<line x1="{left - 4}" x2="{left}" y1="{y(t):.2f}" y2="{y(t):.2f}" stroke="#555"/>')
        out.append(f'<text x="{left - 7}" y="{y(t) + 3.5:.2f}" text-anchor="end" font-size="10">{t:,.4g}</text>')
    out.append(
        f'<text transform="translate(14 {top + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle" font-size="11">'
        "time per output token (ms)</text>"
    )
    for i, (n, parts, why) in enumerate(bars):
        cx = left + slot * (i + 0.5)
        x0 = cx - bar_w / 2
        weight = ' font-weight="bold"' if n == highlight else ""
        out.append(
            f'<text x="{cx:.1f}" y="{top + plot_h + 15}" text-anchor="middle" font-size="11"{weight}>{n} GPU'
            f"{'s' if n > 1 else ''}</text>"
        )
        if parts is None:
            short = html.escape(why.split(":")[0] if "don't fit" not in why else "weights don't fit")
            out.append(
                f'<text x="{cx:.1f}" y="{top + plot_h - 8}" text-anchor="middle" font-size="9" fill="#b00">'
                f"{short[:28]}<title>{html.escape(why)}</title></text>"
            )
            continue
        base = 0.0
        for name, colour in PARTS.items():
            ms = to(parts[name], "ms").m
            if ms <= 0:
                continue
            out.append(
                f'<rect data-part="{name.replace(" ", "-")}" x="{x0:.2f}" y="{y(base + ms):.2f}" width="{bar_w:.2f}" '
                f'height="{y(base) - y(base + ms):.2f}" fill="{colour}"><title>{n} GPUs, {name}: {ms:,.3g} ms'
                "</title></rect>"
            )
            base += ms
        out.append(
            f'<text x="{cx:.1f}" y="{y(base) - 4:.2f}" text-anchor="middle" font-size="10"{weight}>{base:,.3g} ms</text>'
        )
    out.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" text-anchor="middle" font-size="11">'
        "tensor-parallel degree (GPUs in the replica)</text>"
    )
    ly = top + 6
    for name, colour in reversed(PARTS.items()):
        out.append(f'<rect x="{left + plot_w + 14}" y="{ly}" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{left + plot_w + 28}" y="{ly + 9}" font-size="11">{html.escape(name)}</text>')
        ly += 17
    out.append("</svg>")
    return "".join(out)


@dataclass(frozen=True)
class ManyGpus:
    """The calculator's result: the replica, its time per token split into parts, the same at
    each degree of :data:`DEGREES`, and the time per token with the GPUs talking for free."""

    model: str
    gpu: str
    replica: Replica
    parts: dict[str, Any]
    free: Any
    bars: list[tuple[int, dict[str, Any] | None, str]] = field(repr=False)

    def rows(self) -> list[tuple[str, str]]:
        r, lay = self.replica, self.replica.layout
        lk = lay.link
        tpot = to(r.tpot, "ms")
        shape = f"{r.n_gpus} x {self.gpu}, tensor parallel {lay.tensor_parallel}"
        if models[self.model].is_moe:
            shape += f", experts split {lay.expert_parallel} ways (expert parallel)"
        link = f"{lk.name}: {fmt(lk.bandwidth, 'GB/s')} per GPU, alpha {fmt(lk.latency, 'us')}, t0 {fmt(lk.base, 'us')}"
        if lay.note:
            link += f" ({lay.note})"
        out = [("replica", shape), ("link", link), ("time per output token", fmt(tpot, "ms"))]
        for name in PARTS:
            q = to(self.parts[name], "ms")
            out.append((f"of which {name}", f"{fmt(q, 'ms')} ({ratio(q, tpot):.0%})"))
        if lay.tensor_parallel > 1:
            out.append(("one all-reduce of the step", fmt(allreduce_latency(self.model, r), "us")))
        out += [
            ("KV copies per sequence", f"{kv_copies(self.model, lay.tensor_parallel, r.assumptions):g}"),
            ("tokens per second per user", f"{r.tokens_per_s_per_user.m:,.1f}"),
            ("output tokens per second, replica", f"{r.throughput.m:,.0f} ({r.throughput.m / r.n_gpus:,.0f} per GPU)"),
            ("GPUs talking for free, no overhead", fmt(self.free, "ms")),
        ]
        return out


def many_gpus(
    model: str,
    gpu: str,
    *,
    tensor_parallel: int,
    expert_parallel: int = 1,
    link: str | None = None,
    batch: int,
    prompt_tokens: float,
    answer_tokens: float,
    weight_bytes: Any = "fp8",
    assumptions: Any = None,
) -> ManyGpus:
    """The calculator's figures for one replica (see :class:`ManyGpus`); a replica that does not
    fit raises :class:`~llmcourse.errors.InputError` with the planner's reason.

    Examples
    --------
    >>> res = many_gpus("Llama-3.1-70B", "B200", tensor_parallel=8, batch=4, prompt_tokens=1_024,
    ...                 answer_tokens=8_192)
    >>> dict(res.rows())["time per output token"], dict(res.rows())["GPUs talking for free, no overhead"]
    ('5.50 ms', '1.79 ms')
    """
    kw = dict(batch=batch, prompt_tokens=prompt_tokens, answer_tokens=answer_tokens, weight_bytes=weight_bytes)
    a = resolve(assumptions)
    rep = _replica(model, gpu, tensor_parallel, expert_parallel, link, assumptions=a, **kw)
    if not rep.fits:
        raise InputError(rep.reason)
    rest = {k: v for k, v in kw.items() if k != "batch"}
    free = _free_tpot(model, gpu, tensor_parallel, expert_parallel, link, batch, assumptions=free_split(a), **rest)
    # parts_against_n(model, gpu, expert_parallel=expert_parallel, link=link, assumptions=a, **kw), whose bar at
    # this replica's degree is this replica (the same call)
    bars = _parts_against_n(model, gpu, DEGREES, expert_parallel, link, {tensor_parallel: rep}, dict(kw, assumptions=a))
    return ManyGpus(models[model].name, gpu, rep, time_per_token_parts(rep), to(free, "ms"), bars)


def many_gpus_calculator(
    model: str = "Llama-3.1-70B",
    gpu: str = "H200 SXM",
    link: str = _OWN,
    tensor_parallel: int = 4,
    expert_parallel: int = 1,
    precision: str = "fp8",
    batch: int = 4,
    prompt_tokens: int = 1_024,
    answer_tokens: int = 8_192,
    method: str = "course",
    plot: bool = True,
) -> Calculator:
    """One replica on several GPUs: the time per output token split into weight reads, KV reads,
    compute, communication, the fixed overhead and the other requests' prefills, and the same split
    on 1, 2, 4 and 8 GPUs as a stacked bar. ``link`` is the GPUs' own by default (or any link of
    the catalog, e.g. PCIe cards); ``expert_parallel`` splits a MoE model's experts (ignored for a
    dense model); ``batch`` is the concurrency (requests in flight).

    Examples
    --------
    >>> c = many_gpus_calculator(plot=False)
    >>> dict(c.rows)["time per output token"]
    '9.38 ms'
    >>> dict(c.set(link="PCIe 5 x16").rows)["time per output token"]
    '12.5 ms'
    >>> c.set(tensor_parallel=3).error[:44]
    'tensor_parallel=3 does not divide Llama-3.1-'
    """
    bar = w.HTML()
    options = [_OWN, *links]

    def compute(**v: Any) -> ManyGpus:
        return many_gpus(
            v["model"],
            v["gpu"],
            tensor_parallel=v["tensor_parallel"],
            expert_parallel=v["expert_parallel"],
            link=None if v["link"] == _OWN else v["link"],
            batch=v["batch"],
            prompt_tokens=v["prompt_tokens"],
            answer_tokens=v["answer_tokens"],
            weight_bytes=v["precision"],
            assumptions=v["method"],
        )

    def draw(res: ManyGpus) -> None:
        if plot:
            title = f"{res.model} on {res.gpu} ({res.replica.layout.link.name}), {res.replica.batch} in flight"
            bar.value = parts_bar_svg(res.bars, title, highlight=res.replica.layout.tensor_parallel)

    calc = Calculator(
        compute,
        {
            "model": model_dropdown(model),
            "gpu": gpu_dropdown(gpu),
            "link": w.Dropdown(options=options, value=link, description="Link"),
            "tensor_parallel": int_slider(tensor_parallel, 1, 16, description="Tensor parallel"),
            "expert_parallel": w.Dropdown(
                options=[1, 2, 4, 8, 16, 32, 64], value=expert_parallel, description="Expert parallel"
            ),
            "precision": precision_dropdown(precision, "Weights", ("bf16", "fp8", "fp4")),
            "batch": int_slider(batch, 1, 256, description="Concurrency"),
            "prompt_tokens": int_box(prompt_tokens, "Prompt (tokens)"),
            "answer_tokens": int_box(answer_tokens, "Answer (tokens)"),
            "method": preset_dropdown(method),
        },
        title="Many GPUs: where the time per token goes",
        extra=draw,
    )
    if plot:
        calc.widget = w.VBox([calc.widget, bar])
    return calc
