"""The modelling choices behind every estimate, in one frozen object.

A back-of-the-envelope estimate is a handful of formulas plus a handful of choices: how much of a
GPU's memory a server may use, what share of the datasheet bandwidth and FLOP/s it reaches, what
precision the matrix multiplications run at, how a decode step combines memory and compute time,
whether prefill is charged to throughput, how much spare capacity a fleet keeps. Those choices live
here, and nowhere else: every estimate function of :mod:`llmcourse.planner` takes an
``assumptions=`` keyword, a preset's name or an :class:`Assumptions` object, and reads its
constants from it.

The presets name the methods the course compares:

* ``"envelope"`` - the back-of-the-envelope method: 90% of memory, datasheet bandwidth, prefill
  timed but not charged to throughput.
* ``"lab"`` - the interactive lab: 70% of the bandwidth, 50% of the FLOP/s, prefill with its
  attention term, a batch's whole cycle (prefill, then decode) charged.
* ``"capacity"`` - the capacity-planning method: 70% / 50%, decode only, and 30% of each
  replica's throughput held back, said to cover prefill and bursts.
* ``"planner"`` - the six-step design planner: 100% of both peaks, 10% of memory reserved, each
  request's prefill charged, 1.3x headroom.
* ``"course"`` - the course's own method, the one the validation chapter tests against measured
  results: 70% / 50%, compute at the weights' precision where the GPU has a peak for it, prefill
  charged, 1.3x headroom. The default everywhere.

Examples
--------
>>> a = resolve("course")
>>> a.bandwidth_efficiency, a.matmul_precision, a.count_prefill
(0.7, 'weights', True)
>>> resolve("envelope").bandwidth_efficiency
1.0
>>> resolve("curse")
Traceback (most recent call last):
...
llmcourse.errors.UnknownNameError: no assumptions preset named 'curse'. Did you mean 'course'? Known: envelope, lab, capacity, planner, course.
>>> a.replace(bandwidth_efficiency=1.2)
Traceback (most recent call last):
...
llmcourse.errors.InputError: bandwidth_efficiency (share of the datasheet memory bandwidth a decode step reaches) must be above 0 and at most 1; got 1.2.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from dataclasses import dataclass, fields
from typing import Any

from llmcourse.errors import InputError, UnknownNameError

__all__ = ["DEFAULT", "PRESETS", "Assumptions", "for_engine", "presets_table", "resolve"]

#: Allowed values of the fields that name a rule, and what each value means.
CHOICES: dict[str, dict[str, str]] = {
    "memory_rule": {
        "total": "a share of the GPUs' total memory holds weights and KV cache (vLLM's gpu_memory_utilization)",
        "free": "the weights, plus a share of what they leave for the KV cache (TensorRT-LLM's "
        "free_gpu_memory_fraction)",
        "engine": "the replica's engine's own rule: vLLM's gpu_memory_utilization (memory_fraction of the total), "
        "SGLang's mem_fraction_static (its default by the GPU's memory and the server's GPUs, 0.836 on one H100, "
        "0.856 on four B200s), TensorRT-LLM's free_gpu_memory_fraction (the weights plus memory_fraction of what they "
        "leave), llama.cpp's all of the memory read as GiB less, on each GPU, cuda_context_gib (CUDA devices), "
        "llama_cpp_compute_buffer_gib and llama_cpp_fit_margin_gib (None: vLLM's rule)",
    },
    "memory_unit": {
        "GB": "the datasheet's memory in decimal gigabytes (80 GB = 80 x 10^9 bytes)",
        "GiB": "the HBM's binary size (an 80 GB GPU has 80 GiB = 85.9 x 10^9 bytes)",
    },
    "matmul_precision": {
        "weights": "matmuls run at the precision the weights' format multiplies at, where the GPU has a peak for "
        "it, else BF16: FP8 and W8A8 at FP8, NVFP4 (W4A4) at FP4; weight-only formats (INT8, INT4, W4A16 as GPTQ "
        "and AWQ run on Marlin, MXFP4 as engines run gpt-oss) multiply at BF16; a checkpoint whose tensor groups "
        "differ, at the precision of the group holding most of a token's matmul parameters",
        "bf16": "matmuls always run at BF16",
    },
    "step_rule": {
        "max": "a decode step takes the slower of its memory time and its compute time, totalled over the step",
        "sum": "a decode step adds its kernels' times: the weight matmuls (slower of weight reads and their "
        "FLOPs) plus attention (slower of KV reads and attention FLOPs)",
    },
    "admission": {
        "final": "a batch is admitted as if every conversation held its final length (a static batch)",
        "blocks": "a batch is admitted on the KV blocks in use, as vLLM and SGLang page the cache: staggered "
        "conversations hold their prompt and half their answer on average, spread T_a sqrt(B / 12) over the batch; "
        "the mean plus admission_spreads spreads must fit",
    },
    "prefill_schedule": {
        "added": "each request's prefill time is added to the decode steps (to the throughput's cycle and, with "
        "prefill_interference, to every user's time per token)",
        "engine": "the engine's scheduler: a step carries decode tokens and a prompt chunk within the engine's token "
        "budget (vLLM, TensorRT-LLM, llama.cpp), or prefill batches of their own pause decoding (SGLang without mixed "
        "chunks); the time per token, the throughput and the first token follow from those steps (a replica whose "
        "requests arrive prefilled, count_prefill and prefill_interference off as in a disaggregated decode pool, "
        "runs decode steps alone under the engine's cap)",
    },
    "speculative_overhead": {
        "per_step": "every draft step is a decode step of its own and pays the per-step overhead (step_overhead_ms), "
        "as the verification does",
        "per_cycle": "a speculative cycle pays the per-step overhead once, with its verification; each draft step runs "
        "inside the same engine step (a captured graph) and pays only a launch-scale cost: draft_step_overhead_ms for "
        "an EAGLE head or an MTP block, draft_model_step_overhead_ms for a separate draft model",
    },
    "allreduce_algorithm": {
        "ring": "every all-reduce is a ring over the link: 2(N-1) latency steps and 2(N-1)/N of the bytes (NCCL's "
        "ring, the alpha-beta model)",
        "engine": "the engines' own kernels inside an NVLink domain, the fastest of one-shot, two-shot and the ring "
        "(vLLM custom_all_reduce, TensorRT-LLM's AUTO strategy); across nodes a hierarchical all-reduce (in each node, "
        "then between nodes)",
    },
    "expert_dispatch": {
        "per_expert": "an all-to-all sends a token once to each of its k experts, at the activation precision, "
        "both ways",
        "per_gpu": "an all-to-all sends a token once to each GPU that holds one of its experts (DeepEP, "
        "pplx-kernels, TensorRT-LLM wide-EP), within the router's expert groups, at dispatch_bytes per value; the "
        "combine returns one sum per GPU at the activation precision",
    },
    "four_bit_factor_applies_to": {
        "weights": "the four-bit factor slows the weight reads alone: the 4-bit matmul kernels (Marlin and "
        "Machete W4A16, the MXFP4 MoE kernels) unpack and scale every weight as they read it, while attention reads "
        "the KV cache at the ordinary share whatever the weights' format",
        "all_reads": "the four-bit factor slows every byte of the step, the KV cache's too",
    },
    "kv_read_context": {
        "average": "each decode step reads a sequence's KV at its average context (prompt + answer / 2)",
        "final": "each decode step reads a sequence's KV at its final context (prompt + answer)",
    },
}

#: One line per field, for the book's table and the error messages.
MEANING: dict[str, str] = {
    "memory_rule": "how the usable memory is set",
    "memory_fraction": "share of memory the server may use (rule 'total'), or share of what the weights "
    "leave that the KV cache gets (rule 'free'); with rule 'engine', vLLM's gpu_memory_utilization and "
    "TensorRT-LLM's free_gpu_memory_fraction (SGLang sets its own share)",
    "memory_unit": "what a GPU's listed memory means",
    "bandwidth_efficiency": "share of the datasheet memory bandwidth a decode step reaches",
    "compute_efficiency": "share of the datasheet dense FLOP/s that matmuls reach",
    "matmul_precision": "precision the matmuls run at",
    "step_rule": "how a decode step combines memory and compute time",
    "decode_attention_flops": "decode counts attention FLOPs (QK and AV) besides the matmuls",
    "prefill_attention": "prefill counts the causal attention term (quadratic in the prompt)",
    "admission": "how the batch a replica admits is sized",
    "admission_spreads": "with admission 'blocks': spreads of the KV in use above its mean that a batch is sized to "
    "hold (2: the staggered conversations of a full batch outgrow the cache about 2% of the time, a normal's upper "
    "tail; the engine then preempts one and recomputes it later)",
    "prefill_schedule": "how prefill shares the GPUs with decoding",
    "kv_read_context": "the context at which a decode step reads each sequence's KV cache",
    "count_prefill": "throughput and cost charge each request's prefill to the replica",
    "headroom": "capacity multiplier a fleet is sized with (1.3 = 30% more than the demand)",
    "flops_per_param": "FLOPs per parameter per token (a multiply and an add)",
    "step_overhead_ms": "fixed time per decode step for kernel launches and scheduling (ms)",
    "layer_floor_us": "fixed time per layer per forward pass that its kernels take however few weights and tokens they "
    "touch: launch gaps and tails under CUDA graphs, small matmuls that cannot fill the GPU, the waits before each "
    "collective (microseconds)",
    "speculative_overhead": "how often a speculative cycle pays the per-step overhead: every draft step, or once "
    "per cycle",
    "draft_step_overhead_ms": "fixed time per draft step of an EAGLE head or an MTP block run inside the engine's "
    "step, under rule speculative_overhead 'per_cycle' (ms): a graph launch and the sampling between draft steps",
    "draft_model_step_overhead_ms": "fixed time per draft step of a separate draft model, under rule "
    "speculative_overhead 'per_cycle' (ms): its own graph of all its layers, launched once per draft step",
    "prefill_interference": "a user's time per token includes the prefills of the other requests of its batch, "
    "which run between its decode steps",
    "kv_replication": "KV heads are replicated when a replica has more GPUs than KV heads (each GPU keeps at least "
    "one), and MLA's latent is replicated on every GPU",
    "speculation": "speculative decoding of every deployment (a llmcourse.replica.speculative.Speculation); off by default",
    "communication": "a replica of several GPUs pays for its collectives (all-reduces, all-to-alls, pipeline "
    "sends) by the alpha-beta model on its link",
    "link_efficiency": "share of a link's bandwidth a collective reaches",
    "activation_bytes": "bytes per activation value the GPUs exchange (BF16: 2)",
    "allreduce_algorithm": "which all-reduce a collective of a tensor-parallel group runs",
    "engine_allreduce_us": "fixed cost of an engine's own all-reduce kernel (one-shot, two-shot): its launch and "
    "flag exchange, in microseconds",
    "expert_dispatch": "what the expert-parallel all-to-all sends",
    "dispatch_bytes": "bytes per activation value an expert dispatch sends (rule 'per_gpu'; FP8 with one FP32 scale "
    "per 128 values: 1 + 4/128)",
    "request_overhead_ms": "fixed time each request spends besides its prefill before its first token: the HTTP "
    "round trip, tokenising, scheduling (ms)",
    "closed_loop_wave_share": "share of the other requests' prefills of a closed loop a new request waits behind, half "
    "of them on average (the loop's requests come back in waves), in an engine that mixes prefills into its decode "
    "steps; an engine that runs each prefill on its own waits behind all of them (share 1)",
    "prefill_chunk_tokens": "tokens one engine iteration may process in the queueing simulator, decode tokens first "
    "and then prompt chunks (vLLM's max_num_batched_tokens, SGLang's chunked_prefill_size, TensorRT-LLM's "
    "max_num_tokens); None: prompts prefilled whole while decoding waits",
    "four_bit_bandwidth_factor": "share of the bandwidth efficiency a decode step keeps with 4-bit weights (FP4, "
    "INT4: the kernels also read block scales and dequantise), on the reads four_bit_factor_applies_to names",
    "four_bit_factor_applies_to": "which reads of a decode step four_bit_bandwidth_factor slows",
    "llama_cpp_bandwidth_efficiency": "share of the datasheet memory bandwidth a decode step of llama.cpp reaches "
    "(its own kernels, 8- and 16-bit GGUF weights; None: bandwidth_efficiency, as every engine)",
    "llama_cpp_four_bit_bandwidth_factor": "share of llama.cpp's bandwidth efficiency its decode keeps with 4-bit GGUF "
    "weights (Q4_K_M, Q4_0: its kernels dequantise the blocks as they read them; None: four_bit_bandwidth_factor)",
    "llama_cpp_compute_efficiency": "share of the datasheet dense 16-bit FLOP/s llama.cpp's prompt processing reaches "
    "(None: compute_efficiency)",
    "llama_cpp_step_overhead_ms": "fixed time per decode step of llama.cpp, one sequence (ms; None: step_overhead_ms)",
    "llama_cpp_layer_floor_us": "fixed time per layer per forward pass of llama.cpp (microseconds; None: "
    "layer_floor_us; 0: its fitted step overhead carries all of its fixed time)",
    "llama_cpp_fit_margin_gib": "memory llama.cpp's --fit leaves free on each GPU beyond its weights, KV cache and "
    "compute buffers, with memory_rule 'engine' (GiB: its default 1,024 MiB; 0: run with --fit off; None: vLLM's "
    "share of the total, as every engine)",
    "llama_cpp_compute_buffer_gib": "memory llama.cpp's compute buffers take on each GPU at its default ubatch of "
    "512 (GiB; about the 512 rows of logits of a 128k vocabulary; a model whose vocabulary's logits take more "
    "counts those)",
    "cuda_context_gib": "memory a CUDA GPU's driver and context take before llama.cpp allocates anything, so its "
    "free memory is the GPU's GiB less this (GiB; 0 on Apple's unified memory, whose Metal limit is already the "
    "GPU's share)",
    "gpu_idle_power_fraction": "share of its rated power (TDP) a GPU draws while it holds a model but serves nothing",
    "gpu_load_power_fraction": "share of its rated power (TDP) a GPU draws while it serves at full load",
    "host_power_fraction": "the server around each GPU (CPUs, memory, NICs, switches, fans) draws this share of the "
    "GPU's rated power, busy or idle",
    "depreciation_years": "years over which owned GPUs and servers are written off (straight line, nothing left)",
    "host_nameplate_power_fraction": "the server around each GPU draws at most this share of the GPU's rated power "
    "by its nameplate rating (what a site budgets its IT power to, above the measured peak of host_power_fraction)",
    "gpus_per_server": "GPUs in one server (a site is filled with whole servers)",
}


def _finite(value: float) -> bool:
    """A finite number that a float holds (an integer of 400 digits is not)."""
    try:
        return math.isfinite(value) and math.isfinite(float(value))
    except OverflowError:
        return False


@dataclass(frozen=True)
class Assumptions:
    """Every modelling choice of an estimate (see the module docstring for the presets).

    Build a variant with :meth:`replace`, never by editing a preset: the object is frozen and
    its fields are checked when it is made.

    Examples
    --------
    >>> fast = resolve("course").replace(bandwidth_efficiency=0.8)
    >>> fast.name, fast.bandwidth_efficiency, resolve("course").bandwidth_efficiency
    ('course (bandwidth_efficiency=0.8)', 0.8, 0.7)
    """

    name: str
    summary: str
    memory_rule: str = "total"
    memory_fraction: float = 0.9
    memory_unit: str = "GB"
    bandwidth_efficiency: float = 0.7
    compute_efficiency: float = 0.5
    matmul_precision: str = "weights"
    step_rule: str = "max"
    decode_attention_flops: bool = False
    prefill_attention: bool = True
    kv_read_context: str = "average"
    admission: str = "final"
    admission_spreads: float = 2.0
    prefill_schedule: str = "added"
    count_prefill: bool = True
    headroom: float = 1.3
    flops_per_param: float = 2.0
    step_overhead_ms: float = 0.0
    layer_floor_us: float = 0.0
    speculative_overhead: str = "per_step"
    draft_step_overhead_ms: float = 0.0
    draft_model_step_overhead_ms: float = 0.0
    prefill_interference: bool = True
    communication: bool = True
    link_efficiency: float = 0.8
    activation_bytes: float = 2.0
    allreduce_algorithm: str = "ring"
    engine_allreduce_us: float = 3.5
    expert_dispatch: str = "per_expert"
    dispatch_bytes: float = 1.03125
    four_bit_bandwidth_factor: float = 1.0
    four_bit_factor_applies_to: str = "all_reads"
    request_overhead_ms: float = 0.0
    closed_loop_wave_share: float = 0.0
    prefill_chunk_tokens: int | None = None
    kv_replication: bool = True
    speculation: Any = None
    # llama.cpp's own kernels (engine "llama.cpp", :func:`for_engine`); None: the values above, as for every engine
    llama_cpp_bandwidth_efficiency: float | None = None
    llama_cpp_four_bit_bandwidth_factor: float | None = None
    llama_cpp_compute_efficiency: float | None = None
    llama_cpp_step_overhead_ms: float | None = None
    llama_cpp_layer_floor_us: float | None = None
    llama_cpp_fit_margin_gib: float | None = None
    llama_cpp_compute_buffer_gib: float = 0.0
    cuda_context_gib: float = 0.0
    # The whole bill (chapter Sizing the fleet). Course assumptions, each beside its evidence:
    # - idle: an H100 that holds a model draws its bare idle plus +26-50 W for the CUDA context (arXiv 2605.23918,
    #   "The Model Parking Tax", 14 H100s over 18 days); a published H200 run idles at 80 W of its 700 W. About
    #   100 W of 700 W: 0.15.
    # - load: the rated power (TDP), the figure a site is provisioned for; an upper bound: memory-bound decode
    #   draws less (137-300 W of an H200's 700 W, arXiv 2605.11999), so energy per token is on the high side.
    # - host: an 8 x H100 HGX node peaked at 8.4 kW with its GPUs near full use (Latif et al., IEEE Access 13,
    #   2025; rated 10.2 kW): (8.4 - 8 x 0.7) / (8 x 0.7) = 0.5 of the GPUs' rated power.
    # - years: Nebius writes GPUs off over 4 years, CoreWeave over 6 (bizety.com, 2025-09-23): the shorter.
    # - nameplate: the same 8 x H100 node is rated 10.2 kW (DGX H100 maximum system power), the figure a site budgets
    #   its IT power to: (10.2 - 8 x 0.7) / (8 x 0.7) = 0.82 of the GPUs' rated power; servers of 8 GPUs (HGX H100).
    # The sources' presets have no energy model; they take the same values.
    gpu_idle_power_fraction: float = 0.15
    gpu_load_power_fraction: float = 1.0
    host_power_fraction: float = 0.5
    depreciation_years: float = 4.0
    host_nameplate_power_fraction: float = (10_200 - 8 * 700) / (8 * 700)
    gpus_per_server: int = 8

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            what = f"{f.name} ({MEANING.get(f.name, f.name)})"
            if f.name in CHOICES:
                if value not in CHOICES[f.name]:
                    close = difflib.get_close_matches(str(value), list(CHOICES[f.name]), n=1, cutoff=0.3)
                    hint = f" Did you mean {close[0]!r}?" if close else ""
                    raise InputError(
                        f"{what} must be one of {', '.join(map(repr, CHOICES[f.name]))}; got {value!r}.{hint}"
                    )
            elif f.type == "bool":
                if not isinstance(value, bool) and type(value).__name__ != "bool_":  # numpy.bool_ is a flag too
                    raise InputError(f"{what} must be True or False; got {value!r}.")
                object.__setattr__(self, f.name, bool(value))
            elif f.type == "float" and (
                isinstance(value, bool) or not isinstance(value, int | float) or not _finite(value)
            ):
                raise InputError(f"{what} must be a finite number; got {value!r}.")
        for name in (
            "memory_fraction",
            "bandwidth_efficiency",
            "compute_efficiency",
            "link_efficiency",
            "four_bit_bandwidth_factor",
        ):
            if not 0 < getattr(self, name) <= 1:
                raise InputError(
                    f"{name} ({MEANING[name]}) must be above 0 and at most 1; got {getattr(self, name)!r}."
                )
        self._check_bill_fields()
        if self.speculation is not None and not hasattr(self.speculation, "draft_tokens"):
            raise InputError(
                f"speculation ({MEANING['speculation']}) must be None or a llmcourse.replica.speculative.Speculation; "
                f"got {self.speculation!r}."
            )
        self._check_llama_cpp()
        if self.headroom < 1:
            raise InputError(f"headroom ({MEANING['headroom']}) must be at least 1; got {self.headroom!r}.")
        if self.flops_per_param <= 0:
            raise InputError(f"flops_per_param must be above 0; got {self.flops_per_param!r}.")
        if self.request_overhead_ms < 0:
            raise InputError(
                f"request_overhead_ms ({MEANING['request_overhead_ms']}) must be 0 or more; "
                f"got {self.request_overhead_ms!r}."
            )
        if not 0 <= self.closed_loop_wave_share <= 1:
            raise InputError(
                f"closed_loop_wave_share ({MEANING['closed_loop_wave_share']}) must be from 0 to 1; "
                f"got {self.closed_loop_wave_share!r}."
            )
        if self.admission_spreads < 0:
            raise InputError(
                f"admission_spreads ({MEANING['admission_spreads']}) must be 0 or more; got {self.admission_spreads!r}."
            )
        chunk = self.prefill_chunk_tokens
        if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
            raise InputError(
                f"prefill_chunk_tokens ({MEANING['prefill_chunk_tokens']}) must be a whole number of tokens, 1 or "
                f"more (engines use 512 to 16,384), or None for whole prompts; got {chunk!r}."
            )
        if self.engine_allreduce_us < 0:
            raise InputError(
                f"engine_allreduce_us ({MEANING['engine_allreduce_us']}) must be 0 or more; got {self.engine_allreduce_us!r}."
            )
        if self.dispatch_bytes <= 0:
            raise InputError(
                f"dispatch_bytes ({MEANING['dispatch_bytes']}) must be above 0; got {self.dispatch_bytes!r}."
            )
        if self.activation_bytes <= 0:
            raise InputError(
                f"activation_bytes ({MEANING['activation_bytes']}) must be above 0; got {self.activation_bytes!r}."
            )
        for name in ("step_overhead_ms", "layer_floor_us", "draft_step_overhead_ms", "draft_model_step_overhead_ms"):
            if getattr(self, name) < 0:
                raise InputError(f"{name} ({MEANING[name]}) must be 0 or more; got {getattr(self, name)!r}.")

    def _check_bill_fields(self) -> None:
        """The power model's and the bill's fields (chapter What a fleet costs): each share in its range."""
        if not 0 <= self.gpu_idle_power_fraction < 1 or not 0 < self.gpu_load_power_fraction <= 1:
            name = "gpu_idle_power_fraction" if not 0 <= self.gpu_idle_power_fraction < 1 else "gpu_load_power_fraction"
            bounds = "0 or more and below 1" if name == "gpu_idle_power_fraction" else "above 0 and at most 1"
            raise InputError(f"{name} ({MEANING[name]}) must be {bounds}; got {getattr(self, name)!r}.")
        if self.gpu_idle_power_fraction > self.gpu_load_power_fraction:
            raise InputError(
                f"gpu_idle_power_fraction ({self.gpu_idle_power_fraction!r}) cannot exceed gpu_load_power_fraction "
                f"({self.gpu_load_power_fraction!r}): a GPU draws more at full load than idle."
            )
        if self.host_power_fraction < 0:
            raise InputError(
                f"host_power_fraction ({MEANING['host_power_fraction']}) must be 0 or more; "
                f"got {self.host_power_fraction!r}."
            )
        if self.host_nameplate_power_fraction < self.host_power_fraction:
            raise InputError(
                f"host_nameplate_power_fraction ({MEANING['host_nameplate_power_fraction']}) must be at least "
                f"host_power_fraction ({self.host_power_fraction!r}): a nameplate rating is not below the measured "
                f"peak; got {self.host_nameplate_power_fraction!r}."
            )
        if (
            isinstance(self.gpus_per_server, bool)
            or not isinstance(self.gpus_per_server, int)
            or self.gpus_per_server < 1
        ):
            raise InputError(
                f"gpus_per_server ({MEANING['gpus_per_server']}) must be a whole number, 1 or more (8 for an HGX "
                f"H100 server); got {self.gpus_per_server!r}."
            )
        if self.depreciation_years <= 0:
            raise InputError(
                f"depreciation_years ({MEANING['depreciation_years']}) must be above 0; got {self.depreciation_years!r}."
            )

    def _check_llama_cpp(self) -> None:
        """The llama.cpp fields: each None, or a share above 0 and at most 1 (an overhead, a floor or a memory
        allowance: 0 or more)."""
        for name in (
            "llama_cpp_bandwidth_efficiency",
            "llama_cpp_four_bit_bandwidth_factor",
            "llama_cpp_compute_efficiency",
            "llama_cpp_step_overhead_ms",
            "llama_cpp_layer_floor_us",
            "llama_cpp_fit_margin_gib",
            "llama_cpp_compute_buffer_gib",
            "cuda_context_gib",
        ):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or not _finite(value):
                raise InputError(f"{name} ({MEANING[name]}) must be a finite number or None; got {value!r}.")
            if name.endswith(("_ms", "_us", "_gib")) and value < 0:
                raise InputError(f"{name} ({MEANING[name]}) must be 0 or more; got {value!r}.")
            if not name.endswith(("_ms", "_us", "_gib")) and not 0 < value <= 1:
                raise InputError(f"{name} ({MEANING[name]}) must be above 0 and at most 1; got {value!r}.")

    def replace(self, **changes: Any) -> Assumptions:
        """A copy with some fields changed (``None`` values are ignored), named after the change."""
        changes = {k: v for k, v in changes.items() if v is not None}
        known = {f.name for f in fields(self)} - {"name", "summary"}
        unknown = [k for k in changes if k not in known]
        if unknown:
            close = difflib.get_close_matches(unknown[0], sorted(known), n=1, cutoff=0.5)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise InputError(f"assumptions have no field {unknown[0]!r}.{hint} Fields: {', '.join(sorted(known))}.")
        changes = {k: v for k, v in changes.items() if getattr(self, k) != v}
        if not changes:
            return self
        label = ", ".join(f"{k}={v!r}" for k, v in changes.items())
        return dataclasses.replace(self, name=f"{self.name} ({label})", **changes)

    @property
    def headroom_fraction(self) -> float:
        """The share of a replica's throughput the headroom keeps back: 1 - 1 / headroom."""
        return 1 - 1 / self.headroom


