"""The decode step: what a replica reads, computes and sends to produce one token per sequence (chapter *Decode*)."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model, bytes_per_value
from llmcourse.catalog.precision import compute_of, group_precisions, param_groups, per_group
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import checked, si
from llmcourse.replica.attention import decode_attention_flops_si
from llmcourse.replica.base import (
    BYTES_TO_GB,
    FLOP_TO_GFLOP,
    MS_TO_S,
    S_TO_MS,
    bytes_of,
    check_positions,
    gpu_of,
    model_of,
    replaced,
)
from llmcourse.replica.deployment import Deployment, Workload
from llmcourse.replica.memory import (
    fitted_layout,
    kv_copies_si,
    kv_read_sequence_si,
    weight_parts_si,
    weight_split_si,
    weights_read_si,
)
from llmcourse.replica.parallel import Layout, comm_seconds_of, send_seconds
from llmcourse.replica.setups import keep_set_up, kept_set_up, set_up_key
from llmcourse.units import (
    BYTE,
    GB,
    GFLOP,
    MS,
    PER_S,
    quantity,
    to,
)


# --- decode -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DecodeStep:
    """One decode step of a batch: bytes moved, FLOPs done, and the time each would take."""

    batch: int
    weights_read: pint.Quantity
    kv_read: pint.Quantity
    flops: pint.Quantity
    memory_time: pint.Quantity
    compute_time: pint.Quantity
    step_time: pint.Quantity
    fraction_of_experts: float | None
    kernel_bounds: tuple[str, str] | None = None
    comm_time: pint.Quantity | None = None
    overhead_time: pint.Quantity | None = None
    layout: Layout | None = field(default=None, repr=False)
    #: the layers' fixed time (formula ``layer_floor_time``: the assumptions' ``layer_floor_us`` per layer)
    floor_time: pint.Quantity | None = None
    #: how many bytes at the step's bandwidth share each byte of weights costs to read (:func:`weight_read_scale`)
    weight_read_scale: float = 1.0

    @property
    def bound(self) -> str:
        """``"memory"`` or ``"compute"``: which limit sets the step time. With the per-operation step
        rule it is ``"compute"`` as soon as one kernel (the weight matmuls or attention) is
        compute-bound, since that kernel's time then grows with the batch."""
        if self.kernel_bounds is not None:
            return "compute" if "compute" in self.kernel_bounds else "memory"
        return "compute" if self.compute_time > self.memory_time else "memory"

    @property
    def tokens_per_s_per_user(self) -> pint.Quantity:
        return to(1 / self.step_time, PER_S)

    @property
    def throughput(self) -> pint.Quantity:
        """Output tokens per second of the whole batch."""
        return to(F["throughput"](batch=self.batch, step_time=self.step_time), PER_S)


@dataclass(frozen=True)
class EngineStep:
    """What an engine's scheduler makes of a batch (assumptions' ``prefill_schedule`` ``"engine"``): the requests a
    step decodes (``decoding``: all of them unless the token budget binds) and the prompt tokens a step carries besides
    on average (``chunk_tokens``, 0 when the engine runs prefill batches of their own: at the engines' default budget
    a waiting prompt goes whole into one step, formula ``chunked_mean_step``); the time between a user's tokens
    (``time_per_token``), the time the prompt of a new request takes to its first token at this batch
    (``first_token_prefill``: its chunks, each a step shared with the others' decode tokens), the batch's prefill
    batches of one cycle (``cycle_prefill``: only for an engine that pauses decoding for them) and the output tokens
    per second (``throughput``). ``bound`` names what bounds the mixed steps that take most of a user's time (those
    with a prompt's chunk, or those that decode alone; ``"compute"`` when a kernel runs at its FLOPs, else
    ``"KV reads"`` or ``"weight reads"``, the larger); None for an engine that pauses
    decoding for prefill batches (its decode steps are the decode step's own, :attr:`DecodeStep.bound`)."""

    engine: str
    mixed_prefill: bool
    token_budget: int
    decoding: float
    chunk_tokens: float
    time_per_token: pint.Quantity
    first_token_prefill: pint.Quantity
    throughput: pint.Quantity
    cycle_prefill: pint.Quantity | None = None
    decode_only: pint.Quantity | None = None
    bound: str | None = None

    @property
    def prefill_share(self) -> float:
        """Share of a user's time per token the prompts take: what a mixed step's chunk adds to the decode step
        alone (``decode_only``), or the separate prefill batches that pause it."""
        return float((1 - self.decode_only / self.time_per_token).m_as(""))


