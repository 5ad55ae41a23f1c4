"""The serving formulas: one replica and its fleet, chapter by chapter.

Tokens and traffic (01), weights (02), the KV cache (03, 04), the decode step (05), prefill (06), mixtures of
experts (07), the roofline and the crossover batch (05, 08), fleets, cost and sizing (09), the single-server
queue (10) and the engine's cycle (12): the symbols every other topic module takes by name (``batch``,
``step_time``, ...; defined here first, as :mod:`llmcourse.formulas` imports this module first) and the
sections that define their formulas. The framework (:func:`formula`, :func:`symbol`, :func:`section`) is
:mod:`llmcourse.formulas.core`'s.

Examples
--------
>>> from llmcourse.formulas import FORMULAS
>>> from llmcourse.units import Q_
>>> FORMULAS["throughput"](batch=64, step_time=Q_(20, "ms"))
<Quantity(3200.0, '1 / second')>
"""

from __future__ import annotations

from llmcourse.formulas.core import (
    Max,
    Min,
    built,
    ceiling,
    defer,
    deferred_getattr,
    derived,
    floor,
    formula,
    section,
    sp,
    symbol,
)

__all__: list[str] = []
__getattr__ = deferred_getattr(globals())  # the symbols and the names the sections below define, made on first use

# --- traffic --------------------------------------------------------------------------
daily_rate = symbol("daily_rate", r"\lambda_{day}", "1/s", "average request rate over a day")
peak_factor = symbol("peak_factor", r"f_{peak}", "", "peak-hour rate over the daily average")
request_rate = symbol("request_rate", r"\lambda", "1/s", "request arrival rate")
_TOKEN = " (a token)"  # token counts given to an estimate: less than one token is no sequence at all
tokens_per_request = symbol(
    "tokens_per_request", r"T", "", "tokens per request (prompt or answer)", at_least=1, bound_note=_TOKEN
)
characters = symbol("characters", r"C", "", "characters of text")
chars_per_token = symbol("chars_per_token", r"c_{tok}", "", "characters per token (about 4 in English)")
token_rate = symbol("token_rate", r"\lambda_{tok}", "1/s", "tokens per second")
# --- model shape ------------------------------------------------------------------------
params = symbol("params", "P", "", "parameters (total)")
active_params = symbol("active_params", r"P_{act}", "", "parameters used per token")
expert_params = symbol("expert_params", r"P_{exp}", "", "parameters in routed experts", allow_zero=True)
layers = symbol("layers", "L", "", "transformer layers", integer=True)
heads = symbol("heads", "H", "", "query heads", integer=True)
kv_heads = symbol("kv_heads", r"H_{kv}", "", "key/value heads", integer=True)
head_dim = symbol("head_dim", r"d_{head}", "", "dimension of one head", integer=True)
kv_lora_rank = symbol("kv_lora_rank", r"r_{kv}", "", "MLA latent width (kv_lora_rank)", integer=True)
rope_dim = symbol("rope_dim", r"d_{rope}", "", "MLA rotary key width (qk_rope_head_dim)", integer=True)
experts = symbol("experts", "E", "", "routed experts per layer", integer=True)
experts_per_token = symbol("experts_per_token", "k", "", "experts each token picks", integer=True)
# --- precision and memory ---------------------------------------------------------------
weight_bytes_per_param = symbol("weight_bytes_per_param", r"b_{w}", "B", "bytes per weight")
kv_bytes = symbol("kv_bytes", r"b_{kv}", "B", "bytes per cached value")
weights = symbol("weights", "W", "B", "weight bytes")
kv_per_token = symbol("kv_per_token", r"\kappa", "B", "KV cache bytes per token")
context = symbol("context", r"T_{ctx}", "", "tokens in a sequence's context", at_least=1, bound_note=_TOKEN)
kv_per_sequence = symbol("kv_per_sequence", r"K_{seq}", "B", "KV cache bytes per sequence")
#: The most GPUs one copy of a model may be split over: the largest domain in the link catalog (an InfiniBand
#: fabric of 1,024 GPUs, llmcourse/data/links.csv); a larger tensor-parallel degree is no deployment.
n_gpus = symbol(
    "n_gpus",
    "N",
    "",
    "GPUs holding one copy of the model",
    integer=True,
    at_most=1024,
    bound_note=" GPUs (the largest domain in the link catalog: a 1,024-GPU InfiniBand fabric)",
)
gpu_memory = symbol("gpu_memory", r"M_{gpu}", "B", "memory of one GPU")
usable_fraction = symbol("usable_fraction", "u", "", "fraction of memory the server may use", at_most=1)
usable_memory = symbol("usable_memory", "M", "B", "usable memory of the replica")
memory_reserve = symbol(
    "memory_reserve",
    r"M_{res}",
    "B",
    "memory an engine keeps on each GPU beside its weights and KV cache (llama.cpp's compute buffers and margin)",
    allow_zero=True,
)
batch = symbol("batch", "B", "", "sequences decoded together", integer=True)
ubatch_tokens = symbol("ubatch_tokens", r"u_b", "", "tokens of one ubatch llama.cpp computes at once", integer=True)
vocab_size = symbol("vocab_size", "V", "", "tokens in the model's vocabulary", integer=True)
logit_bytes = symbol("logit_bytes", r"b_{logit}", "B", "bytes of one logit as the engine computes it (F32: 4)")
# --- speed --------------------------------------------------------------------------------
bandwidth = symbol("bandwidth", r"\beta", "B/s", "memory bandwidth of one GPU")
peak_flops = symbol("peak_flops", r"F", "FLOP/s", "peak dense FLOP/s of one GPU")
bandwidth_efficiency = symbol(
    "bandwidth_efficiency", r"\eta_{\beta}", "", "fraction of peak bandwidth reached", at_most=1
)
compute_efficiency = symbol("compute_efficiency", r"\eta_{F}", "", "fraction of peak FLOP/s reached", at_most=1)
bytes_read = symbol("bytes_read", r"W_{read}", "B", "weight bytes read per decode step")
flops_per_token = symbol("flops_per_token", r"F_{tok}", "FLOP", "FLOPs per sequence per decode step")
flops_per_param = symbol("flops_per_param", r"c_{F}", "FLOP", "FLOPs per parameter per token (2: multiply and add)")
step_time = symbol("step_time", r"t_{step}", "s", "time of one decode step")
prompt_tokens = symbol("prompt_tokens", r"T_{p}", "", "prompt tokens", at_least=1, bound_note=_TOKEN)
answer_tokens = symbol("answer_tokens", r"T_{a}", "", "answer (output) tokens", at_least=1, bound_note=_TOKEN)
prompts = symbol("prompts", r"B_{p}", "", "prompts prefilled together", integer=True)
prefill_flops = symbol("prefill_flops", r"F_{pre}", "FLOP", "FLOPs to prefill one prompt")
prefill_time = symbol("prefill_time", r"t_{pre}", "s", "time to prefill")
# Targets of their own where a formula's result is not its input's quantity (no "t_step = t_step + t_over"):
stream_time = symbol("stream_time", r"t_{stream}", "s", "time to stream tokens at a given rate")
read_time = symbol("read_time", r"t_{read}", "s", "time of one read of the weights")
# --- fleets and money ---------------------------------------------------------------------
throughput = symbol("throughput", "X", "1/s", "output tokens per second")
demand = symbol("demand", "D", "1/s", "output tokens per second demanded")
headroom = symbol("headroom", "h", "", "capacity multiplier kept for bursts and prefill")
headroom_fraction = symbol(
    "headroom_fraction", r"h_{f}", "", "fraction of throughput kept back as headroom", allow_zero=True
)
usable_throughput = symbol(
    "usable_throughput", r"X_{use}", "1/s", "output tokens per second a replica is counted at, after headroom"
)
replicas = symbol("replicas", "R", "", "replicas", integer=True)
price = symbol("price", "p", "USD/s", "price of one GPU per unit time (given per hour)")
hours = symbol("hours", r"t_{bill}", "s", "time billed")
utilisation = symbol("utilisation", "U", "", "average utilisation of the fleet")
time_in_system = symbol("time_in_system", r"t_{sys}", "s", "time a request spends in the system")
in_flight = symbol("in_flight", r"N_{flight}", "", "requests in flight")
rps_per_gpu = symbol("rps_per_gpu", r"r_{gpu}", "1/s", "requests per second one GPU completes")
gpus = symbol("gpus", "G", "", "GPUs in the fleet", integer=True)
cost = symbol("cost", r"C_{USD}", "USD", "cost in dollars")
fraction_touched = symbol("fraction_touched", r"\phi", "", "fraction of experts a step touches")
compute_rate = symbol("compute_rate", r"\Phi", "FLOP/s", "FLOP/s demanded")


