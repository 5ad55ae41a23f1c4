"""A replica's memory: the weights, the KV cache per token and per sequence, the memory a GPU lends, and the
largest batch that fits (chapters *Weights*, *KV cache*)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import pint

from llmcourse.assumptions import Assumptions, resolve
from llmcourse.catalog import GPU, Model
from llmcourse.catalog.precision import group_precisions, param_groups, per_group
from llmcourse.errors import InputError
from llmcourse.formulas import FORMULAS as F
from llmcourse.formulas import SYMBOLS, check_value, checked, si
from llmcourse.replica.attention import kv_held_si, kv_read_si, kv_token_si, kv_window_pool_si
from llmcourse.replica.base import B, bytes_of, gpu_of, model_of
from llmcourse.replica.deployment import Deployment
from llmcourse.replica.parallel import Layout, layout
from llmcourse.replica.scheduler import engine_memory_rule, engine_name
from llmcourse.units import (
    BYTE,
    GB,
    GIB,
    Q_,
    fmt,
    plain_number,
    quantity,
    to,
)


def max_batch_si(usable: float, weights: float, kv_per_sequence: float) -> int:
    """:func:`max_batch` on plain floats in bytes: the sequences whose KV cache fits beside the weights in the usable
    memory, 0 when the weights alone take it all."""
    if weights >= usable:
        return 0
    return int(F["max_batch"].value(usable_memory=usable, weights=weights, kv_per_sequence=kv_per_sequence))


def admitted_batch_si(
    usable: float, weights: float, kv_final: float, kv_mean: float, kv_growth: float, spreads: float
) -> int:
    """The batch an engine that pages its KV cache admits (assumptions' admission ``"blocks"``), on plain floats in
    bytes: the largest ``B`` whose conversations, staggered, hold the KV of formula ``kv_in_use`` (the mean
    ``B K_mean`` plus ``spreads`` spreads ``K_ans sqrt(B / 12)``, never more than ``B`` at their final length
    ``kv_final``) beside the weights; never fewer than the batch that fits at the final length (:func:`max_batch_si`),
    0 when not one conversation fits at its final length.

    ``K_mean`` is one conversation's KV at its prompt and half its answer, ``K_ans`` what its answer adds: each of
    ``B`` conversations at a uniform point of its answer holds a share ``U`` of it, of mean 1/2 and variance 1/12.

    Examples
    --------
    >>> admitted_batch_si(100.0, 20.0, 4.0, 3.0, 2.0, 0.0)  # the mean alone: 80 / 3
    26
    >>> admitted_batch_si(100.0, 20.0, 4.0, 3.0, 2.0, 2.0)  # 3 B + 4 sqrt(B / 12) <= 80: B = 24 (72 + 5.66)
    24
    >>> admitted_batch_si(100.0, 20.0, 4.0, 3.0, 2.0, 50.0), max_batch_si(100.0, 20.0, 4.0)  # never below the static
    (20, 20)
    """
    static = max_batch_si(usable, weights, kv_final)
    if static < 1 or kv_mean <= 0:  # (a mean that underflows to 0 bytes: the batch at the final length)
        return static
    room, b = usable - weights, spreads * kv_growth / math.sqrt(12)

    def held(n: int) -> float:
        return F["kv_in_use"].value(
            batch=n, kv_per_sequence=kv_final, kv_mean=kv_mean, kv_growth=kv_growth, admission_spreads=spreads
        )

    # the root of kv_mean x^2 + b x = room in x = sqrt(B), a start the formula then checks either way
    x = (-b + math.sqrt(b * b + 4 * kv_mean * room)) / (2 * kv_mean)
    n = max(static, int(x * x))
    while held(n + 1) <= room:
        n += 1
    while n > static and held(n) > room:
        n -= 1
    return n


def admission_si(
    a: Assumptions,
    usable: float,
    weights: float,
    kv_final: float,
    kv_at: Callable[[float], float],
    prompt: float | None,
    answer: float,
) -> tuple[int, tuple[float, float] | None]:
    """The batch a replica admits under the assumptions' ``admission``, on plain floats in bytes, and the KV it is
    admitted on: every replica's one rule (the plain one, :class:`~llmcourse.replica.model.ReplicaSetup`, and the
    speculative one, :func:`~llmcourse.replica.speculative.speculative_memory`, call it).

    ``kv_final`` is one conversation's KV at its final length (every copy the replica keeps, a draft's too) and
    ``kv_at(t)`` the same at ``t`` tokens of its prompt and answer. Admission ``"final"``, or no prompt length
    known: the largest batch at the final length (:func:`max_batch_si`), and None. Admission ``"blocks"``: the
    batch of :func:`admitted_batch_si` on the conversation's mean (its prompt and half its answer) and what its
    answer adds, and those two.

    Examples
    --------
    >>> from llmcourse.assumptions import resolve
    >>> kv = lambda t: 1e6 * t  # 1 MB a token
    >>> admission_si(resolve("lab"), 100e9, 20e9, kv(2_300), kv, 2_000, 300)  # 80 GB / 2.3 GB
    (34, None)
    >>> admission_si(resolve("course"), 100e9, 20e9, kv(2_300), kv, 2_000, 300)  # 2.15 B + 0.6 sqrt(B / 12) <= 80
    (36, (2150000000.0, 300000000.0))
    """
    if a.admission != "blocks" or prompt is None:
        return max_batch_si(usable, weights, kv_final), None
    admitted = (kv_at(prompt + answer / 2), kv_final - kv_at(prompt))
    return admitted_batch_si(usable, weights, kv_final, *admitted, a.admission_spreads), admitted


def largest_batch(meets: Callable[[int], bool], top: int) -> int:
    """The largest batch in 1..``top`` for which ``meets(batch)`` holds, or 0 if even batch 1 fails;
    ``meets`` must hold up to some batch and fail beyond it (as a step-time or speed target does,
    since the step grows with the batch). Bisection: about log2(top) calls.

    Examples
    --------
    >>> largest_batch(lambda b: b * b <= 50, 4_096), largest_batch(lambda b: False, 64)
    (7, 0)
    """
    lo, hi = 0, int(top)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if meets(mid) else (lo, mid - 1)
    return lo


def largest_within(value: Callable[[int], float], target: float, top: int) -> int:
    """``largest_batch(lambda b: value(b) <= target, top)`` for a ``value`` that grows with the batch (a step's
    time, a token's time: the time of a batch grows by its own KV reads or FLOPs, far more than a float's
    rounding): the same batch, found with fewer calls. The batch lies between the largest batch known to meet
    the target and the smallest known to miss it; the next call is where the line through the two ends' values
    crosses the target (a step's time is nearly linear in the batch, so 1, ``top``, the crossing and the batch
    after it usually settle it), or the middle when the line has not halved the bracket (a kink, where the step
    turns from memory- to compute-bound).

    Examples
    --------
    >>> calls = []
    >>> step = lambda b: calls.append(b) or 10.0 + 0.37 * b  # 40 ms at a batch of 81.1
    >>> largest_within(step, 40.0, 4_096), calls
    (81, [1, 4096, 81, 82])
    >>> calls.clear()
    >>> largest_batch(lambda b: step(b) <= 40.0, 4_096), len(calls)
    (81, 12)
    >>> largest_within(lambda b: 50.0 + b, 40.0, 64), largest_within(lambda b: float(b), 1e9, 64)
    (0, 64)
    """
    top = int(top)
    if top < 1:
        return 0
    v = value(1)
    if v > target:
        return 0
    lo, f_lo, hi, f_hi = 1, v, top + 1, math.inf  # value(lo) <= target < value(hi); hi = top + 1 is never asked
    if top > 1:
        v = value(top)
        if v <= target:
            return top
        hi, f_hi = top, v
    step = "line"
    while hi - lo > 1:
        if step == "line":  # where the line through both ends' values crosses the target, inside the bracket
            mid = min(max(lo + int((target - f_lo) / (f_hi - f_lo) * (hi - lo)), lo + 1), hi - 1)
        else:
            mid = lo + 1 if step == "next" else (lo + hi) // 2
        width = hi - lo
        v = value(mid)
        if v <= target:
            lo, f_lo = mid, v
        else:
            hi, f_hi = mid, v
        if step == "line":  # met: the batch after it; missed: the line again if it halved the bracket
            step = "next" if v <= target else "line" if 2 * (hi - lo) <= width else "half"
        else:
            step = "half" if step == "next" else "line"
    return lo


_BYTES_SI: dict[tuple[type, Any], float] = {}  # bytes per value of a precision name or a number


def bytes_si(value: Any, name: str) -> float:
    """:func:`bytes_of` as a plain float of bytes (a precision name's, or a plain number's, looked up once)."""
    t = type(value)
    if t is str or t is int or t is float:
        key = (t, value)
        got = _BYTES_SI.get(key)
        if got is None:
            got = si(bytes_of(value, name), "kv_bytes")  # an unknown name or a bad number raises, with ``name``
            _BYTES_SI[key] = got
        return got
    return si(bytes_of(value, name), "kv_bytes")


def weight_split_si(m: Model, weight_bytes: Any) -> float | tuple[float, float]:
    """Bytes per weight (a plain float) where every weight of ``m`` is stored at one precision; else, for a checkpoint
    whose tensor groups differ (``weight_bytes`` None: the model's own, :attr:`Model.checkpoint`; or a per-group
    mapping), the bytes of the weights every token uses (all but the routed experts) and of the routed experts:
    each group's parameters (:func:`llmcourse.catalog.precision.param_groups`) at its bytes per value."""
    if not per_group(weight_bytes):
        return bytes_si(weight_bytes, "weight_bytes")
    names = group_precisions(m, weight_bytes)
    per = {g: bytes_si(v, "weight_bytes") for g, v in names.items()}
    if len(set(per.values())) == 1:
        return per["experts"]
    params = param_groups(m)
    sized = {g: F["weight_bytes"].value(params=params[g], weight_bytes_per_param=per[g]) if params[g] else 0.0
             for g in per}  # fmt: skip
    return sum(v for g, v in sized.items() if g != "experts"), sized["experts"]


