"""The timed estimate drill (llmcourse.widgets.drills), driven as a reader would: type, click, read."""

from __future__ import annotations

import math
import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llmcourse import Q_, models
from llmcourse.errors import InputError
from llmcourse.widgets.drills import (
    FACTOR,
    KINDS,
    Drill,
    Problem,
    deal_problem,
    read_answer,
    warmup,
    warmup_markdown,
    within,
)


class FakeClock:
    """Seconds that advance only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _texts(d: Drill, n: int) -> list[str]:
    out = [d.problem.text]
    for _ in range(n - 1):
        out.append(d.deal().text)
    return out


def test_same_seed_deals_the_same_questions() -> None:
    """Two drills with one seed deal the same ten questions; another seed deals others."""
    assert _texts(Drill(seed=7), 10) == _texts(Drill(seed=7), 10)
    assert _texts(Drill(seed=7), 10) != _texts(Drill(seed=8), 10)


def test_every_kind_is_dealt() -> None:
    """Over a session all six kinds of question come up."""
    d = Drill(seed=1)
    kinds = {d.problem.kind} | {d.deal().kind for _ in range(60)}
    assert kinds == set(KINDS)


def test_kv_per_token_problems_match_hand_arithmetic() -> None:
    """KV per token dealt = 2 x layers x KV heads x head dim x bytes, from the model's published shape."""
    rng = random.Random(0)
    for _ in range(20):
        p = deal_problem(rng, ["kv_per_token"])
        name = re.match(r"KV cache per token of (\S+) ", p.text).group(1)
        m = models[name]
        b = 2 if "BF16" in p.text else 1
        assert p.exact.to("B").m == 2 * m.layers * m.kv_heads * m.head_dim * b


def test_weights_problems_match_hand_arithmetic() -> None:
    """Weights dealt = parameters x bytes per parameter (BF16 2, FP8 1, INT4 0.5)."""
    rng = random.Random(0)
    for _ in range(20):
        p = deal_problem(rng, ["weights"])
        name = re.match(r"Weights of (\S+) ", p.text).group(1)
        b = {"BF16": 2, "FP8": 1, "INT4": 0.5}[p.text.rstrip("?").split()[-1]]
        assert p.exact.to("B").m == pytest.approx(models[name].params * b)


def test_typed_exact_answer_passes_and_scores() -> None:
    """Typing the exact figure and clicking Check scores a point and starts a streak."""
    d = Drill(seed=2)
    d.answer.value = d.problem.answer_text
    d.check_button.click()
    assert d.last.status == "correct"
    assert (d.score, d.attempted, d.streak, d.best_streak) == (1, 1, 1, 1)
    assert "Pass" in d.feedback.value and "score 1/1" in d.scoreboard.value


def test_the_band_is_one_and_a_half_times() -> None:
    """The pass band is 1.5x either way: between rounding (1.3x passes) and a factor-2 slip (2x misses)."""
    assert FACTOR == 1.5


def test_rounding_passes_and_a_factor_two_slip_misses() -> None:
    """1.3x and 1/1.3x the planner's figure pass; 2x (BF16 bytes for FP8, say) and 1/2 (keys but not values)
    miss, reset the streak, show the exact figure and name the slip."""
    d = Drill(seed=3, kinds=["kv_context"])
    assert d.check(f"{d.problem.exact.to('GB').m * 1.3} GB").status == "correct"
    d.deal()
    assert d.check(f"{d.problem.exact.to('GB').m / 1.3} GB").status == "correct"
    d.deal()
    v = d.check(f"{d.problem.exact.to('GB').m * 2} GB")
    assert v.status == "wrong" and d.streak == 0 and d.best_streak == 2 and d.score == 2 and d.attempted == 3
    assert d.problem.answer_text in v.message and "too large" in v.message and "bytes per cached value" in v.message
    d.deal()
    v = d.check(f"{d.problem.exact.to('GB').m / 2} GB")
    assert v.status == "wrong" and "keys and values" in v.message


def test_per_gpu_vs_per_replica_misses() -> None:
    """Counting replicas where the question asks for GPUs (half the GPUs of two-GPU replicas) misses and says so."""
    rng = random.Random(0)
    p = next(p for p in (deal_problem(rng, ["gpus_for_traffic"]) for _ in range(200)) if " on 2 x " in p.text)
    ok, ratio = within(Q_(p.exact.m / 2, ""), p.exact)
    assert not ok and ratio == 0.5
    d = Drill(seed=0, kinds=["gpus_for_traffic"])
    while " on 2 x " not in d.problem.text:
        d.deal()
    v = d.check(f"{d.problem.exact.m / 2:.0f}")
    assert v.status == "wrong" and "per GPU vs per replica" in v.message


def test_unit_conversion_is_understood() -> None:
    """An answer in other units of the same kind (bytes for KiB, MB for GB) is converted before comparing."""
    d = Drill(seed=4, kinds=["kv_per_token"])
    assert d.check(f"{d.problem.exact.to('B').m:,.0f} B").status == "correct"