# --- Tokens ---------------------------------------------------------------------------------


@section
def _tokens() -> None:
    formula("peak_request_rate", "request_rate", daily_rate * peak_factor, "peak request rate", "01_tokens")
    formula(
        "token_rate", "token_rate", request_rate * tokens_per_request, "tokens per second from requests", "01_tokens"
    )
    formula(
        "tokens_from_characters", "tokens_per_request", characters / chars_per_token, "tokens in a text", "01_tokens"
    )
    formula(
        "generation_time",
        "stream_time",
        tokens_per_request / token_rate,
        "time to stream T tokens at a rate",
        "01_tokens",
    )


# --- Weights ----------------------------------------------------------------------------------


@section
def _weights() -> None:
    formula("weight_bytes", "weights", params * weight_bytes_per_param, "bytes of weights", "02_weights")
    formula(
        "usable_memory",
        "usable_memory",
        n_gpus * gpu_memory * usable_fraction,
        "memory the server may use",
        "02_weights",
    )
    formula(
        "reserved_usable_memory",
        "usable_memory",
        n_gpus * (gpu_memory - memory_reserve),
        "memory the server may use when its engine keeps a fixed allowance on each GPU (llama.cpp)",
        "17_own_machine",
    )
    formula(
        "llama_cpp_logits_buffer",
        "memory_reserve",
        ubatch_tokens * vocab_size * logit_bytes,
        "the logits of one ubatch, the largest of llama.cpp's compute buffers: a logit for every token of the "
        "vocabulary for every token of the ubatch",
        "17_own_machine",
    )
    formula(
        "gpus_for_weights",
        "n_gpus",
        ceiling(weights / (gpu_memory * usable_fraction)),
        "fewest GPUs whose usable memory holds the weights",
        "02_weights",
    )


