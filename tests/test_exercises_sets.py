"""The problem sets: every exercise's reference solution passes, every kind of wrong answer gets its feedback,
the notebooks hold no answers, and the book's variants reproduce the source texts' figures."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from exercise_solutions import SOLUTIONS, solve

import llmcourse as lc
from llmcourse import Q_
from llmcourse.exercises import CHAPTERS, check, exercises, get, reset
from llmcourse.exercises.cli import answer_key
from llmcourse.units import sig

ROOT = Path(__file__).resolve().parents[1]
ALL = exercises()
IDS = [e.id for e in ALL]
SEEDS = [None, *range(20)]

# A unit of the same kind that a student might confuse with the expected one, and the words the check gives.
SIBLING = {
    "KiB": ("kB", "KiB vs kB?"),
    "GiB": ("GB", "GiB vs GB?"),
    "GB": ("GiB", "GiB vs GB?"),
    "B": ("bit", "bits vs bytes?"),
    "ms": ("s", "unit prefix"),
    "s": ("ms", "unit prefix"),
    "1/s": ("1/min", "per second vs per minute"),
    "USD": ("kUSD", "unit prefix"),
    "TFLOP": ("GFLOP", "unit prefix"),
    "PFLOP/s": ("TFLOP/s", "unit prefix"),
    "": ("percent", "a fraction vs a percentage?"),
}


@pytest.fixture(autouse=True)
def _fresh_session():
    reset()
    yield
    reset()


def _value(ex, seed=None):
    """The reference solution's answer as a quantity in the exercise's unit."""
    q = solve(ex.id, ex.variant(seed))
    q = q if hasattr(q, "units") else Q_(float(q), "")
    return q.to(ex.unit) if ex.unit else q.to("")


def test_every_chapter_has_six_or_more():
    """Each of the twelve chapters has at least six exercises, and every exercise a reference solution."""
    for chapter in CHAPTERS:
        assert len(exercises(chapter)) >= 6, chapter
    assert set(SOLUTIONS) == set(IDS)


@pytest.mark.parametrize("exercise_id", IDS)
def test_reference_solution_passes(exercise_id):
    """The reference solution is right for the book's variant and for 20 students' variants."""
    ex = next(e for e in ALL if e.id == exercise_id)
    for seed in SEEDS:
        r = check(ex.id, solve(ex.id, ex.variant(seed)), seed=seed)
        assert r.correct, (seed, ex.variant(seed), r.message)


@pytest.mark.parametrize("exercise_id", IDS)
def test_variants_differ_between_students(exercise_id):
    """Twenty students get at least two different sets of givens; stories and hints fill in for every one."""
    ex = next(e for e in ALL if e.id == exercise_id)
    variants = [ex.variant(s) for s in SEEDS]
    assert len({repr(sorted(v.items())) for v in variants}) >= 2
    for v in variants:
        ex.story.format(**v)
        for h in ex.hints:
            h.format(**v)


@pytest.mark.parametrize("exercise_id", IDS)
def test_feedback_for_each_kind_of_wrong_answer(exercise_id):
    """Blank, wrong number, right number in a wrong unit, wrong dimension: each gets its own feedback."""
    ex = next(e for e in ALL if e.id == exercise_id)
    right = _value(ex)
    blank = check(ex.id, None)
    assert blank.status == "blank" and blank.message == "Not answered yet."

    wrong = check(ex.id, right * 1.37)
    assert wrong.status == "wrong" and ("too many" if ex.integer else "too large") in wrong.message

    other, words = SIBLING[ex.unit]
    slip = check(ex.id, Q_(right.m, other))
    assert slip.status == "wrong" and words in slip.message, slip.message

    convertible = check(ex.id, right.to(other))
    assert convertible.correct, convertible.message

    wrong_dim = "GB" if ex.unit in ("s", "ms") else "s"
    dim = check(ex.id, Q_(right.m, wrong_dim))
    assert dim.status == "unit" and "wrong kind of unit" in dim.message
    assert dim.expected_unit == (ex.unit or "a plain number")
    assert len(dim.hints) >= 1  # tries so far reveal hints


@pytest.mark.parametrize("exercise_id", [e.id for e in ALL if e.unit and not e.bare_ok])
def test_bare_number_refused(exercise_id):
    """Where the exercise does not state a unit for bare numbers, the right number without one is refused."""
    ex = next(e for e in ALL if e.id == exercise_id)
    r = check(ex.id, _value(ex).m)
    assert r.status == "unit" and "bare number" in r.message


# --- the notebooks ----------------------------------------------------------------------------------------------
NOTEBOOKS = {  # NN_<chapter>.md, or NNa_<chapter>.md for a chapter inserted after NN
    c: next(
        (p for p in (ROOT / "exercises").glob("*.md") if re.fullmatch(rf"\d\d[a-z]?_{c}\.md", p.name)),
        ROOT / "exercises" / f"NN_{c}.md",
    )
    for c in CHAPTERS
}


@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_notebook_checks_every_exercise_once(chapter):
    """One notebook per chapter, a blank answer cell and a check for each of its exercises, in order."""
    text = NOTEBOOKS[chapter].read_text()
    assert text.startswith("---\njupytext:") and f"(exercises_{chapter})=" in text
    ids = re.findall(r'check\("([a-z_0-9]+)", answer\)', text)
    assert ids == [e.id for e in exercises(chapter)]
    answers = re.findall(r"^answer = .*$", text, flags=re.M)
    assert len(answers) == len(ids) and all(a.startswith("answer = None  # your answer") for a in answers)


def _forms(x: float) -> set[str]:
    """Ways a number may be written, keeping those with at least three significant digits."""
    forms = {sig(x, 3), sig(x, 4), f"{x:g}", f"{x:.2f}", f"{round(x):,}", f"{round(x)}", sig(x, 3).replace(",", "")}
    return {f for f in forms if len(re.sub(r"[^1-9]", "", f.lstrip("0.").rstrip("0"))) >= 2 and len(f) >= 3}


@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_answers_are_not_in_the_notebook(chapter):
    """The book variant's answers appear nowhere in the notebook source (in the exercise's unit)."""
    text = NOTEBOOKS[chapter].read_text()
    for ex in exercises(chapter):
        for form in _forms(_value(ex).m):
            assert not re.search(rf"(?<![\d.,]){re.escape(form)}(?![\d])", text), (ex.id, form)


def test_toc_lists_the_exercise_notebooks():
    """The table of contents has an Exercises part with every notebook."""
    toc = (ROOT / "_toc.yml").read_text()
    assert "caption: Exercises" in toc
    for path in NOTEBOOKS.values():
        assert f"file: exercises/{path.stem}" in toc


# --- the book's variants reproduce the source texts' figures ----------------------------------------------------
SOURCE_FIGURES = [
    ("kv_cache_ex1", Q_(320, "KiB")),  # Llama 3.1 70B: 2 x 80 x 8 x 128 x 2 B
    ("first_estimate_ex1", Q_(72.7, "GB")),  # seed 000: Qwen2.5-72B in FP8
    ("first_estimate_ex2", Q_(144, "GB")),  # seed 000: 2 x 80 GB x 0.9
    ("first_estimate_ex3", Q_(0.754, "GB")),  # seed 000: 2,300 x 320 KiB
    ("first_estimate_ex4", 94),  # seed 000: (144 - 72.7) / 0.754, rounded down
    ("first_estimate_ex6", Q_(4_387, "1/s")),  # seed 000: 4,387 tok/s total
    ("first_estimate_ex7", Q_(0.32, "USD")),  # seed 000: $0.32 per million output tokens
    ("tokens_ex5", Q_(21.7e6, "1/s")),  # seed 004: 17,361 req/s x 1,250 tokens
    ("weights_ex4", 12),  # 405.9e9 x 2 B / 72 GB = 11.3 -> 12
    ("prefill_ex7", 200),  # seed 002: ~200 H100s of prefill
    ("fleet_ex7", Q_(25.8, "ms")),  # seed 002: 25.8 ms per step
    ("fleet_ex8", 81),  # seed 002: 81 replicas
    ("fleet_ex9", Q_(296_000, "USD")),  # seed 002: ~$296K a month
    # issue 4: ~26 ms at batch 32 for Qwen3-30B-A3B (its reads, 25.65 ms, + 1 ms), + the 48 layers' floor (48 x 23 us =
    # 1.10 ms) the course now counts: 27.75 ms
    ("moe_ex9", Q_(27.75, "ms")),
    ("batching_ex7", Q_(7.9, "ms")),  # lab: 7.9 ms at batch 64
    ("batching_ex9", Q_(5.83, "USD")),  # lab: $5.83 per million at batch 1
    ("batching_ex10", Q_(0.21, "USD")),  # lab: $0.21 per million at batch 64
    ("queueing_ex8", Q_(0.5, "s")),  # M/M/1: 1 / (10 - 8) per s
]


@pytest.mark.parametrize(("exercise_id", "figure"), SOURCE_FIGURES)
def test_book_variant_reproduces_source_figure(exercise_id, figure):
    """The default variant's answer is the figure printed in the sources (to their rounding)."""
    ex = next(e for e in ALL if e.id == exercise_id)
    [(_, got)] = answer_key(ex.id)  # the teacher's key
    want = figure if hasattr(figure, "units") else Q_(figure, "")
    assert math.isclose(got.to(want.units).m, want.m, rel_tol=0.03), (got, want)