PRESETS: dict[str, Assumptions] = {
    a.name: a
    for a in (
        Assumptions(
            "envelope",
            "the back-of-the-envelope method: 90% of memory, datasheet bandwidth, prefill not charged",
            bandwidth_efficiency=1.0,
            matmul_precision="bf16",
            prefill_attention=False,
            kv_read_context="final",
            count_prefill=False,
            headroom=1.0,
            prefill_interference=False,
            kv_replication=False,
            communication=False,
        ),
        Assumptions(
            "lab",
            "the interactive lab: 70% bandwidth, 50% FLOP/s, prefill with attention, the whole cycle charged",
            matmul_precision="bf16",
            headroom=1.0,
            prefill_interference=False,
            kv_replication=False,
            communication=False,
        ),
        Assumptions(
            "capacity",
            "the capacity-planning method: 70% / 50%, decode only, 30% of throughput held back for prefill",
            matmul_precision="bf16",
            prefill_attention=False,
            kv_read_context="final",
            count_prefill=False,
            headroom=1 / (1 - 0.3),  # "keep 30% of each replica's throughput back"
            prefill_interference=False,
            kv_replication=False,
            communication=False,
        ),
        Assumptions(
            "planner",
            "the six-step planner: 100% of both peaks, 10% memory reserve, prefill charged, 1.3x headroom",
            bandwidth_efficiency=1.0,
            compute_efficiency=1.0,
            matmul_precision="bf16",
            prefill_attention=False,
            prefill_interference=False,
            kv_replication=False,
            communication=False,
        ),
        Assumptions(
            "course",
            "the course's validated method: 70% / 50%, compute at the weights' precision, prefill charged to the "
            "replica and to the time per token, the engines' collectives on the link, 1 ms per step and 23 us per "
            "layer, 100 ms per request, a closed loop's waves",
            # Fitted, in the open, to the 81 measured Llama-3.1-70B rows at concurrency 4 (tensor-parallel 1-8
            # on H100, H200 and B200; TensorRT-LLM and vLLM; chapter Many GPUs), with the layers' floor below.
            step_overhead_ms=1.0,
            # Engines run a speculative cycle's draft steps inside one engine step: vLLM V1's proposer
            # (SpecDecodeBaseProposer.propose, vllm/v1/spec_decode/eagle.py; EagleProposer and DraftModelProposer
            # share it) loops over the k draft forwards in the model runner's step, each a CUDA-graph replay; SGLang's
            # EAGLEWorker captures the speculative_num_steps draft forwards in one graph
            # (EAGLEDraftCudaGraphRunner, python/sglang/srt/speculative/eagle_draft_cuda_graph_runner.py);
            # TensorRT-LLM's one-model EAGLE-3 / MTP puts the drafter in the target's model code and launches the whole
            # drafting loop as a single CUDA graph. The scheduler's overhead is paid once per cycle, with the
            # verification; a draft step pays its reads and FLOPs and a launch-scale cost. Not fitted (no measured rows
            # isolate it): a few tens of microseconds for a head or an MTP block (one small graph plus the argmax and
            # input update between steps), more for a separate draft model (its own graph of all its layers, and in
            # TensorRT-LLM's two-model mode a draft forward the executor launches per step).
            speculative_overhead="per_cycle",
            draft_step_overhead_ms=0.03,
            draft_model_step_overhead_ms=0.1,
            four_bit_bandwidth_factor=0.6,
            # Only the weights: the 4-bit kernels dequantise the weights they read (vLLM's MarlinLinearKernel and
            # the Machete kernel for W4A16, its Mxfp4MoEMethod's fused MoE kernels for gpt-oss; TensorRT-LLM's
            # W4A16 and MXFP4 MoE GEMMs); the attention kernels (FlashAttention, FlashInfer, TensorRT-LLM's XQA)
            # read a BF16 or FP8 KV cache, whatever the weights' format.
            four_bit_factor_applies_to="weights",
            # The median of measured minus predicted time to first token over the measured rows with 1-4
            # requests in flight (where a request barely queues); evidence() refits it in every fold with the wave
            # share, on the times to first token (chapter Validation shows the values).
            request_overhead_ms=100.0,
            # A closed loop of fixed answer lengths comes back in waves: each request waits behind the prefills of the
            # others of its wave that the engine's decode steps let bunch ahead of it (validation.closed_loop_ttft).
            # Fitted, in the open, to the measured times to first token of TensorRT-LLM and vLLM on the aggregated
            # aiconfigurator rows at the course's other values (least median |ln(predicted / measured)|, on
            # validation.FIT_GRIDS): 0.14; refitted by evidence() in every fold (chapter Validation shows the values).
            # SGLang runs each prefill batch on its own (its mixed chunks are off by default): share 1, not fitted.
            closed_loop_wave_share=0.14,
            # The engines' own picture (chapter Prefill): admission on the KV blocks in use, and the steps their
            # schedulers run (llmcourse.replica.scheduler names each engine's defaults and where they are set).
            admission="blocks",
            prefill_schedule="engine",
            # The memory each engine lends its weights and KV cache, as it sizes it (llmcourse.replica.scheduler.
            # engine_memory_rule): vLLM's gpu_memory_utilization 0.9 of the total (vllm/config/cache.py CacheConfig),
            # SGLang's mem_fraction_static by the GPU's memory (python/sglang/srt/server_args.py
            # ServerArgs._handle_gpu_memory_settings: 0.836 on one H100, 0.856 on four B200s), TensorRT-LLM's
            # free_gpu_memory_fraction 0.9 of what the weights leave (tensorrt_llm/llmapi/llm_args.py KvCacheConfig).
            # llama.cpp allocates its weights and a KV cache of its context, not a share: all of the GPU's memory read
            # as GiB, less the CUDA context, its compute buffers and its --fit margin (below, with where llama.cpp sets them).
            # A replica that names no engine runs vLLM's rule, the sources' "90% of memory" (memory_fraction 0.9).
            memory_rule="engine",
            # The engines' default token budget per iteration on H100-class GPUs, which the queueing simulator
            # schedules by: vLLM's max_num_batched_tokens for its OpenAI server on a GPU of 70 GiB or more
            # (vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults: 8,192; 2,048 on smaller GPUs and A100),
            # SGLang's chunked_prefill_size (python/sglang/srt/server_args.py, ServerArgs: 8,192 on 80-160 GB GPUs,
            # 2,048 / 4,096 on smaller ones, 16,384 on larger), TensorRT-LLM's max_num_tokens (BuildConfig: 8,192).
            # The sources' presets prefill whole prompts (None), as their figures were made.
            prefill_chunk_tokens=8_192,
            # The engines' collectives (chapter Many GPUs): vLLM's custom_all_reduce, TensorRT-LLM's AllReduce AUTO and
            # FlashInfer's trtllm_allreduce_fusion at decode, NCCL across nodes. 3.5 us: aiconfigurator's measured
            # custom all-reduce of a few kilobytes with CUDA graphs, 4.3-4.5 us on 2 and 8 H100s (vLLM 0.14), 3.5 us
            # (TensorRT-LLM 1.2) and 4.8 us on 8 B200s, less the link's one flag latency (0.8-1.2 us).
            allreduce_algorithm="engine",
            engine_allreduce_us=3.5,
            # The ring's 2(N-1) latency steps used to stand in for what every layer's kernels cost however little
            # they read (a floor that does not shrink as more GPUs split the weights); with the engines' flat
            # all-reduce that floor is counted in the open (replica.step.layer_floor_ms). Fitted as the per-step
            # overhead was, on the 81 measured Llama-3.1-70B rows at concurrency 4 at the course's other values
            # (tensor-parallel 1-8, H100, H200, B200; TensorRT-LLM and vLLM): 23 us a layer puts 77 of them within
            # 1.25x, the worst 1.29x (18 us: 69, 1.38x; 20 us: 74, 1.34x; 26 us: 77, 1.30x; 28 us: 76, 1.30x; 30 us:
            # 73), with a waiting prompt in a step of its own (formula chunked_mean_step). The validation chapter
            # refits it, with the bandwidth efficiency, on every measured row and in every held-out fold.
            layer_floor_us=23.0,
            # DeepEP's dispatch in FP8 (its README: "FP8 dispatching and BF16 combining"), pplx-kernels and TensorRT-LLM
            # wide-EP: a token once per destination GPU.
            expert_dispatch="per_gpu",
            dispatch_bytes=1.03125,
            # llama.cpp's own kernels (engine "llama.cpp", for_engine): fitted, in the open, to the 48 public
            # llama-bench rows of llmcourse/data/llama_cpp_public.csv (12 machines: RTX 3070 to 4090, Apple M1 to M4
            # and M2 Ultra; Q4_K_M and F16; each row's source in the file) by least squares on ln(predicted /
            # measured) through the decode step and the prefill (llmcourse.validation.llama_cpp.fit_llama_cpp):
            # decode reaches 84% of the bandwidth with F16 weights and 69% with Q4_K_M (0.84 x 0.82), plus 0.5 ms a
            # token; prompt processing 81% of the dense 16-bit FLOP/s. Held out by machine, decode is off by a
            # median 1.13x and prompt processing by 1.18x, every row within 2x (chapter On your own machine shows
            # the fit and checks these values against it). The datacenter factors above (0.7 x 0.6 for 4-bit,
            # 1 ms, 0.5) had llama.cpp 1.55x too slow at decode and 1.66x at prompt processing.
            llama_cpp_bandwidth_efficiency=0.84,
            llama_cpp_four_bit_bandwidth_factor=0.82,
            llama_cpp_compute_efficiency=0.81,
            llama_cpp_step_overhead_ms=0.5,
            # The layers' floor above was fitted on the datacenter engines' rows (CUDA graphs, tensor parallelism);
            # llama.cpp's one fixed time per token (0.5 ms) was fitted with no floor beside it and carries all of
            # its fixed time, so llama.cpp counts none (the fit holds it at this value).
            llama_cpp_layer_floor_us=0.0,
            # The memory llama.cpp keeps on each device beside its weights and KV cache, with memory_rule "engine"
            # (llmcourse.replica.scheduler.engine_memory_rule), three terms, each from llama.cpp's own accounting
            # (ggml-org/llama.cpp common/fit.cpp, llama_params_fit_impl, and common/common.h, read at 001d906): --fit
            # projects each device's use as model + context (KV) + compute buffers and requires the device's FREE
            # memory (ggml_backend_dev_memory: cudaMemGetInfo on CUDA, recommendedMaxWorkingSetSize on Metal) less
            # that projection to be at least fit_params_target = 1,024 MiB a device ("margin per device in bytes for
            # fitting parameters to free memory"); if not, it shrinks an unset context, then moves layers to the CPU.
            # - llama_cpp_fit_margin_gib 1.0: that default margin (0: the hard limit, run with --fit off -ngl 99).
            # - llama_cpp_compute_buffer_gib 0.25: the compute buffers at the default ubatch of 512, above all the
            #   logits of 512 rows: 512 x 128,256 x 4 B = 250.5 MiB for Llama 3's vocabulary. A larger vocabulary's
            #   logits count instead where they are more (llmcourse.replica.memory.llama_cpp_compute_buffer_gib,
            #   formula llama_cpp_logits_buffer: Gemma 3's 262,208 tokens take 512 MiB).
            # - cuda_context_gib 0.5: a headless CUDA context with cuBLAS, what a CUDA device's free memory sits below
            #   its size by. Public llama.cpp logs show an RTX 4090 with 23,633 MiB free of 24,576 (0.92 GiB less) and
            #   an RTX 5090 with 31,518-31,600 MiB free of 32,768 (1.1-1.2 GiB less), but those 0.9-1.2 GiB likely
            #   include a desktop's share of a card that drives a display. The public llama-bench rows of an RTX 4080
            #   (16 GiB) running Llama-3.1-8B F16 at their own context of 512 (llmcourse/data/llama_cpp_public.csv,
            #   rows 11, 12) bound the headless share: they ran, with 14.957 GiB of weights + 0.0625 GiB of KV +
            #   0.25 GiB of compute buffers, so that card's context took at most 16 - 15.27 = 0.73 GiB. A GPU that
            #   also drives a display loses another 0.3-1.5 GiB. Metal has no such term (its limit is the
            #   working-set share the catalog holds): 0 on Apple's unified memory
            #   (llmcourse.replica.memory.memory_rule_of decides by the GPU's memory_share).
            # The device's memory is read as GiB, as llama.cpp reads it (CUDA's total in MiB; Metal's
            # recommendedMaxWorkingSetSize, 49,152 MiB on a 64 GB Mac). llama-bench, which measured
            # llmcourse/data/llama_cpp_public.csv, runs no fit and may use the margin.
            llama_cpp_fit_margin_gib=1.0,
            llama_cpp_compute_buffer_gib=0.25,
            cuda_context_gib=0.5,
        ),
    )
}