# --- KV cache -----------------------------------------------------------------------------------
kv_copies = symbol("kv_copies", r"c_{kv}", "", "copies of each KV head a tensor-parallel replica keeps")
block_tokens = symbol("block_tokens", r"b_{blk}", "", "tokens per block of a paged KV cache", integer=True)
# Admission on the KV blocks in use (vLLM's KVCacheManager, SGLang's token pool): conversations started at different
# times each hold their prompt and the part of their answer written so far, a uniform share of it.
kv_mean = symbol(
    "kv_mean", r"K_{mean}", "B", "KV bytes a conversation holds on average: its prompt and half its answer"
)
kv_growth = symbol("kv_growth", r"K_{ans}", "B", "KV bytes a conversation's answer adds", allow_zero=True)
admission_spreads = symbol(
    "admission_spreads", r"z_{adm}", "", "spreads of the KV in use above its mean a batch is sized to hold",
    allow_zero=True,
)  # fmt: skip
kv_in_use = symbol("kv_in_use", r"K_{use}", "B", "KV bytes a batch of staggered conversations holds")


@section
def _kv_cache() -> None:
    formula(
        "kv_bytes_per_token",
        "kv_per_token",
        2 * layers * kv_heads * head_dim * kv_bytes,
        "KV bytes per token (MHA, GQA, MQA)",
        "03_kv_cache",
    )
    formula(
        "kv_bytes_per_token_mla",
        "kv_per_token",
        layers * (kv_lora_rank + rope_dim) * kv_bytes,
        "KV bytes per token with multi-head latent attention",
        "04_gqa",
    )
    formula(
        "kv_bytes_per_sequence", "kv_per_sequence", kv_per_token * context, "KV bytes of one sequence", "03_kv_cache"
    )
    formula(
        "kv_replication",
        "kv_copies",
        Max(1, n_gpus / kv_heads),
        "copies of the KV cache a replica holds: each of N GPUs keeps at least one KV head",
        "03_kv_cache",
    )
    formula(
        "paged_context",
        "context",
        ceiling((prompt_tokens + answer_tokens / 2) / block_tokens) * block_tokens,
        "tokens a paged cache holds for a conversation on average: prompt plus half the answer, in whole blocks",
        "03_kv_cache",
    )
    formula(
        "max_batch",
        "batch",
        floor((usable_memory - weights) / kv_per_sequence),
        "sequences whose KV fits beside the weights",
        "03_kv_cache",
    )
    formula(
        "kv_in_use",
        "kv_in_use",
        Min(batch * kv_per_sequence, batch * kv_mean + admission_spreads * kv_growth * sp.sqrt(batch / 12)),
        "KV a batch of staggered conversations holds: each its prompt and a uniform share of its answer (mean half, "
        "variance 1/12 of the answer's squared), the batch's mean plus z spreads, never more than all at their "
        "final length",
        "03_kv_cache",
    )


