"""The unit registry: bytes, FLOPs and dollars are distinct dimensions; KiB is not kB."""

import pint
import pytest

from llmcourse.errors import InputError
from llmcourse.units import HOURS_PER_MONTH, Q_, as_quantity, fmt, sig, ureg


def test_kib_is_1024_bytes_and_kb_is_1000():
    """Binary and decimal prefixes are both defined and differ."""
    assert Q_(1, "KiB").to("B").m == 1024
    assert Q_(1, "kB").to("B").m == 1000
    assert Q_(1, "GiB").to("B").m == 1024**3


def test_bytes_are_not_dimensionless():
    """A byte count cannot be added to a plain number (pint's default would allow it)."""
    with pytest.raises(pint.DimensionalityError):
        Q_(1, "B") + 1


def test_flops_and_bytes_do_not_mix():
    """FLOPs have their own dimension."""
    with pytest.raises(pint.DimensionalityError):
        Q_(1, "FLOP") + Q_(1, "B")


def test_dollars_have_their_own_dimension():
    """Money is [currency]."""
    assert Q_(2.5, "USD/hour").dimensionality == ureg.get_dimensionality("USD/s")
    with pytest.raises(pint.DimensionalityError):
        Q_(1, "USD") + 1


def test_bandwidth_times_time_is_bytes():
    """TB/s x ms gives bytes."""
    assert Q_(3.35, "TB/s") * Q_(1, "ms") == Q_(3.35, "GB")


def test_month_is_730_hours():
    """The seeds bill 730 hours a month."""
    assert Q_(365 * 24 / 12, "hour") == HOURS_PER_MONTH


def test_as_quantity_refuses_bare_numbers_with_a_fix():
    """A bare number gets a message that shows how to attach the unit."""
    with pytest.raises(InputError, match=r"Q_\(80, 'GB'\)"):
        as_quantity(80, "GB", "memory")


def test_as_quantity_refuses_wrong_dimension():
    """Seconds where bytes are needed is refused, naming both."""
    with pytest.raises(InputError, match=r"\[information\].*\[time\]"):
        as_quantity(Q_(3, "s"), "GB", "memory")


def test_as_quantity_refuses_text():
    """Text is never read as a quantity (CONTRIBUTING.md, Errors): '80 GB' is refused with the Q_ to write."""
    with pytest.raises(InputError, match=r"not text: write Q_\(80, 'B'\)"):
        as_quantity("80 GB", "B", "memory")


def test_fmt_uses_the_requested_unit():
    """fmt prints in the reader's unit with significant figures."""
    assert fmt(Q_(327_680, "B"), "KiB") == "320 KiB"
    assert fmt(Q_(786_432_000, "B"), "GB", digits=2) == "0.79 GB"
    assert sig(10_850.6, 3) == "10,900"
