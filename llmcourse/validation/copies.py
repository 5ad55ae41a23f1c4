"""Copies of one run in a measured file that merges several exports of the same runs: their times agree to the
coarser copy's last written decimal (:func:`same_run`); :class:`Copies` finds an earlier copy of a run by its setup,
and :func:`first_of` leaves a repeat out with :data:`REPEAT_REASON`. Shared by the aggregated reader
(:mod:`llmcourse.validation.measured`) and the disaggregated one (:mod:`llmcourse.validation.disagg`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from llmcourse.validation.cells import RowError

__all__ = [
    "LEAST_PLACES",
    "RELAYOUT_REASON",
    "REPEAT_REASON",
    "SAME_DIGITS",
    "Copies",
    "decimals",
    "first_of",
    "kept_once",
    "same_run",
]

#: The reason a row repeats an earlier one (aiconfigurator's file publishes some runs twice, under two ids).
REPEAT_REASON = "the same measurement as row {line} ({id}): the same setup and the same times, published more than once"

#: The significant digits two published copies of one run agree to, where both are written in full: the file's merged
#: exports write the same time with a different last digit (440.60590355220484 and 440.6059035522048 ms), and two
#: runs that differ agree on both times to far fewer.
SAME_DIGITS = 10
#: The fewest decimals a copy's time may be written to and still be matched to another copy (a time rounded to whole
#: milliseconds could match a different run's).
LEAST_PLACES = 2


def decimals(text: str) -> int:
    """The decimals a time is written to in the file (``"608.91"``: 2); a time in exponent form counts as full.

    Examples
    --------
    >>> decimals("608.91"), decimals("608.9100526005495"), decimals("609"), decimals("6.1e2")
    (2, 13, 0, 17)
    """
    text = text.strip()
    if "e" in text.lower():
        return 17
    return len(text.split(".")[1]) if "." in text else 0


def same_run(a: Sequence[float], a_places: Sequence[int], b: Sequence[float], b_places: Sequence[int]) -> bool:
    """Whether two copies' times are one run's: the same times, or each pair agreeing to within half a unit of the
    coarser copy's last written decimal (a copy rounded to 0.01 ms, 608.91, is the full 608.9100526005495), at most
    :data:`SAME_DIGITS` significant digits and at least :data:`LEAST_PLACES` decimals.

    Examples
    --------
    >>> same_run([608.9100526005495, 6.579993491720079], [13, 15], [608.91, 6.58], [2, 2])
    True
    >>> same_run([440.60590355220484, 12.174779310378478], [14, 15], [440.6059035522048, 12.174779310378478], [13, 15])
    True
    >>> same_run([608.9100526005495, 6.579993491720079], [13, 15], [608.92, 6.58], [2, 2])
    False
    >>> same_run([609.0, 7.0], [0, 0], [608.9100526005495, 6.579993491720079], [13, 15])  # too coarse to tell
    False
    >>> same_run([609.0, 7.0], [0, 0], [609.0, 7.0], [0, 0])  # the same times as written: one run
    True
    """
    if tuple(a) == tuple(b):
        return True
    for x, px, y, py in zip(a, a_places, b, b_places, strict=True):
        top = max(abs(x), abs(y))
        full = SAME_DIGITS - 1 - math.floor(math.log10(top)) if top > 0 else SAME_DIGITS
        places = min(px, py, full)
        if places < LEAST_PLACES or abs(x - y) > 0.5 * 10.0**-places * (1 + 1e-9):
            return False
    return True


class Copies:
    """The runs read so far, by setup: :meth:`setdefault` gives the item stored with an earlier copy of the same run
    (:func:`same_run`) under the same setup ``key``, or stores ``item`` for a new one; :meth:`items` gives each run's
    item, in the order the runs were first read."""

    def __init__(self) -> None:
        self._by: dict[Any, list[tuple[tuple[float, ...], tuple[int, ...], Any]]] = {}
        self._items: list[Any] = []

    def setdefault(self, key: Any, times: Sequence[float], places: Sequence[int], item: Any) -> Any:
        """The item of an earlier copy of this run under ``key``; else ``item``, stored for the run."""
        runs = self._by.setdefault(key, [])
        for t, p, earlier in runs:
            if same_run(t, p, times, places):
                return earlier
        runs.append((tuple(times), tuple(places), item))
        self._items.append(item)
        return item

    def items(self) -> list[Any]:
        """Each run's item, in the order the runs were first read."""
        return list(self._items)


def first_of(seen: Copies, same: Any, times: Sequence[float], places: Sequence[int], line: int, rid: str) -> None:
    """Record row ``line`` (id ``rid``) as the first with setup ``same`` and these ``times`` (written to ``places``
    decimals), or raise the :data:`REPEAT_REASON` naming the row that had them first (shared by the aggregated and
    disaggregated readers)."""
    first = seen.setdefault(same, times, places, (line, rid))
    if first != (line, rid):
        raise RowError(REPEAT_REASON.format(line=first[0], id=first[1]))


#: Why a row is left out whose times another row has under another layout: one run, its parallel layout encoded two
#: ways; the copy on the fewest GPUs is kept. (In the shipped file the layouts that were encoded two ways, the squared
#: exports' runs, are read on their GPUs first, by llmcourse.validation.aic_layouts.unsquared: their copies are
#: repeats.)
RELAYOUT_REASON = (
    "the same times as row {line} ({id}) under another layout ({gpus} GPUs against its {kept}): one run encoded two "
    "ways; kept once, on the fewest GPUs, as the run's name gives it"
)


def kept_once(copies: list[list[tuple[int, int, str, list[Any]]]]) -> tuple[list[Any], list[tuple[int, str, str]]]:
    """Each run's measurements once, in the file's order, from its copies (GPUs, line, id, measurements): the copy on
    the fewest GPUs, the first such; and the others left out as (line, id, reason), under another layout
    (:data:`RELAYOUT_REASON`) or the same (:data:`REPEAT_REASON`).

    Examples
    --------
    >>> rows, left = kept_once([[(16, 9, "wide", ["w"]), (4, 12, "named", ["n"])], [(4, 3, "other", ["o"])]])
    >>> rows, [(line, rid) for line, rid, _ in left]
    (['o', 'n'], [(9, 'wide')])
    """
    kept_copies, left = [], []
    for one in copies:
        kept = min(one, key=lambda c: (c[0], c[1]))
        kept_copies.append(kept)
        left += [
            (line, rid, (RELAYOUT_REASON if gpus != kept[0] else REPEAT_REASON).format(
                line=kept[1], id=kept[2], gpus=gpus, kept=kept[0]))
            for gpus, line, rid, _ in one
            if (line, rid) != (kept[1], kept[2])
        ]  # fmt: skip
    return [m for _, _, _, made in sorted(kept_copies, key=lambda c: c[1]) for m in made], left
