"""Attention by layer type: the KV cache each type of layer keeps and a decode step reads, and the FLOPs of its
attention (chapters *KV cache*, *Grouped-query attention*, *Decode*, *Prefill*).

A model's layers need not all be full attention (:attr:`llmcourse.catalog.Model.layer_types`):

* full attention keeps and reads every past token;
* a sliding-window layer (gpt-oss, Gemma 3, Mistral 7B) keeps and reads the last ``sliding_window`` tokens;
* a chunked-attention layer (Llama 4) attends within the current ``attention_chunk``: at most that many tokens;
* a linear-attention layer (Qwen3.5 / Qwen3-Next Gated DeltaNet, MiniMax lightning attention) keeps a fixed state
  per sequence, a key-by-value matrix per value head (and Gated DeltaNet's convolution keeps its last 3 inputs),
  read and updated at every step, whatever the context;
* a sparse-attention layer (DeepSeek-V3.2's DSA, GLM-5) keeps every token's MLA latent and, for its indexer, one
  small key per token; each query scores every past key with the indexer and attends to ``index_topk`` of them.

Engines keep each type in its own pool: vLLM's hybrid KV-cache manager gives each group of layers a ``KVCacheSpec``
(``vllm/v1/kv_cache_interface.py``: ``FullAttentionSpec``, ``SlidingWindowSpec`` and ``ChunkedLocalAttentionSpec``,
whose ``max_memory_usage_bytes`` reserve a window or a chunk plus the step's new tokens, and ``MambaSpec``, one
state per request), and ``vllm/v1/core/single_type_kv_cache_manager.py`` frees the blocks that fall out of a window
or a chunk; SGLang keeps sliding-window layers in a pool of their own (``SWAKVPool``,
``python/sglang/srt/mem_cache/swa_memory_pool.py``) and linear-attention states beside the full layers' cache
(``HybridLinearKVPool`` with a ``MambaPool``, ``python/sglang/srt/mem_cache/memory_pool.py``). The indexer's keys are stored in FP8 with one FP32 scale per 128
values, 132 bytes per 128-wide key (vLLM ``vllm/model_executor/models/deepseek_v2.py``, ``Indexer``: ``head_dim +
head_dim // quant_block_size * 4``; the same layout in DeepSeek-V3.2's reference inference code).

MLA's widths: prefill expands the latent into per-head keys of ``qk_nope_head_dim + qk_rope_head_dim`` (192 in
DeepSeek-V3) and values of ``v_head_dim`` (128); decode does not (vLLM's ``MLACommonImpl`` absorbs the up-projections
into the query and the output, FlashMLA runs on the latent): each head's scores are ``kv_lora_rank +
qk_rope_head_dim`` wide (576) and its values ``kv_lora_rank`` (512).

Each function takes plain floats (bytes, tokens, FLOPs) and returns one; the formulas are
``kv_bytes_by_layer_type``, ``linear_state_bytes``, ``decode_attention_flops_by_layer_type`` and
``prefill_attention_flops``. For a model whose layers are all full attention they give what
``kv_bytes_per_sequence``, ``decode_attention_flops`` and the attention term of ``prefill_flops`` give.

Examples
--------
>>> from llmcourse.catalog import models
>>> kv_held_si(models["gpt-oss-120b"], 8_192, 2.0)  # 18 full layers x 8,192 tokens + 18 windows of 128, x 2,048 B
306708480.0
"""

from __future__ import annotations

from llmcourse.catalog import Model
from llmcourse.formulas import FORMULAS as F

__all__ = [
    "INDEX_KEY_BYTES_PER_VALUE",
    "decode_attention_flops_si",
    "kv_held_si",
    "kv_read_si",
    "kv_token_si",
    "kv_window_pool_si",
    "linear_state_si",
    "prefill_attention_flops_si",
]

#: Bytes per value of a sparse-attention indexer's cached key: FP8, with an FP32 scale per 128 values (vLLM's
#: ``Indexer`` cache: 132 bytes per 128-wide key).
INDEX_KEY_BYTES_PER_VALUE = 1 + 4 / 128


