"""Estimates of deployments that cannot exist are refused, each with a message naming the argument to change.

Hand arithmetic used below: Llama 3.1 405B holds 405.853e9 x 2 B = 812 GB of BF16 weights, far beyond one
L4's 24 GB; Llama 3.1 8B has 131,072 positions (its config's max_position_embeddings), so a 1,000,000-token
context is beyond it.
"""

from __future__ import annotations

import time

import numpy as np
import pint
import pytest

import llmcourse as lc
from llmcourse import Q_, catalog, simulator
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.formulas import FORMULAS
from llmcourse.planner import batching, levers, roofline

TOY = dict(name="toy", params=1e9, layers=16, hidden=2048, heads=16, kv_heads=4)


# --- weights that do not fit, contexts beyond the positions, degrees beyond any domain -------------------------
def test_decode_step_refuses_weights_beyond_the_gpus_memory():
    """812 GB of weights on one 24 GB L4: refused, naming n_gpus and how many GPUs would hold them."""
    with pytest.raises(InputError, match=r"do not fit in the 24.0 GB of one L4: give n_gpus="):
        lc.decode_step("Llama-3.1-405B", "L4", batch=8, context_tokens=2_000)


def test_prefill_refuses_weights_beyond_the_gpus_memory():
    """The prefill of a replica that cannot exist has no time."""
    with pytest.raises(InputError, match="do not fit"):
        lc.prefill("Llama-3.1-405B", "L4", 2_000)


def test_request_cycle_refuses_weights_beyond_the_gpus_memory():
    """request_cycle names its own argument, n_gpus."""
    with pytest.raises(InputError, match="give n_gpus="):
        lc.request_cycle("Llama-3.1-405B", "L4", batch=8, prompt_tokens=2_000, answer_tokens=100)


def test_fleet_refuses_a_replica_that_does_not_fit():
    """A fleet of replicas whose weights do not fit is not sized."""
    r = lc.replica("Llama-3.1-405B", "L4", batch=8, context_tokens=2_000, assumptions="envelope")
    assert not r.fits
    with pytest.raises(InputError, match="do not fit"):
        lc.fleet(Q_(1_000, "1/s"), r)


def test_context_beyond_the_models_positions_is_refused():
    """A 1,000,000-token context on Llama 3.1 8B (131,072 positions) is refused by the estimates."""
    with pytest.raises(InputError, match=r"beyond the 131,072 positions of Llama-3.1-8B"):
        lc.decode_step("Llama-3.1-8B", "H200 SXM", context_tokens=1_000_000)
    with pytest.raises(InputError, match=r"prompt_tokens .* beyond"):
        lc.prefill("Llama-3.1-8B", "H200 SXM", 1_000_000)


def test_memory_arithmetic_answers_for_any_length():
    """The KV cache of a length beyond the positions is still arithmetic (the lab's 32k table on Llama 2 7B):
    2 x 32 layers x 32 KV heads x 128 x 2 B = 512 KiB per token, x 33,280 tokens."""
    kv = lc.kv_bytes_per_sequence("Llama-2-7B", 33_280)
    assert kv.to("B").m == pytest.approx(524_288 * 33_280)


@pytest.mark.parametrize("context", [1e-12, 0.5, 0])
def test_context_under_one_token_is_refused(context):
    """max_batch(..., 1e-12) no longer returns 4 x 10^17 conversations."""
    with pytest.raises(InputError, match="context_tokens must be"):
        lc.max_batch("Llama-3.1-8B", "H100 SXM", context)


def test_absurd_tensor_parallel_degree_is_refused():
    """Past 1,024 GPUs (the link catalog's largest domain) a degree is refused, the bound stated."""
    with pytest.raises(InputError, match=r"tensor_parallel must be at most 1024 GPUs \(the largest domain"):
        lc.replica("Llama-3.1-8B", "H100 SXM", tensor_parallel=1e20, context_tokens=2_000, assumptions="envelope")


def test_cli_refuses_an_absurd_degree(capsys):
    """python -m llmcourse plan --tp 4096 exits 2 with the bound in the message."""
    from llmcourse.__main__ import main

    argv = ["plan", "--model", "Llama-3.1-8B", "--gpu", "H100 SXM", "--rps", "10", "--prompt", "2000"]
    argv += ["--answer", "300", "--ttft-ms", "1000", "--tpot-ms", "50", "--tp", "4096"]
    assert main(argv) == 2
    assert "at most 1024" in capsys.readouterr().err


# --- impossible model shapes -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("experts", "k"), [(8, 8), (4, 8)])
def test_experts_per_token_must_be_fewer_than_experts(experts, k):
    """experts_per_token >= experts is refused when the Model is built, so no MoE function divides by zero."""
    with pytest.raises(InputError, match=r"experts_per_token .* must be fewer than experts"):
        catalog.Model(**TOY, experts=experts, experts_per_token=k)


def test_window_layers_beyond_the_layer_count_are_refused():
    """sliding_window_layers > layers fails at build, not later with a negative context."""
    with pytest.raises(InputError, match=r"sliding_window_layers \(17\) cannot exceed layers \(16\)"):
        catalog.Model(**TOY, sliding_window=4_096, sliding_window_layers=17)


def test_hf_config_without_sliding_window_has_no_window():
    """use_sliding_window: false (Qwen2's configs) means every layer caches the whole context: with a
    128-token window ignored, 28 layers x 4 KV heads x 128 x 2 x 2 B = 57,344 B per token x 8,192 tokens."""
    cfg = {
        "num_hidden_layers": 28,
        "hidden_size": 3584,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "intermediate_size": 18944,
        "vocab_size": 152064,
        "use_sliding_window": False,
        "sliding_window": 128,
        "max_window_layers": 28,
    }
    m = catalog.Model.from_hf_config(cfg, name="Qwen2-like")
    assert m.sliding_window is None and m.sliding_window_layers is None
    assert lc.kv_bytes_per_sequence(m, 8_192).to("B").m == 57_344 * 8_192