#: The preset every estimate uses when none is named.
DEFAULT = PRESETS["course"]


def resolve(assumptions: Assumptions | str | None = None) -> Assumptions:
    """The :class:`Assumptions` for a preset name, an object, or ``None`` (the course's default)."""
    if assumptions is None:
        return DEFAULT
    if isinstance(assumptions, Assumptions):
        return assumptions
    if isinstance(assumptions, str):
        key = assumptions.strip().lower()
        if key in PRESETS:
            return PRESETS[key]
        close = difflib.get_close_matches(key, list(PRESETS), n=2, cutoff=0.4)
        hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownNameError(f"no assumptions preset named {assumptions!r}.{hint} Known: {', '.join(PRESETS)}.")
    raise InputError(
        f"assumptions must be a preset name ({', '.join(map(repr, PRESETS))}) or an Assumptions object; "
        f"got {type(assumptions).__name__}."
    )


def for_engine(a: Assumptions, engine: str | None) -> Assumptions:
    """The assumptions a replica of ``engine`` runs under: for ``"llama.cpp"``, its own kernels' shares and step
    overhead (the ``llama_cpp_*`` fields that are set) in place of the general ones, the ``llama_cpp_*`` fields
    then None (applied: a second call changes nothing); any other engine, or a preset that sets none of them (the
    sources' methods), the assumptions unchanged. The name is kept.

    Measured llama.cpp rows split into times at 100% (``llmcourse.validation.load_components``) carry llama.cpp's
    share over the general one, so a refit of the general shares on them (``evidence``, ``own_benchmark``) moves
    llama.cpp's in proportion; a replica of engine llama.cpp takes the ``llama_cpp_*`` values as they are: to refit
    those on your own rows, fit ``llmcourse.validation.llama_cpp.fit_llama_cpp(from_llama_bench(rows))``.

    Examples
    --------
    >>> a = for_engine(resolve("course"), "llama.cpp")
    >>> a.bandwidth_efficiency == resolve("course").llama_cpp_bandwidth_efficiency, a.name
    (True, 'course')
    >>> a.llama_cpp_bandwidth_efficiency is None, for_engine(a, "llama.cpp") is a
    (True, True)
    >>> for_engine(resolve("course"), "vLLM") is resolve("course"), for_engine(resolve("lab"), "llama.cpp").name
    (True, 'lab')
    """
    if engine != "llama.cpp":
        return a
    swap = {
        "bandwidth_efficiency": a.llama_cpp_bandwidth_efficiency,
        "four_bit_bandwidth_factor": a.llama_cpp_four_bit_bandwidth_factor,
        "compute_efficiency": a.llama_cpp_compute_efficiency,
        "step_overhead_ms": a.llama_cpp_step_overhead_ms,
        "layer_floor_us": a.llama_cpp_layer_floor_us,
    }
    if all(v is None for v in swap.values()):
        return a
    swap = {k: v for k, v in swap.items() if v is not None}
    applied = {f"llama_cpp_{k}": None for k in swap}
    return dataclasses.replace(a, **swap, **applied)


def presets_table() -> list[tuple[str, ...]]:
    """Rows of (field, meaning, one value per preset), the presets side by side for the book.

    Examples
    --------
    >>> rows = presets_table()
    >>> rows[0]
    ('', '', 'envelope', 'lab', 'capacity', 'planner', 'course')
    >>> [r for r in rows if r[0] == "bandwidth_efficiency"][0][2:]
    ('1', '0.7', '0.7', '1', '0.7')
    """

    def show(v: Any) -> str:
        if isinstance(v, bool):
            return "yes" if v else "no"
        if isinstance(v, float):
            return f"{v:.3g}"
        if v is None:
            return "off"
        return v.label() if hasattr(v, "label") else str(v)

    rows: list[tuple[str, ...]] = [("", "", *PRESETS)]
    for f in fields(Assumptions):
        if f.name in ("name", "summary"):
            continue
        values = [getattr(p, f.name) for p in PRESETS.values()]
        if f.name.startswith("llama_cpp_"):  # None: the general value, not a rule switched off
            values = [
                getattr(p, f.name.removeprefix("llama_cpp_"), None) if v is None else v
                for v, p in zip(values, PRESETS.values(), strict=True)
            ]
        rows.append((f.name, MEANING[f.name], *map(show, values)))
    return rows