@checked
def weights_read_per_step(model: Model | str, batch: int = 1, weight_bytes: Any = None) -> pint.Quantity:
    """Weight bytes one decode step reads: all of them for a dense model; for a MoE model the
    shared weights plus the expected fraction of experts that ``batch`` tokens touch. The weights are
    stored at ``weight_bytes`` (None: the model's checkpoint precision, per tensor group).

    Examples
    --------
    >>> weights_read_per_step("Llama-3.1-8B").to(GB)
    <Quantity(16.06, 'gigabyte')>
    >>> round(weights_read_per_step("Qwen3-30B-A3B", 1).to(GB).m, 2)
    6.7
    >>> round(weights_read_per_step("gpt-oss-120b", 1).to(GB).m, 2)  # 4 of 128 MXFP4 experts, the rest BF16
    6.58
    """
    m = model_of(model)
    if per_group(weight_bytes):
        return quantity(weights_read_si(m, batch, weight_split_si(m, weight_bytes)), BYTE)
    b = bytes_of(weight_bytes, "weight_bytes")
    n = batch
    if not m.is_moe:
        return F["weight_bytes"](params=m.params, weight_bytes_per_param=b)
    return F["moe_bytes_read"](
        weight_bytes_per_param=b,
        params=m.params,
        expert_params=m.expert_params,
        experts_per_token=m.experts_per_token,
        experts=m.experts,
        batch=n,
    )


@checked
def matmul_precision(
    weight_bytes: Any, gpu: GPU | str, assumptions: Assumptions | str | None = None, model: Model | str | None = None
) -> str:
    """The precision the matrix multiplications run at, by the assumptions' ``matmul_precision`` rule: ``"bf16"``
    always runs BF16; ``"weights"`` runs each format at the precision its kernels multiply in
    (:attr:`llmcourse.catalog.precision.Precision.compute`) where the GPU has a peak FLOP/s figure for it, else BF16:

    - FP8 (W8A8; DeepSeek's 128 x 128 blocks too) at the FP8 peak (Hopper and later): vLLM's ``Fp8LinearMethod``
      and TensorRT-LLM's FP8 recipes quantize the activations to FP8;
    - NVFP4 (W4A4, and the bare ``"fp4"``) at the FP4 peak (Blackwell): TensorRT-LLM's NVFP4 recipe and vLLM's
      ``ModelOptNvFp4`` / compressed-tensors W4A4 quantize the activations to FP4; on a GPU without an FP4 peak vLLM
      falls back to weight-only FP4 (Marlin), at BF16;
    - weight-only formats at BF16: INT8 (W8A16), INT4, W4A16 (GPTQ, AWQ: vLLM's Marlin kernels widen each weight to
      16 bits), and MXFP4 as engines run gpt-oss by default: vLLM's ``Mxfp4MoEMethod`` multiplies BF16 activations
      on Hopper (triton_kernels ``matmul_ogs`` or Marlin) and on Blackwell (FlashInfer's TRT-LLM MoE,
      ``SM100_FI_MXFP4_BF16``; MXFP8 activations only with ``VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1``).
      TensorRT-LLM runs gpt-oss with MXFP8 activations on Blackwell (its TRTLLM MoE backend): that is
      ``compute_precision="fp8"``, given outright.

    A number of bytes is read as FP8 at 1 byte, else as 16-bit arithmetic. A checkpoint whose groups differ
    (``weight_bytes`` None: ``model``'s own; or a per-group mapping) multiplies at the precision of the group holding
    most of a token's matmul parameters (the routed experts at ``experts_per_token / experts`` of theirs; the
    embeddings are a look-up, not a matmul): gpt-oss's experts (MXFP4: BF16), DeepSeek-V3's FP8.

    Examples
    --------
    >>> matmul_precision("fp8", "H100 SXM"), matmul_precision("fp8", "A100 SXM 80GB")
    ('fp8', 'bf16')
    >>> matmul_precision("fp4", "B200"), matmul_precision("fp8", "H100 SXM", "envelope")
    ('fp4', 'bf16')
    >>> matmul_precision("int4", "B200"), matmul_precision(1, "H100 SXM")  # INT4 is weight-only: BF16 matmuls
    ('bf16', 'fp8')
    >>> matmul_precision("nvfp4", "B200"), matmul_precision("nvfp4", "H100 SXM"), matmul_precision("mxfp4", "B200")
    ('fp4', 'bf16', 'bf16')
    >>> matmul_precision(None, "B200", model="gpt-oss-120b"), matmul_precision(None, "B200", model="DeepSeek-V3")
    ('bf16', 'fp8')
    """
    g = gpu_of(gpu)
    if per_group(weight_bytes):
        if model is None:
            raise InputError(
                f"matmul_precision: weight_bytes={weight_bytes!r} reads a model's tensor groups: give model= as well."
            )
        weight_bytes = _largest_matmul_group(model_of(model), weight_bytes)
    if resolve(assumptions).matmul_precision == "bf16":
        return "bf16"
    if isinstance(weight_bytes, str):
        wanted = compute_of(weight_bytes)  # an unknown name is refused here, with "did you mean"
    else:  # a number of bytes: 1 byte is read as FP8, anything else as 16-bit arithmetic
        wanted = "fp8" if bytes_of(weight_bytes, "weight_bytes").m == bytes_per_value("fp8") else "bf16"
    if wanted == "fp8" and g.fp8_flops is not None:
        return "fp8"
    if wanted == "fp4" and g.fp4_flops is not None:
        return "fp4"
    return "bf16"


