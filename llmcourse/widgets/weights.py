"""Calculator of the chapter *Weights* (``book/02_weights.md``).

Model x precision x GPU x GPU count -> do the weights fit, and what is left for the KV cache.
Also :func:`split_gpus`, the GPU count a tensor-parallel server can actually split a model across.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

import ipywidgets as w
import pint

from llmcourse.catalog import GPU, Model, gpus, models
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.planner import usable_memory, weight_bytes
from llmcourse.units import fmt
from llmcourse.widgets import Calculator, float_slider, gpu_dropdown, int_slider, model_dropdown, precision_dropdown

__all__ = ["WeightFit", "memory_bar_svg", "split_gpus", "weight_fit", "weights_calculator"]


def split_gpus(model: Model | str, at_least: int) -> int:
    """The smallest GPU count >= ``at_least`` that a tensor-parallel server can split ``model`` across.

    vLLM (like most engines) needs the query heads to divide evenly among the GPUs, and the
    KV heads either to divide evenly or to be replicated whole (GPU count a multiple of them).

    Examples
    --------
    >>> split_gpus("Qwen2.5-72B", 3)  # 64 heads do not split three ways
    4
    >>> split_gpus("Llama-3.1-8B", 1)
    1
    """
    m = model if isinstance(model, Model) else models[model]
    if at_least < 1 or at_least != int(at_least):
        raise InputError(f"at_least must be a whole number of GPUs, 1 or more; got {at_least!r}.")
    for n in range(int(at_least), m.heads + 1):
        if m.heads % n == 0 and (m.kv_heads % n == 0 or n % m.kv_heads == 0):
            return n
    raise InputError(f"{m.name} has {m.heads} heads: it cannot be split across {at_least} or more GPUs.")


@dataclass(frozen=True)
class WeightFit:
    """Whether a model's weights fit in the usable memory of some GPUs."""

    model: Model
    gpu: GPU
    n_gpus: int
    precision: str
    usable_fraction: float
    weights: pint.Quantity
    usable: pint.Quantity
    gpus_needed: int
    gpus_to_split: int

    @property
    def fits(self) -> bool:
        return bool(self.weights <= self.usable)

    @property
    def free(self) -> pint.Quantity:
        """Usable memory left for the KV cache (negative when the weights do not fit)."""
        return (self.usable - self.weights).to("GB")

    def rows(self) -> list[tuple[str, str]]:
        return [
            ("weights", fmt(self.weights, "GB")),
            (
                f"usable memory ({self.n_gpus} x {fmt(self.gpu.memory, 'GB')} x {self.usable_fraction:.0%})",
                fmt(self.usable, "GB"),
            ),
            ("weights fit", "yes" if self.fits else "no"),
            (
                "left for the KV cache" if self.fits else "short by",
                fmt(abs(self.free), "GB") if self.free.m else "0 GB",
            ),
            ("fewest GPUs whose usable memory holds the weights", str(self.gpus_needed)),
            ("fewest GPUs the heads split evenly across", str(self.gpus_to_split)),
        ]


def weight_fit(
    model: Model | str,
    precision: Any = "bf16",
    gpu: GPU | str = "H100 SXM",
    n_gpus: int = 1,
    usable_fraction: float = 0.9,
) -> WeightFit:
    """Weights, usable memory and the GPU counts for one model, precision and GPU.

    Examples
    --------
    >>> f = weight_fit("Qwen2.5-72B", "bf16", "H100 SXM", 2)
    >>> f.fits, fmt(f.weights, "GB", 4), f.gpus_needed, f.gpus_to_split
    (False, '145.4 GB', 3, 4)
    """
    m = model if isinstance(model, Model) else models[model]
    g = gpu if isinstance(gpu, GPU) else gpus[gpu]
    wb = weight_bytes(m, precision)
    mem = usable_memory(g, n_gpus, usable_fraction)
    need = int(F["gpus_for_weights"](weights=wb, gpu_memory=g.memory, usable_fraction=usable_fraction).m)
    return WeightFit(
        m, g, int(n_gpus), str(precision), float(usable_fraction), wb.to("GB"), mem.to("GB"), need, split_gpus(m, need)
    )


