"""Calculator of the chapter *Weights* (``book/02_weights.md``).

Model x precision x GPU x GPU count -> do the weights fit, and what is left for the KV cache. The
memory a server may use and the tensor-parallel GPU count come from the planner
(:func:`llmcourse.usable_memory`, :func:`llmcourse.gpus_for_weights`) under the assumptions given,
the course's by default; the calculator can read a GPU's memory as the datasheet's GB or as the
HBM's GiB, the way PyTorch (and so vLLM) sees it.
"""

from __future__ import annotations

import html
import math

import ipywidgets as w

from llmcourse.assumptions import resolve
from llmcourse.planner.memory import WeightFit, weight_fit  # re-exported for old imports
from llmcourse.units import to
from llmcourse.widgets import Calculator, float_slider, gpu_dropdown, int_slider, model_dropdown, precision_dropdown

__all__ = ["MEMORY_UNITS", "WeightFit", "memory_bar_svg", "weight_fit", "weights_calculator"]

#: The two readings of a GPU's listed memory the calculator offers (label, ``memory_unit``).
MEMORY_UNITS = (("datasheet GB", "GB"), ("HBM GiB (as PyTorch sees it)", "GiB"))


def ticks(top: float, target: int = 5) -> list[float]:
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
    total = to(fit.total, "GB").m
    wts, usable = to(fit.weights, "GB").m, to(fit.usable, "GB").m
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
    for t in ticks(x_max):
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


def _fit(model: str, precision: str, gpu: str, n_gpus: int, usable_fraction: float, memory_unit: str) -> WeightFit:
    return weight_fit(
        model,
        precision,
        gpu,
        n_gpus,
        assumptions=resolve().replace(memory_fraction=usable_fraction, memory_unit=memory_unit),
    )


def weights_calculator(
    model: str = "Qwen2.5-72B",
    precision: str = "bf16",
    gpu: str = "H100 SXM",
    n_gpus: int = 2,
    usable_fraction: float | None = None,
    memory_unit: str | None = None,
    plot: bool = True,
) -> Calculator:
    """Model, precision, GPU, GPU count, usable share and how a GPU's memory is read -> do the
    weights fit, with a memory bar. The share and the reading start at the course's assumptions.

    Examples
    --------
    >>> c = weights_calculator(plot=False)
    >>> dict(c.rows)["weights fit"], dict(c.set(precision="fp8").rows)["weights fit"]
    ('no', 'yes')
    >>> dict(c.set(precision="bf16", memory_unit="GiB").rows)["weights fit"]
    'yes'
    """
    a = resolve()
    bar = w.HTML()

    def draw(fit: WeightFit) -> None:
        if plot:
            bar.value = memory_bar_svg(fit)

    calc = Calculator(
        _fit,
        {
            "model": model_dropdown(model),
            "precision": precision_dropdown(precision),
            "gpu": gpu_dropdown(gpu),
            "n_gpus": int_slider(n_gpus, 1, 8, description="GPUs"),
            "usable_fraction": float_slider(
                a.memory_fraction if usable_fraction is None else usable_fraction,
                0.5,
                1.0,
                0.05,
                "Usable share of memory",
            ),
            "memory_unit": w.Dropdown(
                options=list(MEMORY_UNITS), value=memory_unit or a.memory_unit, description="Memory read as"
            ),
        },
        title="Do the weights fit?",
        extra=draw,
    )
    if plot:
        calc.widget = w.VBox([calc.widget, bar])
    return calc
