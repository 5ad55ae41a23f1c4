"""A replica on many GPUs: the layout's checks, the collectives' costs, pipeline and attention data
parallelism, and the measured Llama-3.1-70B rows the course preset is held to. Expected values are
worked by hand from the link figures of links.csv (quoted in each test)."""

from __future__ import annotations

import csv
import itertools
import math
from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llmcourse as lc
from llmcourse.assumptions import DEFAULT, resolve
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.replica.parallel import (
    decode_comm_time,
    layout,
    pipeline_send_time,
    prefill_comm_time,
    time_per_token_parts,
)
from llmcourse.units import Q_

QUIET = DEFAULT.replace(communication=False)


def test_link_catalog_has_every_gpus_link():
    assert {g.link for g in lc.gpus.values() if g.link is not None} <= set(lc.links)
    # a GPU without a link is one chip on its own (a laptop's unified memory), never a datacenter part
    alone = {g.name for g in lc.gpus.values() if g.link is None}
    assert {"M3 Max", "M3 Ultra", "M1 Max", "M2 Ultra"} <= alone
    assert all(any(a.startswith("Apple ") for a in lc.gpus[n].aliases) for n in alone), alone
    assert lc.links["NVLink 4"].bandwidth == Q_(450, "GB/s")
    assert lc.links["nvlink5"].name == "NVLink 5"


def test_ring_all_reduce_by_hand():
    """8 H100s on NVLink 4 (t0 4.5 us, alpha 0.8 us, 450 GB/s at 80%), 8 x 8,192 x 2 B = 131,072 B:
    4.5 + 14 x 0.8 + (14 / 8) x 131,072 / 360e9 s = 15.7 + 0.637 = 16.337 us."""
    t = lc.FORMULAS["allreduce_time"](
        collective_base=Q_(4.5, "us"),
        link_latency=Q_(0.8, "us"),
        n_gpus=8,
        message_bytes=Q_(131_072, "B"),
        link_bandwidth=Q_(450, "GB/s"),
        link_efficiency=0.8,
    )
    assert t.to("us").m == pytest.approx(4.5 + 11.2 + 1.75 * 131_072 / 360e3)


def test_decode_pays_two_all_reduces_per_layer_on_nvlink5():
    """Llama-3.1-70B (80 layers, hidden 8,192), batch 4, 8 B200s on NVLink 5 (t0 7.8 us, alpha 1.23 us,
    900 GB/s at 80%). The ring: 160 x (7.8 + 14 x 1.23 + 1.75 x 65,536 / 720e9 s) = 160 x 25.179 us = 4.029 ms.
    The course's engine one-shot: 160 x (3.5 + 1.23 + 7 x 65,536 / 720e9 s) = 160 x 5.367 us = 0.859 ms (the
    two-shot's 2 x 4.73 us is more)."""
    lay = layout("Llama-3.1-70B", "B200", tensor_parallel=8)
    per = 7.8 + 14 * 1.23 + 1.75 * 65_536 / 720e3
    ring = resolve("course").replace(allreduce_algorithm="ring")
    got = decode_comm_time("Llama-3.1-70B", lay, tokens=4, assumptions=ring).to("ms").m
    assert got == pytest.approx(160 * per / 1e3)
    one_shot = 3.5 + 1.23 + 7 * 65_536 / 720e3
    assert decode_comm_time("Llama-3.1-70B", lay, tokens=4).to("ms").m == pytest.approx(160 * one_shot / 1e3)


def test_pcie_is_bandwidth_bound_at_prefill():
    """A prefill of 8,192 tokens of Llama-3.1-70B on 2 L40S over PCIe 4 (31.5 GB/s at 80%): each
    all-reduce moves 8,192 x 8,192 x 2 B = 134.2 MB, (2 x 1 / 2) x 134.2e6 / 25.2e9 = 5.33 ms, 160 of them."""
    lay = layout("Llama-3.1-70B", "L40S", tensor_parallel=2)
    msg = 8_192 * 8_192 * 2
    per_ms = (10 + 2 * 2.0) / 1e3 + msg / 25.2e9 * 1e3
    assert prefill_comm_time("Llama-3.1-70B", lay, tokens=8_192).to("ms").m == pytest.approx(160 * per_ms)


