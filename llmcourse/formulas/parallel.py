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
from llmcourse.formulas.core import defer, deferred_getattr, formula, section, sp, symbol, symbols

__all__: list[str] = []
__getattr__ = deferred_getattr(globals())  # the names the sections below define, made on first use

CHAPTER = "08c_many_gpus"
n_gpus, layers, batch = symbols("n_gpus", "layers", "batch")
experts_per_token, step_time, step_overhead = symbols("experts_per_token", "step_time", "step_overhead")
experts = symbols("experts")[0]
chunks_per_prompt, answer_tokens, prompt_step_share = symbols("chunks_per_prompt", "answer_tokens", "prompt_step_share")
allreduce_latency, bytes_read, prefill_time = symbols("allreduce_latency", "bytes_read", "prefill_time")
kv_per_sequence, flops_per_token, weights = symbols("kv_per_sequence", "flops_per_token", "weights")

# --- symbols --------------------------------------------------------------------------------------
hidden = symbol("hidden", r"d_{model}", "", "hidden size of the model (values per token per layer)", integer=True)
activation_bytes = symbol("activation_bytes", r"b_{act}", "B", "bytes per activation value sent between GPUs")
step_tokens = symbol("step_tokens", r"n_{tok}", "", "tokens a step sends between GPUs (the batch at decode)")
message_bytes = symbol("message_bytes", r"S_{msg}", "B", "bytes of one collective's message, per GPU")
link_bandwidth = symbol("link_bandwidth", r"B_{link}", "B/s", "link bandwidth per GPU and direction")
mesh_gpus = symbol(
    "mesh_gpus",
    r"N_{mesh}",
    "",
    "GPUs a fully connected link joins, each GPU a link of its own to each peer",
    integer=True,
)
mesh_bandwidth = symbol(
    "mesh_bandwidth", r"B_{mesh}", "B/s", "bandwidth per GPU and direction of a group's links on a fully connected link"
)
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
engine_allreduce_base = symbol(
    "engine_allreduce_base",
    r"t_{0,e}",
    "s",
    "fixed cost of an engine's own all-reduce kernel (launch and flags)",
    allow_zero=True,
)
layer_floor = symbol(
    "layer_floor",
    r"t_{layer}",
    "s",
    "fixed time of one layer's kernels in a forward pass (launch gaps and tails, small matmuls, waits at collectives)",
    allow_zero=True,
)
node_gpus = symbol("node_gpus", r"N_{node}", "", "GPUs of a group inside one node (one scale-up domain)", integer=True)
nodes = symbol("nodes", r"N_{nodes}", "", "nodes a group spans", integer=True)
out_bandwidth = symbol("out_bandwidth", r"B_{out}", "B/s", "scale-out link bandwidth per GPU and direction")
out_latency = symbol(
    "out_latency", r"\alpha_{out}", "s", "latency of one step over the scale-out link", allow_zero=True
)
out_base = symbol(
    "out_base", r"t_{0,out}", "s", "fixed cost of one collective over the scale-out link", allow_zero=True
)
ep_gpus = symbol("ep_gpus", r"N_{ep}", "", "GPUs the routed experts are split over (expert parallelism)", integer=True)
expert_groups = symbol(
    "expert_groups", r"n_{grp}", "", "groups the router splits the experts into (n_group; 1: no groups)", integer=True
)
topk_groups = symbol(
    "topk_groups", r"k_{grp}", "", "groups a token's experts may come from (topk_group; 1: no groups)", integer=True
)
dispatch_gpus = symbol("dispatch_gpus", r"D_{tok}", "", "expected GPUs one token is sent to (its experts' GPUs)")
dispatch_bytes = symbol("dispatch_bytes", r"b_{disp}", "B", "bytes per activation value a dispatch sends (FP8: 1)")
dispatch_time = symbol("dispatch_time", r"t_{disp}", "s", "time of one expert dispatch (all-to-all)")
combine_time = symbol("combine_time", r"t_{comb}", "s", "time of one expert combine (all-to-all back)")
expert_bytes_read = symbol(
    "expert_bytes_read", r"B_{exp}", "B", "expert weight bytes a decode step reads", allow_zero=True
)
expert_weights = symbol("expert_weights", r"W_{exp}", "B", "bytes of the experts' weights", allow_zero=True)
expert_flops_per_token = symbol(
    "expert_flops_per_token", r"F_{exp}", "FLOP", "FLOPs of one token in the routed experts it reaches", allow_zero=True
)
# The results of the formulas below, each a quantity of its own (not "K_seq = K_seq / N_dp"):
symbol("prefill_time_pp", r"t_{pre,pp}", "s", "a batch's prefill time on a pipeline of stages")
symbol("bytes_read_dp", r"W_{read,dp}", "B", "weight bytes one attention data-parallel group reads per step")
symbol("kv_per_sequence_dp", r"K_{seq,dp}", "B", "KV bytes per sequence per attention data-parallel group")
symbol("flops_per_token_dp", r"F_{tok,dp}", "FLOP", "FLOPs per token per attention data-parallel group")
symbol("chunk_flops_dp", r"F_{ch,dp}", "FLOP", "FLOPs of one prompt token on the busiest attention data-parallel group")
prefilling_groups = symbol(
    "prefilling_groups", r"g_{pre}", "", "attention data-parallel groups with a prompt chunk in the step"
)
symbol("weights_dp", r"W_{dp}", "B", "weight bytes a replica holds with its attention data-parallel groups")
chunks_within = symbol(
    "chunks_within", r"i_{ch}", "", "the smallest chunks of a prompt counted, in order of size (0 to k)",
    integer=True, allow_zero=True,
)  # fmt: skip
tokens_within = symbol(
    "tokens_within", r"T_{\le i}", "", "prompt tokens of a prompt's i_ch smallest chunks", allow_zero=True
)
symbol(
    "busiest_within", r"P_{\le i}", "",
    "share of the chunk steps whose busiest attention group's chunk is among a prompt's i_ch smallest", allow_zero=True,
)  # fmt: skip
symbol(
    "step_tokens_within", r"C_{\le i}", "",
    "prompt tokens of all attention groups in a chunk step, summed over the chunk steps whose busiest group's chunk "
    "is among the i_ch smallest, over the chunk steps", allow_zero=True,
)  # fmt: skip

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
        "comm_time",
        layers * allreduce_latency,
        "all-reduce time per step of tensor-parallel attention alone: one per layer",
        CHAPTER,
    )
    formula(
        "ep_alltoall_time",
        "comm_time",
        2 * moe_layers * alltoall_latency,
        "all-to-all time per step of expert parallelism: a dispatch and a combine per MoE layer",
        CHAPTER,
    )