# --- KV cache by layer type ---------------------------------------------------------------------
# A model's layers need not all be full attention: each layer type keeps (and a decode step reads) its own count
# of tokens, as engines keep each type in its own pool (vLLM's hybrid KV-cache manager, vllm/v1/kv_cache_interface.py:
# FullAttentionSpec, SlidingWindowSpec, ChunkedLocalAttentionSpec, MambaSpec; SGLang's SWA and hybrid linear pools).
_ZERO_OK = dict(allow_zero=True)
kv_full_per_token = symbol(
    "kv_full_per_token", r"\kappa_{full}", "B", "KV bytes per token of the layers that keep every token", **_ZERO_OK
)
kv_window_per_token = symbol(
    "kv_window_per_token", r"\kappa_{win}", "B", "KV bytes per token of the sliding-window layers", **_ZERO_OK
)
kv_chunk_per_token = symbol(
    "kv_chunk_per_token", r"\kappa_{chunk}", "B", "KV bytes per token of the chunked-attention layers", **_ZERO_OK
)
kv_selected_per_token = symbol(
    "kv_selected_per_token",
    r"\kappa_{sel}",
    "B",
    "KV bytes per token of the sparse layers' selected tokens",
    **_ZERO_OK,
)
linear_state = symbol(
    "linear_state", r"S_{lin}", "B", "bytes of the linear-attention layers' state of one sequence", **_ZERO_OK
)
window = symbol("window", "w", "", "tokens a sliding-window layer keeps", integer=True)
chunk = symbol("chunk", "c", "", "tokens of a chunked-attention layer's chunk", integer=True)
top_k_tokens = symbol("top_k_tokens", r"k_{top}", "", "past tokens a sparse-attention query attends to", integer=True)
layers_full = symbol("layers_full", r"L_{full}", "", "layers attending to every past token", integer=True, **_ZERO_OK)
layers_window = symbol("layers_window", r"L_{win}", "", "sliding-window layers", integer=True, **_ZERO_OK)
layers_chunk = symbol("layers_chunk", r"L_{chunk}", "", "chunked-attention layers", integer=True, **_ZERO_OK)
layers_sparse = symbol("layers_sparse", r"L_{sp}", "", "sparse-attention layers", integer=True, **_ZERO_OK)
layers_linear = symbol("layers_linear", r"L_{lin}", "", "linear-attention layers", integer=True, **_ZERO_OK)
qk_dim = symbol("qk_dim", r"d_{qk}", "", "width of one head's query-key dot product", integer=True)
v_dim = symbol("v_dim", r"d_{v}", "", "width of one head's values", integer=True)
index_heads = symbol("index_heads", r"H_{idx}", "", "heads of a sparse-attention indexer", integer=True, **_ZERO_OK)
index_dim = symbol("index_dim", r"d_{idx}", "", "head width of a sparse-attention indexer", integer=True)
linear_key_heads = symbol("linear_key_heads", r"H_{lk}", "", "key heads of a linear-attention layer", integer=True)
linear_value_heads = symbol(
    "linear_value_heads", r"H_{lv}", "", "value heads of a linear-attention layer", integer=True
)
linear_key_dim = symbol("linear_key_dim", r"d_{lk}", "", "key head width of a linear-attention layer", integer=True)
linear_value_dim = symbol(
    "linear_value_dim", r"d_{lv}", "", "value head width of a linear-attention layer", integer=True
)
conv_tokens = symbol(
    "conv_tokens", r"c_{conv}", "", "past tokens a linear-attention layer's convolution keeps", integer=True, **_ZERO_OK
)
state_bytes = symbol("state_bytes", r"b_{state}", "B", "bytes per value of a linear-attention layer's state")


@section
def _kv_by_layer_type() -> None:
    m_w, m_c, m_k = Min(context, window), Min(context, chunk), Min(context, top_k_tokens)
    formula(
        "kv_bytes_by_layer_type",
        "kv_per_sequence",
        kv_full_per_token * context
        + kv_window_per_token * m_w
        + kv_chunk_per_token * m_c
        + kv_selected_per_token * m_k
        + linear_state,
        "KV bytes of one sequence by layer type: full layers keep every token, sliding-window layers the last w, "
        "chunked layers at most a chunk, sparse layers' selected tokens at most k, linear layers a fixed state",
        "03_kv_cache",
    )
    formula(
        "linear_state_bytes",
        "linear_state",
        layers_linear
        * (
            conv_tokens * (2 * linear_key_heads * linear_key_dim + linear_value_heads * linear_value_dim) * kv_bytes
            + linear_value_heads * linear_key_dim * linear_value_dim * state_bytes
        ),
        "state of one sequence in the linear-attention layers: the convolution's last tokens of q, k and v, and "
        "one key-by-value matrix per value head",
        "03_kv_cache",
    )
    formula(
        "kv_bytes_per_token_widths",
        "kv_per_token",
        layers * kv_heads * (qk_dim + v_dim) * kv_bytes,
        "KV bytes per token when keys and values differ in width (MLA's keys and values expanded per head)",
        "04_gqa",
    )
    _attended = layers_full * context + layers_window * m_w + layers_chunk * m_c + layers_sparse * m_k
    formula(
        "decode_attention_flops_by_layer_type",
        "flops_per_token",
        flops_per_param * heads * (qk_dim + v_dim) * _attended
        + flops_per_param * index_heads * index_dim * layers_sparse * context
        + 3 * flops_per_param * layers_linear * linear_value_heads * linear_key_dim * linear_value_dim,
        "attention FLOPs per generated token by layer type: QK and AV over the tokens each layer attends to, the "
        "indexer's scores over every past token, and three products with each linear layer's state",
        "05_decode",
    )
    t = prompt_tokens
    p_w, p_c, p_k = Min(t, window), Min(t, chunk), Min(t, top_k_tokens)
    _pairs = (
        layers_full * t**2 / 2
        + layers_window * (p_w * t - p_w**2 / 2)
        + layers_chunk * p_c * t / 2
        + layers_sparse * (p_k * t - p_k**2 / 2)
    )
    formula(
        "prefill_attention_flops",
        "prefill_flops",
        flops_per_param * heads * (qk_dim + v_dim) * _pairs
        + flops_per_param * index_heads * index_dim * layers_sparse * t**2 / 2
        + 3 * flops_per_param * layers_linear * linear_value_heads * linear_key_dim * linear_value_dim * t,
        "attention FLOPs of a causal prefill by layer type: QK and AV over the pairs of tokens each layer attends "
        "to, the indexer's scores over all earlier tokens, and three products with each linear layer's state",
        "06_prefill",
    )