def test_one_gpu_and_the_sources_pay_nothing():
    one = layout("Llama-3.1-8B", "H100 SXM")
    assert decode_comm_time("Llama-3.1-8B", one, tokens=64).m == 0
    eight = layout("Llama-3.1-70B", "H100 SXM", tensor_parallel=8)
    for preset in ("envelope", "lab", "capacity", "planner"):
        assert decode_comm_time("Llama-3.1-70B", eight, tokens=4, assumptions=preset).m == 0


def test_tp8_is_not_8x():
    """The course preset: 8 B200s give Llama-3.1-70B FP8 at batch 4 well under 8x one GPU's speed, about 3x: 16.45 ms
    against 5.42 ms a token, 3.03x (the decode step alone: 16.30 / 5.38 ms, also 3.03x; the other 3 requests' whole
    prompts, each in a compute-bound step of its own 3 times in 1,024 steps, add 0.15 ms on one GPU and 0.04 ms on
    eight, since their FLOPs split 8 ways while the fixed 1 ms, the layers' floor and the all-reduces do not). The
    bound was 3x when every step carried an even share of the prompts (2.97x); it is now 3.1x. The free split
    (communication off, no overhead, no layers' floor) gives 7.x (the KV and prefill shares do not shrink alike)."""
    kw = dict(batch=4, prompt_tokens=1_024, answer_tokens=1_024, weight_bytes="fp8")
    course = [lc.replica("Llama-3.1-70B", "B200", tensor_parallel=n, **kw).tpot for n in (1, 8)]
    free = QUIET.replace(step_overhead_ms=0.0, layer_floor_us=0.0)
    split = [lc.replica("Llama-3.1-70B", "B200", tensor_parallel=n, assumptions=free, **kw).tpot for n in (1, 8)]
    assert 3 < (course[0] / course[1]).m < 3.1
    assert (split[0] / split[1]).m > 6


def test_parts_add_up_to_the_time_per_token():
    r = lc.replica(
        "Llama-3.1-70B",
        "H200 SXM",
        tensor_parallel=4,
        batch=16,
        prompt_tokens=8_192,
        answer_tokens=1_024,
        weight_bytes="fp8",
    )
    parts = time_per_token_parts(r)
    assert sum(parts.values()).to("ms").m == pytest.approx(r.tpot.to("ms").m)
    assert all(v.m >= 0 for v in parts.values())


def test_layout_errors_say_what_to_change():
    with pytest.raises(InputError, match="use one of 1, 2, 4, 8, 16, 32, 64"):
        layout("Llama-3.1-70B", "H100 SXM", tensor_parallel=6)
    with pytest.raises(InputError, match="does not divide DeepSeek-V3's 256 experts"):
        layout("DeepSeek-V3", "H200 SXM", tensor_parallel=8, expert_parallel=3)
    with pytest.raises(InputError, match="dense"):
        layout("Llama-3.1-70B", "H100 SXM", tensor_parallel=8, expert_parallel=8)
    with pytest.raises(UnknownNameError, match="Did you mean"):
        layout("Llama-3.1-70B", "H100 SXM", link="PCIe 7")
    with pytest.raises(InputError, match="tensor_parallel"):
        layout("Llama-3.1-70B", "H100 SXM", tensor_parallel=0)
    with pytest.raises(InputError, match="exceeds"):
        layout("Llama-3.1-8B", "H100 SXM", pipeline_parallel=64)


def test_a_group_beyond_the_domain_falls_back_to_the_scale_out_link():
    lay = layout("Llama-3.1-405B", "H100 SXM", tensor_parallel=16)
    assert lay.link.name == "InfiniBand NDR" and "larger than NVLink 4" in lay.note
    r = lc.replica("Llama-3.1-405B", "H100 SXM", tensor_parallel=16, batch=8, prompt_tokens=1_000, answer_tokens=200)
    assert r.layout.note and r.fits