# --- the engines' all-reduce kernels and the all-reduce across nodes ------------------------------------------


@section
def _engine_collectives() -> None:
    bytes_over_link = message_bytes / (link_bandwidth * link_efficiency)
    # One-shot (vLLM cross_device_reduce_1stage, TensorRT-LLM ONESHOT, FlashInfer trtllm_allreduce_fusion at <= 128
    # tokens): every GPU raises a flag in its peers' memory (one latency), then reads the whole message from each of
    # its N - 1 peers over NVLink and adds them: (N - 1) S bytes arrive at each GPU.
    formula(
        "oneshot_allreduce_time",
        "allreduce_latency",
        engine_allreduce_base + link_latency + (n_gpus - 1) * bytes_over_link,
        "one-shot all-reduce: a fixed cost, one flag latency, each GPU reads the whole message from its N-1 peers",
        CHAPTER,
    )
    # Two-shot (vLLM cross_device_reduce_2stage, TensorRT-LLM TWOSHOT): a reduce-scatter (each GPU reads its 1/N
    # slice from the N - 1 peers and sums it into a buffer), a release/acquire barrier, then an all-gather of the
    # summed slices: 2(N-1)/N S, in two passes that each pay the fixed cost and a flag latency. With the one-shot
    # above this puts the switch where the engines put it: on 8 H100s at 3.5e-6 s x 360 GB/s / (7 - 7/4) = 240 kB
    # (vLLM: 256 KiB; TensorRT-LLM's table: 16 to 32 tokens of 8,192 BF16 values, 256-512 KiB), and it gives 19 us
    # for 2 MiB on 8 H100s (measured: vLLM 20.9 us, TensorRT-LLM 28.3 us).
    formula(
        "twoshot_allreduce_time",
        "allreduce_latency",
        2 * (engine_allreduce_base + link_latency) + 2 * (n_gpus - 1) / n_gpus * bytes_over_link,
        "two-shot all-reduce: a reduce-scatter and an all-gather (2(N-1)/N of the bytes), each a fixed cost and a latency",
        CHAPTER,
    )
    # Across nodes (NCCL's hierarchical rings and trees): a reduce-scatter inside each node over the scale-up link,
    # an all-reduce of each GPU's 1/N_node slice between the nodes over the scale-out link (every GPU its own NIC,
    # the N_node slices in parallel), then an all-gather inside each node.
    formula(
        "hierarchical_allreduce_time",
        "allreduce_latency",
        out_base
        + 2 * link_latency
        + 2 * (node_gpus - 1) / node_gpus * bytes_over_link
        + 2 * (nodes - 1) * out_latency
        + 2 * (nodes - 1) / nodes * message_bytes / node_gpus / (out_bandwidth * link_efficiency),
        "all-reduce across nodes: reduce-scatter in each node, all-reduce of the slices between nodes, all-gather",
        CHAPTER,
    )
    # A fully connected link (AMD's Infinity Fabric on an MI300X or MI355X board, the Gaudi 3's 21 scale-up ports,
    # 3 to each of 7 peers) has no switch: each GPU has a link of its own to each peer, and a group of N of the
    # N_mesh GPUs reaches its peers over N - 1 of them (vLLM PR 39080 on MI355X: peak bus bandwidth (N - 1) x one
    # link's; docs.habana.ai Network Configuration: 21 / 7 = 3 ports for each pair). On 2 MI300X at 400 / 7 GB/s and
    # 80% this gives 3.5 + 3.6 + 8 MiB / 45.7 GB/s = 191 us for vLLM's custom all-reduce of 8 MiB (measured 181 us,
    # ROCm/aiter PR 801), where the whole 400 GB/s gave 33 us.
    formula(
        "mesh_link_bandwidth",
        "mesh_bandwidth",
        link_bandwidth * (n_gpus - 1) / (mesh_gpus - 1),
        "a group of N GPUs on a fully connected link of N_mesh uses N - 1 of each GPU's N_mesh - 1 links",
        CHAPTER,
    )