def weight_parts_si(m: Model, weight_bytes: Any) -> tuple[float, float]:
    """(bytes of all but the routed experts, bytes of the routed experts) of ``m``'s weights at ``weight_bytes``
    (:func:`weight_split_si`), as plain floats."""
    split = weight_split_si(m, weight_bytes)
    if isinstance(split, tuple):
        return split
    shared = F["weight_bytes"].value(params=m.params - m.expert_params, weight_bytes_per_param=split)
    return shared, F["weight_bytes"].value(params=m.expert_params, weight_bytes_per_param=split)


def weights_si(m: Model, weight_bytes: Any) -> float:
    """:func:`weight_bytes` in bytes, as a plain float."""
    split = weight_split_si(m, weight_bytes)
    if isinstance(split, tuple):
        return split[0] + split[1]
    return F["weight_bytes"].value(params=m.params, weight_bytes_per_param=split)


def weights_read_si(m: Model, batch: float, wpp: float | tuple[float, float]) -> float:
    """:func:`weights_read_per_step` in bytes, as a plain float, for ``wpp`` bytes per weight, or (a checkpoint whose
    groups differ) ``wpp`` = :func:`weight_split_si`'s bytes of the shared weights and of the routed experts: the MoE
    formula counting bytes (one byte per "parameter") instead of parameters."""
    if isinstance(wpp, tuple):
        shared, experts = wpp
        if not m.is_moe:
            return shared + experts
        return F["moe_bytes_read"].value(
            weight_bytes_per_param=1.0,
            params=shared + experts,
            expert_params=experts,
            experts_per_token=m.experts_per_token,
            experts=m.experts,
            batch=batch,
        )
    if not m.is_moe:
        return F["weight_bytes"].value(params=m.params, weight_bytes_per_param=wpp)
    return F["moe_bytes_read"].value(
        weight_bytes_per_param=wpp,
        params=m.params,
        expert_params=m.expert_params,
        experts_per_token=m.experts_per_token,
        experts=m.experts,
        batch=batch,
    )


