"""Model.from_hf_config: a published config gives the catalog's model; every malformed config, and every layer
pattern the package cannot model, gets an InputError that names the field; nothing else is ever raised."""

from __future__ import annotations

import collections
import contextlib
import copy
import io
import json
import math
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llmcourse as lc
from llmcourse import Q_, models
from llmcourse.catalog import Model, params
from llmcourse.catalog.params import MAX_CONFIG_BYTES, count_params, read_config
from llmcourse.errors import InputError

ROOT = Path(__file__).resolve().parents[1]

# The catalog's models as their published config.json files give them (the fields the estimates read, and some they
# do not), typed from ../shared/reference/models.md and models-more.md.
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3", "num_hidden_layers": 61, "hidden_size": 7168, "num_attention_heads": 128,
    "num_key_value_heads": 128, "intermediate_size": 18432, "moe_intermediate_size": 2048, "vocab_size": 129280,
    "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
    "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
    "v_head_dim": 128, "max_position_embeddings": 163840, "tie_word_embeddings": False, "rope_theta": 10000,
    "num_nextn_predict_layers": 1, "torch_dtype": "bfloat16",
}  # fmt: skip
GPT_OSS_120B = {
    "model_type": "gpt_oss", "num_hidden_layers": 36, "hidden_size": 2880, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880, "vocab_size": 201088,
    "num_local_experts": 128, "num_experts_per_tok": 4, "experts_per_token": 4, "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 18, "attention_bias": True,
    "max_position_embeddings": 131072, "tie_word_embeddings": False, "swiglu_limit": 7.0,
}  # fmt: skip
GLM_5 = DEEPSEEK_V3 | {
    "model_type": "glm_moe_dsa", "num_hidden_layers": 78, "hidden_size": 6144, "num_attention_heads": 64,
    "num_key_value_heads": 64, "intermediate_size": 12288, "vocab_size": 154880, "q_lora_rank": 2048,
    "qk_nope_head_dim": 192, "v_head_dim": 256, "max_position_embeddings": 202752,
}  # fmt: skip
CATALOG: dict[str, dict[str, Any]] = {
    "Llama-2-7B": {
        "model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000, "max_position_embeddings": 4096,
        "tie_word_embeddings": False, "attention_bias": False, "rms_norm_eps": 1e-05,
    },
    "Llama-3.1-8B": {
        "model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072,
        "tie_word_embeddings": False, "rope_scaling": {"factor": 8.0, "rope_type": "llama3"},
    },
    "Qwen2.5-72B": {
        "model_type": "qwen2", "num_hidden_layers": 80, "hidden_size": 8192, "num_attention_heads": 64,
        "num_key_value_heads": 8, "intermediate_size": 29568, "vocab_size": 152064, "max_position_embeddings": 32768,
        "use_sliding_window": False, "sliding_window": 131072, "max_window_layers": 70, "tie_word_embeddings": False,
    },
    "Mistral-7B-v0.1": {
        "model_type": "mistral", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 14336, "vocab_size": 32000,
        "max_position_embeddings": 32768, "sliding_window": 4096, "tie_word_embeddings": False,
    },
    "Mixtral-8x7B": {
        "model_type": "mixtral", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000, "num_local_experts": 8,
        "num_experts_per_tok": 2, "max_position_embeddings": 32768, "sliding_window": None,
        "tie_word_embeddings": False,
    },
    "Qwen3-30B-A3B": {
        "model_type": "qwen3_moe", "num_hidden_layers": 48, "hidden_size": 2048, "num_attention_heads": 32,
        "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768,
        "vocab_size": 151936, "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1,
        "mlp_only_layers": [], "max_position_embeddings": 40960, "use_sliding_window": False, "sliding_window": None,
        "max_window_layers": 48, "tie_word_embeddings": False, "attention_bias": False,
    },
    "Qwen3-32B": {
        "model_type": "qwen3", "num_hidden_layers": 64, "hidden_size": 5120, "num_attention_heads": 64,
        "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 25600, "vocab_size": 151936,
        "max_position_embeddings": 40960, "use_sliding_window": False, "sliding_window": None,
        "max_window_layers": 64, "tie_word_embeddings": False, "attention_bias": False,
    },
    "DeepSeek-V3": DEEPSEEK_V3,
    "gpt-oss-120b": GPT_OSS_120B,
    "gpt-oss-20b": GPT_OSS_120B | {
        "num_hidden_layers": 24, "num_local_experts": 32, "layer_types": ["sliding_attention", "full_attention"] * 12,
    },
    "Kimi-K2.5": {  # a multimodal wrapper: the text model's fields are in text_config
        "model_type": "kimi_k25", "architectures": ["KimiK25ForConditionalGeneration"],
        "text_config": DEEPSEEK_V3 | {
            "model_type": "kimi_k2", "num_attention_heads": 64, "num_key_value_heads": 64, "n_routed_experts": 384,
            "first_k_dense_replace": 1, "vocab_size": 163840, "max_position_embeddings": 262144,
        },
        "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27, "intermediate_size": 4304},
    },
    "MiniMax-M2.5": {
        "model_type": "minimax_m2", "num_hidden_layers": 62, "hidden_size": 3072, "num_attention_heads": 48,
        "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 1536, "num_local_experts": 256,
        "num_experts_per_tok": 8, "shared_intermediate_size": 0, "vocab_size": 200064,
        "max_position_embeddings": 196608, "tie_word_embeddings": False, "rotary_dim": 64,
    },
}  # fmt: skip
GEMMA_3_27B = {
    "model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"], "mm_tokens_per_image": 256,
    "text_config": {
        "model_type": "gemma3_text", "num_hidden_layers": 62, "hidden_size": 5376, "num_attention_heads": 32,
        "num_key_value_heads": 16, "head_dim": 128, "intermediate_size": 21504, "vocab_size": 262208,
        "sliding_window": 1024, "sliding_window_pattern": 6, "max_position_embeddings": 131072,
        "query_pre_attn_scalar": 168, "tie_word_embeddings": True,
    },
    "vision_config": {"hidden_size": 1152, "num_hidden_layers": 27},
}  # fmt: skip
QWEN35_397B = {
    "model_type": "qwen3_5_moe", "tie_word_embeddings": False,
    "text_config": {
        "model_type": "qwen3_5_moe_text", "num_hidden_layers": 60, "hidden_size": 4096, "num_attention_heads": 32,
        "num_key_value_heads": 2, "head_dim": 256, "moe_intermediate_size": 1024,
        "shared_expert_intermediate_size": 1024, "num_experts": 512, "num_experts_per_tok": 10,
        "vocab_size": 248320, "max_position_embeddings": 262144, "full_attention_interval": 4,
        "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 15, "linear_num_key_heads": 16,
        "linear_num_value_heads": 64, "linear_conv_kernel_dim": 4, "mlp_only_layers": [],
        "tie_word_embeddings": False, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
        "attn_output_gate": True, "mamba_ssm_dtype": "float32",
    },
}  # fmt: skip
QWEN3_NEXT = {  # the same hybrid, as the configs that give only full_attention_interval spell it
    "model_type": "qwen3_next", "num_hidden_layers": 48, "hidden_size": 2048, "num_attention_heads": 16,
    "num_key_value_heads": 2, "head_dim": 256, "intermediate_size": 5120, "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512, "num_experts": 512, "num_experts_per_tok": 10, "vocab_size": 151936,
    "full_attention_interval": 4, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128, "decoder_sparse_step": 1,
}  # fmt: skip
JAMBA = {
    "model_type": "jamba", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
    "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 65536, "num_experts": 16,
    "num_experts_per_tok": 2, "attn_layer_period": 8, "attn_layer_offset": 4, "expert_layer_period": 2,
    "expert_layer_offset": 1, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "sliding_window": None,
}  # fmt: skip
LLAMA_4_SCOUT = {
    "model_type": "llama4",
    "text_config": {
        "model_type": "llama4_text", "num_hidden_layers": 48, "hidden_size": 5120, "num_attention_heads": 40,
        "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
        "num_local_experts": 16, "num_experts_per_tok": 1, "vocab_size": 202048, "attention_chunk_size": 8192,
        "interleave_moe_layer_step": 1, "no_rope_layers": [], "max_position_embeddings": 10485760,
        "tie_word_embeddings": False,
    },
}  # fmt: skip
DEEPSEEK_V32 = DEEPSEEK_V3 | {
    "model_type": "deepseek_v32",
    "index_n_heads": 64,
    "index_head_dim": 128,
    "index_topk": 2048,
}
GLM_5_WITH_INDEXER = GLM_5 | {"index_n_heads": 32, "index_head_dim": 128, "index_topk": 2048}
LLAMA = CATALOG["Llama-3.1-8B"]

