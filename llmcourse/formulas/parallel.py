"""The formulas of a replica on many GPUs, each written once as a SymPy expression (chapter
*Many GPUs*, ``book/08c_many_gpus.md``).

Splitting a model over GPUs divides its bytes and FLOPs, but the GPUs must then talk. The cost of a
collective follows the alpha-beta model: a fixed cost ``t_0`` per collective (launch and
synchronisation), a latency ``alpha`` per step of the ring, and the bytes each GPU sends over its
share of the link's bandwidth. A ring all-reduce over ``N`` GPUs takes ``2(N - 1)`` steps (a
reduce-scatter, then an all-gather), each moving ``S / N`` bytes; an all-to-all (how expert
parallelism sends each token to its experts and back) takes ``N - 1``. A decode step moves tiny
messages (a batch of 8 sequences of 8,192 BF16 values is 128 KiB), so at decode the latency terms
dominate and the bandwidth term is a rounding error; a prefill of thousands of tokens moves
hundreds of megabytes, and there the bandwidth term is what counts.

Pipeline parallelism splits the layers into ``P`` stages. A token still passes through every
layer, one stage after the other, so the time per token does not shrink; the stages work on
``P`` micro-batches at once, which is what keeps them busy. A pipeline that is filled and drained
for each batch idles for a share ``(P - 1) / (m + P - 1)`` of the time (the bubble) with ``m``
micro-batches.

Attention data parallelism (DeepSeek-style serving) gives each of ``D`` groups of GPUs its own
sequences and a whole copy of the attention weights, while the experts are split over all of them:
the KV cache is not replicated, the attention weights are.

The symbols and formulas are registered in :data:`llmcourse.formulas.SYMBOLS` and
:data:`~llmcourse.formulas.FORMULAS` when this module is imported (``llmcourse.formulas`` imports it, with every
topic module, after :mod:`~llmcourse.formulas.core`).

Examples
--------
>>> from llmcourse.formulas import FORMULAS
>>> from llmcourse.units import Q_
>>> t = FORMULAS["allreduce_time"](
...     collective_base=Q_(4.5, "us"), link_latency=Q_(0.8, "us"), n_gpus=8,
...     message_bytes=Q_(128, "KiB"), link_bandwidth=Q_(450, "GB/s"), link_efficiency=0.8)
>>> round(t.to("us").m, 2)
16.34
"""

from __future__ import annotations

from llmcourse.formulas import serving  # noqa: F401  (the symbols taken by name below are defined there first)
from llmcourse.formulas.core import defer, deferred_getattr, formula, section, symbol, symbols

__all__: list[str] = []
__getattr__ = deferred_getattr(globals())  # the names the sections below define, made on first use

CHAPTER = "08c_many_gpus"
n_gpus, layers, batch = symbols("n_gpus", "layers", "batch")
experts_per_token, step_time, step_overhead = symbols("experts_per_token", "step_time", "step_overhead")
allreduce_latency, bytes_read, prefill_time = symbols("allreduce_latency", "bytes_read", "prefill_time")
kv_per_sequence, flops_per_token, weights = symbols("kv_per_sequence", "flops_per_token", "weights")

# --- symbols --------------------------------------------------------------------------------------
hidden = symbol("hidden", r"d_{model}", "", "hidden size of the model (values per token per layer)", integer=True)
activation_bytes = symbol("activation_bytes", r"b_{act}", "B", "bytes per activation value sent between GPUs")
step_tokens = symbol("step_tokens", r"n_{tok}", "", "tokens a step sends between GPUs (the batch at decode)")
message_bytes = symbol("message_bytes", r"S_{msg}", "B", "bytes of one collective's message, per GPU")
link_bandwidth = symbol("link_bandwidth", r"B_{link}", "B/s", "link bandwidth per GPU and direction")
link_efficiency = symbol(
    "link_efficiency", r"\eta_{link}", "", "share of the link bandwidth a collective reaches", at_most=1
)
link_latency = symbol(
    "link_latency", r"\alpha_{link}", "s", "latency of one step of a ring collective", allow_zero=True
)
collective_base = symbol("collective_base", r"t_{0}", "s", "fixed cost of one collective", allow_zero=True)
alltoall_latency = symbol("alltoall_latency", r"t_{a2a}", "s", "time of one expert-parallel all-to-all")
moe_layers = symbol("moe_layers", r"L_{moe}", "", "layers whose MLP is a mixture of experts", integer=True)
stages = symbol("stages", r"N_{pp}", "", "pipeline stages", integer=True)
micro_batches = symbol("micro_batches", r"m_{pp}", "", "micro-batches in flight through a pipeline", integer=True)
bubble = symbol("bubble", r"\beta_{pp}", "", "share of a pipeline's time its stages idle", allow_zero=True)
send_time = symbol(
    "send_time", r"t_{send}", "s", "time to send activations from one stage to the next", allow_zero=True
)
data_parallel = symbol(
    "data_parallel",
    r"N_{dp}",
    "",
    "attention data-parallel groups (each its own sequences and attention)",
    integer=True,
)
expert_bytes_read = symbol(
    "expert_bytes_read", r"B_{exp}", "B", "expert weight bytes a decode step reads", allow_zero=True
)
expert_weights = symbol("expert_weights", r"W_{exp}", "B", "bytes of the experts' weights", allow_zero=True)

