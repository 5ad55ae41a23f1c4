"""The calculator of the chapter *On your own machine* (``book/17_own_machine.md``): pick a model, a machine, a GGUF
type and a context; it answers whether it fits, how fast it types, how long the first token takes and the longest
context that fits (:func:`llmcourse.planner.own_machine.own_machine`, the one replica model at a batch of one).
"""

from __future__ import annotations

import ipywidgets as w

from llmcourse.catalog.precision import GGUF_TABLE
from llmcourse.planner.own_machine import DISPLAY_GIB, ONE_SEQUENCE, SERVER_SLOTS, own_machine
from llmcourse.widgets import Calculator, float_slider, gpu_dropdown, int_box, model_dropdown, preset_dropdown

__all__ = ["own_machine_calculator"]

#: The machines offered first: a laptop's unified memory and desktop GPUs (any catalog GPU may be set from code).
MACHINES = ("M3 Max", "M3 Ultra", "RTX 5090", "RTX PRO 6000", "RTX 4090", "L4")


#: How llama.cpp runs the model: the sequences sharing its KV cache (llama-server's default slots, or one).
RUNS = (("llama-server (4 slots)", SERVER_SLOTS), ("llama-cli, llama-bench (1)", ONE_SEQUENCE))


def _rows(
    model: str, gpu: str, gguf: str, context: int, slots: int, display: float, method: str
) -> list[tuple[str, str]]:
    return own_machine(model, gpu, gguf, context, slots=slots, display_gib=display, assumptions=method).rows()


def own_machine_calculator(
    model: str = "Llama-3.1-8B",
    gpu: str = "M3 Max",
    gguf: str = "q4_k_m",
    context: int = 8_192,
    slots: int = SERVER_SLOTS,
    display: float = 0.0,
    method: str = "course",
) -> Calculator:
    """Model, machine, GGUF type and context -> fits, typing speed, first-token time, longest context.

    Examples
    --------
    >>> c = own_machine_calculator()
    >>> dict(c.rows)["fits"], dict(c.rows)["bound: bandwidth / weight bytes"]
    ("yes, with llama.cpp's --fit margin", '81 tokens/s')
    >>> dict(c.set(gguf="q8_0").rows)["weights"]
    '8.53 GB (Q8_0)'
    >>> dict(c.rows)["sequences sharing the KV cache"], dict(c.set(slots=1).rows)["sequences sharing the KV cache"]
    ("4 (llama-server's default)", '1 (llama-cli, llama-bench)')
    >>> c.set(display=1.0).error[:60]  # a Mac's memory is shared: the calculator says what to change
    'display_gib is for a GPU with memory of its own; M3 Max shar'
    """
    from llmcourse.catalog import gpus

    machines = [g for g in MACHINES if g in gpus] + [g for g in gpus if g not in MACHINES]
    return Calculator(
        _rows,
        {
            "model": model_dropdown(model),
            "gpu": gpu_dropdown(gpu, machines, description="Machine"),
            "gguf": w.Dropdown(options=[*sorted(GGUF_TABLE), "bf16"], value=gguf, description="GGUF type"),
            "context": int_box(context, "Context tokens"),
            "slots": w.Dropdown(options=list(RUNS), value=slots, description="Runs as"),
            # a CUDA GPU that drives the desktop loses some of its memory to it (0 on a Mac: its share leaves it)
            "display": float_slider(display, 0.0, DISPLAY_GIB[1], 0.1, "Display GiB (CUDA)"),
            "method": preset_dropdown(method),
        },
        title="On your own machine",
    )