def test_unitless_answer_gets_feedback_not_a_score() -> None:
    """A bare number where a unit is needed is refused with a message and is not counted."""
    d = Drill(seed=5, kinds=["weights"])
    v = d.check("16")
    assert v.status == "invalid" and "no unit" in v.message
    assert (d.score, d.attempted, d.streak) == (0, 0, 0)
    assert d.check(d.problem.answer_text).status == "correct"  # the question stays open


def test_wrong_dimension_gets_feedback() -> None:
    """Seconds for a size, or GB for a count, is the wrong kind of unit."""
    d = Drill(seed=5, kinds=["weights"])
    assert "wrong kind of unit" in d.check("16 ms").message
    c = Drill(seed=5, kinds=["max_batch"])
    v = c.check("94 GB")
    assert v.status == "invalid" and "count" in v.message


@pytest.mark.parametrize("typed", ["", "   ", "lots", "GB", "12 parsecs of bytes", "2**99999 GB", "-3 GB", "1e999 GB"])
def test_gibberish_gets_feedback_never_a_traceback(typed: str) -> None:
    """Anything unreadable is answered with a message and leaves the score alone."""
    d = Drill(seed=6, kinds=["kv_context"])
    d.answer.value = typed
    d.check_button.click()
    assert d.last.status == "invalid" and d.last.message.startswith("Not read")
    assert d.attempted == 0


def test_counts_accept_words_and_separators() -> None:
    """ "1,234 GPUs" and "94 conversations" read as plain counts."""
    p = Problem("max_batch", "?", Q_(94, ""), "", "")
    assert read_answer("94 conversations", p).m == 94
    g = Problem("gpus_for_traffic", "?", Q_(1_234, ""), "", "")
    assert read_answer("1,234 GPUs", g).m == 1_234


def test_rates_accept_tok_per_s() -> None:
    """A decode speed can be typed as tok/s, tokens/s or tokens per second."""
    p = Problem("decode_speed", "?", Q_(47, "1/s"), "tok/s", "")
    for typed in ("47 tok/s", "47 tokens/s", "47 tokens per second", "2820 tok/min"):
        assert read_answer(typed, p).to("1/s").m == pytest.approx(47)


def test_elapsed_time_is_shown() -> None:
    """The time from dealing to checking is measured and shown; the average appears in the summary."""
    clock = FakeClock()
    d = Drill(seed=9, clock=clock)
    clock.now += 12.5
    v = d.check(d.problem.answer_text)
    assert v.elapsed == pytest.approx(12.5) and "12.5 s" in v.message
    assert "12.5 s per answer" in d.summary()


def test_checked_question_is_closed_until_next() -> None:
    """A second check of the same question is not counted; Next deals a fresh one and clears the box."""
    d = Drill(seed=10)
    d.check(d.problem.answer_text)
    assert d.check(d.problem.answer_text).status == "closed" and d.attempted == 1
    d.answer.value = "something"
    d.next_button.click()
    assert d.answer.value == "" and d.check(d.problem.answer_text).status == "correct" and d.streak == 2


def test_bad_settings_are_refused() -> None:
    """Unknown kinds or a tolerance factor of 1 or less are refused with a message."""
    with pytest.raises(InputError, match="kinds"):
        Drill(kinds=["riddles"])
    with pytest.raises(InputError, match="factor"):
        Drill(factor=1)


@given(st.floats(1e-6, 1e9), st.floats(1.0, 1.49))
def test_within_passes_inside_the_band(x: float, r: float) -> None:
    """Any answer within 1.49x of the figure passes, in either direction."""
    assert within(Q_(x * r, "GB"), Q_(x, "GB"))[0]
    assert within(Q_(x / r, "GB"), Q_(x, "GB"))[0]


@given(st.floats(1e-6, 1e9), st.floats(1.51, 1e3))
def test_within_fails_beyond_the_band(x: float, r: float) -> None:
    """Any answer more than 1.51x away fails, either way: a factor-2 slip among them."""
    assert not within(Q_(x * r, "GB"), Q_(x, "GB"))[0]
    assert not within(Q_(x / r, "GB"), Q_(x, "GB"))[0]


def test_gpus_for_traffic_problems_match_hand_arithmetic() -> None:
    """GPUs dealt = ceil(requests/s x answer tokens x headroom / replica tok/s) x GPUs per replica, from the
    figures the question states. The throughput is printed to three figures, so the hand count is bracketed by the
    counts at the printed figure plus and minus half its last digit (1,120 tok/s is 1,115 to 1,125: at 3,000
    requests/s of 300 tokens, 1,040 to 1,050 replicas)."""
    rng = random.Random(4)
    for _ in range(15):
        p = deal_problem(rng, ["gpus_for_traffic"])
        m = re.match(
            r"([\d,]+) requests/s, each a 2,000-token prompt and a ([\d,]+)-token answer\. One replica of \S+ in \w+ "
            r"on (\d+) x .+? makes ([\d,.]+) tok/s at full load, prefill included\. How many GPUs, sized with "
            r"([\d.]+)x headroom\?",
            p.text,
        )
        rate, answer, n, x, h = (float(g.replace(",", "")) for g in m.groups())
        assert h == 1.3  # the course's headroom
        half = 0.5 * 10 ** (math.floor(math.log10(x)) - 2)  # half the last printed digit of three figures
        fewest, most = (math.ceil(rate * answer * h / bound) * n for bound in (x + half, x - half))
        assert fewest <= p.exact.m <= most


