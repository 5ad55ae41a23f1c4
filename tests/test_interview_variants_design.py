"""Issue 37: the variants of the design questions whose worked numbers size fleets by simulation (several seconds a
variant), checked as tests/test_interview_practice.py checks every other question's, in a file of their own so that
pytest-xdist runs them beside that file (``--dist loadfile``: a file on one worker). See tests/interview_variants.py.
"""

from __future__ import annotations

import pytest
from interview_variants import SIMULATED_DESIGN, check_every_variant


@pytest.mark.slow
@pytest.mark.parametrize("qid", SIMULATED_DESIGN)
def test_every_variant_renders_with_finite_numbers_in_the_right_unit(qid: str) -> None:
    """40 variants: every part renders, the key figure is finite, positive, of one dimension, and appears in the worked
    answer's text as the template writes it (the rubric's number is the worked one)."""
    check_every_variant(qid)
