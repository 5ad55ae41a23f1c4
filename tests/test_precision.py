"""Precision per tensor group: the precisions with their scales, the names users type, a checkpoint's precision by
group (the catalog's, and one read from a config's ``quantization_config``), the weights at it by default, and the
precision the matmuls run at. Every expected byte count is worked out by hand here, from the config's shapes."""

from __future__ import annotations

import pytest

import llmcourse as lc
from llmcourse.catalog import Model
from llmcourse.catalog.precision import PRECISIONS, bytes_per_value, group_precisions, param_groups
from llmcourse.errors import InputError
from llmcourse.replica.deployment import Deployment
from llmcourse.units import Q_

# gpt-oss-120b's shape (config.json: 36 layers, hidden 2880, 128 experts of intermediate 2880, vocab 201,088)
H, LAYERS, EXPERTS, VOCAB = 2_880, 36, 128, 201_088
GO_EXPERTS = LAYERS * EXPERTS * 3 * H * H  # gate, up and down of each expert: 114,661,785,600
GO_EMBED = VOCAB * H  # 579,133,440, the embeddings; the untied output head as many again
MXFP4 = (4 + 8 / 32) / 8  # 4 bits + an 8-bit E8M0 scale per 32 values: 4.25 bits = 0.53125 bytes
NVFP4 = (4 + 8 / 16) / 8  # 4 bits + an FP8 scale per 16 values: 4.5 bits = 0.5625 bytes
FP8_BLOCK = 1 + 4 / (128 * 128)  # one byte + a 4-byte FP32 scale per 128 x 128 block


def test_the_shape_counts_are_the_ones_worked_out():
    assert GO_EXPERTS == 114_661_785_600 and GO_EMBED == 579_133_440


# --- the table -----------------------------------------------------------------------------------------------
def test_precisions_count_their_scales():
    assert bytes_per_value("mxfp4") == 0.53125 == MXFP4
    assert bytes_per_value("nvfp4") == 0.5625 == NVFP4
    assert bytes_per_value("fp8_block") == FP8_BLOCK
    assert bytes_per_value("w4a16") == (4 + 16 / 128) / 8  # GPTQ: an FP16 scale per 128 weights
    assert bytes_per_value("awq") == (4 + (16 + 4) / 128) / 8  # and a 4-bit zero point per 128
    # the bare names the sources' arithmetic uses count no scale
    assert (bytes_per_value("fp8"), bytes_per_value("int4"), bytes_per_value("fp4")) == (1.0, 0.5, 0.5)


@pytest.mark.parametrize(
    ("typed", "same_as"),
    [("NVFP4", "nvfp4"), ("fp8_e4m3", "fp8"), ("FP8-E4M3", "fp8"), ("w8a8", "fp8"), ("w4a4", "nvfp4"),
     ("gptq", "w4a16"), ("AWQ", "awq"), ("BF16", "bf16"), ("fp16", "bf16"), ("int8", "fp8")],
)  # fmt: skip
def test_names_users_type_are_accepted(typed, same_as):
    assert bytes_per_value(typed) == bytes_per_value(same_as)


def test_every_name_of_the_table_is_in_precisions():
    for name in ("nvfp4", "mxfp4", "fp8", "fp8_e4m3", "bf16", "fp16", "int8", "int4", "w4a16", "awq", "gptq",
                 "w4a4", "w8a8"):  # fmt: skip
        assert name in PRECISIONS and lc.PRECISIONS[name] == bytes_per_value(name)


def test_an_unknown_precision_gets_did_you_mean():
    with pytest.raises(InputError, match=r"did you mean 'nvfp4'"):
        bytes_per_value("nvfp5")
    with pytest.raises(InputError, match=r"weight_bytes\['experts'\].*did you mean 'mxfp4'"):
        lc.weight_bytes("gpt-oss-120b", {"experts": "mxfp5"})