def kv_sequence_si(m: Model, context: float, kv_bytes: Any, copies: float = 1.0, window: float | None = None) -> float:
    """:func:`kv_bytes_per_sequence` in bytes, as a plain float, with ``copies`` of the attention layers' cache
    (:func:`kv_copies`; a linear-attention state splits with its heads) and its sliding-window layers holding at most
    ``window`` cells (None: the model's window)."""
    return kv_held_si(m, context, bytes_si(kv_bytes, "kv_bytes"), copies, window)


#: llama.cpp's default ubatch (``n_ubatch``, 512 tokens) and the multiple it pads a KV cache's cells to (``n_pad``,
#: 256): its sliding-window cache holds ``GGML_PAD(n_swa * n_seq + n_ubatch, n_pad)`` cells for ``n_seq`` sequences
#: sharing one cache (``llama_kv_cache_iswa``, ggml-org/llama.cpp ``src/llama-kv-cache-iswa.cpp``: ``size_swa =
#: GGML_PAD(std::min(size_base, hparams.n_swa*(unified ? n_seq_max : 1) + n_ubatch), 256)``): a window for each
#: sequence plus one ubatch of new tokens.
LLAMA_CPP_UBATCH = 512
LLAMA_CPP_KV_PAD = 256


def llama_cpp_pad(tokens: float) -> int:
    """``tokens`` rounded up to a multiple of :data:`LLAMA_CPP_KV_PAD`, as llama.cpp pads every KV cache it allocates:
    the context a server is started with (``cparams.n_ctx = GGML_PAD(cparams.n_ctx, 256)``, ggml-org/llama.cpp
    ``src/llama-context.cpp``: ``-c 3500`` allocates 3,584 cells) and its sliding-window cache.

    Examples
    --------
    >>> llama_cpp_pad(3_500), llama_cpp_pad(8_192), llama_cpp_pad(1)
    (3584, 8192, 256)
    """
    return math.ceil(tokens / LLAMA_CPP_KV_PAD) * LLAMA_CPP_KV_PAD


def llama_cpp_window_cells(m: Model, slots: int = 1) -> int | None:
    """The cells llama.cpp's sliding-window cache keeps for ``slots`` sequences sharing one cache (llama-server's
    default: 4 slots, ``kv_unified``; ``llama-cli`` and ``llama-bench``: 1) of model ``m``: a window for each plus one
    ubatch (:data:`LLAMA_CPP_UBATCH`), rounded up to a multiple of :data:`LLAMA_CPP_KV_PAD`; None for a model with
    no sliding-window layers. The context bounds it, as every window (formula ``kv_bytes_by_layer_type``). The cache
    is allocated whole when the server starts, however many slots are busy.

    Examples
    --------
    >>> from llmcourse.catalog import models
    >>> gemma, gpt_oss = models["Gemma-3-27B"], models["gpt-oss-120b"]
    >>> llama_cpp_window_cells(gemma), llama_cpp_window_cells(gpt_oss)  # 1,024 + 512; 128 + 512 = 640 -> 768
    (1536, 768)
    >>> llama_cpp_window_cells(gemma, slots=4)  # llama-server's default: 4 x 1,024 + 512
    4608
    >>> llama_cpp_window_cells(models["Llama-3.1-8B"]) is None
    True
    """
    window = llama_cpp_window(m)
    if window is None:
        return None
    return llama_cpp_pad(window * slots + LLAMA_CPP_UBATCH)


def llama_cpp_window(m: Model) -> int | None:
    """The tokens llama.cpp's window cache keeps for each sequence of model ``m`` (its ``n_swa``): the sliding window
    of a model with sliding-window layers, the chunk of one with chunked attention layers (Llama 4, whose chunked
    layers llama.cpp keeps in the same cache); None for a model with neither.

    Examples
    --------
    >>> from llmcourse.catalog import models
    >>> llama_cpp_window(models["Gemma-3-27B"]), llama_cpp_window(models["Llama-4-Scout-17B-16E"])
    (1024, 8192)
    """
    t = m.layer_types
    if t["sliding"] and m.sliding_window:
        return int(m.sliding_window)
    if t["chunked"] and m.attention_chunk:
        return int(m.attention_chunk)
    return None