# --- Decode ---------------------------------------------------------------------------------------
# The same step as the kernels an engine runs, each the slower of its own bytes and FLOPs, added:
# the weight matmuls (weights read, matmul FLOPs) then attention (KV read, attention FLOPs).
attention_flops_per_token = symbol(
    "attention_flops_per_token",
    r"F_{attn}",
    "FLOP",
    "attention FLOPs per sequence per decode step (0 if not counted)",
    allow_zero=True,
)
step_overhead = symbol(
    "step_overhead", r"t_{over}", "s", "fixed time per decode step (launches, scheduling)", allow_zero=True
)
time_per_token = symbol("time_per_token", r"\tau_{tok}", "s", "time between two of a user's output tokens")
allreduce_latency = symbol(
    "allreduce_latency", r"t_{ar}", "s", "time of one tensor-parallel all-reduce", allow_zero=True
)
step_total = symbol("step_total", r"t_{step,tot}", "s", "time of one decode step with its fixed overhead")
comm_time = symbol(
    "comm_time", r"t_{comm}", "s", "time a decode step spends in its GPUs' collectives (all-reduces, all-to-alls)"
)
# A step of an engine that mixes prompt chunks into its decode steps (vLLM, TensorRT-LLM, llama.cpp): the decode
# tokens and a chunk of prompt tokens in one forward pass, the weights read once.
decode_tokens = symbol(
    "decode_tokens",
    r"n_{dec}",
    "",
    "requests a mixed step decodes (0: a step of a prompt chunk alone)",
    allow_zero=True,
)
chunk_tokens = symbol(
    "chunk_tokens", r"c_{ch}", "", "prompt tokens a step carries besides its decode tokens", allow_zero=True
)
chunk_attention_flops = symbol(
    "chunk_attention_flops", r"F_{ch}", "FLOP", "attention FLOPs per prompt token of a chunk (QK and AV over its prefix)",
    allow_zero=True,
)  # fmt: skip
chunk_kv_read = symbol(
    "chunk_kv_read",
    r"K_{ch}",
    "B",
    "KV bytes a step's prompt chunk reads (its prompt's earlier tokens)",
    allow_zero=True,
)
token_budget = symbol(
    "token_budget", r"C_{tok}", "", "tokens one engine step may carry: prompt chunks and decode tokens", integer=True
)
chunks_per_prompt = symbol(
    "chunks_per_prompt", r"k_{ch}", "", "steps a prompt's chunks take (its new tokens over the room a step leaves)",
    integer=True,
)  # fmt: skip
prompt_step_share = symbol(
    "prompt_step_share",
    r"\phi_{ch}",
    "",
    "share of an engine's steps that carry a prompt chunk",
    at_most=1,
    allow_zero=True,
)
chunk_step_time = symbol("chunk_step_time", r"t_{ch}", "s", "mean time of the steps that carry a prompt's chunks")
mean_step_time = symbol(
    "mean_step_time", r"\bar{t}_{step}", "s", "mean time of an engine's steps, with a prompt chunk or without"
)


