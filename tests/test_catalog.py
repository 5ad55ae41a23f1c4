"""Catalogs: every reference model and GPU, look-up by name, custom entries, config.json."""

import json
import math

import pytest

import llmcourse as lc
from llmcourse import GPU, Q_, Model
from llmcourse.errors import InputError, UnknownNameError

REFERENCE_MODELS = [
    "Llama-2-7B", "Llama-2-13B", "Llama-2-70B", "Llama-3.1-8B", "Llama-3.1-70B", "Llama-3.1-405B", "Qwen2.5-7B",
    "Qwen2.5-72B", "Mistral-7B-v0.1", "Mixtral-8x7B", "Qwen3-30B-A3B", "Qwen3-235B-A22B", "DeepSeek-V3",
    "gpt-oss-120b", "gpt-oss-20b",
]  # fmt: skip
REFERENCE_GPUS = [
    "H100 SXM", "H100 PCIe", "H200 SXM", "B200", "A100 SXM 80GB", "A100 SXM 40GB", "L4", "L40S", "MI300X",
    "MI325X", "A10G", "T4", "RTX 4090",
]  # fmt: skip


def test_all_reference_models_and_gpus_are_in_the_catalog():
    """The 15 models and 13 accelerators of shared/reference are loaded."""
    assert set(REFERENCE_MODELS) <= set(lc.models)
    assert set(REFERENCE_GPUS) <= set(lc.gpus)


def test_every_row_cites_a_source():
    """No catalog row without a source."""
    assert all(m.source for m in lc.models.values())
    assert all(g.source and g.price_source for g in lc.gpus.values())


@pytest.mark.parametrize(
    ("name", "layers", "heads", "kv_heads", "head_dim"),
    [
        ("Qwen2.5-72B", 80, 64, 8, 128),
        ("Qwen2.5-7B", 28, 28, 4, 128),
        ("Llama-2-7B", 32, 32, 32, 128),
        ("Llama-3.1-8B", 32, 32, 8, 128),
        ("Qwen3-30B-A3B", 48, 32, 4, 128),
        ("gpt-oss-120b", 36, 64, 8, 64),
    ],
)
def test_model_shapes_match_the_configs(name, layers, heads, kv_heads, head_dim):
    """Shapes as published in config.json (reference/models.md)."""
    m = lc.models[name]
    assert (m.layers, m.heads, m.kv_heads, m.head_dim) == (layers, heads, kv_heads, head_dim)


def test_moe_and_mla_fields():
    """MoE models carry experts and active parameters; DeepSeek-V3 carries MLA fields."""
    q = lc.models["Qwen3-30B-A3B"]
    assert (q.experts, q.experts_per_token, q.active_params) == (128, 8, 3.35e9)
    d = lc.models["DeepSeek-V3"]
    assert d.attention == "MLA" and (d.kv_lora_rank, d.qk_rope_head_dim) == (512, 64)
    assert lc.models["Llama-2-7B"].attention == "MHA" and lc.models["Qwen2.5-72B"].attention == "GQA"


def test_gpu_figures_carry_units():
    """H100 SXM datasheet figures, as quantities."""
    h = lc.gpus["H100 SXM"]
    assert h.memory == Q_(80, "GB") and h.bandwidth == Q_(3.35, "TB/s") and h.flops == Q_(989, "TFLOP/s")
    assert h.price_per_hour == Q_(2.5, "USD/hour")


def test_lookup_forgives_case_spaces_and_aliases():
    """Names match loosely, and aliases resolve."""
    assert lc.models["qwen2.5 72b"].name == "Qwen2.5-72B"
    assert lc.gpus["h200"].name == "H200 SXM"
    assert lc.models["Llama-3.3-70B"].name == "Llama-3.1-70B"


def test_unknown_name_suggests_close_ones():
    """A typo gets a 'did you mean'."""
    with pytest.raises(UnknownNameError, match=r"Did you mean 'Qwen2\.5-7B', 'Qwen2\.5-72B'"):
        lc.models["Qwen2.5-70B"]


def test_custom_model_defaults_head_dim_and_kv_heads():
    """head_dim = hidden/heads and kv_heads = heads when not given."""
    m = Model("toy", params=1e9, layers=4, hidden=1024, heads=8)
    assert (m.head_dim, m.kv_heads, m.attention) == (128, 8, "MHA")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"params": -1}, "params must be greater than zero"),
        ({"params": math.nan}, "finite"),
        ({"layers": 0}, "layers must be greater than zero"),
        ({"kv_heads": 3}, "multiple of kv_heads"),
        ({"kv_heads": 16}, "cannot exceed heads"),
        ({"layers": 2.5}, "whole number"),
        ({"experts": 8}, "both experts and experts_per_token"),
    ],
)
def test_custom_model_rejects_bad_input(kwargs, message):
    """Bad shapes are refused with a message that says what is wrong."""
    base = dict(name="bad", params=1e9, layers=4, hidden=1024, heads=8)
    with pytest.raises(InputError, match=message):
        Model(**(base | kwargs))


