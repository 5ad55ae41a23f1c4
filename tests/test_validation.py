"""Validation against published measurements: data, predictions from the row's fields, fit, statistics."""

import csv
import dataclasses
import math
import subprocess
import sys
import textwrap
from importlib import resources

import matplotlib
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llmcourse as lc
from llmcourse import Q_
from llmcourse.catalog import PRECISIONS, gpus, models
from llmcourse.errors import InputError
from llmcourse.validation import (
    Measurement,
    components,
    dataset,
    engine_usable_fraction,
    error_stats,
    fit_efficiencies,
    hand_set_share,
    leave_one_out,
    measurements,
    predict,
    validate,
)

matplotlib.use("Agg")

ROWS = {r.id: r for r in measurements()}
THROUGHPUT = [i for i, r in ROWS.items() if r.metric == "output_tokens_per_s"]
COURSE = lc.resolve("course")


def at(eb, ef, a=COURSE):
    """The assumptions ``a`` at the efficiencies ``eb`` (bandwidth) and ``ef`` (compute): a what-if."""
    return a.replace(bandwidth_efficiency=eb, compute_efficiency=ef)


#: Other assumptions the fast path must follow: a fixed cost per step, decode-only throughput with the KV
#: read at the final context (the back-of-the-envelope method), the engine's memory rule, BF16 matmuls.
OTHERS = {
    "overhead": COURSE.replace(step_overhead_ms=1.0),
    "envelope": lc.resolve("envelope"),
    "free": COURSE.replace(memory_rule="free"),
    "lab": lc.resolve("lab"),
}


@pytest.fixture(scope="module")
def v():
    return validate()


class _NoValue:
    """A row that fails the test if anything reads its measured value."""

    def __init__(self, row):
        self._row = row

    def __getattr__(self, name):
        if name == "value":
            raise AssertionError("predict read the measured value")
        return getattr(self._row, name)