@pytest.mark.parametrize("exercise_id", IDS)
def test_answer_is_not_in_the_story(exercise_id):
    """The story a page displays (the book's variant) gives the givens, not the answer."""
    ex = next(e for e in ALL if e.id == exercise_id)
    text = ex.text()
    for form in _forms(_value(ex).m):
        assert not re.search(rf"(?<![\d.,]){re.escape(form)}(?![\d])", text), form


@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_ids_follow_the_chapter_labels(chapter):
    """An auto-checked exercise numbered within the chapter's own exercises carries one of its labels (a chapter
    split in two, as 09_fleet and 09b_fleet_cost, holds its labels in both files)."""
    books = [p for p in (ROOT / "book").glob("*.md") if re.fullmatch(rf"\d\d[a-z]?_{chapter}(_[a-z_]+)?\.md", p.name)]
    if not books:
        pytest.skip(f"no chapter file for {chapter} yet")
    labels = {x for b in books for x in re.findall(rf"^:label: ({chapter}_ex\d+)$", b.read_text(), flags=re.M)}
    top = max((int(x.rsplit("_ex", 1)[1]) for x in labels), default=0)
    ours = [e.id for e in exercises(chapter) if e.number <= top]
    assert set(ours) <= labels, set(ours) - labels


# --- the method each exercise uses, and what its story says about it ---------------------------------------------
# Words each source's own text uses for its assumptions, which the story of an exercise reproducing that source's
# worked example must state. The back-of-the-envelope method (seed 000): "plan on using about 90%" of memory, a
# step of bytes / (n x bandwidth) (the datasheet bandwidth), "a realistic 50%" of the BF16 peak, and throughput
# counted from decode steps. The capacity-planning method (seed 002): "bandwidth x 0.7", "FLOPS x 0.5", "keep 30%
# headroom for prefill work and bursts". The interactive lab (seed 001): "70% of that is achievable", "assuming
# 50%".
ENVELOPE_WORDS = ("back-of-the-envelope", "90%", "datasheet bandwidth", "50% of the BF16 peak")
CAPACITY_WORDS = ("capacity-planning method", "70% of peak bandwidth", "50% of the BF16 peak")
LAB_WORDS = ("as the lab does", "70% of peak bandwidth", "50% of the BF16 peak")
# The fleet chapters' replica exercises are a decode-only first cut of the chat fleet (the capacity preset): their
# stories name it so, and state the same shares.
FLEET_CUT_WORDS = ("decode-only first cut", "70% of peak bandwidth", "50% of the BF16 peak")
STATED_METHOD = [
    ("first_estimate_ex5", ENVELOPE_WORDS),
    ("first_estimate_ex6", (*ENVELOPE_WORDS, "prefill of the prompts is not charged")),
    ("first_estimate_ex7", (*ENVELOPE_WORDS, "does not charge prefill")),
    ("prefill_ex2", ("back-of-the-envelope", "50% of that peak", "no attention term")),
    ("prefill_ex7", ("capacity-planning method", "50% of the BF16 peak")),
    ("batching_ex7", LAB_WORDS),
    ("batching_ex9", LAB_WORDS),
    ("batching_ex10", LAB_WORDS),
    ("fleet_ex7", FLEET_CUT_WORDS),
    ("fleet_ex8", (*FLEET_CUT_WORDS, "keeps 30% of its throughput back")),
    ("fleet_ex9", (*FLEET_CUT_WORDS, "30% headroom")),
]