def _largest_matmul_group(m: Model, weight_bytes: Any) -> Any:
    """The precision of the tensor group of ``m`` (stored at the per-group ``weight_bytes``) holding most of a token's
    matmul parameters: the routed experts count ``experts_per_token / experts`` of theirs, the embeddings none."""
    names = group_precisions(m, weight_bytes)
    if len(set(map(repr, names.values()))) == 1:
        return names["experts"]
    params = param_groups(m)
    if m.is_moe:
        params["experts"] *= m.experts_per_token / m.experts
    params["embeddings"] = 0.0
    return names[max(params, key=params.__getitem__)]


def _four_bit(weight_bytes: Any, m: Model | None = None) -> bool:
    """4-bit weights: FP4, INT4, MXFP4, NVFP4, W4A16, or a number of bytes per weight under 0.75 (half a byte plus
    its group scales, e.g. 0.53 B for INT4 with a 16-bit scale per 64 weights). A checkpoint whose groups differ:
    the group holding most of its bytes (gpt-oss's and Kimi-K2.5's experts)."""
    if per_group(weight_bytes):
        if m is None:
            return False
        names = group_precisions(m, weight_bytes)
        if len(set(map(repr, names.values()))) == 1:
            return _four_bit(names["experts"])
        sizes = {g: p * bytes_of(names[g], "weight_bytes").m for g, p in param_groups(m).items()}
        weight_bytes = names[max(sizes, key=sizes.__getitem__)]
    if isinstance(weight_bytes, str):
        return bytes_per_value(weight_bytes.lower()) < 0.75
    return bytes_of(weight_bytes, "weight_bytes").m < 0.75


def layer_floor_ms(m: Model, a: Assumptions) -> float:
    """The fixed time (ms) a forward pass of ``m`` spends in its layers however little they read: its layers times
    the assumptions' ``layer_floor_us`` (formula ``layer_floor_time``); 0 for the sources' presets, which have none.

    A decode step of a few tokens runs a dozen or more kernels per layer on every GPU of the group (norms, the QKV,
    attention, the output projection, the MLP or the router and experts, one or two all-reduces). Under CUDA graphs
    (vLLM's ``CUDAGraphWrapper``, SGLang's ``CudaGraphRunner``, TensorRT-LLM's ``cuda_graph_config``) the CPU
    launches are gone, but each kernel still ramps up and drains, a matmul of the few columns a GPU holds at high
    tensor parallelism cannot keep the memory system busy, and each collective waits for the last GPU to arrive. The
    floor is fitted in the open on the measured rows (chapter Validation), as the per-step overhead is.

    Examples
    --------
    >>> from llmcourse.assumptions import resolve
    >>> from llmcourse.catalog import models
    >>> layer_floor_ms(models["Llama-3.1-70B"], resolve().replace(layer_floor_us=50.0))  # 80 layers x 50 us
    4.0
    >>> layer_floor_ms(models["Llama-3.1-70B"], resolve("envelope"))
    0.0
    """
    if not a.layer_floor_us:
        return 0.0
    return S_TO_MS * F["layer_floor_time"].value(layers=m.layers, layer_floor=a.layer_floor_us * 1e-6)