# --- the data file ------------------------------------------------------------------------------
def test_every_row_has_a_source():
    """Each row of the CSV names its source in full (no 'same', no blank)."""
    text = resources.files("llmcourse.data").joinpath("measurements.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(text.splitlines()))
    assert len(rows) == 26
    for r in rows:
        assert r["source"].strip() and r["source"] != "same" and "TensorRT-LLM" in r["source"], r["id"]


def test_every_row_resolves_in_the_catalog():
    """GPU and model names resolve; precisions are known; one replica per row; ids unique."""
    assert len(ROWS) == 26
    for r in ROWS.values():
        gpus[r.gpu], models[r.model]
        assert r.weights in PRECISIONS and r.kv in PRECISIONS
        assert r.n_gpus == r.tp and r.value > 0 and r.isl > 0 and r.osl > 0


def test_reference_rows_kept():
    """Spot checks against the published figures (the reference table's T8, T13, T23)."""
    assert ROWS["T8"].value == 911.62 and ROWS["T8"].isl == 128 and ROWS["T8"].osl == 2048
    assert ROWS["T13"].tp == 8 and ROWS["T13"].model == "Llama-3.1-405B" and ROWS["T13"].value == 3399.69
    assert ROWS["T23"].weights == "fp4" and ROWS["T23"].kv == "fp8" and ROWS["T23"].gpu == "B200"


def test_unknown_metric_is_rejected():
    """A row with a metric the predictor does not know is refused at load."""
    with pytest.raises(InputError, match="metric"):
        dataclasses.replace(ROWS["T1"], metric="goodput")


# --- predictions come from the row's fields ---------------------------------------------------------
@pytest.mark.parametrize("rid", list(ROWS))
def test_prediction_never_reads_the_measured_value(rid):
    """predict works on a row whose value cannot be read, and gives the same answer."""
    assert predict(_NoValue(ROWS[rid])).value == predict(ROWS[rid]).value


@pytest.mark.parametrize("rid", ["T3", "T8", "T18", "T21", "T25"])
def test_changing_isl_changes_the_prediction(rid):
    """A longer prompt changes the prediction of a throughput or TTFT row."""
    r = ROWS[rid]
    assert predict(dataclasses.replace(r, isl=r.isl * 2)).value != predict(r).value


def test_changing_the_gpu_changes_the_prediction():
    """The same row on an H200 instead of an H100 predicts a shorter ITL."""
    r = ROWS["T17"]
    assert predict(dataclasses.replace(r, gpu="H200 SXM")).value < predict(r).value


def test_same_fields_same_prediction():
    """Two rows that differ only in id and measured value get the same prediction (no per-row constants)."""
    a = ROWS["T3"]
    b = dataclasses.replace(a, id="X", value=1.0, notes="other")
    assert predict(a).value == predict(b).value


def test_itl_by_hand():
    """T17: one decode step of Llama-3.1-8B in BF16 on an H100 at 467 + 256/2 tokens, 70% of 3.35 TB/s, plus the
    course's fixed time per step and its 32 layers' floor of 23 us each, 0.736 ms (one GPU: no collectives)."""
    kv = 2 * 32 * 8 * 128 * 2 * (467 + 128)
    roofline_ms = (8.030e9 * 2 + kv) / (3.35e12 * 0.7) * 1e3
    want = roofline_ms + COURSE.step_overhead_ms + 32 * 23e-3
    assert predict(ROWS["T17"]).value == pytest.approx(want, rel=1e-9)
    assert roofline_ms == pytest.approx(6.88, abs=0.01)


def test_ttft_by_hand():
    """T25: prefill of 467 tokens, 2 FLOPs per parameter plus the causal attention term, 50% of 989 TFLOP/s."""
    flops = 2 * 8.030e9 * 467 + 2 * 32 * 32 * 128 * 467**2
    expected_ms = flops / (989e12 * 0.5) * 1e3
    assert predict(ROWS["T25"]).value == pytest.approx(expected_ms, rel=1e-9)


def test_kv_bound_row_by_hand():
    """T8 under vLLM's memory rule (90% of the total, the course's rule for a vLLM replica; T8 ran TensorRT-LLM, whose
    own rule test_engine_memory_rule_by_hand checks): 70.554 GB of FP8 weights leave 1.446 GB of 72 GB for KV at
    160 KiB a token. At their final 2,176 tokens
    4 sequences fit; the engine admits on the blocks in use (admission "blocks"): staggered conversations hold
    their 128-token prompt and half their 2,048-token answer (1,152 tokens) each, plus 2 spreads of the answer's
    KV times sqrt(B / 12): 5 of them hold 5 x 188.7 MB + 2 x 335.5 MB x 0.645 = 1.377 GB (6: 1.607 GB, too much).
    TensorRT-LLM mixes the prompts' chunks into its decode steps (8,192 tokens a step): all 5 decode, and each
    step carries 5 x 128 / 2,048 = 0.3125 prompt tokens (a prompt for every answer finished). A step is two
    kernels (formula mixed_step_time): the weight matmuls (the weights read once, or the 5.3125 tokens' 2 FLOPs per
    parameter) and attention (5 sequences' KV at 1,152 tokens, or the chunk's causal attention FLOPs: its 128
    tokens' 2 L H d 128^2 over 128 a token; the course leaves decode attention FLOPs out), plus the 1 ms step
    overhead and the 80 layers' floor of 23 us each (1.84 ms); 5 tokens a step."""
    kv_tok = 2 * 80 * 8 * 128 * 1
    room = 0.9 * 80e9 - 70.554e9
    assert math.floor(room / (kv_tok * (128 + 2048))) == 4  # all at their final length
    held = lambda b: b * kv_tok * (128 + 1024) + 2 * kv_tok * 2048 * math.sqrt(b / 12)  # noqa: E731
    batch = 5
    assert held(batch) <= room < held(batch + 1)
    chunk = batch * 128 / 2048
    matmuls = max(70.554e9 / (3.35e12 * 0.7), (batch + chunk) * 2 * 70.554e9 / (1979e12 * 0.5))
    attention = max(batch * kv_tok * 1152 / (3.35e12 * 0.7), chunk * 2 * 80 * 64 * 128 * 128 / (1979e12 * 0.5))
    step = matmuls + attention + COURSE.step_overhead_ms / 1e3 + 80 * 23e-6  # one GPU: no collectives
    p = predict(ROWS["T8"], assumptions=COURSE.replace(memory_rule="total"))
    assert p.batch == batch and p.compute_precision == "fp8"
    assert p.value == pytest.approx(batch / step, rel=1e-9)


def test_engine_memory_rule_by_hand():
    """T8 under the engine's rule: weights plus 90% of the 9.446 GB they leave, over 80 GB; the same batch as the
    assumptions' memory rule "free", and as the course's own rule (each engine's: T8 ran TensorRT-LLM); another
    share of what the weights leave, 0.8, from the assumptions. The batch is admitted on the blocks in use (as in
    test_kv_bound_row_by_hand): 38 conversations hold 38 x 188.7 MB + 2 x 335.5 MB x sqrt(38 / 12) = 8.366 GB of
    the 8.501 GB, 39 would hold 8.571 GB (all at their final length: 23)."""
    assert engine_usable_fraction(ROWS["T8"]) == pytest.approx((70.554e9 + 0.9 * (80e9 - 70.554e9)) / 80e9)
    kv_tok, room = 2 * 80 * 8 * 128, 0.9 * (80e9 - 70.554e9)
    assert math.floor(room / (kv_tok * 2176)) == 23
    held = lambda b: b * kv_tok * (128 + 1024) + 2 * kv_tok * 2048 * math.sqrt(b / 12)  # noqa: E731
    batch = 38
    assert held(batch) <= room < held(batch + 1)
    total = COURSE.replace(memory_rule="total", memory_fraction=engine_usable_fraction(ROWS["T8"]))
    by_share = predict(ROWS["T8"], assumptions=total)
    by_rule = predict(ROWS["T8"], assumptions=OTHERS["free"])
    assert by_share.batch == by_rule.batch == predict(ROWS["T8"]).batch == batch
    assert by_share.value == pytest.approx(by_rule.value, rel=1e-9)
    eighty = COURSE.replace(memory_fraction=0.8)
    assert engine_usable_fraction(ROWS["T8"], assumptions=eighty) == pytest.approx(
        (70.554e9 + 0.8 * (80e9 - 70.554e9)) / 80e9
    )
    assert engine_usable_fraction(ROWS["T8"], 0.8) == engine_usable_fraction(ROWS["T8"], assumptions=eighty)


def test_compute_precision_is_the_planners_rule():
    """FP8 weights compute in FP8 where the GPU has an FP8 peak (T1, H100); FP16 on an A100 (T6) and BF16 (T17) in
    BF16; FP4 in FP4 on a B200 (T23); every row's precision is lc.matmul_precision's, and the interactive lab's
    preset (BF16 matmuls) runs T1 in BF16."""
    expected = {"T1": "fp8", "T6": "bf16", "T17": "bf16", "T23": "fp4"}
    assert {i: predict(ROWS[i]).compute_precision for i in expected} == expected
    for r in ROWS.values():
        assert predict(r).compute_precision == lc.matmul_precision(r.weights, r.gpu)
    assert predict(ROWS["T1"], assumptions="lab").compute_precision == "bf16"


def test_the_default_is_the_courses_method():
    """With no assumptions a row is predicted by the course's preset (70% of the bandwidth, 50% of the FLOP/s, as
    the brief states it); naming the preset, or passing its efficiencies, gives the same number."""
    assert (COURSE.bandwidth_efficiency, COURSE.compute_efficiency) == (0.7, 0.5)
    for rid in ("T3", "T17", "T25"):
        r = ROWS[rid]
        assert predict(r).value == predict(r, assumptions="course").value == predict(r, assumptions=at(0.7, 0.5)).value


def test_efficiencies_override_the_assumptions():
    """A what-if of the efficiencies is the assumptions' own set to them (the one way to give them): it changes
    the prediction to what the row's components give at those efficiencies (worked out apart from predict's path),
    and predict() takes no loose efficiencies."""
    r = ROWS["T3"]
    what_if = predict(r, assumptions=COURSE.replace(bandwidth_efficiency=0.9, compute_efficiency=0.4)).value
    assert what_if == pytest.approx(components(r).value(0.9, 0.4), rel=1e-9)
    assert what_if != pytest.approx(predict(r).value, rel=1e-3)
    with pytest.raises(TypeError):
        predict(r, 0.9, 0.4)


def test_bad_efficiency_is_refused():
    """An efficiency above 1 or a usable share of 0 is refused, by the assumptions a what-if builds, with a message
    naming it."""
    with pytest.raises(InputError, match="bandwidth_efficiency"):
        predict(ROWS["T17"], assumptions=COURSE.replace(bandwidth_efficiency=1.2))
    with pytest.raises(InputError, match="memory_fraction"):
        predict(ROWS["T17"], assumptions=COURSE.replace(memory_fraction=0))


@pytest.mark.parametrize("rid", THROUGHPUT)
def test_one_replica_model_one_answer(rid):
    """A throughput row's prediction is lc.replica's throughput, serving_plan's output tok/s and plan's replica
    throughput for a brief whose targets allow any batch (1 hour each) with no headroom: same inputs, one answer.
    The same inputs include the row's engine, with no cap on the requests it runs (a published maximum sets its
    engine's cap to what fits: only the KV cache decides)."""
    r = ROWS[rid]
    kw = dict(weight_bytes=r.weights, kv_bytes=r.kv)
    eng = lc.EngineSettings(r.engine.split(" ")[0], max_running=10**6)
    rep = lc.replica(
        r.model, r.gpu, tensor_parallel=r.tp, prompt_tokens=r.isl, answer_tokens=r.osl,
        engine=eng.engine, max_running=eng.max_running, **kw,
    )  # fmt: skip
    sp = lc.serving_plan(r.model, r.gpu, r.tp, r.isl + r.osl, prompt_tokens=r.isl, engine=eng, **kw)
    brief = lc.Brief(1, r.isl, r.osl, Q_(1, "hour"), Q_(1, "hour"))
    p = lc.plan(r.model, r.gpu, brief, tensor_parallel=r.tp, assumptions=COURSE.replace(headroom=1), engine=eng, **kw)
    x = predict(r).value
    assert rep.throughput.to("1/s").m == pytest.approx(x, rel=1e-12)
    assert sp.output_tokens_per_s.to("1/s").m == pytest.approx(x, rel=1e-12)
    assert p.throughput.to("1/s").m == pytest.approx(x, rel=1e-12)
    assert predict(r).batch == rep.batch == sp.batch == p.batch


@pytest.mark.parametrize("rid", ["T17", "T19", "T25", "T26"])
def test_low_concurrency_rows_are_the_replica_at_batch_1(rid):
    """An ITL row is the replica's decode step at batch 1, a TTFT row the prefill of its one prompt."""
    r = ROWS[rid]
    rep = lc.replica(r.model, r.gpu, tensor_parallel=r.tp, batch=1, prompt_tokens=r.isl, answer_tokens=r.osl)
    want = rep.step.step_time if r.metric == "itl_ms" else rep.first_prefill.time
    assert predict(r).value == pytest.approx(want.to("ms").m, rel=1e-12) and predict(r).batch == 1


@pytest.mark.parametrize("rid", list(ROWS))
def test_components_equal_predict_at_the_courses_efficiencies(rid):
    """components(row).value at the course's 0.7 / 0.5 is predict(row).value, and so at two other pairs."""
    c, r = components(ROWS[rid]), ROWS[rid]
    assert c.value(0.7, 0.5) == pytest.approx(predict(r).value, rel=1e-9)
    for eb, ef in ((1.0, 1.0), (0.3, 0.9)):
        assert c.value(eb, ef) == pytest.approx(predict(r, assumptions=at(eb, ef)).value, rel=1e-9)


@pytest.mark.parametrize("name", list(OTHERS))
def test_components_follow_other_assumptions(name):
    """Under other assumptions (a step overhead, decode-only throughput, the engine's memory rule, BF16 matmuls)
    the fast path still equals predict at those assumptions, for every row."""
    a = OTHERS[name]
    for r in ROWS.values():
        c = components(r, assumptions=a)
        for eb, ef in ((a.bandwidth_efficiency, a.compute_efficiency), (0.4, 0.8)):
            assert c.value(eb, ef) == pytest.approx(predict(r, assumptions=at(eb, ef, a)).value, rel=1e-9), r.id


def test_components_refuse_a_step_they_cannot_split():
    """The step rule "sum" adds two kernels' times, which one memory and one compute time cannot hold."""
    with pytest.raises(InputError, match="step rule"):
        components(ROWS["T3"], assumptions=COURSE.replace(step_rule="sum"))


def test_overhead_adds_to_each_step_by_hand():
    """T17 with 1 ms per step: the batch-1 step (16.06 GB + 2 x 32 x 8 x 128 x 2 B x 595 at 70% of 3.35 TB/s)
    plus 1 ms, plus the course's 32 x 23 us of the layers' floor."""
    kv = 2 * 32 * 8 * 128 * 2 * (467 + 128)
    expected_ms = (8.030e9 * 2 + kv) / (3.35e12 * 0.7) * 1e3 + 1.0 + 32 * 23e-3
    assert predict(ROWS["T17"], assumptions=OTHERS["overhead"]).value == pytest.approx(expected_ms, rel=1e-9)


@settings(max_examples=20, deadline=None)
@given(eb=st.floats(0.05, 1.0), ef=st.floats(0.05, 1.0), rid=st.sampled_from(list(ROWS)))
def test_fast_path_equals_the_planner(eb, ef, rid):
    """The fit's rescaled times give the same prediction as calling the planner at those efficiencies."""
    assert components(ROWS[rid]).value(eb, ef) == pytest.approx(
        predict(ROWS[rid], assumptions=at(eb, ef)).value, rel=1e-9
    )


# --- fit and statistics ---------------------------------------------------------------------------------
def _stats_by_hand(preds, meas):
    e = sorted(abs(math.log(p / m)) for p, m in zip(preds, meas, strict=True))
    n = len(e)
    median = e[n // 2] if n % 2 else (e[n // 2 - 1] + e[n // 2]) / 2
    return median, e[-1], sum(x <= math.log(2) for x in e) / n


@pytest.mark.parametrize("which", ["default", "calibrated", "held_out"])
def test_reported_statistics_recomputed(v, which):
    """Median and worst |ln(predicted/measured)| and the share within 2x, recomputed here from the predictions."""
    preds = {
        "default": [predict(r).value for r in v.rows],
        "calibrated": list(v.calibrated),
        "held_out": list(v.held_out),
    }[which]
    median, worst, share = _stats_by_hand(preds, [r.value for r in v.rows])
    s = v.stats(which)
    assert s.median_abs_log == pytest.approx(median) and s.worst_abs_log == pytest.approx(worst)
    assert s.within_2x == pytest.approx(share)


def test_datasheet_row_is_the_course_at_full_peaks(v):
    """The "datasheet" statistics are the course's method at 100% of both peaks, predicted row by row."""
    a = v.datasheet
    assert (a.bandwidth_efficiency, a.compute_efficiency, a.matmul_precision) == (1.0, 1.0, "weights")
    preds = [predict(r, assumptions=a).value for r in v.rows]
    median, worst, share = _stats_by_hand(preds, [r.value for r in v.rows])
    s = v.stats("datasheet")
    assert s.median_abs_log == pytest.approx(median) and s.worst_abs_log == pytest.approx(worst)
    assert s.within_2x == pytest.approx(share)


def test_dataset_under_another_preset():
    """dataset(assumptions="lab") predicts each row as predict does under the interactive lab's preset."""
    d = dataset(assumptions="lab")
    assert d.assumptions.name == "lab"
    for r, p in zip(d.rows, d.at(0.7, 0.5), strict=True):
        assert p == pytest.approx(predict(r, assumptions="lab").value, rel=1e-9)


def test_faster_than_predicted_by_definition(v):
    """A row is faster than predicted when it measured more tok/s, or less time, than predict gives; T17 (8.00 ms
    measured, 6.88 + 1 + 0.736 = 8.62 ms predicted by hand in test_itl_by_hand) is; T8 (912 tok/s measured) is under
    vLLM's memory rule (a batch of 5, test_kv_bound_row_by_hand), not under TensorRT-LLM's (38,
    test_engine_memory_rule_by_hand)."""
    want = [
        r.id
        for r in v.rows
        if (r.value > predict(r).value if r.metric == "output_tokens_per_s" else r.value < predict(r).value)
    ]
    assert v.faster_than_predicted() == want
    assert "T8" not in want and "T17" in want
    assert ROWS["T8"].value > predict(ROWS["T8"], assumptions=COURSE.replace(memory_rule="total")).value
    with pytest.raises(InputError, match="which"):
        v.faster_than_predicted("optimistic")


def test_calibrated_predictions_use_the_fitted_factors(v):
    """Each calibrated prediction is the planner's prediction at the fitted efficiencies."""
    f = v.fit
    for r, c in zip(v.rows, v.calibrated, strict=True):
        assert c == pytest.approx(
            predict(r, assumptions=at(f.bandwidth_efficiency, f.compute_efficiency)).value, rel=1e-9
        )


def test_held_out_fit_never_saw_its_row(v):
    """Row i's held-out prediction uses factors fitted without row i, and equals a refit by hand."""
    for r, f in zip(v.rows, v.held_out_fits, strict=True):
        assert r.id not in f.ids and len(f.ids) == len(v.rows) - 1
    i = 7
    rest = [c for j, c in enumerate(v.comps) if j != i]
    f = fit_efficiencies(rest, [r.value for j, r in enumerate(v.rows) if j != i])
    assert v.held_out[i] == pytest.approx(
        predict(v.rows[i], assumptions=at(f.bandwidth_efficiency, f.compute_efficiency)).value
    )


@pytest.mark.parametrize("held", ["T3", "T8", "T15", "T17", "T25"])
def test_leave_one_out_equals_a_fit_without_the_row(v, held):
    """The shared-grid leave-one-out gives, for each held-out row, exactly the fit of the other rows alone."""
    i = v.ids.index(held)
    rest = [c for j, c in enumerate(v.comps) if j != i]
    f = fit_efficiencies(rest, [r.value for j, r in enumerate(v.rows) if j != i])
    assert v.held_out_fits[i] == f
    assert v.held_out[i] == v.comps[i].value(f.bandwidth_efficiency, f.compute_efficiency)


def _log_grid(lo, hi, n):
    a, b = math.log(lo), math.log(hi)
    return [math.exp(a + k * (b - a) / (n - 1)) for k in range(n)]


def _fit_by_brute_force(comps, measured, lo, hi, n):
    """The documented method, one grid point at a time: least squares of ln(predicted/measured) on an
    n x n log grid, then 81 x 81 over two coarse steps either side of the best; first point wins ties."""

    def best(ebs, efs):
        pts = [(eb, ef) for eb in ebs for ef in efs]
        sse = [
            sum((math.log(c.value(eb, ef)) - math.log(m)) ** 2 for c, m in zip(comps, measured, strict=True))
            for eb, ef in pts
        ]
        k = sse.index(min(sse))
        return pts[k], sse[k]

    (eb, ef), _ = best(_log_grid(lo, hi, n), _log_grid(lo, hi, n))
    step = math.log(hi / lo) / (n - 1)
    around = lambda x: _log_grid(max(lo, x * math.exp(-2 * step)), min(hi, x * math.exp(2 * step)), 81)  # noqa: E731
    (eb, ef), sse = best(around(eb), around(ef))
    return eb, ef, math.sqrt(sse / len(comps))


@pytest.mark.parametrize("a", [None, "overhead", "envelope"])
@pytest.mark.parametrize("ids", [("T1", "T3", "T8", "T15", "T17", "T25"), ("T11", "T21", "T23", "T26")])
def test_fast_grid_equals_brute_force(ids, a):
    """The per-axis computation of the fit's objective picks the same point as evaluating every grid point (also
    with a step overhead, and with decode-only throughput)."""
    rows = [ROWS[i] for i in ids]
    comps = [components(r, assumptions=OTHERS.get(a)) for r in rows]
    meas = [r.value for r in rows]
    f = fit_efficiencies(comps, meas, n=13)
    eb, ef, rms = _fit_by_brute_force(comps, meas, 0.02, 1.0, 13)
    assert f.bandwidth_efficiency == pytest.approx(eb, rel=1e-12)
    assert f.compute_efficiency == pytest.approx(ef, rel=1e-12)
    assert f.rms_log_error == pytest.approx(rms, rel=1e-9)


def test_ties_go_to_the_first_grid_point():
    """T17 is a batch-1 decode step: its compute time (2 FLOPs per parameter at 989 TFLOP/s) is 0.34% of its
    memory time at equal efficiencies, so below 1/0.0034 = 296 times the bandwidth efficiency the compute
    efficiency changes nothing, and every compute efficiency on the grid ties. As numpy's argmin, the fit
    takes the first: the lowest, 0.02, also when T17 is what is left after holding out another row."""
    t17 = components(ROWS["T17"])
    assert t17.decode_compute_ms / t17.decode_memory_ms == pytest.approx(3.35e12 / 989e12, rel=0.01)
    f = fit_efficiencies([t17], [8.0])
    assert f.compute_efficiency == 0.02
    assert f.bandwidth_efficiency == pytest.approx(t17.decode_memory_ms / (8.0 - t17.step_overhead_ms), rel=2e-3)
    for other in ("T18", "T25"):
        _, fits = leave_one_out([t17, components(ROWS[other])], [8.0, ROWS[other].value])
        assert fits[1] == f, other


@pytest.mark.parametrize("ids", [("T19", "T24", "T26"), ("T19", "T17", "T22"), ("T17", "T6"), ("T9", "T19")])
def test_leave_one_out_on_small_sets(ids):
    """On small sets with a flat direction (near-ties), each held-out fit is still the direct fit of the rest."""
    comps = [components(ROWS[i]) for i in ids]
    meas = [ROWS[i].value for i in ids]
    _, fits = leave_one_out(comps, meas)
    for k in range(len(ids)):
        assert fits[k] == fit_efficiencies(comps[:k] + comps[k + 1 :], meas[:k] + meas[k + 1 :]), ids[k]


def test_dataset_predicts_like_the_planner():
    """dataset() (what the calculator builds) predicts every row as predict() does, without fitting."""
    d = dataset()
    assert d.ids == list(ROWS) and d.measured == [r.value for r in ROWS.values()]
    for p, r in zip(d.at(0.8, 0.4), ROWS.values(), strict=True):
        assert p == pytest.approx(predict(r, assumptions=at(0.8, 0.4)).value, rel=1e-9)


def test_fit_recovers_known_factors():
    """Measurements made up from the model at 60% bandwidth and 40% compute are fitted back to those factors."""
    rows = [ROWS[i] for i in ("T1", "T3", "T8", "T11", "T13", "T17", "T25")]
    comps = [components(r) for r in rows]
    f = fit_efficiencies(comps, [c.value(0.6, 0.4) for c in comps])
    assert f.bandwidth_efficiency == pytest.approx(0.6, rel=0.01)
    assert f.compute_efficiency == pytest.approx(0.4, rel=0.01)
    assert f.rms_log_error < 0.01


def test_fit_stays_within_datasheet_peaks():
    """Fitted efficiencies are at most 1 even when the measurements beat the peaks."""
    comps = [components(ROWS["T17"])]
    f = fit_efficiencies(comps, [comps[0].value(1.0, 1.0) / 3])
    assert f.bandwidth_efficiency <= 1.0 and f.compute_efficiency <= 1.0


def test_error_stats_by_hand():
    """2x over, exact, 4x under: median factor 2, worst 4, two of three within 2x."""
    s = error_stats([2.0, 1.0, 0.25], [1.0, 1.0, 1.0], ["a", "b", "c"])
    assert s.median_factor == pytest.approx(2.0) and s.worst_factor == pytest.approx(4.0)
    assert s.worst_id == "c" and s.within_2x == pytest.approx(2 / 3)


def test_error_stats_rejects_bad_input():
    """Mismatched lengths and non-positive values are refused."""
    with pytest.raises(InputError):
        error_stats([1.0], [1.0, 2.0], ["a"])
    with pytest.raises(InputError):
        error_stats([0.0], [1.0], ["a"])


# --- calculator and plots ---------------------------------------------------------------------------------
def test_calculator_shows_the_row_and_responds_to_the_sliders():
    """Picking T17 shows 8 ms measured; a higher bandwidth efficiency lowers its predicted ITL."""
    from llmcourse.widgets.validation import calibration_calculator

    c = calibration_calculator(row="T17")
    assert dict(c.rows)["measured"] == "8.00 ms"
    before = float(dict(c.rows)["predicted / measured"])
    after = float(dict(c.set(bandwidth_efficiency=0.9).rows)["predicted / measured"])
    assert after < before
    assert after == pytest.approx(predict(ROWS["T17"], assumptions=at(0.9, 0.5)).value / 8.0, abs=0.005)


NO_NUMPY = """
import sys

class NoNumpy:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "numpy":
            raise ImportError(f"{name} is blocked (the browser's Python has no numpy)")
        return None

sys.meta_path.insert(0, NoNumpy())
import llmcourse.validation as lcv
from llmcourse.widgets.validation import calibration_calculator

c = calibration_calculator()
assert dict(c.rows)["measured"] == "15,245 tok/s", c.rows
c.set(row="T17", bandwidth_efficiency=0.9)
assert dict(c.rows)["measured"] == "8.00 ms", c.rows
assert not [m for m in sys.modules if m.split(".")[0] == "numpy"]
f = lcv.fit_efficiencies([lcv.components(r) for r in lcv.measurements()[:3]], [r.value for r in lcv.measurements()[:3]])
print("ok", dict(c.rows)["predicted"], f.bandwidth_efficiency <= 1)
"""


def test_validation_and_calculator_work_without_numpy():
    """With numpy blocked (as in the reader's browser), the module imports, fits and the calculator works;
    T17 at 90% bandwidth: (16.06 GB of weights + 2 x 32 x 8 x 128 x 2 B x 595 tokens) / (0.9 x 3.35 TB/s), plus
    1 ms and 32 layers x 23 us."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(NO_NUMPY)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    kv = 2 * 32 * 8 * 128 * 2 * (467 + 128)
    expected_ms = (8.030e9 * 2 + kv) / (3.35e12 * 0.9) * 1e3 + COURSE.step_overhead_ms + 32 * 23e-3
    assert proc.stdout.split() == ["ok", f"{expected_ms:.2f}", "ms", "True"]


def test_plot_has_log_axes_with_units(v):
    """The predicted-vs-measured figure is log-log with units on both panels."""
    from llmcourse.plots.validation import predicted_vs_measured, ratios

    axes = predicted_vs_measured(v)
    assert axes[0].get_xscale() == "log" and "tok/s" in axes[0].get_xlabel()
    assert "ms" in axes[1].get_ylabel()
    assert ratios(v).get_yscale() == "log"


def test_kv_starved_rows_by_hand():
    """T8 under 90% of the total (vLLM's rule, the sources'): (72 - 70.554) / 72 = 2% of usable memory for KV:
    KV-starved. Under TensorRT-LLM's own rule, the course's for a row it ran: 0.9 x 9.446 GB of the 70.554 + 8.501 GB
    usable, 10.75%: dense. T24 on an H200 leaves 44% under either rule (TensorRT-LLM: 0.9 x 70.446 GB of 133.96 GB,
    47.3%)."""
    from llmcourse.validation import family, kv_share

    total = COURSE.replace(memory_rule="total")
    assert kv_share(ROWS["T8"], assumptions=total) == pytest.approx((72e9 - 70.554e9) / 72e9)
    assert family(ROWS["T8"], assumptions=total) == "KV-starved"
    room = 0.9 * (80e9 - 70.554e9)
    assert kv_share(ROWS["T8"]) == pytest.approx(room / (70.554e9 + room))
    assert family(ROWS["T8"]) == "dense"
    room = 0.9 * (141e9 - 70.554e9)
    assert kv_share(ROWS["T24"]) == pytest.approx(room / (70.554e9 + room))
    assert kv_share(ROWS["T24"], assumptions=total) == pytest.approx((0.9 * 141e9 - 70.554e9) / (0.9 * 141e9))
    assert family(ROWS["T24"]) == "dense" and family(ROWS["T21"]) == "MoE" and family(ROWS["T25"]) == "latency"


def test_components_follow_the_all_reduce_time():
    """With the collectives on a slower link (half its bandwidth reached), the fast path still equals predict() on
    every row."""
    a = lc.resolve().replace(communication=True, link_efficiency=0.4)
    for row in measurements():
        c = components(row, assumptions=a)
        assert c.value(0.7, 0.5) == pytest.approx(predict(row, assumptions=a).value, rel=1e-9)


def _deepseek_on_four_b200(engine: str, concurrency: int = 16, weights: str = "fp8") -> Measurement:
    """A closed-loop row as aiconfigurator's SGLang runs of DeepSeek-R1 on four B200s (8,192 + 1,024 tokens)."""
    return Measurement(
        id="ds4", source="a test", gpu="B200", n_gpus=4, tp=4, model="DeepSeek-V3", weights=weights, kv="bf16",
        engine=engine, isl=8_192, osl=1_024, load=f"concurrency {concurrency}", load_kind="concurrency",
        metric="tpot_ms", value=20.0, unit="ms", concurrency=concurrency,
    )  # fmt: skip


def test_a_run_whose_weights_miss_the_engines_default_share_set_the_share_by_hand():
    """DeepSeek-V3's FP8 weights (671 GB) miss SGLang's default share on four B200s (4 x 180 GB x 0.856 = 616.32 GB)
    but not their whole memory read in binary units (4 x 180 GiB = 773.1 GB, an upper bound): such a run set
    --mem-fraction-static by hand, and the row is predicted with the whole memory, at the batch it kept in flight
    (16 requests of 9,216 tokens: MLA's latent, 61 layers x 576 x 2 B = 70,272 B a token, held on each of the 4
    tensor-parallel GPUs, 16 x 9,216 x 70,272 x 4 = 41.4 GB of the 102.1 GB left). The sources' presets (a fixed
    share) still refuse it, as does a row whose weights miss the whole memory (BF16: 1,342 GB)."""
    sg = _deepseek_on_four_b200("SGLang 0.5.9")
    w = lc.weight_bytes("DeepSeek-V3", "fp8").to("B").m
    assert w == pytest.approx(671e9, rel=1e-3)
    assert 4 * 180e9 * 0.856 < w < 4 * 180 * 2**30
    assert 4 * 180 * 2**30 - w > 16 * 9_216 * 61 * 576 * 2 * 4
    assert hand_set_share(sg)
    p = predict(sg)
    assert p.batch == 16 and p.value > 0
    assert not hand_set_share(sg, "lab")
    with pytest.raises(InputError, match="don't fit"):
        predict(sg, assumptions="lab")
    bf16 = _deepseek_on_four_b200("SGLang 0.5.9", weights="bf16")
    assert not hand_set_share(bf16)
    with pytest.raises(InputError, match="don't fit"):
        predict(bf16)
    trt = _deepseek_on_four_b200("TensorRT-LLM")  # its own rule holds the weights: nothing set by hand
    assert not hand_set_share(trt) and predict(trt).batch == 16


def test_llama_cpp_sets_no_share_by_hand():
    """Llama-3.1-8B in BF16 (16.06 GB) on one RTX 4080 (16 GB, 17.18 GB read as GiB): llama.cpp's rule (16 GiB less
    1.75 GiB, 15.3 GB) misses it, and llama.cpp has no share to set (it would run layers on the CPU): refused, where
    the whole memory would hold it. (The share engines' rescue is the upper bound the vLLM row shows, not a claim that
    vLLM starts with 1.1 GB to spare.)"""
    one = dict(
        id="8b", source="a test", gpu="RTX 4080", n_gpus=1, tp=1, model="Llama-3.1-8B", weights="bf16", kv="bf16",
        isl=512, osl=128, load="concurrency 1", load_kind="concurrency", metric="tpot_ms", value=20.0, unit="ms",
        concurrency=1,
    )  # fmt: skip
    assert 0.9 * 16e9 < 16.06e9 < 16 * 2**30 and (16 - 1.75) * 2**30 < 16.06e9
    vllm, cpp = Measurement(engine="vLLM", **one), Measurement(engine="llama.cpp", **one)
    assert hand_set_share(vllm) and predict(vllm).batch == 1
    assert not hand_set_share(cpp)
    with pytest.raises(InputError, match="don't fit"):
        predict(cpp)
