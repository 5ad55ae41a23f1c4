"""llama.cpp's public rows and the fit of its kernels' shares (llmcourse.validation.llama_cpp).

Expected values are derived by hand in each test (the arithmetic in comments) or read from the CSV's sources."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

import llmcourse as lc
from llmcourse.assumptions import for_engine, resolve
from llmcourse.bands import llama_cpp_band_scope, shipped_llama_cpp_bands
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.planner.own_machine import no_margin, own_machine
from llmcourse.replica.model import replica
from llmcourse.validation import llama_cpp as llc

HEADER = "id,gpu,model,gguf,test,t_s,machine,model_as_run,source,date,build,note\n"


def test_the_csv_loads_and_every_row_has_a_source():
    rows = llc.public_rows()
    assert len(rows) >= 40
    assert all(r.source.startswith("https://") for r in rows)
    assert len({r.id for r in rows}) == len(rows)
    machines = {r.gpu for r in rows}
    assert len(machines) >= 6 and len({r.gguf for r in rows}) >= 2
    assert {"M3 Max", "M2 Ultra"} <= machines and {"RTX 4090", "RTX 3090"} <= machines  # Apple and NVIDIA consumer
    # a row read back as its source prints it: the README's LLaMA 3 table, 4090 24GB, 8B Q4_K_M, tg 512 = 130.58
    r = next(r for r in rows if r.gpu == "RTX 4090" and r.gguf == "q4_k_m" and r.test == "tg512")
    assert r.tokens_per_s == 130.58 and r.kind == "decode" and r.tokens == 512
    assert "XiongjieDai/GPU-Benchmarks-on-LLM-Inference" in r.source


def test_bad_rows_are_refused_naming_the_field():
    with pytest.raises(InputError, match="source must be the URL"):
        llc.public_rows(HEADER + "x,RTX 4090,Llama-3.1-8B,q4_k_m,tg128,100,,,,,,\n")
    with pytest.raises(InputError, match="test must be llama-bench's name"):
        llc.public_rows(HEADER + "x,RTX 4090,Llama-3.1-8B,q4_k_m,pg128,100,,,https://a.b,,,\n")
    with pytest.raises(InputError, match="t_s must be above 0"):
        llc.public_rows(HEADER + "x,RTX 4090,Llama-3.1-8B,q4_k_m,tg128,0,,,https://a.b,,,\n")
    with pytest.raises(UnknownNameError, match="did you mean"):
        llc.public_rows(HEADER + "x,RTX 4090,Llama-3.1-8B,q4_km,tg128,100,,,https://a.b,,,\n")
    with pytest.raises(InputError, match="llama_cpp_bandwidth_efficiency"):
        resolve().replace(llama_cpp_bandwidth_efficiency=1.5)
    with pytest.raises(InputError, match="llama_cpp_step_overhead_ms"):
        resolve().replace(llama_cpp_step_overhead_ms=-1.0)


def test_the_sources_presets_and_other_engines_keep_their_factors():
    for name in ("envelope", "lab", "capacity", "planner"):
        a = resolve(name)
        assert for_engine(a, "llama.cpp") is a  # no llama_cpp_* value set: llama.cpp runs as every engine
    course = resolve("course")
    assert for_engine(course, "vLLM") is course and for_engine(course, "SGLang") is course
    got = for_engine(course, "llama.cpp")
    assert (got.bandwidth_efficiency, got.four_bit_bandwidth_factor) == (0.84, 0.82)
    assert (got.compute_efficiency, got.step_overhead_ms) == (0.81, 0.5)


def _kv_bytes_per_token(m) -> float:
    return 2 * m.layers * m.kv_heads * m.head_dim * 2  # K and V, 2 bytes each (F16 cache)


def test_a_decode_row_by_hand():
    # RTX 4090, Llama-3.1-8B in F16, tg512: the weights (2 bytes each) and the KV of 256 tokens on average, over
    # 1,008 GB/s x 0.84, plus 0.5 ms
    m = lc.models["Llama-3.1-8B"]
    row = next(r for r in llc.public_rows() if r.gpu == "RTX 4090" and r.gguf == "fp16" and r.test == "tg512")
    seconds = (m.params * 2 + 256 * _kv_bytes_per_token(m)) / (1.008e12 * 0.84) + 0.5e-3
    assert llc.predicted(row) == pytest.approx(1 / seconds, rel=1e-6)
    # the same with Q4_K_M (4.89 bits a weight): its weights at 0.84 x 0.82 of the bandwidth, its F16 KV at 0.84
    row4 = next(r for r in llc.public_rows() if r.gpu == "RTX 4090" and r.gguf == "q4_k_m" and r.test == "tg512")
    seconds4 = (
        m.params * 4.89 / 8 / (1.008e12 * 0.84 * 0.82) + 256 * _kv_bytes_per_token(m) / (1.008e12 * 0.84) + 0.5e-3
    )
    assert llc.predicted(row4) == pytest.approx(1 / seconds4, rel=1e-6)
    # a replica of engine llama.cpp decodes at the same share: one sequence at a context of 1 + 512 / 2 = 257
    rep = replica(m, "RTX 4090", batch=1, prompt_tokens=1, answer_tokens=512, weight_bytes="fp16", engine="llama.cpp")
    by_hand = (m.params * 2 + 257 * _kv_bytes_per_token(m)) / (1.008e12 * 0.84) + 0.5e-3
    assert rep.step.step_time.to("s").m == pytest.approx(by_hand, rel=1e-6)


def test_a_prompt_row_by_hand():
    # M3 Max, Llama-3.1-8B in F16, pp512: 2 FLOPs per parameter per token at 14.3 TFLOP/s x 0.81; the causal
    # attention term of 512 tokens adds under 1% (4 x 32 layers x 512^2 / 2 x 4,096 = 6.9e10 of 8.2e12 FLOPs)
    m = lc.models["Llama-3.1-8B"]
    row = next(r for r in llc.public_rows() if r.gpu == "M3 Max" and r.gguf == "fp16" and r.test == "pp512")
    seconds = 2 * m.params * 512 / (14.3e12 * 0.81)
    assert llc.predicted(row) == pytest.approx(512 / seconds, rel=0.02)
    assert llc.predicted(row) < 512 / seconds  # the attention term only adds time


def _synthetic(share16: float, share4: float, overhead_ms: float, compute: float) -> list[llc.PublicRow]:
    """Rows measured exactly as a machine with these shares would run them, each computed by hand."""
    rows = []
    for k, (gpu, bandwidth, peak) in enumerate((("RTX 4090", 1.008e12, 165e12), ("M2 Ultra", 0.8e12, 27.2e12))):
        for model in ("Llama-3.1-8B", "Llama-3.1-70B"):
            m = lc.models[model]
            for gguf, bits, share in (("fp16", 16, share16), ("q4_k_m", 4.89, share4)):
                if gpu == "RTX 4090" and model == "Llama-3.1-70B":
                    continue  # 70B does not fit in 24 GB
                t = (m.params * bits / 8 + 64 * _kv_bytes_per_token(m)) / (bandwidth * share) + overhead_ms / 1e3
                rows.append(
                    llc.PublicRow(f"d{k}{model}{gguf}", gpu, model, gguf, "tg128", 1 / t, "", "", "", "", "", "")
                )
                pp = 512 / (2 * m.params * 512 / (peak * compute))  # the attention term left out: under 1%
                rows.append(llc.PublicRow(f"p{k}{model}{gguf}", gpu, model, gguf, "pp512", pp, "", "", "", "", "", ""))
    return rows


def test_the_fit_recovers_the_shares_of_rows_made_by_hand():
    rows = _synthetic(0.9, 0.6, 0.75, 0.7)
    f = llc.fit_llama_cpp(rows)
    assert (f.bandwidth_efficiency, f.four_bit_share, f.step_overhead_ms) == (0.9, 0.6, 0.75)
    assert f.four_bit_bandwidth_factor == pytest.approx(0.6 / 0.9)
    # the rows leave out the attention term (under 1% of the FLOPs), so they run a little faster than the package
    # at 0.7 predicts: a share up to 0.01 higher
    assert f.compute_efficiency in (0.7, 0.71)
    assert f.decode_rms_log < 1e-3
    h = llc.held_out(rows)
    assert h["decode"].machines == 2 and h["decode"].stats.median_factor < 1.001  # every machine alike
    assert h["decode"].stats.within_2x == 1.0 and h["prefill"].stats.median_factor < 1.02


def test_the_course_holds_the_fit_of_the_public_rows_and_its_held_out_error():
    f = llc.fit_llama_cpp()
    course = resolve("course")
    assert course.llama_cpp_bandwidth_efficiency == f.bandwidth_efficiency
    assert abs(course.llama_cpp_four_bit_bandwidth_factor - f.four_bit_bandwidth_factor) < 0.005  # 2 decimals
    assert course.llama_cpp_compute_efficiency == f.compute_efficiency
    assert course.llama_cpp_step_overhead_ms == f.step_overhead_ms
    h = llc.held_out()
    for kind in ("decode", "prefill"):
        s = h[kind]
        assert s.machines >= 6 and s.stats.n == sum(r.kind == kind for r in llc.public_rows())
        assert math.isfinite(s.stats.median_factor) and 0 <= s.stats.within_2x <= 1
        assert s.band[0] < 1 < s.band[1] and 0 <= s.coverage <= 1
        # the targets for rows kept aside: a median factor of 1.3 at most, 90% within 2x
        assert s.stats.median_factor <= 1.3 and s.stats.within_2x >= 0.9


def test_the_datacenter_factors_are_what_general_gives():
    a = llc.general("course")
    kernels = [f.name for f in dataclasses.fields(a) if f.name.startswith("llama_cpp_")]
    for n in llc.MEMORY_FIELDS:  # the memory llama.cpp keeps is no fitted factor: kept
        kernels.remove(n)
    assert all(getattr(a, n) is None for n in kernels)
    assert (a.llama_cpp_fit_margin_gib, a.llama_cpp_compute_buffer_gib, a.cuda_context_gib) == (1.0, 0.25, 0.5)
    assert for_engine(a, "llama.cpp") is a
    row = llc.public_rows()[0]  # RTX 3070, Llama-3.1-8B Q4_K_M, tg512: weights at 0.7 x 0.6 of 448 GB/s, KV at 0.7
    m = lc.models["Llama-3.1-8B"]
    fixed = 1e-3 + 32 * 23e-6  # the datacenter engines' 1 ms and 32 layers' floor (llama.cpp's own floor is 0)
    seconds = m.params * 4.89 / 8 / (0.448e12 * 0.7 * 0.6) + 256 * _kv_bytes_per_token(m) / (0.448e12 * 0.7) + fixed
    assert llc.predicted(row, a) == pytest.approx(1 / seconds, rel=1e-6)


def test_a_measured_llama_bench_row_splits_at_llama_cpps_own_shares():
    import llmcourse.validation as lcv
    from llmcourse.validation.prediction import load_components, predict

    text = (
        '[{"model_filename": "Llama-3.1-8B-F16.gguf", "model_type": "llama 8B F16", "gpu_info": "NVIDIA GeForce '
        'RTX 4090", "n_prompt": 0, "n_gen": 128, "avg_ts": 55.0}]'
    )
    row = lcv.parse_measurements(text, gpu="RTX 4090").rows[0]
    assert (row.model, row.weights) == ("Llama-3.1-8B", "fp16")  # F16 from the file name and the model type
    a = resolve("course")
    tpot = load_components(row).times(a.bandwidth_efficiency, a.compute_efficiency, a.step_overhead_ms)[0]
    assert tpot == pytest.approx(predict(row).value, rel=1e-9)  # the fast path agrees with the replica model
    # by hand: one sequence reading the F16 weights and the KV of its context (1 + 128 / 2 = 65 tokens) at
    # 1,008 GB/s x 0.84, plus 0.5 ms (llama.cpp's own values, not the general 0.7 and 1 ms)
    m = lc.models["Llama-3.1-8B"]
    by_hand = ((m.params * 2 + 65 * _kv_bytes_per_token(m)) / (1.008e12 * 0.84) + 0.5e-3) * 1e3
    assert tpot == pytest.approx(by_hand, rel=1e-3)


def test_your_own_llama_bench_file_becomes_rows_to_fit():
    import llmcourse.validation as lcv

    text = (
        '[{"model_filename": "Llama-3.1-8B-Q4_K_M.gguf", "n_prompt": 0, "n_gen": 128, "avg_ts": 50.0},'
        ' {"model_filename": "Llama-3.1-8B-Q4_K_M.gguf", "n_prompt": 512, "n_gen": 0, "avg_ts": 640.0},'
        ' {"model_filename": "Llama-3.1-8B-Q4_K_M.gguf", "n_prompt": 0, "n_gen": 128, "n_depth": 4096, "avg_ts": 40.0}]'
    )
    rows = llc.from_llama_bench(lcv.parse_measurements(text, gpu="M3 Max").rows)
    # tg 128 at 50 t/s (20 ms a token) and pp 512 at 640 t/s (800 ms for the prompt); the test at a depth left out
    assert [(r.test, r.kind, r.tokens_per_s) for r in rows] == [("tg128", "decode", 50.0), ("pp512", "prefill", 640.0)]
    assert {r.gpu for r in rows} == {"M3 Max"} and {r.gguf for r in rows} == {"q4_k_m"}


def test_each_machine_is_the_chip_variant_it_ran_on():
    gbs = {n: lc.gpus[n].bandwidth.to("GB/s").m for n in ("M1 8GB", "M1 Max", "M2 Ultra", "M4", "RTX 4080")}
    assert gbs["M1 8GB"] == pytest.approx(4266e6 * 16 / 1e9, rel=1e-3)  # LPDDR4X-4266 on 128 bits: 68.25 GB/s
    assert (gbs["M1 Max"], gbs["M2 Ultra"], gbs["M4"]) == pytest.approx((400, 800, 120))  # Apple's figures
    assert gbs["RTX 4080"] == pytest.approx(22.4 * 256 / 8)  # 22.4 Gbps GDDR6X on 256 bits
    # the nameplate's 16 GB, as every GeForce row; llama.cpp reads it as 16 GiB = 17.18 GB and keeps 0.5 (CUDA
    # context) + 0.25 (compute buffers) + 1 (--fit margin) = 1.75 GiB of it: 14.25 GiB
    assert lc.gpus["RTX 4080"].memory.to("GB").m == 16
    assert lc.usable_memory("RTX 4080", engine="llama.cpp").to("B").m == pytest.approx(14.25 * 2**30)
    rows = llc.public_rows()
    assert {r.gpu for r in rows if "M1 Max 32-Core" in r.machine} == {"M1 Max"}
    assert {r.gpu for r in rows if "M3 Max 40-Core" in r.machine} == {"M3 Max"}  # the 400 GB/s variant


def _fits(r: llc.PublicRow, a: object = None) -> bool:
    """The row's model and weights on its machine, one sequence at the row's own context, under engine llama.cpp."""
    return replica(
        r.model, r.gpu, batch=1, prompt_tokens=r.tokens - 1, answer_tokens=1, weight_bytes=r.gguf, assumptions=a,
        engine="llama.cpp",
    ).fits  # fmt: skip


def test_every_public_row_fits_its_machine_at_its_own_context():
    """llama-bench runs a test at a context of its prompt plus its answer (n_ctx = n_prompt + n_gen): 512 tokens for
    pp512 and tg512. The machine's memory is read as llama.cpp reads it, in GiB, less 0.5 GiB of CUDA context (none
    on a Mac), 0.25 GiB of compute buffers and the 1 GiB margin its --fit leaves. Rows the 0.9 share of decimal GB
    refused fit so: Llama-3.1-70B Q4_K_M on the 64 GB M1 Max and M3 Max (48 - 1.25 = 46.75 GiB = 50.20e9 B against
    43.13e9 B of weights + 512 x 327,680 B = 0.17e9 B of KV) and Llama-3.1-70B F16 on the 192 GB M2 Ultra (0.75 x 192
    = 144 GiB, 142.75 GiB = 153.3e9 B against 141.1e9 B + 0.17e9 B).

    Every row ran, so every row is "fits" or "inside margin". llama-bench runs no --fit, so four rows ran inside
    llama.cpp's margin (the verdict "inside margin": --fit off):
    - the 8 GB M1 (rows 21, 22): 0.667 x 8 GiB = 5.336 GiB; Llama-3.1-8B in Q4_K_M is 8.03e9 x 4.89 / 8 = 4.908e9 B =
      4.571 GiB, plus 512 x 131,072 B = 0.0625 GiB of KV: 4.634 GiB, over 5.336 - 1.25 = 4.086 GiB and within
      5.336 - 0.25 = 5.086 GiB.
    - the RTX 4080 with F16 weights (rows 11, 12): 8.03e9 x 2 = 16.06e9 B = 14.957 GiB, plus 0.0625 GiB: 15.020 GiB,
      over 16 - 0.5 - 0.25 - 1 = 14.25 GiB and within 16 - 0.5 - 0.25 = 15.25 GiB. These rows bound the headless
      CUDA context: they ran (RunPod, CUDA 12.1, 2024), so it took at most 16 - 0.25 - 15.020 = 0.73 GiB; at the
      0.9 GiB of the 4090 and 5090 logs (a display's share among it) they could not have: checked below.
    """
    rows = llc.public_rows()
    course = resolve("course")
    hard = no_margin(course)
    assert [r.id for r in rows if not _fits(r)] == ["llamacpp-11", "llamacpp-12", "llamacpp-21", "llamacpp-22"]
    assert all(_fits(r, hard) for r in rows)
    verdicts = {r.id: own_machine(r.model, r.gpu, r.gguf, context=r.tokens).verdict for r in rows}
    inside = {"llamacpp-11", "llamacpp-12", "llamacpp-21", "llamacpp-22"}
    assert {i for i, v in verdicts.items() if v != "fits"} == inside
    assert {verdicts[i] for i in inside} == {"inside margin"}
    # a context of 0.75 GiB leaves 16 - 0.75 - 0.25 = 15.0 GiB < 15.020 GiB: the 4080's F16 rows need less than that
    assert _fits(rows[11], no_margin(course.replace(cuda_context_gib=0.7)))
    assert not _fits(rows[11], no_margin(course.replace(cuda_context_gib=0.75)))
    assert not _fits(rows[11], no_margin(course.replace(cuda_context_gib=0.9)))
    # the 70B rows the 0.9 share of decimal GB refused (0.9 x 48 = 43.2e9 B against 43.13e9 + 0.17e9; 0.9 x 144 =
    # 129.6e9 B against 141.1e9), each by hand as above
    big = {r.id for r in rows if r.model == "Llama-3.1-70B" and (r.gpu != "M2 Ultra" or r.gguf == "fp16")}
    assert big == {"llamacpp-27", "llamacpp-28", "llamacpp-35", "llamacpp-36", "llamacpp-41", "llamacpp-42"}
    usable = {g: lc.usable_memory(g, engine="llama.cpp").to("B").m for g in ("M3 Max", "M2 Ultra")}
    assert usable == pytest.approx({"M3 Max": 46.75 * 2**30, "M2 Ultra": 142.75 * 2**30})
    assert usable["M3 Max"] > 43.13e9 + 512 * 327_680 and usable["M2 Ultra"] > 141.1e9 + 512 * 327_680
    before = course.replace(memory_rule="total")  # vLLM's 0.9 of the datasheet GB
    assert not any(_fits(r, before) for r in rows if r.id in big)


def test_the_shipped_bands_are_the_held_out_bands():
    """llmcourse/data/llama_cpp_bands.json is what scripts/make_llama_cpp_bands.py writes from the public rows (a
    stale table fails here, as the chapter's check does)."""
    from llmcourse.bands import shipped_llama_cpp_bands
    from llmcourse.validation.llama_cpp import llama_cpp_band_table

    assert shipped_llama_cpp_bands() == llama_cpp_band_table()


def test_an_answer_for_ones_machine_carries_the_llama_cpp_bands_by_hand():
    """The typing speed times the decode band's ends (measured / predicted tokens per second); the first token's
    time divided by the prompt band's ends (a faster prompt is a shorter wait). Numbers read off the shipped table."""
    import json
    from importlib import resources

    from llmcourse.planner.own_machine import own_machine

    kinds = json.loads(resources.files("llmcourse.data").joinpath("llama_cpp_bands.json").read_text())["kinds"]
    m = own_machine("Gemma-3-27B", "RTX 5090", "q4_k_m")
    tg, pp = kinds["decode"], kinds["prefill"]
    assert m.tokens_per_s_band() == pytest.approx((m.tokens_per_s * tg["low"], m.tokens_per_s * tg["high"]))
    assert m.first_token_band_s() == pytest.approx((m.first_token_s / pp["high"], m.first_token_s / pp["low"]))
    rows = dict(m.rows())
    assert f"{m.tokens_per_s * tg['low']:,.1f} to" in rows["typing speed, 80% band"]
    assert f"{tg['machines']} machines" in rows["typing speed, 80% band"]
    unfit = own_machine("Llama-3.1-70B", "M1 8GB", "q4_k_m", context=512)
    assert "typing speed, 80% band" not in dict(unfit.rows())


def test_a_plan_under_llama_cpp_draws_its_bands_from_llama_cpps_runs():
    """A plan under llama.cpp shows llama.cpp's bands (its own kernels, one sequence), not the datacenter engines'
    families: the time per token over the decode band's ends, the first token over the prompt band's ends."""
    import json
    from importlib import resources

    from llmcourse.planner.design import Brief, plan
    from llmcourse.units import Q_

    kinds = json.loads(resources.files("llmcourse.data").joinpath("llama_cpp_bands.json").read_text())["kinds"]
    brief = Brief(0.5, 3_000, 500, Q_(5_000, "ms"), Q_(200, "ms"))
    p = plan(
        "Gemma-3-27B", "RTX 5090", brief, weight_bytes="q8_0", engine="llama.cpp", price_per_hour=Q_(0.5, "USD/hour")
    )
    rows = dict(p.rows())
    tpot = p.tpot.to("ms").m
    lo, hi = tpot / kinds["decode"]["high"], tpot / kinds["decode"]["low"]
    assert f"80% band {lo:.0f} to {hi:.0f} ms" in rows["time per token, 80% band"], rows["time per token, 80% band"]
    assert "llama-bench" in rows["first token, 80% band"] and "Hopper" not in rows["first token, 80% band"]


def test_a_band_is_drawn_only_where_the_runs_reach():
    """No band under another method than the one the runs were measured against, nor where the KV cache is over a
    quarter of what the conversation holds (the runs were at 512 tokens or fewer); the answer says why."""
    import math

    from llmcourse.planner.own_machine import BAND_KV_SHARE, own_machine

    lab = own_machine("Llama-3.1-8B", "RTX 4090", "q4_k_m", assumptions="envelope")
    assert lab.fits and all(math.isnan(x) for x in lab.tokens_per_s_band())
    assert "not 'envelope'" in dict(lab.rows())["typing speed, 80% band"]
    long = own_machine("Llama-3.1-8B", "M3 Max", "q4_k_m", context=131_072)
    kv, w = long.kv_bytes.to("B").m, long.weight_bytes.to("B").m
    assert long.fits and kv > BAND_KV_SHARE * (kv + w)
    assert all(math.isnan(x) for x in long.first_token_band_s())
    assert "short contexts" in dict(long.rows())["first token, 80% band"]
    short = own_machine("Llama-3.1-8B", "M3 Max", "q4_k_m", context=4_096)
    assert short.banded() and short.tokens_per_s_band()[0] < short.tokens_per_s < short.tokens_per_s_band()[1]


def _with(fit: llc.LlamaCppFit):
    """The course's assumptions with llama.cpp's shares of ``fit``."""
    return resolve("course").replace(
        llama_cpp_bandwidth_efficiency=fit.bandwidth_efficiency,
        llama_cpp_four_bit_bandwidth_factor=fit.four_bit_bandwidth_factor,
        llama_cpp_step_overhead_ms=fit.step_overhead_ms,
        llama_cpp_compute_efficiency=fit.compute_efficiency,
    )


def _ranks(xs: list[float]) -> tuple[float, float]:
    """An 80% band by hand: of n values, the floor(0.1 (n + 1))-th and the ceil(0.9 (n + 1))-th smallest."""
    xs, n = sorted(xs), len(xs)
    return xs[math.floor(0.1 * (n + 1)) - 1], xs[math.ceil(0.9 * (n + 1)) - 1]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["decode", "prefill"])
def test_the_shipped_band_is_drawn_from_rows_held_out_and_its_coverage_one_level_down(kind: str) -> None:
    """The shipped band, recomputed through the public functions: each row predicted by a fit without its machine,
    the band by rank (24 rows: the 2nd and the 23rd); wider than the same band of the ratios the fit on every row
    gives. Its coverage: each machine's rows against the band of the other machines' rows, each predicted by a fit
    that saw neither machine."""
    rows = llc.public_rows()
    mine = [r for r in rows if r.kind == kind]
    machines = sorted({r.gpu for r in rows})
    without = {g: _with(llc.fit_llama_cpp([r for r in rows if r.gpu != g])) for g in machines}
    held = [r.tokens_per_s / llc.predicted(r, without[r.gpu]) for r in mine]
    seen = [r.tokens_per_s / llc.predicted(r, resolve("course")) for r in mine]  # the course holds the fit on all
    band = shipped_llama_cpp_bands()["kinds"][kind]
    assert (band["low"], band["high"]) == pytest.approx(
        _ranks(held), rel=5e-3
    )  # predicted() within 0.2% of the fit's own
    assert band["low"] < _ranks(seen)[0] and band["high"] > _ranks(seen)[1]
    inside = 0
    for g in {r.gpu for r in mine}:
        others = [
            q.tokens_per_s / llc.predicted(q, _with(llc.fit_llama_cpp([r for r in rows if r.gpu not in (g, q.gpu)])))
            for q in mine
            if q.gpu != g
        ]
        lo, hi = _ranks(others)
        inside += sum(lo <= r.tokens_per_s / llc.predicted(r, without[g]) <= hi for r in mine if r.gpu == g)
    assert band["coverage"] == pytest.approx(inside / len(mine), abs=1e-4)


def test_with_two_machines_the_coverage_is_not_measured_and_says_so() -> None:
    """A band's coverage needs a third machine (each fold's band comes from machines held out in turn): with two, the
    table holds None (strict JSON, no NaN) and the band's label says it was not measured."""
    two = [r for r in llc.public_rows() if r.gpu in ("RTX 4090", "M2 Ultra")]
    table = llc.llama_cpp_band_table(two)
    json.dumps(table, allow_nan=False)
    assert all(k["coverage"] is None for k in table["kinds"].values())
    band = {**table["kinds"]["decode"], **{k: table[k] for k in ("method", "models", "weights", "gpus")}}
    assert "coverage not measured (fewer than three machines)" in llama_cpp_band_scope(band)


def test_the_table_scripts_report_says_when_coverage_is_not_measured():
    """scripts/make_llama_cpp_bands.py prints each kind's band and its coverage; a coverage of None (rows from fewer
    than three machines) reads "not measured", where formatting it as a share would fail."""
    import importlib.util
    import sys
    from pathlib import Path

    scripts = Path(__file__).resolve().parent.parent / "scripts"
    sys.path.insert(0, str(scripts))  # the script imports its neighbour shipped_table
    try:
        spec = importlib.util.spec_from_file_location("make_llama_cpp_bands", scripts / "make_llama_cpp_bands.py")
        script = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(script)
    finally:
        sys.path.remove(str(scripts))
    kind = {"rows": 8, "machines": 2, "low": 0.7, "high": 1.3, "median_held_out": 1.1, "coverage": None}
    (line,) = script._report({"kinds": {"decode": kind}})
    assert line.endswith("band coverage not measured (fewer than three machines)")
    (line,) = script._report({"kinds": {"decode": {**kind, "machines": 12, "coverage": 0.875}}})
    assert line.endswith("band coverage 88%")
