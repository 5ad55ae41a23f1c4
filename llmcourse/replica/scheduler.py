"""The serving engines a replica runs under and the scheduler settings that change a step, in one table.

Each engine's defaults, as its own source sets them (read in the engines' code):

* **vLLM** (V1 engine): chunked prefill always on, prompt chunks and decode tokens in the same step, at most
  ``max_num_batched_tokens`` tokens a step and ``max_num_seqs`` running requests. ``EngineArgs.get_batch_defaults``
  (``vllm/engine/arg_utils.py``) gives the OpenAI server 8,192 tokens and 1,024 requests on a GPU of 70 GiB or more
  that is not an A100, else 2,048 tokens and 256 requests (``SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS`` is
  2,048 in ``vllm/config/scheduler.py``, a fallback for tests). ``vllm/v1/core/sched/scheduler.py``
  (``Scheduler.schedule``) schedules the running requests' decode tokens first, then fills the rest of the budget
  with prompt chunks; a request is admitted while its prompt's KV blocks are free (``KVCacheManager.allocate_slots``)
  and a running one is preempted (its KV freed, recomputed later) when a decode finds no block.
* **SGLang**: ``ServerArgs`` (``python/sglang/srt/server_args.py``) sets ``chunked_prefill_size`` by the GPU's
  memory: 2,048 tokens under 35 GiB, 8,192 under 160 GiB (H100, H200, A100), 16,384 above (B200, MI300);
  ``enable_mixed_chunk`` is off by default, so ``Scheduler.get_next_batch_to_run``
  (``python/sglang/srt/managers/scheduler.py``) runs a prefill batch on its own, between decode batches, and every
  decoding request waits for it; ``max_running_requests`` is unset by default (the KV pool decides).
* **TensorRT-LLM**: in-flight batching puts context (prompt) tokens and generation tokens in one step
  (``features/paged-attention-ifb-scheduler``: "sequences in the context phase can be processed together with
  sequences in the generation phase"); the LLM API's defaults (``tensorrt_llm/llmapi/llm_args.py``, ``BuildConfig``)
  are ``max_num_tokens`` 8,192 and ``max_batch_size`` 2,048. Chunked context (``enable_chunked_prefill``) is off
  by default, so a prompt goes whole into one step, as the model puts it while the prompt fits the room beside the
  decode tokens; a longer prompt the model cuts into chunks, as TensorRT-LLM does only with chunked context on.
* **llama.cpp** (``llama-server``): one ``llama_decode`` a step holds the slots' prompt tokens and decode tokens
  together, up to ``n_batch`` 2,048 tokens (``common/common.h``). The server's slots (``--parallel``) are "auto" by
  default (``common/arg.cpp`` sets ``n_parallel`` to -1 for the server alone), which ``tools/server/server.cpp``
  makes 4 slots sharing one KV cache (``kv_unified``): the context is one pool for all four, and each
  sliding-window layer keeps four windows (:func:`~llmcourse.replica.memory.llama_cpp_window_cells`).
  ``llama-cli`` and ``llama-bench`` run one sequence (``max_running=1``). That is llama.cpp since mid-December 2025
  (ggml-org/llama.cpp PR 17997); from November 2025 (PR 16736) an explicit ``--parallel 1`` also became four shared
  slots (``--parallel 1 --kv-unified`` kept one), and before it the server ran one slot by default. An explicit
  ``--parallel N`` gives each slot ``n_ctx / N`` of a cache it does not share (the model counts a shared one). Its own
  kernels reach other shares of the bandwidth and FLOP/s than the datacenter engines': the assumptions'
  ``llama_cpp_*`` fields, which :func:`~llmcourse.assumptions.for_engine` swaps in for a replica of this engine.

The default engine is vLLM; every replica says which engine it ran under (``Replica.engine``).

Examples
--------
>>> s = scheduler_of("vllm", "H100 SXM")
>>> s.engine, s.token_budget, s.mixed_prefill, s.max_running
('vLLM', 8192, True, 1024)
>>> scheduler_of("SGLang", "B200").token_budget, scheduler_of("SGLang", "H100 SXM").mixed_prefill
(16384, False)
>>> scheduler_of("sglng", "H100 SXM")
Traceback (most recent call last):
...
llmcourse.errors.UnknownNameError: no engine named 'sglng'. Did you mean 'SGLang'? Known: vLLM, SGLang, TensorRT-LLM, llama.cpp.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from llmcourse.catalog import GPU, gpus
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.units import GIB, to

__all__ = [
    "DEFAULT_ENGINE",
    "ENGINES",
    "Engine",
    "EngineSettings",
    "Scheduler",
    "engine_memory_rule",
    "engine_name",
    "engine_settings",
    "scheduler_of",
    "sglang_mem_fraction_static",
]

#: The engine a replica runs under when none is named.
DEFAULT_ENGINE = "vLLM"


def _gib(g: GPU) -> float:
    """A GPU's memory in GiB (the engines read the device's total memory in binary units)."""
    return float(to(g.memory, GIB).m)


@dataclass(frozen=True)
class Engine:
    """One engine's defaults: its token budget per step and its cap on running requests (each a function of the
    GPU, as the engine sets them; a cap of None: the KV cache decides), and whether it mixes prompt chunks into the
    decode steps."""

    name: str
    budget: Callable[[GPU], int]
    max_running: Callable[[GPU], int | None]
    mixed_prefill: bool
    source: str


def _vllm_large(g: GPU) -> bool:
    """vLLM's larger defaults: a GPU of 70 GiB or more that is not an A100 (``EngineArgs.get_batch_defaults``)."""
    return _gib(g) >= 70 and "a100" not in g.name.lower()