def test_an_unknown_group_names_it_and_the_known_ones():
    with pytest.raises(InputError, match=r"unknown tensor group 'expert'.*experts, attention, mlp, embeddings"):
        lc.weight_bytes("gpt-oss-120b", {"expert": "nvfp4"})
    with pytest.raises(InputError, match=r"unknown tensor group 'lm_head'"):
        lc.replica("gpt-oss-120b", "H100 SXM", prompt_tokens=100, answer_tokens=10, weight_bytes="lm_head=bf16")


# --- the catalog's checkpoints ---------------------------------------------------------------------------------
def test_the_catalogs_checkpoints():
    go = lc.models["gpt-oss-120b"].checkpoint
    assert go == {"experts": "mxfp4", "attention": "bf16", "mlp": "bf16", "embeddings": "bf16", "unembedding": "bf16"}
    ds = lc.models["DeepSeek-R1"].checkpoint
    assert ds["experts"] == ds["attention"] == ds["mlp"] == "fp8_block"
    assert ds["embeddings"] == ds["unembedding"] == "bf16"
    assert set(lc.models["Llama-3.1-8B"].checkpoint.values()) == {"bf16"}
    assert lc.models["Kimi-K2.5"].checkpoint["experts"] == "w4a16_g32"  # INT4, a scale per 32 (compressed-tensors)
    assert lc.models["Kimi-K2.5"].checkpoint["attention"] == "bf16"


def test_the_groups_of_gpt_oss_sum_to_its_parameters():
    g = param_groups(lc.models["gpt-oss-120b"])
    assert g["experts"] == GO_EXPERTS and g["embeddings"] == g["unembedding"] == GO_EMBED and g["mlp"] == 0
    assert g["attention"] == 117e9 - GO_EXPERTS - 2 * GO_EMBED  # the published 117 B's rest: 1,179,947,520
    assert sum(g.values()) == pytest.approx(117e9, rel=1e-15)


def test_gpt_oss_120b_weights_at_its_checkpoint_precision():
    # experts at 17/32 byte (60,914,073,600 B), the rest (1,179,947,520 + 1,158,266,880 parameters) at 2 bytes
    expected = GO_EXPERTS * 17 / 32 + (117e9 - GO_EXPERTS) * 2
    assert expected == 65_590_502_400
    w = lc.weight_bytes("gpt-oss-120b")
    assert w.to("B").m == pytest.approx(expected, rel=1e-12)
    assert 60 <= w.to("GB").m <= 68  # the target
    # the published checkpoint is 60.8 GiB: within 1% (the catalog's 117 B is the published figure, rounded)
    assert w.to("GiB").m == pytest.approx(60.8, rel=0.01)


def test_one_precision_given_is_every_groups():
    assert lc.weight_bytes("gpt-oss-120b", "fp8").to("B").m == pytest.approx(117e9)
    assert lc.weight_bytes("gpt-oss-120b", 2).to("GB").m == pytest.approx(234)
    assert lc.weight_bytes("gpt-oss-120b", "mxfp4").to("B").m == pytest.approx(117e9 * MXFP4)


def test_a_per_group_mapping():
    rest = (117e9 - GO_EXPERTS) * 2  # BF16, the checkpoint's
    expected = GO_EXPERTS * NVFP4 + rest
    for given in ({"experts": "nvfp4", "other": "bf16"}, {"experts": "nvfp4"}, "experts=nvfp4 other=bf16"):
        assert lc.weight_bytes("gpt-oss-120b", given).to("B").m == pytest.approx(expected, rel=1e-12)
    # groups not named take "other"
    everything_fp8 = GO_EXPERTS * MXFP4 + (117e9 - GO_EXPERTS) * 1
    assert lc.weight_bytes("gpt-oss-120b", {"experts": "mxfp4", "other": "fp8"}).to("B").m == pytest.approx(
        everything_fp8, rel=1e-12
    )
    assert group_precisions(lc.models["gpt-oss-120b"], {"embeddings": "fp8"})["experts"] == "mxfp4"


