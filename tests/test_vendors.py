"""The published AMD and Intel rows (llmcourse.validation.vendors), their held-out statistic, and the validation
chapter's section on other engines and accelerators, whose figures must come from the package.

Expected values are derived by hand in each test (the arithmetic in comments) or read from the rows' sources."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from llmcourse import bands as lb
from llmcourse.errors import InputError, UnknownNameError
from llmcourse.planner import Brief, plan
from llmcourse.units import Q_
from llmcourse.validation import llama_cpp
from llmcourse.validation import vendors as vd

HEAD = ",".join(vd.COLUMNS) + "\n"
GOOD = "a,AMD,MI300X,8,8,Llama-3.1-70B,fp8,fp8,vLLM,128,2048,4,batch_latency_s,18.5,https://example.org/p,2025,x,"
CHAPTER = Path(__file__).resolve().parents[1] / "book" / "12_validation.md"


def _with(**changes: str) -> str:
    """GOOD with some fields replaced (by column name)."""
    fields = GOOD.split(",")
    for name, value in changes.items():
        fields[vd.COLUMNS.index(name)] = value
    return HEAD + ",".join(fields)


def test_the_shipped_rows_load_each_with_its_source():
    """Every shipped row is read, has a URL and a unique id, and every vendor is there."""
    rows = vd.vendor_rows()
    assert len(rows) == 75 and len({r.id for r in rows}) == len(rows)
    assert all(r.source.startswith("https://") for r in rows)
    assert {r.vendor for r in rows} == {"AMD", "AWS", "Intel", "NVIDIA"}
    assert {r.gpu for r in rows} == {"MI300X", "Gaudi 3", "Trainium2", "H200 SXM"}
    assert all(r.gpu == "H200 SXM" for r in rows if r.vendor == "NVIDIA")  # NVIDIA only as a same-harness control


def test_a_good_row_is_read():
    """The hand-made row reads back field by field."""
    (r,) = vd.vendor_rows(HEAD + GOOD)
    assert (r.gpu, r.model, r.tp, r.isl, r.osl, r.batch, r.value) == ("MI300X", "Llama-3.1-70B", 8, 128, 2048, 4, 18.5)


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"source": "notes.txt"}, "source must be the URL"),
        ({"metric": "tokens"}, "metric must be one of"),
        ({"value": "fast"}, "value must be a number"),
        ({"value": "-3"}, "value must be above 0"),
        ({"value": "nan"}, "value must be above 0"),
        ({"gpu": "MI999X"}, "MI999X"),
        ({"model": "Llama-9-1T"}, "Llama-9-1T"),
        ({"weights": "fp7"}, "fp7"),
        ({"n_gpus": "4"}, "n_gpus (4) must equal tp (8)"),
        ({"batch": "0"}, "batch must be a whole number of at least 1"),
        ({"isl": "12.5"}, "isl must be a whole number"),
        ({"vendor": "Acme"}, "vendor must be one of AMD, AWS, Google, Intel, NVIDIA"),
        ({"id": " "}, "id is empty"),
    ],
)
def test_a_bad_row_is_refused_naming_its_line_and_field(changes, says):
    """Each bad field is refused with an InputError that names line 2 and what to change."""
    with pytest.raises(InputError) as e:
        vd.vendor_rows(_with(**changes))
    assert "vendor_published.csv line 2" in str(e.value) and says in str(e.value)


def test_a_repeated_id_and_a_missing_column_are_refused():
    """An id used twice names the first line; a file without a column names the column."""
    with pytest.raises(InputError, match="id 'a' is already the id of line 2"):
        vd.vendor_rows(HEAD + GOOD + "\n" + GOOD)
    with pytest.raises(InputError, match="no column 'note'"):
        vd.vendor_rows(HEAD.replace(",note", "") + GOOD.rsplit(",", 1)[0])


def test_a_whole_batch_time_is_turned_into_the_rate_its_source_prints():
    """The cloud post prints both: 1 x 128 tokens in 3.530 s = 36.3 tokens/s (it prints 36), 256 x 128 in 17.750 s
    = 1,846.1 (it prints 1,846), and so on for each of its nine batches."""
    printed = {1: 36, 2: 71, 4: 137, 8: 258, 16: 468, 32: 798, 64: 1184, 128: 1585, 256: 1846}
    rows = [r for r in vd.vendor_rows() if r.source.startswith("https://blogs.oracle")]
    assert {r.batch: round(r.tokens_per_s) for r in rows} == printed


def test_a_prediction_never_reads_the_measurement():
    """Two rows that differ only in their measured value get the same prediction."""
    (a,) = vd.vendor_rows(HEAD + GOOD)
    (b,) = vd.vendor_rows(_with(value="99"))
    assert vd.predicted(a) == vd.predicted(b) > 0


def test_a_batch_beyond_the_memory_runs_in_waves():
    """A batch far beyond what fits is predicted at the batch that fits (the rest wait for a later wave), so its
    predicted rate is no higher than that of the batch that fits."""
    (big,) = vd.vendor_rows(_with(batch="100000", metric="output_tokens_per_s"))
    (fit,) = vd.vendor_rows(_with(batch="3000", metric="output_tokens_per_s"))
    assert vd.predicted(big) >= vd.predicted(fit) * 0.999  # the largest batch that fits is at least 3,000's rate


def test_held_out_factor_with_one_factor_everywhere_is_exact():
    """Every row twice as fast as predicted: each fold's factor is 2, the held-out ratio 1, and the band
    (2 to 2, over 2) holds every row."""
    h = vd.held_out_factor([2.0, 2.0, 2.0, 2.0], ["a", "a", "b", "b"], ["1", "2", "3", "4"])
    assert h.factors == {"a": 2.0, "b": 2.0} and h.ratios == {"1": 1.0, "2": 1.0, "3": 1.0, "4": 1.0}
    assert (h.stats.median_factor, h.stats.within_2x, h.coverage) == (1.0, 1.0, 1.0)


def test_held_out_factor_on_three_groups_by_hand():
    """Groups a, b, c at ratios 1, 2 and 4 (two rows each).
    Hold a out: the others' logs are ln2, ln2, ln4, ln4, median 1.5 ln2, factor 2^1.5; a's rows 1 / 2^1.5; the band is
    the others' 10th and 90th percentile (2 and 4) over 2^1.5 = 2^-0.5 to 2^0.5: a's rows (2^-1.5) are outside.
    Hold b out: others 1, 1, 4, 4, factor 2, b's rows 1; band 1/2 to 4/2: inside.
    Hold c out: others 1, 1, 2, 2, factor 2^0.5, c's rows 2^1.5; band 2^-0.5 to 2^0.5: outside.
    So |ln| is 1.5 ln2 for four rows and 0 for two: median factor 2^1.5, within 2x 2 of 6, coverage 2 of 6."""
    h = vd.held_out_factor([1.0, 1.0, 2.0, 2.0, 4.0, 4.0], list("aabbcc"), list("123456"))
    assert h.factors["a"] == pytest.approx(2**1.5) and h.factors["b"] == pytest.approx(2.0)
    assert h.factors["c"] == pytest.approx(2**0.5)
    assert h.stats.median_factor == pytest.approx(2**1.5)
    assert h.stats.within_2x == pytest.approx(2 / 6) and h.coverage == pytest.approx(2 / 6)


def test_held_out_factor_with_two_single_rows():
    """Ratios 1 and 4 in two groups: each is held out against the other's factor (4, then 1), so both land 4 off."""
    h = vd.held_out_factor([1.0, 4.0], ["a", "b"], ["x", "y"])
    assert h.factors == {"a": 4.0, "b": 1.0}
    assert h.stats.median_factor == pytest.approx(4.0) and h.stats.within_2x == 0.0


