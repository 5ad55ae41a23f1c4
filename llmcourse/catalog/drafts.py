"""Speculative decoding's catalog data: the kinds of draft (:data:`KINDS`), the EAGLE heads and MTP blocks of
``llmcourse/data/speculative_drafts.csv`` (:func:`drafts`, :func:`draft_heads`) and the rows of the published
figures of ``llmcourse/data/speculative_acceptance.csv`` (:func:`acceptance_rows`), each row with its source.

What a draft costs and what it buys is the replica model's (:mod:`llmcourse.replica.speculative`); the published
figures, with the acceptance rate each implies, are :func:`llmcourse.replica.acceptance.published`.

Defined in the chapter *Speculative decoding* (``book/08b_speculative.md``).

Examples
--------
>>> list(KINDS)
['draft model', 'eagle head', 'mtp', 'ngram']
>>> draft_heads()["DeepSeek-V3 MTP"]
('mtp', 'DeepSeek-V3')
"""

from __future__ import annotations

import csv
import functools
from importlib import resources
from typing import Any

from llmcourse.catalog.catalog import Model, models

__all__ = ["KINDS", "acceptance_rows", "draft_heads", "drafts"]

#: The kinds of draft, and what each costs.
KINDS: dict[str, str] = {
    "draft model": "a smaller model of the same tokenizer: its own weights and a KV cache of all its layers",
    "eagle head": "a one-layer head on the target's hidden states (EAGLE): small weights, one layer of KV cache",
    "mtp": "the model's own multi-token-prediction block (DeepSeek-V3): one layer of weights and KV cache",
    "ngram": "a look-up of the last few tokens in the prompt and the answer so far: no weights, no cache, no GPU time",
}


def _read_csv(filename: str) -> list[dict[str, str]]:
    return [dict(r) for r in _csv_rows(filename)]


@functools.cache
def _csv_rows(filename: str) -> tuple[dict[str, str], ...]:
    """A data file's rows, read once (the package's data do not change while it runs)."""
    text = resources.files("llmcourse.data").joinpath(filename).read_text(encoding="utf-8")
    return tuple(csv.DictReader(text.splitlines()))


def _num(text: str) -> float | None:
    return float(text) if text.strip() else None


def drafts() -> dict[str, Model]:
    """The EAGLE heads and MTP blocks of ``llmcourse/data/speculative_drafts.csv``, each a
    :class:`~llmcourse.catalog.Model` with its target's attention shape, its own layer count and
    parameters (its ``source`` says where they come from).

    Examples
    --------
    >>> d = drafts()["EAGLE-3 Llama-3.1-8B"]
    >>> d.layers, d.params, d.kv_heads
    (1, 425000000.0, 8)
    """
    out = {}
    for row in _read_csv("speculative_drafts.csv"):
        target = models[row["target"]]
        changes: dict[str, Any] = dict(
            name=row["name"], layers=int(row["layers"]), params=float(row["params"]), source=row["source"]
        )
        if target.is_moe:
            changes |= dict(active_params=_num(row["active_params"]), dense_layers=0)
        out[row["name"]] = target.with_(**changes)
    return out


_DRAFT_ROWS: dict[str, tuple[str, str]] = {}  # name -> (kind, target), read once


def draft_heads() -> dict[str, tuple[str, str]]:
    """The draft heads and blocks of ``llmcourse/data/speculative_drafts.csv`` by name, each as ``(kind, target)``
    (a kind of :data:`KINDS` and the catalog name of the model it drafts for), read once: what
    :meth:`llmcourse.replica.speculative.Speculation.draft_for` looks up without building every :func:`drafts`
    model. The dict is the module's own: read it, do not change it.

    Examples
    --------
    >>> draft_heads()["EAGLE-3 Llama-3.1-8B"]
    ('eagle head', 'Llama-3.1-8B')
    """
    if not _DRAFT_ROWS:
        _DRAFT_ROWS.update({r["name"]: (r["kind"], r["target"]) for r in _read_csv("speculative_drafts.csv")})
    return _DRAFT_ROWS


def acceptance_rows() -> list[dict[str, Any]]:
    """The rows of ``llmcourse/data/speculative_acceptance.csv``, typed: ``draft_tokens`` a whole number or None,
    ``value`` a number, ``value_high`` a number or None (a single figure), every other column its text. Each call
    gets its own dicts; :func:`llmcourse.replica.acceptance.published` makes them
    :class:`~llmcourse.replica.acceptance.Published` figures.

    Examples
    --------
    >>> row = acceptance_rows()[0]  # DeepSeek-V3's MTP block: 85-90% of second tokens accepted
    >>> row["kind"], row["draft_tokens"], row["figure"], row["value"], row["value_high"]
    ('mtp', 1, 'acceptance_rate', 0.85, 0.9)
    """
    rows = []
    for r in _read_csv("speculative_acceptance.csv"):
        k = _num(r["draft_tokens"])
        rows.append(
            dict(
                method=r["method"],
                kind=r["kind"],
                target=r["target"],
                draft=r["draft"],
                benchmark=r["benchmark"],
                domain=r["domain"],
                draft_tokens=None if k is None else int(k),
                figure=r["figure"],
                value=float(r["value"]),
                value_high=_num(r["value_high"]),
                note=r["note"],
                source=r["source"],
            )
        )
    return rows