def _sglang_budget(g: GPU) -> int:
    gib = _gib(g)
    return 2_048 if gib < 35 else 8_192 if gib < 160 else 16_384


#: The engines, by name, with their defaults (see the module docstring for where each is set).
ENGINES: dict[str, Engine] = {
    e.name: e
    for e in (
        Engine(
            "vLLM",
            lambda g: 8_192 if _vllm_large(g) else 2_048,
            lambda g: 1_024 if _vllm_large(g) else 256,
            True,
            "vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (OpenAI server): max_num_batched_tokens, "
            "max_num_seqs",
        ),
        Engine(
            "SGLang",
            _sglang_budget,
            lambda g: None,
            False,
            "python/sglang/srt/server_args.py ServerArgs: chunked_prefill_size by GPU memory, enable_mixed_chunk "
            "False, max_running_requests None",
        ),
        Engine(
            "TensorRT-LLM",
            lambda g: 8_192,
            lambda g: 2_048,
            True,
            "tensorrt_llm/llmapi/llm_args.py: max_num_tokens 8192, max_batch_size 2048; in-flight batching",
        ),
        Engine(
            "llama.cpp",
            lambda g: 2_048,
            lambda g: 4,
            True,
            "common/common.h: n_batch 2048; llama-server's --parallel auto (common/arg.cpp) is 4 slots sharing one KV "
            "cache (tools/server/server.cpp); update_slots batches prompts with decodes",
        ),
    )
}


#: MiB in a GiB (SGLang counts a GPU's memory in MiB).
_MIB_PER_GIB = 1_024


def sglang_mem_fraction_static(gpu_mib: float, tp_pp: int = 1) -> float:
    """SGLang's default ``mem_fraction_static`` (the share of a GPU's memory its weights and KV-cache pool take
    together) on a GPU of ``gpu_mib`` MiB in a server of ``tp_pp`` GPUs (``--tp`` x ``--pp``), as
    ``ServerArgs._handle_gpu_memory_settings`` (``python/sglang/srt/server_args.py``, v0.5.4 and later) sets it:
    ``round((gpu_mem - reserved) / gpu_mem, 3)``, where ``reserved`` (MiB) is 512 of metadata, 1.5 per token of the
    chunked-prefill size (at least 2,048 tokens) for a prefill's activations, 2 per request of ``cuda_graph_max_bs``
    for the CUDA graphs' buffers and 1,024 per 8 GPUs, never less than 10 GiB on a GPU of more than 60 GiB. The
    chunk and the graphs' batch follow the GPU's memory: 2,048 tokens and 8 requests under 20 GiB; 2,048 and 24 (80
    from 4 GPUs) under 35 GiB; 4,096 and 32 (160) under 60 GiB; 8,192 and 256 (512 from 4 GPUs) under 160 GiB (H100,
    H200); 16,384 and 512 above (B200, GB200, B300, MI300).

    Not counted: ``--enable-dp-attention`` reserves ``cuda_graph_max_bs`` x ``dp_size`` x 3 MiB more (x 4.5 above
    300 requests), 14 GiB at 8 attention groups of 512 requests and more than a GB200 holds at 72: servers that
    wide set ``--mem-fraction-static`` themselves, and the course keeps the tensor-parallel reserve for them; nor a
    speculative draft's 2 GiB.

    Examples
    --------
    >>> # an H100 reports 81,559 MiB; 1 GPU: 512 + 8,192 x 1.5 + 256 x 2 + 128 = 13,440 MiB reserved
    >>> sglang_mem_fraction_static(81_559, 1)
    0.835
    >>> # a B200 reports 183,359 MiB; 4 GPUs: 512 + 16,384 x 1.5 + 512 x 2 + 512 = 26,624 MiB reserved
    >>> sglang_mem_fraction_static(183_359, 4)
    0.855
    """
    gib = gpu_mib / _MIB_PER_GIB
    if gib < 20:
        chunk, graphs = 2_048, 8
    elif gib < 35:
        chunk, graphs = 2_048, 24 if tp_pp < 4 else 80
    elif gib < 60:
        chunk, graphs = 4_096, 32 if tp_pp < 4 else 160
    elif gib < 160:
        chunk, graphs = 8_192, 256 if tp_pp < 4 else 512
    else:
        chunk, graphs = 16_384, 512
    reserved = 512 + max(chunk, 2_048) * 1.5 + graphs * 2 + tp_pp / 8 * _MIB_PER_GIB
    if gib > 60:
        reserved = max(reserved, 10 * _MIB_PER_GIB)
    return round((gpu_mib - reserved) / gpu_mib, 3)