SHAPE = (
    "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "moe_intermediate", "vocab", "experts",
    "experts_per_token", "kv_lora_rank", "qk_rope_head_dim", "max_position", "sliding_window", "sliding_window_layers",
)  # fmt: skip


def _refused(config: Any, *fields: str) -> str:
    """The InputError's message, asserted to name every field in ``fields``."""
    with pytest.raises(InputError) as info:
        Model.from_hf_config(config)
    message = str(info.value)
    for f in fields:
        assert f in message, (f, message)
    return message


# --- published configs ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [*CATALOG, "GLM-5"])
def test_published_config_gives_the_catalog_model(name):
    """Each catalog model's config.json gives the catalog's shape, field for field, and its parameter count to 0.5%
    (GLM-5 without its sparse-attention indexer, as the catalog row says)."""
    m = Model.from_hf_config(CATALOG.get(name, GLM_5))
    row = models[name]
    assert {f: getattr(m, f) for f in SHAPE} == {f: getattr(row, f) for f in SHAPE}
    assert (m.shared_experts or 0, m.dense_layers or 0) == (row.shared_experts or 0, row.dense_layers or 0)
    assert m.params == pytest.approx(row.params, rel=0.005)
    assert m.is_moe == row.is_moe and m.attention == row.attention


def test_the_same_config_from_a_file(tmp_path):
    """A config.json on disk reads as its dict does."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CATALOG["Kimi-K2.5"]))
    assert Model.from_hf_config(path) == Model.from_hf_config(CATALOG["Kimi-K2.5"])
    assert Model.from_hf_config(str(path), name="k").name == "k"


def test_gemma3_window_pattern_is_read():
    """Gemma 3's sliding_window_pattern 6 (five local layers, then a global one): 52 of 62 layers keep only 1,024
    tokens, the 10 global ones the whole context, 27.01 B parameters (text model)."""
    m = Model.from_hf_config(GEMMA_3_27B)
    assert (m.sliding_window, m.sliding_window_layers, m.layers) == (1024, 52, 62)
    assert m.params == pytest.approx(27.01e9, rel=0.001)
    per_layer_token = 2 * 16 * 128 * 2  # K and V, 16 KV heads of 128, 2 bytes
    ctx = 131_072
    assert lc.kv_bytes_per_sequence(m, ctx) == Q_((10 * ctx + 52 * 1024) * per_layer_token, "B")
    listed = copy.deepcopy(GEMMA_3_27B)  # newer configs list the layers; layer_types then decide
    listed["text_config"]["layer_types"] = (["sliding_attention"] * 5 + ["full_attention"]) * 10 + [
        "sliding_attention"
    ] * 2
    assert Model.from_hf_config(listed).sliding_window_layers == 52
    no_pattern = copy.deepcopy(GEMMA_3_27B)  # Transformers' default pattern for gemma3 is 6 as well
    del no_pattern["text_config"]["sliding_window_pattern"]
    assert Model.from_hf_config(no_pattern).sliding_window_layers == 52


def test_gemma2_alternates_and_qwen2_windows_the_top_layers():
    """Gemma 2 alternates sliding and global layers (21 of 42 windowed); Qwen2 with use_sliding_window windows the
    layers from max_window_layers on (8 of 28); Mistral's window is every layer's."""
    gemma2 = {"model_type": "gemma2", "num_hidden_layers": 42, "hidden_size": 3584, "num_attention_heads": 16,
              "num_key_value_heads": 8, "head_dim": 256, "intermediate_size": 14336, "vocab_size": 256000,
              "sliding_window": 4096}  # fmt: skip
    assert Model.from_hf_config(gemma2).sliding_window_layers == 21
    qwen2 = CATALOG["Qwen2.5-72B"] | {"num_hidden_layers": 28, "use_sliding_window": True, "max_window_layers": 20}
    m = Model.from_hf_config(qwen2)
    assert (m.sliding_window, m.sliding_window_layers) == (131072, 8)
    assert Model.from_hf_config(qwen2 | {"max_window_layers": 28}).sliding_window is None
    assert Model.from_hf_config(CATALOG["Mistral-7B-v0.1"]).sliding_window_layers == 32


def test_qwen_moe_shared_expert_and_dense_layers_are_counted():
    """Qwen2-MoE's shared expert has its own size (4 routed experts' worth here): it is counted in both totals;
    mlp_only_layers and decoder_sparse_step make dense layers."""
    cfg = {"model_type": "qwen2_moe", "num_hidden_layers": 24, "hidden_size": 2048, "num_attention_heads": 16,
           "num_key_value_heads": 16, "intermediate_size": 5632, "moe_intermediate_size": 1408,
           "shared_expert_intermediate_size": 5632, "num_experts": 60, "num_experts_per_tok": 4,
           "vocab_size": 151936, "tie_word_embeddings": False, "decoder_sparse_step": 1, "mlp_only_layers": []}  # fmt: skip
    m = Model.from_hf_config(cfg)
    assert m.shared_experts == 4
    assert m.params == pytest.approx(14.3e9, rel=0.005)  # Qwen1.5-MoE-A2.7B: 14.3 B in all, 2.7 B activated
    assert m.active_params == pytest.approx(2.7e9, rel=0.01)
    without = count_params(cfg | {"shared_expert_intermediate_size": 0})
    assert m.params - without[0] == 24 * (3 * 2048 * 5632 + 2048)  # the shared expert and its gate, each layer
    dense = Model.from_hf_config(cfg | {"mlp_only_layers": [0, 1], "decoder_sparse_step": 2})
    assert dense.dense_layers == 24 - 11  # MoE where (i + 1) is even and i is not 0 or 1: layers 3, 5, ..., 23


# --- layer patterns the package cannot model -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("config", "fields", "words"),
    [
        (JAMBA, ["attn_layer_period"], "Mamba"),
        ({k: v for k, v in JAMBA.items() if not k.startswith("attn_")}, ["mamba_d_state"], "Mamba"),
        ({k: v for k, v in JAMBA.items() if not k.startswith(("attn_", "mamba_"))}, ["model_type", "jamba"], ""),
        (LLAMA | {"layer_types": ["mamba"] * 24 + ["full_attention"] * 8}, ["layer_types"],
         "24 of 32 layers are 'mamba'"),
        (LLAMA | {"hybrid_override_pattern": "M-M-M*-" * 4}, ["hybrid_override_pattern"], "Mamba"),
        ({"model_type": "mamba", "num_hidden_layers": 64, "hidden_size": 2560, "vocab_size": 50280}, ["model_type"],
         "state-space"),
        ({k: v for k, v in QWEN3_NEXT.items() if k != "full_attention_interval"}, ["model_type", "qwen3_next"], ""),
    ],
)  # fmt: skip
def test_unsupported_layer_pattern_is_refused(config, fields, words):
    """A hybrid or otherwise unmodelled layer pattern is refused naming its field, never read as all full attention."""
    message = _refused(config, *fields)
    assert words in message
    assert "cannot model yet" in message and "use a model whose every layer" in message


@pytest.mark.parametrize(
    ("config", "fields"),
    [
        (QWEN3_NEXT | {"linear_conv_kernel_dim": None}, ["linear_conv_kernel_dim", "Gated DeltaNet"]),
        ({**QWEN35_397B, "text_config": {k: v for k, v in QWEN35_397B["text_config"].items()
                                         if k != "linear_key_head_dim"}}, ["linear_key_head_dim", "45"]),
        (GLM_5 | {"index_topk": 2048}, ["index_topk", "index_n_heads", "index_head_dim"]),
        (LLAMA | {"index_topk": 2048, "index_n_heads": 8, "index_head_dim": 64}, ["index_topk", "kv_lora_rank"]),
        (LLAMA | {"layer_types": ["chunked_attention"] * 24 + ["full_attention"] * 8},
         ["chunked_attention", "attention_chunk_size"]),
        (LLAMA | {"attention_chunk_size": 8192, "no_rope_layers": [1, 0]}, ["no_rope_layers"]),
        (LLAMA | {"attn_type_list": [0, 2] * 16}, ["attn_type_list"]),
        (QWEN3_NEXT | {"mamba_ssm_dtype": "int8"}, ["mamba_ssm_dtype"]),
        (LLAMA | {"sliding_window": 4096, "attention_chunk_size": 8192, "model_type": "llama4_text"},
         ["sliding_window", "attention_chunk_size", "num_hidden_layers"]),
    ],
)  # fmt: skip
def test_incomplete_layer_pattern_names_the_field(config, fields):
    """A layer type the package models, given without the fields its cache needs, is refused naming them."""
    _refused(config, *fields)


def test_sparse_and_hybrid_configs_read_their_layer_types():
    """GLM-5's indexer, Qwen3.5's Gated DeltaNet layers and Llama 4's chunks are read, with the published counts:
    GLM-5 744 B (the catalog's 743.9 B), Qwen3.5 396.3 B / 17.35 B active, Llama 4 Scout 107.8 B / 17.2 B (text),
    Qwen3-Next-80B-A3B 80 B (reference/models-more.md and the model cards)."""
    glm = Model.from_hf_config(GLM_5_WITH_INDEXER)
    assert (glm.index_topk, glm.index_heads, glm.index_head_dim, glm.qk_nope_head_dim) == (2048, 32, 128, 192)
    assert glm.params == pytest.approx(models["GLM-5"].params, rel=0.001)
    qwen = Model.from_hf_config(QWEN35_397B)
    assert qwen.layer_types == {"full": 15, "sliding": 0, "chunked": 0, "linear": 45, "sparse": 0}
    assert (qwen.linear_value_heads, qwen.linear_conv, qwen.linear_state_bytes) == (64, 3, 4.0)
    assert qwen.params == pytest.approx(396.3e9, rel=0.001) and qwen.active_params == pytest.approx(17.35e9, rel=0.001)
    scout = Model.from_hf_config(LLAMA_4_SCOUT)
    assert (scout.attention_chunk, scout.chunked_layers) == (8192, 36)  # every 4th layer (NoPE) is global
    assert scout.params == pytest.approx(107.8e9, rel=0.001) and scout.active_params == pytest.approx(17.2e9, rel=0.002)
    nxt = Model.from_hf_config(QWEN3_NEXT)
    assert nxt.linear_layers == 36 and nxt.params == pytest.approx(80e9, rel=0.01)


def test_all_full_attention_patterns_are_read():
    """A layer list, an interval of 1 or a MiniMax type list that names only full attention is an ordinary model."""
    assert Model.from_hf_config(LLAMA | {"layer_types": ["full_attention"] * 32}).sliding_window is None
    assert Model.from_hf_config(LLAMA | {"full_attention_interval": 1}).layers == 32
    assert Model.from_hf_config(LLAMA | {"attn_type_list": [1] * 32}).layers == 32


# --- malformed configs -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"hidden_size": "4096"}, "hidden_size", 'write "hidden_size": 4096 (no quotes)'),
        ({"num_hidden_layers": "32"}, "num_hidden_layers", "not text"),
        ({"num_key_value_heads": "eight"}, "num_key_value_heads", "not text"),
        ({"vocab_size": True}, "vocab_size", "not true"),
        ({"intermediate_size": False}, "intermediate_size", "not false"),
        ({"num_attention_heads": 0}, "num_attention_heads", "at least 1; got 0"),
        ({"num_attention_heads": -32}, "num_attention_heads", "at least 1"),
        ({"num_hidden_layers": 0}, "num_hidden_layers", "at least 1"),
        ({"hidden_size": -4096}, "hidden_size", "at least 1"),
        ({"num_key_value_heads": 0}, "num_key_value_heads", "at least 1"),
        ({"head_dim": 0}, "head_dim", "at least 1"),
        ({"hidden_size": 4096.5}, "hidden_size", "whole number"),
        ({"hidden_size": [4096]}, "hidden_size", "whole number"),
        ({"hidden_size": {"value": 4096}}, "hidden_size", "whole number"),
        ({"hidden_size": math.nan}, "hidden_size", "finite"),
        ({"vocab_size": math.inf}, "vocab_size", "finite"),
        ({"num_hidden_layers": 10**30}, "num_hidden_layers", "at most 10,000"),
        ({"hidden_size": 10**5000}, "hidden_size", "at most 1,000,000"),
        ({"hidden_size": 1e300}, "hidden_size", "at most 1,000,000"),
        ({"num_local_experts": 10**7, "num_experts_per_tok": 2}, "num_local_experts", "at most 1,000,000"),
        ({"max_position_embeddings": 10**11}, "max_position_embeddings", "at most 10,000,000,000"),
        ({"num_attention_heads": 30}, "hidden_size", "num_attention_heads (30)"),
        ({"num_key_value_heads": 5}, "num_key_value_heads", "multiple of num_key_value_heads (5)"),
        ({"num_key_value_heads": 64}, "num_key_value_heads", "cannot exceed num_attention_heads"),
        ({"num_local_experts": 8}, "num_experts_per_tok", "needs both"),
        ({"num_experts_per_tok": 2}, "num_local_experts", "needs both"),
        ({"num_local_experts": 8, "num_experts_per_tok": 8}, "num_experts_per_tok", "fewer than the experts"),
        ({"num_local_experts": 8, "num_experts": 16, "num_experts_per_tok": 2}, "num_experts (16)", "disagree"),
        ({"use_sliding_window": "false", "sliding_window": 4096}, "use_sliding_window", 'not the text "false"'),
        ({"use_sliding_window": "true", "sliding_window": 4096}, "use_sliding_window", "JSON boolean"),
        ({"tie_word_embeddings": "false"}, "tie_word_embeddings", "JSON boolean"),
        ({"attention_bias": 1}, "attention_bias", "true or false"),
        ({"sliding_window": True}, "sliding_window", "not true"),
        ({"sliding_window": "4096"}, "sliding_window", "not text"),
        ({"model_type": 7}, "model_type", "must be text"),
        ({"layer_types": "full_attention"}, "layer_types", "must be a list"),
        ({"layer_types": ["full_attention"] * 31}, "layer_types", "lists 31 layers but num_hidden_layers is 32"),
        ({"layer_types": ["sliding_attention"] * 32}, "sliding_window", "no sliding_window"),
        ({"sliding_window_pattern": 0, "sliding_window": 512}, "sliding_window_pattern", "at least 1"),
        ({"num_local_experts": 8, "num_experts_per_tok": 2, "first_k_dense_replace": 40}, "first_k_dense_replace",
         "cannot exceed num_hidden_layers"),
        ({"num_experts": 8, "num_experts_per_tok": 2, "mlp_only_layers": [40]}, "mlp_only_layers", "from 0 to 31"),
        ({"kv_lora_rank": 512, "qk_rope_head_dim": 64}, "kv_lora_rank", "qk_nope_head_dim, v_head_dim are not"),
    ],
)  # fmt: skip
def test_malformed_field_is_refused_by_name(changes, field, words):
    """Each malformed field gets an InputError that names it and says what is wrong; nothing is clamped or guessed."""
    message = _refused(LLAMA | changes, field)
    assert words in message, message
    assert message.startswith("config.json: ")


def test_missing_fields_are_named():
    """Missing required fields, and MLA fields missing beside kv_lora_rank, are named."""
    _refused({"hidden_size": 4096}, "num_hidden_layers", "num_attention_heads")
    _refused({k: v for k, v in LLAMA.items() if k != "hidden_size"}, "lacks hidden_size")
    _refused(LLAMA | {"num_attention_heads": None}, "lacks num_attention_heads")
    no_rope = {k: v for k, v in DEEPSEEK_V3.items() if k != "qk_rope_head_dim"}
    assert "qk_rope_head_dim is not" in _refused(no_rope, "kv_lora_rank", "qk_rope_head_dim")
    assert Model.from_hf_config(DEEPSEEK_V3 | {"q_lora_rank": None}).attention == "MLA"  # optional (V2-Lite)


def test_text_config_must_be_a_mapping_that_agrees():
    """A list or text for text_config, or a field whose value differs between the top level and text_config."""
    _refused({"model_type": "gemma3", "text_config": [LLAMA]}, "text_config", "JSON object")
    _refused({"model_type": "gemma3", "text_config": "llama"}, "text_config")
    _refused(LLAMA | {"text_config": LLAMA | {"hidden_size": 2048}}, "hidden_size", "text_config", "2048", "4096")
    _refused(LLAMA | {"text_config": LLAMA | {"tie_word_embeddings": 0}}, "tie_word_embeddings")
    assert Model.from_hf_config(LLAMA | {"text_config": LLAMA}) == Model.from_hf_config(LLAMA)
    assert Model.from_hf_config(LLAMA | {"text_config": None}) == Model.from_hf_config(LLAMA)


def test_arguments_and_labels_are_checked():
    """A config that is not a mapping, a name that is not text, and a label field that is not text are refused."""
    with pytest.raises(InputError, match=r"path to config\.json or the parsed dict"):
        Model.from_hf_config([LLAMA])  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"path to config\.json or the parsed dict"):
        Model.from_hf_config(None)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="name must be text"):
        Model.from_hf_config(LLAMA, name=8)  # type: ignore[arg-type]
    _refused(LLAMA | {"_name_or_path": ["x"]}, "_name_or_path")
    with pytest.raises(InputError, match="params must be greater than zero"):
        Model.from_hf_config(LLAMA, params=0)


def test_count_params_reads_through_the_same_gate():
    """count_params refuses what from_hf_config refuses (no TypeError or ZeroDivisionError from the arithmetic)."""
    for bad, field in ((LLAMA | {"num_attention_heads": 0}, "num_attention_heads"), (JAMBA, "attn_layer_period")):
        with pytest.raises(InputError, match=field):
            count_params(bad)
    assert read_config(read_config(GEMMA_3_27B)) == read_config(GEMMA_3_27B)  # reading twice changes nothing


# --- files -----------------------------------------------------------------------------------------------------
def test_bad_files_are_refused(tmp_path):
    """A path that does not exist, a folder, a file that is not JSON, not UTF-8, not an object, too large, or nested
    past reading: each an InputError that says which."""
    cases: list[tuple[Any, str]] = [(tmp_path / "missing.json", "no config file"), (tmp_path, "is a folder")]
    for name, content, words in [
        ("bad.json", b"{nope", "not valid JSON"),
        ("empty.json", b"", "not valid JSON"),
        ("latin1.json", b'{"model_type": "caf\xe9"}', "not UTF-8"),
        ("list.json", b"[1, 2]", "must hold a JSON object"),
        ("deep.json", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        ("digits.json", b'{"hidden_size": ' + b"9" * 5000 + b"}", "cannot be read as a config.json"),
        ("nan.json", json.dumps(LLAMA | {"hidden_size": math.nan}).encode(), "hidden_size must be a finite"),
    ]:
        (tmp_path / name).write_bytes(content)
        cases.append((tmp_path / name, words))
    big = tmp_path / "model.safetensors"
    with big.open("wb") as f:
        f.truncate(MAX_CONFIG_BYTES + 1)  # sparse: no time or disk spent
    cases.append((big, f"over {MAX_CONFIG_BYTES:,} bytes"))
    cases.append(("{" + json.dumps(LLAMA)[1:], "give json.loads(text)"))  # the JSON text passed as a path
    cases.append((str(tmp_path / "x\0.json"), "cannot be read"))
    for path, words in cases:
        with pytest.raises(InputError) as info:
            Model.from_hf_config(path)
        assert words in str(info.value), (path, str(info.value))
    ok = tmp_path / "ok.json"
    ok.write_bytes(json.dumps(LLAMA).encode() + b" " * (MAX_CONFIG_BYTES - len(json.dumps(LLAMA))))
    assert Model.from_hf_config(ok).layers == 32  # exactly at the bound is read


# --- the README's example ---------------------------------------------------------------------------------------
def test_readme_example_runs(tmp_path, monkeypatch):
    """The README's from_hf_config example runs as written and prints what its comments say."""
    text = (ROOT / "README.md").read_text()
    blocks = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "from_hf_config" in b]
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    scope: dict[str, Any] = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "README.md", "exec"), scope)
    promised = [line.split("# ", 1)[1] for line in blocks[0].splitlines() if "print(" in line]
    assert out.getvalue().splitlines() == promised
    assert scope["m"].params == pytest.approx(models["Llama-3.1-8B"].params, rel=0.001)