@section
def _decode() -> None:
    global _t_mem, _t_comp, _eff_bw, _eff_f
    _t_mem = (bytes_read + batch * kv_per_sequence) / (n_gpus * bandwidth * bandwidth_efficiency)
    _t_comp = batch * flops_per_token / (n_gpus * peak_flops * compute_efficiency)
    formula(
        "decode_flops_per_token",
        "flops_per_token",
        flops_per_param * active_params,
        "matmul FLOPs per generated token",
        "05_decode",
    )
    formula(
        "decode_attention_flops",
        "flops_per_token",
        2 * flops_per_param * layers * heads * head_dim * context,
        "attention FLOPs per generated token at a context (QK and AV)",
        "05_decode",
    )
    formula("decode_memory_time", "step_time", _t_mem, "decode step time if memory were the only limit", "05_decode")
    formula("decode_compute_time", "step_time", _t_comp, "decode step time if compute were the only limit", "05_decode")
    formula(
        "decode_step_time", "step_time", Max(_t_mem, _t_comp), "decode step time: the slower of the two", "05_decode"
    )
    _eff_bw = n_gpus * bandwidth * bandwidth_efficiency
    _eff_f = n_gpus * peak_flops * compute_efficiency
    formula(
        "decode_step_time_per_op",
        "step_time",
        Max(bytes_read / _eff_bw, batch * flops_per_token / _eff_f)
        + Max(batch * kv_per_sequence / _eff_bw, batch * attention_flops_per_token / _eff_f),
        "decode step time as two kernels: weight matmuls, then attention, each the slower of bytes and FLOPs",
        "05_decode",
    )
    formula(
        "interleaved_tpot",
        "time_per_token",
        step_time + prefill_time * (batch - 1) / (batch * answer_tokens),
        "time per output token when the prefills of the batch's other requests interrupt its decode steps",
        "05_decode",
    )
    formula(
        "step_with_overhead",
        "step_total",
        step_time + step_overhead,
        "a step's time plus its fixed overhead",
        "05_decode",
    )
    formula(
        "tp_allreduce_time",
        "comm_time",
        2 * layers * allreduce_latency,
        "all-reduce time per decode step of a tensor-parallel replica: two per layer (after attention and the MLP)",
        "05_decode",
    )
    formula("throughput", "throughput", batch / step_time, "tokens per second of a batch", "05_decode")
    formula(
        "mixed_step_time",
        "step_time",
        Max(bytes_read / _eff_bw, (decode_tokens + chunk_tokens) * flops_per_token / _eff_f)
        + Max((decode_tokens * kv_per_sequence + chunk_kv_read) / _eff_bw,
              (decode_tokens * attention_flops_per_token + chunk_tokens * chunk_attention_flops) / _eff_f),
        "a step of decode tokens and a prompt chunk as its kernels run: the weight matmuls of every token (the "
        "weights read once), then attention (every KV read, every token's attention FLOPs), each the slower of its "
        "bytes and FLOPs",
        "06_prefill",
    )  # fmt: skip


@section
def _engine_steps() -> None:
    formula(
        "decoding_batch",
        "batch",
        Min(batch, token_budget * answer_tokens / (prompt_tokens + answer_tokens)),
        "requests a mixed step decodes: all of them, unless the budget binds; then a step's tokens split between "
        "decode and prompt tokens as a request's answer and prompt do",
        "06_prefill",
    )
    formula(
        "prompt_step_share",
        "prompt_step_share",
        Min(1, chunks_per_prompt * batch / answer_tokens),
        "share of an engine's steps that carry a prompt chunk: over an answer's length each of a batch of requests "
        "finishes once and lets in a new prompt, whose chunks take a step each (a user's own steps see the other "
        "batch - 1 requests' prompts; the replica's steps all batch of them)",
        "06_prefill",
    )
    formula(
        "chunked_mean_step",
        "mean_step_time",
        prompt_step_share * chunk_step_time + (1 - prompt_step_share) * step_time,
        "mean step of an engine that fills its token budget with whole waiting prompts (or the chunks of one too long "
        "for it): the steps with a chunk, the rest decoding alone",
        "06_prefill",
    )
    formula(
        "steady_chunk_tokens",
        "chunk_tokens",
        batch * prompt_tokens / answer_tokens,
        "prompt tokens each step carries so that the batch stays full: a prompt for every answer finished",
        "06_prefill",
    )
    formula(
        "spread_token_budget",
        "token_budget",
        batch * (1 + prompt_tokens / answer_tokens),
        "per-step token budget that spreads every prompt evenly over the steps: the batch's decode tokens and the "
        "steady chunk beside them, so that no step carries more prompt than the batch needs",
        "06_prefill",
    )


# --- Prefill ---------------------------------------------------------------------------------------
request_overhead = symbol(
    "request_overhead",
    r"t_{req}",
    "s",
    "fixed time a request spends besides its prefill before its first token",
    allow_zero=True,
)
first_token_time = symbol("first_token_time", r"t_{first}", "s", "time to first token with no queue")