@pytest.mark.parametrize(
    ("ratios", "groups"),
    [([1.0, 2.0], ["a", "a"]), ([1.0, 0.0], ["a", "b"]), ([1.0, math.inf], ["a", "b"]), ([1.0], ["a", "b"])],
)
def test_held_out_factor_refuses_what_it_cannot_hold_out(ratios, groups):
    """One group only, a ratio of 0 or infinity, or lists of different lengths: InputError."""
    with pytest.raises(InputError):
        vd.held_out_factor(ratios, groups, [str(i) for i in range(len(ratios))])


def test_every_shipped_row_is_predicted_and_held_out_within_its_vendor():
    """No shipped row is refused by the replica model, and each vendor is held out over at least two groups."""
    h = vd.vendor_held_out()
    assert sorted(h) == ["AMD", "AWS", "Intel", "NVIDIA"]
    for v in h.values():
        assert not v.not_predicted and v.groups >= 2 and v.raw.n == len(v.ratios) == v.held.stats.n


def _section() -> str:
    text = CHAPTER.read_text(encoding="utf-8")
    start = text.index("(validation_other)=")
    return text[start : text.index("\n## ", start + 30)]


@pytest.mark.slow
def test_the_chapter_glues_the_package_figures_and_types_none():
    """The section's prose types no factor or share (every one is a glue), every glue it shows is set by its code
    cell, and the glued figures are the package functions' (llama.cpp held out by machine, vendors by group)."""
    section = _section()
    cells = re.findall(r"```\{code-cell\} ipython3\n(.*?)```", section, re.S)
    prose = re.sub(r"```.*?```", "", section, flags=re.S)
    shown = set(re.findall(r"\{glue:text\}`([^`]+)`", prose)) | set(re.findall(r"```\{glue:md\} (\w+)", section))
    bare = re.sub(r"\{(glue:text|ref)\}`[^`]+`", "", prose)
    assert not re.findall(r"\d+\.\d\d|\d+%", bare.replace("80%", ""))  # no typed factor or share
    glued: dict[str, object] = {}

    def glue(name: str, value: object, display: bool = True) -> None:
        glued[name] = value

    import statistics

    import llmcourse as lc
    import llmcourse.validation as lcv

    code = "\n".join(c.split("\n", 1)[1] if c.startswith(":tags:") else c for c in cells)
    namespace = {
        "glue": glue, "lc": lc, "lcv": lcv, "statistics": statistics, "course": lc.resolve(), "Markdown": str,
        "fmt": lc.fmt,
    }  # fmt: skip
    exec(code, namespace)
    assert shown <= set(glued)
    lcpp, vend = llama_cpp.held_out(), vd.vendor_held_out()
    assert glued["lcpp_decode_fac"] == f"{lcpp['decode'].stats.median_factor:.2f}"
    assert glued["lcpp_prefill_cov"] == f"{lcpp['prefill'].coverage:.0%}"
    assert glued["vend_AMD_fac"] == f"{vend['AMD'].raw.median_factor:.2f}"
    assert glued["vend_AMD_hfac"] == f"{vend['AMD'].held.stats.median_factor:.2f}"
    assert glued["vend_Intel_cov"] == f"{vend['Intel'].held.coverage:.0%}"
    assert glued["vend_Intel_n"] == f"{len([r for r in vd.vendor_rows() if r.vendor == 'Intel'])}"