# --- fuzz ------------------------------------------------------------------------------------------------------
MODELLED = [*CATALOG.values(), GLM_5, GEMMA_3_27B]
BASES = [*MODELLED, QWEN35_397B, QWEN3_NEXT, JAMBA, LLAMA_4_SCOUT, DEEPSEEK_V32]
FIELDS = sorted(
    {k for c in BASES for k in (*c, *c.get("text_config", {}))}
    | {"sliding_window_pattern", "max_window_layers", "use_sliding_window", "shared_expert_intermediate_size",
       "mlp_only_layers", "decoder_sparse_step", "layer_types", "text_config", "_name_or_path", "attn_type_list"}
)  # fmt: skip
READ = sorted(
    {*params._WHOLE, "use_sliding_window", "tie_word_embeddings", "attention_bias", "layer_types", "model_type"}
)
CORE = [*params._REQUIRED, "num_key_value_heads", "head_dim", "num_local_experts", "num_experts_per_tok", "text_config"]
HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=300),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.sampled_from([0, 1, 2, 3, 7, 8, 64, 128, 4096, 2**31, 2**53 + 1, 10**12, 10**400]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["4096", "false", "true", "", "nan", "1e400", "full_attention", "linear_attention"]),
    st.text(max_size=8),
    st.lists(st.sampled_from(["full_attention", "sliding_attention", "linear_attention", 0, 1, None]), max_size=70),
    st.dictionaries(st.sampled_from(["hidden_size", "num_hidden_layers", "model_type"]), st.integers(-2, 9000)),
)