def test_deepseek_r1_defaults_to_fp8_and_fits_on_8_b200():
    experts = 58 * 256 * 3 * 7_168 * 2_048  # 58 MoE layers (61 - 3 dense) x 256 experts of 2,048
    embed = 129_280 * 7_168
    expected = (671e9 - 2 * embed) * FP8_BLOCK + 2 * embed * 2  # embeddings and lm_head in BF16
    assert param_groups(lc.models["DeepSeek-R1"])["experts"] == experts
    w = lc.weight_bytes("DeepSeek-R1")
    assert w.to("B").m == pytest.approx(expected, rel=1e-12)
    assert 671 <= w.to("GB").m <= 690
    r = lc.replica("DeepSeek-R1", "B200", tensor_parallel=8, prompt_tokens=2_000, answer_tokens=500)
    assert r.fits and r.matmul == "fp8"
    assert "the checkpoint's" in r.weight_precision and "fp8_block" in r.weight_precision


def test_a_bf16_checkpoint_stays_two_bytes():
    m = lc.models["Qwen2.5-72B"]
    assert lc.weight_bytes(m).to("B").m == m.params * 2 == lc.weight_bytes(m, "bf16").to("B").m


def test_the_replica_of_gpt_oss_on_one_h100():
    # 2,000 + 500 tokens: 18 full layers hold 2,500 tokens and 18 sliding ones 128, 2 x 8 x 64 x 2 B = 2,048 B a
    # token a layer: 96,878,592 B a conversation; 90% of 80 GB usable less 65,590,502,400 B of weights
    kv = (18 * 2_500 + 18 * 128) * 2_048
    batch = int((0.9 * 80e9 - 65_590_502_400) // kv)
    assert batch == 66
    assert lc.max_batch("gpt-oss-120b", "H100 SXM", 2_500, assumptions="course") == batch
    r = lc.replica("gpt-oss-120b", "H100 SXM", prompt_tokens=2_000, answer_tokens=500, assumptions="course")
    assert r.weights.to("B").m == pytest.approx(65_590_502_400, rel=1e-12)
    assert r.weight_precision == "experts=mxfp4 other=bf16 (the checkpoint's)" and r.matmul == "bf16"


def test_a_plan_says_the_weights_precision():
    p = lc.plan("gpt-oss-120b", "H100 SXM", lc.Brief(1, 2_000, 500, Q_(10, "s"), Q_(200, "ms")))
    assert "experts=mxfp4 other=bf16 (the checkpoint's)" in str(p)


def test_a_per_group_deployment_is_kept_as_text():
    d = Deployment("gpt-oss-120b", "H100 SXM", weight_bytes={"other": "BF16", "experts": "gptq"})
    assert d.weight_bytes == "experts=w4a16 other=bf16"
    kw = dict(prompt_tokens=2_000, answer_tokens=500)
    a = lc.replica("gpt-oss-120b", "H100 SXM", weight_bytes={"experts": "nvfp4"}, **kw)
    b = lc.replica("gpt-oss-120b", "H100 SXM", weight_bytes="experts=nvfp4 other=bf16", **kw)
    assert a.weights == b.weights and a.batch == b.batch


def test_decode_reads_the_experts_at_their_precision():
    # batch 1: the shared weights (attention, embeddings, head: 2,338,214,400 parameters at 2 bytes) and 4 of 128
    # experts at 17/32 byte
    expected = (117e9 - GO_EXPERTS) * 2 + GO_EXPERTS * 4 / 128 * MXFP4
    assert lc.weights_read_per_step("gpt-oss-120b", 1).to("B").m == pytest.approx(expected, rel=1e-12)


# --- the matmuls ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("weights", "gpu", "runs_at"),
    [
        ("nvfp4", "B200", "fp4"),  # W4A4 on Blackwell: the FP4 peak
        ("w4a4", "B200", "fp4"),
        ("nvfp4", "H100 SXM", "bf16"),  # no FP4 peak: weight-only FP4 (Marlin), BF16
        ("w4a16", "B200", "bf16"),  # AWQ/GPTQ with Marlin: BF16
        ("awq", "H100 SXM", "bf16"),
        ("gptq", "B200", "bf16"),
        ("mxfp4", "B200", "bf16"),  # gpt-oss's MXFP4 weights multiply BF16 activations (vLLM's default)
        ("fp8_e4m3", "H100 SXM", "fp8"),
        ("w8a8", "H100 SXM", "fp8"),
        ("fp8_block", "H100 SXM", "fp8"),
        ("fp8", "A100 SXM 80GB", "bf16"),  # no FP8 peak
    ],
)
def test_matmul_precision(weights, gpu, runs_at):
    assert lc.matmul_precision(weights, gpu, "course") == runs_at