def test_pipeline_token_time_and_bubble_by_hand():
    """With P = 2 stages a token crosses one boundary: its time is the micro-batch's step plus one send
    and one stage overhead (1 ms). The bubble of 2 stages and 6 micro-batches is 1 / 7."""
    assert lc.FORMULAS["pipeline_bubble"](stages=2, micro_batches=6).m == pytest.approx(1 / 7)
    kw = dict(context_tokens=1_500, weight_bytes=2)
    pp = lc.decode_step("Llama-3.1-70B", "H100 SXM", batch=8, n_gpus=2, pipeline_parallel=2, **kw)
    micro = lc.decode_step("Llama-3.1-70B", "H100 SXM", batch=4, n_gpus=2, **kw)
    lay = layout("Llama-3.1-70B", "H100 SXM", tensor_parallel=2, pipeline_parallel=2)
    send = pipeline_send_time("Llama-3.1-70B", lay, tokens=4)
    # one stage hands 4 x 8,192 x 2 B / 2 GPUs = 32,768 B on NVLink 4: 4.5 + 0.8 us + 32,768 B / 360 GB/s
    assert send.to("us").m == pytest.approx(4.5 + 0.8 + 32_768 / 360e3)
    assert pp.step_time.to("ms").m == pytest.approx((micro.step_time + send + Q_(1, "ms")).to("ms").m)


def test_pipeline_holds_what_one_node_cannot():
    """Llama-3.1-405B in BF16 (812 GB) does not fit 8 H100s (576 GB usable) but fits 8 x 2 stages."""
    kw = dict(prompt_tokens=2_000, answer_tokens=500)
    assert not lc.replica("Llama-3.1-405B", "H100 SXM", tensor_parallel=8, **kw).fits
    two = lc.replica("Llama-3.1-405B", "H100 SXM", tensor_parallel=8, pipeline_parallel=2, **kw)
    assert two.fits and two.n_gpus == 16 and two.layout.note == ""


def test_attention_data_parallel_holds_attention_per_group():
    """DeepSeek-V3 on 8 B200s, 8 attention groups: the experts once, the rest 8 times; no MLA replication."""
    m = lc.models["DeepSeek-V3"]
    kw = dict(batch=64, prompt_tokens=1_000, answer_tokens=1_000, weight_bytes="fp8")
    dp = lc.replica("DeepSeek-V3", "B200", data_parallel=8, **kw)
    tp = lc.replica("DeepSeek-V3", "B200", tensor_parallel=8, **kw)
    shared = (m.params - m.expert_params) * 1.0
    assert dp.weights.to("B").m == pytest.approx(m.params + 7 * shared, rel=1e-6)
    assert tp.kv_per_sequence.to("B").m == pytest.approx(8 * dp.kv_per_sequence.to("B").m)
    assert dp.layout.expert_parallel == 8 and dp.n_gpus == 8


def _rows():
    path = resources.files("llmcourse.data").joinpath("aiconfigurator-silicon.csv")
    if not path.is_file():
        pytest.skip("the measured rows are not shipped yet")
    gpus = {"h100_sxm": "H100 SXM", "h200_sxm": "H200 SXM", "b200_sxm": "B200"}
    return [
        (gpus[r["system"]], r)
        for r in csv.DictReader(path.read_text(encoding="utf-8").splitlines())
        if r["model_path"] == "meta-llama/Llama-3.1-70B" and r["batch_size"] == "4" and r["mode"] == "agg"
    ]


def _factors(rows, assumptions=None):
    """(|log factor|, row id, factor measured / predicted) of each row, the course's replica at its deployment."""
    out = []
    for gpu, r in rows:
        rep = lc.replica(
            "Llama-3.1-70B",
            gpu,
            tensor_parallel=int(r["tp_size"]),
            batch=4,
            prompt_tokens=int(r["isl"]),
            answer_tokens=int(r["osl"]),
            weight_bytes=r["precision"],
            assumptions=assumptions,
        )
        f = float(r["silicon_tpot_ms"]) / rep.tpot.to("ms").m
        out.append((abs(math.log(f)), r["id"], round(f, 3)))
    return out