@pytest.mark.parametrize(("exercise_id", "words"), STATED_METHOD)
def test_source_variant_states_the_sources_assumptions(exercise_id, words):
    """An exercise that reproduces a source's worked figure says, in its story, the assumptions that source makes."""
    text = get(exercise_id).text()
    missing = [w for w in words if w not in text]
    assert not missing, (missing, text)


_STATES_A_RATE = re.compile(r"of (the )?peak bandwidth|datasheet bandwidth|FLOP/s|headroom|throughput back")
_METHOD_NAMES = (
    "the course's",
    "back-of-the-envelope",
    "capacity-planning method",
    "the lab",
    "pure weight-read",
    "decode-only first cut",
)


@pytest.mark.parametrize("exercise_id", IDS)
def test_story_that_states_an_efficiency_names_its_method(exercise_id):
    """Where a story gives a bandwidth or compute share or a headroom, it says whose method those figures are."""
    text = get(exercise_id).text()
    if _STATES_A_RATE.search(text):
        assert any(n in text for n in _METHOD_NAMES), text


# --- the givens of every variant are physically possible ------------------------------------------------------------
def _hand_kv_per_token(model):
    """2 (keys and values) x layers x KV heads x head dim x 2 bytes, from the catalog's shape."""
    m = lc.models[model]
    return 2 * m.layers * m.kv_heads * m.head_dim * 2


