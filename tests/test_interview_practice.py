"""Issue 37: the bank's variants and chains, the Leitner schedule, the progress file, the drill and the mock.

Expected values are derived by hand in the comments (the Leitner intervals, the dates) or are properties the
questions' own text states (a follow-up's `moves`); never output of the code under test.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json

import pytest
from interview_bank import BANK
from interview_variants import SIMULATED_DESIGN, check_every_variant

from llmcourse.__main__ import main
from llmcourse.errors import InputError
from llmcourse.interview import QUESTIONS
from llmcourse.interview.practice import (
    VARIANTS,
    Card,
    Progress,
    answer_text,
    chains_of,
    daily_set,
    drill_session,
    grade,
    interval,
    load_progress,
    mock_session,
    report,
    save_progress,
)

# each question's worked numbers computed once per variant in this process (tests/interview_bank.py): the variant
# test, the bank's report and the chains' follow-ups ask the same variants
VARIED = [q for q in BANK.values() if q.varies]


@pytest.mark.slow
@pytest.mark.parametrize("qid", [q.id for q in VARIED if q.id not in SIMULATED_DESIGN])
def test_every_variant_renders_with_finite_numbers_in_the_right_unit(qid: str) -> None:
    """40 variants (20+ distinct key figures for a numeric question): every part renders, the key figure is finite,
    positive, of one dimension, and appears in the worked answer's text as the template writes it (the rubric's number
    is the worked one). The simulated design questions: tests/test_interview_variants_design.py."""
    check_every_variant(qid)


def test_the_simulated_design_questions_are_in_the_bank_with_variants() -> None:
    """The questions left to tests/test_interview_variants_design.py are there to check: a renamed or dropped one
    would leave its variants unchecked by either file."""
    assert set(SIMULATED_DESIGN) <= {q.id for q in VARIED}
    assert all(BANK[qid].kind == "design" for qid in SIMULATED_DESIGN)  # in no distinct-answer count of report()
    assert not {q.id for qs in QUESTIONS.chains().values() for q in qs} & set(SIMULATED_DESIGN)  # nor in a chain


def test_chains_have_three_to_six_steps_and_at_least_ten() -> None:
    chains = QUESTIONS.chains()
    assert len(chains) >= 10
    assert all(3 <= len(qs) <= 6 for qs in chains.values())


@pytest.mark.parametrize("cid", list(QUESTIONS.chains()))
def test_each_follow_up_moves_its_figure_the_way_it_says(cid: str) -> None:
    """For every variant both steps have, the `moves` figure of a follow-up is above (up) or below (down) the step
    before's."""
    qs = chains_of(BANK)[cid]
    assert [q.id for q in qs] == [q.id for q in QUESTIONS.chains()[cid]]
    for prev, q in itertools.pairwise(qs):
        fig, way = q.moves
        variants = range(24) if prev.varies and q.varies else [0]
        for v in variants:
            a, b = prev.numbers(v)[fig], q.numbers(v)[fig]
            assert (b > a) if way == "up" else (b < a), (cid, q.id, v, a, b)


def test_the_bank_reports_its_counts() -> None:
    r = report(BANK, variants=VARIANTS)
    assert r["questions"] == len(QUESTIONS) and sum(r["kind"].values()) == len(QUESTIONS)
    assert r["design"] >= 3 and len(r["chains"]) >= 10
    assert all(r["distinct_answers"][q.id] >= 20 for q in VARIED if q.kind == "numeric")


# --- grading with the exercise checker -------------------------------------------------------------------------------
def test_an_answer_within_the_factor_passes_and_a_slip_is_named() -> None:
    """320 KiB passes; 2.56 Mbit-ish slips: 320 KiB x 8 given as bits -> 'bits vs bytes'; 10x off misses."""
    q = QUESTIONS["kv_per_token"]
    assert grade(q, "320 KiB").correct and grade(q, "400 KiB").correct  # 1.25x, inside 1.5x
    assert "bits vs bytes" in grade(q, f"{320 * 8} KiB").message
    assert not grade(q, "32 KiB").correct


@pytest.mark.parametrize("answer", ["", "lots", "1e400", "-3", "NaN", "3 furlongs", "💥", "1,5", None, "9" * 5000])
def test_no_typed_answer_crashes_the_grader(answer: object) -> None:
    r = grade(QUESTIONS["fit_32k"], answer, 3)
    assert not r.correct and r.message


# --- Leitner ---------------------------------------------------------------------------------------------------------
def test_leitner_schedule_by_hand() -> None:
    """Box n due every 2^(n-1) days: right on Jan 1 from box 1 -> box 2, due Jan 3; right again -> box 3, due Jan 7
    (4 days); wrong -> box 1, due the next day; box 5 stays at 5 (16 days)."""
    assert [interval(b) for b in range(1, 6)] == [1, 2, 4, 8, 16]
    c, d = Card(), dt.date(2026, 1, 1)
    c.review(True, d)
    assert (c.box, c.due) == (2, "2026-01-03")
    c.review(True, dt.date(2026, 1, 3))
    assert (c.box, c.due) == (3, "2026-01-07")
    c.review(False, dt.date(2026, 1, 7))
    assert (c.box, c.due, c.right, c.wrong) == (1, "2026-01-08", 2, 1)
    top = Card(box=5)
    top.review(True, d)
    assert (top.box, top.due) == (5, "2026-01-17")
    with pytest.raises(InputError, match="box"):
        interval(6)


