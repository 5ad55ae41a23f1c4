"""Calculator of the chapter *Weights* (``book/02_weights.md``).

Model x precision x GPU x GPU count -> do the weights fit, and what is left for the KV cache.
Also :func:`split_gpus`, the GPU count a tensor-parallel server can actually split a model across.
"""

from __future__ import annotations

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

__all__ = ["WeightFit", "memory_bar_png", "split_gpus", "weight_fit", "weights_calculator"]


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


def memory_bar_png(fit: WeightFit) -> bytes:
    """The memory bar of ``fit`` as PNG bytes (for an image widget; needs no kernel).

    Examples
    --------
    >>> memory_bar_png(weight_fit("Llama-3.1-8B"))[:4]
    b'\\x89PNG'
    """
    import io

    import matplotlib.pyplot as plt

    from llmcourse.plots.weights import memory_bar

    ax = memory_bar(fit)
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png", dpi=80)
    plt.close(ax.figure)
    return buf.getvalue()


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
    image = w.Image(format="png", layout=w.Layout(max_width="640px"))
    if plot:
        try:  # the in-browser Python of the live book has no matplotlib: the table still works there
            import matplotlib  # noqa: F401
        except ImportError:
            plot = False

    def draw(fit: WeightFit) -> None:
        if plot:
            image.value = memory_bar_png(fit)

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
        calc.widget = w.VBox([calc.widget, image])
    return calc