def test_matmul_precision_of_a_checkpoint():
    assert lc.matmul_precision(None, "B200", model="gpt-oss-120b") == "bf16"  # its experts: MXFP4, weight-only
    assert lc.matmul_precision(None, "H100 SXM", model="DeepSeek-R1") == "fp8"
    assert lc.matmul_precision({"experts": "nvfp4"}, "B200", model="gpt-oss-120b") == "fp4"  # most of a token's
    with pytest.raises(InputError, match="give model="):
        lc.matmul_precision(None, "B200")


# --- configs -------------------------------------------------------------------------------------------------
GPT_OSS = {
    "model_type": "gpt_oss", "num_hidden_layers": 36, "hidden_size": 2880, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880, "vocab_size": 201088,
    "num_local_experts": 128, "num_experts_per_tok": 4, "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 18, "attention_bias": True,
    "max_position_embeddings": 131072, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "quantization_config": {
        "quant_method": "mxfp4",
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens",
                                   "lm_head"],
    },
}  # fmt: skip


def test_a_config_gives_the_checkpoints_precision():
    m = Model.from_hf_config(GPT_OSS, name="gpt-oss-120b from its config")
    assert m.checkpoint == lc.models["gpt-oss-120b"].checkpoint
    # the shapes' count: embeddings 2 x 579,133,440; final norm 2,880; 36 layers of attention (q, k, v, o:
    # 2,880 x 4,096 x 2 + 2 x 2,880 x 512 = 26,542,080, biases 4,096 + 1,024 + 2,880, norms 2 x 2,880) and of
    # experts (128 x 24,883,200, router 2,880 x 128)
    per_layer = 26_542_080 + 8_000 + 5_760 + 128 * 3 * H * H + H * EXPERTS
    total = 2 * GO_EMBED + H + LAYERS * per_layer
    assert m.params == total == 116_789_336_640
    expected = GO_EXPERTS * MXFP4 + (total - GO_EXPERTS) * 2
    w = lc.weight_bytes(m)
    assert w.to("B").m == pytest.approx(expected, rel=1e-12)
    assert w.to("GiB").m == pytest.approx(60.8, rel=0.005)  # the published checkpoint, less the experts' biases


