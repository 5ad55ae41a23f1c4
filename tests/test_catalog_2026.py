"""The 2026 catalog rows (issue 38): every new accelerator and model loads, cites its source, has its figures in the
right units, and a replica of it gives finite figures or a clear InputError; the unified-memory share; names people
type."""

from __future__ import annotations

import math

import pytest

import llmcourse as lc
from llmcourse import GPU, Q_
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.replica.model import replica

NEW_GPUS = ["MI355X", "MI350X", "H20", "H200 NVL", "RTX 5090", "RTX PRO 6000", "L40", "A10", "M3 Max", "M3 Ultra",
            "M4 Max", "Gaudi 3", "Arc Pro B60", "TPU v5e", "TPU v6e", "TPU v7", "Trainium2"]  # fmt: skip
NEW_MODELS = ["Llama-4-Scout-17B-16E", "Llama-4-Maverick-17B-128E", "Gemma-3-27B", "Qwen3-0.6B", "Qwen3-1.7B",
              "Qwen3-4B", "Qwen3-8B", "Qwen3-14B", "DeepSeek-V3.2", "Kimi-K2-Instruct", "Mistral-Small-24B",
              "Mistral-Large-2407", "Phi-4"]  # fmt: skip


def test_counts():
    # the targets: at least 26 accelerators and 32 models
    assert len(lc.gpus) >= 26 and len(lc.models) >= 32


@pytest.mark.parametrize("name", NEW_GPUS)
def test_new_gpu_rows_load_cited_in_units(name):
    g = lc.gpus[name]
    assert len(g.source) > 20
    assert g.memory.check("[information]") and g.bandwidth.check("[information] / [time]")
    assert 1 < g.memory.to("GB").m < 300 and 0.1 < g.bandwidth.to("TB/s").m < 10
    assert 10 < g.flops.to("TFLOP/s").m < 3000
    if g.link is not None:
        lc.links[g.link]  # a link the catalog has


@pytest.mark.parametrize("name", NEW_GPUS)
def test_replica_on_each_new_gpu_is_finite(name):
    # Qwen3-8B in FP8 fits every new accelerator (8.2 GB of weights; the smallest, TPU v5e, has 16 GB)
    r = replica("Qwen3-8B", name, prompt_tokens=1000, answer_tokens=200, weight_bytes="fp8")
    assert math.isfinite(r.tpot.m) and r.tpot.m > 0 and math.isfinite(r.ttft.m) and r.batch >= 1


def test_a_gpu_without_an_fp8_peak_refuses_fp8_compute_naming_it():
    for name in ("MI350X", "L40", "A10", "TPU v5e", "M3 Ultra"):
        with pytest.raises(InputError, match="no FP8 figure"):
            lc.gpus[name].peak_flops("fp8")


def test_weights_beyond_the_memory_are_refused_clearly():
    # Qwen3-8B in BF16: 8.19e9 x 2 B = 16.4 GB > TPU v5e's 16 GB
    r = replica("Qwen3-8B", "TPU v5e", prompt_tokens=1000, answer_tokens=200)
    assert not r.fits
    with pytest.raises(InputError, match="don't fit"):
        _ = r.tpot


@pytest.mark.parametrize("name", NEW_MODELS)
def test_new_model_rows_and_replica(name):
    m = lc.models[name]
    assert len(m.source) > 20 and m.params >= m.active_params > 0
    # enough GPUs for the weights: B200s (180 GB) at FP8, 8 at most per replica
    n = next(k for k in (1, 2, 4, 8) if m.params * 1.1 < k * 180e9)
    r = replica(name, "B200", tensor_parallel=n, prompt_tokens=2000, answer_tokens=300, weight_bytes="fp8")
    assert math.isfinite(r.tpot.m) and r.tpot.m > 0 and r.batch >= 1


def test_layer_types_of_the_new_models():
    # Llama 4: 12 global NoPE layers (every 4th of 48), 36 chunked at 8192; Gemma 3 27B: 10 global of 62 (5 local :
    # 1 global), 52 sliding at 1024; DeepSeek-V3.2: all 61 layers sparse (indexer top-2048)
    assert lc.models["Llama-4-Scout-17B-16E"].layer_types["chunked"] == 36
    assert lc.models["Llama-4-Maverick-17B-128E"].attention_chunk == 8192
    g = lc.models["Gemma-3-27B"]
    assert (g.layer_types["full"], g.layer_types["sliding"], g.sliding_window) == (10, 52, 1024)
    assert lc.models["DeepSeek-V3.2"].layer_types["sparse"] == 61 and lc.models["DeepSeek-V3.2"].index_topk == 2048


