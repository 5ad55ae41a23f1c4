"""Every figure of the source texts 000 and 002, and the arithmetic of 004, through the public API.

Expected values are typed from the source texts; the tolerance matches each figure's rounding.
"""

import pytest

import llmcourse as lc
from llmcourse import Q_


def rounds_to(q, unit, expected, digits=0):
    """The quantity, in ``unit``, rounds to the figure the source prints."""
    return round(q.to(unit).m, digits) == expected


# --- seed 000: "Back-of-the-envelope estimation for LLM systems" ---------------------------------
def test_000_kv_per_token():
    """72B: 327,680 B = 320 KiB; 7B: 57,344 B = 56 KiB."""
    assert lc.kv_bytes_per_token("Qwen2.5-72B") == Q_(327_680, "B")
    assert lc.kv_bytes_per_token("Qwen2.5-72B").to("KiB") == Q_(320, "KiB")
    assert lc.kv_bytes_per_token("Qwen2.5-7B") == Q_(57_344, "B")
    assert lc.kv_bytes_per_token("Qwen2.5-7B").to("KiB") == Q_(56, "KiB")


def test_000_peak_load():
    """200,000 requests a day, 3x peak: 6.9 requests/s, about 14,000 (13,889) input and 2,083 output tok/s."""
    t = lc.traffic(Q_(200_000, "1/day"), 2_000, 300, peak_factor=3)
    assert rounds_to(t.request_rate, "1/s", 6.9, 1)
    assert rounds_to(t.output_tokens_per_s, "1/s", 2_083)
    assert rounds_to(t.input_tokens_per_s, "1/s", 13_889)


def test_000_conversation_kv():
    """A 2,300-token conversation on the 72B model holds about 0.75 GB."""
    assert rounds_to(lc.kv_bytes_per_sequence("Qwen2.5-72B", 2_300), "GB", 0.75, 2)


def test_000_weights_do_not_fit_in_bf16_on_two_gpus():
    """145 GB of BF16 weights vs 144 GB usable: the plan says so instead of raising."""
    p = lc.serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes=2)
    assert not p.fits and p.batch == 0
    assert rounds_to(p.weights, "GB", 145) and rounds_to(p.usable_memory, "GB", 144)
    assert "145 GB don't fit in 144 GB" in p.message


@pytest.mark.parametrize(
    ("model", "n", "wb", "batch", "per_user", "alone", "total", "prefill", "cost"),
    [
        ("Qwen2.5-72B", 2, 1, 94, 47, 92, 4_387, 0.29, 0.32),
        ("Qwen2.5-72B", 4, 2, 189, 47, 92, 8_799, 0.15, 0.32),
        ("Qwen2.5-7B", 1, 2, 430, 47, 220, 20_031, 0.06, 0.03),
    ],
)
def test_000_serving_plan_table(model, n, wb, batch, per_user, alone, total, prefill, cost):
    """The printed table of section 6, row by row."""
    p = lc.serving_plan(model, "H100 SXM", n, 2_300, weight_bytes=wb, prompt_tokens=2_000)
    assert p.fits and p.batch == batch
    assert rounds_to(p.tokens_per_s_per_user, "1/s", per_user)
    assert rounds_to(p.tokens_per_s_alone, "1/s", alone)
    assert rounds_to(p.output_tokens_per_s, "1/s", total)
    assert rounds_to(p.prefill_time, "s", prefill, 2)
    assert rounds_to(p.cost_per_million_output_tokens, "USD", cost, 2)


def test_000_full_gpu_step_is_about_21_ms():
    """A full H100 reads ~72 GB per step: about 21 ms whatever the model."""
    for model, n, wb in [("Qwen2.5-72B", 2, 1), ("Qwen2.5-7B", 1, 2)]:
        p = lc.serving_plan(model, "H100 SXM", n, 2_300, weight_bytes=wb)
        assert 21 <= p.step_time.to("ms").m < 22


def test_000_ten_times_traffic_and_utilisation():
    """10x traffic needs 20,833 / 4,387 = 4.7 -> 5 replicas (10 GPUs); 30% utilisation -> $1.05 per million."""
    p = lc.serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8")
    demand = 10 * lc.traffic(Q_(200_000, "1/day"), 2_000, 300, peak_factor=3).output_tokens_per_s
    rep = lc.formulas.FORMULAS["replicas_needed"](demand=demand, throughput=p.output_tokens_per_s)
    assert round((demand / p.output_tokens_per_s).to("").m, 1) == 4.7
    assert rep.m == 5 and rep.m * 2 == 10
    # 0.3166 / 0.3 = 1.055: the source's "about $1.05" truncates what rounds to $1.06.
    assert (p.cost_per_million_output_tokens / 0.3).to("USD").m == pytest.approx(1.05, abs=0.006)


# --- seed 002: "Capacity planning for inference" ----------------------------------------------------
@pytest.fixture
def replica_002():
    return lc.replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=2, batch=64, context_tokens=2_400)