def test_configs_quantization_methods():
    bf16 = {k: v for k, v in GPT_OSS.items() if k != "quantization_config"}
    assert set(Model.from_hf_config(bf16).checkpoint.values()) == {"bf16"}
    fp8 = Model.from_hf_config(bf16 | {"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}})
    assert fp8.checkpoint["experts"] == fp8.checkpoint["attention"] == "fp8_block"
    assert fp8.checkpoint["embeddings"] == fp8.checkpoint["unembedding"] == "bf16"
    int4 = {"quant_method": "compressed-tensors", "ignore": ["lm_head", "re:.*self_attn.*"],
            "config_groups": {"group_0": {"targets": ["Linear"],
                                          "weights": {"num_bits": 4, "type": "int", "group_size": 32}}}}  # fmt: skip
    kimi = Model.from_hf_config(bf16 | {"quantization_config": int4}).checkpoint
    assert kimi["experts"] == "w4a16_g32" and kimi["attention"] == "bf16"
    awq = Model.from_hf_config(bf16 | {"quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 64}})
    assert awq.checkpoint["experts"] == pytest.approx((4 + 20 / 64) / 8)  # a scale and a zero per 64: by bytes
    assert lc.weight_bytes(awq).to("B").m > lc.weight_bytes(awq, "awq").to("B").m


def test_a_config_with_an_unknown_quantization_names_the_field():
    bad = GPT_OSS | {"quantization_config": {"quant_method": "bitsandbytes"}}
    with pytest.raises(InputError, match=r"quantization_config.quant_method 'bitsandbytes'.*fp8, mxfp4"):
        Model.from_hf_config(bad)
    with pytest.raises(InputError, match=r"weight_block_size"):
        Model.from_hf_config(GPT_OSS | {"quantization_config": {"quant_method": "fp8", "weight_block_size": "128"}})


# --- the four-bit bandwidth factor: the weights' reads alone in the course -----------------------------------------
def test_four_bit_factor_slows_the_weight_reads_alone():
    """Llama 3.1 8B, W4A16 (4 bits + a 16-bit scale per 128: 4.125 bits = 0.515625 B a weight) on one H100
    (3.35 TB/s) at batch 8, each sequence's KV at 2,304 tokens (131,072 B a token: 2 x 32 layers x 8 heads x 128 x
    2 B), no fixed cost (no step overhead, no layers' floor). The course: the weights at 0.7 x 0.6 of the bandwidth, the KV at 0.7; the rule
    'all_reads': every byte at 0.7 x 0.6. Both memory-bound (8 x 2 x 8.03e9 FLOP at BF16 is 0.26 ms)."""
    m = lc.models["Llama-3.1-8B"]
    weights, kv = m.params * 0.515625, 8 * 2_304 * 131_072
    course = lc.resolve("course").replace(step_overhead_ms=0.0, layer_floor_us=0.0, four_bit_bandwidth_factor=0.6)
    kw = dict(batch=8, context_tokens=2_304, weight_bytes="w4a16")
    step = lc.decode_step("Llama-3.1-8B", "H100 SXM", assumptions=course, **kw)
    by_hand = weights / (3.35e12 * 0.7 * 0.6) + kv / (3.35e12 * 0.7)
    assert step.step_time.to("s").m == pytest.approx(by_hand, rel=1e-9)
    assert step.kv_read.to("B").m == pytest.approx(kv) and step.weights_read.to("B").m == pytest.approx(weights)
    every = lc.decode_step(
        "Llama-3.1-8B", "H100 SXM", assumptions=course.replace(four_bit_factor_applies_to="all_reads"), **kw
    )
    assert every.step_time.to("s").m == pytest.approx((weights + kv) / (3.35e12 * 0.7 * 0.6), rel=1e-9)
    # 8-bit weights: the factor does not apply under either rule (8.03e9 B + the same KV at 0.7)
    fp8 = lc.decode_step("Llama-3.1-8B", "H100 SXM", assumptions=course, **(kw | {"weight_bytes": "fp8"}))
    assert fp8.step_time.to("s").m == pytest.approx((m.params + kv) / (3.35e12 * 0.7), rel=1e-9)


def test_the_source_presets_keep_the_factor_off_and_the_rule_on_every_read():
    for name in ("envelope", "lab", "capacity", "planner"):
        a = lc.resolve(name)
        assert (a.four_bit_bandwidth_factor, a.four_bit_factor_applies_to) == (1.0, "all_reads")
    assert lc.resolve("course").four_bit_factor_applies_to == "weights"
    with pytest.raises(InputError, match=r"four_bit_factor_applies_to.*Did you mean 'weights'"):
        lc.resolve("course").replace(four_bit_factor_applies_to="weight")