def test_quantity_of_another_registry_is_read_by_its_unit():
    """A Brief given another pint registry's quantities is read by unit name, and plan() then works."""
    other = pint.UnitRegistry()
    b = lc.Brief(other.Quantity(5, "1/s"), 1_000, 200, other.Quantity(2, "s"), other.Quantity(80, "ms"))
    assert b.tpot_target == Q_(80, "ms")
    assert lc.plan("Llama-3.1-8B", "H100 SXM", b).fits


# --- plausible input that crashed ----------------------------------------------------------------------------------
def test_compute_precision_none_uses_the_assumptions():
    """compute_precision=None is the default rule, not an AttributeError; a non-name is refused."""
    assert lc.decode_step("Llama-3.1-8B", "H100 SXM", context_tokens=2_000, compute_precision=None).step_time.m > 0
    with pytest.raises(InputError, match="compute precision must be a name"):
        lc.decode_step("Llama-3.1-8B", "H100 SXM", context_tokens=2_000, compute_precision=8)


def test_numbers_as_text_are_refused_with_the_number_to_pass():
    """rank_levers(hit_rate="0.5") and prefill_point(..., "2048") say to pass the number."""
    brief = lc.Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms"))
    with pytest.raises(InputError, match=r"pass hit_rate=0.5, not hit_rate='0.5'"):
        levers.rank_levers("Llama-3.1-8B", "H100 SXM", brief, hit_rate="0.5")
    with pytest.raises(InputError, match=r"pass prompt_tokens=2048"):
        roofline.prefill_point("Llama-3.1-8B", "H100 SXM", "2048")


def test_closed_form_refuses_empty_requests():
    """closed_form(rep, rate, 0, 0) is refused (it divided by zero)."""
    rep = simulator.build_replica("Llama-3.1-8B", "H100 SXM", prompt_tokens=1_000, answer_tokens=200, batch_cap=16)
    with pytest.raises(InputError, match="prompt_tokens must be greater than zero"):
        simulator.closed_form(rep, Q_(1, "1/s"), 0, 0)


def test_unknown_formula_gets_did_you_mean():
    """FORMULAS["kv_bytes_per_tokn"] is an UnknownNameError with the close names, not a bare KeyError."""
    with pytest.raises(UnknownNameError, match="Did you mean 'kv_bytes_per_token'"):
        FORMULAS["kv_bytes_per_tokn"]


@pytest.mark.parametrize("value", ["False", "True", 1, 0, "yes"])
def test_a_flag_is_a_bool(value):
    """attention_flops="False" no longer turns attention on: text and numbers are refused as flags."""
    with pytest.raises(InputError, match="attention_flops is a flag"):
        lc.decode_step("Llama-3.1-8B", "H100 SXM", context_tokens=2_000, attention_flops=value)


def test_numpy_bool_is_a_flag_and_not_a_number():
    """numpy.bool_ is accepted as a flag (as bool) and refused as a number (as bool is)."""
    on = lc.decode_step("Llama-3.1-8B", "H100 SXM", context_tokens=2_000, attention_flops=np.True_)
    plain = lc.decode_step("Llama-3.1-8B", "H100 SXM", context_tokens=2_000, attention_flops=True)
    assert on.flops == plain.flops
    with pytest.raises(InputError, match="batch is a number, not a flag"):
        lc.decode_step("Llama-3.1-8B", "H100 SXM", batch=np.True_, context_tokens=2_000)


def test_static_batch_utilisation_of_a_large_batch():
    """static_batch_utilisation(2048, 8192) comes back (it took about 10 s) near 1/2: with 2,048 answers the
    longest is almost 8,192 steps, E[L] = 4,096.5."""
    start = time.perf_counter()
    u = float(batching.static_batch_utilisation(2_048, 8_192))
    print(f"static_batch_utilisation(2048, 8192) in {time.perf_counter() - start:.3f} s")
    assert u == pytest.approx(4_096.5 / 8_192, rel=1e-3)


def test_exact_and_float_sums_agree_at_the_boundary():
    """Either side of the exact-arithmetic limit (n x N = 2^20) the two sums agree to 1e-12."""
    exact = float(batching.expected_max_length(1_024, 1_024))
    approx = float(batching.expected_max_length(1_025, 1_024))
    assert approx > exact and approx - exact < 1e-3  # one more answer barely moves the longest of 1,024


def test_one_token_answers_have_no_time_per_token():
    """simulate(answer_tokens=1, answer_cv=0) is refused instead of returning NaN percentiles."""
    with pytest.raises(InputError, match="no request has a time per output token"):
        simulator.simulate(
            "Llama-3.1-8B", "H100 SXM", rate=Q_(1, "1/s"), prompt_tokens=500, answer_tokens=1, answer_cv=0, requests=50
        )


def test_simulation_sizes_are_bounded():
    """A simulation too large to finish in seconds is refused, the bound stated."""
    with pytest.raises(InputError, match="at most 10,000,000 draws"):
        batching.simulate_static_batch(100_000, 512, trials=2_000)
    with pytest.raises(InputError, match="requests must be at most 1e\\+06"):
        simulator.simulate(
            "Llama-3.1-8B", "H100 SXM", rate=Q_(1, "1/s"), prompt_tokens=500, answer_tokens=50, requests=10**7
        )