def test_custom_gpu_needs_units():
    """A GPU's memory must carry a unit; a negative bandwidth is refused."""
    with pytest.raises(InputError, match="needs a unit"):
        GPU("g", memory=80, bandwidth=Q_(1, "TB/s"), flops=Q_(1, "TFLOP/s"))
    with pytest.raises(InputError, match="greater than zero"):
        GPU("g", memory=Q_(80, "GB"), bandwidth=Q_(-1, "TB/s"), flops=Q_(1, "TFLOP/s"))
    with pytest.raises(InputError, match=r"\[information\]"):
        GPU("g", memory=Q_(80, "s"), bandwidth=Q_(1, "TB/s"), flops=Q_(1, "TFLOP/s"))


# Published config.json excerpts (the fields the estimates read), typed from the model cards.
LLAMA_31_8B = {
    "model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
    "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "tie_word_embeddings": False,
    "max_position_embeddings": 131072,
}  # fmt: skip
QWEN25_72B = {
    "model_type": "qwen2", "num_hidden_layers": 80, "hidden_size": 8192, "num_attention_heads": 64,
    "num_key_value_heads": 8, "intermediate_size": 29568, "vocab_size": 152064, "tie_word_embeddings": False,
}  # fmt: skip
MIXTRAL = {
    "model_type": "mixtral", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
    "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000, "num_local_experts": 8,
    "num_experts_per_tok": 2, "tie_word_embeddings": False,
}  # fmt: skip
QWEN3_30B = {
    "model_type": "qwen3_moe", "num_hidden_layers": 48, "hidden_size": 2048, "num_attention_heads": 32,
    "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768,
    "vocab_size": 151936, "num_experts": 128, "num_experts_per_tok": 8, "tie_word_embeddings": False,
}  # fmt: skip
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3", "num_hidden_layers": 61, "hidden_size": 7168, "num_attention_heads": 128,
    "num_key_value_heads": 128, "intermediate_size": 18432, "moe_intermediate_size": 2048, "vocab_size": 129280,
    "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
    "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "tie_word_embeddings": False,
}  # fmt: skip
MISTRAL = {
    "model_type": "mistral", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 14336, "vocab_size": 32000,
    "sliding_window": 4096,
}  # fmt: skip


@pytest.mark.parametrize(
    ("cfg", "total", "active", "active_rel"),
    [
        (LLAMA_31_8B, 8.030e9, None, 0),
        (QWEN25_72B, 72.7e9, None, 0),
        (MIXTRAL, 46.70e9, 12.88e9, 0.005),
        (QWEN3_30B, 30.53e9, 3.35e9, 0.005),
        # "37B activated" is given to two figures; the count here (37.55B) includes the embedding rows.
        (DEEPSEEK_V3, 671e9, 37e9, 0.02),
    ],
)
def test_from_hf_config_counts_the_published_parameters(cfg, total, active, active_rel):
    """Parameter counts computed from config shapes match the published totals (to 0.5%)."""
    m = Model.from_hf_config(cfg)
    assert m.params == pytest.approx(total, rel=0.005)
    if active:
        assert m.active_params == pytest.approx(active, rel=active_rel)


def test_from_hf_config_reads_gqa_and_head_dim(tmp_path):
    """A config file on disk: kv heads and head_dim come from the config, MoE and MLA fields too."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN3_30B))
    m = Model.from_hf_config(path, name="q3")
    assert (m.kv_heads, m.head_dim, m.experts, m.experts_per_token) == (4, 128, 128, 8)
    assert m.head_dim != m.hidden // m.heads  # head_dim is read, not derived
    d = Model.from_hf_config(DEEPSEEK_V3)
    assert d.attention == "MLA" and lc.kv_bytes_per_token(d) == Q_(70_272, "B")


def test_from_hf_config_without_kv_heads_is_mha():
    """No num_key_value_heads means one KV head per query head (Llama 2)."""
    cfg = {k: v for k, v in LLAMA_31_8B.items() if k != "num_key_value_heads"}
    assert Model.from_hf_config(cfg).attention == "MHA"


def test_from_hf_config_sliding_window():
    """Mistral's sliding window caps the KV of long sequences."""
    m = Model.from_hf_config(MISTRAL)
    assert m.sliding_window == 4096
    assert lc.kv_bytes_per_sequence(m, 8192) == lc.kv_bytes_per_sequence(m, 4096)


def test_from_hf_config_errors_are_clear(tmp_path):
    """A missing file, bad JSON or a non-transformer config each get a clear message."""
    with pytest.raises(InputError, match="no config file"):
        Model.from_hf_config(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(InputError, match="not valid JSON"):
        Model.from_hf_config(bad)
    with pytest.raises(InputError, match="lacks num_hidden_layers"):
        Model.from_hf_config({"hidden_size": 1})