@st.composite
def mutated_config(draw: st.DrawFn) -> dict[str, Any]:
    """A published config with one to four fields set to a hostile value, removed, or scaled, at either level."""
    cfg = copy.deepcopy(draw(st.sampled_from(draw(st.sampled_from([MODELLED, MODELLED, MODELLED, BASES])))))
    for _ in range(draw(st.integers(1, 4))):
        target = cfg
        if isinstance(cfg.get("text_config"), dict) and draw(st.booleans()):
            target = cfg["text_config"]
        key = draw(st.sampled_from(draw(st.sampled_from([CORE, CORE, READ, FIELDS]))))  # mostly a field that is read
        action = draw(st.sampled_from(["set", "set", "delete", "scale"]))
        if action == "delete":
            target.pop(key, None)
        elif action == "scale" and type(target.get(key)) is int:
            target[key] = target[key] * draw(st.sampled_from([0, -1, 2, 3, 10**9])) + draw(st.integers(-1, 1))
        else:
            target[key] = draw(st.one_of(st.sampled_from([0, -1, 1, 2, 3, "8", True]), HOSTILE))
    return cfg


def _keys(cfg: Any) -> set[str]:
    text = cfg.get("text_config") if isinstance(cfg, dict) else None
    return {*cfg, *(text if isinstance(text, dict) else ())}


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_config())
def test_fuzz_mutated_configs_give_a_model_or_a_named_input_error(cfg):
    """Every mutation of a published config gives a Model or an InputError naming a field (one the config has, or
    one it lacks); never another exception. A Model's fields agree with the config's."""
    _answer(cfg)