class WindowPool(NamedTuple):
    """llama.cpp's window cache, which the sequences of one server share: its cells (:func:`llama_cpp_window_cells`),
    the bytes one cell takes over the sliding-window and chunked-attention layers (with every copy the replica keeps),
    and the slots sharing it (the most sequences the server runs at once)."""

    cells: int
    cell_bytes: float
    slots: int

    def held(self, batch: int, context: float) -> float:
        """Bytes the cache holds for ``batch`` sequences of ``context`` tokens: the cells, at most the context the
        server is started with (``batch`` x ``context``: its slots share one cache; llama.cpp's ``min(n_ctx, ...)``).
        The server pads that context up to a multiple of 256 (:func:`llama_cpp_pad`); a batch is sized unpadded, at
        most 255 cells fewer for the whole server, while one conversation (``own_machine``) is sized padded.

        Examples
        --------
        >>> pool = WindowPool(4_608, 425_984.0, 4)
        >>> pool.held(1, 2_000), pool.held(4, 2_000) / 425_984
        (851968000.0, 4608.0)
        """
        return self.cell_bytes * min(batch * context, self.cells)

    def max_batch(self, usable: float, weights: float, kv_per_sequence: float, context: float) -> int:
        """The largest batch, at most the slots, whose sequences' own KV (``kv_per_sequence`` each: the layers that
        keep no window) and the cache (:meth:`held`) fit beside the weights: the larger of the batch
        that fits with the cache bounded by their context (each sequence charged its context's cells) and the one
        that fits with the whole cache; 0 when one sequence does not fit.

        Examples
        --------
        >>> pool = WindowPool(4_608, 425_984.0, 4)  # 1.963e9 B whole
        >>> pool.max_batch(32.212e9, 28.698e9, 286.72e6, 3_500)  # (3.514e9 - 1.963e9) / 286.7e6 = 5: the 4 slots
        4
        >>> pool.max_batch(32.212e9, 28.698e9, 0.0, 3_500)  # every layer slides: the cache alone
        4
        """
        bounded = max_batch_si(usable, weights, kv_per_sequence + self.cell_bytes * context)
        whole = weights + self.cell_bytes * self.cells
        if kv_per_sequence <= 0:  # every layer slides: the whole cache fits, or it bounds the batch by the context
            return self.slots if whole <= usable else min(self.slots, bounded)
        return min(self.slots, max(bounded, max_batch_si(usable, whole, kv_per_sequence)))


def final_batch_si(
    usable: float, weights: float, kv_per_sequence: float, pool: WindowPool | None, context: float
) -> int:
    """The largest batch of sequences at their final length ``context`` (each holding ``kv_per_sequence``) beside the
    weights, and beside llama.cpp's window cache where ``pool`` is one (:meth:`WindowPool.max_batch`): how llama.cpp,
    whose context is allocated when it starts, is sized whatever the assumptions' admission.

    Examples
    --------
    >>> final_batch_si(80e9, 20e9, 2.3e9, None, 2_300), final_batch_si(32.212e9, 28.698e9, 286.72e6, WindowPool(4_608, 425_984.0, 4), 3_500)
    (26, 4)
    """
    return (
        max_batch_si(usable, weights, kv_per_sequence)
        if pool is None
        else pool.max_batch(usable, weights, kv_per_sequence, context)
    )


def llama_cpp_window_pool(d: Deployment, copies: float = 1.0) -> WindowPool | None:
    """llama.cpp's window cache of deployment ``d`` (:class:`WindowPool`: :func:`llama_cpp_window_cells` for its
    scheduler's slots, the window layers' bytes a cell with ``copies`` of the attention cache); None for another
    engine or a model without such layers. Allocated whole when the server starts, however many slots are
    busy.

    Examples
    --------
    >>> pool = llama_cpp_window_pool(Deployment("Gemma-3-27B", "RTX 5090", engine="llama.cpp", weight_bytes="q8_0"))
    >>> pool.cells, pool.cell_bytes, pool.slots  # 4 x 1,024 + 512; 52 sliding layers x 16 KV heads x 128 x 2 x 2 B
    (4608, 425984.0, 4)
    >>> llama_cpp_window_pool(Deployment("Gemma-3-27B", "RTX 5090", weight_bytes="q8_0")) is None  # vLLM's
    True
    """
    m = d.model
    slots = d.scheduler.max_running or 1
    cells = llama_cpp_window_cells(m, slots) if d.engine == "llama.cpp" else None
    if cells is None:
        return None
    return WindowPool(cells, kv_window_pool_si(m, 1.0, bytes_si(d.kv_bytes, "kv_bytes"), copies), slots)


def kv_read_sequence_si(m: Model, context: float, kv_bytes: Any, copies: float = 1.0) -> float:
    """The KV bytes a decode step reads for one sequence at ``context`` tokens, as a plain float: what it holds,
    except that a sparse-attention layer reads the latents of only the tokens its indexer selects
    (:func:`llmcourse.replica.attention.kv_read_si`)."""
    return kv_read_si(m, context, bytes_si(kv_bytes, "kv_bytes"), copies)