def test_same_harness_pairs_each_mi300x_run_with_its_h200_twin():
    """The third party's file has 11 runs at 256 requests or fewer on both GPUs with the same engine, lengths and
    batch (counted by hand: vLLM at 800 tokens out with 32, 64, 128 and 256 requests and at 1,600 with 256; SGLang at
    800 with the same four, at 1,600 and at 3,200 with 256); each pair's quotient is the two rows' ratios divided."""
    held = vd.vendor_held_out()
    pairs = vd.same_harness(held)
    assert len(pairs) == 11
    ratio = {i: r for h in held.values() for i, r in h.ratios.items()}
    rows = {r.id: r for r in vd.vendor_rows()}
    for a, b, q in pairs:
        ra, rb = rows[a], rows[b]
        assert (ra.gpu, rb.gpu) == ("MI300X", "H200 SXM") and (ra.engine, ra.osl, ra.batch) == (
            rb.engine,
            rb.osl,
            rb.batch,
        )
        assert q == pytest.approx(ratio[a] / ratio[b])


# --- the vendor factor an answer on an AMD or Intel GPU carries ----------------------------------------------------

#: A hand-made table of vendor factors (numbers chosen for the arithmetic below, not fitted).
TABLE = {
    "method": "course",
    "metric": "output_tokens_per_s",
    "percentiles": [10, 90],
    "vendors": {
        "AMD": {"gpus": ["MI300X"], "n": 10, "groups": 3, "median": 0.5, "low": 0.25, "high": 0.8,
                "least": 0.2, "most": 0.9, "batches": [1, 256],
                "held_out": {"median_factor": 1.5, "within_2x": 0.9, "coverage": 0.6, "factors": [0.4, 0.6]}},
        "Intel": {"gpus": ["Gaudi 3"], "n": 4, "groups": 3, "median": 0.9, "low": 0.8, "high": 1.0,
                  "least": 0.75, "most": 1.1, "batches": [64, 64],
                  "held_out": {"median_factor": 1.1, "within_2x": 1.0, "coverage": 0.5, "factors": [0.85, 0.95]}},
        "AWS": {"gpus": ["Trainium2"], "n": 2, "groups": 2, "median": 1.0, "low": 0.9, "high": 1.1,
                "least": 0.8, "most": 1.25, "batches": [1, 1],
                "held_out": {"median_factor": 1.3, "within_2x": 1.0, "coverage": 0.0, "factors": [0.8, 1.25]}},
    },
}  # fmt: skip