def test_the_daily_set_deals_due_cards_first_then_new_ones() -> None:
    today = dt.date(2026, 2, 1)
    p = Progress(
        cards={
            "traffic": Card(2, "2026-01-30"),
            "kv_context": Card(1, "2026-01-31"),
            "weights_fit": Card(3, "2026-03-01"),
        }
    )
    got = [q.id for q in daily_set(p, today, 4)]
    assert got[:2] == ["traffic", "kv_context"]  # overdue longest first; weights_fit is not due
    assert "weights_fit" not in got and all(q not in p.cards for q in got[2:])
    with pytest.raises(InputError, match="--n"):
        daily_set(p, today, 0)
    with pytest.raises(InputError, match="--topic"):
        daily_set(p, today, 3, topic="astrology")


# --- the progress file -------------------------------------------------------------------------------------------------
def test_progress_round_trip(tmp_path) -> None:
    p = Progress()
    p.record(QUESTIONS["traffic"], True, dt.date(2026, 1, 1))
    p.record(QUESTIONS["kv_context"], False, dt.date(2026, 1, 1))
    f = tmp_path / "me.json"
    save_progress(p, f)
    back = load_progress(f)
    assert back.cards == p.cards and back.topics == {"tokens": [1, 1], "KV cache": [0, 1]}
    assert load_progress(tmp_path / "new.json").cards == {}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("not json", "not a JSON progress file"),
        ('{"cards": {}}', "not an interview progress file"),
        ('{"format": "llmcourse-interview-progress", "version": 9, "cards": {}, "topics": {}}', "version 9"),
        (
            '{"format": "llmcourse-interview-progress", "version": 1, "cards": {"x": {"box": 9}}, "topics": {}}',
            "cannot",
        ),
        ("[1, 2]", "not an interview progress file"),
    ],
)
def test_a_corrupt_or_foreign_progress_file_is_refused_and_kept(tmp_path, text: str, words: str) -> None:
    f = tmp_path / "p.json"
    f.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="--progress") as info:
        load_progress(f)
    assert words in str(info.value) and f.read_text(encoding="utf-8") == text


def test_the_drill_command_refuses_a_bad_file_without_touching_it(tmp_path, capsys, monkeypatch) -> None:
    f = tmp_path / "p.json"
    f.write_text("garbage", encoding="utf-8")
    monkeypatch.setattr("sys.stdin", iter(["1\n"]))
    assert main(["drill", "--progress", str(f)]) == 2
    assert "--progress" in capsys.readouterr().err and f.read_text() == "garbage"


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["drill", "--progress", "x.json", "--n", "two"], "--n"),
        (["drill", "--progress", "x.json", "--n", "0"], "--n"),
        (["drill", "--progress", "x.json", "--today", "yesterday"], "--today"),
        (["drill", "--progress", "x.json", "--topic", "astrology"], "--topic"),
        (["mock", "--minutes", "-5"], "--minutes"),
        (["mock", "--chain", "nope"], "--chain"),
        (["mock", "--seed", "x"], "--seed"),
        (["drill"], "--progress"),
    ],
)
def test_every_bad_flag_is_refused_naming_it(argv: list[str], flag: str, capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", iter([]))
    assert main(argv) == 2
    assert flag in capsys.readouterr().err


# --- sessions with a fake clock -----------------------------------------------------------------------------------------
def test_a_drill_session_scores_by_competency_and_moves_cards() -> None:
    p, said = Progress(), []
    today = dt.date(2026, 1, 1)
    cards = daily_set(p, today, 2)
    right = answer_text(cards[0], 0) if not cards[0].varies else "?"
    score = drill_session([right, "nonsense"], p, today, 2, say=said.append)
    assert sum(a for _, a in score.values()) == 2
    assert p.cards[cards[1].id].box == 1 and p.cards[cards[1].id].due == "2026-01-02"
    assert any("Score by competency" in s for s in said)


class FakeClock:
    """Seconds that advance by ``step`` each time the clock is read."""

    def __init__(self, step: float) -> None:
        self.t, self.step = 0.0, step

    def __call__(self) -> float:
        self.t += self.step
        return self.t


def test_the_mock_scores_right_answers_and_stops_at_the_time_limit() -> None:
    """On the book's givens (variant 0) the key figures' own text passes. With the clock at 2 minutes a read and a
    3-minute limit, the second answer (read at 4 minutes from the start at 2) is late: 1 asked right, 3 asked."""
    qs = QUESTIONS.chains()["billion"]
    answers = [answer_text(q, 0) for q in qs]
    mock = dict(chain="billion", say=lambda s: None, variant=0)
    all_right = mock_session(answers, FakeClock(1), minutes=20, **mock)
    assert all_right == {"fleet": [3, 3]}
    late = mock_session(answers, FakeClock(120), minutes=3, **mock)
    assert late == {"fleet": [1, 3]}


def test_the_mock_never_crashes_on_typed_text() -> None:
    score = mock_session(["", "💥" * 300, "1e999"], FakeClock(1), chain="design", seed=2, say=lambda s: None)
    assert sum(a for _, a in score.values()) == 3 and sum(r for r, _ in score.values()) == 0


def test_the_progress_json_names_its_format(tmp_path) -> None:
    f = tmp_path / "p.json"
    save_progress(Progress(), f)
    data = json.loads(f.read_text())
    assert data["format"] == "llmcourse-interview-progress" and data["version"] == 1