@section
def _prefill() -> None:
    global _pre_comp, _pre_mem
    formula(
        "prefill_flops_linear",
        "prefill_flops",
        flops_per_param * params * prompt_tokens,
        "prefill FLOPs by the 2-per-parameter rule",
        "06_prefill",
    )
    formula(
        "prefill_flops",
        "prefill_flops",
        flops_per_param * params * prompt_tokens + flops_per_param * layers * heads * head_dim * prompt_tokens**2,
        "prefill FLOPs with the causal attention term",
        "06_prefill",
    )
    formula(
        "first_token_time",
        "first_token_time",
        request_overhead + prefill_time,
        "time to first token with no queue: the request's fixed overhead, then its prefill",
        "06_prefill",
    )
    _pre_comp = prompts * prefill_flops / (n_gpus * peak_flops * compute_efficiency)
    _pre_mem = weights / (n_gpus * bandwidth * bandwidth_efficiency)
    formula(
        "prefill_compute_time", "prefill_time", _pre_comp, "prefill time if compute were the only limit", "06_prefill"
    )
    formula("weight_read_time", "read_time", _pre_mem, "time of one read of the weights", "05_decode")
    formula(
        "prefill_time",
        "prefill_time",
        Max(_pre_comp, _pre_mem),
        "prefill time: the slower of compute and one weight read",
        "06_prefill",
    )
    formula(
        "prefill_compute_rate",
        "compute_rate",
        token_rate * flops_per_param * params,
        "FLOP/s needed to prefill a stream of prompt tokens",
        "06_prefill",
    )
    formula(
        "gpus_for_compute",
        "gpus",
        ceiling(compute_rate / (peak_flops * compute_efficiency)),
        "GPUs for a compute load",
        "06_prefill",
    )


# --- Mixture of experts ---------------------------------------------------------------------------


@section
def _moe() -> None:
    global _phi
    _phi = built("moe_fraction_touched", lambda: 1 - (1 - experts_per_token / experts) ** batch)
    formula(
        "moe_fraction_touched",
        "fraction_touched",
        _phi,
        "expected fraction of experts a batch touches (uniform routing)",
        "07_moe",
    )
    formula(
        "moe_bytes_read",
        "bytes_read",
        weight_bytes_per_param * (params - expert_params) + weight_bytes_per_param * expert_params * _phi,
        "weight bytes a decode step reads for a MoE model",
        "07_moe",
    )


# --- Fleets and cost ------------------------------------------------------------------------------


@section
def _fleet() -> None:
    formula("littles_law", "in_flight", request_rate * time_in_system, "Little's law", "09_fleet")
    formula(
        "usable_throughput",
        "usable_throughput",
        throughput * (1 - headroom_fraction),
        "throughput left after headroom",
        "09_fleet",
    )
    formula("replicas_needed", "replicas", ceiling(demand / throughput), "replicas to meet a demand", "09_fleet")
    formula(
        "cost_per_token",
        "cost",
        n_gpus * price / throughput,
        "cost of one output token (price per hour over tokens per hour)",
        "09b_fleet_cost",
    )
    formula("fleet_cost", "cost", gpus * price * hours, "fleet cost for the hours billed", "09_fleet")
    formula(
        "rps_per_gpu",
        "rps_per_gpu",
        1 / (answer_tokens * step_time / batch + prefill_time),
        "requests per second one GPU completes",
        "09_fleet",
    )
    formula(
        "gpus_for_rate", "gpus", ceiling(request_rate * headroom / rps_per_gpu), "GPUs for a request rate", "09_fleet"
    )


# --- Roofline (05_decode, 08_batching) -----------------------------------------------------------
flops_done = symbol("flops_done", r"F_{op}", "FLOP", "FLOPs a step or kernel does")
bytes_moved = symbol("bytes_moved", r"Q_{mem}", "B", "bytes a step or kernel moves to or from memory")
intensity = symbol("intensity", "I", "FLOP/B", "arithmetic intensity: FLOPs per byte moved")
attainable_flops = symbol("attainable_flops", r"F_{att}", "FLOP/s", "FLOP/s attainable at an intensity (roofline)")


@section
def _roofline() -> None:
    global _b_real, _crossover_parts, _num, _den
    formula("arithmetic_intensity", "intensity", flops_done / bytes_moved, "FLOPs per byte moved", "05_decode")
    formula(
        "ridge_intensity",
        "intensity",
        peak_flops * compute_efficiency / (bandwidth * bandwidth_efficiency),
        "intensity where the memory roof meets the compute roof",
        "05_decode",
    )
    formula(
        "attainable_flops",
        "attainable_flops",
        Min(peak_flops * compute_efficiency, intensity * bandwidth * bandwidth_efficiency),
        "roofline: the lower of the compute roof and intensity x bandwidth",
        "05_decode",
    )
    # The crossover batch: solve decode memory time = compute time for the batch (SymPy ``solve``).
    _b_real = sp.Symbol("B_real", positive=True)

    def _crossover_parts() -> tuple[sp.Expr, sp.Expr]:
        crossover = sp.solve(sp.Eq(_t_mem.subs(batch, _b_real), _t_comp.subs(batch, _b_real)), _b_real)
        if len(crossover) != 1:  # pragma: no cover - guards a change of the decode formulas
            raise RuntimeError(f"expected one crossover batch, got {crossover}")
        num, den = sp.fraction(sp.together(crossover[0]))
        if num.could_extract_minus_sign():
            num, den = -num, sp.expand(-den)
        return num, den

    _num, _den = derived("crossover_batch", (_t_mem, _t_comp, batch, _b_real), _crossover_parts)
    formula(
        "crossover_batch",
        "batch",
        sp.Mul(_num, sp.Pow(_den, -1), evaluate=False),
        "batch at which decode compute time equals memory time (dense model)",
        "08_batching",
    )