def read_efficiency(weight_bytes: Any, a: Assumptions, model: Model | None = None) -> float:
    """The bandwidth efficiency a decode step's reads reach: the assumptions', times their 4-bit factor for 4-bit
    weights (``weight_bytes`` per tensor group, or None for the checkpoint's: ``model``'s largest group) where that
    factor slows every read (``four_bit_factor_applies_to`` ``"all_reads"``); where it slows the weights alone, see
    :func:`weight_read_scale`.

    Examples
    --------
    >>> from llmcourse.assumptions import resolve
    >>> a = resolve().replace(four_bit_bandwidth_factor=0.6, four_bit_factor_applies_to="all_reads")
    >>> read_efficiency("fp8", a), round(read_efficiency("int4", a), 2), read_efficiency("int4", resolve())
    (0.7, 0.42, 0.7)
    """
    slowed = a.four_bit_factor_applies_to == "all_reads" and _four_bit(weight_bytes, model)
    return a.bandwidth_efficiency * (a.four_bit_bandwidth_factor if slowed else 1.0)


def weight_read_scale(weight_bytes: Any, a: Assumptions, model: Model | None = None) -> float:
    """How many bytes at :func:`read_efficiency`'s share one byte of weights costs to read: 1 over the 4-bit factor
    for 4-bit weights where the factor slows the weights alone (``four_bit_factor_applies_to`` ``"weights"``: the
    4-bit matmul kernels dequantise what they read, while attention reads the KV cache at the ordinary share), else 1.
    A 4-bit step's weights take ``weights / (bandwidth x efficiency x factor)``, its KV ``KV / (bandwidth x
    efficiency)``.

    Examples
    --------
    >>> from llmcourse.assumptions import resolve
    >>> a = resolve().replace(four_bit_bandwidth_factor=0.5)  # the course: the weights alone
    >>> weight_read_scale("int4", a), weight_read_scale("fp8", a)
    (2.0, 1.0)
    >>> weight_read_scale("int4", a.replace(four_bit_factor_applies_to="all_reads"))
    1.0
    """
    slowed = a.four_bit_factor_applies_to == "weights" and _four_bit(weight_bytes, model)
    return 1.0 / a.four_bit_bandwidth_factor if slowed else 1.0


@checked
def decode_step(
    model: Model | str,
    gpu: GPU | str,
    *,
    batch: int = 1,
    context_tokens: float,
    n_gpus: int = 1,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    attention_flops: bool | None = None,
    compute_precision: str | None = None,
    assumptions: Assumptions | str | None = None,
    data_parallel: int = 1,
    pipeline_parallel: int = 1,
    expert_parallel: int | None = None,
    link: Any = None,
    engine: str | None = None,
) -> DecodeStep:
    """Time of one decode step of ``batch`` sequences, each reading its KV at ``context_tokens``.

    Bytes: the weights (a MoE model: the experts the batch touches) plus every sequence's KV
    cache. FLOPs: ``flops_per_param`` per active parameter per sequence, plus the attention FLOPs
    at that context if the assumptions count them. The step rule of the assumptions combines the
    two: the slower of the totals (``"max"``), or the weight matmuls and attention as separate
    kernels whose times add (``"sum"``); then the per-step overhead is added. Keyword arguments
    left at ``None`` come from ``assumptions`` (the course's by default); ``compute_precision``
    names the matmul precision outright (``"bf16"``, ``"fp8"``, ``"fp4"``).

    On several GPUs (:func:`llmcourse.replica.parallel.layout`): ``n_gpus`` is the tensor-parallel degree
    of a group, ``data_parallel`` the attention groups (each with its own ``batch / data_parallel``
    sequences; the experts split over all), ``pipeline_parallel`` the stages (the batch goes
    through in that many micro-batches, so a token's time is one micro-batch's pass through every
    layer plus a send and an overhead per stage boundary). With ``communication`` in the
    assumptions the step pays its collectives on ``link`` (the GPU's own by default). ``engine`` (vLLM by default)
    reads the GPU's memory for the check that the weights fit at all (llama.cpp's as GiB).

    Examples
    --------
    >>> s = decode_step("Llama-3.1-8B", "H100 SXM", batch=1, context_tokens=2_048 + 256)
    >>> round(s.step_time.to(MS).m, 2), s.bound
    (8.71, 'memory')
    """
    d = Deployment(
        model_of(model), gpu_of(gpu), n_gpus, pipeline_parallel, data_parallel, expert_parallel, link, weight_bytes,
        kv_bytes, engine=engine,
    )  # fmt: skip
    lay, a, precision = _decode_inputs(d, context_tokens, assumptions, attention_flops, compute_precision)
    return decoder(d, lay, a, context_tokens, precision)(batch)