def memory_rule_of(a: Assumptions, engine: Any, g: GPU, n: float, m: Model | None = None) -> tuple[str, float]:
    """The memory rule and share a replica runs under: the assumptions' own, or with their rule ``"engine"``
    the rule of ``engine`` (None: the default engine) on ``n`` GPUs ``g``, as
    :func:`~llmcourse.replica.scheduler.engine_memory_rule` gives it (llama.cpp's allowance for model ``m`` where it
    is given: :func:`llama_cpp_reserve_gib`). An engine reads a GPU's size from the driver,
    in MiB; the catalog holds no driver figure, so the datasheet's is read as GiB whatever the assumptions'
    ``memory_unit`` (an "80 GB" H100 as 81,920 MiB, a "180 GB" B200 as 184,320 MiB). The driver reports a little less
    (81,559 and 183,359 MiB): SGLang's default share on four B200s is then 0.855, not 0.856. The share applies to the
    memory as the assumptions read it, as vLLM's 0.9 does. llama.cpp's rule (``"reserve"``) keeps of each GPU
    :func:`llama_cpp_reserve_gib`: the CUDA context (none on Apple's unified memory), the compute buffers and the
    ``--fit`` margin.

    Examples
    --------
    >>> from llmcourse.assumptions import resolve
    >>> b200 = gpu_of("B200")  # 184,320 MiB: 1 - 26,624 / 184,320 = 0.8556
    >>> memory_rule_of(resolve("course"), "SGLang", b200, 4), memory_rule_of(resolve("lab"), "SGLang", b200, 4)
    (('total', 0.856), ('total', 0.9))
    >>> memory_rule_of(resolve("course"), "llama.cpp", gpu_of("RTX 5090"), 1)  # 0.5 + 0.25 + 1
    ('reserve', 1.75)
    >>> memory_rule_of(resolve("course"), "llama.cpp", gpu_of("M3 Max"), 1)  # Metal: no CUDA context
    ('reserve', 1.25)
    """
    if a.memory_rule != "engine":
        return a.memory_rule, a.memory_fraction
    return engine_memory_rule(
        engine,
        float(to(g.memory, GB).m) * 1_024,
        int(n),
        a.memory_fraction,
        llama_cpp_reserve_gib=llama_cpp_reserve_gib(a, g, m),
    )


#: Bytes of one logit in llama.cpp's compute buffer (F32).
LLAMA_CPP_LOGIT_BYTES = 4


def llama_cpp_compute_buffer_gib(a: Assumptions, m: Model | None = None) -> float:
    """GiB of llama.cpp's compute buffers on a GPU for model ``m``: the assumptions' allowance
    (``llama_cpp_compute_buffer_gib``, at the default ubatch), or the logits of one ubatch where the model's
    vocabulary makes them larger (formula ``llama_cpp_logits_buffer``: :data:`LLAMA_CPP_UBATCH` x vocabulary x
    :data:`LLAMA_CPP_LOGIT_BYTES`; llama.cpp reserves its graph for a whole ubatch of outputs). None for ``m``, or a
    model with no vocabulary in the catalog: the allowance.

    Examples
    --------
    >>> from llmcourse.assumptions import resolve
    >>> from llmcourse.catalog import models
    >>> llama_cpp_compute_buffer_gib(resolve(), models["Llama-3.1-8B"])  # 512 x 128,256 x 4 B = 0.245 GiB: the allowance
    0.25
    >>> round(llama_cpp_compute_buffer_gib(resolve(), models["Gemma-3-27B"]), 3)  # 512 x 262,208 x 4 B
    0.5
    """
    flat = a.llama_cpp_compute_buffer_gib
    if m is None or not m.vocab:
        return flat
    logits = F["llama_cpp_logits_buffer"].value(
        ubatch_tokens=LLAMA_CPP_UBATCH, vocab_size=m.vocab, logit_bytes=LLAMA_CPP_LOGIT_BYTES
    )
    return max(flat, logits / 2**30)


def llama_cpp_reserve_gib(a: Assumptions, g: GPU, m: Model | None = None) -> float | None:
    """GiB llama.cpp keeps of each GPU ``g`` beside its weights and KV cache under assumptions ``a``: the CUDA
    driver's and context's share (``cuda_context_gib``; none where the GPU is a share of Apple's unified memory, read
    through Metal's recommendedMaxWorkingSetSize), its compute buffers (:func:`llama_cpp_compute_buffer_gib`: for
    model ``m``, the logits of one ubatch where its vocabulary makes them larger than the allowance) and its
    ``--fit`` margin (``llama_cpp_fit_margin_gib``); None where the assumptions hold no llama.cpp margin (vLLM's rule).

    Examples
    --------
    >>> from llmcourse.assumptions import resolve
    >>> from llmcourse.catalog import models
    >>> llama_cpp_reserve_gib(resolve(), gpu_of("RTX 4090")), llama_cpp_reserve_gib(resolve(), gpu_of("M1 Max"))
    (1.75, 1.25)
    >>> round(llama_cpp_reserve_gib(resolve(), gpu_of("RTX 5090"), models["Gemma-3-27B"]), 3)  # 0.5 + 0.5 + 1
    2.0
    """
    if a.llama_cpp_fit_margin_gib is None:
        return None
    cuda = a.cuda_context_gib if g.memory_share is None else 0.0
    return round(cuda + llama_cpp_compute_buffer_gib(a, m) + a.llama_cpp_fit_margin_gib, 9)


def gpu_memory_read(g: GPU, a: Assumptions, rule: str) -> pint.Quantity:
    """One GPU's memory as a replica under ``rule`` reads it: the catalog's figure as datasheet GB, or as GiB where the
    assumptions' ``memory_unit`` says so or the rule is llama.cpp's (``"reserve"``: llama.cpp reads the device's
    size in MiB from the driver, and a unified memory's share as Metal's ``recommendedMaxWorkingSetSize``, in MiB).

    Examples
    --------
    >>> from llmcourse.assumptions import resolve
    >>> mac = gpu_of("M3 Max")  # 0.75 x 64 GiB = 48 GiB = 51.54 GB
    >>> [round(gpu_memory_read(mac, resolve(), rule).to(GB).m, 2) for rule in ("total", "reserve")]
    [48.0, 51.54]
    """
    if a.memory_unit == "GiB" or rule == "reserve":
        return quantity(to(g.memory, GB).m, GIB)
    return g.memory


