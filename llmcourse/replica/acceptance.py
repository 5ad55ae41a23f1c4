"""The published figures of speculative methods (EAGLE heads, MTP blocks, draft models, n-gram lookup): acceptance
rates, acceptance lengths, speed-ups and crossovers, each with its source
(``llmcourse/data/speculative_acceptance.csv``, read by :func:`llmcourse.catalog.drafts.acceptance_rows`), and the
per-token acceptance rate each implies (:func:`llmcourse.replica.speculative.acceptance_from_length`): the rates to
feed :class:`~llmcourse.replica.speculative.Speculation`.

Defined in the chapter *Speculative decoding* (``book/08b_speculative.md``).

Examples
--------
>>> row = published("eagle head", figure="acceptance_length")[0]
>>> row.method, row.draft_tokens, row.shown()
('EAGLE-3 (vLLM B200)', 3, '2.65')
"""

from __future__ import annotations

from dataclasses import dataclass

from llmcourse.catalog.drafts import KINDS, acceptance_rows
from llmcourse.errors import InputError
from llmcourse.replica.speculative import acceptance_from_length

__all__ = ["Published", "published"]


@dataclass(frozen=True)
class Published:
    """One published figure of a speculative method (a row of ``speculative_acceptance.csv``).

    ``figure`` is ``"acceptance_rate"`` (per drafted token), ``"acceptance_length"`` (tokens per
    verification step, the target's own token included), ``"speedup"``, ``"slowdown"`` or
    ``"crossover_concurrency"``; ``value_high`` is the top of a range (None for a single figure).
    """

    method: str
    kind: str
    target: str
    draft: str
    benchmark: str
    domain: str
    draft_tokens: int | None
    figure: str
    value: float
    value_high: float | None
    note: str
    source: str

    @property
    def implied_acceptance(self) -> float | None:
        """The per-token acceptance rate the figure implies (independent positions): the rate itself, or
        the rate whose expected tokens at the row's draft length is the acceptance length; None otherwise."""
        if self.figure == "acceptance_rate":
            return self.value
        if self.figure == "acceptance_length" and self.draft_tokens is not None:
            return acceptance_from_length(self.value, self.draft_tokens)
        return None

    def shown(self) -> str:
        """The value as published: ``2.65``, ``0.85-0.90``."""
        return f"{self.value:g}" if self.value_high is None else f"{self.value:g}-{self.value_high:g}"


def published(kind: str | None = None, *, figure: str | None = None, domain: str | None = None) -> list[Published]:
    """The published figures, optionally of one kind of draft (:data:`~llmcourse.catalog.drafts.KINDS`), one
    ``figure`` and one ``domain`` (``"chat"``, ``"code"``, ``"math"``, ``"mixed"``, ``"summarization"``).

    Examples
    --------
    >>> [(r.draft_tokens, r.value) for r in published("eagle head", domain="code") if r.target == "gpt-oss-20b"]
    [(3, 2.65), (7, 3.03), (3, 3.02), (7, 3.94)]
    >>> round(published("mtp", figure="acceptance_length")[0].implied_acceptance, 3)
    0.707
    """
    if kind is not None and kind not in KINDS:
        raise InputError(f"unknown kind of draft {kind!r}; kinds: {', '.join(map(repr, KINDS))}.")
    rows = [Published(**row) for row in acceptance_rows()]
    return [
        r
        for r in rows
        if (kind is None or r.kind == kind)
        and (figure is None or r.figure == figure)
        and (domain is None or r.domain == domain)
    ]