# --- collectives (alpha-beta) ---------------------------------------------------------------------


@section
def _collectives() -> None:
    global _ring_steps
    _ring_steps = 2 * (n_gpus - 1)
    formula(
        "activation_message",
        "message_bytes",
        step_tokens * hidden * activation_bytes,
        "bytes of one all-reduce of a step's activations: tokens x hidden size x bytes per value",
        CHAPTER,
    )
    formula(
        "allreduce_time",
        "allreduce_latency",
        collective_base
        + _ring_steps * link_latency
        + _ring_steps / n_gpus * message_bytes / (link_bandwidth * link_efficiency),
        "ring all-reduce (alpha-beta): a fixed cost, 2(N-1) latency steps, and 2(N-1)/N of the bytes over the link",
        CHAPTER,
    )
    formula(
        "alltoall_time",
        "alltoall_latency",
        collective_base
        + (n_gpus - 1) * link_latency
        + (n_gpus - 1) / n_gpus * message_bytes / (link_bandwidth * link_efficiency),
        "all-to-all (alpha-beta): a fixed cost, N-1 latency steps, and (N-1)/N of the bytes over the link",
        CHAPTER,
    )
    formula(
        "expert_dispatch_message",
        "message_bytes",
        step_tokens * experts_per_token * hidden * activation_bytes,
        "bytes one all-to-all sends: every token to each of its experts (and the same back to combine)",
        CHAPTER,
    )
    formula(
        "attention_allreduce_time",
        "step_overhead",
        layers * allreduce_latency,
        "all-reduce time per step of tensor-parallel attention alone: one per layer",
        CHAPTER,
    )
    formula(
        "ep_alltoall_time",
        "step_overhead",
        2 * moe_layers * alltoall_latency,
        "all-to-all time per step of expert parallelism: a dispatch and a combine per MoE layer",
        CHAPTER,
    )


# --- pipeline parallelism -------------------------------------------------------------------------


@section
def _pipeline() -> None:
    formula(
        "pipeline_bubble",
        "bubble",
        (stages - 1) / (micro_batches + stages - 1),
        "share of a filled-and-drained pipeline's time its stages idle",
        CHAPTER,
    )
    formula(
        "send_time",
        "send_time",
        collective_base + link_latency + message_bytes / (link_bandwidth * link_efficiency),
        "one stage handing its activations to the next: a fixed cost, one latency, the bytes over the link",
        CHAPTER,
    )
    formula(
        "pipeline_token_time",
        "time_per_token",
        step_time + (stages - 1) * (send_time + step_overhead),
        "time per token through P stages: every layer's step, plus a send and a stage's overhead per boundary",
        CHAPTER,
    )
    formula(
        "pipelined_prefill_time",
        "prefill_time",
        prefill_time / (1 - bubble),
        "a batch's prefill on a pipeline: the work spread over every stage, stretched by the bubble",
        CHAPTER,
    )


# --- attention data parallelism -------------------------------------------------------------------


@section
def _data_parallel() -> None:
    formula(
        "dp_bytes_read",
        "bytes_read",
        bytes_read - (1 - 1 / data_parallel) * expert_bytes_read,
        "weight bytes per attention group per step: the shared weights whole, the experts split D ways",
        CHAPTER,
    )
    formula(
        "dp_kv_per_sequence",
        "kv_per_sequence",
        kv_per_sequence / data_parallel,
        "KV read per sequence per GPU group: each group holds 1/D of the sequences",
        CHAPTER,
    )
    formula(
        "dp_flops_per_token",
        "flops_per_token",
        flops_per_token / data_parallel,
        "FLOPs per token per GPU group: each group computes 1/D of the tokens",
        CHAPTER,
    )
    formula(
        "dp_weights_held",
        "weights",
        weights + (data_parallel - 1) * (weights - expert_weights),
        "weights a replica holds with D attention groups: the experts once, everything else D times",
        CHAPTER,
    )


defer(globals())  # the symbols above are made when SymPy is first needed