def _decode_inputs(
    d: Deployment, context_tokens: float, assumptions: Any, attention_flops: bool | None, compute_precision: str | None
) -> tuple[Layout, Assumptions, str]:
    """:func:`decode_step`'s checks of its checked inputs, and what it works out from them: the layout, the
    assumptions and the matmul precision."""
    check_positions(d.model, context_tokens, "context_tokens")
    lay = fitted_layout(d, assumptions)
    a = replaced(resolve(assumptions), decode_attention_flops=attention_flops)
    precision = compute_precision or matmul_precision(d.weight_bytes, d.gpu, a, d.model)
    return lay, a, precision


@checked
def _decoder_of(
    model: Model | str,
    gpu: GPU | str,
    *,
    context_tokens: float,
    n_gpus: int = 1,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
    data_parallel: int = 1,
    pipeline_parallel: int = 1,
    expert_parallel: int | None = None,
    link: Any = None,
) -> Callable[[float, bool], DecodeStep | float]:
    """:func:`decode_step`'s checks (the same parameters, checked by the same names) and its step as a function
    of the batch (the set-up kept: :mod:`~llmcourse.replica.setups`)."""
    d = Deployment(
        model_of(model), gpu_of(gpu), n_gpus, pipeline_parallel, data_parallel, expert_parallel, link, weight_bytes,
        kv_bytes,
    )  # fmt: skip
    return _decoder_kept(d, Workload(context_tokens=context_tokens), assumptions)


def _decoder_kept(d: Deployment, workload: Workload, assumptions: Any) -> Callable[[float, bool], DecodeStep | float]:
    """:func:`_decoder_of` once its arguments are checked: the decode step of ``d`` reading each KV cache at the
    workload's context, kept (:mod:`~llmcourse.replica.setups`)."""
    inputs = (d, workload, assumptions)
    key = set_up_key(_Decoder, inputs)
    got = kept_set_up(key)
    if got is not None:
        return got
    ctx = workload.context_tokens
    lay, a, precision = _decode_inputs(d, ctx, assumptions, None, None)
    return keep_set_up(key, inputs, decoder(d, lay, a, ctx, precision))


def decode_steps(
    model: Model | str,
    gpu: GPU | str,
    *,
    context_tokens: float,
    n_gpus: int = 1,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
    data_parallel: int = 1,
    pipeline_parallel: int = 1,
    expert_parallel: int | None = None,
    link: Any = None,
    gives: str = "step",
) -> Callable[..., Any]:
    """``lambda b: decode_step(model, gpu, batch=b, ...)`` for a search over the batch (``batch`` a whole
    number of at least 1): the checks, the layout and the batch-independent terms worked out once, at the first
    call (so a search that never asks raises nothing), then each batch's step alone; the same steps, to the
    same floats, as :func:`decode_step`. ``gives``: ``"step"`` (the :class:`DecodeStep`), ``"step_time"`` (only its
    ``step_time``, the same quantity) or ``"either"`` (``lambda b, step_only=False: ...``, the step, or with
    ``step_only`` its time in seconds as a plain float).

    Examples
    --------
    >>> steps = decode_steps("Llama-3.1-8B", "H100 SXM", context_tokens=2_304)
    >>> steps(8) == decode_step("Llama-3.1-8B", "H100 SXM", batch=8, context_tokens=2_304)
    True
    """

    @functools.cache
    def setup() -> Callable[[float, bool], DecodeStep | float]:
        return _decoder_of(
            model, gpu, context_tokens=context_tokens, n_gpus=n_gpus, weight_bytes=weight_bytes, kv_bytes=kv_bytes,
            assumptions=assumptions, data_parallel=data_parallel, pipeline_parallel=pipeline_parallel,
            expert_parallel=expert_parallel, link=link,
        )  # fmt: skip

    if gives == "either":
        return lambda batch, step_only=False: setup()(batch, step_only)
    if gives == "step_time":
        return lambda batch: quantity(setup()(batch, True) * S_TO_MS, MS._units)  # DecodeStep.step_time
    if gives != "step":
        raise InputError(f"gives={gives!r}: use 'step', 'step_time' or 'either'.")
    return lambda batch: setup()(batch)


def decoder(
    d: Deployment, lay: Layout, a: Assumptions, ctx: float, precision: str
) -> Callable[[float, bool], DecodeStep | float]:
    """:func:`decode_step` of ``d`` on its layout ``lay`` (checked), each KV cache read at ``ctx`` tokens, as a
    function of the batch (and ``step_only``): a :class:`_Decoder`."""
    return _Decoder(d, lay, a, ctx, precision)