def _hand_usable(gpu, n):
    """90% of the GPUs' memory in bytes ("plan on using about 90% of it", the back-of-the-envelope method)."""
    return 0.9 * n * lc.gpus[gpu].memory.to("B").m


@pytest.mark.parametrize("exercise_id", ["fleet_ex1", "fleet_ex2", "fleet_ex4", "fleet_ex7", "fleet_ex8", "fleet_ex9"])
def test_fleet_replica_fits_for_every_variant(exercise_id):
    """Each variant's replica holds its weights and the KV cache of its whole batch at the full context."""
    ex = get(exercise_id)
    for seed in SEEDS:
        v = ex.variant(seed)
        weights = lc.models[v["model"]].params * lc.PRECISIONS[v["precision"]]
        kv = v["batch"] * v["context"] * _hand_kv_per_token(v["model"])
        assert weights + kv <= _hand_usable(v["gpu"], v["tp"]), (seed, v)


def test_long_document_replica_fits_for_every_variant():
    """fleet_ex6: the requests' KV cache fits beside the weights on the replica the story names (the book's
    variant: 40 x 5,000 x 327,680 B = 65.5 GB beside 70.55 GB of FP8 weights, in 144 GB)."""
    ex = get("fleet_ex6")
    assert math.isclose(answer_key(ex.id)[0][1].to("GB").m, 40 * 5_000 * 327_680 / 1e9, rel_tol=1e-9)
    for seed in SEEDS:
        v = ex.variant(seed)
        weights = lc.models[v["model"]].params * lc.PRECISIONS[v["precision"]]
        kv = v["requests"] * v["context"] * _hand_kv_per_token(v["model"])
        assert weights + kv <= _hand_usable(v["gpu"], v["tp"]), (seed, v)