def _reserved_si(g: GPU, n: float, mem: float, reserve_gib: float) -> float:
    """llama.cpp's usable memory in bytes: ``n`` GPUs of ``mem`` bytes, each less ``reserve_gib`` GiB (an
    :class:`InputError` when the allowance takes a GPU's whole memory)."""
    reserve = si(quantity(reserve_gib, GIB), "memory_reserve")
    if reserve >= mem:
        raise InputError(
            f"llama.cpp keeps {reserve_gib:g} GiB of each GPU (the assumptions' cuda_context_gib, "
            f"llama_cpp_compute_buffer_gib and llama_cpp_fit_margin_gib), all of the {mem / 2**30:.3g} GiB of one "
            f"{g.name}: give a GPU with more memory or smaller allowances."
        )
    return F["reserved_usable_memory"].value(n_gpus=n, gpu_memory=mem, memory_reserve=reserve)


def usable_si(g: GPU, n: float, a: Assumptions, weights: float, engine: Any = None, m: Model | None = None) -> float:
    """:func:`usable_memory` in bytes, as a plain float, for checked inputs and ``weights`` bytes (llama.cpp's compute
    buffers sized by model ``m``'s vocabulary where it is given: :func:`llama_cpp_compute_buffer_gib`)."""
    rule, fraction = memory_rule_of(a, engine, g, n, m)
    mem = si(gpu_memory_read(g, a, rule), "gpu_memory")
    if rule == "reserve":
        return _reserved_si(g, n, mem, fraction)
    if rule == "total":
        return F["usable_memory"].value(n_gpus=n, gpu_memory=mem, usable_fraction=fraction)
    share = F["engine_usable_fraction"].value(weights=weights, kv_free_fraction=fraction, n_gpus=n, gpu_memory=mem)
    # weights beyond the whole memory leave nothing for the KV cache: the usable memory is all of it
    return F["usable_memory"].value(n_gpus=n, gpu_memory=mem, usable_fraction=min(float(share), 1.0))


def kv_copies_si(m: Model, n: float, a: Assumptions) -> float:
    """:func:`kv_copies` for a checked model, GPU count and assumptions."""
    if not a.kv_replication:
        return 1.0
    heads = 1 if m.attention == "MLA" else m.kv_heads
    return float(F["kv_replication"].value(n_gpus=n, kv_heads=heads))


def fitted_layout(d: Deployment, assumptions: Any) -> Layout:
    """The layout of a step's GPUs (``d.tensor_parallel`` per group, given as ``n_gpus``, and the other degrees,
    checked by :func:`llmcourse.replica.parallel.layout`), refused if the weights do not fit in all of them."""
    m, g = d.model, d.gpu
    lay = layout(m, g, tensor_parallel=d.tensor_parallel, data_parallel=d.data_parallel,
                 pipeline_parallel=d.pipeline_parallel, expert_parallel=d.expert_parallel, link=d.link)  # fmt: skip
    check_weights_fit(m, g, d.weight_bytes, lay.n_gpus, "n_gpus", assumptions, d.engine)
    return lay


def check_weights_fit(
    m: Model, g: GPU, weight_bytes: Any, gpus_: float, name: str, assumptions: Any, engine: Any = None
) -> None:
    """Refuse a deployment whose weights exceed the whole memory of the ``gpus_`` GPUs they are spread
    over (every byte of it, before any share is kept back, read as ``engine`` reads it: llama.cpp's as GiB,
    :func:`gpu_memory_read`): such a replica cannot exist, so no step or prefill of it has a time. ``name`` is the
    caller's argument for the GPU count.

    Examples
    --------
    >>> check_weights_fit(model_of("Llama-3.1-70B"), gpu_of("H100 SXM"), 2, 1, "n_gpus", None)
    Traceback (most recent call last):
    ...
    llmcourse.errors.InputError: Llama-3.1-70B's weights (141 GB) do not fit in the 80.0 GB of one H100 SXM: give n_gpus=2 (the GPUs whose usable memory holds them), store fewer bytes per weight (weight_bytes='fp8' or 'int4'), or pick a GPU with more memory.
    """
    a = resolve(assumptions)
    whole = gpu_memory_read(g, a, memory_rule_of(a, engine, g, gpus_)[0])
    if weights_si(m, weight_bytes) > gpus_ * si(whole, "gpu_memory"):
        w, total = _weights(m, weight_bytes), gpus_ * whole
        need = gpus_for_weights(m, g, weight_bytes, assumptions)
        where = f"one {g.name}" if gpus_ == 1 else f"{gpus_:g} x {g.name}"
        raise InputError(
            f"{m.name}'s weights ({fmt(w, 'GB')}) do not fit in the {fmt(total, 'GB')} of {where}: give "
            f"{name}={need} (the GPUs whose usable memory holds them), store fewer bytes per weight "
            "(weight_bytes='fp8' or 'int4'), or pick a GPU with more memory."
        )


# --- memory ---------------------------------------------------------------------------------
@checked
def weight_bytes(model: Model | str, bytes_per_param: Any = None) -> pint.Quantity:
    """Bytes of a model's weights: parameters x bytes per parameter, at the model's checkpoint precision by default
    (``bytes_per_param=None``: :attr:`Model.checkpoint`, per tensor group: gpt-oss's experts in MXFP4, 4.25 bits
    with their scales, and the rest in BF16; DeepSeek-V3's FP8 in 128 x 128 blocks with their FP32 scales, and its
    embeddings in BF16). One precision (``"fp8"``, ``2``, ``Q_(1, "B")``) stores every weight at it; a per-group
    mapping (``{"experts": "nvfp4", "other": "bf16"}``, or the text ``"experts=nvfp4 other=bf16"``) stores the groups
    it names at theirs (``other``: the groups not named; without it, those keep the checkpoint's).

    Examples
    --------
    >>> weight_bytes("Llama-3.1-8B").to(GB)
    <Quantity(16.06, 'gigabyte')>
    >>> weight_bytes("Qwen2.5-72B", "fp8").to(GB)
    <Quantity(72.7, 'gigabyte')>
    >>> round(weight_bytes("gpt-oss-120b").to(GB).m, 1), round(weight_bytes("gpt-oss-120b", "bf16").to(GB).m)
    (65.6, 234)
    >>> round(weight_bytes("gpt-oss-120b", {"experts": "nvfp4"}).to(GB).m, 1)
    69.2
    """
    m = model_of(model)
    if per_group(bytes_per_param):
        split = weight_split_si(m, bytes_per_param)
        if isinstance(split, tuple):
            return quantity(split[0] + split[1], BYTE)
        return F["weight_bytes"](params=m.params, weight_bytes_per_param=quantity(split, BYTE))
    return F["weight_bytes"](params=m.params, weight_bytes_per_param=bytes_of(bytes_per_param, "bytes_per_param"))