def _answer(cfg: dict[str, Any]) -> str:
    """``"model"`` or ``"refused"``; an assertion error when the InputError names no field, or another exception."""
    try:
        m = Model.from_hf_config(cfg)
    except InputError as exc:
        message = str(exc)
        names = (_keys(cfg) | set(FIELDS)) - {
            "architectures",
            "torch_dtype",
        }  # a field of this config, or a missing one
        assert any(re.search(rf"\b{re.escape(k)}\b", message) for k in names if isinstance(k, str)), message
        return "refused"
    checked = read_config(cfg)
    assert (m.layers, m.hidden, m.heads) == tuple(
        checked[k] for k in ("num_hidden_layers", "hidden_size", "num_attention_heads")
    )
    assert m.params >= m.active_params > 0 and math.isfinite(m.params)
    return "model"


GRID = [None, True, False, 0, -1, 1, 2, 3, 7, 2**53 + 1, 10**400, 0.5, 1e300, math.nan, math.inf, "8", "false", "",
        [], [1], ["sliding_attention"], {}, {"hidden_size": 8}]  # fmt: skip


def test_every_single_field_mutation_gives_a_model_or_a_named_input_error():
    """Each field that is read, in each published config, set to each hostile value (or removed): a Model or an
    InputError naming a field, never another exception. The grid reaches both answers."""
    answers = collections.Counter()
    for base in BASES:
        for key in (*READ, "text_config", "mlp_only_layers", "sliding_window_pattern"):
            for value in (*GRID, "delete"):
                cfg = copy.deepcopy(base)
                target = cfg["text_config"] if "text_config" in cfg and key != "text_config" else cfg
                if value == "delete":
                    target.pop(key, None)
                else:
                    target[key] = value
                answers[_answer(cfg)] += 1
    assert sum(answers.values()) > 10_000 and answers["model"] > 2_000 and answers["refused"] > 5_000, answers


_DIR = tempfile.mkdtemp(prefix="llmcourse-hf-fuzz-")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from(BASES),
    cut=st.integers(0, 4000),
    insert=st.binary(max_size=6),
    replace=st.sampled_from([b"", b"\x00", b"[", b"{", b'"', b"NaN", b"1e999", b"-", b"\xff", b"true", b",,"]),
)
def test_fuzz_mutated_files_give_a_model_or_an_input_error(base, cut, insert, replace):
    """A config.json whose bytes are cut, spliced or corrupted gives a Model or an InputError, never another
    exception."""
    data = json.dumps(base).encode()
    at = cut % (len(data) + 1)
    path = Path(_DIR) / "config.json"
    path.write_bytes(data[:at] + insert + replace + data[at + len(replace) :])
    try:
        Model.from_hf_config(path)
    except InputError as exc:
        assert str(exc)
