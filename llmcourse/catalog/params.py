"""Count a transformer's parameters from its Hugging Face config.

Covers the families in the catalog: Llama/Mistral/Qwen2 (GQA, optional QKV bias),
Mixtral/Qwen3-MoE/gpt-oss (routed experts), and DeepSeek-V3 (MLA, shared experts,
leading dense layers). Norm weights are counted; small biases of gpt-oss experts are not.

Defined in the chapter *Weights* (``book/02_weights.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["count_params"]


def _attention(cfg: Mapping[str, Any]) -> int:
    h = cfg["hidden_size"]
    heads = cfg["num_attention_heads"]
    if cfg.get("kv_lora_rank"):
        q_lora = cfg.get("q_lora_rank")
        nope, rope, v = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
        kv_lora = cfg["kv_lora_rank"]
        q = h * heads * (nope + rope) if not q_lora else h * q_lora + q_lora + q_lora * heads * (nope + rope)
        kv = h * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v)
        return q + kv + heads * v * h
    d = cfg.get("head_dim") or h // heads
    kv_heads = cfg.get("num_key_value_heads") or heads
    qkv_bias = cfg.get("attention_bias", cfg.get("model_type") == "qwen2")
    n = h * heads * d + 2 * h * kv_heads * d + heads * d * h
    if qkv_bias:
        n += heads * d + 2 * kv_heads * d + (h if cfg.get("model_type") == "gpt_oss" else 0)
    if cfg.get("model_type", "").startswith("qwen3"):
        n += 2 * d  # q_norm and k_norm
    return n


def count_params(cfg: Mapping[str, Any]) -> tuple[float, float]:
    """Total and active (per-token) parameter counts from a config dict.

    Examples
    --------
    >>> cfg = {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
    ...        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}
    >>> total, active = count_params(cfg)
    >>> round(total / 1e9, 3), total == active
    (8.03, True)
    """
    h = cfg["hidden_size"]
    layers = cfg["num_hidden_layers"]
    vocab = cfg.get("vocab_size") or 0
    experts = cfg.get("num_local_experts") or cfg.get("num_experts") or cfg.get("n_routed_experts")
    k = cfg.get("num_experts_per_tok") or cfg.get("experts_per_token") or 0
    dense_layers = (cfg.get("first_k_dense_replace") or 0) if experts else layers
    moe_layers = layers - dense_layers
    inter = cfg.get("intermediate_size") or 0
    moe_inter = cfg.get("moe_intermediate_size") or inter
    shared = cfg.get("n_shared_experts") or 0

    embed = vocab * h * (1 if cfg.get("tie_word_embeddings") else 2)
    per_layer_fixed = _attention(cfg) + 2 * h
    expert = 3 * h * moe_inter
    total = embed + h + layers * per_layer_fixed + dense_layers * 3 * h * inter
    active = total
    if experts:
        router = h * experts
        total += moe_layers * (experts * expert + shared * expert + router)
        active += moe_layers * (k * expert + shared * expert + router)
    return float(total), float(active)