def test_course_lands_within_1_25x_of_every_measured_llama_70b_row_at_concurrency_4():
    """Issue "Many GPUs": tensor-parallel 1, 2, 4 and 8 on H100, H200 and B200, every engine in the file: all within
    1.35x (the worst 1.286x), and 77 of 81 within 1.25x. Four are outside, two each way: vLLM at FP4 on 8 x B200
    (1,024 in / 8,192 out and 8,192 / 1,024: measured 1.260x and 1.278x slower than predicted, the step mostly its
    fixed costs, floor and all-reduces) and TensorRT-LLM at FP8 on 1 and 2 x H200 with 8,192-token prompts (0.778x
    and 0.790x: predicted too slow, each of the other three requests' prompts going whole into two compute-bound
    steps of their own). When every step carried an even share of the prompts, all but two were within 1.25x; the
    engine's actual schedule (a whole prompt in one step or a few) costs the long-prompt rows their margin. The
    course's 23 us layer floor is still the best of 18, 23 and 28 us: most rows within 1.25x (77 against 69 and 76)
    and the smallest worst factor (1.286x against 1.377x and 1.303x)."""
    rows = _rows()
    assert len(rows) >= 80
    worst = _factors(rows)
    outside = sorted(w for w in worst if w[0] > math.log(1.25))
    assert max(worst)[0] <= math.log(1.35) and len(outside) == 4, outside
    by_id = {r["id"]: (gpu, r["backend"], r["precision"], int(r["tp_size"]), int(r["isl"])) for gpu, r in rows}
    assert sorted((*by_id[w[1]], w[2] > 1) for w in outside) == [
        ("B200", "vllm", "fp4", 8, 1_024, True),
        ("B200", "vllm", "fp4", 8, 8_192, True),
        ("H200 SXM", "trtllm", "fp8", 1, 8_192, False),
        ("H200 SXM", "trtllm", "fp8", 2, 8_192, False),
    ]
    for floor in (18.0, 28.0):
        other = _factors(rows, DEFAULT.replace(layer_floor_us=floor))
        assert sum(w[0] <= math.log(1.25) for w in other) < len(worst) - len(outside)
        assert max(other)[0] > max(worst)[0]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(n=st.sampled_from([1, 2, 4, 8]), b=st.integers(1, 256))
def test_more_gpus_never_pay_less_communication(n, b):
    small = layout("Llama-3.1-70B", "H100 SXM", tensor_parallel=n)
    big = layout("Llama-3.1-70B", "H100 SXM", tensor_parallel=2 * n)
    assert decode_comm_time("Llama-3.1-70B", big, tokens=b) > decode_comm_time("Llama-3.1-70B", small, tokens=b)


def _dp_decoder(dp: int = 8):
    """DeepSeek-V3 in FP8 on 8 H200s as 8 attention data-parallel groups of one GPU, KV read at 2,048 tokens."""
    from llmcourse.assumptions import resolve
    from llmcourse.replica.deployment import Deployment
    from llmcourse.replica.parallel import layout
    from llmcourse.replica.step import decoder

    d = Deployment("DeepSeek-V3", "H200 SXM", data_parallel=dp, weight_bytes="fp8")
    lay = layout(d.model, d.gpu, tensor_parallel=1, data_parallel=dp)
    return decoder(d, lay, resolve("course"), 2_048, "fp8"), d.model


def test_a_dp_prompt_is_prefilled_by_its_own_group_by_hand():
    """Attention data parallel over D = 8 groups: a decode token costs a group 1/8 of a token's FLOPs (each group runs
    1/8 of the sequences). One prompt's chunk is prefilled by its own group: its attention projections, dense layers
    and shared expert all there, F_tok - F_exp, and its routed experts spread over the 8 groups, F_exp / 8 (formula
    dp_chunk_flops_per_token). DeepSeek-V3: F_tok = 2 x 37e9, F_exp = 2 x (routed expert params) x 8 / 256. The
    step's matmul compute time is (n F_tok / 8 + c (F_tok - F_exp + F_exp / 8)) at one GPU's FP8 peak x the course's
    share. Where every group prefills its own share (groups=8), a prompt token costs F_tok / 8, as a decode token."""
    dec, m = _dp_decoder()
    f_tok = 2 * m.active_params
    f_exp = 2 * m.expert_params * m.experts_per_token / m.experts
    assert 0.5 < f_exp / f_tok < 0.6  # about 20.4e9 of 37e9 active parameters in routed experts
    rate = 1979e12 * 0.5  # H200 FP8 dense peak x the course's compute share
    n, c = 64, 1_000
    _, _, (mm, _) = dec.mixed(n, c, 0.0, 0.0)
    assert mm == pytest.approx((n * f_tok / 8 + c * (f_tok - f_exp + f_exp / 8)) / rate, rel=1e-9)
    _, _, (mm_all, _) = dec.mixed(n, c, 0.0, 0.0, groups=8)
    assert mm_all == pytest.approx((n + c) * f_tok / 8 / rate, rel=1e-9)
    # attention and the earlier KV: the one group's whole, or 1/8 each where all eight share the prompts
    one, all8 = dec.mixed(n, c, 1e9, 4e9), dec.mixed(n, c, 1e9, 4e9, groups=8)
    assert one[2][1] - dec.mixed(n, c, 0.0, 4e9)[2][1] == pytest.approx(c * 1e9 / rate, rel=1e-6)
    assert all8[2][1] - dec.mixed(n, c, 0.0, 4e9, groups=8)[2][1] == pytest.approx(c * 1e9 / 8 / rate, rel=1e-6)
    assert one[0] > all8[0]