# --- Validation (12_validation) ------------------------------------------------------------------
prefill_share = symbol("prefill_share", r"s_{pre}", "", "share of a batch's cycle spent in prefill")
kv_free_fraction = symbol(
    "kv_free_fraction", r"f_{free}", "", "share of the memory the weights leave that an engine gives the KV cache"
)


@section
def _validation() -> None:
    formula(
        "cycle_throughput",
        "throughput",
        batch * answer_tokens / (prefill_time + answer_tokens * step_time),
        "output tokens per second of a batch that prefills together, then decodes its answers",
        "12_validation",
    )
    formula(
        "prefill_share",
        "prefill_share",
        prefill_time / (prefill_time + answer_tokens * step_time),
        "share of a batch's cycle spent in prefill",
        "12_validation",
    )
    formula(
        "engine_usable_fraction",
        "usable_fraction",
        (weights + kv_free_fraction * (n_gpus * gpu_memory - weights)) / (n_gpus * gpu_memory),
        "usable share of memory when the KV cache gets a share of what the weights leave",
        "12_validation",
    )


# --- Sizing the fleet (09_fleet) -----------------------------------------------------------------
cost_full = symbol("cost_full", r"C_{full}", "USD", "cost of a unit of work at full utilisation")
tokens_served = symbol("tokens_served", r"N_{tok}", "", "output tokens served in the time billed")
api_price = symbol("api_price", r"p_{api}", "USD", "price of one output token bought from an API")
storage_rate = symbol("storage_rate", r"\beta_{load}", "B/s", "rate at which a new replica reads its weights in")
load_time = symbol("load_time", r"t_{load}", "s", "time to load a replica's weights")
# Build or buy with a fixed cost: the fleet size at which G GPUs (plus people) cost what an API charges
# for the tokens those G GPUs would serve, solved for G.
fixed_cost = symbol(
    "fixed_cost", r"C_{fix}", "USD", "fixed cost of running a fleet in the time billed (people, on-call)"
)
gpu_throughput = symbol("gpu_throughput", r"X_{gpu}", "1/s", "output tokens per second one GPU delivers at full load")


@section
def _sizing() -> None:
    global _g_real, _own_fleet, _api_bill, _break_even_root
    formula(
        "cost_at_utilisation",
        "cost",
        cost_full / utilisation,
        "cost of a unit of work when the fleet is busy a share U of the time it is billed",
        "09b_fleet_cost",
    )
    formula(
        "tokens_served",
        "tokens_served",
        demand * utilisation * hours,
        "output tokens served: peak demand x average utilisation x time",
        "09b_fleet_cost",
    )
    formula(
        "break_even_price",
        "api_price",
        cost / tokens_served,
        "API price per token at which self-hosting costs the same",
        "09b_fleet_cost",
    )
    formula(
        "weight_load_time",
        "load_time",
        weights / storage_rate,
        "time to read the weights into a new replica",
        "09_fleet",
    )
    _g_real = sp.Symbol("G_real", positive=True)
    _own_fleet, _api_bill = (
        _g_real * price * hours + fixed_cost,
        api_price * _g_real * gpu_throughput * utilisation * hours,
    )

    def _break_even_root() -> sp.Expr:
        roots = sp.solve(sp.Eq(_own_fleet, _api_bill), _g_real)
        if len(roots) != 1:  # pragma: no cover - guards a change of the expressions above
            raise RuntimeError(f"expected one break-even fleet size, got {roots}")
        return roots[0]

    formula(
        "break_even_gpus",
        "gpus",
        derived("break_even_gpus", (_own_fleet, _api_bill, _g_real), _break_even_root),
        "fleet size above which self-hosting (GPUs plus a fixed cost) is cheaper than an API",
        "09b_fleet_cost",
    )


# --- Queueing (10_queueing): the single-server queue M/M/1, Poisson arrivals, exponential service ------


@section
def _queueing() -> None:
    global _lam, _mu, _t
    # The chapter's scale of the wait (1 / (1 - rho)) and the closed-form exercises use these.
    _lam, _mu, _t = request_rate, rps_per_gpu, time_in_system
    formula(
        "mm1_utilisation",
        "utilisation",
        _lam / _mu,
        "utilisation of one server (arrival / service rate)",
        "10_queueing",
    )
    formula("mm1_time_in_system", "time_in_system", 1 / (_mu - _lam), "mean time in an M/M/1 system", "10_queueing")
    formula(
        "mm1_max_rate",
        "request_rate",
        _mu - 1 / _t,
        "highest arrival rate whose M/M/1 mean time in system is t_sys",
        "10_queueing",
    )


defer(globals())  # the symbols above are made when SymPy is first needed