def engine_memory_rule(
    engine: Any, gpu_mib: float, n_gpus: int, memory_fraction: float, *, llama_cpp_reserve_gib: float | None
) -> tuple[str, float]:
    """How ``engine`` sizes the memory its weights and KV cache take, on ``n_gpus`` GPUs of ``gpu_mib`` MiB each (the
    device's size as the engine reads it from the driver), as a rule of :func:`~llmcourse.replica.memory.usable_memory`
    and its value: ``("total", f)``, a share ``f`` of the GPUs' memory, ``("free", f)``, the weights plus a share ``f``
    of what they leave, or ``("reserve", r)``, all of each GPU's memory read as GiB less ``r`` GiB.

    * **vLLM**: ``gpu_memory_utilization`` (``CacheConfig``, ``vllm/config/cache.py``: 0.9) of each GPU's memory
      holds the weights, the activations' peak and the KV cache (``Worker.determine_available_memory``): rule
      ``"total"`` at ``memory_fraction``.
    * **SGLang**: ``mem_fraction_static`` of each GPU's memory holds the weights and the KV pool
      (``ModelRunner.profile_max_num_token``), by default what :func:`sglang_mem_fraction_static` gives: rule
      ``"total"`` at that share, whatever ``memory_fraction`` says.
    * **TensorRT-LLM**: the KV cache takes ``free_gpu_memory_fraction`` (``KvCacheConfig``,
      ``tensorrt_llm/llmapi/llm_args.py``: 0.9) of the memory free once the weights are loaded
      (``KVCacheManager``'s estimate from ``cudaMemGetInfo``): rule ``"free"`` at ``memory_fraction``, so the weights
      may take nearly all of it.
    * **llama.cpp**: it allocates the weights and a KV cache of its context size, not a share, and its compute
      buffers beside them, from the device's free memory; its ``--fit`` leaves 1,024 MiB of each device free on top
      of all three (``fit_params_target``, ``common/common.h``; ``llama_params_fit_impl``, ``common/fit.cpp``):
      rule ``"reserve"`` at ``llama_cpp_reserve_gib`` (:func:`~llmcourse.replica.memory.llama_cpp_reserve_gib`: the
      CUDA context, the compute buffers and the margin), the device's memory read in binary units as llama.cpp reads it from the
      driver (CUDA's total in MiB; Metal's ``recommendedMaxWorkingSetSize``, 49,152 MiB on a 64 GB Mac); with
      ``llama_cpp_reserve_gib`` None (assumptions with no llama.cpp values of their own), vLLM's rule.

    Examples
    --------
    >>> engine_memory_rule("vLLM", 81_559, 2, 0.9, llama_cpp_reserve_gib=1.0)
    ('total', 0.9)
    >>> engine_memory_rule("trt-llm", 81_559, 2, 0.9, llama_cpp_reserve_gib=1.0)
    ('free', 0.9)
    >>> engine_memory_rule("SGLang", 183_359, 4, 0.9, llama_cpp_reserve_gib=1.0)
    ('total', 0.855)
    >>> engine_memory_rule("llama.cpp", 32_768, 1, 0.9, llama_cpp_reserve_gib=1.75)
    ('reserve', 1.75)
    """
    name = engine_name(engine)
    if name == "SGLang":
        return "total", sglang_mem_fraction_static(gpu_mib, n_gpus)
    if name == "TensorRT-LLM":
        return "free", memory_fraction
    if name == "llama.cpp" and llama_cpp_reserve_gib is not None:
        return "reserve", llama_cpp_reserve_gib
    return "total", memory_fraction