# --- expert dispatch: one copy of a token per GPU it goes to --------------------------------------------------


def _lgamma(x: sp.Expr) -> sp.Expr:
    """ln Gamma(x), printed by lambdify as the math module's lgamma: the binomials of the dispatch formula stay
    finite for hundreds of experts (Gamma(257) overflows a float)."""
    return sp.Function("lgamma")(x)


@section
def _dispatch() -> None:
    # A token picks k of the E_t = k_grp E / n_grp experts of its allowed groups (every expert when n_grp = 1),
    # at random. A GPU holding E / N_ep of them (its groups split over N_ep / n_grp GPUs, N_ep >= n_grp) is missed
    # with the probability C(E_t - E/N_ep, k) / C(E_t, k) when its group is allowed, always when it is not. Summed
    # over the N_ep GPUs: the expected number of GPUs a token is sent to.
    allowed = topk_groups * experts / expert_groups
    held = experts / ep_gpus
    miss = sp.Piecewise(
        (0, allowed - held < experts_per_token),
        (
            sp.exp(
                _lgamma(allowed - held + 1)
                + _lgamma(allowed - experts_per_token + 1)
                - _lgamma(allowed + 1)
                - _lgamma(allowed - held - experts_per_token + 1)
            ),
            True,
        ),
    )
    formula(
        "dispatch_gpus",
        "dispatch_gpus",
        ep_gpus * topk_groups / expert_groups * (1 - miss),
        "expected GPUs a token is sent to: each GPU of its allowed groups, unless none of its k experts is there",
        CHAPTER,
    )
    formula(
        "dedup_dispatch_message",
        "message_bytes",
        step_tokens * dispatch_gpus * hidden * dispatch_bytes,
        "bytes one GPU dispatches: every token once to each GPU that holds one of its experts",
        CHAPTER,
    )
    formula(
        "dedup_combine_message",
        "message_bytes",
        step_tokens * dispatch_gpus * hidden * activation_bytes,
        "bytes one GPU gets back: each GPU's experts' outputs summed there, once per token and GPU",
        CHAPTER,
    )
    formula(
        "ep_dispatch_combine_time",
        "comm_time",
        moe_layers * (dispatch_time + combine_time),
        "all-to-all time per step of expert parallelism: a dispatch and a combine per MoE layer",
        CHAPTER,
    )


# --- the per-layer floor of a forward pass --------------------------------------------------------------------


@section
def _layer_floor() -> None:
    # Every layer launches its kernels (norms, the QKV, attention, output and MLP matmuls, the all-reduces) on every GPU
    # of the group, whatever share of the weights each holds: under CUDA graphs each kernel still pays its ramp and
    # tail and the gap to the next, a matmul of a few thin columns cannot keep the GPU's memory system busy, and every
    # collective waits for the slowest GPU. That time does not shrink with the tensor-parallel degree, so it is a
    # larger share of a step the more GPUs split the weights.
    formula(
        "layer_floor_time",
        "step_overhead",
        layers * layer_floor,
        "the layers' fixed time per forward pass: each layer's kernels take a floor however little they read",
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
        "prefill_time_pp",
        prefill_time / (1 - bubble),
        "a batch's prefill on a pipeline: the work spread over every stage, stretched by the bubble",
        CHAPTER,
    )


# --- attention data parallelism -------------------------------------------------------------------