def _per_layer_token(m: Model, kv_b: float) -> float:
    """KV bytes one token adds to one attention layer: keys and values of each KV head, or MLA's latent."""
    if m.attention == "MLA":
        return F["kv_bytes_per_token_mla"].value(
            layers=1, kv_lora_rank=m.kv_lora_rank, rope_dim=m.qk_rope_head_dim, kv_bytes=kv_b
        )
    return F["kv_bytes_per_token"].value(layers=1, kv_heads=m.kv_heads, head_dim=m.head_dim, kv_bytes=kv_b)


def _index_key(m: Model) -> float:
    """Bytes of one token's indexer keys over the sparse layers (0 without an indexer)."""
    n = m.layer_types["sparse"]
    return n * m.index_head_dim * INDEX_KEY_BYTES_PER_VALUE if n else 0.0


def kv_token_si(m: Model, kv_b: float) -> float:
    """KV bytes one new token adds at a short context (every layer that keeps tokens holds it; a linear layer
    keeps none): the attention layers' keys and values (or latents) and the indexer's keys.

    Examples
    --------
    >>> from llmcourse.catalog import models
    >>> kv_token_si(models["Qwen3.5-397B-A17B"], 2.0)  # 15 full layers x 2 x 2 KV heads x 256 x 2 B
    30720.0
    """
    t = m.layer_types
    return (t["full"] + t["sliding"] + t["chunked"] + t["sparse"]) * _per_layer_token(m, kv_b) + _index_key(m)


def linear_state_si(m: Model, kv_b: float) -> float:
    """Bytes of one sequence's state in the linear-attention layers (0 without them): the convolution's last
    inputs at the cache's precision and the recurrent state at ``linear_state_bytes`` per value (the cache's
    precision when not given)."""
    n = m.layer_types["linear"]
    if not n:
        return 0.0
    return F["linear_state_bytes"].value(
        layers_linear=n, conv_tokens=m.linear_conv, linear_key_heads=m.linear_key_heads,
        linear_key_dim=m.linear_key_dim, linear_value_heads=m.linear_value_heads, linear_value_dim=m.linear_value_dim,
        kv_bytes=kv_b, state_bytes=m.linear_state_bytes or kv_b,
    )  # fmt: skip


def _by_type(m: Model, context: float, kv_b: float, copies: float, read: bool, window: float | None = None) -> float:
    t, per = m.layer_types, _per_layer_token(m, kv_b) * copies
    sparse = t["sparse"] * per
    return F["kv_bytes_by_layer_type"].value(
        kv_full_per_token=t["full"] * per + _index_key(m) * copies + (0.0 if read else sparse),
        kv_window_per_token=t["sliding"] * per,
        kv_chunk_per_token=t["chunked"] * per,
        kv_selected_per_token=sparse if read else 0.0,
        linear_state=linear_state_si(m, kv_b),
        context=context,
        window=window or m.sliding_window or 1,
        chunk=m.attention_chunk or 1,
        top_k_tokens=m.index_topk or 1,
    )


def kv_held_si(m: Model, context: float, kv_b: float, copies: float = 1.0, window: float | None = None) -> float:
    """KV bytes one sequence of ``context`` tokens holds, summed over its layer types; ``copies`` of the attention
    layers' cache (a tensor-parallel group with fewer KV heads than GPUs keeps some heads on several), the linear
    layers' state split across the GPUs with their heads. A sliding-window layer holds at most ``window`` cells
    (None: the model's window; an engine that keeps more, as llama.cpp's
    :func:`~llmcourse.replica.memory.llama_cpp_window_cells`, gives its own).

    Examples
    --------
    >>> from llmcourse.catalog import models
    >>> kv_held_si(models["Llama-3.1-8B"], 1_000, 2.0)  # 131,072 B per token x 1,000
    131072000.0
    """
    return _by_type(m, context, kv_b, copies, read=False, window=window)