_weights = weight_bytes  # the function, for bodies whose ``weight_bytes`` parameter shadows its name


@checked
def kv_bytes_per_token(model: Model | str, kv_bytes: Any = 2) -> pint.Quantity:
    """KV cache bytes one token adds: 2 x layers x KV heads x head dim x bytes (MLA: the latent), over the layers
    that keep tokens (a linear-attention layer keeps a fixed state instead, :func:`kv_bytes_per_sequence`; a
    sparse-attention layer adds its indexer's key).

    Uses ``kv_heads`` and ``head_dim`` from the config, never ``hidden``: the classic bug.

    Examples
    --------
    >>> kv_bytes_per_token("Qwen2.5-72B").to("KiB")
    <Quantity(320.0, 'kibibyte')>
    >>> kv_bytes_per_token("DeepSeek-V3").to("B")
    <Quantity(70272.0, 'byte')>
    >>> kv_bytes_per_token("Qwen3.5-397B-A17B").to("B")  # its 15 full-attention layers: 15 x 2 x 2 x 256 x 2 B
    <Quantity(30720.0, 'byte')>
    """
    m = model_of(model)
    b = bytes_of(kv_bytes, "kv_bytes")
    return Q_(round(kv_token_si(m, si(b, "kv_bytes")), 6), B)


@checked
def kv_bytes_per_sequence(model: Model | str, context_tokens: float, kv_bytes: Any = 2) -> pint.Quantity:
    """KV cache bytes of one sequence of ``context_tokens`` tokens, summed over its layer types (formula
    ``kv_bytes_by_layer_type``): full layers keep every token, sliding-window layers at most the window, chunked
    layers at most a chunk, linear-attention layers a fixed state (:mod:`llmcourse.replica.attention`).

    Examples
    --------
    >>> kv_bytes_per_sequence("Qwen2.5-72B", 2_300).to(GB)
    <Quantity(0.753664, 'gigabyte')>
    >>> kv_bytes_per_sequence("Llama-3.1-8B", 32_768).to("GiB")
    <Quantity(4.0, 'gibibyte')>
    >>> kv_bytes_per_sequence("gpt-oss-120b", 8_192).to(GB)  # 18 x 2,048 B x 8,192 + 18 x 2,048 B x 128
    <Quantity(0.30670848, 'gigabyte')>
    """
    m = model_of(model)
    b = si(bytes_of(kv_bytes, "kv_bytes"), "kv_bytes")
    return Q_(kv_held_si(m, plain_number(context_tokens, "context_tokens"), b), B)  # None is no context


def kv_copies(model: Model | str, n_gpus: int = 1, assumptions: Assumptions | str | None = None) -> float:
    """How many times a replica of ``n_gpus`` GPUs stores each sequence's KV cache: tensor
    parallelism splits the KV heads, but every GPU keeps at least one, so past ``kv_heads`` GPUs
    the heads are replicated; MLA's single latent is replicated on every GPU. 1 when the
    assumptions leave replication out (the sources' methods).

    Examples
    --------
    >>> kv_copies("Llama-3.1-70B", 8), kv_copies("Llama-3.1-70B", 16), kv_copies("DeepSeek-V3", 8)
    (1.0, 2.0, 8.0)
    """
    m, n = model_of(model), plain_number(n_gpus, "n_gpus", integer=True)
    if not resolve(assumptions).kv_replication:
        return 1.0
    heads = 1 if m.attention == "MLA" else m.kv_heads
    return float(F["kv_replication"](n_gpus=n, kv_heads=heads).m)


