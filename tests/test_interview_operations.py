"""Issue 37: hand-derived checks of five operations questions (llmcourse/data/interview/07_operations.md), book variant.

The book's givens: Llama 3.1 70B (70.554e9 parameters, 80 layers, 8 KV heads of 128), 2 H100 SXMs a replica (the
fewest that hold FP8 weights and 16 conversations of 8,192 tokens), 2 GB/s network storage, a 10%-per-minute ramp,
16,384-token conversations, 1,024 GB of host memory, PCIe 5 x16 (63 GB/s, 2 us latency, 10 us fixed cost, 80% link
efficiency), 60% utilisation on a 700 W GPU (15% idle, 100% busy, a server of half the GPU's power, PUE 1.58). Every
expected value is the arithmetic in the comments, not output of the code under test; the one figure taken from the
replica model (a replica's throughput) is an input of the energy question, not its answer.
"""

from __future__ import annotations

import math

import pytest
from interview_bank import BANK  # the design questions' numbers kept per process (simulated fleets)

from llmcourse import Q_
from llmcourse.interview import QUESTIONS
from llmcourse.planner.design import Brief
from llmcourse.planner.disagg import compare
from llmcourse.replica.model import replica

#: Llama 3.1 70B's KV bytes per token in BF16: 2 (K and V) x 80 layers x 8 KV heads x 128 x 2 bytes = 327,680 B.
KV_PER_TOKEN = 2 * 80 * 8 * 128 * 2


def test_cold_start_load_times_by_hand() -> None:
    """Weights: 70.554e9 parameters x 2 B = 141.108 GB in BF16 -> / 2 GB/s = 70.554 s; FP8 (1 B): 35.277 s; FP8 on a
    12 GB/s local NVMe: 70.554 GB / 12 GB/s = 5.8795 s."""
    assert QUESTIONS["cs_load"].numbers()["load_s"].to("s").m == pytest.approx(70.554, rel=1e-6)
    assert QUESTIONS["cs_fp8"].numbers()["load_s"].to("s").m == pytest.approx(35.277, rel=1e-6)
    assert QUESTIONS["cs_local"].numbers()["load_s"].to("s").m == pytest.approx(5.8795, rel=1e-4)


def test_spare_capacity_during_a_cold_start_by_hand() -> None:
    """10% of capacity a minute x 70.554 s / 60 s a minute = 11.759% of the fleet spare."""
    assert QUESTIONS["cs_spare"].numbers()["extra_pct"] == pytest.approx(10 * 70.554 / 60, rel=1e-6)


def test_conversations_parked_in_host_memory_by_hand() -> None:
    """16,384 tokens x 327,680 B = 5.3687 GB; 1,024 GB / 5.3687 GB = 190.7 -> 190 whole conversations."""
    per_seq = 16_384 * KV_PER_TOKEN
    assert per_seq == 5_368_709_120
    assert QUESTIONS["ko_host"].numbers()["parked"] == math.floor(1_024e9 / per_seq) == 190


def test_kv_swap_over_pcie_by_hand() -> None:
    """2 us + 10 us + 5,368,709,120 B / (63 GB/s x 0.8 x 2 lanes, one PCIe link per GPU) = 12 us + 53.261 ms =
    53.273 ms."""
    expected_ms = (2e-6 + 10e-6 + 16_384 * KV_PER_TOKEN / (63e9 * 0.8 * 2)) * 1e3
    assert expected_ms == pytest.approx(53.273, abs=1e-3)
    assert QUESTIONS["ko_swap"].numbers()["swap_ms"].to("ms").m == pytest.approx(expected_ms, rel=1e-9)


def test_energy_per_million_tokens_by_hand() -> None:
    """GPU draw 700 W x (0.15 + 0.85 x 0.6) = 462 W; site per GPU (462 + 350) W x 1.58 = 1,282.96 W; two GPUs make X
    tokens/s at full load, 0.6 X on average: energy per million = 2 x 1,282.96 W x 1e6 / (0.6 X) J, / 3.6e6 J a kWh."""
    n = QUESTIONS["en_base"].numbers()
    rep = replica(
        "Llama-3.1-70B", "H100 SXM", tensor_parallel=2, prompt_tokens=2_000, answer_tokens=400, weight_bytes="fp8"
    )
    x = rep.throughput.to("1/s").m  # the replica's output tokens/s: an input here
    assert n["draw"].to("W").m == pytest.approx(462.0)
    assert n["site"].to("W").m == pytest.approx(1_282.96)
    kwh = 2 * 1_282.96 * 1e6 / (0.6 * x) / 3.6e6
    assert n["kwh"].to("kWh").m == pytest.approx(kwh, rel=1e-9)


def test_the_chains_of_this_file_state_what_moves() -> None:
    """Twelve chains of three: every follow-up names the figure it moves (the direction is checked for every variant in
    test_interview_practice.py)."""
    ours = (
        "queue",
        "router",
        "little",
        "disagg",
        "energy",
        "cold",
        "batch",
        "rel",
        "prefix",
        "offload",
        "goodput",
        "bench",
    )
    chains = QUESTIONS.chains()
    assert all(len(chains[c]) == 3 and all(q.moves for q in chains[c][1:]) for c in ours)


def test_the_design_answers_end_on_a_design_that_meets_its_targets() -> None:
    """At the book's givens replicas of two H100s cannot meet the code assistant's p99 first token (1.5 s): a prompt
    that never waits is already too slow at the p99; the planner already picks replicas of four (at its 25 ms a
    token two-GPU replicas run a batch of only 2, so four-GPU ones take fewer GPUs), where both designs meet the
    targets. The support assistant's replicas of four meet its 500 ms only nearly idle (a prompt that never waits is
    close to it at the p99): the percentile fleet is many times the mean's, and the answer moves to replicas of eight,
    which meet it on fewer GPUs. The strong answers end on a design that meets the targets, not on a fleet that misses
    them or one that idles."""
    code = BANK["design_code_disagg"].numbers()
    assert code["winner"] != "neither" and code["tp_final"] == code["tp"] == 4 and code["larger"] == ""
    assert code["agg_met"] == code["dis_met"] == "meets"
    pair = compare("Llama-3.1-70B", "H100 SXM", Brief(40, 8_000, 200, Q_(1_500, "ms"), Q_(25, "ms")), tensor_parallel=2,
                   weight_bytes="fp8")  # fmt: skip
    assert pair.winner == "neither"
    support = BANK["design_support_p99"].numbers()
    assert support["p99_verdict"] == "meets" and support["gpus_p99"] > 2 * support["mean_gpus"]
    assert support["design_tp"] > support["tp"] and support["gpus"] < support["gpus_p99"]
    assert "only nearly idle" in support["larger"] and "that is the design" in support["larger"]
    long = BANK["dg_long"].numbers()
    assert long["ttft"] > long["ttft_target"] and "cannot meet it" in long["ttft_note"]
    assert BANK["dg_pools"].numbers()["ttft_note"] == ""  # met: nothing to add
