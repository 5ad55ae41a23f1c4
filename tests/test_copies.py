"""llmcourse.validation.copies: when two copies of a measured run are one run (a file that merges several exports
writes the same time in full, with a different last digit, or rounded to hundredths)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from llmcourse.validation.copies import Copies, decimals, same_run

TIMES = st.floats(min_value=0.5, max_value=50_000, allow_nan=False, allow_infinity=False)


@given(TIMES, TIMES, st.integers(min_value=2, max_value=4))
def test_a_time_and_its_rounding_are_one_run_either_way_round(ttft, tpot, places):
    """A copy rounded to 2-4 decimals (as the file writes it: the text's decimals) is the same run as the copy written
    to 12, whichever comes first."""
    full = tuple(float(f"{t:.12f}") for t in (ttft, tpot))
    full_places = tuple(decimals(f"{t:.12f}") for t in (ttft, tpot))
    short = tuple(float(f"{t:.{places}f}") for t in full)
    short_places = tuple(decimals(f"{t:.{places}f}") for t in full)
    assert same_run(full, full_places, short, short_places)
    assert same_run(short, short_places, full, full_places)


@given(TIMES, TIMES)
def test_a_time_a_hundredth_off_at_hundredths_is_another_run(ttft, tpot):
    """Two copies written to hundredths that differ by 0.01 ms in one time are two runs."""
    a = (round(ttft, 2), round(tpot, 2))
    b = (round(ttft + 0.01, 2), a[1])
    assert not same_run(a, (2, 2), b, (2, 2))


def test_copies_finds_a_run_only_under_its_own_setup():
    """An earlier copy is found under the same setup key only; a new run under that key, or the same times under
    another key, is stored as a run of its own; each run's item is kept once, in the order read."""
    seen = Copies()
    assert seen.setdefault(("Llama", "H100", 32), (608.9100526005495, 6.579993491720079), (13, 15), "first") == "first"
    assert seen.setdefault(("Llama", "H100", 32), (608.91, 6.58), (2, 2), "copy") == "first"
    assert seen.setdefault(("Llama", "H100", 64), (608.91, 6.58), (2, 2), "other setup") == "other setup"
    assert seen.setdefault(("Llama", "H100", 32), (608.93, 6.58), (2, 2), "other run") == "other run"
    assert seen.items() == ["first", "other setup", "other run"]