def test_one_gpu_weight_read_model_fits():
    """decode_ex4: every variant's weights fit on its one GPU, and the book's variant (Llama 3.1 70B in FP8 on one
    H100) is 10,000 tokens/s x 70.554 GB / 3.35 TB/s = a batch of 210.6."""
    ex = get("decode_ex4")
    assert math.isclose(answer_key(ex.id)[0][1].m, 10_000 * 70.554e9 / 3.35e12, rel_tol=1e-3)
    for seed in SEEDS:
        v = ex.variant(seed)
        weights = lc.models[v["model"]].params * lc.PRECISIONS[v["precision"]]
        assert weights < _hand_usable(v["gpu"], 1), (seed, v)


def test_tightest_per_token_target_can_be_met():
    """design_review_ex2: one read of the FP8 weights over two H100s at 70% of their bandwidth takes
    70.554 GB / (0.7 x 2 x 3.35 TB/s) = 15.04 ms, so every variant's target is above that, and each plan meets it."""
    floor_ms = 70.554e9 / (0.7 * 2 * 3.35e12) * 1e3
    assert 15 < floor_ms < 15.1
    ex = get("design_review_ex2")
    for seed in SEEDS:
        v = ex.variant(seed)
        assert v["tight"] > floor_ms, (seed, v)
        brief = lc.Brief(v["rps"], v["prompt"], v["answer"], Q_(v["ttft"], "ms"), Q_(v["tight"], "ms"))
        assert lc.plan("Llama-3.1-70B", "H100 SXM", brief, weight_bytes="fp8", tensor_parallel=2).meets_targets


def test_largest_batch_at_a_speed_target_by_hand():
    """decode_ex6, the book's variant by the course's method: a step of at most 1/30 s = 33.33 ms reads (70.554 GB +
    B x 2,304 x 327,680 B) at 0.7 x 2 x 3.35 TB/s, costs 1 ms and the 80 layers' floor (80 x 23 us = 1.84 ms), and pays
    2 x 80 all-reduces of B x 8,192 x 2 B on NVLink 4, each the engines' one-shot on two GPUs, 3.5 + 0.8 us + (2 - 1) x
    B x 16,384 B / (0.8 x 450 GB/s). So B <= (33.33 - 1 - 1.84 - 160 x 4.3 us - 15.04) ms / (0.1610 + 160 x 0.0455 us)
    ms = 14.76 / 0.1683 = 87.7, i.e. 87; the FP8 compute then takes 87 x 2 x 70.554e9 / (0.5 x 2 x 1,979 TFLOP/s) =
    6.2 ms, well inside the reads' 29.0 ms."""
    bw = 0.7 * 2 * 3.35e12
    per_allreduce, per_sequence = 3.5e-6 + 0.8e-6, 8_192 * 2 / (0.8 * 450e9)
    room = 1 / 30 - 1e-3 - 80 * 23e-6 - 160 * per_allreduce - 70.554e9 / bw
    b = math.floor(room / (2_304 * 327_680 / bw + 160 * per_sequence))
    assert b == 87 and b * 2 * 70.554e9 / (0.5 * 2 * 1979e12) < (70.554e9 + b * 2_304 * 327_680) / bw
    assert answer_key("decode_ex6")[0][1].m == b