def test_warmup_is_one_of_each_kind_and_fixed() -> None:
    """The warm-up set has one question of each kind and is the same for the same seed."""
    a, b = warmup(5), warmup(5)
    assert [p.kind for p in a] == list(KINDS)
    assert [p.text for p in a] == [p.text for p in b]
    questions, answers = warmup_markdown(a)
    assert questions.count("\n") == answers.count("\n") == len(KINDS) - 1


def test_decode_speed_is_one_read_at_peak_bandwidth() -> None:
    """Decode speed dealt = GPUs x bandwidth / (weights + KV of 1,000 tokens), dense models only (hand arithmetic)."""
    rng = random.Random(3)
    for _ in range(15):
        p = deal_problem(rng, ["decode_speed"])
        m = re.match(r"Fastest single-user decode of (\S+) in (\w+) on (\d+) x (.+?) \(([\d.]+) TB/s", p.text)
        name, prec, n, bw = m.group(1), m.group(2), int(m.group(3)), float(m.group(5))
        model = models[name]
        assert not model.is_moe
        b = {"BF16": 2, "FP8": 1, "INT4": 0.5}[prec]
        kv = 2 * model.layers * model.kv_heads * model.head_dim * 2 * 1_000
        assert p.exact.to("1/s").m == pytest.approx(n * bw * 1e12 / (model.params * b + kv))


def test_drill_works_in_a_jupyter_kernel() -> None:
    """In a real kernel the drill displays as a widget, deals, checks a typed answer and scores."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    code = [
        "from llmcourse.widgets.drills import Drill\nd = Drill(seed=11)\nd",
        "d.answer.value = d.problem.answer_text\nd.check_button.click()\nprint(d.last.status, d.summary())",
        "d.next_button.click()\nd.answer.value = 'no idea'\nd.check_button.click()\nprint(d.last.status, d.attempted)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in code])
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    assert "application/vnd.jupyter.widget-view+json" in nb.cells[0].outputs[0]["data"]
    assert nb.cells[1].outputs[0]["text"].startswith("correct score 1/1, streak 1")
    assert nb.cells[2].outputs[0]["text"].strip() == "invalid 1"


def test_a_miss_names_the_usual_slip() -> None:
    """An answer a thousand times off (a unit prefix) or eight (bits for bytes) says so."""
    d = Drill(seed=12, kinds=["weights"])
    v = d.check(f"{d.problem.exact.to('GB').m} MB")
    assert v.status == "wrong" and "unit prefix" in v.message
    d.deal()
    v = d.check(f"{d.problem.exact.to('Gbit').m} GB")
    assert v.status == "wrong" and "bits vs bytes" in v.message


def test_each_kind_is_an_exercise_of_the_checker_outside_the_problem_sets() -> None:
    """Every kind is an engine Exercise with the drill's band; none is a chapter's exercise or in exercises()."""
    from llmcourse.exercises import CHAPTERS, exercises
    from llmcourse.exercises.defs_drills import DRILLS

    assert list(DRILLS) == list(KINDS)
    assert all(ex.factor == FACTOR and ex.id.startswith("drills_ex") for ex in DRILLS.values())
    assert "drills" not in CHAPTERS
    assert not {e.id for e in exercises()} & {ex.id for ex in DRILLS.values()}


def test_the_checker_itself_passes_within_the_factor() -> None:
    """engine.check on a dealt question: 1.45x and 1/1.45x pass, 1.55x and 1/1.55x fail (the band is 1.5x either way)."""
    from llmcourse.exercises import check

    p = deal_problem(random.Random(0), ["weights"])
    gb = p.exact.to("GB").m
    assert [check(p.exercise, Q_(gb * r, "GB")).status for r in (1.45, 1 / 1.45, 1.55, 1 / 1.55)] == [
        "correct",
        "correct",
        "wrong",
        "wrong",
    ]


def test_a_student_id_in_the_session_does_not_change_the_dealt_question() -> None:
    """With a student id set for the chapters' exercises, the drill still checks against the question it dealt."""
    from llmcourse.exercises import reset, student

    student("s1234567")
    try:
        d = Drill(seed=13)
        for _ in range(6):
            assert d.check(d.problem.answer_text).status == "correct"
            d.deal()
    finally:
        reset()


def test_a_negative_answer_is_not_counted() -> None:
    """A negative figure is read but refused as an estimate: a message, no score."""
    d = Drill(seed=6, kinds=["kv_context"])
    v = d.check("-3 GB")
    assert v.status == "invalid" and "positive" in v.message and d.attempted == 0