def test_the_shipped_vendor_factors_are_up_to_date():
    """llmcourse/data/vendor_factors.json is what vendor_factor_table() gives today (else: run
    scripts/make_vendor_factors.py), and NVIDIA, the control, gets no factor of its own."""
    assert lb.shipped_vendor_factors() == vd.vendor_factor_table()
    assert sorted(lb.shipped_vendor_factors()["vendors"]) == ["AMD", "AWS", "Intel"]


def test_the_vendor_factor_is_the_median_ratio_of_the_vendors_rows():
    """The factor is the median measured / predicted of the vendor's rows, its band their 10th to 90th percentile
    (recomputed here from the rows' ratios, with statistics' median and numpy-style linear percentiles by hand)."""
    held = vd.vendor_held_out()
    t = vd.vendor_factor_table(held)
    for vendor in ("AMD", "Intel", "AWS"):
        r = sorted(held[vendor].ratios.values())
        n = len(r)
        mid = math.exp((math.log(r[(n - 1) // 2]) + math.log(r[n // 2])) / 2)  # the geometric median of n rows
        pos = (n - 1) * 0.1  # the 10th percentile: linear between ranks floor(pos) and floor(pos) + 1
        p10 = r[int(pos)] + (r[int(pos) + 1] - r[int(pos)]) * (pos - int(pos))
        f = t["vendors"][vendor]
        assert f["n"] == n and f["median"] == pytest.approx(mid, rel=1e-3) and f["low"] == pytest.approx(p10, rel=1e-3)
        assert f["low"] < f["median"] < f["high"]
        if vendor != "AWS":  # AMD's and Intel's median row runs slower than the model says; AWS's two rows straddle it
            assert f["median"] < 1.0


def test_an_amd_time_per_token_is_divided_by_its_factor_beside_the_models_own():
    """20 ms by the model at a factor 0.5 (band 0.25 to 0.8 of the model's tokens per second): 20 / 0.5 = 40 ms
    corrected; the band's times 20 / 0.8 = 25 ms to 20 / 0.25 = 80 ms; the model's own 20 ms stays first."""
    f = lb.vendor_factor_for("MI300X", table=TABLE)
    text = f.time_text("MI300X", 20.0)
    assert text.startswith(
        "time per token 20 ms by the model, 40 ms by the AMD factor (10 published rows on MI300X, 3 groups, at batches "
        "1 to 256,"
    )
    assert "between 25 and 80 ms" in text and "not measured" not in text
    assert "MI355X not measured" in f.time_text("MI355X", 20.0)  # the vendor's factor, said to be another GPU's


def test_a_factor_near_one_shows_no_corrected_figure():
    """Intel's hand-made 0.9 lies within 0.8 to 1.25 (CORRECTED_OUTSIDE): the model's figure alone, with the band
    20 / 1.0 = 20 ms to 20 / 0.8 = 25 ms."""
    text = lb.vendor_factor_for("Gaudi 3", table=TABLE).time_text("Gaudi 3", 20.0)
    assert "by the Intel factor" not in text and "between 20 and 25 ms" in text


def test_a_vendor_of_too_few_groups_shows_what_its_rows_ran_and_no_factor():
    """Two groups (AWS in the hand-made table: ratios 0.8 to 1.25, one request at a time): holding one out leaves a
    band of one row, so the answer gives the model's 20 ms, the rows' range and their batch, and no factor or band."""
    f = lb.vendor_factor_for("Trainium2", table=TABLE)
    assert not f.enough and lb.MIN_VENDOR_GROUPS == 3
    assert f.time_text("Trainium2", 20.0) == (
        "time per token 20 ms by the model; too few AWS rows for a factor: 2 published rows on Trainium2 (2 groups, "
        "one request at a time) ran 0.80x to 1.25x the model's output tokens per second"
    )


def test_which_gpus_carry_a_vendor_factor():
    """AMD's, Intel's and AWS's catalog accelerators carry their vendor's factor; NVIDIA's and those of a vendor with
    no rows read (Apple's, Google's TPUs) do not."""
    assert lb.vendor_factor_for("MI355X").vendor == "AMD" and lb.vendor_factor_for("Arc Pro B60").vendor == "Intel"
    assert lb.vendor_factor_for("Trainium2").vendor == "AWS"
    assert all(lb.vendor_factor_for(g) is None for g in ("H200 SXM", "B200", "M3 Max", "TPU v5e", "TPU v6e", "TPU v7"))
    assert all(g in lb.gpus for g in lb.GPU_VENDORS)  # every name of the table is a catalog GPU


def test_an_unknown_vendor_or_gpu_gets_did_you_mean():
    with pytest.raises(UnknownNameError, match="Did you mean 'Intel'"):
        lb.vendor_factor("intell")
    with pytest.raises(UnknownNameError, match="MI300"):
        lb.vendor_factor_for("MI300XX")
    with pytest.raises(UnknownNameError, match="Did you mean 'AWS'"):
        lb.vendor_factor("AWZ")


def test_the_trainium2_rows_are_the_neuron_tutorials_figures():
    """The two AWS rows as the Neuron tutorials print them (typed from the sources, not read back from the code):
    Llama 3.3 70B (the catalog's Llama-3.1-70B architecture) and Llama 3.1 405B in BF16 on a trn2.48xlarge at TP 64
    with LNC=2, its 16 Trainium2 chips; one request at a time, 10,000 tokens in; request_output_throughput p50."""
    rows = {r.id: r for r in vd.vendor_rows() if r.vendor == "AWS"}
    got = {i: (r.gpu, r.n_gpus, r.model, r.weights, r.isl, r.osl, r.batch, r.value) for i, r in rows.items()}
    assert got == {
        "aws-01": ("Trainium2", 16, "Llama-3.1-70B", "bf16", 10000, 1501, 1, 49.494171785795885),
        "aws-02": ("Trainium2", 16, "Llama-3.1-405B", "bf16", 10000, 1785, 1, 25.463487985775544),
    }
    assert all(r.source.startswith("https://github.com/aws-neuron/aws-neuron-sdk/blob/") for r in rows.values())


def test_a_trainium2_answer_names_the_measured_trainium2_rows():
    """The shipped AWS entry is the two Trainium2 rows' (two groups: one per model, too few for a factor), and the row an answer on a
    Trainium2 adds says so, with no "not measured" (the catalog's Trainium2 is the accelerator measured)."""
    f = lb.vendor_factor("AWS")
    assert (f.gpus, f.n, f.groups) == (("Trainium2",), 2, 2)
    label, text = lb.vendor_factor_row("trn2", 20.0, "course")
    assert label == "time per token, AWS rows"
    assert "too few AWS rows for a factor: 2 published rows on Trainium2 (2 groups, one request at a time)" in text
    assert "not measured" not in text and "80%" not in text and "factor near" not in text
    assert lb.vendor_factor_row("TPU v6e", 20.0, "course") is None  # no Google row read: no factor


def test_a_plan_on_an_amd_gpu_shows_the_factor_beside_its_own_time_per_token():
    """print(plan) on MI300X: the model's time per token row is unchanged, and a row below the bands divides it by
    the shipped AMD factor; an H200 plan has no such row, nor does an MI300X plan under another method."""
    brief = Brief(10, 2_000, 300, Q_(1, "s"), Q_(50, "ms"))
    p = plan("Llama-3.1-70B", "MI300X", brief)
    rows = dict(p.rows())
    f = lb.vendor_factor("AMD")
    tpot = p.tpot.m_as("ms")
    assert rows["time per token, AMD factor"].startswith(f"time per token {tpot:.0f} ms by the model, ")
    assert (
        f"{tpot / f.median:.0f} ms by the AMD factor ({f.n} published rows on MI300X"
        in rows["time per token, AMD factor"]
    )
    assert not any("factor" in k for k in dict(plan("Llama-3.1-70B", "H200 SXM", brief).rows()))
    assert not any("factor" in k for k in dict(plan("Llama-3.1-70B", "MI300X", brief, assumptions="planner").rows()))


def test_infinity_fabric_small_all_reduce_matches_the_measured_custom_kernel():
    """vLLM's custom all-reduce of a small message on MI300X, as published: 7.07 us for 4 KiB on 2 GPUs (ROCm/aiter
    PR 801) and 7.18 us for 2 KiB on 4 GPUs (vllm-project/vllm PR 19744); on 8 MI355X 6.3 us for 24 KiB (vLLM PR
    39080). The one-shot formula by hand: 3.5 us (engine_allreduce_us) + the link's latency + (N - 1) x bytes /
    (0.8 x bandwidth): 3.5 + 3.6 + 4,096 / 320 GB/s = 7.11 us; 3.5 + 3.6 + 3 x 2,048 / 320 GB/s = 7.12 us;
    3.5 + 2.4 + 7 x 24,576 / (0.8 x 537.6 GB/s) = 6.30 us."""
    from llmcourse.assumptions import resolve
    from llmcourse.replica.parallel import allreduce_seconds, layout

    a = resolve("course").replace(allreduce_algorithm="engine")
    for gpu, n, size, measured in (("MI300X", 2, 4096, 7.07), ("MI300X", 4, 2048, 7.18), ("MI355X", 8, 24_576, 6.3)):
        name, t = allreduce_seconds(layout("Llama-3.1-70B", gpu, tensor_parallel=n), n, size, a)
        assert name == "one-shot" and t * 1e6 == pytest.approx(measured, rel=0.02)


def test_a_group_on_a_fully_connected_link_uses_its_own_links():
    """Infinity Fabric and Gaudi 3's scale-up ports are meshes: a group of N reaches its peers over N - 1 of each
    GPU's 7 links. Gaudi 3 by hand: 525 GB/s x 1 / 7 = 75 GB/s for two cards, the 3 ports x 25 GB/s each pair has
    (docs.habana.ai Network Configuration). vLLM's custom all-reduce of 8 MiB as measured on MI300X: 181.43 us on 2
    GPUs (ROCm/aiter PR 801) and 118.31 us on 4 (vllm-project/vllm PR 19744); by hand, one-shot on 2:
    3.5 + 3.6 + 8,388,608 B / (0.8 x 400 / 7 GB/s) = 190.6 us; two-shot on 4: 2 x (3.5 + 3.6) + 1.5 x 8,388,608 B /
    (0.8 x 400 x 3 / 7 GB/s) = 106.0 us. A switched link (NVLink 4) gives every group its whole bandwidth."""
    from llmcourse import links
    from llmcourse.assumptions import resolve
    from llmcourse.formulas import FORMULAS
    from llmcourse.replica.parallel import allreduce_seconds, layout

    assert links["Gaudi 3 RoCE"].mesh and links["Infinity Fabric MI300X"].mesh and not links["NVLink 4"].mesh
    bw = FORMULAS["mesh_link_bandwidth"](link_bandwidth=Q_(525, "GB/s"), n_gpus=2, mesh_gpus=8)
    assert bw.m_as("GB/s") == pytest.approx(75.0)
    a = resolve("course").replace(allreduce_algorithm="engine")
    size = 8 * 1024 * 1024
    for n, measured, by_hand in ((2, 181.43, 190.6), (4, 118.31, 106.0)):
        _, t = allreduce_seconds(layout("Llama-3.1-70B", "MI300X", tensor_parallel=n), n, size, a)
        assert t * 1e6 == pytest.approx(by_hand, rel=0.005) and t * 1e6 == pytest.approx(measured, rel=0.15)
    _, h2 = allreduce_seconds(layout("Llama-3.1-70B", "H100 SXM", tensor_parallel=2), 2, size, a)
    assert h2 * 1e6 < 40  # 450 GB/s for any group: 3.5 + 0.8 + 8 MiB / 360 GB/s = 27.6 us


def test_a_link_mesh_flag_must_be_true_or_false():
    from llmcourse.catalog import Link

    with pytest.raises(InputError, match="mesh must be True or False"):
        Link("mine", bandwidth=Q_(50, "GB/s"), latency=Q_(2, "us"), base=Q_(5, "us"), mesh="yes")