def _ticks(top: float, target: int = 5) -> list[float]:
    """Round tick values (1, 2 or 5 times a power of ten apart) from 0 up to ``top``."""
    raw = top / target
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [i * step for i in range(int(top // step) + 1)]


def memory_bar_svg(fit: WeightFit, width: int = 640) -> str:
    """The memory bar of ``fit`` as an SVG drawing (weights, what is left for the KV cache, the
    reserved share, the usable line), x axis in GB. Plain text, so it draws the same in the book's
    snapshot and in the live calculator, whose in-browser Python has no matplotlib.

    Examples
    --------
    >>> svg = memory_bar_svg(weight_fit("Qwen2.5-72B", "bf16", "H100 SXM", 2))
    >>> svg.startswith("<svg") and "145.4 of 144.0 GB usable" in svg
    True
    """
    total = (fit.n_gpus * fit.gpu.memory).to("GB").m
    wts, usable = fit.weights.to("GB").m, fit.usable.to("GB").m
    left, right, top_y, bar_h = 12, 12, 28, 30
    span = width - left - right
    x_max = max(total, wts) * 1.05
    x = lambda gb: left + span * gb / x_max  # noqa: E731
    # legend order; drawn reserved first, so weights that do not fit show on top of it, past the line
    parts = [("weights", 0.0, wts, "#1f77b4" if fit.fits else "#d62728", f"weights ({fit.precision})")]
    if fit.fits:
        parts.append(("kv", wts, usable, "#2ca02c", "left for the KV cache"))
    parts.append(("reserved", usable, total, "#cccccc", "reserved (not usable)"))
    title = f"{fit.model.name} on {fit.n_gpus} x {fit.gpu.name}: {wts:,.1f} of {usable:,.1f} GB usable"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="llmcourse-memory-bar" width="{width}" height="130" '
        f'viewBox="0 0 {width} 130" role="img" aria-label="{html.escape(title)}" font-family="sans-serif">',
        f'<text x="{width / 2:.1f}" y="16" text-anchor="middle" font-size="13">{html.escape(title)}</text>',
    ]
    for name, a, b, colour, _ in [parts[-1], *parts[:-1]]:
        if b > a:
            out.append(
                f'<rect data-part="{name}" x="{x(a):.2f}" y="{top_y}" width="{x(b) - x(a):.2f}" height="{bar_h}" '
                f'fill="{colour}"><title>{name}: {b - a:,.1f} GB</title></rect>'
            )
    ux = x(usable)
    out.append(
        f'<line data-part="usable" x1="{ux:.2f}" x2="{ux:.2f}" y1="{top_y - 4}" y2="{top_y + bar_h + 4}" '
        'stroke="black" stroke-dasharray="4 3"/>'
    )
    axis_y = top_y + bar_h + 6
    out.append(f'<line x1="{left}" x2="{left + span}" y1="{axis_y}" y2="{axis_y}" stroke="#555"/>')
    for t in _ticks(x_max):
        out.append(f'<line x1="{x(t):.2f}" x2="{x(t):.2f}" y1="{axis_y}" y2="{axis_y + 4}" stroke="#555"/>')
        out.append(f'<text x="{x(t):.2f}" y="{axis_y + 15}" text-anchor="middle" font-size="10">{t:,.0f}</text>')
    out.append(
        f'<text x="{width / 2:.1f}" y="{axis_y + 30}" text-anchor="middle" font-size="11">'
        "memory of the replica (GB)</text>"
    )
    lx = left
    for _, _, _, colour, label in parts:
        out.append(f'<rect x="{lx}" y="{axis_y + 38}" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{lx + 14}" y="{axis_y + 47}" font-size="11">{html.escape(label)}</text>')
        lx += 24 + 6.5 * len(label)
    out.append("</svg>")
    return "".join(out)


def weights_calculator(
    model: str = "Qwen2.5-72B",
    precision: str = "bf16",
    gpu: str = "H100 SXM",
    n_gpus: int = 2,
    usable_fraction: float = 0.9,
    plot: bool = True,
) -> Calculator:
    """Model, precision, GPU, GPU count and usable share -> do the weights fit, with a memory bar.

    Examples
    --------
    >>> c = weights_calculator(plot=False)
    >>> dict(c.rows)["weights fit"], dict(c.set(precision="fp8").rows)["weights fit"]
    ('no', 'yes')
    """
    bar = w.HTML()

    def draw(fit: WeightFit) -> None:
        if plot:
            bar.value = memory_bar_svg(fit)

    calc = Calculator(
        weight_fit,
        {
            "model": model_dropdown(model),
            "precision": precision_dropdown(precision),
            "gpu": gpu_dropdown(gpu),
            "n_gpus": int_slider(n_gpus, 1, 8, description="GPUs"),
            "usable_fraction": float_slider(usable_fraction, 0.5, 1.0, 0.05, "Usable share of memory"),
        },
        title="Do the weights fit?",
        extra=draw,
    )
    if plot:
        calc.widget = w.VBox([calc.widget, bar])
    return calc