def test_002_replica(replica_002):
    """70.6 GB of FP8 weights, 0.79 GB per sequence, 121 GB per step, 25.8 ms, ~9 ms compute, 39 tok/s, 2,480 tok/s."""
    r = replica_002
    assert rounds_to(lc.weight_bytes("Llama-3.1-70B", "fp8"), "GB", 70.6, 1)
    assert rounds_to(lc.kv_bytes_per_sequence("Llama-3.1-70B", 2_400), "GB", 0.79, 2)
    assert rounds_to(r.step.weights_read + r.step.kv_read, "GB", 121)
    assert rounds_to(r.step.memory_time, "ms", 25.8, 1) and r.step.bound == "memory"
    assert rounds_to(r.step.compute_time, "ms", 9)
    assert rounds_to(r.tokens_per_s_per_user, "1/s", 39)
    assert round(r.throughput.to("1/s").m, -1) == 2_480
    assert r.fits and rounds_to(r.usable_memory, "GB", 144)


def test_002_fleet(replica_002):
    """30% headroom leaves ~1,740 tok/s; 140,000 / 1,740 -> 81 replicas = 162 H100s; ~$296K a month."""
    demand = lc.traffic(Q_(350, "1/s"), 2_000, 400).output_tokens_per_s
    assert demand == Q_(140_000, "1/s")
    f = lc.fleet(demand, replica_002, headroom_fraction=0.3)
    assert round(f.usable_throughput_per_replica.to("1/s").m, -1) == 1_740
    assert (f.replicas, f.gpus) == (81, 162)
    assert round(f.monthly_cost.to("USD").m, -3) == 296_000


def test_002_prefill_pool():
    """700K input tok/s x 2 x 70.6B = 99 PFLOP/s, ~200 H100s at 50%."""
    t = lc.traffic(Q_(350, "1/s"), 2_000, 400)
    p = lc.prefill_pool(t.input_tokens_per_s, "Llama-3.1-70B", "H100 SXM", compute_efficiency=0.5)
    assert rounds_to(p.compute_rate, "PFLOP/s", 99) and p.gpus == 200


# --- seed 004: "The estimation that matters" --------------------------------------------------------
F = lc.formulas.FORMULAS


def test_004_tokens():
    """5,000 chars / 4 = 1,250 tokens; 17,361 req/s x 1,250 = 21.7 M tok/s; 25 s at 50 tok/s."""
    tokens = F["tokens_from_characters"](characters=5_000, chars_per_token=4)
    assert tokens.m == 1_250
    rate = F["token_rate"](request_rate=Q_(17_361, "1/s"), tokens_per_request=tokens)
    assert round(rate.to("1/s").m / 1e6, 1) == 21.7
    assert F["generation_time"](tokens_per_request=tokens, token_rate=Q_(50, "1/s")) == Q_(25, "s")


def test_004_single_sequence_ceiling_and_batch_table():
    """140 GB / 3,350 GB/s -> 23.9 tok/s; batches 8/32/128/256 -> 191/766/3,063/6,126 tok/s."""
    w = lc.weight_bytes(lc.Model("70B", params=70e9, layers=80, hidden=8192, heads=64, kv_heads=8))
    assert w == Q_(140, "GB")
    t = F["weight_read_time"](weights=w, n_gpus=1, bandwidth=Q_(3_350, "GB/s"), bandwidth_efficiency=1)
    assert round((1 / t).to("1/s").m, 1) == 23.9
    for b, total in [(1, 24), (8, 191), (32, 766), (128, 3_063), (256, 6_126)]:
        assert round(F["throughput"](batch=b, step_time=t).to("1/s").m) == total


def test_004_mha_kv_table():
    """Without GQA (64 KV heads): 2.62 MB/token -> 2.6, 10.5, 84, 336 GB at 1K/4K/32K/128K tokens."""
    mha = lc.models["Llama-3.1-70B"].with_(kv_heads=64)
    kv = lc.kv_bytes_per_token(mha)
    assert kv == Q_(2 * 80 * 8_192 * 2, "B") and rounds_to(kv, "MB", 2.62, 2)
    for ctx, gb, digits in [(1_000, 2.6, 1), (4_000, 10.5, 1), (32_000, 84, 0), (128_000, 336, 0)]:
        assert rounds_to(lc.kv_bytes_per_sequence(mha, ctx), "GB", gb, digits)


def test_004_gqa_shrinks_eightfold_and_fifteen_sequences():
    """8 KV heads of 64: 10.5 GB -> 1.3 GB at 4K; (160 - 140) GB / 1.31 GB -> 15 sequences, not 256."""
    gqa = lc.kv_bytes_per_sequence("Llama-3.1-70B", 4_000)
    assert rounds_to(gqa, "GB", 1.3, 1)
    free = Q_(2 * 80, "GB") - Q_(140, "GB")
    assert int((free / gqa).to("").m) == 15


def test_004_fleet_table():
    """21.7 M tok/s at 1,000 / 2,000 / 4,000 tok/s per GPU -> 21,700 / 10,900 / 5,400 GPUs (nearest hundred)."""
    demand = F["token_rate"](request_rate=Q_(17_361, "1/s"), tokens_per_request=1_250)
    for per_gpu, gpus in [(1_000, 21_700), (2_000, 10_900), (4_000, 5_400)]:
        n = F["replicas_needed"](demand=demand, throughput=Q_(per_gpu, "1/s")).m
        assert round(n, -2) == gpus
