"""Issue 37: the 2026 staples (llmcourse/data/interview/08_staples.md), their book variant's figures by hand.

Every expected value is derived in the comments from the models' published configs (config.json fields) and the
stated givens, never taken from the code under test. The renders under 40 variants and the chains' `moves` are
checked for these questions by tests/test_interview_practice.py, which iterates the whole bank; the first test here
makes sure the staples are among what it iterates.
"""

from __future__ import annotations

import math

import pytest

from llmcourse.interview import QUESTIONS

STAPLES_CHAINS = ("s405", "dsv3", "ttft_cut", "ctx_len", "fp4", "eagle", "lora", "nvl72", "rollout", "allreduce")


def test_the_staples_are_in_the_bank_the_practice_tests_iterate() -> None:
    chains = QUESTIONS.chains()
    assert all(c in chains and 3 <= len(chains[c]) <= 6 for c in STAPLES_CHAINS)
    staples = [q for q in QUESTIONS.values() if q.id in _IDS]
    assert len(staples) == len(_IDS) >= 45
    kinds = [q.kind for q in staples]
    assert kinds.count("concept") >= 4 and kinds.count("design") >= 4
    assert sum(q.kind == "numeric" and q.varies for q in staples) >= 20
    assert {q.level for q in staples} == {"L4", "L5", "Staff+"}


def test_lora_adapter_bytes_of_llama_31_8b_at_rank_16() -> None:
    """Llama 3.1 8B: 32 layers, hidden 4096, 32 heads x 128, 8 KV heads x 128, MLP 14,336. Rank 16 on q, k, v, o, gate,
    up, down adds 16 x (d_in + d_out) each: 4096+4096, 4096+1024, 4096+1024, 4096+4096, 4096+14336, 4096+14336,
    14336+4096 = 81,920 a layer x 16 x 32 = 41,943,040 parameters (PEFT prints the same for this model); x 2 bytes =
    83,886,080 B = 83.9 MB."""
    n = QUESTIONS["lo_bytes"].numbers()
    assert n["params"] == 41_943_040
    assert n["adapter"].to("B").m == pytest.approx(83_886_080)


def test_mla_cache_of_deepseek_v3_at_32k() -> None:
    """DeepSeek-V3: kv_lora_rank 512 + qk_rope_head_dim 64 = 576 values x 2 B x 61 layers = 70,272 B a token;
    x 32,768 = 2,302,672,896 B. Llama 3.1 405B: 2 x 126 layers x 8 KV heads x 128 x 2 B = 516,096 B a token;
    ratio 516,096 / 70,272 = 7.344."""
    n = QUESTIONS["ds_mla"].numbers()
    assert n["kv"].to("B").m == pytest.approx(2_302_672_896)
    assert n["ratio"] == pytest.approx(516_096 / 70_272)


def test_long_context_chain_of_llama_31_70b() -> None:
    """Llama 3.1 70B: 2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B a token. Step 1, 32,768 tokens:
    10,737,418,240 B. Step 2, 32,768 x 4 = 131,072 (its window): 42,949,672,960 B. Step 3 in FP8: half,
    21,474,836,480 B."""
    kv = [QUESTIONS[q].numbers()["kv"].to("B").m for q in ("ctx_base", "ctx_long", "ctx_fp8")]
    assert kv == pytest.approx([10_737_418_240, 42_949_672_960, 21_474_836_480])


def test_decode_allreduce_message_and_chunk_count() -> None:
    """ar_decode: batch 32 x hidden 8,192 (Llama 3.1 70B) x 2 B = 524,288 B = 512 KiB a GPU. c_chunk: a 32,000-token
    prompt in chunks of 8,192 (the engines' default on 80-GB-class GPUs) takes ceil(3.9) = 4 chunks."""
    assert QUESTIONS["ar_decode"].numbers()["msg"].to("B").m == pytest.approx(524_288)
    c = QUESTIONS["c_chunk"].numbers()
    assert (c["chunk"], c["chunks"]) == (8_192, 4)


def test_rollout_tokens_and_prefix_share() -> None:
    """rl_base: 512 prompts x 16 samples x 8,000 tokens = 65,536,000 answer tokens; the GPU-hours are those tokens
    over the replica's rate times its GPUs (hours x 3,600 / GPUs x rate = tokens). rl_prefix: 15 of 16 samples find the
    1,000-token prompt cached: 937.5 tokens a sample. tt_prefix: 75% of 16,000 = 12,000 cached, 4,000 prefilled."""
    r = QUESTIONS["rl_base"].numbers()
    assert r["tokens"] == 65_536_000
    assert r["hours"] * 3_600 / r["n"] * r["x"] == pytest.approx(65_536_000, rel=1e-9)
    assert QUESTIONS["rl_prefix"].numbers()["cached"] == pytest.approx(937.5)
    t = QUESTIONS["tt_prefix"].numbers()
    assert (t["cached"], t["new"]) == (12_000, 4_000)


def test_405b_weights_per_gpu() -> None:
    """Llama 3.1 405B: about 405.9 billion parameters (the model card: 405B); in FP8, one byte each, over 8 GPUs:
    about 50.7 GB a GPU; in BF16 over 16 GPUs (two pipeline stages of 8), the same per GPU."""
    a, b = QUESTIONS["s405_fp8"].numbers(), QUESTIONS["s405_bf16"].numbers()
    assert a["w_gpu"].to("GB").m == pytest.approx(405.9 / 8, rel=0.01)
    assert b["w_gpu"].to("GB").m == pytest.approx(a["w_gpu"].to("GB").m) and b["n"] == 16
    assert math.isclose(b["w"].to("GB").m, 2 * a["w"].to("GB").m, rel_tol=1e-9)


_IDS = {
    "s405_fp8", "s405_bf16", "s405_tp16", "s405_b200", "c_pp_tp", "ds_mla", "ds_tp8", "ds_dp8", "ds_dp16",
    "c_dp_attention", "tt_cold", "tt_prefix", "tt_b200", "tt_handoff", "c_chunk", "ctx_base", "ctx_long", "ctx_fp8",
    "lc_types", "dsa_read", "c_cp", "pr_gptoss", "fp4_w4a16", "fp4_w4a4", "fp4_h100", "fp4_fp8", "sp_b1", "sp_batch",
    "sp_alpha", "sp_cross", "lo_bytes", "lo_rank", "lo_many", "nv_h200", "nv_gb200", "nv_peak", "amd_node", "rl_base",
    "rl_prefix", "rl_long", "c_structured", "ar_decode", "ar_nodes", "ar_prefill", "d_405", "d_dsv3", "d_longdoc",
    "d_rl",
}  # fmt: skip