def test_dp_time_per_token_grows_with_the_batch():
    """DeepSeek-V3 FP8 on 8 H200s as 8 attention groups, 1,024 tokens in and out: each group schedules its own
    prompts, a step carries the chunks of the groups that have one (formulas dp_prompt_step_share and
    dp_chunk_groups), so the time per token grows with the batch, with no cliff where the prompts fill every step
    (the steady step spreads them over all the groups, the chunked steps near it carry nearly all of them)."""
    from llmcourse.assumptions import resolve

    kw = dict(prompt_tokens=1_024, answer_tokens=1_024, weight_bytes="fp8", assumptions=resolve("course"))
    top = lc.replica("DeepSeek-V3", "H200 SXM", data_parallel=8, **kw).max_batch
    tpots = [
        lc.replica("DeepSeek-V3", "H200 SXM", data_parallel=8, batch=b, **kw).tpot.to("ms").m
        for b in [*range(16, top, 96), top]
    ]
    assert all(b >= a for a, b in itertools.pairwise(tpots)), tpots


def test_dp_time_per_token_has_no_step_where_the_prompts_fill_every_step():
    """The same replica at 2,048 tokens in and 128 out, batch by batch across 1,024, where each group's prompts (one
    step each, k n / D over an answer of 128 steps) come to fill its steps: the time per token does not fall."""
    from llmcourse.assumptions import resolve

    kw = dict(prompt_tokens=2_048, answer_tokens=128, weight_bytes="fp8", assumptions=resolve("course"))
    tpots = [
        lc.replica("DeepSeek-V3", "H200 SXM", data_parallel=8, batch=b, **kw).tpot.to("ms").m for b in range(990, 1060)
    ]
    assert all(b >= a for a, b in itertools.pairwise(tpots)), tpots


@pytest.mark.parametrize(("prompt", "batch"), [(8_192, 64), (8_192, 1_536), (16_384, 2_048)])
def test_dp_engine_parts_are_the_replicas_own_steps(prompt, batch):
    """Under attention data parallel each group chunks its prompts by its own budget, less its share of the decode
    tokens: the parts a fit re-weighs (engine_parts: a new prompt's chunk steps "first", and the steady step where
    every step carries chunks) are the steps the replica's own time per token and first token are built from."""
    from llmcourse.assumptions import resolve
    from llmcourse.replica.deployment import Deployment, Workload
    from llmcourse.replica.model import setup_of

    a = resolve("course")
    d = Deployment("DeepSeek-V3", "H200 SXM", data_parallel=8, weight_bytes="fp8")
    s = setup_of(d, Workload(prompt_tokens=prompt, answer_tokens=1_024), a)
    b = min(batch, s.max_batch)
    parts, (n, _, tpot, first, *_) = s.engine_parts(b), s._engine_figures(b)
    assert math.fsum(step[0] for step in parts["first"]) == pytest.approx(first, rel=1e-12)
    if "step" in parts:  # every step carries chunks: the steady step is the step between tokens
        assert parts["step"][0] == pytest.approx(tpot, rel=1e-12)
    else:
        assert parts["share"] == pytest.approx(s._chunked(b).share(n - 1), rel=1e-12)