@section
def _data_parallel() -> None:
    formula(
        "dp_bytes_read",
        "bytes_read_dp",
        bytes_read - (1 - 1 / data_parallel) * expert_bytes_read,
        "weight bytes per attention group per step: the shared weights whole, the experts split D ways",
        CHAPTER,
    )
    formula(
        "dp_kv_per_sequence",
        "kv_per_sequence_dp",
        kv_per_sequence / data_parallel,
        "KV read per sequence per GPU group: each group holds 1/D of the sequences",
        CHAPTER,
    )
    formula(
        "dp_flops_per_token",
        "flops_per_token_dp",
        flops_per_token / data_parallel,
        "FLOPs per token per GPU group: each group computes 1/D of the tokens",
        CHAPTER,
    )
    formula(
        "dp_chunk_flops_per_token",
        "chunk_flops_dp",
        (flops_per_token - expert_flops_per_token) / prefilling_groups + expert_flops_per_token / data_parallel,
        "FLOPs a step's prompt token puts on the busiest attention group, the step's prompt tokens split over the "
        "g_pre groups that prefill them: each group's attention and dense layers its own, the routed experts spread "
        "over the D groups' GPUs (expert parallel); one prompt (g_pre = 1) puts its dense layers on one group, prompts "
        "on every group (g_pre = D) cost F_tok / D a token, as decode tokens",
        CHAPTER,
    )
    formula(
        "dp_prompt_step_share",
        "prompt_step_share",
        1 - sp.Max(0, 1 - chunks_per_prompt * batch / (data_parallel * answer_tokens)) ** data_parallel,
        "share of the steps with a prompt chunk on at least one of D attention groups, each group's prompts (B / D "
        "over an answer, k steps each) in steps of their own, the groups' scheduled apart (one group: prompt_step_share)",
        CHAPTER,
    )
    formula(
        "dp_chunk_groups",
        "prefilling_groups",
        chunks_per_prompt * batch / (answer_tokens * prompt_step_share),
        "attention groups with a prompt chunk in a step that has one, on average: the chunk steps of all D groups "
        "(k B / T_a of the steps) over the share of the steps that have one",
        CHAPTER,
    )
    # each of D groups has a chunk in a step with probability s (its own prompts: k B / D of the T_a steps, at most
    # all), at a place in its prompt independent of the others': the number with one, j, is binomial(D, s), given j >= 1
    s_g = sp.Min(1, chunks_per_prompt * batch / (data_parallel * answer_tokens))
    none = (1 - s_g) ** data_parallel
    x = 1 - s_g + s_g * chunks_within / chunks_per_prompt
    formula(
        "dp_busiest_chunk_within",
        "busiest_within",
        (x**data_parallel - none) / (1 - none),
        "share of the chunk steps (a chunk on at least one of D attention groups) whose busiest group's chunk is among "
        "a prompt's i_ch smallest: all j chunks of the step are, (i_ch / k)^j, over j ~ binomial(D, s_g) given j >= 1, "
        "s_g = k B / (D T_a) the share of a group's steps with a chunk of its own",
        CHAPTER,
    )
    formula(
        "dp_chunk_tokens_within",
        "step_tokens_within",
        data_parallel * s_g * x ** (data_parallel - 1) * tokens_within / chunks_per_prompt / (1 - none),
        "the prompt tokens of a chunk step's groups, counted in the chunk steps whose busiest chunk is among the i_ch "
        "smallest (E[j (i_ch / k)^(j - 1)] of them, each of mean T_<=i / i_ch), over the chunk steps: at i_ch = k, "
        "g_pre times the mean chunk",
        CHAPTER,
    )
    formula(
        "dp_weights_held",
        "weights_dp",
        weights + (data_parallel - 1) * (weights - expert_weights),
        "weights a replica holds with D attention groups: the experts once, everything else D times",
        CHAPTER,
    )


# --- multi-LoRA adapters --------------------------------------------------------------------------
intermediate = symbol(
    "intermediate", r"d_{ff}", "", "width of a dense MLP's hidden layer (intermediate_size)", integer=True
)
lora_rank = symbol("lora_rank", r"r_{lora}", "", "rank of a LoRA adapter's two low-rank matrices", integer=True)
lora_params = symbol("lora_params", r"P_{lora}", "", "parameters of one LoRA adapter")
heads, kv_heads, head_dim = symbols("heads", "kv_heads", "head_dim")


@section
def _adapters() -> None:
    formula(
        "lora_adapter_params",
        "lora_params",
        layers * lora_rank * (7 * hidden + 2 * heads * head_dim + 2 * kv_heads * head_dim + 3 * intermediate),
        "parameters of a LoRA adapter on every linear layer of a dense transformer (q, k, v, o, gate, up, down): "
        "each adapted d_in x d_out matrix adds r (d_in + d_out)",
        "14_interview_questions",
    )


defer(globals())  # the symbols above are made when SymPy is first needed