class _Decoder:
    """:func:`decode_step` of a deployment on its layout (checked) as a function of the batch, ``decoder(batch)``
    (``decoder(batch, True)``: only the step's time, in seconds, as a plain float): the formulas by value, on plain
    floats in their symbols' units (bytes, FLOPs, seconds), the units attached to the result. What does not depend
    on the batch (the KV per sequence, the FLOPs per token, the roofs; a dense model's weights read) is worked out
    once, here, so that a search over the batch computes only each batch's own terms, in the same order, to the same
    floats."""

    def __init__(self, d: Deployment, lay: Layout, a: Assumptions, ctx: float, precision: str) -> None:
        m, g = self.m, self.g = d.model, d.gpu
        self.lay, self.a = lay, a
        gpus_, dp = self.gpus, self.dp = lay.tensor_parallel, lay.data_parallel
        self.pp = lay.pipeline_parallel
        wpp = self.wpp = weight_split_si(m, d.weight_bytes)
        w_dense = None if m.is_moe else weights_read_si(m, 1, wpp)  # a dense model reads all its weights, any batch
        kv_seq = kv_read_sequence_si(m, ctx, d.kv_bytes, kv_copies_si(m, gpus_, a))  # every copy is read
        per_param = a.flops_per_param
        f_mm = F["decode_flops_per_token"].value(flops_per_param=per_param, active_params=m.active_params)
        f_att = 0
        if a.decode_attention_flops:
            f_att = decode_attention_flops_si(m, ctx, per_param)  # by layer type
        self.shared = None
        self.f_tok_all = f_mm  # a token's matmul FLOPs, all of them
        self.f_exp = 0.0
        if dp > 1:  # one attention group's share: its own sequences, the whole attention, 1/D of the experts
            self.f_exp = per_param * (m.expert_params * m.experts_per_token / m.experts if m.is_moe else 0.0)
            shared = self.shared = weight_parts_si(m, d.weight_bytes)[0]
            if w_dense is not None:
                w_dense = F["dp_bytes_read"].value(
                    bytes_read=w_dense, expert_bytes_read=w_dense - shared, data_parallel=dp
                )
            kv_seq = F["dp_kv_per_sequence"].value(kv_per_sequence=kv_seq, data_parallel=dp)
            f_mm = F["dp_flops_per_token"].value(flops_per_token=f_mm, data_parallel=dp)
            if f_att > 0:
                f_att = F["dp_flops_per_token"].value(flops_per_token=f_att, data_parallel=dp)
        self.w_dense, self.kv_seq, self.f_mm, self.f_att = w_dense, kv_seq, f_mm, f_att
        self.bandwidth, self.eta_b = si(g.bandwidth, "bandwidth"), read_efficiency(d.weight_bytes, a, m)
        self.w_scale = weight_read_scale(d.weight_bytes, a, m)  # the weights' bytes count this many times (4-bit)
        self.peak, self.eta_f = si(g.peak_flops(precision), "peak_flops"), a.compute_efficiency
        self.f_tok = f_mm + f_att
        self.comm_of = comm_seconds_of(m, lay, a)  # comm_seconds(m, lay, ., a)
        self.floor_ms = layer_floor_ms(m, a)

    def __call__(self, batch: float, step_only: bool = False) -> DecodeStep | float:
        n = math.ceil(batch / self.pp)  # sequences in one micro-batch (all of them on one stage)
        w_read = self._weights_read(n)
        core, kernels = self._core(n, w_read * self.w_scale)
        step, comm, overhead = self._overheads(n, core)
        if step_only:
            return step
        return self._step(batch, n, w_read, step, comm, overhead, kernels)

    def mixed(
        self,
        batch: float,
        chunk: float,
        chunk_attention: float,
        chunk_kv: float,
        step_only: bool = False,
        groups: float = 1.0,
    ) -> tuple[float, tuple[float, float], tuple[float, float]] | float:
        """A step of an engine that mixes a prompt chunk into its decode steps: ``batch`` decode tokens (0: the chunk
        alone, as a new request's first chunk on an idle replica) and ``chunk``
        prompt tokens (each with ``chunk_attention`` attention FLOPs; the chunk reads ``chunk_kv`` bytes of its
        prompt's earlier KV) in one forward pass, the weights read once (a MoE model: the experts all its tokens
        touch), its collectives those of all its tokens (formula ``mixed_step_time``: the weight matmuls of all its
        tokens, then attention, each kernel the slower of its bytes and FLOPs, whatever the decode step's rule).
        (the step's time, (the matmuls' memory time, attention's), (the matmuls' compute time, attention's)), in
        seconds; the fixed overheads and collectives are in the first alone.

        vLLM's ``Scheduler.schedule`` (``vllm/v1/core/sched/scheduler.py``) and TensorRT-LLM's in-flight batching run
        such steps: the prompt tokens and the decode tokens go through the matmuls as one batch of tokens, and
        attention runs each sequence over its own KV (FlashAttention's varlen kernels, FlashInfer's batch prefill).
        ``step_only``: the step's time alone (a simulation's hot path; the same number as the first of the three).

        With attention data parallel (D groups), ``groups``: the step's ``chunk`` prompt tokens over the busiest
        group's (1 to D, not necessarily whole): 1 for one prompt (a request is prefilled by its own group), D where
        every group prefills its own share of the prompts (the steady step that spreads them over every step), and in
        between for the chunk steps of :func:`~llmcourse.replica.chunked.chunked_steps` (the step's expected tokens
        over its largest chunk's).
        """
        pp, dp = self.pp, self.dp
        n, c = batch / pp, chunk / pp  # one micro-batch's tokens (all of them on one stage)
        tokens = n + c
        w_read = self._weights_read(max(1, math.ceil(tokens))) * self.w_scale
        att, kv = chunk_attention, chunk_kv
        if dp > 1 and c > 0:
            # with attention data parallel a prompt is prefilled by its own group (TensorRT-LLM's attention DP runs
            # the dense layers and shared experts on each rank's own tokens; vLLM runs an engine per DP rank), and
            # every group waits for the step's expert exchange: the busiest group carries its share of the chunk's
            # attention, earlier KV and dense layers, the experts spread over all (formula dp_chunk_flops_per_token);
            # the decode tokens are 1/D a group (f_mm). mixed_step_time counts one FLOPs per token for all tokens:
            # the chunk's in decode tokens' units, its attention FLOPs per token scaled so that chunk tokens x
            # attention FLOPs are the busiest group's
            g = min(max(1.0, float(groups)), dp)
            f_ch = F["dp_chunk_flops_per_token"].value(
                flops_per_token=self.f_tok_all, expert_flops_per_token=self.f_exp, prefilling_groups=g,
                data_parallel=dp,
            )  # fmt: skip
            c_mm = c * f_ch / self.f_mm
            att, c, kv = att * (c / g) / c_mm, c_mm, kv / g
        roofs = dict(n_gpus=self.gpus, bandwidth=self.bandwidth, bandwidth_efficiency=self.eta_b)
        comp = dict(n_gpus=self.gpus, peak_flops=self.peak, compute_efficiency=self.eta_f)
        terms = dict(decode_tokens=n, chunk_tokens=c, flops_per_token=self.f_mm, attention_flops_per_token=self.f_att,
                     chunk_attention_flops=att, bytes_read=w_read, kv_per_sequence=self.kv_seq, chunk_kv_read=kv)  # fmt: skip
        core = F["mixed_step_time"].value(**terms, **roofs, peak_flops=self.peak, compute_efficiency=self.eta_f)
        if step_only:
            return self._overheads(tokens, core)[0]
        kv_read, att_flops = n * self.kv_seq + kv, n * self.f_att + c * att  # 0 for a first chunk alone
        att_mem = F["weight_read_time"].value(weights=kv_read, **roofs) if kv_read > 0 else 0.0
        att_comp = F["decode_compute_time"].value(batch=1, flops_per_token=att_flops, **comp) if att_flops > 0 else 0.0
        memory = (F["weight_read_time"].value(weights=w_read, **roofs), att_mem)
        compute = (F["decode_compute_time"].value(batch=n + c, flops_per_token=self.f_mm, **comp), att_comp)
        step, _, _ = self._overheads(tokens, core)
        return step, memory, compute

    def _weights_read(self, n: int) -> float:
        """The weight bytes one micro-batch of ``n`` sequences reads (a MoE model: the experts they touch)."""
        if self.w_dense is not None:
            return self.w_dense
        w_read = weights_read_si(self.m, n, self.wpp)
        if self.dp > 1:
            w_read = F["dp_bytes_read"].value(
                bytes_read=w_read, expert_bytes_read=w_read - self.shared, data_parallel=self.dp
            )
        return w_read

    def _core(self, n: int, w_read: float) -> tuple[float, tuple[str, str] | None]:
        """The step's time before its overheads, by the assumptions' step rule, and (rule ``"sum"``) what bounds
        each kernel."""
        if self.a.step_rule == "max":  # the arguments by name (no dicts to build: the search's hot path)
            core = F["decode_step_time"].value(
                batch=n, n_gpus=self.gpus, bytes_read=w_read, kv_per_sequence=self.kv_seq, bandwidth=self.bandwidth,
                bandwidth_efficiency=self.eta_b, flops_per_token=self.f_tok, peak_flops=self.peak,
                compute_efficiency=self.eta_f,
            )  # fmt: skip
            return core, None
        f_mm, f_att = self.f_mm, self.f_att
        roofs = dict(n_gpus=self.gpus, bandwidth=self.bandwidth, bandwidth_efficiency=self.eta_b)
        comp = dict(n_gpus=self.gpus, peak_flops=self.peak, compute_efficiency=self.eta_f)
        core = F["decode_step_time_per_op"].value(
            batch=n, bytes_read=w_read, kv_per_sequence=self.kv_seq, flops_per_token=f_mm,
            attention_flops_per_token=f_att, **roofs, peak_flops=self.peak, compute_efficiency=self.eta_f,
        )  # fmt: skip
        w_time = F["weight_read_time"].value(weights=w_read, **roofs)
        kv_time = F["weight_read_time"].value(weights=n * self.kv_seq, **roofs)
        mm_time = F["decode_compute_time"].value(batch=n, flops_per_token=f_mm, **comp)
        att_time = F["decode_compute_time"].value(batch=n, flops_per_token=f_att, **comp) if f_att > 0 else 0.0
        return core, ("compute" if mm_time > w_time else "memory", "compute" if att_time > kv_time else "memory")

    def _overheads(self, n: int, core: float) -> tuple[float, float, float]:
        """(the step's time in s, its collectives in ms, its fixed overhead in ms): the assumptions' per-step
        overhead, the layers' floor (``floor_ms``) and the collectives added; through ``pp`` stages, a micro-batch's
        pass through them all."""
        overhead, pp = self.a.step_overhead_ms, self.pp  # ms, as the assumptions give it
        comm = S_TO_MS * self.comm_of(n)  # ms
        step = F["step_with_overhead"].value(step_time=core, step_overhead=(overhead + self.floor_ms + comm) * MS_TO_S)
        if pp > 1:
            send = send_seconds(self.m, self.lay, n, self.a)
            step = F["pipeline_token_time"].value(
                step_time=step, stages=pp, send_time=0 if send is None else send, step_overhead=overhead * MS_TO_S
            )
            overhead = overhead * pp
            comm = comm + (pp - 1) * (0 if send is None else send * S_TO_MS)
        return step, comm, overhead

    def _step(
        self, batch: float, n: int, w_read: float, step: float, comm: float, overhead: float, kernels: Any
    ) -> DecodeStep:
        """The :class:`DecodeStep` of ``batch`` sequences, its times and bytes as quantities."""
        m, kv_seq = self.m, self.kv_seq
        mem_args = dict(
            bytes_read=w_read * self.w_scale,
            kv_per_sequence=kv_seq,
            bandwidth=self.bandwidth,
            bandwidth_efficiency=self.eta_b,
        )
        comp_args = dict(flops_per_token=self.f_tok, peak_flops=self.peak, compute_efficiency=self.eta_f)
        phi = None
        if m.is_moe:
            phi = float(
                F["moe_fraction_touched"].value(experts_per_token=m.experts_per_token, experts=m.experts, batch=n)
            )
        common = dict(batch=n, n_gpus=self.gpus)
        return DecodeStep(
            batch=int(batch),
            weights_read=quantity(w_read * BYTES_TO_GB, GB._units),
            kv_read=quantity(n * kv_seq * BYTES_TO_GB, GB._units),
            flops=quantity(n * (self.f_mm + self.f_att) * FLOP_TO_GFLOP, GFLOP._units),
            memory_time=quantity(F["decode_memory_time"].value(**common, **mem_args) * S_TO_MS, MS._units),
            compute_time=quantity(F["decode_compute_time"].value(**common, **comp_args) * S_TO_MS, MS._units),
            step_time=quantity(step * S_TO_MS, MS._units),
            fraction_of_experts=phi,
            kernel_bounds=kernels,
            comm_time=quantity(comm, MS),
            overhead_time=quantity(overhead, MS),
            layout=self.lay,
            floor_time=quantity(self.floor_ms, MS),
            weight_read_scale=self.w_scale,
        )