def kv_window_pool_si(m: Model, cells: float, kv_b: float, copies: float = 1.0) -> float:
    """KV bytes of a window cache of ``cells`` cells that sequences share (llama.cpp's unified cache): the window
    term of formula ``kv_bytes_by_layer_type`` at ``cells`` tokens over the sliding-window and chunked-attention
    layers (llama.cpp keeps both in that cache); 0 without such layers.

    Examples
    --------
    >>> from llmcourse.catalog import models
    >>> gemma = models["Gemma-3-27B"]  # 52 sliding layers x 16 KV heads x 128 x 2 (K, V) x 2 B = 425,984 B a cell
    >>> kv_window_pool_si(gemma, 1_000, 2.0)
    425984000.0
    >>> kv_window_pool_si(models["Llama-3.1-8B"], 1_000, 2.0)
    0.0
    """
    t = m.layer_types
    return F["kv_bytes_by_layer_type"].value(
        kv_full_per_token=0.0, kv_window_per_token=(t["sliding"] + t["chunked"]) * _per_layer_token(m, kv_b) * copies,
        kv_chunk_per_token=0.0, kv_selected_per_token=0.0, linear_state=0.0, context=cells, window=cells, chunk=1,
        top_k_tokens=1,
    )  # fmt: skip


def kv_read_si(m: Model, context: float, kv_b: float, copies: float = 1.0) -> float:
    """KV bytes a decode step reads for one sequence at ``context`` tokens: what it holds, except that a sparse
    layer reads its latents of only the ``index_topk`` tokens selected (and every token's indexer key).

    Examples
    --------
    >>> from llmcourse.catalog import models
    >>> glm = models["GLM-5"]
    >>> kv_read_si(glm, 32_768, 2.0) < kv_held_si(glm, 32_768, 2.0), kv_read_si(glm, 1_000, 2.0) == kv_held_si(glm, 1_000, 2.0)
    (True, True)
    """
    return _by_type(m, context, kv_b, copies, read=True)


def _widths(m: Model, prefill: bool) -> tuple[int, int]:
    """A head's query-key and value widths: MLA's expanded heads at prefill, its latent at decode."""
    if m.attention != "MLA":
        return m.head_dim, m.head_dim
    if prefill:
        return m.qk_head_dim, m.head_dim
    return m.kv_lora_rank + m.qk_rope_head_dim, m.kv_lora_rank


def _flops_inputs(m: Model, flops_per_param: float, prefill: bool) -> dict[str, float]:
    t = m.layer_types
    qk, v = _widths(m, prefill)
    linear = t["linear"] > 0
    return dict(
        flops_per_param=flops_per_param, heads=m.heads, qk_dim=qk, v_dim=v, layers_full=t["full"],
        layers_window=t["sliding"], layers_chunk=t["chunked"], layers_sparse=t["sparse"], layers_linear=t["linear"],
        window=m.sliding_window or 1, chunk=m.attention_chunk or 1, top_k_tokens=m.index_topk or 1,
        index_heads=m.index_heads or 0, index_dim=m.index_head_dim or 1,
        linear_value_heads=m.linear_value_heads if linear else 1, linear_key_dim=m.linear_key_dim if linear else 1,
        linear_value_dim=m.linear_value_dim if linear else 1,
    )  # fmt: skip


def decode_attention_flops_si(m: Model, context: float, flops_per_param: float) -> float:
    """Attention FLOPs of one generated token at ``context`` tokens, by layer type.

    Examples
    --------
    >>> from llmcourse.catalog import models
    >>> decode_attention_flops_si(models["Llama-3.1-8B"], 1_000, 2.0)  # 2 x 2 x 32 layers x 32 heads x 128 x 1,000
    524288000.0
    """
    return F["decode_attention_flops_by_layer_type"].value(
        context=context, **_flops_inputs(m, flops_per_param, prefill=False)
    )


def prefill_attention_flops_si(m: Model, tokens: float, flops_per_param: float) -> float:
    """Attention FLOPs of prefilling ``tokens`` prompt tokens from the start, by layer type (0 for none).

    Examples
    --------
    >>> from llmcourse.catalog import models
    >>> prefill_attention_flops_si(models["Llama-3.1-8B"], 1_000, 2.0)  # 2 x 32 layers x 32 heads x 128 x 1,000^2
    262144000000.0
    """
    if tokens == 0:
        return 0.0
    return F["prefill_attention_flops"].value(prompt_tokens=tokens, **_flops_inputs(m, flops_per_param, prefill=True))