@checked
def usable_memory(
    gpu: GPU | str,
    n_gpus: int = 1,
    *,
    weights: pint.Quantity | None = None,
    assumptions: Assumptions | str | None = None,
    engine: str | None = None,
) -> pint.Quantity:
    """Memory a server may use for weights and KV cache on ``n_gpus`` GPUs, by the assumptions'
    memory rule: a share of the total (``"total"``), or the ``weights`` plus a share of what they
    leave (``"free"``), that share being the assumptions' ``memory_fraction``, or (``"engine"``, the course's)
    the rule of ``engine`` (None: the default engine, vLLM: a share of the total; llama.cpp: all of it less a fixed
    allowance on each GPU, :func:`llama_cpp_reserve_gib`); the GPU's memory read as datasheet GB
    or as the HBM's GiB (llama.cpp's always as GiB, :func:`gpu_memory_read`).

    Examples
    --------
    >>> usable_memory("H100 SXM", 2).to(GB)
    <Quantity(144.0, 'gigabyte')>
    >>> round(usable_memory("H100 SXM", 2, assumptions=resolve().replace(memory_unit="GiB")).to(GB).m, 1)
    154.6
    >>> usable_memory("B200", 4, engine="SGLang").to(GB)  # 4 x 180 GB x SGLang's 0.856
    <Quantity(616.32, 'gigabyte')>
    >>> usable_memory("B200", 4, weights=Q_(671, "GB"), engine="TensorRT-LLM").to(GB)  # 671 + 0.9 x (720 - 671)
    <Quantity(715.1, 'gigabyte')>
    >>> usable_memory("RTX 5090", engine="llama.cpp").to("GiB")  # 32 - 0.5 CUDA - 0.25 buffers - 1 margin
    <Quantity(30.25, 'gibibyte')>
    """
    g = gpu_of(gpu)
    a = resolve(assumptions)
    n = n_gpus
    rule, fraction = memory_rule_of(a, engine, g, n)
    mem = gpu_memory_read(g, a, rule)
    if rule == "reserve":
        return Q_(_reserved_si(g, n, si(mem, "gpu_memory"), fraction), B)
    if rule == "total":
        return F["usable_memory"](n_gpus=n, gpu_memory=mem, usable_fraction=fraction)
    if weights is None:
        whose = "" if a.memory_rule == "free" else f" for engine {engine_name(engine)}"
        raise InputError(
            f"the memory rule of assumptions {a.name!r}{whose} (the weights plus a share of what they leave) needs "
            "the weights' bytes (weights=...)."
        )
    share = F["engine_usable_fraction"](weights=weights, kv_free_fraction=fraction, n_gpus=n, gpu_memory=mem)
    # weights beyond the whole memory leave nothing for the KV cache: the usable memory is all of it
    return F["usable_memory"](n_gpus=n, gpu_memory=mem, usable_fraction=min(float(share.m), 1.0))


@checked
def max_batch(
    model: Model | str,
    gpu: GPU | str,
    context_tokens: float,
    *,
    n_gpus: int = 1,
    weight_bytes: Any = None,
    kv_bytes: Any = 2,
    assumptions: Assumptions | str | None = None,
) -> int:
    """Conversations whose KV cache fits beside the weights (0 if the weights alone do not fit).

    Examples
    --------
    >>> max_batch("Llama-3.1-8B", "H100 SXM", 2_048 + 512)
    166
    """
    m, g = model_of(model), gpu_of(gpu)
    w = _weights(m, weight_bytes)
    mem = usable_memory(g, n_gpus, weights=w, assumptions=assumptions)
    if w >= mem:
        return 0
    copies = kv_copies(m, n_gpus, assumptions)  # of the attention layers' cache; a linear state splits
    kv = Q_(kv_sequence_si(m, context_tokens, kv_bytes, copies), B)
    return int(F["max_batch"](usable_memory=mem, weights=w, kv_per_sequence=kv).m)


@checked
def gpus_for_weights(
    model: Model | str, gpu: GPU | str, weight_bytes: Any = None, assumptions: Any = None, *, power_of_two: bool = True
) -> int:
    """The tensor-parallel degree a model's weights need: the fewest GPUs, rounded up to a power of
    two (tensor parallelism splits attention heads, so engines take 1, 2, 4 or 8), whose usable
    memory holds more than the weights; ``power_of_two=False`` gives the fewest GPUs unrounded.

    Examples
    --------
    >>> gpus_for_weights("Llama-3.1-70B", "H100 SXM"), gpus_for_weights("Llama-3.1-70B", "H100 SXM", "fp8")
    (2, 1)
    >>> gpus_for_weights("Llama-3.1-405B", "H100 SXM"), gpus_for_weights("Llama-3.1-405B", "H100 SXM", power_of_two=False)
    (16, 12)
    """
    m, g = model_of(model), gpu_of(gpu)
    w = _weights(m, weight_bytes)
    per_gpu = usable_memory(g, 1, weights=w, assumptions=assumptions)
    need = int(F["gpus_for_weights"](weights=w, gpu_memory=per_gpu, usable_fraction=1).m)
    if to(need * per_gpu - w, "B").m <= 0:  # exactly full: nothing left for the KV cache
        need += 1
    return 2 ** math.ceil(math.log2(need)) if power_of_two else need


def replica_memory_si(
    d: Deployment, lay: Layout, a: Assumptions, final: float
) -> tuple[float, float, float, WindowPool | None]:
    """(weights held, usable memory, KV cache of one sequence of ``final`` tokens, llama.cpp's shared window cache or
    None) of a replica of ``d`` on its layout, in bytes, as plain floats: each attention data-parallel group holds
    everything but the experts (formula ``dp_weights_held``), and the KV cache counts every copy the replica keeps.
    Under llama.cpp a window layer's cells are the slots' one cache (:func:`llama_cpp_window_pool`), not a
    sequence's."""
    m, g = d.model, d.gpu
    w = weights_si(m, d.weight_bytes)
    if lay.data_parallel > 1:
        w_exp = weight_parts_si(m, d.weight_bytes)[1]
        w = F["dp_weights_held"].value(weights=w, expert_weights=w_exp, data_parallel=lay.data_parallel)
    mem = usable_si(g, check_value(lay.n_gpus, SYMBOLS["n_gpus"], "n_gpus"), a, w, d.engine, m)
    copies = kv_copies_si(m, lay.tensor_parallel, a)
    kv_seq = kv_sequence_si(m, final, d.kv_bytes, copies)
    pool = llama_cpp_window_pool(d, copies)
    if pool is not None:  # the window layers' cells are the slots' shared cache, not the sequence's (a rounding error
        # from 0 where every layer keeps a window)
        kv_seq = max(0.0, kv_seq - pool.cell_bytes * min(final, llama_cpp_window(m)))
    return w, mem, kv_seq, pool