def engine_name(name: Any) -> str:
    """The engine's name as :data:`ENGINES` spells it (case and punctuation aside), or :class:`UnknownNameError`
    with "did you mean".

    Examples
    --------
    >>> engine_name("trt-llm"), engine_name("TensorRT_LLM"), engine_name(None)
    ('TensorRT-LLM', 'TensorRT-LLM', 'vLLM')
    """
    if name is None:
        return DEFAULT_ENGINE
    if not isinstance(name, str):
        raise InputError(f"engine must be an engine's name ({', '.join(ENGINES)}); got {type(name).__name__}.")

    def key(s: str) -> str:
        return "".join(ch for ch in s.lower() if ch.isalnum())

    aliases = {key(n): n for n in ENGINES} | {
        "trtllm": "TensorRT-LLM",
        "tensorrt": "TensorRT-LLM",
        "llamacpp": "llama.cpp",
    }
    got = aliases.get(key(name))
    if got is not None:
        return got
    close = difflib.get_close_matches(key(name), list(aliases), n=1, cutoff=0.4)  # spelled as the keys are
    hint = f" Did you mean {aliases.get(close[0], close[0])!r}?" if close else ""
    raise UnknownNameError(f"no engine named {name!r}.{hint} Known: {', '.join(ENGINES)}.")