def test_checkpoint_precisions():
    assert lc.models["Kimi-K2-Instruct"].checkpoint["experts"] == "fp8_block"
    assert lc.models["Kimi-K2-Instruct"].checkpoint["embeddings"] == "bf16"
    assert lc.models["Kimi-K2.5"].checkpoint["experts"] == "w4a16_g32"
    assert lc.models["Gemma-3-27B"].tied_embeddings and not lc.models["Qwen3-8B"].tied_embeddings


def test_qwen3_0_6b_parameters_by_hand():
    # 28 layers x (attention 1024x2048 + 2 x 1024x1024 + 2048x1024 + q/k norms 2x128 + 2 layer norms 2x1024
    #   + MLP 3 x 1024 x 3072) + embeddings 151936 x 1024 (tied) + final norm 1024
    layer = 1024 * 2048 * 2 + 2 * 1024 * 1024 + 2 * 128 + 2 * 1024 + 3 * 1024 * 3072
    assert lc.models["Qwen3-0.6B"].params == 28 * layer + 151936 * 1024 + 1024 == 596_049_920


@pytest.mark.parametrize(
    ("typed", "name"),
    [
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "Llama-4-Scout-17B-16E"),
        ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "Llama-4-Maverick-17B-128E"),
        ("google/gemma-3-27b-it", "Gemma-3-27B"),
        ("Qwen/Qwen3-14B", "Qwen3-14B"),
        ("deepseek-ai/DeepSeek-V3.2-Exp", "DeepSeek-V3.2"),
        ("moonshotai/Kimi-K2-Instruct", "Kimi-K2-Instruct"),
        ("mistralai/Mistral-Small-24B-Instruct-2501", "Mistral-Small-24B"),
        ("microsoft/phi-4", "Phi-4"),
        ("Ironwood", "TPU v7"),
        ("Trn2", "Trainium2"),
    ],
)
def test_names_people_type(typed, name):
    cat = lc.gpus if name in lc.gpus else lc.models
    assert cat[typed].name == name


def test_unknown_names_get_did_you_mean():
    with pytest.raises(UnknownNameError, match=r"Did you mean.*MI355X"):
        lc.gpus["MI355"]  # an alias: found
        lc.gpus["MI356X"]
    with pytest.raises(UnknownNameError, match="Did you mean"):
        lc.models["Qwen3-9B"]


def test_unified_memory_share():
    # M3 Ultra, 256 GB, GPU share 0.75: 192 GB usable by the GPU
    m = lc.gpus["M3 Ultra"]
    assert m.unified_memory == Q_(256, "GB") and m.memory.to("GB").m == pytest.approx(192)
    assert m.with_(memory_share=0.5).memory.to("GB").m == pytest.approx(128)
    assert m.with_(memory=Q_(512, "GB")).memory.to("GB").m == pytest.approx(384)
    assert lc.gpus["H100 SXM"].memory_share is None and lc.gpus["H100 SXM"].unified_memory is None
    # M4 Max, 128 GB at macOS's default share on 128 GB (107.52 of 128: 0.84), 546 GB/s (Apple's figure)
    m4 = lc.gpus["Apple M4 Max"]
    assert m4.memory.to("GB").m == pytest.approx(0.84 * 128) and m4.bandwidth.to("GB/s").m == pytest.approx(546)


@pytest.mark.parametrize("share", [0, -0.1, 1.5, float("nan"), "0.75", True])
def test_a_share_outside_0_1_is_refused_naming_the_field(share):
    with pytest.raises(InputError, match="memory_share"):
        GPU("mac", memory=Q_(64, "GB"), bandwidth=Q_(0.4, "TB/s"), flops=Q_(14, "TFLOP/s"), memory_share=share)


def test_inconsistent_unified_memory_is_refused():
    with pytest.raises(InputError, match="memory_share"):
        GPU("mac", memory=Q_(10, "GB"), bandwidth=Q_(0.4, "TB/s"), flops=Q_(14, "TFLOP/s"),
            memory_share=0.75, unified_memory=Q_(64, "GB"))  # fmt: skip
