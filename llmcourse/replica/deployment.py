"""What a replica is and what it serves, each in one frozen object: a :class:`Deployment` (a model on GPUs, its
degrees of parallelism, its link, its precisions, its speculation, its engine and scheduler settings) and a :class:`Workload` (the lengths of its
requests, their cached prefix, the batch).

The friendly keyword calls at the edge (:func:`~llmcourse.replica.replica`, :func:`~llmcourse.replica.decode_step`,
:func:`~llmcourse.replica.prefill`, :func:`~llmcourse.planner.design.plan`) check their arguments and build these
once; everything inside (the kept set-ups, the decode step and prefill of a layout) takes the objects. Their
fields are what was given, checked by the edge that built them; a name of the catalog is looked up here.

Examples
--------
>>> d = Deployment("Llama-3.1-70B", "H100 SXM", tensor_parallel=2, weight_bytes="fp8")
>>> d.model.name, d.gpu.name, d.tensor_parallel, d.weight_bytes, d.engine
('Llama-3.1-70B', 'H100 SXM', 2, 'fp8', 'vLLM')
>>> Deployment("Llama-3.1-8B", "H100 SXM", engine="sglang", max_running=-1)
Traceback (most recent call last):
...
llmcourse.errors.InputError: max_running (the most requests an engine runs at once) must be a whole number of at least 1, or None for the engine's default; got -1.
>>> Workload(prompt_tokens=2_000, answer_tokens=300, batch=64).at(None)
Workload(prompt_tokens=2000, answer_tokens=300, context_tokens=None, cached_prompt_tokens=0, batch=None)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmcourse.catalog import GPU, Model, gpus, models
from llmcourse.catalog.precision import precisions_text
from llmcourse.errors import InputError
from llmcourse.replica.scheduler import Scheduler, engine_name, scheduler_of

if TYPE_CHECKING:
    from llmcourse.catalog import Link
    from llmcourse.replica.speculative import Speculation

__all__ = ["Deployment", "Workload"]


@dataclass(frozen=True)
class Deployment:
    """A model on GPUs: ``tensor_parallel`` GPUs per group, ``data_parallel`` attention groups, ``pipeline_parallel``
    stages, the experts of a MoE model split over ``expert_parallel`` GPUs (None: over all of them), collectives on
    ``link`` (None: the GPU's own), weights and KV cache stored at ``weight_bytes`` and ``kv_bytes`` per value (a
    precision name, a number of bytes, or a byte quantity; ``weight_bytes`` None: the model's checkpoint precision,
    per tensor group, or a per-group mapping such as ``{"experts": "nvfp4", "other": "bf16"}``, kept as text), and
    ``speculation`` (a :class:`~llmcourse.replica.speculative.Speculation`; None: the assumptions' own, off in every
    preset), under
    ``engine`` (``"vLLM"`` by default, ``"SGLang"``, ``"TensorRT-LLM"``, ``"llama.cpp"``; an unknown name gets "did
    you mean") with its scheduler settings: ``max_batched_tokens`` (the tokens one step may carry, prompt chunks and
    decode tokens together), ``mixed_prefill`` (prompt chunks ride in the decode steps, or run as prefill batches of
    their own) and ``max_running`` (the most requests it runs at once), each None for the engine's default
    (:mod:`~llmcourse.replica.scheduler`).

    ``model`` and ``gpu`` may be given by their catalog names; the object holds the catalog's entries (under
    llama.cpp, a model whose every layer slides a window as the engine runs it: with full attention).
    """

    model: Model
    gpu: GPU
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    data_parallel: int = 1
    expert_parallel: int | None = None
    link: Link | str | None = None
    weight_bytes: Any = None
    kv_bytes: Any = 2
    speculation: Speculation | None = None
    engine: str | None = None
    max_batched_tokens: int | None = None
    mixed_prefill: bool | None = None
    max_running: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, Model):
            object.__setattr__(self, "model", models[self.model])  # an unknown name: "did you mean"
        if not isinstance(self.gpu, GPU):
            object.__setattr__(self, "gpu", gpus[self.gpu])
        if isinstance(self.weight_bytes, Mapping):  # per tensor group: as text, a key of the kept set-ups
            object.__setattr__(self, "weight_bytes", precisions_text(self.weight_bytes))
        object.__setattr__(self, "engine", engine_name(self.engine))  # None: the default engine, said by name
        m = self.model
        if self.engine == "llama.cpp" and self.data_parallel != 1:
            raise InputError("llama.cpp runs no attention data parallelism: give data_parallel=1 for llama.cpp.")
        if self.engine == "llama.cpp" and m.sliding_window and m.layer_types["full"] == 0:
            # llama.cpp keeps a window only where window layers interleave with full ones (its iswa cache: Gemma 2
            # and 3, gpt-oss, Llama 4's chunks); a model whose every layer slides (Mistral-7B-v0.1, converted as the
            # LLAMA architecture, which reads no sliding_window) runs full attention on a plain cache
            object.__setattr__(self, "model", m.with_(sliding_window=None, sliding_window_layers=None))
        self.scheduler  # noqa: B018  (the settings checked here, each refused by its field's name)

    @property
    def scheduler(self) -> Scheduler:
        """The engine's scheduler: its defaults on this GPU, with the settings given."""
        return scheduler_of(
            self.engine,
            self.gpu,
            max_batched_tokens=self.max_batched_tokens,
            mixed_prefill=self.mixed_prefill,
            max_running=self.max_running,
        )


@dataclass(frozen=True)
class Workload:
    """What a replica serves: requests of ``prompt_tokens`` in and ``answer_tokens`` out, or of a final length
    ``context_tokens`` (a method that neither charges prefill nor reads the KV cache at the average context may be
    given that alone), ``cached_prompt_tokens`` of each prompt found in a prefix cache, ``batch`` of them at a time
    (None: the largest batch that fits).

    A replica's set-up serves every batch: it is of the workload at no batch (:meth:`at`).
    """

    prompt_tokens: float | None = None
    answer_tokens: float | None = None
    context_tokens: float | None = None
    cached_prompt_tokens: float = 0
    batch: int | None = None

    def at(self, batch: int | None) -> Workload:
        """The same requests at another batch."""
        return Workload(self.prompt_tokens, self.answer_tokens, self.context_tokens, self.cached_prompt_tokens, batch)