def _whole(value: Any, field: str, what: str) -> int | None:
    """A scheduler setting: None (the engine's default) or a whole number of at least 1, else a refusal naming
    the field."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value) or value < 1:
        raise InputError(
            f"{field} ({what}) must be a whole number of at least 1, or None for the engine's default; got {value!r}."
        )
    return int(value)


@dataclass(frozen=True)
class Scheduler:
    """An engine's scheduler as a replica runs it: the engine, its token budget per step (prompt chunks and decode
    tokens together), whether prompt chunks ride in the decode steps (``mixed_prefill``) or run as prefill batches
    of their own that pause decoding, and its cap on running requests (None: what the KV cache holds)."""

    engine: str
    token_budget: int
    mixed_prefill: bool
    max_running: int | None

    def label(self) -> str:
        """The scheduler in a few words, for a replica's output.

        Examples
        --------
        >>> scheduler_of("SGLang", "H100 SXM").label()
        'SGLang (8,192 tokens a step, separate prefill batches)'
        """
        how = "prompt chunks mixed into decode steps" if self.mixed_prefill else "separate prefill batches"
        cap = "" if self.max_running is None else f", at most {self.max_running:,} running"
        return f"{self.engine} ({self.token_budget:,} tokens a step, {how}{cap})"


def scheduler_of(
    engine: Any = None,
    gpu: GPU | str = "H100 SXM",
    *,
    max_batched_tokens: Any = None,
    mixed_prefill: bool | None = None,
    max_running: Any = None,
) -> Scheduler:
    """The :class:`Scheduler` of ``engine`` (None: :data:`DEFAULT_ENGINE`) on ``gpu``: the engine's defaults, each
    replaced by a setting given. A budget or cap out of range is refused naming its field.

    Examples
    --------
    >>> scheduler_of("vLLM", "A100 SXM 80GB", max_running=64)
    Scheduler(engine='vLLM', token_budget=2048, mixed_prefill=True, max_running=64)
    >>> scheduler_of(max_batched_tokens=0)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: max_batched_tokens (the tokens one engine step may carry: prompt chunks and decode tokens) must be a whole number of at least 1, or None for the engine's default; got 0.
    >>> scheduler_of("vLLM", "H100 SXM", max_batched_tokens=300).max_running  # its default 1,024 lowered
    300
    >>> scheduler_of("vLLM", "H100 SXM", max_batched_tokens=300, max_running=1024)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: vLLM will not start with max_batched_tokens (300) below max_running (1,024; its max_num_seqs): set max_running to at most 300, or the budget to at least 1,024, or leave max_running unset (vLLM then lowers it to the budget).
    """
    e = ENGINES[engine_name(engine)]
    g = gpu if isinstance(gpu, GPU) else gpus[gpu]
    budget, mixed_prefill, cap = _settings(max_batched_tokens, mixed_prefill, max_running)
    budget = e.budget(g) if budget is None else budget
    if cap is None:
        cap = e.max_running(g)
        if e.name == "vLLM" and cap is not None:
            cap = min(cap, budget)  # vLLM lowers its default max_num_seqs to a smaller max_num_batched_tokens
    elif e.name == "vLLM" and budget < cap:  # vLLM's SchedulerConfig refuses max_num_batched_tokens < max_num_seqs
        raise InputError(
            f"vLLM will not start with max_batched_tokens ({budget:,}) below max_running ({cap:,}; its "
            f"max_num_seqs): set max_running to at most {budget:,}, or the budget to at least {cap:,}, or leave "
            "max_running unset (vLLM then lowers it to the budget)."
        )
    return Scheduler(e.name, budget, e.mixed_prefill if mixed_prefill is None else mixed_prefill, cap)


def _settings(
    max_batched_tokens: Any, mixed_prefill: Any, max_running: Any
) -> tuple[int | None, bool | None, int | None]:
    """The scheduler settings given, checked (each None: the engine's default), each refused by its field's name."""
    budget = _whole(
        max_batched_tokens,
        "max_batched_tokens",
        "the tokens one engine step may carry: prompt chunks and decode tokens",
    )
    cap = _whole(max_running, "max_running", "the most requests an engine runs at once")
    if mixed_prefill is not None and not isinstance(mixed_prefill, bool):
        raise InputError(f"mixed_prefill must be True, False or None (the engine's default); got {mixed_prefill!r}.")
    return budget, mixed_prefill, cap


@dataclass(frozen=True)
class EngineSettings:
    """An engine and the scheduler settings a caller chose, before a GPU is known (each setting None: the engine's
    default on the GPU): what :func:`~llmcourse.planner.plan` takes as its ``engine`` besides a plain name, and the
    command line builds from ``--engine``, ``--max-batched-tokens``, ``--prefill`` and ``--max-running``. The name
    is spelled as :data:`ENGINES` spells it (an unknown one gets "did you mean"), the settings are checked as
    :func:`scheduler_of` checks them.

    Examples
    --------
    >>> EngineSettings("sglang", mixed_prefill=True)
    EngineSettings(engine='SGLang', max_batched_tokens=None, mixed_prefill=True, max_running=None)
    >>> EngineSettings(max_running=0)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: max_running (the most requests an engine runs at once) must be a whole number of at least 1, or None for the engine's default; got 0.
    """

    engine: str | None = None
    max_batched_tokens: int | None = None
    mixed_prefill: bool | None = None
    max_running: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "engine", engine_name(self.engine))
        budget, _, cap = _settings(self.max_batched_tokens, self.mixed_prefill, self.max_running)
        object.__setattr__(self, "max_batched_tokens", budget)
        object.__setattr__(self, "max_running", cap)

    def on(self, gpu: GPU | str) -> Scheduler:
        """The :class:`Scheduler` these settings give on ``gpu``.

        Examples
        --------
        >>> EngineSettings("SGLang").on("B200").token_budget
        16384
        """
        return scheduler_of(
            self.engine,
            gpu,
            max_batched_tokens=self.max_batched_tokens,
            mixed_prefill=self.mixed_prefill,
            max_running=self.max_running,
        )


def engine_settings(value: Any) -> EngineSettings:
    """An ``engine`` argument as :class:`EngineSettings`: None (the default engine), an engine's name, or the
    settings themselves.

    Examples
    --------
    >>> engine_settings("trt-llm").engine, engine_settings(None).engine
    ('TensorRT-LLM', 'vLLM')
    >>> engine_settings(3)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: engine must be an engine's name (vLLM, SGLang, TensorRT-LLM, llama.cpp) or EngineSettings(...); got int.
    """
    if isinstance(value, EngineSettings):
        return value
    if value is None or isinstance(value, str):
        return EngineSettings(value)
    raise InputError(
        f"engine must be an engine's name ({', '.join(ENGINES)}) or EngineSettings(...); got {type(value).__name__}."
    )
