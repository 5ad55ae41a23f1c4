"""The worked figures of the chapter *Sizing the fleet*, through the public API.

Expected values are the source texts' figures (seeds 000, 002, 004) or hand arithmetic written
out in each docstring.
"""

from __future__ import annotations

import pytest

import llmcourse as lc
from llmcourse import Q_
from llmcourse.units import HOURS_PER_MONTH

F = lc.FORMULAS


@pytest.fixture(scope="module")
def rep():
    return lc.replica("Llama-3.1-70B", "H100 SXM", tensor_parallel=2, batch=64, context_tokens=2_400)


def test_002_kv_per_sequence(rep):
    """80 layers x 8 KV heads x 128 x 2 x 2 B = 320 KiB per token (the seed's "320 KB"); x 2,400 = 0.786 GB."""
    assert lc.kv_bytes_per_token("Llama-3.1-70B").to("KiB").m == 320
    assert lc.kv_bytes_per_sequence("Llama-3.1-70B", 2_400).to("GB").m == pytest.approx(0.786, abs=5e-4)


def test_002_step(rep):
    """70.554 GB + 64 x 0.786 GB = 120.9 GB; / (2 x 3.35 TB/s x 0.7) = 25.8 ms; compute
    2 x 70.554e9 x 64 / (2 x 989e12 x 0.5) = 9.13 ms, so memory-bound."""
    s = rep.step
    assert (s.weights_read + s.kv_read).to("GB").m == pytest.approx(120.9, abs=0.05)
    assert s.step_time.to("ms").m == pytest.approx(25.8, abs=0.05)
    assert s.compute_time.to("ms").m == pytest.approx(9.13, abs=0.01) and s.bound == "memory"


def test_002_speeds(rep):
    """1 / 25.8 ms = 39 tok/s per user; 64 / 25.8 ms = 2,483 tok/s per replica ("2,480")."""
    assert round(rep.tokens_per_s_per_user.to("1/s").m) == 39
    assert round(rep.throughput.to("1/s").m) == 2_483


def test_002_memory_check(rep):
    """120.9 GB used of 2 x 80 GB x 0.9 = 144 GB usable: it fits."""
    assert rep.memory_used.to("GB").m == pytest.approx(120.9, abs=0.05)
    assert rep.usable_memory == Q_(144, "GB") and rep.fits


def test_002_fleet(rep):
    """350 QPS x 400 = 140,000 tok/s; 70% of 2,483 = 1,738; 140,000 / 1,738 = 80.5 -> 81 replicas, 162 GPUs;
    162 x 730 h x $2.50 = $295,650 a month."""
    demand = lc.traffic(Q_(350, "1/s"), 2_000, 400).output_tokens_per_s
    f = lc.fleet(demand, rep)
    assert round(f.usable_throughput_per_replica.to("1/s").m) == 1_738
    assert f.replicas_exact == pytest.approx(80.5, abs=0.05)
    assert (f.replicas, f.gpus) == (81, 162)
    assert f.monthly_cost.to("USD").m == pytest.approx(295_650)


def test_002_prefill_pool():
    """350 x 2,000 = 700K tok/s x 2 x 70.554e9 = 98.8 PFLOP/s; / (989 TFLOP/s x 0.5) = 199.8 -> 200 H100s."""
    t = lc.traffic(Q_(350, "1/s"), 2_000, 400)
    p = lc.prefill_pool(t.input_tokens_per_s, "Llama-3.1-70B", "H100 SXM")
    assert p.compute_rate.to("PFLOP/s").m == pytest.approx(98.8, abs=0.05) and p.gpus == 200


def test_000_ten_times_traffic():
    """2,000,000/day x 3 / 86,400 x 300 = 20,833 tok/s; / 4,387 = 4.7 -> 5 replicas of 2 GPUs = 10 GPUs."""
    p = lc.serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8", prompt_tokens=2_000)
    demand = lc.traffic(Q_(2_000_000, "1/day"), 2_000, 300, peak_factor=3).output_tokens_per_s
    assert round(demand.to("1/s").m) == 20_833 and round(p.output_tokens_per_s.m) == 4_387
    n = F["replicas_needed"](demand=demand, throughput=p.output_tokens_per_s).m
    assert n == 5 and n * p.n_gpus == 10


def test_000_utilisation():
    """$5 per hour for 2 GPUs / (4,387 x 3,600) x 1e6 = $0.317 per million at full load; / 0.3 = $1.055;
    a fleet at 30% pays 1 / 0.3 = 3.33x."""
    p = lc.serving_plan("Qwen2.5-72B", "H100 SXM", 2, 2_300, weight_bytes="fp8")
    full = p.cost_per_million_output_tokens
    assert full.to("USD").m == pytest.approx(0.3166, abs=1e-3)
    at30 = F["cost_at_utilisation"](cost_full=full, utilisation=0.3)
    assert at30.to("USD").m == pytest.approx(1.055, abs=1e-3)
    assert (at30 / full).to("").m == pytest.approx(10 / 3)


def test_004_fleet_table():
    """1.5e9 requests a day / 86,400 = 17,361 req/s; x 5,000 chars / 4 = 1,250 tokens -> 21.7 M tok/s;
    / 1,000, 2,000, 4,000 tok/s per GPU = 21,702, 10,851, 5,426 -> 21,700, 10,900, 5,400 to the nearest hundred."""
    rate = lc.traffic(Q_(1.5e9, "1/day"), 1, 1).request_rate
    assert round(rate.to("1/s").m) == 17_361
    tokens = F["tokens_from_characters"](characters=5_000, chars_per_token=4).m
    demand = F["token_rate"](request_rate=rate, tokens_per_request=tokens)
    assert round(demand.to("1/s").m / 1e6, 1) == 21.7
    got = [F["replicas_needed"](demand=demand, throughput=Q_(x, "1/s")).m for x in (1_000, 2_000, 4_000)]
    assert got == [21_702, 10_851, 5_426]
    assert [round(n, -2) for n in got] == [21_700, 10_900, 5_400]


def test_break_even_api_price(rep):
    """140,000 tok/s x 0.3 x 730 h x 3,600 s = 110.4e9 tokens a month; $295,650 / 110.4e9 = $2.68 per million."""
    f = lc.fleet(Q_(140_000, "1/s"), rep)
    served = F["tokens_served"](demand=f.demand, utilisation=0.3, hours=HOURS_PER_MONTH)
    assert served.m == pytest.approx(110.376e9)
    be = F["break_even_price"](cost=f.monthly_cost, tokens_served=served)
    assert (be * 1e6).to("USD").m == pytest.approx(2.68, abs=0.005)


def test_weight_load_time():
    """70.554 GB of FP8 weights read at an assumed 2 GB/s: 35.3 s before a new replica serves."""
    t = F["weight_load_time"](weights=lc.weight_bytes("Llama-3.1-70B", "fp8"), storage_rate=Q_(2, "GB/s"))
    assert t.to("s").m == pytest.approx(35.3, abs=0.05)


def test_littles_law_in_flight():
    """350 requests/s x (0.3 s + 400 x 25.8 ms = 10.6 s) = 3,717 requests in flight."""
    n = F["littles_law"](request_rate=Q_(350, "1/s"), time_in_system=Q_(0.3, "s") + 400 * Q_(25.8, "ms"))
    assert n.m == pytest.approx(3_717)
